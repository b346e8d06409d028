"""MPI side of bench_nonblocking.py: ``mpiexec -n 4 python ranks/nonblocking.py ROUNDS OUT``.

Without emulation:

- ``persistent``: the per-call cost of a 1-byte broadcast, 300 calls per sample, variants
  alternating round by round: MPI's ``Bcast``, MPI's ``Bcast_init`` (``Start`` + ``Wait``);
  a default ``HetComm``'s (``algo="auto"``: natively on one host MPI's own choice, so its
  ``Bcast_init`` is MPI's own request and its ``Ibcast`` MPI's own call) ``Bcast_init`` and
  ``Ibcast`` + ``Wait``; a ``HetComm`` planned with ``binomial`` (hetcoll's schedule runs):
  its ``Bcast``, ``Bcast_init`` and ``Ibcast`` + ``Wait``.  Ratios: medians of the
  round-by-round ratios to MPI's ``Bcast`` and ``Bcast_init``;
- ``overlap`` (as OSU's ``osu_ibcast``/``osu_iallreduce``): for 8 MiB ``Ibcast`` and
  ``Iallreduce`` (MPI's and the planned ``HetComm``'s), the pure time of the call and its
  wait, then the call, compute for that long (numpy ufuncs, which release the GIL), the
  wait; the ratio of that total to the compute alone (1.0: fully overlapped; 2.0: none).
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


def persistent(hc: HetComm, default: HetComm) -> dict:
    one = np.zeros(1, np.uint8)
    native_p = world.Bcast_init(one, 0)
    auto_p = default.Bcast_init(one, 0)  # auto: MPI's own choice, so MPI's own request
    # hetcoll's planned persistent request lives only while its own samples run: its
    # progress thread looks for MPI's Startall now and then, which would slow the others
    held = {}

    def planned_start() -> None:
        held["p"].Start()
        held["p"].Wait()

    variants = {
        "MPI Bcast": lambda: world.Bcast(one, 0),
        "MPI Bcast_init": lambda: (native_p.Start(), native_p.Wait()),
        "hetcoll auto Bcast_init": lambda: (auto_p.Start(), auto_p.Wait()),
        "hetcoll auto Ibcast": lambda: default.Ibcast(one, 0).Wait(),
        "hetcoll planned Bcast": lambda: hc.Bcast(one, 0),
        "hetcoll planned Bcast_init": planned_start,
        "hetcoll planned Ibcast": lambda: hc.Ibcast(one, 0).Wait(),
    }
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for rnd in range(-1, ROUNDS):  # round -1 warms up
        for name, run in variants.items():
            if name == "hetcoll planned Bcast_init":
                held["p"] = hc.Bcast_init(one, 0)
            if rnd < 0:
                for _ in range(50):
                    run()
            else:
                samples[name].append(per_call(run))
            if name == "hetcoll planned Bcast_init":
                held.pop("p").Free()
    native_p.Free()
    auto_p.Free()
    out = {k: {"median_s": statistics.median(v), "samples": v} for k, v in samples.items()}
    for base in ("MPI Bcast", "MPI Bcast_init"):
        for k in variants:
            if k.startswith("hetcoll") and k != "hetcoll planned Bcast":
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
default = HetComm(world, flat, timeout=120)  # algo="auto": natively on one host, MPI's own
result = {"ranks": n, "persistent": persistent(hc, default), "overlap": overlap(hc)}
default.close()
hc.close()
if me == 0:
    with open(OUT, "w") as fh:
        json.dump(result, fh)
