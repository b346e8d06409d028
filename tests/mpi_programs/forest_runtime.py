"""MPI test program: ``HetComm`` running the per-root planner ``forest`` for
``Allreduce``, ``Allgather``, ``Reduce_scatter_block`` and ``Reduce_scatter``.

``mpiexec -n K python -m mpi4py forest_runtime.py OUT``: on a platform of two speeds with
combine costs, a wrapper whose ``algo`` is ``forest`` and a ``binomial`` one given
``algo="forest"`` per call: every predefined integer operator on int32/int64/uint8, float64
sums of small integers (exact in any order) and MAX/MIN, MAXLOC on the padded pair type
DOUBLE_INT, a commutative user operator and a non-commutative one (combined in rank order),
IN_PLACE spelled ``MPI.IN_PLACE`` and ``None``, counts 0, 1, odd and 5 000, uneven
``Reduce_scatter`` counts (some 0) and ``recvcounts=None``, allgather blocks of 0, 1, 37
and 1 000 bytes; a wrapper whose ranks are the platform's nodes in reverse order; bit for
bit against mpi4py's own on the same ranks, and ``last_call`` naming ``forest``.  Rank 0
writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI
from rooted import AFFINE, INT_OPS, SUM2, WORLD, platform

from hetcoll import HetComm

PAIR = np.dtype([("v", "f8"), ("i", "i4")], align=True)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.tobytes() == b.tobytes()


def ran_forest(hc) -> bool:
    last = hc.last_call
    return hc.size == 1 or (last is not None and last.algorithm == "forest")


def check_allreduce(rec: Recorder, hc, comm, tag: str, algo) -> None:
    me = comm.rank
    rng = np.random.default_rng(me)
    for dtype in (np.int32, np.int64, np.uint8):
        for opname in INT_OPS:
            op = getattr(MPI, opname)
            send = rng.integers(1, 4, 7).astype(dtype)
            got, want = np.zeros(7, dtype), np.zeros(7, dtype)
            comm.Allreduce(send, want, op)
            hc.Allreduce(send, got, op, algo=algo)
            ok = same(got, want) and ran_forest(hc)
            rec.case(f"{tag} Allreduce {dtype.__name__} {opname}", ok)
    for count in (0, 1, 7, 5000):
        for opname in ("SUM", "MAX", "MIN"):
            op = getattr(MPI, opname)
            send = rng.integers(-50, 50, count).astype(np.float64)
            got, want = np.full(count, -1.0), np.full(count, -1.0)
            comm.Allreduce(send, want, op)
            hc.Allreduce(send, got, op, algo=algo)
            rec.case(f"{tag} Allreduce float64 {opname} count={count}", same(got, want))
    for spelling in (MPI.IN_PLACE, None):
        buf = np.arange(1001, dtype=np.int64) * (me + 1)
        want = np.zeros(1001, np.int64)
        comm.Allreduce(buf, want, MPI.SUM)
        hc.Allreduce(spelling, buf, MPI.SUM, algo=algo)
        rec.case(f"{tag} Allreduce IN_PLACE {spelling}", same(buf, want) and ran_forest(hc))
    pairs = np.zeros(5, PAIR)
    pairs["v"] = (np.arange(5) * (me + 1)) % 4
    pairs["i"] = me
    got, want = np.zeros(5, PAIR), np.zeros(5, PAIR)
    comm.Allreduce([pairs, MPI.DOUBLE_INT], [want, MPI.DOUBLE_INT], MPI.MAXLOC)
    hc.Allreduce([pairs, MPI.DOUBLE_INT], [got, MPI.DOUBLE_INT], MPI.MAXLOC, algo=algo)
    rec.case(f"{tag} Allreduce MAXLOC DOUBLE_INT", same(got, want) and ran_forest(hc))
    send = np.arange(6, dtype=np.int32) * (me + 2)
    got, want = np.zeros(6, np.int32), np.zeros(6, np.int32)
    comm.Allreduce(send, want, MPI.SUM)
    hc.Allreduce(send, got, SUM2, algo=algo)
    rec.case(f"{tag} Allreduce commutative user op", same(got, want) and ran_forest(hc))
    maps = np.array([[me + 2, me], [1, me + 1]], dtype=np.int64)  # two affine maps
    got, want = np.zeros_like(maps), np.zeros_like(maps)
    comm.Allreduce(maps, want, AFFINE)
    hc.Allreduce(maps, got, AFFINE, algo=algo)
    rec.case(f"{tag} Allreduce non-commutative user op", same(got, want))


def check_allgather(rec: Recorder, hc, comm, tag: str, algo) -> None:
    me, n = comm.rank, comm.size
    for block in (0, 1, 37, 1000):
        mine = ((np.arange(block) * 7 + me * 13) % 251).astype(np.uint8)
        got, want = np.zeros(block * n, np.uint8), np.zeros(block * n, np.uint8)
        comm.Allgather(mine, want)
        hc.Allgather(mine, got, algo=algo)
        rec.case(f"{tag} Allgather uint8 block={block}", same(got, want) and ran_forest(hc))
    mine = np.arange(9, dtype=np.int64) * (me + 1)
    want = np.zeros(9 * n, np.int64)
    comm.Allgather(mine, want)
    for spelling in (MPI.IN_PLACE, None):
        buf = np.zeros(9 * n, np.int64)
        buf[me * 9 : (me + 1) * 9] = mine
        hc.Allgather(spelling, buf, algo=algo)
        rec.case(f"{tag} Allgather IN_PLACE {spelling}", same(buf, want) and ran_forest(hc))


def check_reduce_scatter(rec: Recorder, hc, comm, tag: str, algo) -> None:
    me, n = comm.rank, comm.size
    rng = np.random.default_rng(50 + me)
    for dtype, opname in ((np.int64, "SUM"), (np.int32, "BXOR"), (np.uint8, "MAX")):
        op = getattr(MPI, opname)
        for per in (0, 1, 129):
            send = rng.integers(0, 9, per * n).astype(dtype)
            got, want = np.zeros(per, dtype), np.zeros(per, dtype)
            comm.Reduce_scatter_block(send, want, op)
            hc.Reduce_scatter_block(send, got, op, algo=algo)
            name = f"{tag} Reduce_scatter_block {dtype.__name__} {opname} per={per}"
            rec.case(name, same(got, want) and ran_forest(hc))
    send = rng.integers(-20, 20, 33 * n).astype(np.float64)
    got, want = np.zeros(33), np.zeros(33)
    comm.Reduce_scatter_block(send, want, MPI.SUM)
    hc.Reduce_scatter_block(send, got, MPI.SUM, algo=algo)
    rec.case(f"{tag} Reduce_scatter_block float64 SUM", same(got, want))
    for spelling in (MPI.IN_PLACE, None):
        buf = np.arange(5 * n, dtype=np.int64) * (me + 3)
        want = np.zeros(5, np.int64)
        comm.Reduce_scatter_block(buf, want, MPI.SUM)
        hc.Reduce_scatter_block(spelling, buf, MPI.SUM, algo=algo)
        rec.case(f"{tag} Reduce_scatter_block IN_PLACE {spelling}", same(buf[:5], want))
    counts = [(3 * r + 1) % 5 for r in range(n)]  # uneven, some 0
    send = rng.integers(0, 100, sum(counts)).astype(np.int64)
    got, want = np.zeros(counts[me], np.int64), np.zeros(counts[me], np.int64)
    comm.Reduce_scatter(send, want, counts, MPI.SUM)
    hc.Reduce_scatter(send, got, counts, MPI.SUM, algo=algo)
    rec.case(f"{tag} Reduce_scatter counts={counts}", same(got, want) and ran_forest(hc))
    got = np.zeros(counts[me], np.int64)
    hc.Reduce_scatter(send, got, None, MPI.SUM, algo=algo)
    rec.case(f"{tag} Reduce_scatter recvcounts=None", same(got, want))
    pairs = np.zeros(2 * n, PAIR)
    pairs["v"] = (np.arange(2 * n) * (me + 1)) % 3
    pairs["i"] = me
    got, want = np.zeros(2, PAIR), np.zeros(2, PAIR)
    comm.Reduce_scatter_block([pairs, MPI.DOUBLE_INT], [want, MPI.DOUBLE_INT], MPI.MINLOC)
    hc.Reduce_scatter_block([pairs, MPI.DOUBLE_INT], [got, MPI.DOUBLE_INT], MPI.MINLOC, algo=algo)
    rec.case(f"{tag} Reduce_scatter_block MINLOC DOUBLE_INT", same(got, want) and ran_forest(hc))
    maps = np.tile(np.array([me + 2, me], dtype=np.int64), n)
    got, want = np.zeros(2, np.int64), np.zeros(2, np.int64)
    comm.Reduce_scatter_block(maps, want, AFFINE)
    hc.Reduce_scatter_block(maps, got, AFFINE, algo=algo)
    rec.case(f"{tag} Reduce_scatter_block non-commutative user op", same(got, want))


def check_all(rec: Recorder, hc, comm, tag: str, algo=None) -> None:
    check_allreduce(rec, hc, comm, tag, algo)
    check_allgather(rec, hc, comm, tag, algo)
    check_reduce_scatter(rec, hc, comm, tag, algo)


def main() -> None:
    rec = Recorder(sys.argv[1])
    n = WORLD.size
    with HetComm(WORLD, platform(n), "forest", timeout=120) as hc:
        check_all(rec, hc, WORLD, "wrapper")
    with HetComm(WORLD, platform(n), "binomial", timeout=120) as hc:
        check_allreduce(rec, hc, WORLD, "per call", "forest")
        check_reduce_scatter(rec, hc, WORLD, "per call", "forest")
    reverse = [str(n - 1 - r) for r in range(n)]  # rank r on node n-1-r
    with HetComm(WORLD, platform(n), "forest", nodes=reverse, timeout=120) as hc:
        check_allgather(rec, hc, WORLD, "reversed", None)
        check_reduce_scatter(rec, hc, WORLD, "reversed", None)
    rec.write()


if __name__ == "__main__":
    main()
