"""Run one rank's part of a :class:`~hetcoll.schedule.Program` with non-blocking MPI.

The rules are those of ``DEVELOPING.md``, the ones the simulator implements:

1. an op may start when all its deps have completed (a send completes when its sender's
   port is released, a receive when the data has arrived);
2. receives are posted (``Irecv``) as soon as their deps have completed;
3. when the rank's send port is free it starts the first startable send in program order
   (``Isend``); without emulation the port is free again when that ``Isend`` completes;
4. sends and receives match by ``(sender, receiver, chunk)`` in program order: the tag is
   derived from the chunk (:func:`data_tag`) and MPI's non-overtaking rule keeps the order.

Completion is a ``Testsome`` loop that checks a deadline, so no rank ever blocks forever.

Bytes, not datatypes: a :class:`DataHandler` says which memory a chunk is sent from and
received into.  :class:`ByteRanges` maps chunks to byte ranges of user buffers (broadcast,
multicast, several multicasts, pipelining).  A collective whose chunks are not byte ranges
of one buffer (a hypercube allreduce with ``recv_reduce``: receive into scratch memory,
then combine into the local state) only needs its own handler: ``recv_buffer`` returns the
scratch buffer and ``received`` combines it.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from ..errors import CollectiveTimeoutError
from ..schedule import Chunk, Program
from .emulation import Emulator

__all__ = [
    "CONTROL_TAGS",
    "ByteRanges",
    "DataHandler",
    "RankPlan",
    "Trace",
    "data_tag",
    "execute",
    "rank_plan",
]

#: Tags below this are reserved for control messages (acks, probes, clock sync).
CONTROL_TAGS = 32
_SEND, _RECV, _RECV_REDUCE = 0, 1, 2
_KINDS = {"send": _SEND, "recv": _RECV, "recv_reduce": _RECV_REDUCE}
_NAMES = {v: k for k, v in _KINDS.items()}
_NS = 1_000_000_000
_PORT, _RELEASE = 0, 1  # timer kinds
_MIN_NAP, _MAX_NAP = 30_000, 1_000_000  # ns, bounds of an idle sleep under emulation
_REAL_LATENCY = 50_000  # ns: what a message between two local ranks is granted to travel


def data_tag(chunk: int) -> int:
    """The tag of chunk ``chunk``'s data; its emulation stamp uses the next tag."""
    return CONTROL_TAGS + 2 * chunk


class DataHandler:
    """Where the bytes of each chunk come from and go to, for one rank and one call.

    Subclass for collectives whose chunks are not byte ranges of a user buffer.
    """

    def send_buffer(self, chunk: int) -> memoryview:
        """The bytes to send for ``chunk`` (the rank holds it when this is called)."""
        raise NotImplementedError

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        """Writable memory to receive ``chunk`` into (``kind``: recv or recv_reduce)."""
        raise NotImplementedError

    def received(self, chunk: int, kind: str) -> None:
        """Called once ``chunk`` has arrived, before anything that depends on it starts."""


class ByteRanges(DataHandler):
    """Chunks are byte ranges ``[offset, offset + nbytes)`` of ``buffers[chunk.buffer]``."""

    def __init__(self, chunks: Sequence[Chunk], buffers: Mapping[int, memoryview]) -> None:
        self.chunks = chunks
        self.buffers = buffers

    def _view(self, chunk: int) -> memoryview:
        c = self.chunks[chunk]
        return self.buffers[c.buffer][c.offset : c.offset + c.nbytes]

    def send_buffer(self, chunk: int) -> memoryview:
        return self._view(chunk)

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        if kind != "recv":
            raise NotImplementedError("ByteRanges moves bytes; recv_reduce needs its own handler")
        return self._view(chunk)


@dataclass(frozen=True)
class RankPlan:
    """One rank's ops in array form (peers as MPI ranks), precomputed once per schedule."""

    me: int
    kinds: tuple[int, ...]
    peers: tuple[int, ...]
    chunks: tuple[int, ...]
    nbytes: tuple[int, ...]
    ndeps: tuple[int, ...]
    dependents: tuple[tuple[int, ...], ...]
    ops_text: tuple[str, ...]  # for error messages

    def __len__(self) -> int:
        return len(self.kinds)


