"""The native path of large chunks: a rank's plan with chunks over PACK, run in one loop.

:class:`~.executor.Executor` is the engine's reference (any timing, any transport) and
:class:`~.fast.FastRun` its loop for plans of small messages.  :class:`SegmentRun` is the
loop for the others — native timing, headers on, some chunk larger than
:data:`~.transport.PACK` (a pipelined broadcast's segments) — with the same rules: deps,
receives posted when their deps completed, one send port taking the first ready send in
program order and holding it until MPI has taken the send (the send rule of
:mod:`hetcoll.program`).

The wire is the transport's (:mod:`.transport`), so a rank on this path and one on the
executor's talk to each other: a large chunk goes *bare* (:class:`~.transport.Bare`), sent
from and received into the user's buffer with no header and no copy, on its call's epoch
tag; one call header per call and peer (a persistent request made once per schedule)
checks the call, and a bare chunk counts only once its sender's header is checked.  Small
chunks share a persistent message with their header, as on the fast path.  A chunk costs
one ``Issend`` or ``Irecv`` and a few list operations: no per-chunk header message, no
per-chunk copy.  The rare cases are the transport's rules: a call header of an abandoned
call is a leftover (dropped, the receive started again), one of a later call is kept for
that call and this call is abandoned, anything else — another schedule, a message that
does not fit — is a :class:`~hetcoll.errors.MismatchError`; an abandoned call's bare
sends that nobody received are drained (:meth:`~.transport.Bare.leftover`).
"""

from __future__ import annotations

import heapq
import os
import time
from threading import get_ident

from mpi4py import MPI

from ..errors import CollectiveTimeoutError
from ..knobs import usable_cores
from .clocks import NATIVE
from .fast import _NS, _SEQ, _TOKEN, FastRun, Rest
from .inflight import Inflight
from .rank_ops import KIND_NAMES, SEND, ByteRanges, DataHandler, RankPlan, Trace, timeout_message
from .transport import (
    _HDR,
    CALL_KEY,
    CALL_TAG,
    HEADER,
    PACK,
    Bare,
    cancelled,
    data_tag,
    kept_entry,
    mismatch,
    refused,
    release,
)

__all__ = ["PACE", "Pace", "SegmentRun", "compile_run", "paced"]

_NOTICES_EVERY = 8  # idle turns between looks at the deadline and the notices


