"""Emulated heterogeneity: make a homogeneous machine behave like a platform file.

With emulation on, the executor runs every transfer of a schedule under the platform's cost
model (the same :class:`~hetcoll.models.BoundModel` the simulator uses):

- the **sender is held**: its send port stays busy ``send_busy(u, v, n)`` after the transfer
  starts, so its next send of the schedule cannot begin earlier (and the collective call
  does not return earlier); under a model of concurrent sends (below) only that long, the
  send itself going on;
- the **message is released** to the receiver no earlier than its modelled arrival
  ``start + delay(u, v, n)``, and never before it has really arrived;
- with a model that has a receive port (``recv_busy > 0``), receptions are serialised on it;
  a unidirectional one-port model shares one port between sending and receiving;
- with a model whose nodes share a NIC among their flows (``nic``: ``nic_rate``), a rank
  paces its receptions through a token bucket of its NIC (:func:`nic_bucket`): a message of
  ``n`` bytes takes ``n / b`` of the NIC from when its bytes may start to flow (its start
  plus the latency, ``delay - n / min(b_u, b_v)``) or when the NIC's earlier messages are
  through, whichever is later, and is released no earlier than that.  ``k`` messages
  arriving together at a NIC of rate ``b`` so take ``k n / b`` in all, as the simulator's
  max-min share gives the last of them; they are released one after the other (first
  seen, first released) rather than all at the end;
- with a model whose ranks send concurrently (``concurrent_sends``: ``nic``), the send
  port is busy only ``send_busy`` (the node's own work per message) and the rank's next
  send may start while earlier ones are in flight, as in the simulator; the rank's
  *sending* NIC is paced by a token bucket of its own, the same arithmetic on the sender's
  rate: a send's bytes are out at ``max(bucket, start + lead) + n / b_u`` and the send
  completes (its dependents may go on) no earlier than that nor than its time alone,
  ``start + delay``.  Its stamp carries the *effective* start ``end - delay``, so the
  receiver releases it no earlier than the sender's NIC let its bytes out (and books its
  own NIC for them just before).  A FIFO bucket is work-conserving like the max-min share:
  ``k`` sends of ``n`` bytes started together through a NIC of rate ``b`` end at
  ``n / b``, ``2 n / b``, ..., ``k n / b`` instead of all at ``k n / b``: the last ends
  as in the simulator, the earlier ones earlier.

Every data message travels with a companion *stamp*: the modelled start of the transfer on
a clock all ranks share.  Stamps are **logical** times (the modelled start, computed from
the modelled completion of the operations it depends on), not the moment the sender's
process happened to wake up; a rank still waits in real time until each logical time has
come.  So wake-up jitter of an oversubscribed machine delays only the final observation,
it does not accumulate along a path of the tree.

Clock: ranks on one host share ``CLOCK_MONOTONIC`` (``time.monotonic_ns``, system-wide on
Linux).  Across hosts, :func:`clock_offsets` estimates each rank's offset to rank 0 with
ping-pongs (Cristian's method, the exchange of least round-trip time wins); stamps are
then written on rank 0's clock.  The error of that estimate (half the best round trip, a
few microseconds on a cluster network) adds to every emulated arrival, so emulated costs
should be much larger than it.

Approximations (the simulator is exact, the emulation is as close as a real run allows):
a receive with dependencies counts as posted at the logical time its dependencies
complete; the receiver then sends its sender a clear-to-send carrying that time (and the
receive port's constraint as booked then), and the sender's transfer starts no earlier
(:class:`~.executor.Executor`); the sender counts the clear-to-send as one more dep, so a
send whose clear-to-send comes later than the port frees in real time may be passed by a
later send of the program.  Link contention (``path``) is not emulated but for a NIC's
receptions; receptions queue on the receive port and the NIC in the order their stamps are
observed, not strictly by start time; a shared NIC's flows end one after the other (first
come, first through) instead of together, and a sender's NIC and a receiver's are paced
apart (a send's bytes enter the receiver's bucket once its sender's bucket let them out),
not by one max-min share over both; a sending rank does not learn when a congested
receiver's NIC lets its send end (its send completes when its own NIC is through).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import time
from typing import Any

from ..errors import ArgumentError
from ..models import get_model
from ..platform import Platform
from ..units import MAX_TIME

__all__ = [
    "EmulatedTiming",
    "Emulator",
    "clock_offsets",
    "clock_shift",
    "nic_bucket",
    "set_timer_slack",
    "sleep_until",
]

_NS = 1_000_000_000
_MIN_NAP, _MAX_NAP = 30_000, 1_000_000  # ns, bounds of an idle sleep under emulation
_REAL_LATENCY = 50_000  # ns: what a message between two local ranks is granted to travel


def set_timer_slack(ns: int = 1) -> bool:
    """Ask Linux for ``ns`` of timer slack (default 50 µs) so short sleeps wake on time.

    ``time.sleep(50e-6)`` then overshoots by ~20 µs instead of ~70 µs.  Best effort: returns
    False where ``prctl`` is not available.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(29, ctypes.c_ulong(ns), 0, 0, 0) == 0  # PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        return False


