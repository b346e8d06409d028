"""The rooted family's common ground: a request (:func:`prepare_rooted`), the costs of a
tree's edges (:class:`EdgeCosts`), the time of a tree under the model's rules
(:class:`TreeTime`), the schedule of chosen trees (:func:`rooted_schedule`)
and every broadcast tree planner run backwards (:func:`from_broadcast`).

A *reduce* or *gather* is a tree whose data go up: every node sends once, to its parent,
after it has combined (reduce) or collected (gather) its children's messages; a *scatter*
goes down with messages that shrink: a node sends each child the blocks of the child's
subtree.  ``allreduce`` is a reduce then a broadcast from the same root, ``allgather`` a
gather then a broadcast of every block, ``reduce_scatter`` a reduce then a scatter.  The
times here follow the simulator's rules exactly wherever the model has no links to share
(``tini``, ``postal``, ``hockney`` on a matrix): a node's receive port (a model with one)
takes its incoming transfers in the order they are asked for, a node combines its children
in the order their results arrive (the order :meth:`TreeTime.listed` gives, which the
schedule keeps), and a sender sends to its children in Jackson's order (longest tail
first), which minimises its subtree's time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import BLOCK_COLLECTIVES, ROOTED_COLLECTIVES, Flow, Schedule, Tree
from ._common import Request, check_size, prepare
from ._registry import PlannerInfo

__all__ = [
    "ROOTED",
    "EdgeCosts",
    "RootedRequest",
    "TreeTime",
    "from_broadcast",
    "part_time",
    "prepare_rooted",
    "rooted_schedule",
    "rooted_time",
]

#: The rooted collectives a planner can be asked for.
ROOTED = tuple(ROOTED_COLLECTIVES)
#: The largest member set whose edge costs are kept as full matrices.
_MATRIX_LIMIT = 4096


@dataclass(frozen=True)
class RootedRequest:
    """A normalised request for a rooted collective.

    ``req`` is the tree request; ``fixed_root`` is False when no root was given (an
    ``allreduce``, ``allgather`` or ``reduce_scatter``, which end on every member): a
    planner may then choose it (``req.root`` is the member of lowest rank).
    ``sizes[i]`` is each member's block in bytes (node index -> bytes) for a collective of
    blocks, else ``nbytes`` each.
    """

    req: Request
    collective: str
    sizes: Mapping[int, int]
    fixed_root: bool = True

    @property
    def up(self) -> str | None:
        return ROOTED_COLLECTIVES[self.collective][0]

    @property
    def down(self) -> str | None:
        return ROOTED_COLLECTIVES[self.collective][1]

    @property
    def total(self) -> int:
        """Bytes of every block together (the block buffer)."""
        return int(sum(self.sizes.values()))

    def flow_bytes(self, kind: str) -> int:
        """Bytes a flow of ``kind`` covers: the vector of a reduce (the blocks of a
        reduce-scatter), the blocks of a gather, scatter or allgather's broadcast."""
        if kind in ("gather", "scatter") or self.collective in ("allgather", "reduce_scatter"):
            return self.total
        return self.req.nbytes

    def with_root(self, root: int) -> RootedRequest:
        from dataclasses import replace

        return replace(self, req=replace(self.req, root=root))


def prepare_rooted(
    platform: Platform,
    collective: str,
    root: str | None,
    members: Iterable[str] | None = None,
    model: Any = None,
    nbytes: int = 0,
    segment_size: int | None = None,
    sizes: Mapping[str, int] | None = None,
) -> RootedRequest:
    """Validate a rooted request: the collective, the root (may be None only for the
    collectives that end everywhere), the members, the block sizes (node id -> bytes, every
    member; only for a collective of blocks)."""
    if collective not in ROOTED_COLLECTIVES:
        raise PlannerError(f"collective: expected one of {', '.join(ROOTED)}, got {collective!r}")
    if root is None and collective in ("reduce", "gather", "scatter"):
        raise PlannerError(f"a {collective} needs a root")
    start = root if root is not None else _first(platform, members)
    req = prepare(platform, start, members, model, nbytes, segment_size)
    if req.segment_size and collective in ("gather", "scatter", "reduce_scatter"):
        raise PlannerError(f"segment_size: a {collective} sends each subtree in one message")
    if sizes is not None and collective not in BLOCK_COLLECTIVES:
        raise PlannerError(f"sizes: only a collective of blocks has them, not a {collective}")
    if sizes is None:
        per = dict.fromkeys(req.members, req.nbytes)
    else:
        if not isinstance(sizes, Mapping):
            raise PlannerError(f"sizes: must map node ids to bytes, got {sizes!r}")
        per = {}
        for node, n in sizes.items():
            i = platform.index(str(node))
            per[i] = check_size(n, f"sizes[{node!r}]")
        missing = [platform.ids[m] for m in req.members if m not in per]
        extra = [platform.ids[i] for i in per if i not in req.members]
        if missing or extra:
            raise PlannerError(
                "sizes: must give the block of every member and no other node; "
                + (f"{missing[0]!r} is missing" if missing else f"{extra[0]!r} is not a member")
            )
        per = {m: per[m] for m in req.members}
    return RootedRequest(req, collective, per, root is not None)