def rank_plan(program: Program, node: str, rank_of: Mapping[str, int]) -> RankPlan:
    """The part of ``program`` that node ``node`` runs; ``rank_of`` maps node ids to ranks."""
    ops = program.ops.get(node, ())
    dependents: list[list[int]] = [[] for _ in ops]
    for i, op in enumerate(ops):
        for d in op.deps:
            dependents[d].append(i)
    texts = []
    for op in ops:
        c = program.chunks[op.chunk]
        direction = "to" if op.kind == "send" else "from"
        what = (
            f"the state of {len(c.origin)} member(s), {c.nbytes} B"
            if c.origin
            else f"bytes [{c.offset}, {c.offset + c.nbytes}) of buffer {c.buffer}"
        )
        texts.append(
            f"{op.kind} of chunk {op.chunk} ({what}) {direction} rank {rank_of[op.peer]} "
            f"(node {op.peer!r})"
        )
    return RankPlan(
        me=rank_of[node],
        kinds=tuple(_KINDS[op.kind] for op in ops),
        peers=tuple(rank_of[op.peer] for op in ops),
        chunks=tuple(op.chunk for op in ops),
        nbytes=tuple(program.chunks[op.chunk].nbytes for op in ops),
        ndeps=tuple(len(op.deps) for op in ops),
        dependents=tuple(tuple(d) for d in dependents),
        ops_text=tuple(texts),
    )


@dataclass
class Trace:
    """When the call started, and for each op when it was issued (``Isend``/``Irecv``, real
    time), started (a send's modelled start under emulation, else its issue), completed
    (modelled under emulation) and was seen to complete (real time); ns on the call's clock.
    ``received`` is when the rank saw its last receive complete (real time; ``entry`` for a
    rank that receives nothing): when it *had the data*, which for a forwarding rank is
    before the call returns.  ``late`` is how far this rank fell behind the model on a busy
    host: the most a release had to wait past its modelled time because the data really came
    later (emulation), or how late the rank began after an agreed start (``start_at``); 0
    when its part ran exactly as modelled.
    """

    entry: int
    done: list[int]
    issued: list[int]
    observed: list[int]
    started: list[int]
    received: int = 0
    late: int = 0


