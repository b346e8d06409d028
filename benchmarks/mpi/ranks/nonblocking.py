"""MPI side of bench_nonblocking.py: ``mpiexec -n 4 python ranks/nonblocking.py ROUNDS OUT``.

Without emulation, on a HetComm planned with ``binomial`` (so the calls run hetcoll's
schedules; ``auto`` natively on one host would give them to MPI):

- ``persistent``: the per-call cost of a 1-byte broadcast, 300 calls per sample, variants
  alternating round by round: MPI's ``Bcast``, MPI's ``Bcast_init`` (``Start`` + ``Wait``),
  hetcoll's ``Bcast``, ``Bcast_init`` and ``Ibcast`` + ``Wait``;
- ``overlap`` (as OSU's ``osu_ibcast``/``osu_iallreduce``): for 8 MiB ``Ibcast`` and
  ``Iallreduce`` (MPI's and hetcoll's), the pure time of the call and its wait, then the
  call, compute for that long (numpy ufuncs, which release the GIL), the wait; the ratio of
  that total to the compute alone (1.0: fully overlapped; 2.0: none).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs

world = MPI.COMM_WORLD
me, n = world.rank, world.size
ROUNDS, OUT = int(sys.argv[1]), sys.argv[2]
flat = Platform(nodes_from_costs([1e-6] * n), name="homogeneous")


def per_call(run, calls: int = 300) -> float:
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    world.Barrier()
    return world.bcast((time.perf_counter() - t0) / calls, 0)


def persistent(hc: HetComm) -> dict:
    one = np.zeros(1, np.uint8)
    native_p = world.Bcast_init(one, 0)
    mine_p = hc.Bcast_init(one, 0)
    variants = {
        "MPI Bcast": lambda: world.Bcast(one, 0),
        "MPI Bcast_init": lambda: (native_p.Start(), native_p.Wait()),
        "hetcoll Bcast": lambda: hc.Bcast(one, 0),
        "hetcoll Bcast_init": lambda: (mine_p.Start(), mine_p.Wait()),
        "hetcoll Ibcast": lambda: hc.Ibcast(one, 0).Wait(),
    }
    for run in variants.values():
        for _ in range(50):
            run()
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(ROUNDS):
        for name, run in variants.items():
            samples[name].append(per_call(run))
    native_p.Free()
    mine_p.Free()
    out = {k: {"median_s": statistics.median(v), "samples": v} for k, v in samples.items()}
    for base in ("MPI Bcast", "MPI Bcast_init"):
        for k in ("hetcoll Bcast_init", "hetcoll Ibcast"):
            pairs = zip(samples[k], samples[base], strict=True)
            out[f"{k} / {base}"] = statistics.median(a / b for a, b in pairs)
    return out


def compute(seconds: float, x: np.ndarray, y: np.ndarray) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        np.sqrt(x, out=y)


def overlap(hc: HetComm) -> dict:
    big = np.zeros(8 << 20, np.uint8)
    a, b = np.ones(1 << 20), np.zeros(1 << 20)  # 8 MiB of float64
    x, y = np.ones(1 << 15), np.zeros(1 << 15)
    calls = {
        "Ibcast 8 MiB MPI": lambda: world.Ibcast(big, 0),
        "Ibcast 8 MiB hetcoll": lambda: hc.Ibcast(big, 0),
        "Iallreduce 8 MiB MPI": lambda: world.Iallreduce(a, b),
        "Iallreduce 8 MiB hetcoll": lambda: hc.Iallreduce(a, b),
    }
    out = {}
    for name, start in calls.items():
        start().Wait()  # warm up: plans, pages
        pure, alone, total = [], [], []
        for _ in range(ROUNDS):
            world.Barrier()
            t0 = time.perf_counter()
            start().Wait()
            t = world.allreduce(time.perf_counter() - t0, op=MPI.MAX)
            pure.append(t)
            world.Barrier()
            t0 = time.perf_counter()
            compute(t, x, y)
            alone.append(time.perf_counter() - t0)
            world.Barrier()
            t0 = time.perf_counter()
            req = start()
            compute(t, x, y)
            req.Wait()
            total.append(world.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        ratios = [t / c for t, c in zip(total, alone, strict=True)]
        out[name] = {
            "pure_s": statistics.median(pure),
            "compute_s": statistics.median(alone),
            "total_s": statistics.median(total),
            "total_over_compute": statistics.median(ratios),
        }
    return out


hc = HetComm(world, flat, "binomial", cube_algo="eff_cube", timeout=120)
result = {"ranks": n, "persistent": persistent(hc), "overlap": overlap(hc)}
hc.close()
if me == 0:
    with open(OUT, "w") as fh:
        json.dump(result, fh)
