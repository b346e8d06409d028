"""MPI test program: nonblocking planned collectives.  ``mpiexec -n K python
nonblocking.py``.

Every rank runs the cases below on a ``HetComm`` and compares what it got, byte for byte,
with mpi4py's own collective on ``COMM_WORLD``; each case also checks that hetcoll ran the
call (the wrapper's call count grew: a call passed through to MPI leaves it alone).  Rank 0
prints one JSON line: ``{"ranks": K, "failures": [...]}`` (every rank's failed checks).

- ``Ibcast`` (every root, 0, 1, 1001 bytes and 1 MiB) and
  ``Iallreduce`` (int64 SUM, float64 MAX, in place), each waited for at once;
- several outstanding calls on one wrapper, completed in reverse order, by ``Waitall``
  with a point-to-point pair, by ``Waitany``, by ``Test`` in a loop;
- a request that must not wait for its data: a non-root's ``Ibcast`` returns before the
  root has called (the root first waits for a message that rank sends after its call);
- a blocking ``Bcast`` made while nonblocking calls are queued (it runs after them);
- ``Iallgather`` and ``Ibarrier``;
- a root out of range: ``Wait`` raises the error, or the next call when ``Waitall``
  completed the request;
- a wrapper whose planner gives the calls to MPI (``auto`` natively on one host): MPI's
  own nonblocking calls, no progress thread;
- a rank that never calls: with ``timeout=5, on_timeout="raise"`` the other ranks'
  ``Wait`` raises ``CollectiveTimeoutError`` (no hang).
"""

from __future__ import annotations

import numpy as np
from _report import check, report, same
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.errors import CollectiveTimeoutError, HetcollError
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size


def platform() -> Platform:
    return Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]), model="tini")


def data(size: int, seed: int, dtype=np.uint8) -> np.ndarray:
    rng = np.random.default_rng(seed * 1000 + me)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(size).astype(dtype)
    return rng.integers(0, 1 << 30, size).astype(dtype)


