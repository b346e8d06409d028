"""LABS, the Location Aware Broadcast Scheme of Hsu, Tsai, Chen & Yu (2005), and its parts.

- :func:`binomial_like` (Sec. 5.1): split the ordered list at its ``ceil((n+1)/2)``-th
  element, recursively; ``ceil(log2(n+1))`` steps (Lemma 2);
- :func:`location_tree` (Sec. 4): the location oriented spanning tree (LST) of the switch
  graph, width-restricted, children chosen by external degree, then internal degree, then id;
  Lemma 1 bounds its depth by ``ceil(log2 s) + 1`` levels;
- :func:`labs` (Sec. 5.2): the LST's postorder chain, group heads (the fastest workstation
  of each switch), groups sorted by sub-tree size, a binomial-like first level among the
  heads and second level inside each group, then faster workstations moved up to be the
  parents of slower ones.

The paper leaves several points open; our reading of each is written where it is used and
gathered in ``docs/switches.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ..switches import tree_path
from ._common import Request, prepare, relative_order, tree_schedule
from ._registry import register
from .chains import SwitchLayout, split_edges, tree_chain

__all__ = ["binomial_like", "labs", "location_tree", "LocationTree", "labs_plan"]

_TREE_OPS = ("bcast", "multicast")
HSU = "Hsu, Tsai, Chen & Yu, 2005"


@register(
    "binomial_like",
    collectives=_TREE_OPS,
    paper=f"{HSU}, Sec. 5.1, Fig. 3(b), Lemma 2",
    complexity="O(N)",
    summary="split the ordered list at element ceil((n+1)/2), recursively (rank order)",
)
def binomial_like(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """The binomial-like tree on the members in relative-rank order (the root first).

    A sender at the head of a list of ``m = n + 1`` nodes keeps the first ``ceil(m/2)`` and
    sends to the next one, which does the same with the rest; each sender's sends go in
    step order.  ``ceil(log2(n+1))`` steps (Lemma 2).  Blind to speeds and locations.  O(N).

    Examples
    --------
    Hsu et al. Fig. 3(b): the list ``(w2, w7, w5, w4, w6, w1, w3)`` from ``w2``.

    >>> from hetcoll import Platform, Node
    >>> p = Platform(tuple(Node(w) for w in ["w2", "w7", "w5", "w4", "w6", "w1", "w3"]))
    >>> binomial_like(p, "w2").tree.children
    {'w2': ('w6', 'w5', 'w7'), 'w6': ('w3', 'w1'), 'w5': ('w4',)}
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    order = relative_order(req)
    edges = [(order[a], order[b]) for a, b, _ in split_edges(len(order))]
    return tree_schedule(req, "binomial_like", edges)


# -- Sec. 4: the location oriented spanning tree -------------------------------------------------


@dataclass(frozen=True, eq=False)
class LocationTree:
    """An LST: ``parent[x]`` of each switch (-1 for the root), ``children[x]`` left to right,
    ``levels`` (the root is level 1), and whether the width-restricted shape spanned every
    switch (``spans``; when it did not, the rest hangs below by breadth-first search)."""

    root: int
    parent: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    levels: int
    spans: bool

    @property
    def bound(self) -> int:
        """Lemma 1's bound on the levels: ``ceil(log2 s) + 1``."""
        return math.ceil(math.log2(len(self.parent))) + 1 if len(self.parent) > 1 else 1

    @property
    def within_bound(self) -> bool:
        return self.levels <= self.bound

    @cached_property
    def depth(self) -> tuple[int, ...]:
        depth = [0] * len(self.parent)
        order = [self.root]
        for x in order:
            for c in self.children[x]:
                depth[c] = depth[x] + 1
                order.append(c)
        return tuple(depth)

    def path(self, a: int, b: int) -> tuple[int, ...]:
        """The switches from ``a`` to ``b`` along the LST (up to their common ancestor)."""
        return tree_path(self.parent, self.depth, a, b)