class Pace:
    """How an idle rank of a pipelined call looks again by default: at once (a yield)
    while nobody else wants its core, else through zero sleeps.

    A large chunk moves only while both its ends look (docs/runtime.md, Waiting), so the
    sooner an idle rank looks again the better, as long as it does not keep the core from
    a process with work.  ``sched_yield`` returns in about a microsecond when nobody else
    wants the core; when another process does, the scheduler charges the rank for the
    turns it spins, and sooner or later a yield hands the core away for whole slices,
    whereas a zero sleep is woken, and preempts the others, after the timer slack (60-90 µs
    on Linux) and costs the rank no turn.  The time a yield takes does not show it in
    time (it returns at once while the rank still has turns in hand), but the kernel's
    count of the time this thread waited for a core while it could run (``run_delay``,
    Linux's ``/proc/thread-self/schedstat``) does: about 0 where the rank has a core to
    itself, a third to two thirds of the time on a host with more running processes than
    cores.  So every ``every`` ns the rank compares that wait with the time passed (a
    period): while yielding, a wait over ``1/often`` of it (another process wants the
    core) makes the rank nap until ``span`` clear periods in a row have passed, and
    doubles ``span`` (up to ``most``: the cost of finding out again that the host is busy,
    a period of yields, is paid ever more rarely); each clear period of yields halves it
    (down to ``first``).  A new rank naps until ``first`` clear periods in a row; without
    the count (not Linux) it always naps; a period measured across two threads (the
    wrapper's progress thread runs calls too) starts again.  The state is the
    process's (one :data:`PACE` for every pipelined call of the rank).  ``clock``,
    ``give``, ``sleep`` and ``waited`` (the thread's ``run_delay`` in ns, or None) are the
    machine's (a virtual one in the tests)."""

    __slots__ = (
        "clear",
        "clock",
        "every",
        "first",
        "give",
        "mark",
        "most",
        "need",
        "often",
        "periods",
        "since",
        "sleep",
        "span",
        "waited",
        "who",
        "yielding",
    )

    def __init__(
        self,
        *,
        every: int = 2_000_000,
        often: int = 8,
        first: int = 4,
        most: int = 512,
        clock=time.monotonic_ns,
        give=os.sched_yield,
        sleep=time.sleep,
        waited=None,
    ) -> None:
        self.every, self.often, self.first, self.most = every, often, first, max(most, first)
        self.clock, self.give, self.sleep = clock, give, sleep
        self.waited = run_delay if waited is None else waited
        self.yielding = False  # napping until periods show a core to spare
        self.clear = 0  # clear periods in a row while napping
        self.need = self.span = first  # clear periods in a row to yield again; the next
        self.mark = clock()  # the period began (ns)
        self.since = self.waited()  # the wait for a core when it began (ns), or None
        self.who = get_ident()  # the thread it counts (a progress thread runs calls too)
        self.periods = [0, 0]  # periods judged napping, yielding (benchmarks print them)

    def __call__(self) -> None:
        t = self.clock()
        if t - self.mark >= self.every:
            self.judge(t)
        if self.yielding:
            self.give()
        else:
            self.sleep(0)

    def judge(self, t: int) -> None:
        """The period that began at ``self.mark`` ended at ``t``: yield or nap next."""
        waited, who = self.waited(), get_ident()
        if waited is None or self.since is None or who != self.who:  # another thread's
            self.mark, self.since, self.who = t, waited, who
            return
        busy = (waited - self.since) * self.often > t - self.mark
        self.mark, self.since = t, waited
        self.periods[self.yielding] += 1
        if self.yielding:
            if busy:  # another process wants the core: nap, longer if it was at once
                self.yielding, self.need, self.clear = False, self.span, 0
                self.span = min(2 * self.span, self.most)
            else:
                self.span = max(self.span // 2, self.first)
        else:
            self.clear = 0 if busy else self.clear + 1
            self.yielding = self.clear >= self.need


def run_delay() -> int | None:
    """Nanoseconds the calling thread has waited for a core while it could run (Linux's
    ``/proc/thread-self/schedstat``), or None where the kernel does not say."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return int(os.read(fd, 128).split()[1])
    except (OSError, IndexError, ValueError):
        return None
    finally:
        os.close(fd)


#: the rank's pace (one per process: what its waits show holds for every call)
PACE = Pace()


def paced(host, ranks_on_host: int, cores: int) -> bool:
    """Whether a native loop's idle ranks look again through :data:`PACE` by default: on
    this machine (not a virtual host), with at most one of the communicator's ranks per
    usable core of this host (``cores``, :func:`hetcoll.knobs.usable_cores`).

    >>> paced(NATIVE, 2, 2), paced(NATIVE, 4, 2)
    (True, False)
    """
    return host is NATIVE and ranks_on_host <= cores


class SegmentRun:
    """One rank's part of a schedule with large chunks, compiled for the native path (see
    the module docstring); ``None`` from :meth:`compile` when the plan is not for it."""

    def __init__(self, comm: MPI.Comm, plan: RankPlan, owner) -> None:
        self.plan, self.comm, self.bare = plan, comm, Bare.create(comm)
        self.notices, self.timeout, self.host = owner.notices, owner.timeout, owner.host
        # How an idle rank looks again (docs/runtime.md, Waiting, and Native speed).  A
        # large chunk's rendezvous moves only while both ends look: each step (the
        # receiver takes the chunk, then the sender learns it) waits for a look of an idle
        # rank, and a nap costs 60-90 us.  By default, when each of the communicator's
        # ranks on this host has a core, through the process's Pace (a yield while yields
        # prove faster than naps, else zero sleeps for a while); with more ranks than
        # cores, zero sleeps (a rank that yields fast still takes turns from the peer
        # sharing its core, which no yield's time shows).  When the wrapper's ``spin`` was
        # asked for, at once through a Rest of its own (a yield, or a zero sleep while
        # yields prove slow) for ``spin`` since its last completion, then through zero
        # sleeps (``spin=0``: zero sleeps only).  On a virtual host (the tests') its zero
        # sleeps, as with ``spin=0``.
        if owner.spin_given:
            self.rest, self.spin_ns = Rest(), int(owner.spin * _NS)
        elif paced(self.host, owner.ranks_on_host, usable_cores()):
            self.rest, self.spin_ns = PACE, 1 << 62
        else:
            self.rest, self.spin_ns = None, 0
        self.strays = owner.strays  # a look at strays after a long wait (strays.py)
        self.on_timeout = owner._timed_out if owner.on_timeout == "abort" else None
        n = len(plan)
        self.sends = tuple(k == SEND for k in plan.kinds)
        self.large = tuple(b > PACK for b in plan.nbytes)
        self.names = tuple(KIND_NAMES[k] for k in plan.kinds)
        # small chunks: a persistent message, header and chunk (as in fast.py)
        self.mems: list[bytearray | None] = [None] * n
        self.payloads: list[memoryview | None] = [None] * n
        self.reqs: list[MPI.Prequest | None] = [None] * n
        for i in range(n):
            if not self.large[i]:
                mem = self.mems[i] = bytearray(HEADER + plan.nbytes[i])
                self.payloads[i] = memoryview(mem)[HEADER:]
                init = comm.Send_init if self.sends[i] else comm.Recv_init
                self.reqs[i] = init(mem, plan.peers[i], data_tag(plan.chunks[i]))
        # call headers: one per peer and direction of bare chunks
        self.calls: dict[tuple[bool, int], tuple[bytearray, MPI.Prequest]] = {}
        for i in range(n):
            key = (self.sends[i], plan.peers[i])
            if self.large[i] and key not in self.calls:
                mem = bytearray(HEADER)
                init = comm.Send_init if key[0] else comm.Recv_init
                self.calls[key] = (mem, init(mem, key[1], CALL_TAG))
        self.heard_from = tuple(p for s, p in self.calls if not s)
        self.digest: int | None = None
        self.ranges: tuple | None = None
        self.chunk_table = None
        self.entry = 0
        self.done = [0] * n
        self.issued = [0] * n
        # the last call's requests in flight, for abandon(); by op (-2 - peer: a call
        # header from peer); inflight.py: a look costs O(1) in the number of them
        self.flight = Inflight()
        self.seq = 0
        self.issends: dict[int, tuple[MPI.Request, int]] = {}  # bare send op -> (request, tag)
        self.announcing: list[MPI.Prequest] = []  # call headers sent by the last call

    @classmethod
    def compile(cls, comm: MPI.Comm, plan: RankPlan, owner) -> SegmentRun | None:
        """The path of ``plan`` for the wrapper ``owner`` (a ``ScheduleComm``): None unless
        some chunk is larger than PACK and every large chunk can go bare."""
        bare = Bare.create(comm)
        large = [(n, c) for n, c in zip(plan.nbytes, plan.chunks, strict=True) if n > PACK]
        if bare is None or not large or not all(bare.usable(n, c) for n, c in large):
            return None
        return cls(comm, plan, owner)

    def free(self, keep: set[int] = frozenset()) -> None:
        """Free the persistent requests (except those in ``keep``, by id: in flight)."""
        reqs = [(r, not s) for r, s in zip(self.reqs, self.sends, strict=False) if r is not None]
        reqs += [(r, not send) for (send, _), (_, r) in self.calls.items()]
        for req, receive in reqs:
            if id(req) not in keep:
                release(req, receive)
        self.reqs, self.calls = [], {}

    def trace(self) -> Trace:
        """The :class:`~.plan.Trace` of the last call (real times)."""
        return Trace.native(self.entry, self.done, self.issued, self.sends)

    def _bind(self, handler: DataHandler, digest: int) -> tuple | None:
        """Pack ``digest`` into the headers this rank sends (once per digest); per op
        ``(buffer, slice)`` when ``handler`` moves byte ranges (None: ask the handler)."""
        if digest != self.digest:
            for i, mem in enumerate(self.mems):
                if self.sends[i] and mem is not None:
                    _HDR.pack_into(mem, 0, 0, digest, 0, 0, len(mem) - HEADER)
            for (send, _), (mem, _) in self.calls.items():
                if send:
                    _HDR.pack_into(mem, 0, 0, digest, 0, 0, 0)
            self.digest = digest
        if type(handler) is not ByteRanges:
            return None
        if handler.chunks is not self.chunk_table:
            self.ranges = handler.op_ranges(self.plan.chunks)
            self.chunk_table = handler.chunks
        return self.ranges

    def run(self, handler: DataHandler, seq: int, digest: int, what, agree=None) -> None:
        """Run call ``seq`` of the plan (``digest``: the call's).  ``agree`` is always None
        here: with ``check="always"`` the wrapper finishes the agreement round before a
        call of large chunks moves any data (as :class:`~.fast.FastRun`'s signature)."""
        plan, bare, comm, notices = self.plan, self.bare, self.comm, self.notices
        bare.begin()
        self.seq = seq
        sends, large, mems, payloads, reqs = (
            self.sends,
            self.large,
            self.mems,
            self.payloads,
            self.reqs,
        )
        chunks, peers, dependents, names = plan.chunks, plan.peers, plan.dependents, self.names
        ranges = self._bind(handler, digest)
        buffers = handler.buffers if ranges is not None else None
        token = (seq, digest)
        tag0, epochs = bare.base + seq % bare.epochs, bare.epochs
        done, issued = self.done, self.issued
        waiting = list(plan.ndeps)
        due: list[int] = []  # enabled sends, program order
        sleep, clock, testsome = self.host.sleep, self.host.clock, self.host.testsome
        self.flight = flight = Inflight(testsome)
        self.issends = issends = {}
        self.announcing = announcing = []
        heard = dict.fromkeys(self.heard_from, False)  # peer -> its call header checked
        held: dict[int, list[int]] = {}  # peer -> bare receives in before its header
        announced: set[int] = set()
        calls = self.calls
        now = self.entry = clock()
        for p in heard:
            req = calls[(False, p)][1]
            req.Start()
            flight.add(-2 - p, req, p)

        def enable(j: int, t: int) -> None:
            if sends[j]:
                heapq.heappush(due, j)
                return
            issued[j] = t
            if large[j]:
                if ranges is None:
                    buf = handler.recv_buffer(chunks[j], names[j])
                else:
                    b, sl = ranges[j]
                    buf = buffers[b][sl]
                req = comm.Irecv([buf, MPI.BYTE], peers[j], tag0 + epochs * chunks[j])
            else:
                if ranges is None:  # the handler learns the receive is posted
                    handler.recv_buffer(chunks[j], names[j])
                req = reqs[j]
                req.Start()
            flight.add(j, req, peers[j])

        for i in plan.roots:
            enable(i, now)
        remaining, port = len(sends), -1
        deadline = now + int(self.timeout * _NS)
        turns, last = 0, now  # idle turns; the last completion (ns)
        rest, look = self.rest, self.spin_ns
        heappush, heappop = heapq.heappush, heapq.heappop
        while remaining:
            if port < 0 and due:
                port = i = heappop(due)
                peer = peers[i]
                if ranges is not None:
                    b, sl = ranges[i]
                    buf = buffers[b][sl]
                else:
                    buf = handler.send_buffer(chunks[i])
                if large[i]:
                    if peer not in announced:
                        announced.add(peer)
                        mem, req = calls[(True, peer)]
                        _SEQ.pack_into(mem, 0, seq)
                        req.Start()
                        announcing.append(req)
                    tag = tag0 + epochs * chunks[i]
                    req = comm.Issend([buf, MPI.BYTE], peer, tag)
                    issends[i] = (req, tag)
                else:
                    payloads[i][:] = buf
                    _SEQ.pack_into(mems[i], 0, seq)
                    req = reqs[i]
                    req.Start()
                flight.add(i, req)
                issued[i] = clock()
            try:
                finished = flight.test()
            except MPI.Exception as exc:
                finished = self._truncated(exc, token, what)
            if not finished:
                turns += 1
                t = clock()
                if turns % _NOTICES_EVERY == 0:
                    if t > deadline:
                        self._expire(what, waiting, port, len(sends) - remaining)
                    notices.check(seq, what)
                    if self.strays is not None and t - last > self.strays.after:
                        self.strays.look(seq, what, plan, flight.peers())
                # MPI moves a large chunk only while its ends look: look again soon, and
                # let a peer sharing the core run meanwhile (docs/runtime.md, Waiting)
                if t - last < look:
                    rest()
                else:
                    sleep(0)
                continue
            t = last = clock()
            ready: list[int] = []
            for k, i in enumerate(finished):
                if i < 0:  # a call header from peer -2 - i
                    p = -2 - i
                    if self._header(p, token, what, finished[k + 1 :]):
                        heard[p] = True
                        ready += held.pop(p, ())
                    continue
                if sends[i]:
                    port = -1
                elif large[i]:
                    if not heard[peers[i]]:
                        held.setdefault(peers[i], []).append(i)
                        continue
                elif _TOKEN.unpack_from(mems[i]) != token:
                    if self._odd(i, token, what, finished[k + 1 :]):  # a leftover
                        continue
                elif ranges is not None:
                    b, sl = ranges[i]
                    buffers[b][sl] = payloads[i]
                else:
                    handler.recv_buffer(chunks[i], names[i])[:] = payloads[i]
                ready.append(i)
            for i in ready:
                if ranges is None and not sends[i]:
                    handler.received(chunks[i], names[i])
                done[i] = t
                remaining -= 1
                for j in dependents[i]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        if sends[j]:
                            heappush(due, j)
                        else:
                            enable(j, t)
        for req in announcing:  # eager and received by now: complete them
            req.Wait()
        announcing.clear()
        issends.clear()

    # -- the rare paths ---------------------------------------------------------------------

    def _expire(self, what, waiting: list[int], port: int, completed: int) -> None:
        """The deadline passed: report what is pending (abort, or raise)."""
        pending = self.flight.live.__contains__
        message = timeout_message(self.plan, what, self.timeout, pending, waiting, port, completed)
        if self.on_timeout is not None:
            self.on_timeout(message)
        raise CollectiveTimeoutError(message)

    def _header(self, peer: int, token: tuple[int, int], what, unseen=()) -> bool:
        """``peer``'s call header is in: True when it is this call's; a leftover of an
        abandoned call is dropped (the receive started again: False); else raise."""
        mem, req = self.calls[(False, peer)]
        got, digest, *_ = _HDR.unpack_from(mem)
        if (got, digest) == token:
            return True
        if got in self.notices.stale and got < token[0]:
            req.Start()
            self.flight.add(-2 - peer, req, peer)
            return False
        self._unseen(unseen)
        early, rank = self.notices.early, self.comm.rank
        raise refused(mem, None, (peer, CALL_KEY), token[0], early, rank, what)

    def _odd(self, i: int, token: tuple[int, int], what, unseen=()) -> bool:
        """Small receive ``i`` holds a header of another call or schedule: True for a
        leftover of an abandoned call (dropped, the receive started again), else raise."""
        got = _HDR.unpack_from(self.mems[i])[0]
        if got in self.notices.stale and got < token[0]:
            self.reqs[i].Start()
            self.flight.add(i, self.reqs[i], self.plan.peers[i])
            return True
        self._unseen(unseen)
        key, early = (self.plan.peers[i], self.plan.chunks[i]), self.notices.early
        raise refused(self.mems[i], self.payloads[i], key, token[0], early, self.comm.rank, what)

    def _unseen(self, ops) -> None:
        """Ops completed but not looked at before an error: :meth:`abandon` looks at them
        (their requests are complete: cancelling them finds their messages)."""
        for i in ops:
            if i < 0:
                self.flight.add(i, self.calls[(False, -2 - i)][1], -2 - i)
            elif not self.large[i]:
                self.flight.add(i, self.reqs[i])

    def _truncated(self, exc: MPI.Exception, token: tuple[int, int], what) -> list[int]:
        """A look failed: a message larger than its receive.  The ops whose requests
        completed, by asking each (forgotten in :attr:`flight`); a cut small message is
        fine only as a leftover of an abandoned call (dropped when looked at), anything
        else is a disagreement on the size."""
        flight = self.flight
        got, cut = [], []
        for i, req in list(flight.live.items()):
            try:
                if req.Test():
                    got.append(i)
            except MPI.Exception:
                got.append(i)
                cut.append(i)
        for i in got:
            flight.drop(i)
        for i in cut:
            small = i >= 0 and not self.large[i]  # (a call header is never cut)
            seq = _HDR.unpack_from(self.mems[i])[0] if small else token[0]
            if seq in self.notices.stale and seq < token[0]:
                continue  # a leftover: dropped when looked at
            others = [x for x in got if x != i]
            if small and seq > token[0]:
                self._odd(i, token, what, others)
            self._unseen(others)
            detail = exc.Get_error_string().splitlines()[0]
            raise mismatch(
                self.comm.rank, what, f"a message did not fit its receive (another size; {detail})"
            )
        return got

    def abandon(self, early: dict, seq: int) -> list[tuple[MPI.Request, object]]:
        """After an error: cancel the pending receives (a call header or small message that
        completed meanwhile may be of the peer's next call: kept in ``early``) and return
        the pending sends with their memory, to be tested later, and the drain notices of
        bare sends nobody received."""
        sends: list[tuple[MPI.Request, object]] = [(r, self) for r in self.announcing]
        plan = self.plan
        for i, req in self.flight.live.items():
            if i >= 0 and self.sends[i]:
                sends.append((req, self))
                if i in self.issends:  # not received: its receiver drains it
                    tag = self.issends[i][1]
                    sends.append(self.bare.leftover(plan.peers[i], seq, tag, plan.nbytes[i]))
                continue
            if cancelled(req) or (i >= 0 and self.large[i]):
                continue
            mem = self.calls[(False, -2 - i)][0] if i < 0 else self.mems[i]
            if _HDR.unpack_from(mem)[0] > seq:
                key = (-2 - i, CALL_KEY) if i < 0 else (plan.peers[i], plan.chunks[i])
                payload = None if i < 0 else self.payloads[i]
                early.setdefault(key, []).append(kept_entry(mem, None, payload))
        self.flight, self.announcing = Inflight(), []
        return sends


def compile_run(comm: MPI.Comm, plan: RankPlan, owner) -> FastRun | SegmentRun | None:
    """The native loop of ``plan`` (:class:`~.fast.FastRun` for small messages, else
    :class:`SegmentRun`); None: the executor runs it (also a plan whose combines may
    arrive out of program order: :attr:`~.rank_ops.RankPlan.reorders`)."""
    if plan.reorders:
        return None
    return FastRun.compile(comm, plan, owner) or SegmentRun.compile(comm, plan, owner)
