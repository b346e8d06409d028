"""MPI test program: the v-variants and reduce-scatter HetComm plans (``Gatherv``,
``Scatterv``, ``Allgatherv``, ``Reduce_scatter_block``, ``Reduce_scatter``) against mpi4py's
own on the same ranks, element by element.

``mpiexec -n K python -m mpi4py vectors.py OUT``: for every root, counts that differ per
rank (zero for some), displacements out of rank order with gaps, sentinel-filled buffers,
int32 and float64, a derived (strided) datatype, IN_PLACE spelled ``MPI.IN_PLACE`` and
``None``; every predefined integer operator of a reduce-scatter bit for bit, float sums
(the same bits on two runs of the schedule), a non-commutative user operator (combined in
rank order), recvcounts given or gathered; ``last_call``; and ranks that disagree (another
root, another count) raising ``MismatchError`` on every rank with ``check="always"``.
Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI
from rooted import AFFINE, INT_OPS, WORLD, platform

from hetcoll import HetComm
from hetcoll.errors import HetcollError, MismatchError


def layout(n: int, shift: int = 0) -> tuple[list[int], list[int], int]:
    """Counts (rank r: (r + shift) % 4, so some are 0) and displacements in reverse rank
    order with a one-element gap after each block; the buffer's length."""
    counts = [(r + shift) % 4 for r in range(n)]
    displs, at = [0] * n, 0
    for r in reversed(range(n)):
        displs[r] = at
        at += counts[r] + 1
    return counts, displs, at


def check_gatherv(rec: Recorder, hc, comm, root: int) -> None:
    me, n = comm.rank, comm.size
    counts, displs, length = layout(n)
    for dtype, mpitype in ((np.int32, MPI.INT), (np.float64, MPI.DOUBLE)):
        send = (np.arange(counts[me]) + 100 * me).astype(dtype)
        want, got = np.full(length, -1, dtype), np.full(length, -1, dtype)
        comm.Gatherv(send, [want, (counts, displs), mpitype], root=root)
        hc.Gatherv(send, [got, (counts, displs), mpitype], root=root)
        rec.case(
            f"Gatherv root={root} {dtype.__name__}",
            me != root or got.tobytes() == want.tobytes(),
            f"{got} {want}",
        )
    last = hc.last_call
    rec.case(
        f"last_call Gatherv root={root}",
        last is not None and (last.collective, last.root) == ("Gatherv", root),
    )
    for spelling in (MPI.IN_PLACE, None):
        send = (np.arange(counts[me]) + 100 * me).astype(np.int64)
        want = np.full(length, -1, np.int64)
        comm.Gatherv(send, [want, counts, displs, MPI.INT64_T], root=root)
        buf = np.full(length, -1, np.int64)
        if me == root:
            buf[displs[me] : displs[me] + counts[me]] = send
            hc.Gatherv(spelling, [buf, counts, displs, MPI.INT64_T], root=root)
        else:
            hc.Gatherv(send, None, root=root)
        rec.case(
            f"Gatherv root={root} IN_PLACE {spelling}", me != root or np.array_equal(buf, want)
        )
    # a strided datatype: every other int32 of the receive buffer
    strided = MPI.INT.Create_vector(1, 1, 2).Create_resized(0, 8).Commit()
    send = np.arange(counts[me], dtype=np.int32) + 7 * me
    want, got = np.full(2 * length, -1, np.int32), np.full(2 * length, -1, np.int32)
    comm.Gatherv(send, [want, (counts, displs), strided], root=root)
    hc.Gatherv(send, [got, (counts, displs), strided], root=root)
    strided.Free()
    rec.case(f"Gatherv root={root} derived datatype", me != root or np.array_equal(got, want))
    # counts and no displacements, and a plain buffer split as mpi4py splits it
    total = sum(counts)
    send = np.arange(counts[me], dtype=np.int16) + me
    want, got = np.full(total, -1, np.int16), np.full(total, -1, np.int16)
    comm.Gatherv(send, [want, counts], root=root)
    hc.Gatherv(send, [got, counts], root=root)
    rec.case(f"Gatherv root={root} counts only", me != root or np.array_equal(got, want))


