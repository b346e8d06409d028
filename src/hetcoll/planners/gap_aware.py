"""A gap-aware latency tree: earliest-completing-edge-first, best of the classics, local search.

hetcoll's own planner for Park et al.'s postal model (eq. 2).  See :func:`gap_aware`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import numpy as np

from ..platform import Platform
from ..schedule import Schedule
from ._common import Request, prepare, relative_order, tree_schedule
from ._registry import Option, register
from ._shared import shared
from ._trees import (
    Matrices,
    arrival_times,
    children_from_parents,
    longest_first,
    matrices,
    subtree_times,
    tree_edges,
)
from .latency import hlot_parents, mst_parents, spt_parents

__all__ = ["gap_aware", "ecef_parents", "improve_tree"]


def ecef_parents(
    mats: Matrices, root: int, members: Sequence[int], *, lookahead: bool = False
) -> tuple[dict[int, int], list[int]]:
    """Earliest Completing Edge First (Bhat, Raghavendra & Prasanna 1999) under eq. (2).

    Every tree node ``j`` can start its next send at ``F[j]`` (when it received, plus the
    busy times of the sends it already made).  Repeatedly add the outside node ``i`` and
    sender ``j`` minimising ``F[j] + delay[j][i]`` (ties: lowest receiver index, then the
    earliest-joined sender), then advance ``F[j]`` by ``busy[j][i]``.  With ``lookahead`` the
    choice adds ``min_k delay[i][k]`` over the other outside nodes ``k`` (the receiver's
    value as a relay, Bhat et al.'s look-ahead variant).

    Children join their parent in send order, so the tree's simulated arrivals are the
    values the greedy computed.  When sends cost nothing (eq. 3-4) this is Dijkstra's
    algorithm.  Returns ``(parent, join_order)``.  O(N^3) elementary operations, vectorised
    to O(N) numpy calls.
    """
    members = [int(m) for m in members]
    others = np.array([m for m in members if m != root], dtype=np.intp)
    parent: dict[int, int] = {}
    order = [root]
    if not len(others):
        return parent, order
    d, b = mats.delay_array, mats.busy_array
    tree = [root]
    free = [0.0]
    outside = np.ones(len(others), dtype=bool)
    for _ in range(len(others)):
        cols = np.flatnonzero(outside)
        targets = others[cols]
        arrive = np.asarray(free)[:, None] + d[np.ix_(tree, targets)]
        best = arrive.min(axis=0)
        score = best
        if lookahead and len(cols) > 1:
            sub = d[np.ix_(targets, targets)].copy()
            np.fill_diagonal(sub, np.inf)
            score = best + sub.min(axis=1)
        c = int(np.argmin(score))  # first minimum: lowest receiver index
        s = int(np.argmin(arrive[:, c]))  # first minimum: earliest-joined sender
        i, j = int(targets[c]), tree[s]
        parent[i] = j
        order.append(i)
        outside[cols[c]] = False
        free[s] = free[s] + float(b[j, i])
        tree.append(i)
        free.append(float(arrive[s, c]))
    return parent, order


def _node_time(v: int, kids: list[int], delay, busy, value) -> float:
    """S[v] for children ``kids`` sent longest-first, child subtree times from ``value``."""
    if not kids:
        return 0.0
    dv, bv = delay[v], busy[v]
    keyed = sorted(((dv[c] + value(c), c) for c in kids), key=lambda t: (-t[0], t[1]))
    start, worst = 0.0, 0.0
    for tail, c in keyed:
        if start + tail > worst:
            worst = start + tail
        start += bv[c]
    return worst


def improve_tree(
    root: int,
    children: list[list[int]],
    delay: Sequence[Sequence[float]],
    busy: Sequence[Sequence[float]],
    *,
    max_steps: int,
) -> tuple[list[list[int]], int]:
    """Best-improvement local search on an ordered tree under eq. (2).

    A move re-attaches one node, with its subtree, under another node outside that subtree;
    each node always sends longest-subtree-first (:func:`subtree_times`).  Only moves that can
    shorten the critical path are tried: the nodes on it and, at each of its nodes, the
    children sent before the critical child.  Each step takes the move with the smallest
    broadcast time, if it is strictly smaller; at most ``max_steps`` steps.  A move is
    evaluated by recomputing the subtree times on the two root paths it changes, so a step
    costs O(M N h d log d) for M candidate nodes, depth h and degree d.

    Returns ``(children, steps)`` - a new list, longest-first ordered.
    """
    kids = [list(c) for c in children]
    s = subtree_times(root, kids, delay, busy, reorder=True)
    parent = {c: v for v in s for c in kids[v]}
    # no tree delivers to q before its shortest-path distance: a cheap bound to skip moves
    dist = _distances(root, list(s), delay)
    steps = 0
    while steps < max_steps:
        movers = _critical_movers(root, kids, delay, busy, s)
        tin, tout, nodes = _euler(root, kids)
        best_val, best_move = s[root], None
        for x in movers:
            p = parent[x]
            removed = _path_without(x, p, kids, parent, delay, busy, s)
            if removed[root] >= best_val:
                continue  # re-inserting x can only add time: no move of x can win
            lo, hi = tin[x], tout[x]
            tail = s[x]
            for q in nodes:
                if q == p or lo <= tin[q] <= hi:
                    continue
                if dist[q] + delay[q][x] + tail >= best_val:
                    continue
                val = _value_with(x, p, q, root, kids, parent, delay, busy, s, removed)
                if val < best_val:
                    best_val, best_move = val, (x, q)
        if best_move is None:
            break
        x, q = best_move
        kids[parent[x]].remove(x)
        kids[q].append(x)
        parent[x] = q
        s = subtree_times(root, kids, delay, busy, reorder=True)
        steps += 1
    return kids, steps


def _distances(root: int, nodes: list[int], delay) -> dict[int, float]:
    """Shortest-path distances from ``root`` over ``nodes`` (dense Dijkstra).  O(N^2)."""
    dist = dict.fromkeys(nodes, float("inf"))
    dist[root] = 0.0
    todo = set(nodes)
    while todo:
        u = min(todo, key=lambda v: (dist[v], v))
        todo.remove(u)
        du, row = dist[u], delay[u]
        for v in todo:
            if du + row[v] < dist[v]:
                dist[v] = du + row[v]
    return dist


def _critical_movers(root, kids, delay, busy, s) -> list[int]:
    movers: list[int] = []
    v = root
    while kids[v]:
        dv, bv = delay[v], busy[v]
        start, worst, crit = 0.0, -1.0, None
        for c in kids[v]:  # already longest-first
            if start + dv[c] + s[c] > worst:
                worst, crit = start + dv[c] + s[c], c
            start += bv[c]
        idx = kids[v].index(crit)
        movers.extend(kids[v][: idx + 1])
        v = crit
    # at each level of the critical path: the children sent before the critical one (moving
    # one away starts the critical send earlier), then the critical child itself
    return movers


def _euler(root, kids) -> tuple[dict[int, int], dict[int, int], list[int]]:
    tin: dict[int, int] = {}
    tout: dict[int, int] = {}
    nodes: list[int] = []
    stack = [(root, False)]
    clock = 0
    while stack:
        v, done = stack.pop()
        if done:
            tout[v] = clock - 1
            continue
        tin[v] = clock
        clock += 1
        nodes.append(v)
        stack.append((v, True))
        stack.extend((c, False) for c in reversed(kids[v]))
    nodes.sort()
    return tin, tout, nodes


def _path_without(x, p, kids, parent, delay, busy, s) -> dict[int, float]:
    """Subtree times on the path from ``p`` to the root once ``x`` leaves ``p``."""
    out: dict[int, float] = {}

    def value(c):
        return out.get(c, s[c])

    out[p] = _node_time(p, [c for c in kids[p] if c != x], delay, busy, value)
    v = p
    while v in parent:
        v = parent[v]
        out[v] = _node_time(v, kids[v], delay, busy, value)
    return out


def _value_with(x, p, q, root, kids, parent, delay, busy, s, removed) -> float:
    """The root's subtree time once ``x`` moves from ``p`` to ``q``."""
    out: dict[int, float] = {}

    def value(c):
        if c in out:
            return out[c]
        return removed.get(c, s[c])

    v = q
    while True:
        ks = kids[v]
        if v == p:
            ks = [c for c in ks if c != x]
        if v == q:
            ks = [*ks, x]
        out[v] = _node_time(v, ks, delay, busy, value)
        if v not in parent:
            return out[v]
        if out[v] == removed.get(v, s[v]):
            # the insertion is absorbed here: every ancestor keeps its removal-only time
            return removed[root]
        v = parent[v]


def _candidates(req: Request, mats: Matrices) -> list[tuple[str, list[list[int]]]]:
    n, root, delay, busy = len(req.platform), req.root, mats.delay, mats.busy
    order = relative_order(req)
    flat_kids = children_from_parents(n, dict.fromkeys(order[1:], root), order)
    out = [("flat", flat_kids), ("flat-sorted", longest_first(root, flat_kids, delay, busy))]
    for name, build in (("spt", spt_parents), ("hlot", hlot_parents), ("mst", mst_parents)):
        parent, join = build(mats.delay_array, root, req.members)
        kids = children_from_parents(n, parent, join)
        out += [(name, longest_first(root, kids, delay, busy)), (f"{name}-join", kids)]
    for name, look in (("ecef", False), ("ecef-lookahead", True)):
        parent, join = ecef_parents(mats, root, req.members, lookahead=look)
        kids = children_from_parents(n, parent, join)
        out += [(name, kids), (f"{name}-sorted", longest_first(root, kids, delay, busy))]
    return out


@register(
    "gap_aware",
    collectives=("bcast", "multicast"),
    paper=(
        "hetcoll; ECEF of Bhat, Raghavendra & Prasanna, ICDCS 1999 (Park et al. ref. [11]) "
        "+ local search, under Park et al. 2004 eq. (2)"
    ),
    complexity="O(N^3) greedy + O(steps M N h d log d) local search",
    summary="gap-aware latency tree: never slower than flat, hlot, spt under eq. (2)",
    models=("postal",),
    options=("max_steps", "starts"),
)
def gap_aware(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    max_steps: Annotated[int, Option(least=0)] | None = None,
    starts: Annotated[int, Option(least=0)] = 3,
) -> Schedule:
    """A latency tree for the postal/LogP model with overhead and gap (Park et al. eq. 2).

    1. Build candidate trees: ``flat`` (exactly as :func:`~hetcoll.planners.classic.flat`
       builds it, and re-ordered longest-first), the shortest-path tree, HLOT and the MST
       (as their planners build them, in both send orders), and the
       Earliest-Completing-Edge-First greedy of Bhat et al. with and without look-ahead
       (children in join order, and longest-first).
    2. Evaluate each with the exact eq. (2) recursion - the simulator's own arithmetic
       (:func:`~hetcoll.planners._trees.arrival_times`).
    3. Improve the ``starts`` best distinct candidates by local search (:func:`improve_tree`:
       re-attach a subtree on the critical path, or one sent before it, elsewhere).
    4. Return the fastest tree met, ties to the earliest candidate.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As for every planner (:func:`hetcoll.plan`).
    max_steps : int, optional
        Local-search steps per start (default ``2 N``); 0 skips the local search.
    starts : int
        How many of the best candidates to improve (default 3).

    Returns
    -------
    Schedule

    Notes
    -----
    Guarantees, for an unsegmented message under the model it plans for (the simulator's
    times, exactly):

    * never slower than ``flat``, ``hlot`` or ``spt`` (nor ``mst``), in either send
      order: they are candidates, compared with the simulator's arithmetic;
    * optimal when sends cost the sender nothing (eq. 3-4: ``postal`` with overhead, gap
      and per-byte cost 0): the shortest-path tree is optimal then, and is a candidate.

    With overhead and gap a hub's ``c``-th child waits ``(c - 1)(o + g)`` (eq. 2), so the
    latency-optimal trees (SPT, HLOT) overload the root and low-latency hubs; ECEF charges
    that wait as it builds, and the local search trades a little latency for fewer children
    on the critical hubs.  A pipelined (segmented) message is planned as one message.

    Complexity: candidates O(N^3) (the ECEF greedies, vectorised), local search O(steps M N
    h d log d) with M movable nodes, tree depth h and degree d.

    References
    ----------
    P. B. Bhat, C. S. Raghavendra & V. K. Prasanna, "Efficient Collective Communication in
    Distributed Heterogeneous Systems", ICDCS 1999 (ECEF, look-ahead) - reference [11] of
    Park et al., ICCSA 2004, whose eq. (2) is the model here.  Banikazemi et al. (ICPP 1998)
    FNF is the same greedy idea for sender-only costs.

    Examples
    --------
    The ``park-fig2`` matrix with a gap of 200 ms per send (eq. 2): the latency trees pay
    for their hubs, ``gap_aware`` pays least.

    >>> from hetcoll import load_platform, plan, simulate
    >>> p = load_platform("park-fig2").with_model({"name": "postal", "gap": 0.2})
    >>> [round(simulate(p, plan(p, "A", method=m)).makespan * 1e3, 6)
    ...  for m in ("flat", "hlot", "spt", "gap_aware")]
    [1900.0, 850.0, 810.0, 780.0]
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    mats = matrices(req)
    if max_steps is None:
        max_steps = 2 * len(req.members)
    name, kids = _searched(req, mats, max_steps, starts)
    return tree_schedule(req, "gap_aware", tree_edges(req.root, kids), start=name)


def _searched(req: Request, mats: Matrices, max_steps: int, starts: int):
    """``(name, children)``: the candidate (or ``name+local``) :func:`gap_aware` keeps.

    Inside :func:`~hetcoll.planners._shared.shared_work` the one found for the same
    request with the same matrices is handed out again, the matrices' times multiplied
    by the power of two that brings their largest finite entry into ``[1/2, 1)``: the
    search only adds its times and compares the sums, which multiplying every time by a
    power of two leaves exact, so matrices that are one another's times a power of two
    (``auto``'s slice sizes of a power-of-two message under costs proportional to the
    bytes, as :func:`~hetcoll.planners.pipelined._heuristic`) choose the same tree."""
    finite = [a[np.isfinite(a)] for a in (mats.delay_array, mats.busy_array)]
    most = max((float(np.abs(a).max()) for a in finite if a.size), default=0.0)
    unit = 2.0 ** -math.frexp(most)[1] if 0.0 < most < math.inf else 1.0
    key = (
        "gap_aware",
        req.root,
        tuple(req.members),
        max_steps,
        starts,
        mats.delay_array.shape,
        *(np.ascontiguousarray(a * unit).tobytes() for a in (mats.delay_array, mats.busy_array)),
    )
    return shared(key, lambda: _search(req, mats, max_steps, starts))


def _search(req: Request, mats: Matrices, max_steps: int, starts: int):
    """:func:`_searched`, computed."""
    root, delay, busy = req.root, mats.delay, mats.busy

    def exact(kids):
        return max(arrival_times(root, kids, delay, busy).values())

    scored = [(exact(kids), k, name, kids) for k, (name, kids) in enumerate(_candidates(req, mats))]
    best = min(scored, key=lambda t: (t[0], t[1]))
    seen: set[tuple[tuple[int, ...], ...]] = set()
    improved = []
    for _time, k, name, kids in sorted(scored, key=lambda t: (t[0], t[1])):
        if len(seen) >= starts or max_steps == 0:
            break
        key = tuple(tuple(sorted(c)) for c in kids)
        if key in seen:
            continue
        seen.add(key)
        new, steps = improve_tree(root, kids, delay, busy, max_steps=max_steps)
        if steps:
            improved.append((exact(new), len(scored) + k, f"{name}+local", new))
    best = min([best, *improved], key=lambda t: (t[0], t[1]))
    return best[2], best[3]