def execute(
    comm: MPI.Comm,
    plan: RankPlan,
    handler: DataHandler,
    *,
    emulator: Emulator | None = None,
    timeout: float = 60.0,
    what: str = "collective",
    on_timeout: Callable[[str], None] | None = None,
    poll: float = 100e-6,
    spin: float = 0.05,
    start_at: int | None = None,
) -> Trace:
    """Run ``plan`` on ``comm`` until every op of this rank has completed.

    Parameters
    ----------
    comm : MPI.Comm
        A communicator private to hetcoll (tags from :func:`data_tag` upwards are used).
    plan : RankPlan
    handler : DataHandler
    emulator : Emulator, optional
        Impose the platform's costs (see :mod:`hetcoll.runtime.emulation`).
    timeout : float
        Seconds; past it :class:`~hetcoll.errors.CollectiveTimeoutError` names the op and
        what it waits for (after ``on_timeout(message)`` is called, e.g. to abort the job).
    what : str
        The operation, for error messages (``"Bcast(root=0, 1024 B, fnf)"``).
    poll : float
        Without emulation: seconds between two looks at the network once idle for ``spin``
        seconds (before that the rank polls, yielding the CPU between looks).
    spin : float
    start_at : int, optional
        Post the receives, then wait until the clock reads ``start_at`` (ns) before anything
        else: ranks that agreed on a start time begin the collective together.

    Returns
    -------
    Trace
    """
    n = len(plan)
    emu = emulator
    clock = emu.now if emu is not None else time.monotonic_ns
    now = clock()
    entered_late = 0
    if start_at is not None:
        entered_late = max(now - start_at, 0)  # woke after the agreed start: all shifts
        now = max(now, start_at)
    trace = Trace(now, [0] * n, [0] * n, [0] * n, [0] * n, late=entered_late)
    issued, observed, started = trace.issued, trace.observed, trace.started
    if n == 0:
        trace.received = now
        return trace
    deadline = now + int(timeout * _NS)
    kinds, peers, chunks, nbytes = plan.kinds, plan.peers, plan.chunks, plan.nbytes
    waiting = list(plan.ndeps)
    ready = [now] * n  # logical time the op's deps completed
    # logical time each receive was posted: when its deps completed, or when the call began
    # (a message sent earlier, by a rank already in its next call, waits for it)
    posted = [now] * n
    done = trace.done
    remaining = n
    startable: list[int] = []  # heap of send op indices
    reqs: list[MPI.Request] = []
    owners: list[int] = []  # op index of each request
    parts = [0] * n  # outstanding requests (and port timer) per op
    # a stamp: the transfer's modelled start and the real time its Isend was issued
    stamps = np.zeros((n, 2), dtype=np.int64)
    naps = [_MIN_NAP] * n  # how long the rank may sleep while op i's requests are pending
    timers: list[tuple[int, int, int]] = []  # (time, kind, op)
    port_busy = False
    port_op = -1
    port_free = now  # logical
    recv_free = now  # logical; the send port's under a unidirectional model

    def post(i: int) -> None:
        buf = handler.recv_buffer(chunks[i], _NAMES[kinds[i]])
        tag = data_tag(chunks[i])
        if emu is not None:
            reqs.append(comm.Irecv([stamps[i], MPI.INT64_T], peers[i], tag + 1))
            owners.append(i)
            parts[i] += 1
            posted[i] = ready[i]
            delay = emu.costs(peers[i], plan.me, nbytes[i])[1]
            naps[i] = min(max(delay // 2, _MIN_NAP), _MAX_NAP)
        reqs.append(comm.Irecv([buf, MPI.BYTE], peers[i], tag))
        owners.append(i)
        parts[i] += 1
        issued[i] = clock()

    def enable(j: int) -> None:
        if kinds[j] == _SEND:
            heapq.heappush(startable, j)
        else:
            post(j)

    def complete(i: int, t: int) -> None:
        nonlocal remaining
        done[i] = t
        observed[i] = clock()
        remaining -= 1
        for j in plan.dependents[i]:
            if t > ready[j]:
                ready[j] = t
            waiting[j] -= 1
            if waiting[j] == 0:
                enable(j)

    def start_send() -> bool:
        nonlocal port_busy, port_op, port_free
        if port_busy or not startable:
            return False
        if emu is None:
            i = heapq.heappop(startable)
        else:  # the simulator's choice: the earliest start, then program order
            i = min(startable, key=lambda j: (max(ready[j], port_free), j))
            startable.remove(i)
            heapq.heapify(startable)
        buf = handler.send_buffer(chunks[i])
        tag = data_tag(chunks[i])
        if emu is not None:
            start = max(ready[i], port_free)
            busy = emu.costs(plan.me, peers[i], nbytes[i])[0]
            stamps[i, 0] = start
            stamps[i, 1] = clock()
            reqs.append(comm.Isend([stamps[i], MPI.INT64_T], peers[i], tag + 1))
            owners.append(i)
            port_free = start + busy
            heapq.heappush(timers, (port_free, _PORT, i))
            parts[i] += 2  # the stamp and the port timer
        reqs.append(comm.Isend([buf, MPI.BYTE], peers[i], tag))
        owners.append(i)
        parts[i] += 1
        issued[i] = clock()
        started[i] = issued[i] if emu is None else int(stamps[i, 0])
        port_busy, port_op = True, i
        return True

    def finish_send(i: int, t: int) -> None:
        nonlocal port_busy
        port_busy = False
        if emu is None:
            complete(i, t)
            return
        # The port is free at the modelled time, start + send_busy, even when this rank
        # saw its Isend complete later: a late look must not shift every later send of the
        # rank (under the postal model, where sends cost nothing, it would add up over a
        # flat tree).  Real lateness counts where it delays data: a receiver releases a
        # message no earlier than it really arrived.
        complete(i, port_free)

    def arrived(i: int, t_obs: int) -> None:
        # every request of receive i is in: when may the rank use the data?
        nonlocal port_free, recv_free
        if emu is None:
            handler.received(chunks[i], _NAMES[kinds[i]])
            complete(i, t_obs)
            return
        _, delay, rbusy = emu.costs(peers[i], plan.me, nbytes[i])
        start = max(int(stamps[i, 0]), posted[i])
        if rbusy > 0:
            port = port_free if emu.unidirectional else recv_free
            start = max(start, port - delay + rbusy)
        # Never before the data really arrived: it left when the sender issued it (a late
        # look at the network by this rank is not the network's delay), and it is here now.
        sent = int(stamps[i, 1])
        release = max(start + delay, min(t_obs, sent + _REAL_LATENCY))
        trace.late = max(trace.late, release - (start + delay))
        if rbusy > 0:
            if emu.unidirectional:
                port_free = max(port_free, release)
            else:
                recv_free = release
        heapq.heappush(timers, (release, _RELEASE, i))

    for i in range(n):
        if waiting[i] == 0:
            enable(i)
    if start_at is not None and startable:
        # Only a rank with something to send at once wakes at the start: a crowd of ranks
        # waking together on an oversubscribed host would delay the ones that matter.
        t = clock()
        if start_at > t:
            time.sleep((start_at - t) / _NS)

    idle_since = now
    while remaining:
        progress = start_send()
        if reqs:
            got = MPI.Request.Testsome(reqs)
            if got:
                now = clock()
                progress = True
                for k in got:
                    i = owners[k]
                    parts[i] -= 1
                    if parts[i] == 0:
                        if kinds[i] == _SEND:
                            finish_send(i, now)
                        else:
                            arrived(i, now)
                finished = set(got)
                keep = [k for k in range(len(reqs)) if k not in finished]
                reqs[:] = [reqs[k] for k in keep]
                owners[:] = [owners[k] for k in keep]
        now = clock()
        while timers and timers[0][0] <= now:
            t, kind, i = heapq.heappop(timers)
            progress = True
            if kind == _PORT:
                parts[i] -= 1
                if parts[i] == 0:
                    finish_send(i, t)
            else:
                handler.received(chunks[i], _NAMES[kinds[i]])
                complete(i, t)
        if progress:
            idle_since = now
            continue
        if now > deadline:
            message = _timeout_message(plan, what, timeout, done, waiting, parts, port_op)
            if on_timeout is not None:
                on_timeout(message)
            raise CollectiveTimeoutError(message)
        # Idle.  Under emulation a message may be observed any time before its release
        # (stamp + delay), so looking every half of the smallest pending delay loses nothing
        # and leaves the CPU to the other ranks of an oversubscribed host.
        if emu is not None:
            wake = timers[0][0] if timers else now + _MAX_NAP
            if reqs:
                wake = min(wake, now + min(naps[i] for i in owners))
            time.sleep(max(wake - now, 0) / _NS)
        elif now - idle_since > spin * _NS:
            time.sleep(poll)
        else:
            os.sched_yield()
        now = clock()
    trace.received = max((observed[i] for i in range(n) if kinds[i] != _SEND), default=trace.entry)
    return trace


def _timeout_message(plan, what, timeout, done, waiting, parts, port_op) -> str:
    pending = [i for i in range(len(plan)) if parts[i] > 0]
    blocked = [i for i in range(len(plan)) if waiting[i] > 0]
    if port_op >= 0 and parts[port_op] > 0:
        pending = [port_op] + [i for i in pending if i != port_op]
    if pending:
        i = pending[0]
        doing = f"waiting for op {i}, the {plan.ops_text[i]}"
    elif blocked:
        i = blocked[0]
        doing = f"op {i} ({plan.ops_text[i]}) never became ready"
    else:  # pragma: no cover - defensive
        doing = "no op pending"
    completed = sum(1 for t in done if t)
    return (
        f"rank {plan.me}: {what} timed out after {timeout:g} s, {doing} "
        f"({completed} of {len(plan)} ops completed; does every rank call the same collective?)"
    )
