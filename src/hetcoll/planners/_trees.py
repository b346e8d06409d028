"""Ordered trees under the postal recursion (Park et al. 2004, eq. 2), shared by the latency
planners (``mst``, ``spt``, ``hlot``, ``gap_aware``) and the multi-level planners.

A tree is a list ``children[v]`` of node indices in ``v``'s send order.  Under the postal model
a node that holds the message at ``T_v`` starts its ``k``-th send at ``T_v + sum of the busy
times of its first k-1 sends`` and the child receives it ``delay[v][c]`` after that send
starts (eq. 2 with ``busy = overhead + gap``; eq. 3-4 when ``busy = 0``).

:func:`arrival_times` evaluates that recursion with *exactly* the floating-point operations of
:func:`hetcoll.simulate` (start times accumulated one send at a time), so a planner
that compares trees with it compares the numbers the user will see, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ._common import Request

__all__ = [
    "Matrices",
    "matrices",
    "children_from_parents",
    "arrival_times",
    "makespan",
    "subtree_times",
    "longest_first",
    "tree_edges",
]


class Matrices:
    """The planning model's costs at one message size, as nested lists (fast scalar access).

    ``delay[u][v]``: when ``v`` holds the data after ``u`` starts sending it;
    ``busy[u][v]``: how long that send keeps ``u`` from starting its next one.
    """

    __slots__ = ("busy", "busy_array", "delay", "delay_array")

    def __init__(self, delay: np.ndarray, busy: np.ndarray) -> None:
        self.delay_array = np.array(delay, dtype=float)
        self.busy_array = np.array(busy, dtype=float)
        self.delay: list[list[float]] = self.delay_array.tolist()
        self.busy: list[list[float]] = self.busy_array.tolist()


def matrices(req: Request) -> Matrices:
    """The request's delay and send-busy matrices at its message size."""
    m = req.message_size()
    return Matrices(req.bound.delay_matrix(m), req.bound.send_matrix(m))


def children_from_parents(n: int, parent: dict[int, int], order: Iterable[int]) -> list[list[int]]:
    """``children[v]`` from a child -> parent map; each list follows ``order``."""
    children: list[list[int]] = [[] for _ in range(n)]
    for v in order:
        if v in parent:
            children[parent[v]].append(v)
    return children


def arrival_times(
    root: int, children: Sequence[Sequence[int]], delay: Sequence[Sequence[float]], busy
) -> dict[int, float]:
    """When each tree node holds the message (eq. 2), computed as the simulator does.

    The ``k``-th send of ``v`` starts at ``start_{k-1} + busy[v][c_{k-1}]`` (``start_1 =
    T_v``) and its child holds the data at ``start_k + delay[v][c_k]``.  O(N).
    """
    times = {root: 0.0}
    stack = [root]
    while stack:
        v = stack.pop()
        start = times[v]
        dv, bv = delay[v], busy[v]
        for c in children[v]:
            times[c] = start + dv[c]
            start = start + bv[c]
            stack.append(c)
    return times


def makespan(root: int, children, delay, busy) -> float:
    """The broadcast time of the ordered tree: the latest arrival (eq. 1-2)."""
    return max(arrival_times(root, children, delay, busy).values())


def _bottom_up(root: int, children) -> list[int]:
    order = [root]
    for v in order:
        order.extend(children[v])
    order.reverse()
    return order


def subtree_times(root: int, children, delay, busy, reorder: bool = True) -> dict[int, float]:
    """``S[v]``: how long after ``v`` holds the message its whole subtree holds it.

    With ``reorder`` each node's children are first sorted longest-first (decreasing
    ``delay[v][c] + S[c]``, ties by index), in place: the optimal send order for a fixed tree
    when every send of ``v`` costs the same busy time (Jackson's rule for unit jobs with
    delivery tails).  O(N log N).
    """
    s: dict[int, float] = {}
    for v in _bottom_up(root, children):
        kids = children[v]
        if not kids:
            s[v] = 0.0
            continue
        dv, bv = delay[v], busy[v]
        if reorder:
            kids.sort(key=lambda c: (-(dv[c] + s[c]), c))
        start, worst = 0.0, 0.0
        for c in kids:
            worst = max(worst, start + dv[c] + s[c])
            start += bv[c]
        s[v] = worst
    return s


def longest_first(root: int, children: list[list[int]], delay, busy) -> list[list[int]]:
    """Copy of ``children`` with each node's sends in longest-subtree-first order."""
    kids = [list(c) for c in children]
    subtree_times(root, kids, delay, busy, reorder=True)
    return kids


def tree_edges(root: int, children: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """``(parent, child)`` pairs, parents breadth-first, each parent's in send order."""
    edges = []
    order = [root]
    for v in order:
        for c in children[v]:
            edges.append((v, c))
            order.append(c)
    return edges
