"""The native fast path: a rank's plan of small messages, run with persistent requests.

:class:`~.executor.Executor` is the engine's reference: an object with the simulator's
steps, any timing, any transport.  For the commonest call — native timing, every message
at most :data:`~.transport.PACK` bytes, headers on — :class:`FastRun` runs the same rules
(deps, one send port taking the first ready send in program order, receives posted when
their deps completed) in one loop over local state, with a persistent request and memory
per op made once per schedule.  The header of each send is packed once (its digest, size);
a call writes only its number, copies the chunk behind it and starts the request; a receive
compares the header's call number and digest with the call's and copies the chunk out.  A
call then costs a few microseconds of Python, which is what a 1-byte broadcast and every
segment of a pipelined one pay.  A send asks MPI whether it took the message right after
starting it (a small message is copied out on the spot: the port is free without a turn of
the loop), a lone request in flight is asked with ``Test`` (a third of ``Testsome``'s cost),
and a rank of a one-message tree (its receive, then its sends: :func:`straight`) runs its
ops one after the other without the loop's bookkeeping.  With ``check="always"`` the
agreement round (:mod:`.agreement`) is polled in the same loop, overlapped with the data.

The wire format is the transport's (:mod:`.transport`: header, then the chunk), so a rank on
the fast path and one on the general path talk to each other, and the rare cases are the
transport's rules: a header of an earlier, abandoned call is a leftover (dropped, the
receive started again), one of a later call is kept for that call and this call is
abandoned, anything else — another schedule, a message that does not fit — is a
:class:`~hetcoll.errors.MismatchError`.
"""

from __future__ import annotations

import os
import struct
import time
from heapq import heappop, heappush

from mpi4py import MPI

from ..errors import CollectiveTimeoutError
from .inflight import Inflight
from .rank_ops import KIND_NAMES, SEND, ByteRanges, DataHandler, RankPlan, Trace, timeout_message
from .transport import (
    _HDR,
    HEADER,
    PACK,
    _completed,
    cancelled,
    data_tag,
    kept_entry,
    mismatch,
    refused,
    release,
)

__all__ = ["FastRun", "Rest"]

_NS = 1_000_000_000
_SEQ = struct.Struct("<q")
_TOKEN = struct.Struct("<2q")


def straight(plan: RankPlan, sends: tuple[bool, ...]) -> tuple[int, tuple[int, ...]] | None:
    """``(receive or -1, sends in program order)`` when the plan's ops can go one after the
    other with the same result: at most one receive, without deps, and sends that each
    depend on it alone (or on nothing, when there is none); else None."""
    recvs = [i for i, s in enumerate(sends) if not s]
    order = tuple(i for i, s in enumerate(sends) if s)
    if len(recvs) > 1:
        return None
    if not recvs:
        return (-1, order) if all(plan.ndeps[i] == 0 for i in order) else None
    r = recvs[0]
    if plan.ndeps[r] or any(plan.ndeps[i] != 1 or i not in plan.dependents[r] for i in order):
        return None
    return r, order


def _one(op: int, req: MPI.Request, testsome) -> Inflight:
    """The requests in flight of a rank of a one-message tree that waits: ``req`` alone."""
    flight = Inflight(testsome)
    flight.add(op, req)
    return flight


