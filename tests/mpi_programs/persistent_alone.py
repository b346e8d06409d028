"""MPI test program: a lone persistent collective runs without looking for the start order.
``mpiexec -n K python persistent_alone.py``.

A wrapper's one live persistent request, with no nonblocking call queued, is the only call
that can have been started: ``Wait`` runs it at once, made in ``Bcast_init`` (the typed
buffer, the schedule's run), with no ``Iprobe`` on the progress's ``COMM_SELF`` from the
program's thread.  Every case compares the bytes with mpi4py's own ``Bcast`` on
``COMM_WORLD`` and checks ``last_call`` and the wrapper's call count; around it, the cases
that must still look in order: a start with a nonblocking call queued, two live requests
waited in the other order, a blocking call after a start, MPI's ``Waitall`` (the thread
runs it), a non-contiguous datatype (packed per start).  The same for a lone
``Allreduce_init`` (a hypercube reduction: new data at each start, in place too; a
non-commutative operator runs the blocking method), ``Allgather_init`` and ``Reduce_init``
(every root), and a lone ``Gather_init``, ``Scatter_init``, ``Reduce_scatter_block_init``
and ``Barrier_init``, compared with mpi4py's own persistent calls on ``COMM_WORLD``.
Rank 0 prints one JSON line: ``{"ranks": K, "failures": [...]}``.
"""

from __future__ import annotations

import threading

import numpy as np
from _report import check, report
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
MAIN = threading.get_ident()


def fill(out: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed * 1000 + me)
    out[...] = rng.integers(0, 1 << 30, out.shape).astype(out.dtype)


class Looks(MPI.Intracomm):
    """The progress's ``COMM_SELF`` duplicate, counting the program's thread's looks."""

    looks = 0

    def Iprobe(self, *args, **kwargs):
        if threading.get_ident() == MAIN:
            type(self).looks += 1
        return super().Iprobe(*args, **kwargs)


def counted(hc: HetComm) -> None:
    progress = hc._progress
    if progress is not None and type(progress.comm) is not Looks:
        progress.comm = Looks(progress.comm)


def expect(buf, root: int, seed: int):
    """Fill ``buf`` (the root's data, a sentinel elsewhere); mpi4py's result."""
    fill(buf, seed)
    want = buf.copy()
    WORLD.Bcast(want, root)
    if me != root:
        buf[...] = 0
    return want


def same(got, want, what: str) -> None:
    check(got.tobytes() == want.tobytes(), f"{what}: the bytes differ from mpi4py's")


