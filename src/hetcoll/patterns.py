"""The communication patterns a :class:`~hetcoll.schedule.Schedule` is made of: ordered
trees (:class:`Tree`), flows of bytes along them (:class:`Flow`, pipelined in segments,
relayed through other nodes), hypercube embeddings (:class:`Hypercube`), and the entries
of a schedule's send order (:class:`OrderedSend`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._fields import count, kind_of, mapping, node_id, node_ids, only_keys, required
from .errors import ScheduleError

__all__ = ["FLOW_KINDS", "REDUCE_OPS", "UP_KINDS", "Flow", "Hypercube", "OrderedSend", "Tree"]

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
#: What a flow does along its tree: data down from the root (``bcast``, ``scatter``), up
#: towards it (``reduce``, ``gather``), or up to several owners that swap their partial
#: results and send the whole down (``exchange``); see :class:`Flow`.
FLOW_KINDS = ("bcast", "reduce", "gather", "scatter", "exchange")
#: The kinds whose data travel towards the root.
UP_KINDS = ("reduce", "gather")
#: The kinds whose segments may be of several sizes (a flow's ``cuts``).
CUT_KINDS = ("bcast", "reduce", "exchange")
_FLOW_KEYS = (
    "root",
    "children",
    "nbytes",
    "offset",
    "buffer",
    "segment_size",
    "relays",
    "kind",
    "peers",
    "cuts",
)
_HYPERCUBE_KEYS = ("dims", "positions", "folds", "combine")


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
                f"children, got {kind_of(self.children)}"
            )
        for p, cs in self.children.items():
            if not isinstance(cs, list | tuple):  # a string is not a list of one-letter ids
                raise ScheduleError(
                    f"tree rooted at {self.root!r}: children[{p!r}] must be a list of node "
                    f"ids, got {kind_of(cs)}"
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
        data = mapping(data, where)
        root = node_id(required(data, "root", where), f"{where}.root")
        raw = mapping(data.get("children", {}), f"{where}.children")
        children = {
            node_id(p, f"{where}.children"): node_ids(cs, f"{where}.children[{p!r}]")
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

    ``kind`` says which way the data go (JSON ``"kind"``, omitted for ``bcast``):

    - ``bcast``: the root's bytes down the tree (the default);
    - ``reduce``: every member's bytes ``[offset, offset + nbytes)`` up the tree, combined on
      the way: a node combines its children's partial results into its own, one at a time
      in the order ``children`` lists them, then sends its subtree's result to its parent
      (each segment on its own);
    - ``gather``: every member's block up the tree: a node sends its parent one message with
      the blocks of its whole subtree;
    - ``scatter``: the root's blocks down the tree: a node receives the blocks of its
      subtree and sends each child those of the child's subtree, in ``children`` order.

    - ``exchange`` (an allreduce's share): the *owners* are the root and ``peers`` (some of
      the root's children, listed first); each owner's *group* is its subtree without the
      other owners' (the root's: the rest of the tree).  Every segment is reduced up each
      group's tree to its owner as in a ``reduce`` flow, the owners send their group's
      partial result to every other owner at once and each combines the others' (every
      owner the same partials in one fixed order: the same bits), then each owner sends
      the result down its group's tree as in a ``bcast`` flow.  The WAN between two sites'
      owners is crossed once per segment each way, at the same time, where a ``reduce``
      then ``bcast`` flow crosses it with the partial result, then the result.  An
      exchange flow's ``cuts`` (JSON ``"cuts"``) may list its segments' sizes in order,
      summing to ``nbytes``, where they are not all of one size (``segment_size`` is then
      the largest): small first segments start the WAN early and small last ones end the
      broadcast early, the segments between large, few WAN latencies.  A ``bcast`` or
      ``reduce`` flow may have ``cuts`` too: ``forest`` starts a flow's pipeline with
      segments a quarter and a half of the others (:mod:`hetcoll.planners.forestplan`).

    A gather or scatter flow covers the whole *block buffer* (``offset`` 0, ``nbytes`` the
    sum of the members' blocks, no segments), laid out in the tree's preorder: a node's own
    block, then each child's subtree in ``children`` order, so that every subtree's blocks
    are one contiguous range (:func:`hetcoll.lowering.block_layout`).  ``relays`` paths are
    written parent first whichever way the data go.
    """

    tree: Tree
    nbytes: int
    offset: int = 0
    buffer: int = 0
    segment_size: int | None = None
    relays: tuple[tuple[str, ...], ...] = ()
    kind: str = "bcast"
    peers: tuple[str, ...] = ()
    cuts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.tree, Tree):
            raise ScheduleError(f"flow.tree: must be a Tree, got {kind_of(self.tree)}")
        if not isinstance(self.kind, str) or self.kind not in FLOW_KINDS:
            raise ScheduleError(
                f"flow.kind: unknown {self.kind!r}; choose from: {', '.join(FLOW_KINDS)}"
            )
        for name, kind in (("nbytes", "size"), ("offset", "size"), ("buffer", "count")):
            object.__setattr__(self, name, count(getattr(self, name), kind, f"flow.{name}"))
        if self.segment_size is not None:
            seg = count(self.segment_size, "size", "flow.segment_size", positive=True)
            object.__setattr__(self, "segment_size", seg)
        object.__setattr__(self, "relays", _relays(self.relays, self.tree))
        if self.kind in ("gather", "scatter") and (self.offset or self.segment_size):
            raise ScheduleError(
                f"flow: a {self.kind} flow covers its whole block buffer (offset 0) in one "
                "message per edge (no segment_size)"
            )
        self._check_peers()
        self._check_cuts()

    def _check_cuts(self) -> None:
        """``cuts``: an exchange, bcast or reduce flow's segment sizes, positive, summing
        to ``nbytes``, the largest its ``segment_size``."""
        if isinstance(self.cuts, str) or not isinstance(self.cuts, list | tuple):
            raise ScheduleError(f"flow.cuts: must be a list of sizes, got {kind_of(self.cuts)}")
        cuts = tuple(count(c, "size", "flow.cuts", positive=True) for c in self.cuts)
        object.__setattr__(self, "cuts", cuts)
        if not cuts:
            return
        if self.kind not in CUT_KINDS:
            raise ScheduleError(
                f"flow.cuts: only an exchange, bcast or reduce flow has cuts, not a {self.kind}"
            )
        if sum(cuts) != self.nbytes or self.segment_size != max(cuts):
            raise ScheduleError(
                f"flow.cuts: sizes summing to nbytes ({self.nbytes}), the largest the "
                f"segment_size ({self.segment_size}); got {list(cuts)}"
            )

    def _check_peers(self) -> None:
        """An ``exchange`` flow's ``peers``: distinct children of the root, listed first in
        its ``children``; no relays (an owner's partial crosses to each peer directly).
        Other kinds have none."""
        peers = node_ids(self.peers, "flow.peers")
        object.__setattr__(self, "peers", peers)
        if self.kind != "exchange":
            if peers:
                raise ScheduleError(
                    f"flow.peers: only an exchange flow has peers, not a {self.kind}"
                )
            return
        kids = self.tree.children.get(self.tree.root, ())
        if not peers or len(set(peers)) != len(peers) or kids[: len(peers)] != peers:
            raise ScheduleError(
                "flow.peers: an exchange flow's peers are distinct children of its root, at "
                "least one, listed first in its children"
            )
        if self.relays:
            raise ScheduleError("flow.relays: an exchange flow relays nothing")

    def owners(self) -> dict[str, tuple[str, ...]]:
        """An ``exchange`` flow's owners (the root, then ``peers``), each with its group
        (its subtree without the other owners', breadth-first in send order)."""
        owners = (self.tree.root, *self.peers)
        kids = self.tree.children
        out = {}
        for o in owners:
            group, todo = [], [o]
            while todo:
                v = todo.pop(0)
                group.append(v)
                todo += [c for c in kids.get(v, ()) if c not in owners]
            out[o] = tuple(group)
        return out

    @property
    def up(self) -> bool:
        """Whether the data travel towards the root (``reduce``, ``gather``)."""
        return self.kind in UP_KINDS

    def relay_of(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """``(parent, child) -> (relay, ...)``: the nodes between, for each relayed edge."""
        return {(path[0], path[-1]): path[1:-1] for path in self.relays}

    @property
    def chunks(self) -> int:
        """How many messages (segments) the flow cuts its bytes into: at least one."""
        if self.cuts:
            return len(self.cuts)
        if self.nbytes == 0 or not self.segment_size:
            return 1
        return -(-self.nbytes // self.segment_size)

    @property
    def hops(self) -> int:
        """Messages one segment takes: one per tree edge, one more per relay on the way (an
        ``exchange`` flow's: two per edge within a group, one per ordered pair of owners)."""
        edges = sum(map(len, self.tree.children.values()))
        if self.kind == "exchange":
            k = len(self.peers) + 1
            return 2 * (edges - k + 1) + k * (k - 1)
        return edges + sum(len(p) - 2 for p in self.relays)

    @property
    def transfers(self) -> int:
        """Messages the flow sends in all (``chunks * hops``): what its program and its
        simulation grow with."""
        return self.chunks * self.hops

    def segments(self) -> list[tuple[int, int]]:
        """``(offset, nbytes)`` of each segment, in order; at least one."""
        if self.cuts:
            starts = list(itertools.accumulate(self.cuts, initial=self.offset))[:-1]
            return list(zip(starts, self.cuts, strict=True))
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
        if self.kind != "bcast":
            out["kind"] = self.kind
        if self.peers:
            out["peers"] = list(self.peers)
        if self.cuts:
            out["cuts"] = list(self.cuts)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "flow") -> Flow:
        data = mapping(data, where)
        only_keys(data, _FLOW_KEYS, where)
        try:
            return cls(
                Tree.from_dict(data, where),
                required(data, "nbytes", where),
                data.get("offset", 0),
                data.get("buffer", 0),
                data.get("segment_size"),
                _relay_paths(data.get("relays", ()), f"{where}.relays"),
                data.get("kind", "bcast"),
                data.get("peers", ()),
                data.get("cuts", ()),
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
                    f"hypercube.{name}: must be a list, got {kind_of(getattr(self, name))}"
                )
        pos = node_ids(self.positions, "hypercube.positions")
        for k, pair in enumerate(self.folds):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ScheduleError(f"hypercube.folds[{k}]: must be an [extra, partner] pair")
        folds = tuple(node_ids(pair, f"hypercube.folds[{k}]") for k, pair in enumerate(self.folds))
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
        data = mapping(data, "hypercube")
        only_keys(data, _HYPERCUBE_KEYS, "hypercube")
        cube = cls(
            required(data, "positions", "hypercube"),
            data.get("folds", ()),
            data.get("combine", "sum"),
        )
        if "dims" in data and (isinstance(data["dims"], bool) or not isinstance(data["dims"], int)):
            raise ScheduleError(f"hypercube.dims: must be an integer, got {kind_of(data['dims'])}")
        if "dims" in data and data["dims"] != cube.dims:
            raise ScheduleError(
                f"hypercube.dims: is {data['dims']!r} but {len(cube.positions)} positions "
                f"make a cube of dimension {cube.dims}"
            )
        return cube


@dataclass(frozen=True, init=False)
class OrderedSend:
    """One entry of a node's send order (:attr:`hetcoll.schedule.Schedule.order`): a send of
    flow ``flow``'s segments to the child ``child``.

    ``lag >= 0``: in period ``p`` it sends the segment of period ``p - lag`` (a node
    forwards what it received in an earlier period).  ``slot``: the transfer's rank in one
    period of a timetable, the same number at its sender and receiver; None outside a
    timetable.  JSON: ``[flow, child]``, ``[flow, child, lag]`` (lag > 0) or
    ``[flow, child, lag, slot]``.
    """

    flow: int
    child: str
    lag: int = 0
    slot: int | None = None

    def __init__(self, flow: int, child: str, lag: int = 0, slot: int | None = None) -> None:
        # the generated __init__'s four object.__setattr__ calls, as one write of each
        # field (a multi-tree timetable makes 10^5 of these; frozen all the same)
        d = self.__dict__
        d["flow"], d["child"], d["lag"], d["slot"] = flow, child, lag, slot

    def to_list(self) -> list[int | str]:
        """The JSON form: the shortest list that says it."""
        if self.slot is not None:
            return [self.flow, self.child, self.lag, self.slot]
        if self.lag:
            return [self.flow, self.child, self.lag]
        return [self.flow, self.child]


def _relay_paths(value: Any, where: str) -> tuple[tuple[str, ...], ...]:
    """``relays`` read from a document: a list of paths, each a list of node ids."""
    if not isinstance(value, list | tuple):
        raise ScheduleError(f"{where}: must be a list of paths (lists of node ids)")
    return tuple(node_ids(path, f"{where}[{k}]") for k, path in enumerate(value))


def _relays(relays: Any, tree: Tree) -> tuple[tuple[str, ...], ...]:
    """``relays`` checked against ``tree``: each a path ``(parent, relay, ..., child)`` of a
    distinct tree edge through at least one other node, visiting no node twice."""
    if isinstance(relays, str) or not isinstance(relays, list | tuple):
        raise ScheduleError(f"flow.relays: must be a list of paths, got {kind_of(relays)}")
    parent = tree.parent()
    out: list[tuple[str, ...]] = []
    seen: set[tuple[str, str]] = set()
    for k, path in enumerate(relays):
        path = node_ids(path, f"flow.relays[{k}]")
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
