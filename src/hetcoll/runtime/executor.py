"""Run one rank's part of a :class:`~hetcoll.program.Program`: the engine's core.

:class:`Executor` keeps the state the simulator keeps for one rank and changes it with the
same steps (the rules of :mod:`hetcoll.program`):

- :meth:`Executor.post` — a receive whose deps completed is posted (into the handler's
  memory);
- :meth:`Executor.start_send` — when the rank's one send port is free at ``F``, it takes,
  among its sends whose deps completed by ``F``, the first in program order; if there is
  none, the first to become startable (ties: program order).  Once taken the send owns the
  port until it completes, or, emulating a model of concurrent sends (``nic``), until
  ``send_busy`` after its start, as in the simulator: later sends start while it flows;
- :meth:`Executor.arrive` — a message is here: it completes (is *released*) when the timing
  strategy says;
- :meth:`Executor.complete` — an op completed at ``t``: its dependents' ready times rise to
  ``t`` and those with no deps left are enabled.

Two things are pluggable.  The *transport* moves bytes (:class:`Transport`: MPI in
:mod:`.transport`, an in-memory world in the tests).  The *timing* says what the times are:
:class:`NativeTiming` reads the real clock (a send holds the port until the network has
taken it, a receive completes when the data is here); ``EmulatedTiming``
(:mod:`.emulation`) computes modelled times from a platform's cost model and waits for them.
With a deterministic transport the emulated times equal the simulator's on the same
program; :mod:`.emulation` says exactly where they do not.

The executor never blocks: :meth:`Executor.step` does what can be done now,
:meth:`Executor.run` loops over it with a deadline.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Protocol

from ..errors import CollectiveTimeoutError
from ..program import SendQueue
from .rank_ops import (
    KIND_NAMES,
    RECV_REDUCE,
    SEND,
    ByteRanges,
    Combines,
    DataHandler,
    RankPlan,
    Trace,
    rank_plan,
    timeout_message,
)

__all__ = [
    "ByteRanges",
    "DataHandler",
    "Executor",
    "NativeTiming",
    "RankPlan",
    "Trace",
    "Transport",
    "rank_plan",
]

_NS = 1_000_000_000
_PORT, _RELEASE, _COMBINE, _FLOW = 0, 1, 2, 3  # timer kinds


class Transport(Protocol):
    """What the executor needs from the network, for one rank and one call.

    ``recv``/``send`` start a transfer of op ``i``; :meth:`poll` returns the ops whose
    transfers completed since the last call, as ``(op, start, sent)``: for a receive the
    sender's stamp (its modelled start and real issue time, ns; 0 when not emulating).
    """

    def recv(self, i: int, peer: int, chunk: int, buf: memoryview) -> None: ...

    def send(
        self, i: int, peer: int, chunk: int, buf: memoryview, start: int, sent: int
    ) -> None: ...

    def poll(self) -> list[tuple[int, int, int]]: ...

    # Rendezvous under emulation (only for programs with receives posted late):
    def expect(self, i: int, peer: int, chunk: int) -> None: ...

    def clear(self, peer: int, chunk: int, posted: int, earliest: int) -> None: ...

    def cleared(self) -> list[tuple[int, int, int]]: ...

    def settle(self) -> None: ...

    def idle(self, seconds: float) -> None: ...


class NativeTiming:
    """Real times: a send holds the port until the transport has taken it, a receive
    completes when its data is here (the executor needs nothing else from this strategy
    than its clock and how to idle; ``EmulatedTiming`` also says when a send starts and
    holds the port and when a message is released).  An idle rank polls for ``spin``
    seconds, then sleeps ``poll`` seconds between looks."""

    emulated = False

    def __init__(
        self, spin: float = 20e-6, poll: float = 20e-6, clock: Callable[[], int] | None = None
    ):
        self.now = clock or time.monotonic_ns
        self.spin_ns = int(spin * _NS)
        self.poll = poll
        self.late = 0

    def posted(self, i: int, peer: int, nbytes: int, ready: int) -> int:
        return ready

    def idle(self, transport: Transport, now: int, idle_since: int, wake: int | None) -> None:
        # Look again at once, through a zero sleep (a system call that lets a peer sharing
        # the core run, unlike a busy loop, and does not queue the rank behind every busy
        # process of the host, unlike sched_yield); after ``spin`` seconds, sleep ``poll``.
        # While a large message is in flight, never sleep longer: MPI moves it only while
        # its ends look (a rendezvous), and a sleep lasts far longer than asked on a busy host.
        quick = now - idle_since <= self.spin_ns or getattr(transport, "large", None)
        transport.idle(0.0 if quick else self.poll)


class Executor:
    """One rank's part of a program, run with a transport and a timing strategy.

    Parameters
    ----------
    plan : RankPlan
    handler : DataHandler
    transport : Transport
    timing : NativeTiming or EmulatedTiming
    start_at : int, optional
        Post the receives, then wait until the clock reads ``start_at`` (ns) before anything
        else: ranks that agreed on a start time begin the collective together.
    """

    def __init__(
        self,
        plan: RankPlan,
        handler: DataHandler,
        transport: Transport,
        timing,
        *,
        start_at: int | None = None,
    ) -> None:
        self.plan, self.handler, self.transport, self.timing = plan, handler, transport, timing
        self.emulated = timing.emulated
        self.concurrent = self.emulated and timing.concurrent  # a send frees the port early
        self.finish_at: dict[int, int] = {}  # concurrent: when each send in flight completes
        n = len(plan)
        now = timing.now()
        late = 0
        if start_at is not None:
            late = max(now - start_at, 0)  # woke after the agreed start: everything shifts
            now = max(now, start_at)
        self.trace = Trace(now, [0] * n, [0] * n, [0] * n, [0] * n, late=late)
        self.waiting = list(plan.ndeps)
        self.ready = [now] * n  # when the op's deps completed
        self.posted = [now] * n  # when a receive was posted
        self.remaining = n
        self.parts = [0] * n  # transfers (and port timer) still outstanding per op
        self.sends = SendQueue()  # enabled sends; native: all in ``due`` (ready now)
        self.timers: list[tuple[int, int, int]] = []  # (time, kind, op)
        self.port_op = -1  # the send holding the port, -1: free
        self.port_free = now  # when the port was last released
        self.hold_until = now  # emulation: when the send holding the port releases it
        # Rendezvous (emulation): a send whose receive is posted late also waits for the
        # receiver's clear-to-send, which counts as one more dep (completed at the posting
        # time) and says how early the transfer may start (``allow``).
        self.allow: dict[int, int] = {}
        self.clearing = 0  # clear-to-sends still awaited
        self.combines = Combines(plan.kinds, now)  # rule 5 of hetcoll.program
        self.rendezvous = self.emulated and any(plan.late)
        if self.rendezvous:
            for i in range(n):
                if plan.late[i] and plan.kinds[i] == SEND:
                    self.waiting[i] += 1
                    self.clearing += 1
                    transport.expect(i, plan.peers[i], plan.chunks[i])
                    timing.expect(i, plan.peers[i], plan.nbytes[i])
        for i in plan.roots:
            if self.waiting[i] == 0:
                self.enable(i)
        if start_at is not None and (self.sends.pending or self.sends.due):
            # Only a rank with something to send at once wakes at the start: a crowd of ranks
            # waking together on an oversubscribed host would delay the ones that matter.
            t = timing.now()
            if start_at > t:
                time.sleep((start_at - t) / _NS)

    # -- the simulator's steps ------------------------------------------------------------------

    def enable(self, i: int) -> None:
        """Op ``i``'s deps have all completed."""
        if self.plan.kinds[i] != SEND:
            self.post(i)
        elif self.emulated:
            self.sends.add(self.ready[i], i)
        else:  # real time: an enabled send is ready by the time the port is free
            heapq.heappush(self.sends.due, i)

    def post(self, i: int) -> None:
        """Post receive ``i`` (it counts as posted when its deps completed)."""
        plan = self.plan
        self.posted[i] = self.timing.posted(i, plan.peers[i], plan.nbytes[i], self.ready[i])
        buf = self.handler.recv_buffer(plan.chunks[i], KIND_NAMES[plan.kinds[i]])
        self.parts[i] = 1
        self.transport.recv(i, plan.peers[i], plan.chunks[i], buf)
        self.trace.issued[i] = self.timing.now()
        if self.rendezvous and plan.late[i]:
            peer = plan.peers[i]
            earliest = self.timing.clear(peer, plan.nbytes[i], self.posted[i], self.port_free)
            self.transport.clear(peer, plan.chunks[i], self.posted[i], earliest)

    def choose(self) -> int:
        """The send the free port takes (the send rule, :class:`~hetcoll.program.SendQueue`):
        among the sends ready by the time the port was freed, the first in program order;
        else the first to be ready."""
        i = self.sends.take(self.port_free)
        return self.sends.first()[1] if i is None else i

    def start_send(self) -> bool:
        """If the port is free and a send is enabled, start the one the rule picks."""
        if self.port_op >= 0 or not (self.sends.pending or self.sends.due):
            return False
        timing, plan = self.timing, self.plan
        now = timing.now()
        if self.emulated:
            i = self.choose()
            peer, nbytes = plan.peers[i], plan.nbytes[i]
            start = max(timing.start(self.port_free, self.ready[i], now), self.allow.pop(i, 0))
            self.hold_until = timing.hold(peer, nbytes, start)  # the port is busy until then
            heapq.heappush(self.timers, (self.hold_until, _PORT, i))
            self.parts[i], stamp = 2, start
            if self.concurrent:  # the port timer frees the port; the flow's end completes
                self.finish_at[i], stamp = timing.flow(peer, nbytes, start)
                heapq.heappush(self.timers, (self.finish_at[i], _FLOW, i))
        else:
            i = heapq.heappop(self.sends.due)  # all ready now: the first in program order
            peer, nbytes = plan.peers[i], plan.nbytes[i]
            start = stamp = self.port_free = now
            self.parts[i] = 1
        self.port_op = i
        self.transport.send(
            i, peer, plan.chunks[i], self.handler.send_buffer(plan.chunks[i]), stamp, now
        )
        self.trace.issued[i], self.trace.started[i] = now, start
        return True

    def sent(self, i: int, t: int) -> None:
        """One part of send ``i`` is over (the transport took it, or its port or flow time)."""
        self.parts[i] -= 1
        if self.parts[i] == 0:
            if self.concurrent:  # the port was freed send_busy after the start
                self.complete(i, self.finish_at.pop(i))
                return
            if self.emulated:
                # Free at the modelled time even when this rank saw the send complete later:
                # a late look must not shift every later send of the rank.  Real lateness
                # counts where it delays data (a receiver releases no earlier than arrival).
                t = self.hold_until
            self.port_op, self.port_free = -1, t
            self.complete(i, t)

    def arrive(self, i: int, stamp: tuple[int, int], t: int) -> None:
        """Receive ``i``'s data is here (seen at ``t``): release it when the timing says."""
        if not self.emulated:
            self.receive(i, t)
            return
        plan = self.plan
        self.timing.arrived(i)
        release, self.port_free = self.timing.release(
            plan.peers[i], plan.nbytes[i], stamp, self.posted[i], t, self.port_free
        )
        heapq.heappush(self.timers, (release, _RELEASE, i))

    def receive(self, i: int, t: int) -> None:
        self.parts[i] = 0
        plan = self.plan
        if plan.kinds[i] != RECV_REDUCE:
            self.handler.received(plan.chunks[i], KIND_NAMES[plan.kinds[i]])
            self.complete(i, t)
            return
        for h, a in self.combines.arrived(i, t):  # rule 5: in program order, one at a time
            self.handler.received(plan.chunks[h], "recv_reduce")
            if not self.emulated:
                self.complete(h, max(a, self.timing.now()))
                continue
            cost = self.timing.combine(plan.nbytes[h]) if plan.reduces else 0
            end = self.combines.free = max(a, self.combines.free) + cost
            if end > a:  # the rank is busy combining until then
                heapq.heappush(self.timers, (end, _COMBINE, h))
            else:
                self.complete(h, end)

    def complete(self, i: int, t: int) -> None:
        """Op ``i`` completed at ``t``: its dependents' deps are one fewer."""
        self.trace.done[i] = t
        self.trace.observed[i] = self.timing.now()
        self.remaining -= 1
        for j in self.plan.dependents[i]:
            self.met(j, t)

    def met(self, j: int, t: int) -> None:
        """One of op ``j``'s deps (or its clear-to-send) was met at ``t``."""
        if t > self.ready[j]:
            self.ready[j] = t
        self.waiting[j] -= 1
        if self.waiting[j] == 0:
            self.enable(j)

    def clear(self, i: int, posted: int, earliest: int) -> None:
        """Send ``i``'s receive was posted at ``posted`` and lets it start at ``earliest``."""
        self.clearing -= 1
        self.timing.arrived(i)
        self.allow[i] = earliest
        self.met(i, posted)

    # -- driving it -------------------------------------------------------------------------------

    def step(self) -> bool:
        """Do everything that can be done now; whether anything was."""
        sends = self.sends
        progress = self.port_op < 0 and (sends.pending or sends.due) and self.start_send()
        if self.clearing:
            for i, posted, earliest in self.transport.cleared():
                progress = True
                self.clear(i, posted, earliest)
        got = self.transport.poll()
        if got:
            progress = True
            kinds = self.plan.kinds
            now = self.timing.now()
            for i, start, sent_at in got:
                if kinds[i] == SEND:
                    self.sent(i, now)
                else:
                    self.arrive(i, (start, sent_at), now)
        timers = self.timers
        if timers:
            now = self.timing.now()
            while timers and timers[0][0] <= now:
                t, kind, i = heapq.heappop(timers)
                progress = True
                if kind == _PORT and self.concurrent:  # send_busy is over, i flows on
                    self.port_op, self.port_free = -1, t
                elif kind in (_PORT, _FLOW):
                    self.sent(i, t)
                elif kind == _RELEASE:
                    self.receive(i, t)
                else:
                    self.complete(i, t)
        return progress

    def wake(self) -> int | None:
        """The next time a timer is due (None: none is)."""
        return self.timers[0][0] if self.timers else None

    def run(self, deadline: int, on_timeout: Callable[[str], None] | None, what: str) -> Trace:
        """Step until every op has completed; past ``deadline`` (ns on the timing's clock)
        raise :class:`~hetcoll.errors.CollectiveTimeoutError` naming what is pending."""
        timing = self.timing
        idle_since = timing.now()
        while self.remaining:
            if self.step():
                idle_since = timing.now()
                continue
            now = timing.now()
            if now > deadline:
                message = self.timeout_message(what, (deadline - self.trace.entry) / _NS)
                if on_timeout is not None:
                    on_timeout(message)
                raise CollectiveTimeoutError(message)
            timing.idle(self.transport, now, idle_since, self.wake())
        self.finish()
        return self.trace

    def finish(self) -> None:
        trace, kinds = self.trace, self.plan.kinds
        got = [trace.observed[i] for i in range(len(kinds)) if kinds[i] != SEND]
        trace.received = max(got, default=trace.entry)
        trace.late += self.timing.late
        if self.rendezvous:
            self.transport.settle()

    def timeout_message(self, what: str, timeout: float) -> str:
        parts = self.parts
        return timeout_message(
            self.plan,
            what,
            timeout,
            lambda i: parts[i] > 0,
            self.waiting,
            self.port_op,
            len(self.plan) - self.remaining,
        )