def alone(algo: str) -> None:
    hc = HetComm(WORLD, Platform(nodes_from_costs([1e-6] * n)), algo, timeout=60)
    calls = 0
    for root in range(n):
        for size, dtype in ((1, np.uint8), (1001, np.uint8), (333, np.float64)):
            buf = np.zeros(size, dtype)
            spec = [buf, MPI.DOUBLE] if dtype is np.float64 else buf  # a contiguous spec
            req = hc.Bcast_init(spec, root)
            counted(hc)
            before = Looks.looks
            for k in range(3):
                want = expect(buf, root, 10 * root + k + size)
                if k == 1:
                    MPI.Prequest.Startall([req])
                else:
                    req.Start()
                req.Wait()
                calls += 1
                same(buf, want, f"{algo} alone root {root} {size} start {k}")
                record = hc.last_call
                check(
                    n == 1
                    or (record.collective, record.algorithm, record.root)
                    == ("Bcast_init", algo, root),
                    f"{algo} alone: last_call {record}",
                )
            looked = Looks.looks - before
            check(looked == 0, f"{algo} alone root {root} {size}: {looked} looks for the order")
            req.Free()
    # a start with a nonblocking call queued after it: the order is looked for
    a, b = np.zeros(500, np.uint8), np.zeros(600, np.uint8)
    req = hc.Bcast_init(a, 0)
    for k in range(2):
        wa, wb = expect(a, 0, 100 + k), expect(b, n - 1, 110 + k)
        req.Start()
        ib = hc.Ibcast(b, n - 1)
        (ib if k else req).Wait()
        MPI.Request.Waitall([req, ib])
        calls += 2
        same(a, wa, f"{algo} before an Ibcast {k}: the persistent start")
        same(b, wb, f"{algo} before an Ibcast {k}: the Ibcast")
    # a blocking call after a start runs it first; MPI's Waitall: the thread runs it
    c = np.zeros(70, np.uint8)
    wa, wc = expect(a, 0, 120), expect(c, n // 2, 121)
    req.Start()
    hc.Bcast(c, n // 2)
    req.Wait()
    calls += 2
    same(a, wa, f"{algo} before a blocking Bcast: the persistent start")
    same(c, wc, f"{algo} before a blocking Bcast: the Bcast")
    wa = expect(a, 0, 130)
    req.Start()
    MPI.Request.Waitall([req])
    calls += 1
    same(a, wa, f"{algo} Waitall: the persistent start")
    # two live requests, waited in the other order than started
    wb = expect(b, n - 1, 140)
    wa = expect(a, 0, 141)
    other = hc.Bcast_init(b, n - 1)
    other.Start()
    req.Start()
    req.Wait()
    other.Wait()
    calls += 2
    same(a, wa, f"{algo} two live requests: the second")
    same(b, wb, f"{algo} two live requests: the first")
    other.Free()
    req.Free()
    # a non-contiguous datatype: packed at each start by the blocking call
    strided = np.zeros((40, 2), np.int32)
    column = MPI.INT.Create_vector(40, 1, 2).Commit()
    req = hc.Bcast_init([strided, 1, column], n - 1)
    for k in range(2):
        fill(strided, 150 + k)
        want = strided.copy()
        WORLD.Bcast([want, 1, column], n - 1)
        if me != n - 1:
            strided[:, 0] = 0
        req.Start()
        req.Wait()
        calls += 1
        same(strided[:, 0].copy(), want[:, 0].copy(), f"{algo} strided start {k}")
    req.Free()
    column.Free()
    check(n == 1 or hc._seq == calls, f"{algo}: hetcoll ran {hc._seq} calls, expected {calls}")
    hc.close()


def _left(inbuf, inoutbuf, datatype) -> None:
    """``a op b = a``: associative, not commutative (the lowest rank's data wins)."""
    memoryview(inoutbuf).cast("B")[:] = memoryview(inbuf).cast("B")


def alone_allreduce(cube_algo: str) -> None:
    """A lone ``Allreduce_init`` run as a hypercube reduction: every start reads the send
    buffer again (new data each time), in place too, no look for the order; a
    non-commutative operator: the blocking call at each start.  The same for a lone
    ``Allgather_init`` over the hypercube (a strided block: the blocking call) and
    ``Reduce_init`` over the reduce tree at every root."""
    platform = Platform(nodes_from_costs([1e-6] * n))
    hc = HetComm(WORLD, platform, "binomial", cube_algo=cube_algo, timeout=60)
    calls = 0
    cases = (("sum f64", 333, np.float64, MPI.SUM), ("max i32", 7, np.int32, MPI.MAX))
    for label, size, dtype, op in cases:
        for place in (False, True):
            send, recv = np.zeros(size, dtype), np.zeros(size, dtype)
            req = hc.Allreduce_init(MPI.IN_PLACE if place else send, recv, op)
            counted(hc)
            before = Looks.looks
            for k in range(3):
                fill(send, 200 + 10 * k + size)
                want = np.zeros_like(send)
                WORLD.Allreduce(send, want, op)
                if place:
                    recv[...] = send
                else:
                    recv[...] = 0
                MPI.Prequest.Startall([req]) if k == 1 else req.Start()
                req.Wait()
                calls += 1
                same(recv, want, f"{cube_algo} Allreduce_init {label} in place={place} {k}")
                record = hc.last_call
                check(
                    n == 1 or (record.collective, record.root) == ("Allreduce_init", None),
                    f"{cube_algo} Allreduce_init: last_call {record}",
                )
            looked = Looks.looks - before
            check(n == 1 or looked == 0, f"{cube_algo} Allreduce_init {label}: {looked} looks")
            req.Free()
    left = MPI.Op.Create(_left, commute=False)  # not a hypercube reduction: the method
    send, recv = np.zeros(30, np.int64), np.zeros(30, np.int64)
    req = hc.Allreduce_init(send, recv, left)
    for k in range(2):
        fill(send, 250 + k)
        want = np.zeros_like(send)
        WORLD.Allreduce(send, want, left)
        recv[...] = 0
        req.Start()
        req.Wait()
        calls += 1
        same(recv, want, f"{cube_algo} Allreduce_init non-commutative {k}")
    req.Free()
    left.Free()
    for place in (False, True):  # Allgather_init over the hypercube: each start sends anew
        send, recv = np.zeros(5, np.int32), np.zeros(5 * n, np.int32)
        req = hc.Allgather_init(MPI.IN_PLACE if place else send, recv)
        counted(hc)
        before = Looks.looks
        for k in range(3):
            fill(send, 300 + k)
            want = np.zeros_like(recv)
            WORLD.Allgather(send, want)
            recv[...] = 0
            if place:
                recv[5 * me : 5 * me + 5] = send
            MPI.Prequest.Startall([req]) if k == 1 else req.Start()
            req.Wait()
            calls += 1
            same(recv, want, f"{cube_algo} Allgather_init in place={place} {k}")
            record = hc.last_call
            check(
                n == 1 or (record.collective, record.root) == ("Allgather_init", None),
                f"{cube_algo} Allgather_init: last_call {record}",
            )
        looked = Looks.looks - before
        check(n == 1 or looked == 0, f"{cube_algo} Allgather_init in place={place}: {looked} looks")
        req.Free()
    for root in range(n):  # Reduce_init over the reduce tree, at every root
        for place in (False, True):
            send, recv = np.zeros(9, np.float64), np.zeros(9, np.float64)
            at = MPI.IN_PLACE if place and me == root else send
            req = hc.Reduce_init(at, recv, MPI.SUM, root)
            counted(hc)
            before = Looks.looks
            for k in range(3):
                fill(send, 400 + 10 * root + k)
                want = np.zeros_like(send)
                WORLD.Reduce(send, want, MPI.SUM, root)
                recv[...] = send if place and me == root else 0
                MPI.Prequest.Startall([req]) if k == 1 else req.Start()
                req.Wait()
                calls += 1
                if me == root:
                    same(recv, want, f"{cube_algo} Reduce_init root {root} in place={place} {k}")
                record = hc.last_call
                check(
                    n == 1 or (record.collective, record.root) == ("Reduce_init", root),
                    f"{cube_algo} Reduce_init: last_call {record}",
                )
            looked = Looks.looks - before
            check(n == 1 or looked == 0, f"{cube_algo} Reduce_init root {root}: {looked} looks")
            req.Free()
    strided = np.zeros((6, 2), np.int32)  # a block packed at each start: the blocking call
    column = MPI.INT.Create_vector(6, 1, 2).Commit()
    recv = np.zeros(6 * n, np.int32)
    req = hc.Allgather_init([strided, 1, column], [recv, MPI.INT])
    for k in range(2):
        fill(strided, 320 + k)
        want = np.zeros_like(recv)
        WORLD.Allgather([strided, 1, column], [want, MPI.INT])
        recv[...] = 0
        req.Start()
        req.Wait()
        calls += 1
        same(recv, want, f"{cube_algo} Allgather_init strided {k}")
    req.Free()
    column.Free()
    check(n == 1 or hc._seq == calls, f"{cube_algo}: hetcoll ran {hc._seq} calls, not {calls}")
    hc.close()


def twice(req, ref, k: int) -> None:
    """Start and wait hetcoll's request (``Startall`` at start 1), then mpi4py's own."""
    MPI.Prequest.Startall([req]) if k == 1 else req.Start()
    req.Wait()
    ref.Start()
    ref.Wait()


def alone_rooted(algo: str) -> None:
    """A lone ``Gather_init`` and ``Scatter_init`` (every root, IN_PLACE at the root, a
    strided block), ``Reduce_scatter_block_init`` (a commutative operator, in place too;
    a non-commutative one runs the blocking call) and ``Barrier_init``: every start
    bit-identical to mpi4py's own persistent call on ``COMM_WORLD`` started with the same
    buffers (new data at every start), and no look for the order (a start made in the
    ``*_init`` call)."""
    platform = Platform(nodes_from_costs([1e-6] * n))
    hc = HetComm(WORLD, platform, algo, cube_algo="eff_cube", timeout=60)
    calls = 0

    def lone(req, before: int, what: str, collective: str, root) -> None:
        looked = Looks.looks - before
        check(n == 1 or looked == 0, f"{algo} {what}: {looked} looks for the order")
        record = hc.last_call
        check(
            n == 1 or (record.collective, record.root) == (collective, root),
            f"{algo} {what}: last_call {record}",
        )

    for root in range(n):
        for place in (False, True):
            mine = place and me == root
            send, recv = np.zeros(7, np.int32), np.zeros(7 * n, np.int32)
            want = np.zeros_like(recv)
            req = hc.Gather_init(MPI.IN_PLACE if mine else send, recv, root)
            ref = WORLD.Gather_init(send, want, root)
            counted(hc)
            before = Looks.looks
            for k in range(3):
                fill(send, 500 + 10 * root + k)
                recv[...] = 0
                if mine:
                    recv[7 * me : 7 * me + 7] = send
                twice(req, ref, k)
                calls += 1
                what = f"Gather_init root {root} in place={place} start {k}"
                if me == root:
                    same(recv, want, f"{algo} {what}")
                else:
                    check(not recv.any(), f"{algo} {what}: recvbuf written off the root")
                lone(req, before, what, "Gather_init", root)
            req.Free()
            ref.Free()
            send, recv = np.zeros(7 * n, np.int32), np.zeros(7, np.int32)
            want = np.zeros_like(recv)
            req = hc.Scatter_init(send, MPI.IN_PLACE if mine else recv, root)
            ref = WORLD.Scatter_init(send, want, root)
            before = Looks.looks
            for k in range(3):
                fill(send, 600 + 10 * root + k)
                kept = send.copy()
                recv[...] = 0
                twice(req, ref, k)
                calls += 1
                what = f"Scatter_init root {root} in place={place} start {k}"
                if mine:  # its block stays in sendbuf
                    same(send[7 * me : 7 * me + 7], want, f"{algo} {what}")
                    same(send, kept, f"{algo} {what}: sendbuf")
                else:
                    same(recv, want, f"{algo} {what}")
                lone(req, before, what, "Scatter_init", root)
            req.Free()
            ref.Free()
    column = MPI.INT.Create_vector(6, 1, 2).Commit()  # blocks packed at each start
    for root in (0, n - 1):
        strided = np.zeros((6, 2), np.int32)
        recv, want = np.zeros(6 * n, np.int32), np.zeros(6 * n, np.int32)
        req = hc.Gather_init([strided, 1, column], [recv, MPI.INT], root)
        ref = WORLD.Gather_init([strided, 1, column], [want, MPI.INT], root)
        before = Looks.looks
        for k in range(2):
            fill(strided, 700 + k)
            recv[...] = 0
            twice(req, ref, k)
            calls += 1
            if me == root:
                same(recv, want, f"{algo} Gather_init strided root {root} start {k}")
            lone(req, before, f"Gather_init strided root {root}", "Gather_init", root)
        req.Free()
        ref.Free()
        send = np.zeros(6 * n, np.int32)
        got, want = np.zeros((6, 2), np.int32), np.zeros((6, 2), np.int32)
        req = hc.Scatter_init([send, MPI.INT], [got, 1, column], root)
        ref = WORLD.Scatter_init([send, MPI.INT], [want, 1, column], root)
        before = Looks.looks
        for k in range(2):
            fill(send, 710 + k)
            got[...] = 0
            want[...] = 0
            twice(req, ref, k)
            calls += 1
            same(got, want, f"{algo} Scatter_init strided root {root} start {k}")
            lone(req, before, f"Scatter_init strided root {root}", "Scatter_init", root)
        req.Free()
        ref.Free()
    column.Free()
    cases = (("sum f64", 5, np.float64, MPI.SUM), ("max i32", 3, np.int32, MPI.MAX))
    for label, per, dtype, op in cases:
        for place in (False, True):
            send, recv = np.zeros(per * n, dtype), np.zeros(per * n if place else per, dtype)
            want = np.zeros(per, dtype)
            req = hc.Reduce_scatter_block_init(MPI.IN_PLACE if place else send, recv, op)
            ref = WORLD.Reduce_scatter_block_init(send, want, op)
            before = Looks.looks
            for k in range(3):
                fill(send, 800 + 10 * k + per)
                recv[...] = send if place else 0
                twice(req, ref, k)
                calls += 2  # a reduce, then a scatter
                what = f"Reduce_scatter_block_init {label} in place={place} start {k}"
                same(recv[:per], want, f"{algo} {what}")
                lone(req, before, what, "Reduce_scatter_block_init", None)
            req.Free()
            ref.Free()
    left = MPI.Op.Create(_left, commute=False)  # combined in rank order: the blocking call
    send, recv, want = np.zeros(4 * n, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int64)
    req = hc.Reduce_scatter_block_init(send, recv, left)
    ref = WORLD.Reduce_scatter_block_init(send, want, left)
    for k in range(2):
        fill(send, 850 + k)
        recv[...] = 0
        twice(req, ref, k)
        calls += 2
        same(recv, want, f"{algo} Reduce_scatter_block_init non-commutative start {k}")
    req.Free()
    ref.Free()
    left.Free()
    req = hc.Barrier_init()
    before = Looks.looks
    for k in range(3):
        MPI.Prequest.Startall([req]) if k == 1 else req.Start()
        req.Wait()
        calls += 1
        lone(req, before, f"Barrier_init start {k}", "Barrier_init", None)
    req.Free()
    check(n == 1 or hc._seq == calls, f"{algo} rooted: hetcoll ran {hc._seq} calls, not {calls}")
    hc.close()


def alone_per_root() -> None:
    """A lone ``Reduce_scatter_block_init`` over per-root trees (``cube_algo="forest"``):
    bit-identical to mpi4py's own, in place too, no look for the order, named as the
    blocking call is (its algorithm too)."""
    platform = Platform(nodes_from_costs([1e-6] * n))
    hc = HetComm(WORLD, platform, "binomial", cube_algo="forest", timeout=60)
    cases = (("sum f64", 5, np.float64, MPI.SUM), ("max i32", 3, np.int32, MPI.MAX))
    for label, per, dtype, op in cases:
        for place in (False, True):
            send, recv = np.zeros(per * n, dtype), np.zeros(per * n if place else per, dtype)
            want = np.zeros(per, dtype)
            fill(send, 900 + per)
            hc.Reduce_scatter_block(send, want, op)  # the blocking call: what it is named
            blocking = hc.last_call
            req = hc.Reduce_scatter_block_init(MPI.IN_PLACE if place else send, recv, op)
            ref = WORLD.Reduce_scatter_block_init(send, want, op)
            counted(hc)
            before = Looks.looks
            for k in range(3):
                fill(send, 910 + 10 * k + per)
                recv[...] = send if place else 0
                twice(req, ref, k)
                what = f"forest Reduce_scatter_block_init {label} in place={place} start {k}"
                same(recv[:per], want, what)
                record = hc.last_call
                check(
                    n == 1
                    or (record.collective, record.algorithm, record.root)
                    == ("Reduce_scatter_block_init", blocking.algorithm, None),
                    f"{what}: last_call {record}, the blocking call's {blocking}",
                )
            looked = Looks.looks - before
            check(
                n == 1 or looked == 0, f"forest Reduce_scatter_block_init {label}: {looked} looks"
            )
            req.Free()
            ref.Free()
    hc.close()


def main() -> None:
    for algo in ("binomial", "fnf"):
        alone(algo)
    for cube_algo in ("eff_cube", "blind"):
        alone_allreduce(cube_algo)
    for algo in ("binomial", "fnf"):
        alone_rooted(algo)
    alone_per_root()
    report()


if __name__ == "__main__":
    main()
