"""The one intermediate representation every planner returns.

A :class:`Schedule` says *what* moves where:

- an **ordered tree** (:class:`Tree`): each sender's children in the order it sends to them;
- a **pipelined tree**: a :class:`Flow` whose message is cut into segments;
- **several trees at once**: several flows, either carrying disjoint byte ranges of one
  buffer (multi-tree, steady state) or different buffers (multiple multicast, one buffer per
  source);
- a **hypercube embedding** (:class:`Hypercube`): node per cube position, exchange rounds
  dimension by dimension, a combine operator (allreduce, allgather, barrier).

Underneath, every schedule lowers (:meth:`Schedule.program`) to one :class:`Program`: for each
rank an ordered list of :class:`Op` (``send`` / ``recv`` / ``recv_reduce`` of a :class:`Chunk`),
each with explicit dependencies on earlier ops of the same rank.  Both the simulator and the
MPI runtime execute exactly that program, with the same rules:

1. an op may start only when the ops it depends on have completed;
2. a transfer starts no earlier than its send may start *and* its matching receive is posted
   (rendezvous), and no earlier than the resources it needs (ports, links) are free;
3. when a rank's send port is free it takes the first startable send in program order (or,
   if none is, the first to become startable); that send holds the port while it waits for
   the receiver and the links, so a later send never overtakes it.

Schedules are immutable, deterministic, validated, and round-trip through JSON.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import HetcollError, ScheduleError
from .units import check_quantity

__all__ = [
    "Tree",
    "Flow",
    "Hypercube",
    "Chunk",
    "Op",
    "Program",
    "Schedule",
    "COLLECTIVES",
]

#: Collective operations a schedule can describe.
COLLECTIVES = ("bcast", "multicast", "multi_multicast", "allreduce", "allgather", "barrier")
#: Collectives a hypercube schedule describes.
HYPERCUBE_COLLECTIVES = ("allreduce", "allgather", "barrier")
#: Combine operators of an allreduce (mpi4py's predefined ops, lower case, or "user").
REDUCE_OPS = (
    "sum",
    "prod",
    "max",
    "min",
    "land",
    "lor",
    "lxor",
    "band",
    "bor",
    "bxor",
    "maxloc",
    "minloc",
    "user",
)
FORMAT = "hetcoll-schedule"
VERSION = 1
#: Most messages (chunks) one schedule may cut its data into: a program and its simulation
#: grow with it (``nbytes / segment_size`` per flow), so more is refused rather than run.
MAX_CHUNKS = 2**20
# the keys of a schedule document, of a flow and of a hypercube: anything else is an error
_SCHEDULE_KEYS = (
    "format",
    "version",
    "collective",
    "algorithm",
    "nbytes",
    "model",
    "params",
    "flows",
    "hypercube",
    "order",
)
_FLOW_KEYS = ("root", "children", "nbytes", "offset", "buffer", "segment_size", "relays")
_HYPERCUBE_KEYS = ("dims", "positions", "folds", "combine")


def _kind(value: Any) -> str:
    """A wrong value, as a message shows it: containers by kind, scalars by value."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return f"a string {value!r}" if len(value) <= 40 else "a string"
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


