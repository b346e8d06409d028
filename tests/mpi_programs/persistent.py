"""MPI test program: persistent planned collectives.  ``mpiexec -n K python persistent.py``.

Every rank compares what it got, byte for byte, with mpi4py's own collective on
``COMM_WORLD``, and checks that hetcoll ran each start (the wrapper's call count grew: a
call passed through to MPI leaves it alone).  Rank 0 prints one JSON line: ``{"ranks": K,
"failures": [...]}`` (every rank's failed checks).

- ``Bcast_init`` (every root; 1 byte, 1001 bytes, 1 MiB) and ``Allreduce_init`` (int64
  SUM, in place), each started three times with new data, ``Start`` + ``Wait``;
- ``MPI.Prequest.Startall`` of four persistent calls (``Bcast``, ``Allreduce``,
  ``Allgather``, ``Barrier``, listed in another order than made) and ``Request.Waitall``
  with a point-to-point pair, twice; then ``Test`` in a loop; ``Free``;
- a persistent start, a nonblocking call and a blocking call in one sequence (they run in
  the order made); a request freed while active (its call still runs);
- a persistent start made after a nonblocking call (``Start`` and ``Startall``) runs
  after it on every rank, whichever rank's thread began the nonblocking call first;
- the plan and the agreement happen once, in the ``*_init`` call (the planner and the
  digest comparison counted), and ranks that make different ``*_init`` calls all raise there;
- a wrapper whose planner gives the calls to MPI (``auto`` natively on one host): MPI's
  own persistent calls.
"""

from __future__ import annotations

import time

import numpy as np
from _report import check, report, same
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.errors import HetcollError
from hetcoll.platform import nodes_from_costs
from hetcoll.runtime.nonblocking import CollectiveRequest
from hetcoll.runtime.persistent import PersistentRequest

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size


def platform() -> Platform:
    return Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]), model="tini")


def fill(out: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed * 1000 + me)
    out[...] = rng.integers(0, 1 << 30, out.shape).astype(out.dtype)


def planned(hc: HetComm, calls: int, what: str) -> None:
    """hetcoll ran ``calls`` calls (one rank: a call moves nothing and is not counted)."""
    check(n == 1 or hc._seq == calls, f"{what}: hetcoll ran {hc._seq} calls, expected {calls}")


def started_alone(hc: HetComm) -> int:
    calls = 0
    for size in (1, 1001, 1 << 20):
        for root in range(n):
            buf = np.zeros(size, np.uint8)
            req = hc.Bcast_init(buf, root)
            check(isinstance(req, MPI.Prequest), "Bcast_init returns an MPI.Prequest")
            for k in range(3):
                fill(buf, size + 10 * root + k)
                expected = buf.copy()
                WORLD.Bcast(expected, root)
                if me != root:
                    buf[:] = 0
                req.Start()
                req.Wait()
                calls += 1
                same(buf, expected, f"Bcast_init {size} B root {root} start {k}")
            req.Free()
            check(req == MPI.REQUEST_NULL, "a freed request is MPI.REQUEST_NULL")
    mine, got = np.zeros(5000, np.int64), np.zeros(5000, np.int64)
    req = hc.Allreduce_init(mine, got, MPI.SUM)
    inplace = np.zeros(17, np.int64)
    req2 = hc.Allreduce_init(MPI.IN_PLACE, inplace, MPI.MAX)
    for k in range(3):
        fill(mine, 50 + k)
        fill(inplace, 60 + k)
        expected, expected2 = np.zeros_like(got), inplace.copy()
        WORLD.Allreduce(mine, expected, MPI.SUM)
        WORLD.Allreduce(MPI.IN_PLACE, expected2, MPI.MAX)
        req.Start()
        req2.Start()
        req2.Wait()
        req.Wait()
        calls += 2
        same(got, expected, f"Allreduce_init start {k}")
        same(inplace, expected2, f"Allreduce_init in place start {k}")
    req.Free()
    req2.Free()
    planned(hc, calls, "started alone")
    return calls