def sleep_until(t_ns: int, now_ns: int | None = None) -> None:
    """Sleep until the monotonic clock reads ``t_ns`` (returns at once if it has)."""
    now = time.monotonic_ns() if now_ns is None else now_ns
    if t_ns > now:
        time.sleep((t_ns - now) / _NS)


def nic_bucket(free: int, start: int, lead: int, tokens: int) -> int:
    """A NIC's token bucket (ns): when a message's bytes are through a NIC that is through
    its earlier messages at ``free``, the message starting at ``start``, its bytes free to
    flow ``lead`` later and taking ``tokens`` of the NIC (its bytes over the NIC's rate).

    FIFO and work-conserving: the NIC is never idle while a message's bytes may flow, so
    messages that share it end, in all, when the simulator's max-min share ends the last.
    The new value is also the bucket's next ``free``."""
    return max(free, start + lead) + tokens


class Emulator:
    """A platform's costs for transfers between MPI ranks, in integer nanoseconds.

    Parameters
    ----------
    platform : Platform
    node_of_rank : sequence of int
        Platform node index of each MPI rank.
    model : optional
        Cost model (default: the platform's).
    offset_ns : int
        Added to ``time.monotonic_ns()`` to get the shared clock (0 on a single host).
    time_scale : float
        Multiply every modelled cost (a slower or faster replica of the platform).
    """

    def __init__(
        self,
        platform: Platform,
        node_of_rank: list[int],
        model: Any = None,
        *,
        offset_ns: int = 0,
        time_scale: float = 1.0,
    ) -> None:
        self.platform = platform
        self.model = get_model(model) if model is not None else platform.model
        self.bound = self.model.bind(platform)
        self.node_of_rank = list(node_of_rank)
        self.offset_ns = int(offset_ns)
        self.scale = float(time_scale) * _NS
        self.unidirectional = bool(self.bound.unidirectional)
        self._memo: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self.nic = [self.bound.nic_rate(u) for u in self.node_of_rank]
        self.shares_nic = any(rate is not None for rate in self.nic)
        #: whether a rank's sends may be in flight together (the send port is busy
        #: ``send_busy`` only, :attr:`~hetcoll.models.BoundModel.concurrent_sends`)
        self.concurrent = bool(self.bound.concurrent_sends)
        self._nic_memo: dict[tuple[int, int, int, bool], tuple[int, int]] = {}

    def now(self) -> int:
        """The shared clock, in nanoseconds."""
        return time.monotonic_ns() + self.offset_ns

    def combine(self, rank: int, nbytes: int) -> int:
        """How long (ns) rank ``rank`` takes to combine a partial result of ``nbytes``."""
        return round(self.bound.combine(self.node_of_rank[rank], nbytes) * self.scale)

    def costs(self, src: int, dst: int, nbytes: int) -> tuple[int, int, int]:
        """``(send_busy, delay, recv_busy)`` in ns for ``nbytes`` from rank ``src`` to ``dst``."""
        key = (src, dst, nbytes)
        got = self._memo.get(key)
        if got is None:
            b = self.bound
            u, v = self.node_of_rank[src], self.node_of_rank[dst]
            got = (
                round(b.send_busy(u, v, nbytes) * self.scale),
                round(b.delay(u, v, nbytes) * self.scale),
                round(b.recv_busy(u, v, nbytes) * self.scale),
            )
            self._memo[key] = got
        return got

    def nic_costs(
        self, src: int, dst: int, nbytes: int, sending: bool = False
    ) -> tuple[int, int] | None:
        """``(lead, tokens)`` in ns for ``nbytes`` from rank ``src`` to ``dst``: when after
        the start its bytes may flow (the delay less the bytes at the pair's rate) and how
        long they take of ``dst``'s receiving NIC (``sending``: of ``src``'s sending NIC);
        None when that rank has no shared NIC."""
        rate = self.nic[src if sending else dst]
        if rate is None:
            return None
        key = (src, dst, nbytes, sending)
        got = self._nic_memo.get(key)
        if got is None:
            pair = min(self.nic[dst] or math.inf, self.nic[src] or math.inf)
            delay = self.bound.delay(self.node_of_rank[src], self.node_of_rank[dst], nbytes)
            got = (round((delay - nbytes / pair) * self.scale), round(nbytes / rate * self.scale))
            self._nic_memo[key] = got
        return got