def _id(value: Any, where: str) -> str:
    """A node id read from a document: a non-empty string (an integer is converted)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ScheduleError(f"{where}: must be a node id (a string), got {_kind(value)}")
    if value == "":
        raise ScheduleError(f"{where}: must be a non-empty node id")
    return str(value)


def _ids(value: Any, where: str) -> tuple[str, ...]:
    """A list of node ids: a string is not one (``"2345678"`` is not seven children)."""
    if not isinstance(value, list | tuple):
        raise ScheduleError(f"{where}: must be a list of node ids, got {_kind(value)}")
    return tuple(_id(v, f"{where}[{i}]") for i, v in enumerate(value))


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScheduleError(f"{where}: must be an object, got {_kind(value)}")
    return value


def _only(data: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    """Refuse a key the format does not have (a typo would otherwise be ignored)."""
    for key in data:
        if key not in keys:
            prefix = f"{where}." if where else ""
            raise ScheduleError(
                f"{prefix}{key}: unknown field (expected one of: {', '.join(keys)})"
            )


def _required(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        prefix = f"{where}." if where else ""
        raise ScheduleError(f"malformed schedule: {prefix}{key}: missing")
    return data[key]


def _count(value: Any, kind: str, where: str, positive: bool = False) -> int:
    """A size or index of a schedule: an integer (no units, no fractions) in range."""
    if isinstance(value, bool) or not isinstance(value, int):
        what = "a positive integer" if positive else "an integer >= 0"
        raise ScheduleError(f"{where}: must be {what}, got {_kind(value)}")
    return int(check_quantity(value, kind, where, error=ScheduleError, positive=positive))


@dataclass(frozen=True)
class Tree:
    """An ordered tree: ``children[p]`` lists ``p``'s children in the order ``p`` sends to them.

    Build one with :meth:`from_edges` from ``(sender, receiver)`` pairs given in send order.
    """

    root: str
    children: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.root, str):
            raise ScheduleError(f"tree: node ids are strings, got root {self.root!r}")
        if not isinstance(self.children, Mapping):
            raise ScheduleError(
                f"tree rooted at {self.root!r}: children must map a node to a list of "
                f"children, got {_kind(self.children)}"
            )
        for p, cs in self.children.items():
            if not isinstance(cs, list | tuple):  # a string is not a list of one-letter ids
                raise ScheduleError(
                    f"tree rooted at {self.root!r}: children[{p!r}] must be a list of node "
                    f"ids, got {_kind(cs)}"
                )
            bad = next((c for c in (p, *cs) if not isinstance(c, str)), None)
            if bad is not None:
                raise ScheduleError(
                    f"tree rooted at {self.root!r}: node {bad!r} is not a string id"
                )
        kids = {p: tuple(cs) for p, cs in self.children.items() if cs}
        seen = {self.root}
        order = [self.root]
        for p in order:  # breadth first, so every listed parent must be reachable from the root
            cs = kids.get(p)
            if cs is None:
                continue
            if not seen.isdisjoint(cs) or len(set(cs)) != len(cs):
                twice = next(c for i, c in enumerate(cs) if c in seen or c in cs[:i])
                raise ScheduleError(f"tree rooted at {self.root!r}: node {twice!r} appears twice")
            seen.update(cs)
            order.extend(cs)
        if not set(map(type, order)) <= {str}:
            bad = next(c for c in order if not isinstance(c, str))
            raise ScheduleError(f"tree rooted at {self.root!r}: node {bad!r} is not a string id")
        unreachable = [p for p in kids if p not in seen]
        if unreachable:
            raise ScheduleError(
                f"tree rooted at {self.root!r}: {unreachable[0]!r} has children but is not "
                "reached from the root"
            )
        canonical = {p: kids[p] for p in order if p in kids}
        object.__setattr__(self, "children", canonical)
        object.__setattr__(self, "_order", tuple(order))

    @classmethod
    def from_edges(cls, root: str, edges: Iterable[tuple[str, str]]) -> Tree:
        """A tree from ``(parent, child)`` pairs; a parent's pairs must come in its send order."""
        kids: dict[str, list[str]] = {}
        for k, edge in enumerate(edges):
            if not isinstance(edge, list | tuple) or len(edge) != 2:
                raise ScheduleError(f"edges[{k}]: must be a (parent, child) pair, got {edge!r}")
            p, c = edge
            if not isinstance(p, str):
                raise ScheduleError(f"edges[{k}]: node {p!r} is not a string id")
            kids.setdefault(p, []).append(c)
        return cls(root, {p: tuple(cs) for p, cs in kids.items()})

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every node of the tree, root first, breadth-first in send order."""
        return self._order  # type: ignore[attr-defined]

    def edges(self) -> list[tuple[str, str]]:
        """``(parent, child)`` pairs, parents breadth-first, each parent's in send order."""
        return [(p, c) for p, cs in self.children.items() for c in cs]

    def parent(self) -> dict[str, str]:
        return {c: p for p, cs in self.children.items() for c in cs}

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "children": {p: list(cs) for p, cs in self.children.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "tree") -> Tree:
        """Read ``{"root": id, "children": {id: [id, ...]}}`` (ids: strings or integers)."""
        data = _mapping(data, where)
        root = _id(_required(data, "root", where), f"{where}.root")
        raw = _mapping(data.get("children", {}), f"{where}.children")
        children = {
            _id(p, f"{where}.children"): _ids(cs, f"{where}.children[{p!r}]")
            for p, cs in raw.items()
        }
        return cls(root, children)