def check_scatterv(rec: Recorder, hc, comm, root: int) -> None:
    me, n = comm.rank, comm.size
    counts, displs, length = layout(n, shift=1)
    src = np.arange(length, dtype=np.float64) * 1.25 - 3
    for dtype, mpitype in ((np.float64, MPI.DOUBLE), (np.int32, MPI.INT)):
        data = src.astype(dtype)
        a, b = np.full(counts[me], -1, dtype), np.full(counts[me], -1, dtype)
        spec = [data, (counts, displs), mpitype] if me == root else None
        comm.Scatterv(spec, a, root=root)
        hc.Scatterv(spec, b, root=root)
        rec.case(f"Scatterv root={root} {dtype.__name__}", a.tobytes() == b.tobytes(), f"{a} {b}")
    for spelling in (MPI.IN_PLACE, None):
        a = np.full(counts[me], -1.0)
        comm.Scatterv([src, counts, displs, MPI.DOUBLE] if me == root else None, a, root=root)
        b = np.full(counts[me], -1.0)
        if me == root:
            hc.Scatterv([src, counts, displs, MPI.DOUBLE], spelling, root=root)
        else:
            hc.Scatterv(None, b, root=root)
        rec.case(f"Scatterv root={root} IN_PLACE {spelling}", me == root or np.array_equal(a, b))
    strided = MPI.DOUBLE.Create_vector(1, 1, 3).Create_resized(0, 24).Commit()
    wide = np.arange(3 * length, dtype=np.float64)
    a, b = np.full(counts[me], -1.0), np.full(counts[me], -1.0)
    spec = [wide, (counts, displs), strided] if me == root else None
    comm.Scatterv(spec, a, root=root)
    hc.Scatterv(spec, b, root=root)
    strided.Free()
    rec.case(f"Scatterv root={root} derived datatype", np.array_equal(a, b), f"{a} {b}")
    last = hc.last_call
    rec.case(
        f"last_call Scatterv root={root}",
        last is not None and (last.collective, last.root) == ("Scatterv", root),
    )


def check_allgatherv(rec: Recorder, hc, comm) -> None:
    me, n = comm.rank, comm.size
    for shift in (0, 1, 2):
        counts, displs, length = layout(n, shift)
        send = np.arange(counts[me], dtype=np.int32) * 3 + me
        want, got = np.full(length, -1, np.int32), np.full(length, -1, np.int32)
        comm.Allgatherv(send, [want, (counts, displs), MPI.INT])
        hc.Allgatherv(send, [got, (counts, displs), MPI.INT])
        rec.case(f"Allgatherv shift={shift}", np.array_equal(got, want), f"{got} {want}")
        for spelling in (MPI.IN_PLACE, None):
            buf = np.full(length, -1, np.int32)
            buf[displs[me] : displs[me] + counts[me]] = send
            hc.Allgatherv(spelling, [buf, counts, displs, MPI.INT])
            rec.case(f"Allgatherv shift={shift} IN_PLACE {spelling}", np.array_equal(buf, want))
    last = hc.last_call
    rec.case("last_call Allgatherv", last is not None and last.collective == "Allgatherv")
    strided = MPI.INT.Create_vector(1, 1, 2).Create_resized(0, 8).Commit()
    counts, displs, length = layout(n, 3)
    send = np.arange(counts[me], dtype=np.int32) + 50 * me
    want, got = np.full(2 * length, -1, np.int32), np.full(2 * length, -1, np.int32)
    comm.Allgatherv(send, [want, (counts, displs), strided])
    hc.Allgatherv(send, [got, (counts, displs), strided])
    strided.Free()
    rec.case("Allgatherv derived datatype", np.array_equal(got, want), f"{got} {want}")