def _first(platform: Platform, members: Iterable[str] | None) -> str:
    """The member of lowest rank (the root a planner is handed when it may choose)."""
    if members is None:
        return platform.ids[0]
    from ._common import member_list

    names = member_list(members)
    if not names:
        raise PlannerError("members: empty; give at least one destination")
    return min(names, key=lambda m: platform.index(str(m)))


# -- edge costs -----------------------------------------------------------------------------


class EdgeCosts:
    """The model's costs of a transfer between two members, as ``a + bytes * b`` (every
    model here is affine in the size), from matrices over the members (local indices
    ``0 .. m-1`` in member order), kept as lists for quick scalar reads.

    ``busy(u, v, n)``: the sender's port; ``delay(u, v, n)``: until the receiver holds the
    data; ``recv(u, v, n)``: the receiver's port, ending at the arrival; ``combine(u, n)``:
    the node's combine cost (``n gamma``).  At the request's own size ``nbytes`` the values
    are the model's own (no rounding of ``a + n b``).
    """

    def __init__(self, rr: RootedRequest, nbytes: int) -> None:
        req = rr.req
        m = len(req.members)
        if m > _MATRIX_LIMIT:
            raise PlannerError(
                f"a rooted planner keeps {m} x {m} cost matrices; at most {_MATRIX_LIMIT} members"
            )
        idx = np.array(req.members, dtype=np.int64)
        u = np.repeat(idx, m)
        v = np.tile(idx, m)
        ref = max(int(nbytes), 1)
        base = req.bound.costs(u, v, np.zeros(m * m, dtype=np.int64))
        at = req.bound.costs(u, v, np.full(m * m, ref, dtype=np.int64))

        def pair(name: str) -> tuple[list, list, list]:
            a = np.asarray(getattr(base, name), float).reshape(m, m)
            b = np.asarray(getattr(at, name), float).reshape(m, m)
            return a.tolist(), ((b - a) / ref).tolist(), (b if nbytes else a).tolist()

        self.busy0, self.busy1, self.busy_n = pair("send_busy")
        self.delay0, self.delay1, self.delay_n = pair("delay")
        self.recv0, self.recv1, self.recv_n = pair("recv_busy")
        self.n = int(nbytes)
        self.gamma = np.asarray(req.platform.gamma, float)[idx].tolist()
        self.ports = any(x > 0 for row in self.recv_n for x in row) or any(
            x > 0 for row in self.recv1 for x in row
        )
        self.m = m

    def busy(self, u: int, v: int, n: int) -> float:
        if n == self.n:
            return self.busy_n[u][v]
        return self.busy0[u][v] + n * self.busy1[u][v]

    def delay(self, u: int, v: int, n: int) -> float:
        if n == self.n:
            return self.delay_n[u][v]
        return self.delay0[u][v] + n * self.delay1[u][v]

    def recv(self, u: int, v: int, n: int) -> float:
        if n == self.n:
            return self.recv_n[u][v]
        return self.recv0[u][v] + n * self.recv1[u][v]

    def combine(self, u: int, n: int) -> float:
        return n * self.gamma[u]


# -- the time of a tree ------------------------------------------------------------------------


