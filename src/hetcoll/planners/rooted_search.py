"""``rooted_ls``: reduce, gather and scatter trees (and their compositions with a broadcast)
for heterogeneous senders, receivers and combiners, by greedy construction and local search
under the model's own costs (ours)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from ..platform import Platform
from ..schedule import Schedule
from ._registry import register
from .classic import binomial_edges
from .rooted import (
    ROOTED,
    EdgeCosts,
    RootedRequest,
    TreeTime,
    part_time,
    prepare_rooted,
    rooted_schedule,
)

__all__ = ["rooted_ls"]

Children = list[list[int]]
#: Up to this many members, every member is tried as the root when the root is free.
ALL_ROOTS = 16
#: Roots searched in full when more are tried (the others get a short search each).
FINALISTS = 3


@register(
    "rooted_ls",
    collectives=ROOTED,
    paper="hetcoll (the time-reversed Fastest-Node-First of Banikazemi et al. 1998, "
    "Sec. 6, with combine costs; local search)",
    complexity="O(E N log N) for E <= max_evals evaluations (default 4000)",
    summary="reduce/gather/scatter trees: reversed-FNF greedy under sender, receiver and "
    "combine costs, then moves and swaps of nodes while the model's time falls",
    options=("max_evals", "roots"),
)
def rooted_ls(
    platform: Platform,
    root: str | None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "reduce",
    sizes: Mapping[str, int] | None = None,
    max_evals: int = 4000,
    roots: int | None = None,
) -> Schedule:
    """A rooted collective's tree(s) by greedy construction and local search.

    **Up** (reduce, gather): a reduce run backwards in time is a broadcast in which a
    parent "sends" to a child by combining its result (busy ``n gamma(parent)``, plus its
    receive port's time) and the child is "reached" that plus its own delay to the parent
    later.  The greedy is Fastest-Node-First on those reversed costs (Banikazemi et al.
    1998, Sec. 6): children join in turn, each under the member that would take it
    earliest; twice, once with the fastest combiners joining first (they combine the
    most, high in the tree) and once with the slowest senders first (they must start
    sending first, so they hang right under the root or a fast combiner).
    **Down** (scatter, and the broadcast of an allreduce/allgather): Fastest-Node-First
    on the model's pairwise costs.

    Those greedy trees, the flat, binomial and chain trees (in rank order from the root)
    and Fastest-Node-First's broadcast tree (backwards, up) are each measured with the
    model's time of a tree (:func:`~hetcoll.planners.rooted.rooted_time`: exact under
    ``tini``, ``postal`` and ``hockney`` on a matrix, the simulator's rules), and the best
    is improved by local search: move a node and its subtree under another member, or swap
    two members, while the time falls (first improvement, moves in a fixed order, at most
    ``max_evals`` evaluations, each re-timing only the changed nodes and their ancestors).
    The up and the down part are timed one after the other, so each is improved on its
    own.  Children are listed in the best order for their tree:
    arrival order up (the combine order), Jackson's order down.  So the result is never
    slower, under that time, than any of its starting trees.

    Without a ``root`` (``allreduce``, ``allgather``, ``reduce_scatter``) every member is
    tried up to :data:`ALL_ROOTS` members, else the member of lowest rank and the
    ``roots - 1`` other members with the best greedy time; when more than
    :data:`FINALISTS` are tried, each gets a short search (``max_evals`` shared) and the
    best :data:`FINALISTS` a full one.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size, collective, sizes
        As :func:`hetcoll.plan` takes them.
    max_evals : int
        Evaluations of the local search per root tried (deterministic: no time limit).
    roots : int, optional
        Roots tried when the root is free (default: every member up to
        :data:`ALL_ROOTS`, else 4).

    Returns
    -------
    Schedule

    Notes
    -----
    ``O(E N log N)`` for ``E`` evaluations of an ``N``-member tree, plus ``O(N^2)`` for the
    cost matrices and greedies.
    """
    rr = prepare_rooted(platform, collective, root, members, model, nbytes, segment_size, sizes)
    costs = EdgeCosts(rr, rr.req.message_size())
    m = len(rr.req.members)
    first = rr.req.members.index(rr.req.root)
    if roots is None:
        roots = m if m <= ALL_ROOTS else 4
    if rr.fixed_root or m == 1:
        tried = [first]
    elif int(roots) >= m:
        tried = list(range(m))
    else:
        guess = sorted(range(m), key=lambda r: (_greedy(rr, costs, r)[0], r))
        tried = [first, *[r for r in guess if r != first][: max(int(roots) - 1, 0)]]
    max_evals = int(max_evals)
    if len(tried) <= FINALISTS:
        found = [(*_search(rr, costs, r, max_evals), r) for r in tried]
    else:  # a short search at every root, then the best few searched on
        found = [(*_search(rr, costs, r, max_evals // len(tried)), r) for r in tried]
        found.sort(key=lambda x: (x[0], tried.index(x[3])))
        found = found[:FINALISTS]
        for k, (_, up, down, r) in enumerate(found):
            budget = [max_evals]
            for part in (up, down):
                if part is not None:
                    _improve(part, r, budget)
            found[k] = (sum(x.total for x in (up, down) if x is not None), up, down, r)
    t, up, down, r = min(found, key=lambda x: (x[0], tried.index(x[3])))
    return rooted_schedule(
        rr, "rooted_ls", r, up and up.listed(), down and down.listed(), estimate=t
    )


# -- starting trees ----------------------------------------------------------------------------


def _greedy(rr: RootedRequest, costs: EdgeCosts, root: int):
    """The best greedy trees at ``root``: ``(time, up, down)`` (:class:`TreeTime` each, or
    None for the part the collective has not)."""
    t, parts = 0.0, []
    for timed in _starts(rr, costs, root):
        if timed is None:
            parts.append(None)
            continue
        t += timed[0].total
        parts.append(timed[0])
    return t, parts[0], parts[1]


def _starts(rr: RootedRequest, costs: EdgeCosts, root: int) -> list[list[TreeTime] | None]:
    """Each part's distinct starting trees at ``root``, timed, fastest first (ties: the
    order they are made in)."""
    out = []
    for kind, starts in ((rr.up, _up_starts), (rr.down, _down_starts)):
        if kind is None:
            out.append(None)
            continue
        seen, timed = set(), []
        for tree in starts(rr, costs, root):
            key = tuple(tuple(sorted(cs)) for cs in tree)
            if key not in seen:
                seen.add(key)
                timed.append(part_time(rr, costs, kind, root, tree))
        out.append(sorted(timed, key=lambda x: x.total))
    return out


def _up_starts(rr: RootedRequest, costs: EdgeCosts, root: int) -> list[Children]:
    m = costs.m
    n = rr.flow_bytes(rr.up)
    g = [costs.combine(v, n) if rr.up == "reduce" else 0.0 for v in range(m)]
    to_root = [costs.delay(v, root, n) if v != root else 0.0 for v in range(m)]
    others = [v for v in range(m) if v != root]
    orders = [
        sorted(others, key=lambda v: (g[v], -to_root[v], v)),  # fast combiners first
        sorted(others, key=lambda v: (-to_root[v], g[v], v)),  # slow senders first
    ]
    starts = [_reversed_fnf(costs, root, order, g, n) for order in orders]
    return [*starts, _fnf(costs, root, n), *_shapes(m, root, up=True)]


def _reversed_fnf(costs: EdgeCosts, root: int, order: list[int], g: list[float], n: int):
    """Fastest-Node-First on the time-reversed reduce: ``order`` joins one by one, each
    under the member that reaches it first (reversed time: the parent's next free moment,
    plus its combine and the child's delay to it); ties: the member that joined first."""
    m = costs.m
    children: Children = [[] for _ in range(m)]
    joined = [root]
    free = {root: 0.0}
    for c in order:
        best = None
        for k, p in enumerate(joined):
            t = free[p] + g[p] + costs.delay(c, p, n)
            if best is None or t < best[0]:
                best = (t, k, p)
        t, _, p = best
        children[p].append(c)
        free[p] += g[p] + costs.recv(c, p, n)
        free[c] = t
        joined.append(c)
    return children


def _down_starts(rr: RootedRequest, costs: EdgeCosts, root: int) -> list[Children]:
    m = costs.m
    n = rr.flow_bytes(rr.down) if rr.down == "bcast" else max(rr.total // max(m, 1), 0)
    return [_fnf(costs, root, n), *_shapes(m, root, up=False)]


def _fnf(costs: EdgeCosts, root: int, n: int) -> Children:
    """Fastest-Node-First on pairwise costs (Banikazemi et al. 1998, Fig. 3): receivers by
    their mean sending cost, each from the sender that delivers it first."""
    m = costs.m
    speed = [sum(costs.busy(v, w, n) for w in range(m) if w != v) for v in range(m)]
    order = sorted((v for v in range(m) if v != root), key=lambda v: (speed[v], v))
    children: Children = [[] for _ in range(m)]
    joined, free = [root], {root: 0.0}
    for c in order:
        best = None
        for k, p in enumerate(joined):
            t = free[p] + costs.delay(p, c, n)
            if best is None or t < best[0]:
                best = (t, k, p)
        t, _, p = best
        children[p].append(c)
        free[p] += costs.busy(p, c, n)
        free[c] = t
        joined.append(c)
    return children


def _shapes(m: int, root: int, up: bool) -> list[Children]:
    """Flat, binomial and chain trees over the members in rank order rotated to ``root``."""
    order = [*range(root, m), *range(root)]
    flat: Children = [[] for _ in range(m)]
    flat[root] = order[1:]
    chain: Children = [[] for _ in range(m)]
    for a, b in itertools.pairwise(order):
        chain[a] = [b]
    binom: Children = [[] for _ in range(m)]
    for a, b in binomial_edges(m):
        binom[order[a]].append(order[b])
    return [flat, binom, chain]


# -- local search ------------------------------------------------------------------------------


def _search(rr: RootedRequest, costs: EdgeCosts, root: int, max_evals: int):
    """The starts at ``root``, each improved, the best kept: ``(time, up, down)``.  The
    parts are timed one after the other, so each is improved on its own, with
    ``max_evals`` evaluations shared by its starts."""
    t, best = 0.0, []
    for timed in _starts(rr, costs, root):
        if timed is None:
            best.append(None)
            continue
        budget = [max_evals]
        kept = None
        for k, part in enumerate(timed):
            share = [budget[0] // (len(timed) - k)]
            spent = share[0]
            _improve(part, root, share)
            budget[0] -= spent - share[0]
            if kept is None or part.total < kept.total:
                kept = part
        t += kept.total
        best.append(kept)
    return t, best[0], best[1]


def _improve(tree: TreeTime, root: int, budget: list[int]) -> None:
    """First-improvement local search on ``tree`` (in place) over moves (a node and its
    subtree under another member), splices (a node alone under another, its children left
    to its parent) and swaps (two members trade places), in a fixed order, while
    ``budget`` evaluations last."""
    m = len(tree.children)
    improved = True
    while improved and budget[0] > 0:
        improved = False
        for u in range(m):
            if u == root:
                continue
            below = tree.subtree(u)
            for v in range(m):
                if v in below or v == tree.parent[u]:
                    continue
                if budget[0] <= 0:
                    return
                budget[0] -= 1
                if tree.try_move(u, v) < tree.total:
                    tree.move(u, v)
                    improved = True
                    below = tree.subtree(u)
        for u in range(m):
            if u == root:
                continue
            for v in range(m):  # u alone under v, its children left to its parent
                if v == u or (v == tree.parent[u] and not tree.children[u]):
                    continue
                if budget[0] <= 0:
                    return
                budget[0] -= 1
                if tree.try_splice(u, v) < tree.total:
                    tree.splice(u, v)
                    improved = True
        for u in range(m):
            for w in range(u + 1, m):
                if root in (u, w):
                    continue
                if budget[0] <= 0:
                    return
                budget[0] -= 1
                if tree.try_swap(u, w) < tree.total:
                    tree.swap(u, w)
                    improved = True