def started_together(hc: HetComm, calls: int) -> int:
    a = np.zeros(3000, np.uint8)
    mine, summed = np.zeros(100, np.int64), np.zeros(100, np.int64)
    block, gathered = np.zeros(8, np.int32), np.zeros((n, 8), np.int32)
    reqs = [
        hc.Bcast_init(a, n - 1),
        hc.Allreduce_init(mine, summed, MPI.SUM),
        hc.Allgather_init(block, gathered),
        hc.Barrier_init(),
    ]
    order = [reqs[2], reqs[0], reqs[3], reqs[1]]  # every rank the same order
    for k in range(3):
        fill(a, 70 + k)
        fill(mine, 80 + k)
        fill(block, 90 + k)
        ea, es, eg = a.copy(), np.zeros_like(summed), np.zeros_like(gathered)
        WORLD.Bcast(ea, n - 1)
        WORLD.Allreduce(mine, es, MPI.SUM)
        WORLD.Allgather(block, eg)
        MPI.Prequest.Startall(order)
        if k < 2:
            token = np.zeros(1, np.int64)
            p2p = [
                WORLD.Irecv(token, (me - 1) % n, 78),
                WORLD.Isend(np.full(1, me, np.int64), (me + 1) % n, 78),
            ]
            MPI.Request.Waitall(p2p + order)
            check(int(token[0]) == (me - 1) % n, "the point-to-point pair in Waitall")
        else:
            while not MPI.Request.Testall(reqs):
                pass
        calls += 4
        same(a, ea, f"Startall {k}: Bcast")
        same(summed, es, f"Startall {k}: Allreduce")
        same(gathered, eg, f"Startall {k}: Allgather")
    for r in reqs:
        r.Free()
    planned(hc, calls, "started together")
    return calls


