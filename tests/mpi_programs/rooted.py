"""MPI test program: the rooted collectives HetComm plans (``Reduce``, ``reduce``,
``Gather``, ``gather``, ``Scatter``, ``scatter``) against mpi4py's own on the same ranks.

``mpiexec -n K python -m mpi4py rooted.py OUT``: for every root, on a platform with fast and
slow nodes and combine costs: every predefined integer operator (results bit for bit
mpi4py's), float sums (the same bits on two runs of the schedule), MAXLOC on a pair type,
user operators commutative and not (the composition of affine maps, combined in rank
order), IN_PLACE spelled ``MPI.IN_PLACE`` and ``None``, empty buffers;
gathers and scatters of sentinel-filled buffers, IN_PLACE at the root, objects;
``last_call`` after planned and passed-through calls; and a rank calling ``Reduce`` with
another root raises ``MismatchError`` on every rank.  Rank 0 writes one JSON record per
case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.errors import HetcollError, MismatchError
from hetcoll.platform import Node, Platform

WORLD = MPI.COMM_WORLD
INT_OPS = ("SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR")


def platform(n: int) -> Platform:
    nodes = tuple(
        Node(str(i), (1 if i % 3 else 4) * 1e-6, 1e-9, gamma=(1 if i % 2 else 3) * 1e-9)
        for i in range(n)
    )
    return Platform(nodes, model="tini", name="two speeds")


def affine(inbuf, inoutbuf, datatype) -> None:
    """x -> a x + b as (a, b) pairs of int64: inout = in o inout (non-commutative)."""
    a = np.frombuffer(inbuf, dtype=np.int64).reshape(-1, 2)
    b = np.frombuffer(inoutbuf, dtype=np.int64).reshape(-1, 2)
    out = np.stack([a[:, 0] * b[:, 0], a[:, 0] * b[:, 1] + a[:, 1]], axis=1)
    b[:] = out


AFFINE = MPI.Op.Create(affine, commute=False)
SUM2 = MPI.Op.Create(
    lambda i, io, dt: np.add(
        np.frombuffer(io, np.int32), np.frombuffer(i, np.int32), out=np.frombuffer(io, np.int32)
    ),
    commute=True,
)


def check_reduce(rec: Recorder, hc, comm, root: int) -> None:
    me = comm.rank
    rng = np.random.default_rng(1000 + me)
    for dtype in (np.int32, np.int64):
        send = rng.integers(1, 50, size=7).astype(dtype)
        for name in INT_OPS:
            op = getattr(MPI, name)
            want, got = np.full(7, -1, dtype), np.full(7, -1, dtype)
            comm.Reduce(send, want, op, root=root)
            hc.Reduce(send, got, op, root=root)
            rec.case(
                f"Reduce root={root} {dtype.__name__} {name}",
                me != root or np.array_equal(got, want),
                f"{got} {want}",
            )
    x = rng.standard_normal(1001)
    first, second = np.zeros(1001), np.zeros(1001)
    hc.Reduce(x, first, MPI.SUM, root=root)
    hc.Reduce(x, second, MPI.SUM, root=root)
    want = np.zeros(1001)
    comm.Reduce(x, want, MPI.SUM, root=root)
    rec.case(
        f"Reduce root={root} float64 SUM reproducible",
        me != root or (first.tobytes() == second.tobytes() and np.allclose(first, want)),
    )
    pair = np.array([(float(me % 3), me)], dtype=np.dtype([("v", "f8"), ("i", "i4")], align=True))
    want, got = np.zeros_like(pair), np.zeros_like(pair)
    comm.Reduce([pair, MPI.DOUBLE_INT], [want, MPI.DOUBLE_INT], MPI.MAXLOC, root=root)
    hc.Reduce([pair, MPI.DOUBLE_INT], [got, MPI.DOUBLE_INT], MPI.MAXLOC, root=root)
    # the type map's fields: the padding after the int is none of MPI's (it may copy it)
    same = got["v"].tobytes() == want["v"].tobytes() and np.array_equal(got["i"], want["i"])
    rec.case(f"Reduce root={root} MAXLOC DOUBLE_INT", me != root or same)
    maps = np.array([[me + 2, me + 1], [3, me]] * 3, dtype=np.int64).reshape(-1)
    want, got = np.zeros_like(maps), np.zeros_like(maps)
    comm.Reduce(maps, want, AFFINE, root=root)
    hc.Reduce(maps, got, AFFINE, root=root)
    rec.case(
        f"Reduce root={root} non-commutative user op",
        me != root or np.array_equal(got, want),
        f"{got} {want}",
    )
    ints = np.arange(5, dtype=np.int32) + me
    want, got = np.zeros(5, np.int32), np.zeros(5, np.int32)
    comm.Reduce(ints, want, SUM2, root=root)
    hc.Reduce(ints, got, SUM2, root=root)
    rec.case(f"Reduce root={root} commutative user op", me != root or np.array_equal(got, want))
    for spelling in (MPI.IN_PLACE, None):
        mine = np.arange(6, dtype=np.int64) * (me + 1)
        want = np.zeros(6, np.int64)
        comm.Reduce(mine, want, MPI.SUM, root=root)
        buf = mine.copy()
        if me == root:
            hc.Reduce(spelling, buf, MPI.SUM, root=root)
        else:
            hc.Reduce(mine, None, MPI.SUM, root=root)
        rec.case(f"Reduce root={root} IN_PLACE {spelling}", me != root or np.array_equal(buf, want))
    empty = np.zeros(0, np.float64)
    hc.Reduce(empty, np.zeros(0), MPI.SUM, root=root)
    rec.case(f"Reduce root={root} n=0", True)
    got_obj = hc.reduce([me], op=MPI.SUM, root=root)
    want_obj = comm.reduce([me], op=MPI.SUM, root=root)
    rec.case(f"reduce root={root} objects", got_obj == want_obj, f"{got_obj} {want_obj}")
    rec.case(
        f"last_call Reduce root={root}",
        (hc.last_call.collective, hc.last_call.root) == ("reduce", root),
    )


def check_gather_scatter(rec: Recorder, hc, comm, root: int) -> None:
    me, n = comm.rank, comm.size
    send = np.arange(3, dtype=np.int32) + 100 * me
    want, got = np.full(3 * n, -1, np.int32), np.full(3 * n, -1, np.int32)
    comm.Gather(send, want if me == root else None, root=root)
    hc.Gather(send, got if me == root else None, root=root)
    rec.case(f"Gather root={root}", me != root or np.array_equal(got, want), f"{got} {want}")
    rec.case(
        f"last_call Gather root={root}",
        (hc.last_call.collective, hc.last_call.root) == ("Gather", root),
    )
    for spelling in (MPI.IN_PLACE, None):
        buf = np.full(3 * n, -1, np.int32)
        if me == root:
            buf[3 * me : 3 * me + 3] = send
            hc.Gather(spelling, buf, root=root)
        else:
            hc.Gather(send, None, root=root)
        rec.case(f"Gather root={root} IN_PLACE {spelling}", me != root or np.array_equal(buf, want))
    src = np.arange(4 * n, dtype=np.float64) * 1.5
    a, b = np.full(4, -1.0), np.full(4, -1.0)
    comm.Scatter(src if me == root else None, a, root=root)
    hc.Scatter(src if me == root else None, b, root=root)
    rec.case(f"Scatter root={root}", np.array_equal(a, b), f"{a} {b}")
    if me == root:
        hc.Scatter(src, MPI.IN_PLACE, root=root)
    else:
        hc.Scatter(None, b, root=root)
    rec.case(f"Scatter root={root} IN_PLACE", me == root or np.array_equal(a, b))
    objs = [{"rank": r, "x": "y" * (r * 100)} for r in range(n)]
    got = hc.scatter(objs if me == root else None, root=root)
    rec.case(
        f"scatter root={root} objects", got == comm.scatter(objs if me == root else None, root=root)
    )
    big = "z" * (me * 300)
    rec.case(
        f"gather root={root} objects",
        hc.gather((me, big), root=root) == comm.gather((me, big), root=root),
    )


def check_last_call(rec: Recorder, hc, comm) -> None:
    a, b = np.zeros(comm.size, np.int64), np.zeros(comm.size, np.int64)
    hc.Alltoall(np.arange(comm.size, dtype=np.int64), b)
    rec.case("last_call None after a passed-through Alltoall", hc.last_call is None)
    if comm.size > 1:  # one rank alone runs no schedule
        hc.Bcast(a, root=0)
        last = hc.last_call
        rec.case("last_call after Bcast", last is not None and last.collective == "Bcast")


def check_default_is_mpi(rec: Recorder, comm) -> None:
    """Under the default ``algo="auto"`` the rooted calls are MPI's own (no model of MPI's
    reduce to weigh a plan against), unless the call names a planner (natively on one host
    the wrapper's methods are mpi4py's: a call naming its plan is the class's method)."""
    me = comm.rank
    want = np.zeros(3, np.int64) if me == 0 else None
    comm.Reduce(np.arange(3, dtype=np.int64) * (me + 1), want, MPI.SUM, root=0)
    with HetComm(comm, platform(comm.size), timeout=60) as hc:
        got = np.zeros(3, np.int64) if me == 0 else None
        hc.Reduce(np.arange(3, dtype=np.int64) * (me + 1), got, MPI.SUM, root=0)
        same = me != 0 or np.array_equal(got, want)
        rec.case("default algo: Reduce passed to MPI", same and hc.last_call is None)
        got = np.zeros(3, np.int64) if me == 0 else None
        sendbuf = np.arange(3, dtype=np.int64) * (me + 1)
        HetComm.Reduce(hc, sendbuf, got, MPI.SUM, root=0, algo="rooted_ls")
        last = hc.last_call
        rec.case(
            "default algo: Reduce with algo='rooted_ls' planned",
            (me != 0 or np.array_equal(got, want))
            and last is not None
            and (last.collective, last.algorithm)
            == ("Reduce", "rooted_ls" if comm.size > 1 else "none"),
        )
        got = HetComm.gather(hc, me, root=0, algo="mpi")
        rec.case(
            "default algo: gather with algo='mpi' passed to MPI",
            got == comm.gather(me, root=0) and hc.last_call is None,
        )


def check_auto_emulated(rec: Recorder, comm) -> None:
    """Under emulation the default ``auto`` weighs each ``Reduce``/``Gather``/``Scatter``
    against MPICH's binomial tree: the plan where predicted faster by the margin, else
    MPICH's tree run by the engine (``last_call.algorithm`` "mpi"); data as mpi4py's."""
    me, n = comm.rank, comm.size
    if n < 2:
        return
    with HetComm(comm, platform(n), emulate=True, timeout=60) as hc:
        for name, nbytes in (("Reduce", 4), ("Gather", 64), ("Scatter", 65536), ("Scatter", 4)):
            k = nbytes // 4
            if name == "Reduce":
                send = np.arange(k, dtype=np.int32) + me
                got, want = np.zeros(k, np.int32), np.zeros(k, np.int32)
                hc.Reduce(send, got, MPI.SUM, root=1)
                comm.Reduce(send, want, MPI.SUM, root=1)
            elif name == "Gather":
                send = np.arange(k, dtype=np.int32) + me
                got, want = np.zeros(k * n, np.int32), np.zeros(k * n, np.int32)
                hc.Gather(send, got, root=1)
                comm.Gather(send, want, root=1)
            else:
                send = np.arange(k * n, dtype=np.int32)
                got, want = np.zeros(k, np.int32), np.zeros(k, np.int32)
                hc.Scatter(send, got, root=1)
                comm.Scatter(send, want, root=1)
            choice, last = hc.last_choice, hc.last_call
            planned = choice.algorithm != "mpi"
            ok = (
                ((me != 1 and name != "Scatter") or np.array_equal(got, want))
                and last is not None
                and last.algorithm == ("auto" if planned else "mpi")
                and (not planned or choice.predicted * 1.25 < choice.mpi)
            )
            rec.case(f"auto emulated {name} {nbytes} B: {'plan' if planned else 'mpi'}", ok)


def check_mismatch(rec: Recorder, comm) -> None:
    if comm.size < 2:
        return
    # check="always": every rank compares the call's digest in the call itself (with the
    # default check a rank that only sends cannot see the disagreement, and a root may wait
    # for a message that never comes until its timeout)
    with HetComm(
        comm, platform(comm.size), "binomial", timeout=20, on_timeout="raise", check="always"
    ) as hc:
        root = 1 if comm.rank == comm.size - 1 else 0
        got = "none"
        try:
            hc.Reduce(np.ones(4, np.int64), np.zeros(4, np.int64), MPI.SUM, root=root)
        except MismatchError:
            got = "mismatch"
        except HetcollError as exc:
            got = type(exc).__name__
        rec.case("Reduce with another root: MismatchError on every rank", got == "mismatch", got)


def main() -> None:
    rec = Recorder(sys.argv[1])
    comm = WORLD
    with HetComm(comm, platform(comm.size), "fnf", timeout=60) as hc:
        for root in range(comm.size):
            check_reduce(rec, hc, comm, root)
            check_gather_scatter(rec, hc, comm, root)
        check_last_call(rec, hc, comm)
    check_default_is_mpi(rec, comm)
    check_auto_emulated(rec, comm)
    check_mismatch(rec, comm)
    rec.write()


if __name__ == "__main__":
    main()