def bcast_pair(size: int, root: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The buffer a rank gives ``Ibcast``, and mpi4py's result."""
    src = data(size, seed)
    expected = src.copy()
    WORLD.Bcast(expected, root)
    return (src if me == root else np.zeros(size, np.uint8)), expected


def planned(hc: HetComm, calls: int, what: str) -> None:
    """hetcoll ran ``calls`` calls (one rank: a call moves nothing and is not counted)."""
    check(n == 1 or hc._seq == calls, f"{what}: hetcoll ran {hc._seq} calls, expected {calls}")


def single_calls(hc: HetComm) -> int:
    calls = 0
    for i, size in enumerate([0, 1, 1001, 1 << 20]):
        for root in range(n):
            buf, expected = bcast_pair(size, root, i * 10 + root)
            req = hc.Ibcast(buf, root)
            check(isinstance(req, MPI.Request), "Ibcast returns an MPI.Request")
            req.Wait()
            calls += 1
            same(buf, expected, f"Ibcast {size} B root {root}")
            check(req == MPI.REQUEST_NULL, "a waited request is MPI.REQUEST_NULL")
    for dtype, op in [(np.int64, MPI.SUM), (np.float64, MPI.MAX), (np.int32, MPI.MIN)]:
        for size in (1, 7, 50_000):
            mine = data(size, size, dtype)
            got, expected = np.zeros_like(mine), np.zeros_like(mine)
            WORLD.Allreduce(mine, expected, op)
            hc.Iallreduce(mine, got, op).Wait()
            calls += 1
            same(got, expected, f"Iallreduce {np.dtype(dtype)} {op} x{size}")
    inplace = data(33, 5, np.int64)
    expected = inplace.copy()
    WORLD.Allreduce(MPI.IN_PLACE, expected, MPI.SUM)
    status = MPI.Status()
    hc.Iallreduce(MPI.IN_PLACE, inplace, MPI.SUM).Wait(status)
    calls += 1
    same(inplace, expected, "Iallreduce in place")
    check(status.Get_error() == MPI.SUCCESS, "status error")
    planned(hc, calls, "single calls")
    return calls


def outstanding(hc: HetComm, calls: int) -> int:
    """Several calls in flight on one wrapper, completed in other orders than made."""
    for order in ("reverse", "waitall", "waitany", "test"):
        pairs = [bcast_pair(4096 + k, k % n, 100 + k) for k in range(3)]
        mine = data(1000, 7, np.int64)
        got, expected = np.zeros_like(mine), np.zeros_like(mine)
        WORLD.Allreduce(mine, expected, MPI.SUM)
        reqs = [hc.Ibcast(pairs[0][0], 0), hc.Iallreduce(mine, got, MPI.SUM)]
        reqs += [hc.Ibcast(b, k % n) for k, (b, _) in enumerate(pairs) if k]
        if order == "reverse":
            for r in reversed(reqs):
                r.Wait()
        elif order == "waitall":  # with a point-to-point pair
            token = np.zeros(1, np.int64)
            p2p = [
                WORLD.Irecv(token, (me - 1) % n, 77),
                WORLD.Isend(np.full(1, me), (me + 1) % n, 77),
            ]
            MPI.Request.Waitall(p2p + reqs)
            check(int(token[0]) == (me - 1) % n, "the point-to-point pair in Waitall")
        elif order == "waitany":
            seen = set()
            while len(seen) < len(reqs):
                seen.add(MPI.Request.Waitany(reqs))
            check(seen == set(range(len(reqs))), f"Waitany gave {sorted(seen)}")
        else:
            while not all(r.Test() for r in reqs):
                pass
        calls += len(reqs)
        for k, (b, e) in enumerate(pairs):
            same(b, e, f"{order}: Ibcast #{k}")
        same(got, expected, f"{order}: Iallreduce")
    planned(hc, calls, "outstanding calls")
    return calls


def does_not_wait(hc: HetComm, calls: int) -> int:
    """Rank 1's ``Ibcast`` must return before root 0 calls its own: root 0 first waits
    for a message rank 1 sends after its ``Ibcast``."""
    if n < 2:
        return calls
    buf, expected = bcast_pair(100, 0, 9)
    if me == 0:
        WORLD.Recv(np.zeros(1, np.int64), 1, 5)
        req = hc.Ibcast(buf, 0)
    else:
        req = hc.Ibcast(buf, 0)
        if me == 1:
            WORLD.Send(np.zeros(1, np.int64), 0, 5)
    req.Wait()
    same(buf, expected, "Ibcast returned before the root called")
    return calls + 1


def blocking_after(hc: HetComm, calls: int) -> int:
    a, ea = bcast_pair(3000, n - 1, 11)
    b, eb = bcast_pair(5000, 0, 12)
    req = hc.Ibcast(a, n - 1)
    hc.Bcast(b, 0)  # made after the Ibcast: runs after it
    req.Wait()
    same(a, ea, "Ibcast before a blocking Bcast")
    same(b, eb, "the blocking Bcast after an Ibcast")
    mine = data(10, 13, np.int32)
    got = np.zeros((n, 10), np.int32)
    expected = np.zeros((n, 10), np.int32)
    WORLD.Allgather(mine, expected)
    hc.Iallgather(mine, got).Wait()
    same(got, expected, "Iallgather")
    hc.Ibarrier().Wait()
    calls += 4
    planned(hc, calls, "blocking after nonblocking, Iallgather, Ibarrier")
    return calls


def bad_arguments(hc: HetComm) -> None:
    """A call with a root out of range: its error is raised by ``Wait`` on its request, or,
    when ``Waitall`` completed it, by the wrapper's next call (never lost); then the
    wrapper goes on.  (One rank: a broadcast moves nothing and its root is not looked at,
    as the blocking ``Bcast``'s.)"""
    if n == 1:
        return
    buf = np.zeros(4, np.uint8)
    try:
        hc.Ibcast(buf, n + 5).Wait()
        check(False, "Wait of an Ibcast with root n + 5 returned")
    except HetcollError as exc:
        check(f"rank {n + 5}" in str(exc), f"the error names the root: {exc}")
    MPI.Request.Waitall([hc.Ibcast(buf, n + 5)])
    try:
        hc.Ibarrier().Wait()
        check(False, "the next call after a failed call that Waitall completed returned")
    except HetcollError as exc:
        check(f"rank {n + 5}" in str(exc), f"the next call raises the error: {exc}")
    hc.Ibarrier().Wait()  # then it goes on


def kept_by_mpi() -> None:
    """A wrapper whose planner gives these calls to MPI (``auto`` natively on one host):
    its nonblocking calls are MPI's own, started on the program's thread (no progress
    thread, no call of hetcoll's engine), and still right."""
    hc = HetComm(WORLD, platform())
    buf, expected = bcast_pair(5000, n - 1, 21)
    mine = data(300, 22, np.int64)
    got, want = np.zeros_like(mine), np.zeros_like(mine)
    WORLD.Allreduce(mine, want, MPI.SUM)
    reqs = [hc.Ibcast(buf, n - 1), hc.Iallreduce(mine, got, MPI.SUM), hc.Ibarrier()]
    MPI.Request.Waitall(reqs)
    same(buf, expected, "auto: Ibcast")
    same(got, want, "auto: Iallreduce")
    check(hc._seq == 0 and hc._progress is None, "auto: MPI's own nonblocking calls")
    hc.close()


def never_called() -> None:
    """Rank 0 (the root) never calls: the others' Wait raises within the timeout."""
    hc = HetComm(WORLD, platform(), "binomial", timeout=5, on_timeout="raise")
    if me == 0 and n > 1:
        return
    req = hc.Ibcast(np.zeros(10, np.uint8), 0)
    try:
        req.Wait()
        check(n == 1, "Wait returned although the root never called")
    except CollectiveTimeoutError:
        check(n > 1, "a timeout on one rank")


def main() -> None:
    hc = HetComm(WORLD, platform(), "fnf")
    calls = single_calls(hc)
    calls = outstanding(hc, calls)
    calls = does_not_wait(hc, calls)
    blocking_after(hc, calls)
    bad_arguments(hc)
    hc.close()
    kept_by_mpi()
    never_called()
    report()


if __name__ == "__main__":
    main()