def mixed(hc: HetComm, calls: int) -> int:
    """A persistent start, then a nonblocking and a blocking call: run in that order."""
    a, b, c = (np.zeros(4000 + k, np.uint8) for k in range(3))
    req = hc.Bcast_init(a, 0)
    for k in range(2):
        for m, buf in enumerate((a, b, c)):
            fill(buf, 100 + 10 * k + m)
        ea, eb, ec = a.copy(), b.copy(), c.copy()
        WORLD.Bcast(ea, 0)
        WORLD.Bcast(eb, n - 1)
        WORLD.Bcast(ec, n // 2)
        if k:
            MPI.Prequest.Startall([req])  # found by the thread's look, not woken
        else:
            req.Start()
        ib = hc.Ibcast(b, n - 1)
        hc.Bcast(c, n // 2)
        MPI.Request.Waitall([ib, req])
        calls += 3
        for got, want, what in ((a, ea, "persistent"), (b, eb, "Ibcast"), (c, ec, "Bcast")):
            same(got, want, f"mixed {k}: {what}")
    req.Free()
    planned(hc, calls, "mixed")
    return calls


def started_after_queued(calls: int) -> int:
    """A persistent start made after a nonblocking call runs after it on every rank, also
    when the thread is already in the nonblocking call on some ranks and not yet on others
    (rank 0 lets its thread begin first), and with ``Startall`` as with ``Start``."""
    hc = HetComm(WORLD, platform(), "fnf", timeout=20, on_timeout="raise")
    a = np.zeros(20000, np.uint8)
    b = np.zeros(30000, np.uint8)
    req = hc.Bcast_init(b, n - 1)
    for k in range(4):
        fill(a, 400 + k)
        fill(b, 410 + k)
        ea, eb = a.copy(), b.copy()
        WORLD.Bcast(ea, 0)
        WORLD.Bcast(eb, n - 1)
        try:
            ib = hc.Ibcast(a, 0)
            if me == 0:
                time.sleep(0.05)
            if k % 2:
                MPI.Prequest.Startall([req])
            else:
                req.Start()
            MPI.Request.Waitall([req, ib])
        except HetcollError as exc:
            check(False, f"a start after a queued call {k}: {exc}")
            break
        same(a, ea, f"a start after a queued call {k}: Ibcast")
        same(b, eb, f"a start after a queued call {k}: Bcast_init")
        calls += 2
    req.Free()
    planned(hc, calls, "a start after a queued call")
    hc.close()
    return calls


def planned_at_init() -> None:
    """The plan and the ranks' agreement happen in the ``*_init`` call, once: the planner
    is asked once per request and the digests compared once, whatever the starts; a call
    that differs between ranks raises in ``*_init`` on every rank."""
    hc = HetComm(WORLD, platform(), "fnf", timeout=20, on_timeout="raise")
    counts = {"plans": 0, "agreements": 0}

    def counted(method, key):
        def call(*args, **kwargs):
            counts[key] += 1
            return method(*args, **kwargs)

        return call

    for name in ("tree", "cube", "rooted"):
        setattr(hc.planning, name, counted(getattr(hc.planning, name), "plans"))
    hc._allgather = counted(hc._allgather, "agreements")
    buf = np.zeros(5000, np.uint8)
    mine, got = np.zeros(40, np.int64), np.zeros(40, np.int64)
    fill(buf, 500)
    kept = buf.copy()
    reqs = [hc.Bcast_init(buf, n - 1), hc.Allreduce_init(mine, got, MPI.SUM)]
    same(buf, kept, "Bcast_init leaves its buffer alone")
    at_init = dict(counts)
    want = {"plans": 0, "agreements": 0} if n == 1 else {"plans": 2, "agreements": 2}
    check(at_init == want, f"in the *_init calls: {at_init}, expected {want}")
    for k in range(4):
        fill(buf, 510 + k)
        fill(mine, 520 + k)
        eb, es = buf.copy(), np.zeros_like(got)
        WORLD.Bcast(eb, n - 1)
        WORLD.Allreduce(mine, es, MPI.SUM)
        MPI.Prequest.Startall(reqs)
        MPI.Request.Waitall(reqs)
        same(buf, eb, f"planned at init, start {k}: Bcast")
        same(got, es, f"planned at init, start {k}: Allreduce")
    check(counts == at_init, f"the starts planned or agreed again: {counts} after {at_init}")
    for r in reqs:
        r.Free()
    if n > 1:  # another root on the last rank: every rank raises in Bcast_init
        try:
            hc.Bcast_init(buf, 0 if me < n - 1 else 1).Free()
            check(False, "Bcast_init with different roots returned")
        except HetcollError as exc:
            check("Bcast_init" in str(exc), f"the error names the call: {exc}")
    hc._release()


def freed_while_active(hc: HetComm, calls: int) -> int:
    """MPI lets a program free an active persistent request: the call still runs (before a
    later blocking call of the wrapper), and the wrapper goes on."""
    buf = np.zeros(777, np.uint8)
    fill(buf, 300)
    expected = buf.copy()
    WORLD.Bcast(expected, n - 1)
    if me != n - 1:
        buf[:] = 0
    req = hc.Bcast_init(buf, n - 1)
    req.Start()
    req.Free()
    hc.Barrier()  # made after the start: runs after the freed call
    same(buf, expected, "a persistent Bcast freed while active")
    check(hc._progress.armed == 0, f"{hc._progress.armed} requests still looked for")
    planned(hc, calls + 2, "freed while active")
    return calls + 2


def kept_by_mpi() -> None:
    """A wrapper whose planner gives the calls to MPI (``auto`` natively on one host): its
    persistent calls are MPI's own, and still right."""
    hc = HetComm(WORLD, platform())
    buf = np.zeros(2000, np.uint8)
    req = hc.Bcast_init(buf, 0)
    check(type(req) is MPI.Prequest, f"auto: Bcast_init gave {type(req).__name__}")
    for k in range(2):
        fill(buf, 200 + k)
        expected = buf.copy()
        WORLD.Bcast(expected, 0)
        req.Start()
        req.Wait()
        same(buf, expected, f"auto: Bcast_init start {k}")
    req.Free()
    check(hc._seq == 0 and hc._progress is None, "auto: MPI's own persistent calls")
    hc.close()


def mixed_with_mpi() -> None:
    """One wrapper whose choice gives small calls to MPI and plans larger ones (a tuning
    rule): MPI's own persistent and nonblocking requests and planned ones outstanding
    together, started in one order on every rank (``Startall``, ``Start``, nonblocking and
    blocking calls between them), completed in another order on even and odd ranks
    (``Waitall``, ``Wait`` one by one, ``Waitany``, ``Testsome``): every result is mpi4py's,
    every planned call ran, nothing hangs."""
    from hetcoll.tuning import Rule, Tuning

    rules = {"bcast": (Rule(0, "mpi"), Rule(64, "binomial")),
             "allreduce": (Rule(0, "mpi"), Rule(64, "blind"))}  # fmt: skip
    hc = HetComm(WORLD, platform(), timeout=60, on_timeout="raise", tuning=Tuning(n, rules))
    small, big = np.zeros(8, np.uint8), np.zeros(4096, np.uint8)
    s_in, s_out = np.zeros(2, np.int32), np.zeros(2, np.int32)  # 8 bytes: MPI's
    b_in, b_out = np.zeros(64, np.int64), np.zeros(64, np.int64)  # 512 bytes: planned
    reqs = {
        "Bcast_init small": hc.Bcast_init(small, 0),
        "Bcast_init big": hc.Bcast_init(big, n - 1),
        "Allreduce_init small": hc.Allreduce_init(s_in, s_out, MPI.SUM),
        "Allreduce_init big": hc.Allreduce_init(b_in, b_out, MPI.SUM),
    }
    for name, req in reqs.items():
        planned_here = isinstance(req, PersistentRequest)  # or its DirectRequest
        check(planned_here == ("big" in name), f"mixed with MPI: {name} gave {type(req).__name__}")
        check(planned_here or type(req) is MPI.Prequest, f"mixed with MPI: {name}: {req!r}")
    for k in range(4):
        extra_s, extra_b = np.zeros(8, np.uint8), np.zeros(2000, np.uint8)
        blk_s, blk_b = np.zeros(16, np.uint8), np.zeros(3000, np.uint8)
        bufs = (small, big, extra_s, extra_b, blk_s, blk_b)
        for m, buf in enumerate(bufs):
            fill(buf, 600 + 10 * k + m)
        fill(s_in, 650 + k)
        fill(b_in, 660 + k)
        roots = (0, n - 1, n // 2, n - 1, 0, n // 2)
        expected = [buf.copy() for buf in bufs]
        for buf, root in zip(expected, roots, strict=True):
            WORLD.Bcast(buf, root)
        es, eb = np.zeros_like(s_out), np.zeros_like(b_out)
        WORLD.Allreduce(s_in, es, MPI.SUM)
        WORLD.Allreduce(b_in, eb, MPI.SUM)
        order = list(reqs.values())[k % 4 :] + list(reqs.values())[: k % 4]
        MPI.Prequest.Startall(order[:2])
        ib_s = hc.Ibcast(extra_s, n // 2)  # MPI's own
        order[2].Start()
        ib_b = hc.Ibcast(extra_b, n - 1)  # planned
        hc.Bcast(blk_s, 0)  # MPI's own, blocking
        order[3].Start()
        hc.Bcast(blk_b, n // 2)  # planned, blocking: after the planned calls started
        check(isinstance(ib_b, CollectiveRequest), "mixed with MPI: the planned Ibcast")
        check(not isinstance(ib_s, CollectiveRequest), "mixed with MPI: MPI's Ibcast")
        every = [*order, ib_s, ib_b]
        if me % 2:
            every.reverse()
        if k == 0:
            MPI.Request.Waitall(every)
        elif k == 1:
            for req in every:
                req.Wait()
        elif k == 2:
            for _ in every:
                MPI.Request.Waitany(every)
        else:
            # Testsome: this MPICH's Testall raises ERR_IN_STATUS (every status
            # SUCCESS) for a started MPI_Bcast_init request, with or without hetcoll
            done = 0
            while done < len(every):
                done += len(MPI.Request.Testsome(every) or [])
        for m, (got, want) in enumerate(zip(bufs, expected, strict=True)):
            same(got, want, f"mixed with MPI {k}: broadcast {m}")
        same(s_out, es, f"mixed with MPI {k}: MPI's Allreduce_init")
        same(b_out, eb, f"mixed with MPI {k}: the planned Allreduce_init")
    # planned per round: the two persistent starts, the Ibcast and the Bcast of the big ones
    check(n == 1 or hc._seq == 4 * 4, f"mixed with MPI: hetcoll ran {hc._seq} calls")
    for req in reqs.values():
        req.Free()
    hc.close()


def main() -> None:
    hc = HetComm(WORLD, platform(), "fnf")
    calls = started_alone(hc)
    calls = started_together(hc, calls)
    calls = mixed(hc, calls)
    freed_while_active(hc, calls)
    hc.close()
    started_after_queued(0)
    planned_at_init()
    kept_by_mpi()
    mixed_with_mpi()
    report()


if __name__ == "__main__":
    main()
