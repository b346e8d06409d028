"""One rank's part of a program, as the executor runs it: its ops in array form
(:class:`RankPlan`), where their bytes live (:class:`DataHandler`, :class:`ByteRanges`) and
what happened when (:class:`Trace`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..program import Chunk, Program

__all__ = [
    "KIND_NAMES",
    "Combines",
    "Label",
    "Merged",
    "merged",
    "RECV",
    "RECV_REDUCE",
    "SEND",
    "ByteRanges",
    "DataHandler",
    "RankPlan",
    "Trace",
    "rank_plan",
    "timeout_message",
]

SEND, RECV, RECV_REDUCE = 0, 1, 2
_KINDS = {"send": SEND, "recv": RECV, "recv_reduce": RECV_REDUCE}
KIND_NAMES = {v: k for k, v in _KINDS.items()}


class Label:
    """A call's description for messages, formatted only when a message is written."""

    __slots__ = ("args", "fmt")

    def __init__(self, fmt: str, *args: object) -> None:
        self.fmt, self.args = fmt, args

    def __str__(self) -> str:
        return self.fmt.format(*self.args)

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


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

    def send_buffer(self, chunk: int) -> memoryview:
        c = self.chunks[chunk]
        return self.buffers[c.buffer][c.offset : c.offset + c.nbytes]

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        if kind != "recv":
            raise NotImplementedError("ByteRanges moves bytes; recv_reduce needs its own handler")
        return self.send_buffer(chunk)

    def op_ranges(self, chunks: Sequence[int]) -> tuple[tuple[int, slice], ...]:
        """Per op moving chunk ``chunks[i]``: ``(buffer, slice)`` of its bytes (the native
        loops index the buffers with these instead of asking per chunk)."""
        table = self.chunks
        return tuple(
            (table[c].buffer, slice(table[c].offset, table[c].offset + table[c].nbytes))
            for c in chunks
        )


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
    roots: tuple[int, ...] = ()  # ops without deps, in program order
    #: per op, whether the receive (for a send: the matching receive at the peer) has deps,
    #: so it is posted late and the sender waits for its clear-to-send under emulation
    late: tuple[bool, ...] = ()
    #: whether its recv_reduce ops reduce (each costs the rank ``nbytes * gamma`` under
    #: emulation: :attr:`hetcoll.program.Program.reduces`)
    reduces: bool = False
    #: whether some recv_reduce may arrive before the previous one (it does not depend on
    #: it): rule 5 of :mod:`hetcoll.program` then holds it until the previous is combined
    #: (the executor does; the native loops leave such plans to it)
    reorders: bool = False

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
        roots=tuple(i for i, op in enumerate(ops) if not op.deps),
        late=_late(program, node, ops),
        reduces=program.reduces,
        reorders=_reorders(ops),
    )


def _reorders(ops) -> bool:
    """Whether some ``recv_reduce`` of ``ops`` does not depend directly on the previous one
    (so its data may arrive first)."""
    prev = None
    for i, op in enumerate(ops):
        if op.kind == "recv_reduce":
            if prev is not None and prev not in op.deps:
                return True
            prev = i
    return False


def _late(program: Program, node: str, ops) -> tuple[bool, ...]:
    """Per op of ``node``: whether its receive (a send's: the matching receive, the k-th of
    the peer's receives of that chunk from ``node`` for the k-th such send) has deps."""
    receives: dict[str, dict[int, list[bool]]] = {}
    seen: dict[tuple[str, int], int] = {}
    late = []
    for op in ops:
        if op.kind != "send":
            late.append(bool(op.deps))
            continue
        if op.peer not in receives:
            by_chunk: dict[int, list[bool]] = {}
            for r in program.ops.get(op.peer, ()):
                if r.kind != "send" and r.peer == node:
                    by_chunk.setdefault(r.chunk, []).append(bool(r.deps))
            receives[op.peer] = by_chunk
        k = seen.get((op.peer, op.chunk), 0)
        seen[(op.peer, op.chunk)] = k + 1
        flags = receives[op.peer].get(op.chunk, [])
        late.append(k < len(flags) and flags[k])
    return tuple(late)


class Combines:
    """Rule 5 of :mod:`hetcoll.program` for one rank: its ``recv_reduce`` ops complete one
    at a time in program order.  :meth:`arrived` takes an op whose data are in and gives
    the ops that may now be combined, in order, with their arrival times; ``free`` is
    when the rank's last combine ends (kept by the caller)."""

    def __init__(self, kinds: Sequence[int], now: int) -> None:
        self.order = [i for i, k in enumerate(kinds) if k == RECV_REDUCE]
        self.at = 0
        self.came: dict[int, int] = {}
        self.free = now

    def arrived(self, i: int, t: int) -> list[tuple[int, int]]:
        self.came[i] = t
        out, order, came = [], self.order, self.came
        while self.at < len(order) and order[self.at] in came:
            out.append((order[self.at], came.pop(order[self.at])))
            self.at += 1
        return out