def check_reduce_scatter(rec: Recorder, hc, comm) -> None:
    me, n = comm.rank, comm.size
    rng = np.random.default_rng(77 + me)
    for per in (0, 1, 3):
        for dtype in (np.int32, np.int64):
            send = rng.integers(1, 40, size=per * n).astype(dtype)
            for name in INT_OPS:
                op = getattr(MPI, name)
                want, got = np.full(per, -1, dtype), np.full(per, -1, dtype)
                comm.Reduce_scatter_block(send, want, op)
                hc.Reduce_scatter_block(send, got, op)
                rec.case(
                    f"Reduce_scatter_block per={per} {dtype.__name__} {name}",
                    got.tobytes() == want.tobytes(),
                    f"{got} {want}",
                )
    x = rng.standard_normal(5 * n)
    first, second, want = np.zeros(5), np.zeros(5), np.zeros(5)
    hc.Reduce_scatter_block(x, first, MPI.SUM)
    hc.Reduce_scatter_block(x, second, MPI.SUM)
    comm.Reduce_scatter_block(x, want, MPI.SUM)
    rec.case(
        "Reduce_scatter_block float64 SUM reproducible",
        first.tobytes() == second.tobytes() and np.allclose(first, want),
    )
    maps = np.array([[me + 2, me + 1]] * (2 * n), dtype=np.int64).reshape(-1)
    want, got = np.zeros(4, np.int64), np.zeros(4, np.int64)
    comm.Reduce_scatter_block(maps, want, AFFINE)
    hc.Reduce_scatter_block(maps, got, AFFINE)
    rec.case("Reduce_scatter_block non-commutative user op", np.array_equal(got, want), f"{got}")
    for spelling in (MPI.IN_PLACE, None):
        data = np.arange(3 * n, dtype=np.int64) * (me + 1)
        want = np.zeros(3, np.int64)
        comm.Reduce_scatter_block(data, want, MPI.SUM)
        buf = data.copy()
        hc.Reduce_scatter_block(spelling, buf, MPI.SUM)
        rec.case(
            f"Reduce_scatter_block IN_PLACE {spelling}",
            np.array_equal(buf[:3], want) and np.array_equal(buf[3:], data[3:]),
            f"{buf} {want}",
        )
    counts = [(r * 2 + 1) % 5 for r in range(n)]
    total = sum(counts)
    data = rng.integers(-9, 9, size=total).astype(np.int64)
    for name in ("SUM", "MAX", "BXOR"):
        op = getattr(MPI, name)
        for given in (counts, None):
            want, got = np.full(counts[me], -1, np.int64), np.full(counts[me], -1, np.int64)
            comm.Reduce_scatter(data, want, counts, op)
            hc.Reduce_scatter(data, got, given, op)
            rec.case(
                f"Reduce_scatter {name} recvcounts {'given' if given else 'gathered'}",
                np.array_equal(got, want),
                f"{got} {want}",
            )
    maps = np.array([[me + 3, 2 * me + 1]] * total, dtype=np.int64).reshape(-1)
    want, got = np.zeros(2 * counts[me], np.int64), np.zeros(2 * counts[me], np.int64)
    pairs = MPI.INT64_T.Create_contiguous(2).Commit()
    comm.Reduce_scatter([maps, pairs], [want, pairs], counts, AFFINE)
    hc.Reduce_scatter([maps, pairs], [got, pairs], counts, AFFINE)
    pairs.Free()
    rec.case("Reduce_scatter non-commutative user op", np.array_equal(got, want), f"{got} {want}")
    for spelling in (MPI.IN_PLACE, None):
        want = np.zeros(counts[me], np.int64)
        comm.Reduce_scatter(data, want, counts, MPI.SUM)
        buf = data.copy()
        hc.Reduce_scatter(spelling, buf, counts, MPI.SUM)
        rec.case(
            f"Reduce_scatter IN_PLACE {spelling}",
            np.array_equal(buf[: counts[me]], want)
            and np.array_equal(buf[counts[me] :], data[counts[me] :]),
        )
    last = hc.last_call
    rec.case("last_call Reduce_scatter", last is not None and last.collective == "Reduce_scatter")