class EmulatedTiming:
    """The executor's timing strategy under emulation (:class:`~.executor.Executor`).

    Times are modelled, in ns on the shared clock: a send starts at ``max(port free,
    ready)`` and holds the port ``send_busy``; a receive is released at ``max(stamp,
    posted) + delay`` (and after the receive port, when the model has one, and the
    receiving NIC's bucket, when it shares one), never before the data really arrived.
    With ``concurrent`` sends (:meth:`flow`) a send completes when the sending NIC's bucket
    has its bytes out.  ``late`` sums how far releases had to wait past their modelled
    times because the data really came later (see :class:`~.executor.Trace`).
    """

    emulated = True

    def __init__(self, emulator: Emulator, me: int, clock=None) -> None:
        self.costs = emulator.costs
        self.nic_costs = emulator.nic_costs if emulator.shares_nic else None
        self.nic_free = 0  # when this rank's receiving NIC is through its messages so far
        self.concurrent = emulator.concurrent
        self.out_free = 0  # when this rank's sending NIC is through its messages so far
        self._combine = emulator.combine
        self.me = me
        self.unidirectional = emulator.unidirectional
        self.now = clock or emulator.now
        self.recv_free = 0
        self.late = 0
        self.naps: dict[int, int] = {}  # receive op -> how long the rank may sleep meanwhile

    def posted(self, i: int, peer: int, nbytes: int, ready: int) -> int:
        delay = self.costs(peer, self.me, nbytes)[1]
        self.naps[i] = min(max(delay // 2, _MIN_NAP), _MAX_NAP)
        return ready

    def expect(self, i: int, peer: int, nbytes: int) -> None:
        """Send ``i`` waits for its receiver's clear-to-send: look as often as for data."""
        delay = self.costs(self.me, peer, nbytes)[1]
        self.naps[i] = min(max(delay // 2, _MIN_NAP), _MAX_NAP)

    def clear(self, peer: int, nbytes: int, posted: int, port_free: int) -> int:
        """The earliest modelled start this rank allows a message from ``peer`` whose
        receive was posted at ``posted``: then, and late enough for the receive port (as
        :meth:`release` books it now)."""
        _, delay, rbusy = self.costs(peer, self.me, nbytes)
        if rbusy > 0:
            port = port_free if self.unidirectional else self.recv_free
            return max(posted, port - delay + rbusy)
        return posted

    def combine(self, nbytes: int) -> int:
        """How long (ns) this rank combines a received partial result of ``nbytes``."""
        return self._combine(self.me, nbytes)

    def arrived(self, i: int) -> None:
        self.naps.pop(i, None)

    def start(self, port_free: int, ready: int, now: int) -> int:
        return max(port_free, ready)

    def hold(self, peer: int, nbytes: int, start: int) -> int:
        return start + self.costs(self.me, peer, nbytes)[0]

    def flow(self, peer: int, nbytes: int, start: int) -> tuple[int, int]:
        """A send of ``nbytes`` to ``peer`` starting at ``start`` among the rank's concurrent
        sends: ``(end, stamp)``, when it completes (its bytes through this rank's sending
        NIC's bucket, and no earlier than its time alone) and the effective start its
        stamp carries (``end - delay``: the receiver releases it no earlier than ``end``)."""
        delay = self.costs(self.me, peer, nbytes)[1]
        end = start + delay
        if self.nic_costs is not None:
            got = self.nic_costs(self.me, peer, nbytes, True)
            if got is not None:
                self.out_free = nic_bucket(self.out_free, start, *got)
                end = max(end, self.out_free)
        return end, end - delay

    def release(
        self,
        peer: int,
        nbytes: int,
        stamp: tuple[int, int],
        posted: int,
        t: int,
        port_free: int,
    ) -> tuple[int, int]:
        """When a receive (stamped ``(modelled start, real issue)``, posted at ``posted``,
        seen at ``t``) completes, and the send port's new free time (a unidirectional port
        receives too)."""
        _, delay, rbusy = self.costs(peer, self.me, nbytes)
        start = max(stamp[0], posted)
        if rbusy > 0:
            port = port_free if self.unidirectional else self.recv_free
            start = max(start, port - delay + rbusy)
        modelled = start + delay
        if self.nic_costs is not None:  # the receiving NIC's token bucket
            self.nic_free = nic_bucket(self.nic_free, start, *self.nic_costs(peer, self.me, nbytes))
            modelled = max(modelled, self.nic_free)
        # Never before the data really arrived: it left when the sender issued it (a late
        # look at the network by this rank is not the network's delay), and it is here now.
        release = max(modelled, min(t, stamp[1] + _REAL_LATENCY))
        self.late += release - modelled
        if rbusy > 0:
            if self.unidirectional:
                port_free = max(port_free, release)
            else:
                self.recv_free = release
        return release, port_free

    def idle(self, transport, now: int, idle_since: int, wake: int | None) -> None:
        # A message may be observed any time before its release (stamp + delay), so looking
        # every half of the smallest pending delay loses nothing and leaves the CPU to the
        # other ranks of an oversubscribed host.
        until = now + _MAX_NAP if wake is None else wake
        if self.naps:
            until = min(until, now + min(self.naps.values()))
        transport.idle(max(until - now, 0) / _NS)


def clock_shift(rank: int) -> int:
    """A test hook: ns added to this rank's clock, from ``HETCOLL_CLOCK_SHIFT`` (seconds per
    rank, comma-separated: ``"0,2.5,-1"``; ranks beyond the list get 0).

    A shifted rank behaves like one on another host whose clock is off by that much: the
    wrapper then synchronises clocks (:func:`clock_offsets`) instead of trusting a shared
    one, which is what the test of cross-host emulation checks."""
    text = os.environ.get("HETCOLL_CLOCK_SHIFT", "").strip()
    if not text:
        return 0
    try:
        shifts = [float(x) for x in text.split(",")]
    except ValueError:
        shifts = [math.nan]
    # every entry is judged (not only this rank's), so that every rank refuses the same text
    if not all(math.isfinite(x) and abs(x) <= MAX_TIME for x in shifts):
        raise ArgumentError(
            f"HETCOLL_CLOCK_SHIFT: expected finite seconds per rank (at most {MAX_TIME:g} "
            f"each) like '0,2.5,-1', got {text!r}"
        )
    return round(shifts[rank] * _NS) if rank < len(shifts) else 0


def clock_offsets(comm, wait, shift_ns: int = 0, rounds: int = 20) -> int:
    """This rank's offset (ns) to rank 0's clock, estimated by ping-pong.

    Each rank's clock reads ``time.monotonic_ns() + shift_ns``.  Rank 0 answers each of
    ``rounds`` pings of every other rank with its clock reading; the exchange with the
    shortest round trip gives ``offset = t0 - (t_send + t_recv) / 2`` (Cristian 1989).
    Collective over ``comm``; rank 0 gets 0.  ``wait(request, what)`` waits for a request
    (with the caller's timeout).
    """
    import numpy as np
    from mpi4py import MPI

    tag = 7
    if comm.size == 1:
        return 0
    stamp = np.zeros(2, dtype=np.int64)  # the pinging rank, then rank 0's clock
    if comm.rank == 0:
        for _ in range(rounds * (comm.size - 1)):
            wait(comm.Irecv([stamp, MPI.INT64_T], MPI.ANY_SOURCE, tag), "clock sync (a ping)")
            stamp[1] = time.monotonic_ns() + shift_ns
            wait(comm.Isend([stamp, MPI.INT64_T], int(stamp[0]), tag), "clock sync (a pong)")
        return 0
    best_rtt, offset = None, 0
    for _ in range(rounds):
        stamp[0] = comm.rank
        t_send = time.monotonic_ns() + shift_ns
        wait(comm.Isend([stamp, MPI.INT64_T], 0, tag), "clock sync (a ping)")
        wait(comm.Irecv([stamp, MPI.INT64_T], 0, tag), "clock sync (a pong)")
        t_recv = time.monotonic_ns() + shift_ns
        rtt = t_recv - t_send
        if best_rtt is None or rtt < best_rtt:
            best_rtt, offset = rtt, int(stamp[1]) - (t_send + t_recv) // 2
    return offset