class TreeTime:
    """The time of one part of a rooted collective on a tree: ``kind`` ``reduce`` or
    ``gather`` (up) or ``bcast`` or ``scatter`` (down), each node's value kept so that a
    change to the tree is re-timed along the changed nodes' ancestors only.

    Up, a node's value is when it has combined (collected) everything below it: each child
    sends once, when its own value is reached; the node's receive port (a model with one)
    takes the transfers in the order they are asked for (ties: lower local index), each
    starting once the port is free for its ``recv`` time; the node combines the arrived
    results one at a time in arrival order, ``nbytes gamma`` each (a gather: nothing).
    Down, a node's value is its subtree's time from when it holds its data: it sends to
    its children one after the other (``busy`` each) in Jackson's order, non-increasing
    ``delay - busy + child's value``, which minimises the latest completion (1||Lmax).
    A reduce and a broadcast carry ``nbytes`` on every edge; a gather and a scatter the
    blocks (``sizes``) of the child's subtree.  ``total`` is the root's value.
    """

    def __init__(
        self,
        costs: EdgeCosts,
        kind: str,
        root: int,
        children: Sequence[Sequence[int]],
        nbytes: int,
        sizes: Sequence[int] | None = None,
    ) -> None:
        self.costs, self.kind, self.root, self.nbytes = costs, kind, root, nbytes
        self.up = kind in ("reduce", "gather")
        self.sizes = list(sizes) if kind in ("gather", "scatter") else None
        self.children = [list(cs) for cs in children]
        m = len(self.children)
        # the costs at this part's own size (every edge of a reduce or broadcast)
        if nbytes == costs.n:
            self.delay_n, self.busy_n = costs.delay_n, costs.busy_n
        else:
            self.delay_n = [
                [a + nbytes * b for a, b in zip(r0, r1, strict=True)]
                for r0, r1 in zip(costs.delay0, costs.delay1, strict=True)
            ]
            self.busy_n = [
                [a + nbytes * b for a, b in zip(r0, r1, strict=True)]
                for r0, r1 in zip(costs.busy0, costs.busy1, strict=True)
            ]
        self.parent = [-1] * m
        for p, cs in enumerate(self.children):
            for c in cs:
                self.parent[c] = p
        self.value = [0.0] * m
        self.span = list(self.sizes) if self.sizes is not None else [nbytes] * m
        for v in _postorder(root, self.children):
            self.value[v], self.span[v], _ = self._node(v, self.children[v], self.value, self.span)

    @property
    def total(self) -> float:
        return self.value[self.root]

    def listed(self) -> list[list[int]]:
        """Each node's children in the order to list them (combine order up, send order
        down)."""
        return [
            self._node(v, cs, self.value, self.span, True)[2] for v, cs in enumerate(self.children)
        ]

    def _node(self, v, kids, value, span, order=False) -> tuple[float, int, list[int]]:
        """``v``'s value and subtree bytes from its children's, and (``order``) its
        children's order."""
        own = self.sizes[v] if self.sizes is not None else self.nbytes
        if not kids:
            return 0.0, own, []
        costs = self.costs
        blocks = self.sizes is not None
        if blocks:
            own += sum([span[c] for c in kids])
        if self.up:
            if not costs.ports:
                if blocks:
                    d0, d1 = costs.delay0, costs.delay1
                    arrive = [value[c] + d0[c][v] + span[c] * d1[c][v] for c in kids]
                else:
                    dn = self.delay_n
                    arrive = [value[c] + dn[c][v] for c in kids]
            else:
                arrive = self._port(v, kids, value, span)
            g = costs.combine(v, self.nbytes) if self.kind == "reduce" else 0.0
            if g == 0.0 and not order:
                return max(arrive), own, []
            t = 0.0
            ranked = sorted(zip(arrive, kids, strict=True))
            for a, _ in ranked:
                t = (a if a > t else t) + g
            return t, own, [c for _, c in ranked] if order else []
        if blocks:
            d0, d1, b0, b1 = costs.delay0, costs.delay1, costs.busy0, costs.busy1
            legs = [(d0[v][c] + span[c] * d1[v][c], b0[v][c] + span[c] * b1[v][c], c) for c in kids]
        else:
            dn, bn = self.delay_n, self.busy_n
            legs = [(dn[v][c], bn[v][c], c) for c in kids]
        ranked = sorted((b - d - value[c], c, d, b) for d, b, c in legs)  # Jackson's order
        t = done = 0.0
        for _, c, d, b in ranked:
            end = t + d + value[c]
            if end > done:
                done = end
            t += b
        return done, own, [c for _, c, _, _ in ranked] if order else []

    def _port(self, v, kids, value, span) -> list[float]:
        """Arrival of each child's message at ``v`` whose receive port takes the
        transfers in the order they are asked for (a model with receive ports)."""
        costs = self.costs
        blocks = self.sizes is not None
        arrive = {}
        free = -math.inf
        for c in sorted(kids, key=lambda c: (value[c], c)):
            n = span[c] if blocks else self.nbytes
            d = costs.delay(c, v, n)
            start = value[c]
            rb = costs.recv(c, v, n)
            if rb > 0:
                if free - d + rb > start:
                    start = free - d + rb
                free = start + d
            arrive[c] = start + d
        return [arrive[c] for c in kids]

    # -- changes --------------------------------------------------------------------------------

    def subtree(self, u: int) -> set[int]:
        out, stack = set(), [u]
        while stack:
            v = stack.pop()
            out.add(v)
            stack.extend(self.children[v])
        return out

    def try_move(self, u: int, b: int) -> float:
        """The total if ``u`` (and its subtree) hung under ``b`` (not below ``u``)."""
        a = self.parent[u]
        kids = {a: [c for c in self.children[a] if c != u], b: [*self.children[b], u]}
        return self._retime(kids, (a, b))

    def move(self, u: int, b: int) -> None:
        a = self.parent[u]
        self.children[a].remove(u)
        self.children[b].append(u)
        self.parent[u] = b
        self._commit((a, b))

    def try_splice(self, u: int, v: int) -> float:
        """The total if ``u`` alone moved under ``v`` (``u``'s children going to ``u``'s
        parent)."""
        kids, start = self._spliced(u, v)
        return self._retime(kids, start)

    def splice(self, u: int, v: int) -> None:
        kids, start = self._spliced(u, v)
        self._apply(kids, start)

    def _spliced(self, u: int, v: int) -> tuple[dict[int, list[int]], tuple[int, ...]]:
        a = self.parent[u]
        kids = {a: [c for c in self.children[a] if c != u] + self.children[u], u: []}
        kids[v] = [*kids.get(v, self.children[v]), u]
        return kids, (a, u, v)

    def _apply(self, kids: dict[int, list[int]], start) -> None:
        for v, cs in kids.items():
            self.children[v] = list(cs)
        for v, cs in kids.items():
            for c in cs:
                self.parent[c] = v
        self._commit(start)

    def try_swap(self, u: int, w: int) -> float:
        """The total if non-root members ``u`` and ``w`` traded places."""
        kids, start = self._swapped(u, w)
        return self._retime(kids, start)

    def swap(self, u: int, w: int) -> None:
        kids, start = self._swapped(u, w)
        self._apply(kids, start)

    def _swapped(self, u: int, w: int) -> tuple[dict[int, list[int]], tuple[int, ...]]:
        def f(x: int) -> int:
            return w if x == u else u if x == w else x

        touched = {u, w, self.parent[u], self.parent[w]}
        kids = {}
        for x in touched:  # the new children of every node whose children change
            old = self.children[f(x)] if x in (u, w) else self.children[x]
            kids[x] = [f(c) for c in old]
        return kids, tuple(sorted(touched))

    def _chain(self, kids: dict[int, list[int]], start) -> list[int]:
        """Nodes to re-time, deepest first: every changed node and its ancestors in the
        changed tree."""
        parent = {c: v for v, cs in kids.items() for c in cs}
        order: dict[int, int] = {}
        for s in start:
            path, x = [], s
            while x != -1:
                path.append(x)
                x = parent.get(x, self.parent[x]) if x != self.root else -1
            for depth, x in enumerate(reversed(path)):
                order[x] = max(order.get(x, 0), depth)
        return sorted(order, key=lambda x: -order[x])

    def _retime(self, kids: dict[int, list[int]], start) -> float:
        value = _Overlay(self.value)
        span = _Overlay(self.span)
        for x in self._chain(kids, start):
            cs = kids.get(x, self.children[x])
            value[x], span[x], _ = self._node(x, cs, value, span)
        return value[self.root]

    def _commit(self, start) -> None:
        for x in self._chain({}, start):
            self.value[x], self.span[x], _ = self._node(x, self.children[x], self.value, self.span)