def check_conventions(rec: Recorder, hc, comm) -> None:
    """A root out of range raises MPI's own error (``MPI.ERR_ROOT``) on every rank, as
    mpi4py's tests expect."""
    n = comm.size
    for root in (-n, n):
        for name, call in (
            ("reduce", lambda r: hc.reduce(None, op=MPI.SUM, root=r)),
            ("Gatherv", lambda r: hc.Gatherv(np.zeros(1), None, root=r)),
        ):
            try:
                call(root)
                got = "none"
            except MPI.Exception as exc:
                got = "ERR_ROOT" if exc.Get_error_class() == MPI.ERR_ROOT else str(exc)
            except Exception as exc:
                got = f"{type(exc).__name__}: {exc}"
            rec.case(f"{name} root={root}: MPI.ERR_ROOT", got == "ERR_ROOT", got)


def check_default_is_mpi(rec: Recorder, comm) -> None:
    me, n = comm.rank, comm.size
    counts, displs, length = layout(n)
    with HetComm(comm, platform(n), timeout=60) as hc:
        got = np.full(length, -1, np.int32)
        hc.Gatherv(np.zeros(counts[me], np.int32) + me, [got, (counts, displs), MPI.INT], root=0)
        rec.case("default algo: Gatherv passed to MPI", hc.last_call is None)
        got = np.zeros(2, np.int64)
        # natively on one host the instance's methods are mpi4py's: the class's names a plan
        HetComm.Reduce_scatter_block(hc, np.ones(2 * n, np.int64), got, MPI.SUM, algo="rooted_ls")
        last = hc.last_call
        rec.case(
            "default algo: Reduce_scatter_block with algo='rooted_ls' planned",
            np.array_equal(got, [n, n])
            and last is not None
            and last.algorithm == ("rooted_ls" if n > 1 else "none"),
        )


def mismatch(rec: Recorder, comm, name: str, call) -> None:
    """``call(hc)`` on a fresh wrapper with check="always": MismatchError on every rank."""
    with HetComm(
        comm, platform(comm.size), "binomial", timeout=20, on_timeout="raise", check="always"
    ) as hc:
        got = "none"
        try:
            call(hc)
        except MismatchError:
            got = "mismatch"
        except HetcollError as exc:
            got = f"{type(exc).__name__}: {exc}"
        rec.case(name, got == "mismatch", got)


def check_mismatch(rec: Recorder, comm) -> None:
    n, me = comm.size, comm.rank
    if n < 2:
        return
    counts, displs, length = layout(n, 1)
    root = 1 if me == n - 1 else 0

    def other_root(hc):
        hc.Gatherv(
            np.zeros(counts[me], np.int32),
            [np.zeros(length, np.int32), counts, displs, MPI.INT],
            root,
        )

    def other_count(hc):
        extra = 1 if me == n - 1 else 0
        hc.Gatherv(
            np.zeros(counts[me] + extra, np.int32),
            [np.zeros(length, np.int32), counts, displs, MPI.INT] if me == 0 else None,
            0,
        )

    def scatter_count(hc):
        extra = 1 if me == n - 1 else 0
        spec = [np.zeros(length), counts, displs, MPI.DOUBLE] if me == 0 else None
        hc.Scatterv(spec, np.zeros(counts[me] + extra), 0)

    def other_op(hc):
        op = MPI.MAX if me == n - 1 else MPI.SUM
        hc.Reduce_scatter_block(np.ones(2 * n, np.int64), np.zeros(2, np.int64), op)

    mismatch(rec, comm, "Gatherv with another root: MismatchError on every rank", other_root)
    mismatch(rec, comm, "Gatherv with another count: MismatchError on every rank", other_count)
    mismatch(rec, comm, "Scatterv with another count: MismatchError on every rank", scatter_count)
    mismatch(rec, comm, "Reduce_scatter_block with another op: MismatchError", other_op)


def main() -> None:
    rec = Recorder(sys.argv[1])
    comm = WORLD
    with HetComm(comm, platform(comm.size), "fnf", timeout=60) as hc:
        for root in range(comm.size):
            check_gatherv(rec, hc, comm, root)
            check_scatterv(rec, hc, comm, root)
        check_allgatherv(rec, hc, comm)
        check_reduce_scatter(rec, hc, comm)
        check_conventions(rec, hc, comm)
    check_default_is_mpi(rec, comm)
    check_mismatch(rec, comm)
    rec.write()


if __name__ == "__main__":
    main()