def location_tree(
    neighbours: Sequence[Sequence[int]],
    degree: Sequence[int],
    internal: Sequence[int],
    root: int,
) -> LocationTree:
    """The location oriented spanning tree of Hsu et al., Sec. 4 (our reading).

    Width restriction: the root may take ``k = ceil(log2 s)`` children, and the ``i``-th
    child (from the left, ``i = 0, 1, ...``) of a node allowed ``c`` children is allowed
    ``c - 1 - i`` (Fig. 2: ``ceil(log2 s)`` switches on the second level, ``A``, the leftmost,
    with ``ceil(log2 s) - 1`` children, "and so on"): the shape of a binomial tree of
    ``2**k >= s`` switches, ``k + 1`` levels, which is Lemma 1's bound.  Level by level, each
    node from left to right takes its not yet placed neighbours with the highest external
    degree (neighbouring switches), then internal degree (workstations), then the lowest id.
    When the switch graph does not fit that shape (a switch all of whose tree neighbours are
    full), the switches left over hang by breadth-first search below the tree, and Lemma 1's
    bound may fail: :attr:`LocationTree.spans` and :attr:`LocationTree.within_bound` say so.
    (The paper's "except the rightmost node in every level" is not used: no reading of it
    changes which switches a level holds.)  O(S log S + E).
    """
    s = len(neighbours)
    k = math.ceil(math.log2(s)) if s > 1 else 0
    parent = [-1] * s
    children: list[list[int]] = [[] for _ in range(s)]
    depth = [0] * s
    cap = {root: k}
    placed = {root}
    rank = sorted(range(s), key=lambda x: (-degree[x], -internal[x], x))
    prio = {x: i for i, x in enumerate(rank)}
    level = [root]
    while level:
        nxt: list[int] = []
        for p in level:
            room = cap[p]
            if room <= 0:
                continue
            cand = sorted((y for y in neighbours[p] if y not in placed), key=prio.__getitem__)
            for i, y in enumerate(cand[:room]):
                cap[y] = room - 1 - i
                parent[y] = p
                depth[y] = depth[p] + 1
                children[p].append(y)
                placed.add(y)
                nxt.append(y)
        level = nxt
    spans = len(placed) == s
    if not spans:  # breadth-first below the tree, nodes in (depth, placement) order
        queue = sorted(placed, key=lambda x: (depth[x], x))
        i = 0
        while i < len(queue):
            p = queue[i]
            i += 1
            for y in sorted((y for y in neighbours[p] if y not in placed), key=prio.__getitem__):
                parent[y] = p
                depth[y] = depth[p] + 1
                children[p].append(y)
                placed.add(y)
                queue.append(y)
    return LocationTree(
        root, tuple(parent), tuple(tuple(c) for c in children), max(depth) + 1, spans
    )


# -- Sec. 5.2: the scheduling tree ---------------------------------------------------------------


@dataclass(frozen=True)
class LabsPlan:
    """What LABS built, for inspection and the claim checks: the LST, the chain (node
    indices), the heads in first-level order and the ``(parent, child)`` edges per level
    after the speed rearrangement, and each edge's step."""

    tree: LocationTree
    chain: tuple[int, ...]
    heads: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    steps: dict[tuple[int, int], int]


def _heap_order(
    positions: list[int], pos_edges: list[tuple[int, int, int]], speed: np.ndarray
) -> list[int]:
    """Assign nodes to the positions of a tree so that no node (but the fixed root at
    position 0) is slower than one of its children: sift each position up in breadth-first
    order while it is faster than its parent (strictly; the root stays)."""
    parent = {b: a for a, b, _ in pos_edges}
    depth = {0: 0}
    for a, b, _ in sorted(pos_edges, key=lambda e: e[2]):
        depth[b] = depth[a] + 1
    node = list(positions)
    for p in sorted(range(1, len(node)), key=lambda x: (depth[x], x)):
        while True:
            q = parent[p]
            if q == 0 or not speed[node[p]] < speed[node[q]]:
                break
            node[p], node[q] = node[q], node[p]
            p = q
    return node


