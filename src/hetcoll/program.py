"""The engine's contract: a :class:`Program`, for each rank an ordered list of
:class:`Op` (``send`` / ``recv`` / ``recv_reduce`` of a :class:`Chunk`), each with explicit
dependencies on earlier ops of the same rank.  Every schedule lowers to one
(:meth:`~hetcoll.schedule.Schedule.program`); the simulator and the runtime both execute
exactly that program, with the same rules:

1. an op may start only when the ops it depends on have completed;
2. a transfer starts no earlier than its send may start *and* its matching receive is posted
   (rendezvous), and no earlier than the resources it needs (ports, links) are free;
3. when a rank's send port is free it takes the first startable send in program order (or,
   if none is, the first to become startable); that send holds the port while it waits for
   the receiver and the links, so a later send never overtakes it;
4. sends and receives match by ``(sender, receiver, chunk)``, in program order;
5. **combining**: a rank's ``recv_reduce`` ops complete one at a time, in program order: op
   ``i`` completes at ``max(its arrival, the completion of the rank's previous
   recv_reduce) + combine``, where ``combine`` is ``nbytes * gamma`` of the rank
   (:meth:`~hetcoll.models.BoundModel.combine`) when the program reduces
   (:attr:`Program.reduces`) and 0 otherwise (blocks placed side by side, a barrier).
   Which partial results are combined, and in which order, is therefore fixed by the
   program, not by the order messages happen to arrive in: a floating-point reduction
   gives the same bits on every run of one schedule.

A rank *holds* a chunk when it held it at the start, or received it, or a ``recv_reduce``
produced it (``Op.result``), or when the chunks it holds of the same buffer and ``origin``
cover its bytes (a gather's subtree range, assembled from its own block and its
children's ranges; a scatter's child range, cut from the node's own).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from heapq import heappop, heappush

from .errors import ScheduleError

__all__ = ["Chunk", "Op", "Program", "SendQueue"]


@dataclass(frozen=True)
class Chunk:
    """The unit a single message carries: a byte range of one buffer, or a combined state.

    Without ``origin``, bytes ``[offset, offset + nbytes)`` of buffer ``buffer``.  With
    ``origin`` (hypercube schedules), the combination of the contributions of the ``origin``
    nodes, in cube order (:func:`hetcoll.lowering.hypercube_program`): their reduction (allreduce,
    ``nbytes`` = the message), their blocks one after the other (allgather, ``nbytes`` =
    block size x len(origin)) or nothing (barrier, 0 bytes); ``buffer`` and ``offset`` are
    then 0.

    ``copy_of`` marks a *relay copy*: the bytes of chunk ``copy_of`` on their way through the
    relays of a tree edge (:attr:`Flow.relays`), under an id of their own so that matching
    and holdings stay unambiguous when a relay also receives those bytes for itself.  A relay
    keeps the copy apart (scratch memory); the edge's child receives it as ``copy_of``
    (``Op.result``).
    """

    buffer: int
    offset: int
    nbytes: int
    origin: tuple[str, ...] = ()
    copy_of: int | None = None


@dataclass(frozen=True)
class Op:
    """One operation of a rank's program.

    ``kind`` is ``"send"``, ``"recv"`` or ``"recv_reduce"`` (receive and combine into the
    local data); ``peer`` the other rank's id; ``chunk`` an index into ``Program.chunks``;
    ``deps`` indices of earlier ops of the same rank that must complete first.  A
    ``recv_reduce`` may name the chunk its combination produces, ``result``: the rank's
    state (its latest ``result``, or its own contribution) combined with the received chunk;
    the rank holds ``result`` once the op completes.  A ``recv`` of a relay copy may name
    the chunk it is a copy of as ``result``: the rank stores the bytes as that chunk (the
    last hop of a relayed edge).
    """

    kind: str
    peer: str
    chunk: int
    deps: tuple[int, ...] = ()
    result: int | None = None


@dataclass(frozen=True)
class Program:
    """Per-rank ordered operations: what the simulator and the runtime both execute."""

    ops: Mapping[str, tuple[Op, ...]]
    chunks: tuple[Chunk, ...]
    initial: Mapping[str, frozenset[int]]
    #: whether its ``recv_reduce`` ops reduce (each costs its rank ``nbytes * gamma``), rather
    #: than place blocks side by side (allgather) or carry nothing (barrier)
    reduces: bool = False

    def matches(self) -> dict[tuple[str, int], tuple[str, int]]:
        """Map each send ``(rank, op index)`` to its receive and each receive to its send.

        Sends and receives pair up by ``(sender, receiver, chunk)``, in program order.
        """
        pending: dict[tuple[str, str, int], deque[tuple[str, int]]] = {}
        for rank, ops in self.ops.items():
            for i, op in enumerate(ops):
                if op.kind == "send":
                    pending.setdefault((rank, op.peer, op.chunk), deque()).append((rank, i))
        out: dict[tuple[str, int], tuple[str, int]] = {}
        for rank, ops in self.ops.items():
            for i, op in enumerate(ops):
                if op.kind in ("recv", "recv_reduce"):
                    queue = pending.get((op.peer, rank, op.chunk))
                    if not queue:
                        raise ScheduleError(
                            f"rank {rank!r} receives chunk {op.chunk} from {op.peer!r}, "
                            "which never sends it"
                        )
                    send = queue.popleft()
                    out[send] = (rank, i)
                    out[(rank, i)] = send
        for (src, dst, chunk), queue in pending.items():
            if queue:
                raise ScheduleError(
                    f"rank {src!r} sends chunk {chunk} to {dst!r}, which never receives it"
                )
        return out

    def repeated(self, times: int) -> Program:
        """``times`` runs of this program back to back, as a loop of calls executes them:
        each rank starts run ``k + 1`` once all its ops of run ``k`` have completed (its
        call returned).  Run ``k`` uses its own copy of every chunk (ids ``+ k * C``) and
        holds its own copy of the initial chunks.  Simulate it for the period of a loop
        (the runs of different ranks overlap, so it can be shorter than one run's time).
        """
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise ScheduleError(f"times: must be an integer >= 1, got {times!r}")
        c = len(self.chunks)
        ops: dict[str, tuple[Op, ...]] = {}
        for rank, mine in self.ops.items():
            n = len(mine)
            out: list[Op] = []
            for k in range(times):
                before = tuple(range((k - 1) * n, k * n)) if k else ()
                for op in mine:
                    out.append(
                        Op(
                            op.kind,
                            op.peer,
                            op.chunk + k * c,
                            tuple(d + k * n for d in op.deps) if op.deps else before,
                            None if op.result is None else op.result + k * c,
                        )
                    )
            ops[rank] = tuple(out)
        initial = {
            rank: frozenset(x + k * c for x in held for k in range(times))
            for rank, held in self.initial.items()
        }
        chunks = tuple(
            ch if ch.copy_of is None else replace(ch, copy_of=ch.copy_of + k * c)
            for k in range(times)
            for ch in self.chunks
        )
        return Program(ops, chunks, initial, self.reduces)

    def validate(self) -> None:
        """Check op shapes, matching, data availability and freedom from deadlock.

        Raises :class:`ScheduleError` naming the first offending rank and op.
        """
        for rank, ops in self.ops.items():
            for i, op in enumerate(ops):
                where = f"rank {rank!r} op {i} ({op.kind} chunk {op.chunk} with {op.peer!r})"
                if op.kind not in ("send", "recv", "recv_reduce"):
                    raise ScheduleError(f"{where}: unknown kind {op.kind!r}")
                if op.peer == rank or op.peer not in self.ops:
                    raise ScheduleError(f"{where}: peer must be another rank of the program")
                if not 0 <= op.chunk < len(self.chunks):
                    raise ScheduleError(f"{where}: no such chunk")
                if any(not 0 <= d < i for d in op.deps):
                    raise ScheduleError(f"{where}: deps must name earlier ops of the rank")
                if op.result is not None and not (
                    (op.kind == "recv_reduce" and 0 <= op.result < len(self.chunks))
                    or (op.kind == "recv" and self.chunks[op.chunk].copy_of == op.result)
                ):
                    raise ScheduleError(
                        f"{where}: result must be a chunk of a recv_reduce, or the original "
                        "of the relay copy a recv receives"
                    )
        matches = self.matches()
        self._check_holdings()
        self._check_deadlock(matches)

    def _check_holdings(self) -> None:
        # An op holds its rank's initial chunks and every chunk a receive among its
        # (transitive) dependencies brought.  A send is checked against the ops that bring
        # its chunk: usually one is a direct dependency; otherwise a search back along the
        # dependencies, no further back than the earliest of them.  Linear for every
        # schedule a planner lowers to.
        for rank, ops in self.ops.items():
            initial = self.initial.get(rank, frozenset())
            brings: dict[int, list[int]] = {}  # chunk -> ops (indices) that bring it
            received: set[int] = set()
            for i, op in enumerate(ops):
                copy_of = self.chunks[op.chunk].copy_of
                if op.kind == "send" and op.chunk not in initial and copy_of not in initial:
                    # a relay copy's first hop sends bytes its sender holds as the original
                    bringers = [*brings.get(op.chunk, ()), *brings.get(copy_of, ())]
                    if (
                        not _depends_on(ops, i, bringers)
                        and not self._covered(ops, i, initial, brings)
                        and not self._covered_in_layout(ops, i, initial)
                    ):
                        raise ScheduleError(
                            f"rank {rank!r} op {i} sends chunk {op.chunk} to {op.peer!r} before "
                            "it holds it (no earlier receive of that chunk among its "
                            "dependencies)"
                        )
                elif op.kind == "recv":
                    for chunk in (op.chunk, op.result):  # a relay copy's last hop: both
                        if chunk is None:
                            continue
                        if chunk in received:
                            raise ScheduleError(f"rank {rank!r} receives chunk {chunk} twice")
                        received.add(chunk)
                        brings.setdefault(chunk, []).append(i)
                elif op.kind == "recv_reduce":
                    brings.setdefault(op.chunk, []).append(i)
                    if op.result is not None:
                        brings.setdefault(op.result, []).append(i)

    def _covered(self, ops: Sequence[Op], i: int, initial, brings: dict[int, list[int]]) -> bool:
        """Whether the bytes op ``i`` sends (a plain byte range of more than 0 bytes) lie
        within ranges its rank holds from the start or received among the op's
        dependencies: a program that forwards part of a larger message it received (a
        scatter followed by an allgather, as MPICH broadcasts long messages)."""
        want = self.chunks[ops[i].chunk]
        if want.origin or want.copy_of is not None or want.nbytes == 0:
            return False
        lo, hi = want.offset, want.offset + want.nbytes

        def overlaps(c: Chunk) -> bool:
            return (
                not c.origin
                and c.buffer == want.buffer
                and c.offset < hi
                and c.offset + c.nbytes > lo
            )

        spans = [self.chunks[c] for c in initial if overlaps(self.chunks[c])]
        for chunk, where in brings.items():
            c = self.chunks[chunk]
            if overlaps(c) and _depends_on(ops, i, where):
                spans.append(c)
        at = lo
        for c in sorted(spans, key=lambda c: c.offset):
            if c.offset > at:
                return False
            at = max(at, c.offset + c.nbytes)
        return at >= hi

    def _covered_in_layout(self, ops: Sequence[Op], i: int, initial) -> bool:
        """Whether op ``i``'s chunk is covered by chunks of the same buffer and origin that
        its rank held at the start or that ops among ``i``'s (transitive) dependencies
        brought (a gather's subtree range, a scatter's child range).  O(ops of the rank)."""
        want = self.chunks[ops[i].chunk]
        if want.copy_of is not None:
            return False
        seen: set[int] = set()
        stack = list(ops[i].deps)
        held = [c for c in initial]
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            op = ops[j]
            if op.kind != "send":
                held.append(op.chunk if op.result is None else op.result)
            stack.extend(op.deps)
        spans = sorted(
            (c.offset, c.offset + c.nbytes)
            for c in (self.chunks[k] for k in held)
            if c.buffer == want.buffer and c.origin == want.origin and c.copy_of is None
        )
        lo, hi = want.offset, want.offset + want.nbytes
        if lo == hi:  # an empty range: inside (or at an end of) one held chunk
            return any(a <= lo <= b for a, b in spans)
        for a, b in spans:
            if a > lo:
                return False
            lo = max(lo, b)
            if lo >= hi:
                return True
        return False

    def _check_deadlock(self, matches: dict[tuple[str, int], tuple[str, int]]) -> None:
        # An op can start once its deps are done; a transfer also needs its receive posted
        # (rendezvous); a receive completes after its send starts.  Kahn's algorithm on that
        # graph finds any cycle, i.e. a deadlock.
        succ: dict[tuple[str, int], list[tuple[str, int]]] = {}
        indeg: dict[tuple[str, int], int] = {}
        for rank, ops in self.ops.items():
            for i, op in enumerate(ops):
                key = (rank, i)
                indeg.setdefault(key, 0)
                preds = [(rank, d) for d in op.deps]
                if op.kind == "send":
                    r_rank, r_i = matches[key]
                    preds += [(r_rank, d) for d in self.ops[r_rank][r_i].deps]
                else:
                    preds.append(matches[key])
                for p in preds:
                    succ.setdefault(p, []).append(key)
                    indeg[key] += 1
        ready = [k for k, d in indeg.items() if d == 0]
        done = 0
        while ready:
            k = ready.pop()
            done += 1
            for s in succ.get(k, ()):
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
        if done < len(indeg):
            rank, i = min(k for k, d in indeg.items() if d > 0)
            op = self.ops[rank][i]
            raise ScheduleError(
                f"schedule deadlocks: rank {rank!r} op {i} ({op.kind} chunk {op.chunk} with "
                f"{op.peer!r}) can never start"
            )


def _depends_on(ops: Sequence[Op], i: int, targets: Sequence[int]) -> bool:
    """Whether op ``i`` depends, directly or through other ops, on one of ``targets``."""
    if not targets:
        return False
    goal = set(targets)
    deps = ops[i].deps
    if not goal.isdisjoint(deps):
        return True
    floor = min(goal)  # deps name earlier ops: nothing before the earliest target helps
    seen: set[int] = set()
    stack = [d for d in deps if d > floor]
    while stack:
        j = stack.pop()
        if j in goal:
            return True
        if j in seen:
            continue
        seen.add(j)
        stack.extend(d for d in ops[j].deps if d >= floor and d not in seen)
    return False


class SendQueue:
    """One rank's send port choosing its next send: rule 3 in code.

    Sends join with the time they become startable (their deps completed and their receive
    posted) and their number in program order.  When the port is free at ``free``,
    :meth:`take` gives the first in program order among the sends startable by then, or
    None when none is; :meth:`first` then gives the first to become startable (ties:
    program order) and when.  The simulator (its event loop and its one-tree shortcut) and
    the executor choose with it; the native loops keep only :attr:`due`, since a send
    enabled there is startable at once (``tests/_send_rule.py`` holds them all to one
    table).
    """

    __slots__ = ("due", "pending")

    def __init__(self) -> None:
        self.pending: list[tuple[float, int]] = []  # (startable at, op), a heap
        self.due: list[int] = []  # ops startable by the last take: a heap, program order

    def add(self, startable: float, op: int) -> None:
        """Send ``op`` is startable from ``startable`` on."""
        heappush(self.pending, (startable, op))

    def take(self, free: float) -> int | None:
        """The first send in program order startable by ``free`` (taken), or None."""
        pending, due = self.pending, self.due
        while pending and pending[0][0] <= free:
            heappush(due, heappop(pending)[1])
        return heappop(due) if due else None

    def first(self) -> tuple[float, int]:
        """When none is startable: the first to become startable (taken), and when."""
        t = self.pending[0][0]
        return t, self.take(t)  # type: ignore[return-value]
