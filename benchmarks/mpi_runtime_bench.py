"""MPI side of bench_runtime.py: ``mpiexec -n 4 python -m mpi4py mpi_runtime_bench.py OUT``.

Without emulation: a pipelined hetcoll ``Bcast`` of 8 MiB against native ``comm.Bcast``,
and the per-call overhead of a 1-byte broadcast.  Latency of one broadcast = last rank's
finish minus the root's start on the shared monotonic clock (one host), best of the runs.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs

world = MPI.COMM_WORLD
me, n = world.rank, world.size
flat = Platform(nodes_from_costs([1e-6] * n), name="homogeneous")


def best_latency(run, reps: int) -> float:
    times = []
    for _ in range(reps):
        world.Barrier()
        t0 = time.monotonic_ns()
        run()
        t1 = time.monotonic_ns()
        start = world.bcast(t0, 0)
        end = world.allreduce(t1, op=MPI.MAX)
        times.append((end - start) / 1e9)
    return min(times)


def per_call(run, calls: int) -> float:
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    world.Barrier()
    return (time.perf_counter() - t0) / calls


out: dict = {"ranks": n, "bcast_8MiB": {}, "one_byte": {}}
big = np.zeros(8 * 1024 * 1024, dtype=np.uint8)
if me == 0:
    big[:] = np.arange(big.size) % 251
REPS = 20
out["bcast_8MiB"]["native"] = best_latency(lambda: world.Bcast(big, 0), REPS)
for algo in ("chain", "binomial"):
    with HetComm(world, flat, algo, timeout=60) as hc:
        for seg in (256 * 1024, 1024 * 1024, 2 * 1024 * 1024, None):
            key = f"{algo} " + (f"seg={seg // 1024}KiB" if seg else "unsegmented")
            out["bcast_8MiB"][key] = best_latency(
                lambda seg=seg: hc.Bcast(big, 0, segment_size=seg), REPS
            )
ok = bool(np.array_equal(big, np.arange(big.size) % 251))
out["bcast_8MiB_correct"] = world.allreduce(ok, op=MPI.LAND)

one = np.zeros(1, dtype=np.uint8)
with HetComm(world, flat, "binomial", timeout=60) as hc:
    hc.Bcast(one, 0)
    out["one_byte"]["native_per_call"] = per_call(lambda: world.Bcast(one, 0), 2000)
    out["one_byte"]["hetcoll_per_call"] = per_call(lambda: hc.Bcast(one, 0), 2000)
with HetComm(world, flat, "binomial", timeout=60, check="always") as hc:
    hc.Bcast(one, 0)
    out["one_byte"]["hetcoll_check_always_per_call"] = per_call(lambda: hc.Bcast(one, 0), 500)
if me == 0:
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh)
