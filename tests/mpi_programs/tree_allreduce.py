"""MPI test program: ``Allreduce`` on trees (a reduce to rank 0, then a broadcast).

``mpiexec -n K python -m mpi4py tree_allreduce.py OUT``: for tree planners named per call
(``fnf``, ``rooted_ls``, ``binomial``, ``flat``), every predefined integer operator on
int32/int64/uint8, float64 sums of small integers (exact in any order), counts 0, 1, 7
and 5 000, ``IN_PLACE`` spelled ``MPI.IN_PLACE`` and ``None`` and a commutative user
operator, bit for bit against mpi4py's own ``Allreduce`` on the same ranks, and
``last_call`` naming the planner; then ``auto`` under emulation of a platform with one
slow rank (at 8 ranks a tree is predicted fastest), where the plan it chose (a tree, a
hypercube or MPI's algorithm) runs and its data are mpi4py's.  Rank 0 writes one JSON
record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _auto import check_auto_emulated
from _report import Recorder
from mpi4py import MPI
from rooted import INT_OPS, SUM2, WORLD, platform

from hetcoll import HetComm

TREES = ("fnf", "rooted_ls", "binomial", "flat")


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.tobytes() == b.tobytes()


def check_named(rec: Recorder, hc, comm) -> None:
    me, n = comm.rank, comm.size
    rng = np.random.default_rng(me)
    for algo in TREES:
        for dtype in (np.int32, np.int64, np.uint8):
            for opname in INT_OPS:
                op = getattr(MPI, opname)
                send = rng.integers(1, 4, 7).astype(dtype)
                got, want = np.zeros(7, dtype), np.zeros(7, dtype)
                comm.Allreduce(send, want, op)
                hc.Allreduce(send, got, op, algo=algo)
                last = hc.last_call
                ok = same(got, want) and (n == 1 or (last is not None and last.algorithm == algo))
                rec.case(f"{algo} {dtype.__name__} {opname}", ok, f"{got} {want} {last}")
        for count in (0, 1, 7, 5000):
            send = rng.integers(-50, 50, count).astype(np.float64)
            got, want = np.full(count, -1.0), np.full(count, -1.0)
            comm.Allreduce(send, want, MPI.SUM)
            hc.Allreduce(send, got, MPI.SUM, algo=algo)
            rec.case(f"{algo} float64 SUM count={count}", same(got, want))
        for spelling in (MPI.IN_PLACE, None):
            buf = np.arange(5, dtype=np.int64) * (me + 1)
            want = np.zeros(5, np.int64)
            comm.Allreduce(buf, want, MPI.SUM)
            hc.Allreduce(spelling, buf, MPI.SUM, algo=algo)
            rec.case(f"{algo} IN_PLACE {spelling}", same(buf, want))
        send = np.arange(6, dtype=np.int32) * (me + 2)
        got, want = np.zeros(6, np.int32), np.zeros(6, np.int32)
        comm.Allreduce(send, want, MPI.SUM)
        hc.Allreduce(send, got, SUM2, algo=algo)
        rec.case(f"{algo} commutative user op", same(got, want))


def check_auto_allreduce(rec: Recorder, comm) -> None:
    me = comm.rank

    def run(c, count: int) -> np.ndarray:
        recv = np.zeros(count, np.int64)
        c.Allreduce(np.arange(count, dtype=np.int64) + me, recv, MPI.SUM)
        return recv

    check_auto_emulated(rec, comm, run)


def main() -> None:
    rec = Recorder(sys.argv[1])
    with HetComm(WORLD, platform(WORLD.size), "binomial", timeout=60) as hc:
        check_named(rec, hc, WORLD)
    check_auto_allreduce(rec, WORLD)
    rec.write()


if __name__ == "__main__":
    main()