@dataclass(frozen=True)
class Flow:
    """A tree carrying bytes ``[offset, offset + nbytes)`` of buffer ``buffer``.

    With ``segment_size`` the bytes travel in segments of that size (the last may be shorter)
    and every node forwards a segment as soon as it has it: a pipelined broadcast.  A flow of
    0 bytes still sends one empty message along every edge (a synchronisation).

    ``relays`` lists the tree edges that go through other nodes, store and forward, as paths
    ``(parent, relay, ..., child)``: on a platform where only neighbours talk (the
    ``one_port`` models) every node of the path receives each segment and sends it on
    (Beaumont et al. 2004, Alg. 4).  JSON: ``"relays": [["0", "2", "5"], ...]``.
    """

    tree: Tree
    nbytes: int
    offset: int = 0
    buffer: int = 0
    segment_size: int | None = None
    relays: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.tree, Tree):
            raise ScheduleError(f"flow.tree: must be a Tree, got {_kind(self.tree)}")
        for name, kind in (("nbytes", "size"), ("offset", "size"), ("buffer", "count")):
            object.__setattr__(self, name, _count(getattr(self, name), kind, f"flow.{name}"))
        if self.segment_size is not None:
            seg = _count(self.segment_size, "size", "flow.segment_size", positive=True)
            object.__setattr__(self, "segment_size", seg)
        object.__setattr__(self, "relays", _relays(self.relays, self.tree))

    def relay_of(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """``(parent, child) -> (relay, ...)``: the nodes between, for each relayed edge."""
        return {(path[0], path[-1]): path[1:-1] for path in self.relays}

    @property
    def chunks(self) -> int:
        """How many messages (segments) the flow cuts its bytes into: at least one."""
        if self.nbytes == 0 or not self.segment_size:
            return 1
        return -(-self.nbytes // self.segment_size)

    def segments(self) -> list[tuple[int, int]]:
        """``(offset, nbytes)`` of each segment, in order; at least one."""
        step = self.segment_size or self.nbytes
        if self.nbytes == 0:
            return [(self.offset, 0)]
        return [(self.offset + k, min(step, self.nbytes - k)) for k in range(0, self.nbytes, step)]

    def to_dict(self) -> dict[str, Any]:
        out = self.tree.to_dict()
        out.update(nbytes=self.nbytes, offset=self.offset, buffer=self.buffer)
        if self.segment_size is not None:
            out["segment_size"] = self.segment_size
        if self.relays:
            out["relays"] = [list(path) for path in self.relays]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "flow") -> Flow:
        data = _mapping(data, where)
        _only(data, _FLOW_KEYS, where)
        try:
            return cls(
                Tree.from_dict(data, where),
                _required(data, "nbytes", where),
                data.get("offset", 0),
                data.get("buffer", 0),
                data.get("segment_size"),
                _relay_paths(data.get("relays", ()), f"{where}.relays"),
            )
        except ScheduleError as exc:  # name the flow: "flows[2].nbytes: ..."
            raise ScheduleError(str(exc).replace("flow.", f"{where}.", 1)) from None


@dataclass(frozen=True)
class Hypercube:
    """A hypercube embedding: which node sits at each position, and how the rest fold in.

    Every rank runs Foster's hypercube algorithm (Figueira & Reddi, Sec. 3): at step
    ``i = 0 .. dims-1`` the node at position ``p`` exchanges its state with the node at
    position ``p XOR 2**i`` and combines what it receives into its state.

    Parameters
    ----------
    positions : sequence of str
        The node at each cube position; ``2**dims`` distinct ids.
    folds : sequence of (str, str)
        ``(extra, partner)`` pairs for member counts that are not powers of two: ``extra`` is
        not in the cube; it sends its contribution to ``partner`` (a cube node, at most one
        extra each) before the cube and receives the result from it afterwards.
    combine : str
        ``"concat"`` for an allgather, ``"none"`` for a barrier, else the reduction operator of
        an allreduce (one of :data:`REDUCE_OPS`).
    """

    positions: tuple[str, ...]
    folds: tuple[tuple[str, str], ...] = ()
    combine: str = "sum"

    def __post_init__(self) -> None:
        for name in ("positions", "folds"):
            if isinstance(getattr(self, name), str | bytes):
                raise ScheduleError(f"hypercube.{name}: must be a list, not a string")
            if not isinstance(getattr(self, name), list | tuple):
                raise ScheduleError(
                    f"hypercube.{name}: must be a list, got {_kind(getattr(self, name))}"
                )
        pos = _ids(self.positions, "hypercube.positions")
        for k, pair in enumerate(self.folds):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ScheduleError(f"hypercube.folds[{k}]: must be an [extra, partner] pair")
        folds = tuple(_ids(pair, f"hypercube.folds[{k}]") for k, pair in enumerate(self.folds))
        object.__setattr__(self, "positions", pos)
        object.__setattr__(self, "folds", folds)
        n = len(pos)
        if n == 0 or n & (n - 1):
            raise ScheduleError(
                f"hypercube.positions: need a power of two of nodes (1, 2, 4, ...), got {n}"
            )
        seen: set[str] = set()
        for k, node in enumerate(pos):
            if node in seen:
                raise ScheduleError(f"hypercube.positions[{k}]: node {node!r} appears twice")
            seen.add(node)
        partners: set[str] = set()
        for k, (extra, partner) in enumerate(folds):
            if extra in seen:
                raise ScheduleError(
                    f"hypercube.folds[{k}]: extra node {extra!r} is already in the cube or folded"
                )
            if partner not in pos:
                raise ScheduleError(
                    f"hypercube.folds[{k}]: partner {partner!r} must be a node of the cube"
                )
            if partner in partners:
                raise ScheduleError(
                    f"hypercube.folds[{k}]: partner {partner!r} already has an extra node"
                )
            seen.add(extra)
            partners.add(partner)
        ops = (*REDUCE_OPS, "concat", "none")
        if not isinstance(self.combine, str) or self.combine not in ops:
            raise ScheduleError(
                f"hypercube.combine: unknown operator {self.combine!r}; choose from: "
                + ", ".join(ops)
            )

    @property
    def dims(self) -> int:
        """Dimension of the cube: ``log2(len(positions))``."""
        return len(self.positions).bit_length() - 1

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every participant: the cube in position order, then the extras in fold order."""
        return self.positions + tuple(e for e, _ in self.folds)

    def partner(self, position: int, step: int) -> str:
        """The node that the node at ``position`` exchanges with at ``step``."""
        return self.positions[position ^ (1 << step)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dims": self.dims,
            "positions": list(self.positions),
            "folds": [list(f) for f in self.folds],
            "combine": self.combine,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hypercube:
        data = _mapping(data, "hypercube")
        _only(data, _HYPERCUBE_KEYS, "hypercube")
        cube = cls(
            _required(data, "positions", "hypercube"),
            data.get("folds", ()),
            data.get("combine", "sum"),
        )
        if "dims" in data and (isinstance(data["dims"], bool) or not isinstance(data["dims"], int)):
            raise ScheduleError(f"hypercube.dims: must be an integer, got {_kind(data['dims'])}")
        if "dims" in data and data["dims"] != cube.dims:
            raise ScheduleError(
                f"hypercube.dims: is {data['dims']!r} but {len(cube.positions)} positions "
                f"make a cube of dimension {cube.dims}"
            )
        return cube

    def program(self, nbytes: int) -> Program:
        """Lower to per-rank ops; ``nbytes`` is each member's contribution (see
        :meth:`Schedule.program` for the layout).

        A chunk is a state: the combination of the contributions of its ``origin``, listed in
        *cube order* (positions in order, each partner followed by its extra), so that the
        state of a subcube is its lower half's state followed by its upper half's.
        """
        extra_of = {p: e for e, p in self.folds}
        chunks: list[Chunk] = []
        states: dict[tuple[int, int], int] = {}

        def new_chunk(origin: tuple[str, ...]) -> int:
            if self.combine == "none":
                size = 0
            elif self.combine == "concat":
                size = nbytes * len(origin)
            else:
                size = nbytes
            chunks.append(Chunk(0, 0, size, origin))
            return len(chunks) - 1

        def state(p: int, level: int) -> int:
            # what the node at position p holds before step `level` (after its fold-in): the
            # contributions of its subcube (positions equal to p above bit `level`) and extras
            key = (level, p >> level)
            if key not in states:
                node = self.positions[p]
                if level == 0 and node not in extra_of:
                    states[key] = own[node]
                elif level == 0:
                    states[key] = new_chunk((node, extra_of[node]))
                else:
                    low = chunks[state(p & ~(1 << (level - 1)), level - 1)].origin
                    high = chunks[state(p | (1 << (level - 1)), level - 1)].origin
                    states[key] = new_chunk(low + high)
            return states[key]

        own = {node: new_chunk((node,)) for node in self.nodes}
        ops: dict[str, tuple[Op, ...]] = {}
        for p, node in enumerate(self.positions):
            mine: list[Op] = []
            prev: tuple[int, ...] = ()
            if node in extra_of:  # fold in: the extra's contribution first
                extra = extra_of[node]
                mine.append(Op("recv_reduce", extra, own[extra], (), state(p, 0)))
                prev = (0,)
            for step in range(self.dims):
                q = p ^ (1 << step)
                peer = self.positions[q]
                mine.append(Op("send", peer, state(p, step), prev))
                mine.append(Op("recv_reduce", peer, state(q, step), prev, state(p, step + 1)))
                prev = (len(mine) - 1,)
            if node in extra_of:  # fold out: the result back to the extra
                mine.append(Op("send", extra_of[node], state(p, self.dims), prev))
            ops[node] = tuple(mine)
        for extra, partner in self.folds:
            ops[extra] = (
                Op("send", partner, own[extra]),
                Op("recv", partner, state(0, self.dims)),
            )
        initial = {node: frozenset({own[node]}) for node in self.nodes}
        return Program(ops, tuple(chunks), initial)


@dataclass(frozen=True)
class Chunk:
    """The unit a single message carries: a byte range of one buffer, or a combined state.

    Without ``origin``, bytes ``[offset, offset + nbytes)`` of buffer ``buffer``.  With
    ``origin`` (hypercube schedules), the combination of the contributions of the ``origin``
    nodes, in cube order (:meth:`Hypercube.program`): their reduction (allreduce,
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
        return Program(ops, chunks, initial)

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
                    if not _depends_on(ops, i, bringers):
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


@dataclass(frozen=True)
class Schedule:
    """What a planner returns: a collective as flows over ordered trees, or a hypercube.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    algorithm : str
        The planner that produced it.
    nbytes : int
        Message size per buffer, in bytes.
    flows : sequence of Flow
        The trees; flows of one buffer share root and members and partition its bytes.
        Empty for a hypercube schedule.
    params : mapping
        The planner options used, for provenance (JSON-serialisable).
    model : str or mapping, optional
        The cost model the planner planned for (``CostModel.to_spec()``), for provenance.
    hypercube : Hypercube, optional
        For ``allreduce``, ``allgather`` and ``barrier``: the embedding every member runs the
        hypercube algorithm on (then ``flows`` is empty); ``nbytes`` is each member's
        contribution (0 for a barrier).
    order : mapping, optional
        For several flows: ``order[node]`` lists ``(flow index, child)`` pairs, every send of
        ``node`` across its flows, in the order it should issue them (a planner that
        interleaves trees on shared senders says so here).  Without it a node's sends go
        flow by flow.  It describes one *period*: a pair listed ``m`` times stands for ``m``
        consecutive segments of its flow, so the ``j``-th listing in period ``p`` sends
        segment ``p m + j`` (a multi-tree schedule whose trees carry different numbers of
        slices per period; ``m = 1``: segment by segment).  A listing may carry a third
        element, a *lag* ``d >= 0``: it sends in period ``p`` the segment of period
        ``p - d`` (a node forwards what it received in an earlier period: a periodic
        timetable whose transfers of one slice do not all fit in one period).  With a fourth
        element, a *slot* (the transfer's rank in one period of a timetable, the same
        number at its sender and receiver), ``order`` is a **timetable**: every node also
        receives in slot order, and its sends, and its receives, each run strictly one
        after the other in that order (each depends on the previous one), so the ports
        follow the timetable's order and the period it achieves is at most the
        timetable's (a self-timed execution of a feasible periodic schedule).
    """

    collective: str
    algorithm: str
    nbytes: int
    flows: tuple[Flow, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    model: Any = None
    hypercube: Hypercube | None = None
    order: Mapping[str, tuple[tuple[int, str], ...]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.flows, list | tuple):
            raise ScheduleError(f"flows: must be a list of Flow, got {_kind(self.flows)}")
        object.__setattr__(self, "flows", tuple(self.flows))
        for k, f in enumerate(self.flows):
            if not isinstance(f, Flow):
                raise ScheduleError(f"flows[{k}]: must be a Flow, got {_kind(f)}")
        if not isinstance(self.params, Mapping):
            raise ScheduleError(f"params: must be an object, got {_kind(self.params)}")
        object.__setattr__(self, "params", dict(self.params))
        if not isinstance(self.collective, str) or self.collective not in COLLECTIVES:
            raise ScheduleError(
                f"unknown collective {self.collective!r}; choose from: {', '.join(COLLECTIVES)}"
            )
        if not isinstance(self.algorithm, str):
            raise ScheduleError(f"algorithm: must be a string, got {_kind(self.algorithm)}")
        object.__setattr__(self, "nbytes", _count(self.nbytes, "size", "nbytes"))
        if self.model is not None:
            object.__setattr__(self, "model", _model_spec(self.model))
        if self.order is not None:
            object.__setattr__(self, "order", _order(self.order, len(self.flows)))
        if self.hypercube is not None:
            self._check_hypercube()
            return
        if not self.flows:
            raise ScheduleError("a schedule needs at least one flow")
        self._check_buffers()
        chunks = sum(f.chunks for f in self.flows)
        if chunks > MAX_CHUNKS:
            raise ScheduleError(
                f"segment_size: {self.nbytes} bytes in segments of "
                f"{self.flows[0].segment_size} bytes make {chunks} messages, more than "
                f"{MAX_CHUNKS} per schedule; use larger segments"
            )
        if self.order is not None:
            self._check_order()

    @property
    def timetable(self) -> bool:
        """Whether ``order`` is a timetable (its listings carry slots): see ``order``."""
        return bool(self.order) and any(len(p) == 4 for seq in self.order.values() for p in seq)

    def _check_order(self) -> None:
        if self.timetable:
            if any(len(p) != 4 for seq in self.order.values() for p in seq):
                raise ScheduleError("order: a timetable gives [flow, child, lag, slot] everywhere")
            if any(f.relays for f in self.flows):
                raise ScheduleError("order: a timetable cannot have relayed edges")
        edges: dict[str, set[tuple[int, str]]] = {}
        for fi, flow in enumerate(self.flows):
            for parent, kids in flow.tree.children.items():
                edges.setdefault(parent, set()).update((fi, c) for c in kids)
        times: dict[int, int] = {}  # a flow's sends per period: the same on each of its edges
        for node, pairs in self.order.items():
            if {p[:2] for p in pairs} != edges.get(node, set()):
                raise ScheduleError(
                    f"order[{node!r}]: must list each (flow, child) send of {node!r} (and no other)"
                )
            for (fi, child), m in Counter(p[:2] for p in pairs).items():
                if times.setdefault(fi, m) != m:
                    raise ScheduleError(
                        f"order[{node!r}]: lists ({fi}, {child!r}) {m} time(s) but other sends"
                        f" of flow {fi} {times[fi]} time(s); a flow sends as many segments"
                        " per period on each of its edges"
                    )

    def _check_hypercube(self) -> None:
        cube = self.hypercube
        if not isinstance(cube, Hypercube):
            raise ScheduleError(f"hypercube: expected a Hypercube, got {type(cube).__name__}")
        if self.flows:
            raise ScheduleError("a hypercube schedule has no flows")
        if self.collective not in HYPERCUBE_COLLECTIVES:
            raise ScheduleError(
                f"a hypercube plans {', '.join(HYPERCUBE_COLLECTIVES)}, not {self.collective!r}"
            )
        expected = {"allgather": ("concat",), "barrier": ("none",)}.get(self.collective, REDUCE_OPS)
        if cube.combine not in expected:
            raise ScheduleError(
                f"hypercube.combine: an {self.collective} combines with "
                f"{' or '.join(expected) if len(expected) < 3 else 'a reduction operator'}, "
                f"got {cube.combine!r}"
            )
        if self.collective == "barrier" and self.nbytes:
            raise ScheduleError(f"nbytes: a barrier moves no data, got {self.nbytes}")

    def _check_buffers(self) -> None:
        by_buffer: dict[int, list[Flow]] = {}
        for f in self.flows:
            by_buffer.setdefault(f.buffer, []).append(f)
        many = self.collective == "multi_multicast"
        for k, f in enumerate(self.flows):
            if f.buffer >= len(by_buffer) or (f.buffer and not many):
                raise ScheduleError(
                    f"flows[{k}].buffer: is {f.buffer} but "
                    + (
                        f"the schedule moves {len(by_buffer)} buffers, numbered from 0"
                        if many
                        else f"a {self.collective} moves one buffer, number 0"
                    )
                )
        for b, flows in by_buffer.items():
            first = flows[0].tree
            for f in flows[1:]:
                if f.tree.root != first.root or set(f.tree.nodes) != set(first.nodes):
                    raise ScheduleError(
                        f"buffer {b}: its flows must share the root and the members"
                    )
            covered = 0
            for f in sorted(flows, key=lambda f: f.offset):
                if f.offset != covered:
                    raise ScheduleError(
                        f"buffer {b}: flows must partition bytes [0, {self.nbytes}); "
                        f"gap or overlap at byte {min(covered, f.offset)}"
                    )
                covered += f.nbytes
            if covered != self.nbytes:
                raise ScheduleError(
                    f"buffer {b}: flows cover {covered} bytes, the message has {self.nbytes}"
                )

    # -- views --------------------------------------------------------------------------------

    @property
    def buffers(self) -> tuple[int, ...]:
        return tuple(sorted({f.buffer for f in self.flows}))

    @property
    def roots(self) -> dict[int, str]:
        """Root (source) of each buffer (none for a hypercube schedule)."""
        return {f.buffer: f.tree.root for f in self.flows}

    @property
    def root(self) -> str:
        """The root of buffer 0 (the source of a broadcast or multicast)."""
        if self.hypercube is not None:
            raise ScheduleError(f"an {self.collective} over a hypercube has no root")
        return self.roots[min(self.roots)]

    def members(self, buffer: int = 0) -> tuple[str, ...]:
        """Nodes taking part in ``buffer``'s collective, root first."""
        if self.hypercube is not None and buffer == 0:
            return self.hypercube.nodes
        for f in self.flows:
            if f.buffer == buffer:
                return f.tree.nodes
        raise ScheduleError(f"buffer {buffer!r}: no such buffer (the schedule has {self.buffers})")

    @property
    def participants(self) -> tuple[str, ...]:
        """Every node with something to do, in order of first appearance."""
        if self.hypercube is not None:
            return self.hypercube.nodes
        if len(self.flows) == 1:
            return self.flows[0].tree.nodes
        seen: dict[str, None] = {}
        for f in self.flows:
            seen.update(dict.fromkeys(f.tree.nodes))
        for f in self.flows:  # relays that are not members of the tree still work
            for path in f.relays:
                seen.update(dict.fromkeys(path))
        return tuple(seen)

    @property
    def tree(self) -> Tree:
        """The tree of a single-flow schedule."""
        if self.hypercube is not None:
            raise ScheduleError("a hypercube schedule has no tree; use .hypercube")
        if len(self.flows) != 1:
            raise ScheduleError("this schedule has several flows; use .flows")
        return self.flows[0].tree

    # -- lowering -----------------------------------------------------------------------------

    def program(self) -> Program:
        """Lower to per-rank ordered ops (see the module docstring for the execution rules).

        Each rank first posts every receive (so data can stream in while it forwards), then
        sends segment by segment, flow by flow, child by child: a sender forwards segment
        ``k`` to all its children before segment ``k + 1``.

        A hypercube schedule lowers to, for the node at position ``p`` and each step ``i``
        with partner ``q = p XOR 2**i``: ``send(q, state_i(p))`` and
        ``recv_reduce(q, state_i(q), result=state_{i+1}(p))``, both depending on the
        previous ``recv_reduce`` (so the receive is posted when the rank is ready, and the
        exchange starts when both are: Figueira & Reddi's ``calc_cost``).  A partner first
        ``recv_reduce``s its extra's contribution and ends by sending it the result; an
        extra sends its contribution and receives the result (see :meth:`Hypercube.program`).
        """
        if self.hypercube is not None:
            return self.hypercube.program(self.nbytes)
        if len(self.flows) == 1 and not self.order and not self.flows[0].relays:
            return self._tree_program(self.flows[0])
        chunks: list[Chunk] = []
        timetable = self.timetable
        recvs: dict[str, list[Op]] = {}
        recv_keys: dict[str, list[tuple]] = {}
        # a send: (sort key, chunk, receiver, index of the recv it depends on in its rank or
        # None for a chunk held from the start, whether it forwards a relay copy)
        sends: dict[str, list[tuple[tuple, int, str, tuple]]] = {}
        initial: dict[str, set[int]] = {}
        for fi, flow in enumerate(self.flows):
            base = len(chunks)
            segs = flow.segments()
            chunks += [Chunk(flow.buffer, off, n) for off, n in segs]
            parent = flow.tree.parent()
            via = flow.relay_of()
            key = self._send_key(fi, flow)
            initial.setdefault(flow.tree.root, set()).update(range(base, base + len(segs)))
            for node in (*flow.tree.nodes, *(r for path in flow.relays for r in path)):
                recvs.setdefault(node, [])
                sends.setdefault(node, [])
                recv_keys.setdefault(node, [])
            for node in flow.tree.nodes:
                up = parent.get(node)
                if up is not None and (up, node) not in via:
                    recvs[node] += [Op("recv", up, base + k) for k in range(len(segs))]
                    if timetable:
                        ci = flow.tree.children[up].index(node)
                        recv_keys[node] += [key(up, k, ci, node) for k in range(len(segs))]
                for ci, child in enumerate(flow.tree.children.get(node, ())):
                    for k in range(len(segs)):
                        hops = via.get((node, child))
                        if not hops:
                            sends[node].append((key(node, k, ci, child), base + k, child, ()))
                            continue
                        copy = len(chunks)
                        chunks.append(Chunk(flow.buffer, *segs[k], copy_of=base + k))
                        sends[node].append((key(node, k, ci, child), copy, hops[0], ()))
                        path = (node, *hops, child)
                        for h, relay in enumerate(hops, start=1):
                            recvs[relay].append(Op("recv", path[h - 1], copy))
                            # after the relay's own sends of that segment
                            later = (k, fi, 1 << 30, ci, h)
                            sends[relay].append((later, copy, path[h + 1], (copy,)))
                        recvs[child].append(Op("recv", hops[-1], copy, (), base + k))
        ops: dict[str, tuple[Op, ...]] = {}
        for node, rlist in recvs.items():
            if timetable:  # receives in slot order, each posted when the previous completed
                ranked = sorted(range(len(rlist)), key=lambda i: recv_keys[node][i])
                rlist = [
                    Op("recv", rlist[i].peer, rlist[i].chunk, (j - 1,) if j else ())
                    for j, i in enumerate(ranked)
                ]
            where: dict[int, int] = {}
            for i, op in enumerate(rlist):
                where[op.chunk if op.result is None else op.result] = i
                if op.result is not None:
                    where.setdefault(op.chunk, i)
            slist: list[Op] = []
            for _, chunk, peer, _copy in sorted(sends[node], key=lambda x: x[0]):
                held = chunk if chunks[chunk].copy_of is None or _copy else chunks[chunk].copy_of
                dep = where.get(held)
                deps = () if dep is None else (dep,)
                if timetable and slist:  # strictly after the previous send
                    deps = (*deps, len(rlist) + len(slist) - 1)
                slist.append(Op("send", peer, chunk, deps))
            ops[node] = tuple(rlist) + tuple(slist)
        return Program(ops, tuple(chunks), {k: frozenset(v) for k, v in initial.items()})

    def _send_key(self, fi: int, flow: Flow):
        """The sort key of a node's send of segment ``k`` of flow ``fi`` to its ``ci``-th
        child: segment first, then flow and child order; with an ``order`` for the node,
        period first (``k // m`` for a pair listed ``m`` times), then the position of its
        ``(k % m)``-th listing."""
        listed: dict[str, dict[str, list[tuple[int, int]]]] = {}
        if self.order:
            for node, pairs in self.order.items():
                for pos, pair in enumerate(pairs):
                    if pair[0] == fi:
                        lag = pair[2] if len(pair) > 2 else 0
                        slot = pair[3] if len(pair) > 3 else pos
                        listed.setdefault(node, {}).setdefault(pair[1], []).append((slot, lag))

        def key(node: str, k: int, ci: int, child: str) -> tuple:
            places = listed.get(node, {}).get(child)
            if not places:
                return (k, fi, ci)
            m = len(places)
            slot, lag = places[k % m]
            return (k // m + lag, slot, 0)

        return key

    @staticmethod
    def _tree_program(flow: Flow) -> Program:
        """:meth:`program` for a single flow (no sort needed: chunk ``k`` is segment ``k``,
        received by op ``k`` of a non-root node)."""
        segs = flow.segments()
        nseg = len(segs)
        chunks = tuple(Chunk(flow.buffer, off, n) for off, n in segs)
        tree = flow.tree
        parent = tree.parent()
        children = tree.children
        ops: dict[str, tuple[Op, ...]] = {}
        segments = range(nseg)
        for node in tree.nodes:
            up = parent.get(node)
            kids = children.get(node, ())
            if up is None:
                ops[node] = tuple([Op("send", c, k) for k in segments for c in kids])
            elif kids:
                ops[node] = tuple([Op("recv", up, k) for k in segments]) + tuple(
                    [Op("send", c, k, (k,)) for k in segments for c in kids]
                )
            else:
                ops[node] = tuple([Op("recv", up, k) for k in segments])
        return Program(ops, chunks, {tree.root: frozenset(segments)})

    def validate(self, platform=None, members: Iterable[str] | None = None) -> None:
        """Check the schedule; with ``platform``, that it does its job there.

        Parameters
        ----------
        platform : Platform, optional
            Every node the schedule names must be one of its nodes, and a ``bcast`` must
            deliver to every one of them (see :meth:`check_delivery`).
        members : iterable of str, optional
            Nodes that must receive (the member set of a multicast it is run on).

        Raises
        ------
        ScheduleError
            Naming the first node that receives nothing, the first op sent before its data
            is held, a deadlock, ...
        UnknownNodeError
            A node the platform does not have.
        """
        if platform is not None or members is not None:
            check_delivery(self, platform, members)
        self.program().validate()

    def check_delivery(self, platform=None, members: Iterable[str] | None = None) -> None:
        """See :func:`check_delivery`."""
        check_delivery(self, platform, members)

    def _check_delivery(self, platform, members) -> None:
        if platform is not None:
            platform.indices(self.participants)
        required: list[tuple[str, Sequence[str]]] = []
        if platform is not None and self.collective == "bcast":
            required.append((f"a bcast on a platform of {len(platform)} nodes", platform.ids))
        if members is not None:
            if isinstance(members, str):
                members = [members]
            required.append((f"an {self.collective} to these members", list(members)))
        for what, nodes in required:
            for buffer in self.buffers or (0,):
                reached = set(self.members(buffer))
                missing = next((n for n in nodes if n not in reached), None)
                if missing is not None:
                    of = f"buffer {buffer} of " if len(self.buffers) > 1 else ""
                    raise ScheduleError(
                        f"node {missing!r} receives nothing: {what} must reach every one, "
                        f"{of}this {self.algorithm!r} schedule reaches {len(reached)}"
                    )

    # -- serialisation ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "collective": self.collective,
            "algorithm": self.algorithm,
            "nbytes": self.nbytes,
        }
        if self.model is not None:
            out["model"] = self.model
        out["params"] = dict(self.params)
        out["flows"] = [f.to_dict() for f in self.flows]
        if self.hypercube is not None:
            out["hypercube"] = self.hypercube.to_dict()
        if self.order is not None:
            out["order"] = {n: [list(p) for p in pairs] for n, pairs in self.order.items()}
        return out

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Schedule:
        """Read a schedule written by :meth:`to_dict`.

        Every field is checked, and a field the format does not have is an error (a typo
        would otherwise be ignored); :class:`ScheduleError` names the culprit
        (``flows[0].children['1']: must be a list of node ids, got a string '2345678'``).
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ScheduleError(f'not a hetcoll schedule (expected "format": "{FORMAT}")')
        version = data.get("version")
        if isinstance(version, bool) or version != VERSION:
            raise ScheduleError(f"unsupported schedule version {version!r}")
        _only(data, _SCHEDULE_KEYS, "")
        flows = data.get("flows", [])
        if not isinstance(flows, list):
            raise ScheduleError(f"flows: must be a list, got {_kind(flows)}")
        return cls(
            _required(data, "collective", ""),
            _required(data, "algorithm", ""),
            _required(data, "nbytes", ""),
            tuple(Flow.from_dict(f, f"flows[{k}]") for k, f in enumerate(flows)),
            data.get("params", {}),
            data.get("model"),
            Hypercube.from_dict(data["hypercube"]) if "hypercube" in data else None,
            data.get("order"),
        )

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        from .files import parse_document

        return cls.from_dict(parse_document(text, "json", ScheduleError))

    @staticmethod
    def concurrent(schedules: Sequence[Schedule], algorithm: str | None = None) -> Schedule:
        """Several schedules run at the same time (multiple multicast): one buffer each.

        Their flows are renumbered onto buffers ``0..k-1`` in the given order; every schedule
        must have the same message size.
        """
        if not schedules:
            raise ScheduleError("concurrent: no schedules given")
        for k, s in enumerate(schedules):
            if not isinstance(s, Schedule):
                raise TypeError(f"concurrent: schedules[{k}] is not a Schedule: {s!r}")
        sizes = {s.nbytes for s in schedules}
        if len(sizes) != 1:
            raise ScheduleError(f"concurrent: schedules have different sizes {sorted(sizes)}")
        flows = []
        for b, s in enumerate(schedules):
            if len(s.buffers) != 1:
                raise ScheduleError("concurrent: each schedule must move a single buffer")
            flows += [Flow(f.tree, f.nbytes, f.offset, b, f.segment_size) for f in s.flows]
        names = sorted({s.algorithm for s in schedules})
        return Schedule(
            "multi_multicast",
            algorithm or "+".join(names),
            schedules[0].nbytes,
            tuple(flows),
            {"parts": [s.params for s in schedules]},
            schedules[0].model,
        )


def check_delivery(schedule: Schedule, platform=None, members: Iterable[str] | None = None) -> None:
    """Check that ``schedule`` delivers where it must: every node it names is one of
    ``platform``'s, a ``bcast`` reaches every node of ``platform``, and every buffer reaches
    every one of ``members``.

    Raises :class:`ScheduleError` naming the first node (in platform order, or in ``members``
    order) that receives nothing, :class:`~hetcoll.errors.UnknownNodeError` for a node the
    platform does not have, ``TypeError`` for arguments of the wrong kind.  O(N + size of the
    trees).
    """
    from .platform import Platform

    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule: expected a Schedule, got {type(schedule).__name__}")
    if platform is not None and not isinstance(platform, Platform):
        raise TypeError(f"platform: expected a Platform, got {type(platform).__name__}")
    schedule._check_delivery(platform, members)


def _model_spec(model: Any) -> str | dict[str, Any]:
    """The canonical spec of a provenance model (``"tini"``, ``{"name": "postal", ...}``)."""
    from .models import get_model  # models -> platform -> ...: late import avoids a cycle

    try:
        return get_model(model).to_spec()
    except HetcollError as exc:  # "model: ..." once, whatever get_model's message starts with
        raise ScheduleError(str(exc) if str(exc).startswith("model") else f"model: {exc}") from None


def _order(order: Any, nflows: int) -> dict[str, tuple[tuple, ...]]:
    """``order`` checked: node -> list of ``[flow index, child]`` pairs or
    ``[flow index, child, lag]`` triples."""
    order = _mapping(order, "order")
    out: dict[str, tuple[tuple[int, str], ...]] = {}
    for node, pairs in order.items():
        where = f"order[{node!r}]"
        if not isinstance(pairs, list | tuple):
            raise ScheduleError(f"{where}: must be a list of [flow, child] pairs")
        checked = []
        for k, pair in enumerate(pairs):
            if not isinstance(pair, list | tuple) or len(pair) not in (2, 3, 4):
                raise ScheduleError(
                    f"{where}[{k}]: must be [flow, child], [flow, child, lag] or "
                    "[flow, child, lag, slot]"
                )
            flow = _count(pair[0], "count", f"{where}[{k}][0]")
            if flow >= nflows:
                raise ScheduleError(f"{where}[{k}][0]: no flow {flow} (the schedule has {nflows})")
            item: tuple = (flow, _id(pair[1], f"{where}[{k}][1]"))
            extra = [_count(x, "count", f"{where}[{k}][{j}]") for j, x in enumerate(pair[2:], 2)]
            if len(extra) == 2 or (extra and extra[0]):
                item = (*item, *extra)
            checked.append(item)
        out[_id(node, "order")] = tuple(checked)
    return out


def _relay_paths(value: Any, where: str) -> tuple[tuple[str, ...], ...]:
    """``relays`` read from a document: a list of paths, each a list of node ids."""
    if not isinstance(value, list | tuple):
        raise ScheduleError(f"{where}: must be a list of paths (lists of node ids)")
    return tuple(_ids(path, f"{where}[{k}]") for k, path in enumerate(value))


def _relays(relays: Any, tree: Tree) -> tuple[tuple[str, ...], ...]:
    """``relays`` checked against ``tree``: each a path ``(parent, relay, ..., child)`` of a
    distinct tree edge through at least one other node, visiting no node twice."""
    if isinstance(relays, str) or not isinstance(relays, list | tuple):
        raise ScheduleError(f"flow.relays: must be a list of paths, got {_kind(relays)}")
    parent = tree.parent()
    out: list[tuple[str, ...]] = []
    seen: set[tuple[str, str]] = set()
    for k, path in enumerate(relays):
        path = _ids(path, f"flow.relays[{k}]")
        if len(path) < 3 or len(set(path)) != len(path):
            raise ScheduleError(
                f"flow.relays[{k}]: must be a path (parent, relay, ..., child) through at least "
                "one other node, visiting no node twice"
            )
        edge = (path[0], path[-1])
        if parent.get(path[-1]) != path[0]:
            raise ScheduleError(f"flow.relays[{k}]: {edge[0]!r} -> {edge[1]!r} is not a tree edge")
        if edge in seen:
            raise ScheduleError(f"flow.relays[{k}]: edge {edge[0]!r} -> {edge[1]!r} relayed twice")
        seen.add(edge)
        out.append(path)
    return tuple(out)