class _Overlay(dict):
    """Changed entries over a base list (a trial's values without copying the list)."""

    def __init__(self, base: list) -> None:
        super().__init__()
        self.base = base

    def __missing__(self, key: int):
        return self.base[key]


def _postorder(root: int, children: Sequence[Sequence[int]]) -> list[int]:
    order, stack = [], [root]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(children[v])
    order.reverse()
    return order


def part_time(rr: RootedRequest, costs: EdgeCosts, kind: str, root: int, children) -> TreeTime:
    """The :class:`TreeTime` of ``rr``'s part ``kind`` on a tree."""
    sizes = [rr.sizes[x] for x in rr.req.members]
    n = rr.flow_bytes(kind) if kind in ("reduce", "bcast") else 0
    return TreeTime(costs, kind, root, children, n, sizes)


def rooted_time(
    rr: RootedRequest,
    costs: EdgeCosts,
    up: Sequence[Sequence[int]] | None,
    down: Sequence[Sequence[int]] | None,
    root: int,
) -> tuple[float, list[list[int]] | None, list[list[int]] | None]:
    """The time of the collective on trees ``up`` and ``down`` (children lists, local
    indices; the one its collective has not is None) rooted at local ``root``: the up part,
    then the down part from the root (they never overlap).  Also each tree's children in
    the order to list them."""
    t, listed = 0.0, []
    for kind, tree in ((rr.up, up), (rr.down, down)):
        if kind is None:
            listed.append(None)
            continue
        part = part_time(rr, costs, kind, root, tree)
        t += part.total
        listed.append(part.listed())
    return t, listed[0], listed[1]