@dataclass
class Trace:
    """When the call started, and for each op when it was issued (real time), started (a
    send's modelled start under emulation, else its issue), completed (modelled under
    emulation) and was seen to complete (real time); ns on the call's clock.
    ``received`` is when the rank saw its last receive complete (real time; ``entry`` for a
    rank that receives nothing): when it *had the data*, which for a forwarding rank is
    before the call returns.  ``late`` is how far this rank fell behind the model on a busy
    host, summed over its events: every release that had to wait past its modelled time
    because the data really came later (emulation), plus how late the rank began after an
    agreed start (``start_at``).  0 when its part ran exactly as modelled; the modelled
    times of a whole run exceed an exact run's by at most the sum of every rank's ``late``.
    """

    entry: int
    done: list[int]
    issued: list[int]
    observed: list[int]
    started: list[int]
    received: int = 0
    late: int = 0

    @classmethod
    def native(cls, entry: int, done: list[int], issued: list[int], sends) -> Trace:
        """The trace of a native call (real times: started = issued, observed = done)."""
        got = [t for t, s in zip(done, sends, strict=True) if not s]
        return cls(
            entry, list(done), list(issued), list(done), list(issued), max(got, default=entry)
        )


def merged(a: RankPlan, b: RankPlan, chunk_offset: int) -> RankPlan:
    """``a`` and ``b`` run together as one plan (``b``'s ops after ``a``'s, its chunks
    numbered from ``chunk_offset``): two programs that share the rank's port."""
    n = len(a)
    return RankPlan(
        me=a.me,
        kinds=a.kinds + b.kinds,
        peers=a.peers + b.peers,
        chunks=a.chunks + tuple(c + chunk_offset for c in b.chunks),
        nbytes=a.nbytes + b.nbytes,
        ndeps=a.ndeps + b.ndeps,
        dependents=a.dependents + tuple(tuple(j + n for j in d) for d in b.dependents),
        ops_text=a.ops_text + b.ops_text,
        roots=a.roots + tuple(i + n for i in b.roots),
        late=(a.late or (False,) * n) + (b.late or (False,) * len(b)),
        reduces=a.reduces or b.reduces,
        reorders=a.reorders or b.reorders or (RECV_REDUCE in a.kinds and RECV_REDUCE in b.kinds),
    )


class Merged(DataHandler):
    """The handler of a :func:`merged` plan: chunks below ``offset`` are ``a``'s, the others
    ``b``'s (renumbered); ``b_done()`` is called once ``b`` has received ``b_receives``
    chunks (an agreement check can raise there)."""

    def __init__(self, a: DataHandler, b: DataHandler, offset: int, b_receives: int, b_done):
        self.a, self.b, self.offset = a, b, offset
        self.left, self.b_done = b_receives, b_done

    def send_buffer(self, chunk: int) -> memoryview:
        if chunk < self.offset:
            return self.a.send_buffer(chunk)
        return self.b.send_buffer(chunk - self.offset)

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        if chunk < self.offset:
            return self.a.recv_buffer(chunk, kind)
        return self.b.recv_buffer(chunk - self.offset, kind)

    def received(self, chunk: int, kind: str) -> None:
        if chunk < self.offset:
            self.a.received(chunk, kind)
            return
        self.b.received(chunk - self.offset, kind)
        self.left -= 1
        if self.left == 0:
            self.b_done()


def timeout_message(
    plan: RankPlan, what, timeout: float, pending, waiting, port_op: int, completed: int
) -> str:
    """The error of a call that timed out: what it waited for.  ``pending(i)``: whether op
    ``i`` has a transfer outstanding; ``waiting[i]``: its deps not yet completed."""
    ops = range(len(plan))
    busy = [i for i in ops if pending(i)]
    if port_op >= 0 and port_op in busy:
        busy = [port_op] + [i for i in busy if i != port_op]
    blocked = [i for i in ops if waiting[i] > 0]
    if busy:
        doing = f"waiting for op {busy[0]}, the {plan.ops_text[busy[0]]}"
    elif blocked:
        doing = f"op {blocked[0]} ({plan.ops_text[blocked[0]]}) never became ready"
    else:  # pragma: no cover - defensive
        doing = "no op pending"
    return (
        f"rank {plan.me}: {what} timed out after {timeout:g} s, {doing} "
        f"({completed} of {len(plan)} ops completed; does every rank call the same "
        "collective?)"
    )