def labs_plan(req: Request, rearrange: bool = True) -> LabsPlan:
    """LABS on a planning request (see :func:`labs`); ``rearrange=False`` skips the last
    step (faster workstations moved up)."""
    layout = SwitchLayout(req)
    speed = np.asarray(req.node_cost(), dtype=float)
    root_switch = int(layout.switch[req.root])
    lst = location_tree(layout.neighbours, layout.degree, layout.internal, root_switch)
    # sub-tree group sizes: the members in each switch's LST subtree
    size = [len(layout.groups.get(x, ())) for x in range(layout.n_switches)]
    for x in _bottom_up(lst):
        if lst.parent[x] >= 0:
            size[lst.parent[x]] += size[x]
    children = [sorted(c, key=lambda y: -size[y]) for c in lst.children]  # stable: LST order
    # group heads: the fastest member of each switch (ties: rank order); first in its group
    groups = {}
    for x, us in layout.groups.items():
        head = min(us, key=lambda u: (speed[u], u))
        groups[x] = [head] + [u for u in us if u != head]
    top = groups[root_switch][0]  # the source's head: the fastest on the source's switch
    chain = tree_chain(children, root_switch, groups, top)
    group_of = {u: x for x, us in groups.items() for u in us}
    heads = [u for u in chain if groups[group_of[u]][0] == u]
    steps: dict[tuple[int, int], int] = {}
    edges: list[tuple[int, int]] = []
    last = {top: 0}  # the step of each node's latest receive or send
    if top != req.root:  # a slower source hands the message to its head first
        edges.append((req.root, top))
        steps[(req.root, top)] = 1
        last = {top: 1, req.root: 1}
        groups[root_switch] = [req.root] + [u for u in groups[root_switch] if u != req.root]
        groups[root_switch].remove(top)
    first = split_edges(len(heads))
    if rearrange:
        heads = _heap_order(heads, first, speed)
    for a, b, step in first:
        edges.append((heads[a], heads[b]))
        steps[(heads[a], heads[b])] = last[top] + step
        last[heads[a]] = last[heads[b]] = last[top] + step
    for members in groups.values():
        second = split_edges(len(members))
        if rearrange:
            members = _heap_order(members, second, speed)
        start = last[members[0]]
        for a, b, step in second:
            edges.append((members[a], members[b]))
            steps[(members[a], members[b])] = start + step
    return LabsPlan(lst, tuple(chain), tuple(heads), tuple(edges), steps)


def _bottom_up(tree: LocationTree) -> list[int]:
    order = [tree.root]
    for x in order:
        order.extend(tree.children[x])
    return order[::-1]


@register(
    "labs",
    collectives=_TREE_OPS,
    paper=f"{HSU}, Sec. 4-5",
    complexity="O(N log N + S log S + E)",
    summary="location aware: LST postorder chain, fastest head per switch, binomial-like "
    "among heads then inside groups, faster nodes moved up",
    models=("switch",),
    options=("rearrange",),
)
def labs(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    rearrange: bool = True,
) -> Schedule:
    """LABS (Hsu et al. 2005, Sec. 5.2), as we read it.

    1. The location oriented spanning tree (:func:`location_tree`) rooted at the source's
       switch; each switch's children sorted by sub-tree group size (the members in their
       LST subtree), decreasing from left to right ("we adjust these sub-tree groups
       according to their group sizes decreasingly from left to right");
    2. its postorder chain: the source's group first, then the other switches' groups in
       postorder (every subtree stays contiguous: an ordered chain for routes along the LST);
    3. a group per switch, its head the fastest member (ties: rank order); a source that is
       not its switch's head first sends the message to that head, then serves the rest of
       its own group (so the first level is made of the fastest workstations, "workstations
       with fastest speed type are always in the upper level", Sec. 1);
    4. first level: the binomial-like tree (Sec. 5.1) over the heads in chain order; second
       level: a binomial-like tree inside each group from its head, after the head's
       first-level sends;
    5. within each level, faster workstations moved up to be the parents of slower ones (a
       node slower than its child swaps places with it, the source staying at the top).
       We keep the moves within a level so that a head never serves another switch's group.

    Speeds are the planning model's per-node sending cost (``O_send`` under ``switch``).
    ``rearrange=False`` skips step 5 (then, in every step, messages between heads go
    rightwards along the chain, in disjoint sub-lists: contention-free for routes along the
    LST, the paper's claim; step 5 can break it, see ``docs/switches.md``).
    Without switches the platform is one group and LABS is the binomial-like tree with
    faster nodes moved up.  O(N log N + S log S + E).

    Examples
    --------
    >>> from hetcoll.generators import switch_platform
    >>> s = labs(switch_platform(16, seed=4), "w0", nbytes=2048)
    >>> len(s.tree.nodes)
    16
    """
    if not isinstance(rearrange, bool):
        raise PlannerError(f"rearrange: must be true or false, got {rearrange!r}")
    req = prepare(platform, root, members, model, nbytes, segment_size)
    params = {} if rearrange else {"rearrange": False}
    return tree_schedule(req, "labs", labs_plan(req, rearrange).edges, **params)
