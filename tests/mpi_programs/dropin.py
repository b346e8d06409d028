"""MPI test program: HetComm as a drop-in for an mpi4py communicator, in mpi4py's spirit.

``mpiexec -n K python -m mpi4py dropin.py OUT``: on COMM_WORLD, a duplicate of it and
COMM_SELF, every collective HetComm plans (``Bcast``, ``bcast``, ``Allreduce``,
``allreduce``, ``Allgather``, ``allgather``, ``Barrier``) is run for every root with
sentinel-filled buffers, derived datatypes (indexed blocks with and without a lower bound,
vectors, resized types, pair types), ``IN_PLACE`` spelled ``MPI.IN_PLACE`` and ``None``,
empty buffers, Fortran-ordered arrays and buffers that only expose ``__dlpack__`` or
``__cuda_array_interface__``; the same call on the plain communicator gives the expected
result, and every element is compared.  Calls HetComm does not plan (``Gather``,
``Scatter``, ``Reduce``, ``Alltoall``, ``Scan``, ``Get_rank``, ...) must reach the user's
communicator unchanged.  Rank 0 gathers every rank's verdict and writes one JSON record per
case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI

from hetcoll import HetcollError, HetComm
from hetcoll.platform import Platform, nodes_from_costs

WORLD = MPI.COMM_WORLD


class DLPackOnly:
    """Host memory seen only through ``__dlpack__`` (no buffer protocol)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack__(self, stream=None, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class CAIOnly:
    """Host memory seen only through ``__cuda_array_interface__`` (as mpi4py's own tests)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.__cuda_array_interface__ = {
            "version": 3,
            "data": (array.__array_interface__["data"][0], False),
            "typestr": array.dtype.str,
            "shape": array.shape,
            "strides": None,
        }


def platform(n: int) -> Platform:
    rng = np.random.default_rng(n)
    return Platform(nodes_from_costs(rng.choice([1.0, 2.0, 5.0], size=n) * 1e-6), model="tini")


def same(a, b) -> bool:
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def datatypes():
    """``(name, datatype, count, length)``: a buffer of ``length`` int32 and a spec of
    ``count`` elements of ``datatype`` over it."""
    every_other = MPI.INT32_T.Create_indexed_block(1, list(range(0, 10, 2))).Commit()
    odd = MPI.INT32_T.Create_indexed_block(1, list(range(1, 10, 2))).Commit()  # lb = 4
    vector = MPI.INT32_T.Create_vector(3, 2, 3).Commit()  # 2 of every 3
    resized = MPI.INT32_T.Create_contiguous(2).Create_resized(0, 16).Commit()  # holes
    return [
        ("indexed block", every_other, 1, 10),
        ("indexed block lb", odd, 1, 10),
        ("vector", vector, 2, 16),
        ("resized", resized, 3, 12),
        ("contiguous", MPI.INT32_T.Create_contiguous(3).Commit(), 2, 6),
    ]


def check_bcast(rec: Recorder, hc, comm, tag: str) -> None:
    me, n = comm.rank, comm.size
    for root in range(n):
        for count in (0, 1, 7, 1000):
            for dtype in (np.int32, np.float64, np.complex128, np.uint8):
                full = (np.arange(count) * 3 + root).astype(dtype)
                a = full.copy() if me == root else np.full(count, 99, dtype=dtype)
                hc.Bcast(a, root=root)
                rec.case(f"{tag} Bcast root={root} n={count} {np.dtype(dtype).name}", same(a, full))
        # derived datatypes: the same spec through MPI and through HetComm
        for name, dt, count, length in datatypes():
            base = np.arange(length, dtype=np.int32) + 10 * root
            a = base.copy() if me == root else np.full(length, -1, dtype=np.int32)
            b = a.copy()
            comm.Bcast([a, count, dt], root=root)
            hc.Bcast([b, count, dt], root=root)
            rec.case(f"{tag} Bcast root={root} {name}", same(a, b), f"{b} != {a}")
        # Fortran order, DLPack and CUDA-array-interface buffers
        full = np.asfortranarray(np.arange(12.0).reshape(3, 4) + root)
        a = full.copy(order="F") if me == root else np.asfortranarray(np.zeros((3, 4)))
        hc.Bcast(a, root=root)
        rec.case(f"{tag} Bcast root={root} fortran", same(a, full))
        for wrap in (DLPackOnly, CAIOnly):
            raw = np.arange(5, dtype=np.int64) + root if me == root else np.zeros(5, np.int64)
            hc.Bcast(wrap(raw), root=root)
            rec.case(f"{tag} Bcast root={root} {wrap.__name__}", same(raw, np.arange(5) + root))
        obj = {"root": root, "list": list(range(root * 10))}
        got = hc.bcast(obj if me == root else None, root=root)
        rec.case(f"{tag} bcast root={root}", got == obj)


def check_reductions(rec: Recorder, hc, comm, tag: str) -> None:
    me = comm.rank
    for dtype in (np.int32, np.int64, np.float64):
        for op_name, op in (("sum", MPI.SUM), ("max", MPI.MAX), ("min", MPI.MIN)):
            send = (np.arange(9) * (me + 1) - 3 * me).astype(dtype)
            want, got = np.full(9, -7, dtype), np.full(9, -7, dtype)
            comm.Allreduce(send, want, op)
            hc.Allreduce(send, got, op)
            rec.case(f"{tag} Allreduce {np.dtype(dtype).name} {op_name}", same(got, want))
            for spelling, inplace in (("MPI.IN_PLACE", MPI.IN_PLACE), ("None", None)):
                buf = send.copy()
                hc.Allreduce(inplace, buf, op)
                rec.case(
                    f"{tag} Allreduce {spelling} {np.dtype(dtype).name} {op_name}", same(buf, want)
                )
    empty = np.zeros(0, np.int64)
    hc.Allreduce(empty, np.zeros(0, np.int64), MPI.SUM)
    rec.case(f"{tag} Allreduce empty", True)
    # derived datatypes: MPI (MPICH) defines no predefined operator on them; HetComm says so
    # before any message, on every rank, instead of failing mid-collective
    for name, dt, count, length in datatypes():
        send = np.arange(length, dtype=np.int32) * (me + 2)
        want, got = np.full(length, -5, np.int32), np.full(length, -5, np.int32)
        outcome = []
        for c, buf in ((comm, want), (hc, got)):
            try:
                c.Allreduce([send, count, dt], [buf, count, dt], MPI.SUM)
                outcome.append("ok")
            except (MPI.Exception, HetcollError):
                outcome.append("refused")
        ok = outcome[0] == outcome[1] and same(got, want)
        rec.case(f"{tag} Allreduce {name}", ok, f"{outcome}: {got} != {want}")
    # a pair type with padding (MAXLOC)
    pairs = np.zeros(3, dtype=np.dtype([("v", "f8"), ("i", "i4")], align=True))
    pairs["v"], pairs["i"] = (np.arange(3) * (me % 3)).astype(float), me
    want, got = np.zeros_like(pairs), np.zeros_like(pairs)
    comm.Allreduce([pairs, MPI.DOUBLE_INT], [want, MPI.DOUBLE_INT], MPI.MAXLOC)
    hc.Allreduce([pairs, MPI.DOUBLE_INT], [got, MPI.DOUBLE_INT], MPI.MAXLOC)
    rec.case(
        f"{tag} Allreduce MAXLOC DOUBLE_INT",
        same(got["v"], want["v"]) and same(got["i"], want["i"]),
    )
    for obj, op in ((me, MPI.SUM), ([me], MPI.SUM), ((me, -me), MPI.MAX)):
        rec.case(f"{tag} allreduce {obj!r:.10}", hc.allreduce(obj, op) == comm.allreduce(obj, op))


def check_gathers(rec: Recorder, hc, comm, tag: str) -> None:
    me, n = comm.rank, comm.size
    for count in (0, 1, 5):
        send = (np.arange(count) + 10 * me).astype(np.int32)
        want, got = np.full(count * n, -1, np.int32), np.full(count * n, -1, np.int32)
        comm.Allgather(send, want)
        hc.Allgather(send, got)
        rec.case(f"{tag} Allgather count={count}", same(got, want))
        for spelling, inplace in (("MPI.IN_PLACE", MPI.IN_PLACE), ("None", None)):
            buf = np.full(count * n, -1, np.int32)
            buf[me * count : (me + 1) * count] = send
            hc.Allgather(inplace, buf)
            rec.case(f"{tag} Allgather {spelling} count={count}", same(buf, want))
    # a derived receive type: every other element of each block
    dt = MPI.INT32_T.Create_vector(2, 1, 2).Create_resized(0, 16).Commit()
    send = np.array([me, -me], np.int32)
    want, got = np.full(4 * n, -9, np.int32), np.full(4 * n, -9, np.int32)
    comm.Allgather([send, 2, MPI.INT32_T], [want, 1, dt])
    hc.Allgather([send, 2, MPI.INT32_T], [got, 1, dt])
    rec.case(f"{tag} Allgather derived recv type", same(got, want), f"{got} != {want}")
    obj = {"rank": me, "pad": "x" * (me * 100)}
    rec.case(f"{tag} allgather objects", hc.allgather(obj) == comm.allgather(obj))
    hc.Barrier()
    hc.barrier()
    rec.case(f"{tag} barrier", True)


def check_pass_through(rec: Recorder, hc, comm, tag: str) -> None:
    me, n = comm.rank, comm.size
    rec.case(f"{tag} Get_rank/Get_size", (hc.Get_rank(), hc.Get_size()) == (me, n))
    send = np.full(3, me, np.int64)
    want, got = np.zeros(3 * n, np.int64), np.zeros(3 * n, np.int64)
    comm.Gather(send, want if me == 0 else None, root=0)
    hc.Gather(send, got if me == 0 else None, root=0)
    rec.case(f"{tag} Gather", me != 0 or same(got, want))
    src = np.arange(2 * n, dtype=np.int64) if me == 0 else None
    a, b = np.zeros(2, np.int64), np.zeros(2, np.int64)
    comm.Scatter(src, a, root=0)
    hc.Scatter(src, b, root=0)
    rec.case(f"{tag} Scatter", same(a, b))
    a, b = np.zeros(3, np.int64), np.zeros(3, np.int64)
    comm.Reduce(send, a, MPI.SUM, root=0)
    hc.Reduce(send, b, MPI.SUM, root=0)
    rec.case(f"{tag} Reduce", me != 0 or same(a, b))
    a, b = np.zeros(n, np.int64), np.zeros(n, np.int64)
    comm.Alltoall(np.arange(n, dtype=np.int64) + me, a)
    hc.Alltoall(np.arange(n, dtype=np.int64) + me, b)
    rec.case(f"{tag} Alltoall", same(a, b))
    a, b = np.zeros(3, np.int64), np.zeros(3, np.int64)
    comm.Scan(send, a, MPI.SUM)
    hc.Scan(send, b, MPI.SUM)
    rec.case(f"{tag} Scan", same(a, b))
    a, b = np.zeros(1, np.int64), np.zeros(1, np.int64)
    comm.Reduce_scatter_block(np.full(n, me, np.int64), a, MPI.SUM)
    hc.Reduce_scatter_block(np.full(n, me, np.int64), b, MPI.SUM)
    rec.case(f"{tag} Reduce_scatter_block", same(a, b))
    rec.case(f"{tag} gather/scatter objects", hc.gather(me, root=0) == comm.gather(me, root=0))
    rec.case(f"{tag} Is_inter", hc.Is_inter() == comm.Is_inter())


def suite(rec: Recorder, comm, tag: str) -> None:
    with HetComm(comm, platform(comm.size), "binomial", timeout=60) as hc:
        check_bcast(rec, hc, comm, tag)
        check_reductions(rec, hc, comm, tag)
        check_gathers(rec, hc, comm, tag)
        check_pass_through(rec, hc, comm, tag)


def main() -> None:
    rec = Recorder(sys.argv[1])
    suite(rec, WORLD, "world")
    dup = WORLD.Dup()
    suite(rec, dup, "dup")
    hc = HetComm(dup, platform(dup.size), "fnf", timeout=60)
    hc.Free()  # closes the wrapper and frees the user's communicator, as Comm.Free
    rec.case("Free frees both", dup == MPI.COMM_NULL and hc.comm == MPI.COMM_NULL)
    suite(rec, MPI.COMM_SELF, "self")  # every rank alone: collectives of one rank
    rec.write()


if __name__ == "__main__":
    main()