# -- schedules -------------------------------------------------------------------------------


def _edges(req: Request, root: int, listed: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """``(parent, child)`` node-index pairs, parents breadth first, in listed order."""
    members = req.members
    out, queue = [], [root]
    for v in queue:
        for c in listed[v]:
            out.append((members[v], members[c]))
            queue.append(c)
    return out


def rooted_schedule(
    rr: RootedRequest,
    algorithm: str,
    root: int,
    up: Sequence[Sequence[int]] | None,
    down: Sequence[Sequence[int]] | None,
    **params: Any,
) -> Schedule:
    """The schedule of the collective on the trees ``up`` and ``down`` (children lists in
    the order to combine / send, local indices) rooted at local index ``root``."""
    req = rr.req
    ids = req.ids
    flows = []
    seg = req.segment_size
    for kind, listed in ((rr.up, up), (rr.down, down)):
        if kind is None:
            continue
        edges = _edges(req, root, listed)
        tree = Tree.from_edges(ids[req.members[root]], ((ids[p], ids[c]) for p, c in edges))
        if len(tree.nodes) != len(req.members):
            raise AssertionError(f"{algorithm}: tree spans {len(tree.nodes)} of {len(req.members)}")
        flows.append(
            Flow(
                tree,
                rr.flow_bytes(kind),
                segment_size=seg if kind in ("reduce", "bcast") else None,
                relays=_relays(req, edges, kind in ("reduce", "gather")),
                kind=kind,
            )
        )
    sizes = None
    nbytes = req.nbytes
    if rr.collective in BLOCK_COLLECTIVES:
        blocks = set(rr.sizes.values())
        if len(blocks) > 1:  # the v-variants: each member's block, nbytes the largest
            sizes = {ids[m]: n for m, n in rr.sizes.items()}
        nbytes = max(blocks, default=0)
    return Schedule(
        rr.collective,
        algorithm,
        nbytes,
        tuple(flows),
        params,
        req.model.to_spec(),
        sizes=sizes,
    )


def _relays(req: Request, edges, up: bool) -> tuple[tuple[str, ...], ...]:
    """The relay paths (parent first) of the edges the model cannot send directly."""
    out = []
    for p, c in edges:
        path = (
            req.bound.relay_path(c, p, req.message_size())
            if up
            else req.bound.relay_path(p, c, req.message_size())
        )
        if path is not None:
            path = tuple(reversed(path)) if up else tuple(path)
            out.append(tuple(req.ids[x] for x in path))
    return tuple(out)


# -- every broadcast planner backwards ---------------------------------------------------------


def from_broadcast(
    info: PlannerInfo,
    platform: Platform,
    collective: str,
    root: str | None,
    members: Iterable[str] | None,
    model: Any,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    sizes: Mapping[str, int] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Schedule:
    """A broadcast tree planner's tree for a rooted collective: its broadcast tree from
    the root (the member of lowest rank when none is given), run backwards for the up part
    (each node's children combined in the reverse of the order it would send to them: the
    last child a broadcast reaches reports first, as MPICH's binomial reduce and gather
    do) and as it is for the down part (a scatter sends each subtree in the broadcast's
    order).  The planner plans for one member's block (gather, scatter) or the vector.
    ``params["reversed"]`` names the planner."""
    rr = prepare_rooted(platform, collective, root, members, model, nbytes, segment_size, sizes)
    req = rr.req
    start = req.root
    plan_bytes = req.nbytes
    bcast = info.func(
        platform,
        req.ids[start],
        None if len(req.members) == len(platform) else [req.ids[m] for m in req.members],
        model,
        nbytes=plan_bytes,
        segment_size=segment_size if collective in ("reduce", "allreduce") else None,
        **(options or {}),
    )
    tree = bcast.flows[0].tree
    local = {req.ids[m]: k for k, m in enumerate(req.members)}
    down = [[] for _ in req.members]
    for p, cs in tree.children.items():
        down[local[p]] = [local[c] for c in cs]
    up = [list(reversed(cs)) for cs in down]
    return rooted_schedule(
        rr,
        info.name,
        local[req.ids[start]],
        up if rr.up else None,
        down if rr.down else None,
        **{"reversed": info.name, **dict(bcast.params)},
    )