class Rest:
    """How an idle rank looks again soon, leaving the core to whoever wants it.

    ``sched_yield`` returns at once (about 2 µs) when nobody else is runnable, and runs a
    peer rank sharing the core when one is; ``time.sleep(0)`` always sleeps the timer
    slack (about 60-80 µs here), the cost of every idle turn of a small call.  But on a
    host busy with other processes a yield can hand the core away for a whole scheduler
    slice (1-7 ms measured), where a sleep is woken, and preempts them, after its slack.
    So a rank yields, and when a yield took longer than ``slow`` it sleeps instead for a
    while, then tries yielding again.  How long depends on how much of the time slow yields
    take: when one took more than ``1/often`` of the time since the last while ended (the
    host stays busy: yielding loses more than sleeping would), twice the last while, up to
    ``most`` (ns); else (a slow yield long after the last) half of it, down to ``hold``.
    Halving rather than starting again from ``hold`` keeps a busy host asleep through
    its odd quiet moment.  Why (four ranks on two cores, docs/runtime.md, Waiting): on
    an idle host a slow yield is rare, and a fixed 100 ms of sleeps after each would make
    every ``check="always"`` call, whose round waits for every idle rank, pay 60-80 µs naps;
    with another process holding a core, slow yields take half the time, and sleeping is
    ten times faster.
    """

    __slots__ = ("hold", "most", "often", "slow", "span", "until")

    def __init__(
        self, slow: int = 200_000, hold: int = 1_000_000, most: int = 100_000_000, often: int = 32
    ) -> None:
        self.slow, self.hold, self.most, self.often = slow, hold, max(most, hold), often
        self.span = hold  # the last while slept (ns)
        self.until = -(1 << 62)  # sleeping until then (ns); long ago: the first is lone

    def __call__(self) -> None:
        t = time.monotonic_ns()
        if t < self.until:
            time.sleep(0)
            return
        os.sched_yield()
        took = time.monotonic_ns() - t
        if took > self.slow:
            busy = took * self.often > t - self.until  # a large share of the time since
            self.span = min(2 * self.span, self.most) if busy else max(self.span // 2, self.hold)
            self.until = t + self.span


class FastRun:
    """One rank's part of a schedule, compiled for the native fast path (see the module
    docstring); ``None`` from :meth:`compile` when a message is too large for it."""

    def __init__(self, comm: MPI.Comm, plan: RankPlan, owner) -> None:
        self.plan = plan
        self.comm = comm
        # the wrapper's settings (fixed once it is set up) and its notices
        self.notices, self.rest, self.timeout = owner.notices, owner._rest, owner.timeout
        self.host = owner.host  # its clock, sleep and Testsome (clocks.Host)
        self.spin_ns, self.poll = int(owner.spin * _NS), owner.poll
        self.timeout_ns = int(self.timeout * _NS)
        self.on_timeout = owner._timed_out if owner.on_timeout == "abort" else None
        self.mems: list[bytearray] = []
        self.payloads: list[memoryview] = []  # the chunk's part of each op's memory
        self.reqs: list[MPI.Prequest] = []
        ops = zip(plan.kinds, plan.peers, plan.chunks, plan.nbytes, strict=True)
        for kind, peer, chunk, n in ops:
            mem = bytearray(HEADER + n)
            init = comm.Send_init if kind == SEND else comm.Recv_init
            self.mems.append(mem)
            self.payloads.append(memoryview(mem)[HEADER:])
            self.reqs.append(init(mem, peer, data_tag(chunk)))
        self.sends = tuple(k == SEND for k in plan.kinds)
        # the ops without deps: receives posted and sends enabled as a call begins
        self.first_recvs = tuple(i for i in plan.roots if not self.sends[i])
        self.first_sends = sorted(i for i in plan.roots if self.sends[i])
        self.names = tuple(KIND_NAMES[k] for k in plan.kinds)
        # a stray look (strays.py) after a long wait without progress
        self.strays = owner.strays
        self.straight = straight(plan, self.sends)
        if self.straight is not None:  # one frame less per call: run() is _straight()
            self.run = self._straight
        self.digest: int | None = None  # packed in the send headers
        self.ranges: tuple | None = None  # per op (buffer, slice) of a ByteRanges handler
        self.chunk_table = None  # the chunks ``ranges`` was made from
        n = len(plan)
        self.entry = 0
        self.done = [0] * n  # completion times of the last call (ns), for trace()
        self.issued = [0] * n
        self.flight = Inflight()  # of the last call, for abandon()

    @classmethod
    def compile(cls, comm: MPI.Comm, plan: RankPlan, owner) -> FastRun | None:
        """The fast path of ``plan`` for the wrapper ``owner`` (a ``ScheduleComm``)."""
        return cls(comm, plan, owner) if all(n <= PACK for n in plan.nbytes) else None

    def free(self, keep: set[int] = frozenset()) -> None:
        """Free the requests (except those in ``keep``, by id: still in flight)."""
        for req, send in zip(self.reqs, self.sends, strict=False):
            if id(req) not in keep:
                release(req, not send)
        self.reqs = []

    def trace(self) -> Trace:
        """The :class:`~.plan.Trace` of the last call (real times)."""
        return Trace.native(self.entry, self.done, self.issued, self.sends)

    def _pack(self, digest: int) -> None:
        """Pack ``digest`` into the send headers (once per digest)."""
        for i, mem in enumerate(self.mems):
            if self.sends[i]:
                _HDR.pack_into(mem, 0, 0, digest, 0, 0, len(mem) - HEADER)
        self.digest = digest

    def _bind(self, handler: DataHandler) -> tuple | None:
        """The per-op ``(buffer, slice)`` when ``handler`` moves byte ranges of user
        buffers (made once per chunk table), None: ask the handler."""
        if type(handler) is not ByteRanges:
            return None
        if handler.chunks is not self.chunk_table:
            self.ranges = handler.op_ranges(self.plan.chunks)
            self.chunk_table = handler.chunks
        return self.ranges

    def run(self, handler: DataHandler, seq: int, digest: int, what, agree=None) -> None:
        """Run call ``seq`` of the plan (``digest``: the call's); the wrapper's notices
        (:mod:`.notices`) are looked at while idle, and give the call numbers whose
        leftovers are dropped.  ``agree`` (``check="always"``, :mod:`.agreement`): a round
        in flight, polled in the same loop; the call ends once it is over too, and raises
        :class:`~hetcoll.errors.MismatchError` (data abandoned) when it finds a mismatch.

        Per call only what changes is done: each send copies its chunk behind its header,
        writes the call number and starts its persistent request, then asks at once
        whether MPI took it (a small message is copied out on the spot: the port is free
        again without a turn of the loop); a lone request in flight is asked with ``Test``
        (a third of ``Testsome``'s cost); an idle turn yields (:class:`Rest`)."""
        if digest != self.digest:
            self._pack(digest)
        ranges = self._bind(handler)
        buffers = handler.buffers if ranges is not None else None
        reqs, mems, payloads, sends = self.reqs, self.mems, self.payloads, self.sends
        chunks, dependents, peers = self.plan.chunks, self.plan.dependents, self.plan.peers
        done, issued, names = self.done, self.issued, self.names
        waiting = list(self.plan.ndeps)
        due = list(self.first_sends)  # enabled sends: a heap (sorted: program order)
        # requests started and not yet seen complete, by op (inflight.py: a look costs
        # O(1) in the number of them, so a call of M segments costs O(M))
        clock, sleep, testsome = self.host
        self.flight = flight = Inflight(testsome)
        now = self.entry = clock()
        for i in self.first_recvs:
            if ranges is None:  # the handler learns the receive is posted
                handler.recv_buffer(chunks[i], names[i])
            reqs[i].Start()
            flight.add(i, reqs[i], peers[i])
            issued[i] = now
        remaining, port, pending = len(sends), -1, agree is not None
        deadline = now + self.timeout_ns
        rest, notices, strays = self.rest, self.notices, self.strays
        # check="always": every rank is in this call together (the round), so its waits are
        # short unless a rank is late: look again at once for longer before napping
        spin_ns = self.spin_ns if agree is None else agree.spin_ns
        idle_since = now
        token = (seq, digest)
        finished: list[int] = []
        while remaining or pending:
            if port < 0 and due:
                i = heappop(due)
                if ranges is not None:
                    b, sl = ranges[i]
                    payloads[i][:] = buffers[b][sl]
                else:
                    payloads[i][:] = handler.send_buffer(chunks[i])
                _SEQ.pack_into(mems[i], 0, seq)
                req = reqs[i]
                req.Start()
                issued[i] = t = clock()
                if req.Test():  # taken at once: the port is free again
                    finished.append(i)
                else:
                    port = i
                    flight.add(i, req)
                    continue
            elif flight.live:
                try:
                    got = flight.test()
                except MPI.Exception as exc:
                    got = self._truncated(exc, seq, notices, what)
                if got:
                    t = clock()
                    finished.extend(got)
            if pending:
                step = agree.round
                if agree.poll():
                    pending = False
                    agree.verdict(what)  # raises on a mismatch: the call is abandoned
                if (agree.round != step or not pending) and not finished:  # it moved
                    idle_since = clock()
                    continue
            if not finished:
                now = clock()
                if now - idle_since <= spin_ns:
                    rest()
                    continue
                if now > deadline:
                    self._timeout(what, waiting, port, remaining, agree if pending else None)
                notices.check(seq, what)
                if strays is not None and now - idle_since > strays.after:
                    strays.look(seq, what, self.plan, flight.peers())
                sleep(self.poll)
                continue
            idle_since = t
            for k, i in enumerate(finished):
                if sends[i]:
                    if i == port:
                        port = -1
                elif _TOKEN.unpack_from(mems[i]) != token:
                    if self._odd(i, seq, notices, what, finished[k + 1 :]):  # a leftover
                        continue
                elif ranges is not None:
                    b, sl = ranges[i]
                    buffers[b][sl] = payloads[i]
                else:
                    handler.recv_buffer(chunks[i], names[i])[:] = payloads[i]
                    handler.received(chunks[i], names[i])
                done[i] = t
                remaining -= 1
                for j in dependents[i]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        if sends[j]:
                            heappush(due, j)
                            continue
                        if ranges is None:
                            handler.recv_buffer(chunks[j], names[j])
                        reqs[j].Start()
                        flight.add(j, reqs[j], peers[j])
                        issued[j] = t
            finished.clear()

    def _straight(self, handler: DataHandler, seq: int, digest: int, what, agree) -> None:
        """:meth:`run` for a plan whose ops can go one after the other (a rank of a
        one-message tree: its receive, then its sends in program order, or only sends):
        the same rules without the bookkeeping of deps, a send port and a set of requests
        in flight, for the commonest call of all.  A request is asked once right after it
        started (a 1-byte message has often arrived, or was taken, by then): only one that
        is not done yet pays :meth:`_wait`'s loop, its clock reads and its lists."""
        if digest != self.digest:
            self._pack(digest)
        recv, sends = self.straight
        ranges = (
            self.ranges
            if type(handler) is ByteRanges and handler.chunks is self.chunk_table
            else self._bind(handler)
        )
        buffers = handler.buffers if ranges is not None else None
        reqs, mems, payloads, done, issued = (
            self.reqs,
            self.mems,
            self.payloads,
            self.done,
            self.issued,
        )
        clock, _, testsome = self.host
        t = self.entry = clock()
        waited = False  # self.flight was set: reset it at the end
        if recv >= 0:
            req = reqs[recv]
            if ranges is None:
                handler.recv_buffer(self.plan.chunks[recv], "recv")
            req.Start()
            issued[recv] = t
            try:
                got = req.Test()
            except MPI.Exception as exc:  # a cut message: raises unless a leftover
                self.flight, waited = _one(recv, req, testsome), True
                self._truncated(exc, seq, self.notices, what)
                got = True
            if got:
                t = clock()
            else:
                self.flight, waited = _one(recv, req, testsome), True
                t = self._wait(req, recv, 0, seq, what, agree, self.entry + self.timeout_ns)
            while _TOKEN.unpack_from(mems[recv]) != (seq, digest):
                self._odd(recv, seq, self.notices, what)  # a leftover: started again
                self.flight, waited = _one(recv, req, testsome), True
                t = self._wait(req, recv, 0, seq, what, agree, self.entry + self.timeout_ns)
            if ranges is not None:
                b, sl = ranges[recv]
                buffers[b][sl] = payloads[recv]
            else:
                chunk = self.plan.chunks[recv]
                handler.recv_buffer(chunk, "recv")[:] = payloads[recv]
                handler.received(chunk, "recv")
            done[recv] = t
        for k, i in enumerate(sends, start=1 if recv >= 0 else 0):
            if ranges is not None:
                b, sl = ranges[i]
                payloads[i][:] = buffers[b][sl]
            else:
                payloads[i][:] = handler.send_buffer(self.plan.chunks[i])
            _SEQ.pack_into(mems[i], 0, seq)
            req = reqs[i]
            req.Start()
            issued[i] = t = clock()
            if not req.Test():  # not taken at once: the port waits for it
                self.flight, waited = _one(i, req, testsome), True
                t = self._wait(req, i, k, seq, what, agree, self.entry + self.timeout_ns)
            done[i] = t
        if waited:
            self.flight = Inflight()
        if agree is not None and agree.pending:
            if agree.poll():  # often over by now: no _wait frame
                agree.verdict(what)
            else:
                self._wait(None, -1, len(sends), seq, what, agree, self.entry + self.timeout_ns)

    def _wait(self, req, i: int, k: int, seq: int, what, agree, deadline: int) -> int:
        """Wait for op ``i`` (its request ``req``, after ``k`` ops completed; None: for
        the agreement round only), polling the round meanwhile; the time it completed (ns).
        Idle turns, timeout and notices as in :meth:`run`."""
        rest, (clock, sleep, _) = self.rest, self.host
        spin_ns = self.spin_ns if agree is None else agree.spin_ns  # see run()
        idle_since = clock()
        while True:
            if req is not None:  # done as soon as it completed: the round goes on meanwhile
                try:
                    if req.Test():
                        return clock()
                except MPI.Exception as exc:  # a cut message: raises unless a leftover
                    self._truncated(exc, seq, self.notices, what)
                    return clock()
            if agree is not None and agree.pending:
                step = agree.round
                if agree.poll():
                    agree.verdict(what)  # raises on a mismatch
                    if req is None:
                        return 0
                    continue
                if agree.round != step:  # the round moved: look again at once
                    idle_since = clock()
                    continue
            elif req is None:
                return 0
            now = clock()
            if now - idle_since <= spin_ns:
                rest()
                continue
            if now > deadline:  # what it waited for: op i, else the round
                port = i if i >= 0 and self.sends[i] else -1
                n = len(self.sends)
                self._timeout(what, [0] * n, port, n - k if i >= 0 else 0, agree)
            self.notices.check(seq, what)
            if self.strays is not None and now - idle_since > self.strays.after:
                waited = (self.plan.peers[i],) if i >= 0 and not self.sends[i] else ()
                self.strays.look(seq, what, self.plan, waited)
            sleep(self.poll)

    def _timeout(self, what, waiting, port: int, remaining: int, agree) -> None:
        """The call timed out: what it waited for (the data, else the agreement round)."""
        if remaining or agree is None:
            message = timeout_message(
                self.plan,
                what,
                self.timeout,
                self.flight.live.__contains__,
                waiting,
                port,
                len(self.sends) - remaining,
            )
        else:
            message = agree.timeout_message(what, self.timeout)
        if self.on_timeout is not None:
            self.on_timeout(message)
        raise CollectiveTimeoutError(message)

    # -- the rare paths ---------------------------------------------------------------------

    def _odd(self, i: int, seq: int, notices, what, unseen=()) -> bool:
        """Receive ``i`` holds a header of another call or schedule: True for a leftover of
        an abandoned call (dropped: the receive is started again), else raise (``unseen``:
        ops completed with it, not yet looked at: :meth:`abandon` looks at them)."""
        got = _HDR.unpack_from(self.mems[i])[0]
        if got in notices.stale and got < seq:
            self.reqs[i].Start()
            self.flight.add(i, self.reqs[i], self.plan.peers[i])
            return True
        for j in unseen:
            self.flight.add(j, self.reqs[j])
        key = (self.plan.peers[i], self.plan.chunks[i])
        raise refused(self.mems[i], self.payloads[i], key, seq, notices.early, self.comm.rank, what)

    def _truncated(self, exc: MPI.Exception, seq: int, notices, what) -> list[int]:
        """A look failed: a message larger than its receive (its header is there anyway).
        The ops whose requests completed, by asking each (forgotten in :attr:`flight`).  A
        cut message is fine only as a leftover of an abandoned call (dropped when looked
        at); else it is a disagreement on the size, or a message of a later call (kept for
        it)."""
        flight = self.flight
        got = [i for i, r in list(flight.live.items()) if _completed(r)]
        for i in got:
            flight.drop(i)
        for i in got:
            if self.sends[i]:
                continue
            header = _HDR.unpack_from(self.mems[i])
            if header[0] in notices.stale and header[0] < seq:
                continue
            others = [x for x in got if x != i]
            if header[0] > seq:
                self._odd(i, seq, notices, what, others)
            for j in others:
                flight.add(j, self.reqs[j])
            detail = exc.Get_error_string().splitlines()[0]
            raise mismatch(
                self.comm.rank, what, f"a message did not fit its receive (another size; {detail})"
            )
        return got

    def abandon(self, early: dict, seq: int) -> list[tuple[MPI.Request, object]]:
        """After an error: cancel the pending receives (one that completed meanwhile may hold
        a message of the peer's next call: kept in ``early``) and return the pending sends
        with their memory, to be tested later."""
        sends = []
        for i, req in self.flight.live.items():
            if self.sends[i]:
                sends.append((req, self))  # its memory stays with the request in flight
                continue
            if cancelled(req):
                continue
            if _HDR.unpack_from(self.mems[i])[0] > seq:
                entry = kept_entry(self.mems[i], None, self.payloads[i])
                early.setdefault((self.plan.peers[i], self.plan.chunks[i]), []).append(entry)
        self.flight = Inflight()
        return sends
