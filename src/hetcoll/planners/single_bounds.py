"""Lower bounds on the run of pipelined trees of a plan graph, computed without simulating
them: :mod:`.multitree` skips the candidates whose bound already exceeds the fastest found
(their simulation could not change the choice; under ``multi_port`` it simulates them in
order of :func:`run_bound`, start-up and drain included), and :func:`hetcoll.compare.compare` the
single-tree planners (``PlannerInfo.single_tree``) where no tree at all can beat it
(:func:`no_tree_within`: a search that proves it, about a millisecond at n = 50)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from ..schedule import Schedule
from .pipelined import PlanGraph

__all__ = [
    "bound_problem",
    "flows_bound",
    "hops_bound",
    "no_tree_within",
    "port_bound",
    "run_bound",
    "tree_floor",
    "trees_exceed",
]

#: the most propagation rounds :func:`no_tree_within` spends before it gives up: the
#: proofs at n = 50 of ``bench_sizes.py --auto`` (seeds 0-3) take 1-4 rounds, about 1 ms;
#: where a tree fits (seed 4), a search to the end takes about 50 rounds (12 ms) to find
#: one, and this budget stops it at about 6 ms
SEARCH_BUDGET = 20
#: relative slack on the limit a proof of :func:`trees_exceed` must hold at: the loads it
#: adds in Python and the bounds' sparse sums round differently
_SLACK = 1e-7


def port_bound(prob, tree: list[int], total: int) -> float:
    """No less than the makespan of one pipelined tree (plan-graph edges ``tree``) carrying
    ``total`` slices: its busiest resource is busy its load (per full slice, the row of
    ``prob``) for each of the ``total - 1`` full slices (the argument of
    :func:`hetcoll.bounds.rate_bound`; the last slice may be short)."""
    return float(prob.loads(tree).max(initial=0.0)) * (total - 1) * (1 - 1e-9)


def run_bound(platform, req, s: Schedule) -> float:
    """No more than the simulated makespan of ``s`` when it is one pipelined tree of whole
    slices (each node sending segment by segment, its children in the tree's order, as
    :func:`~hetcoll.lowering.tree_program` and
    :func:`~hetcoll.planners.port_choice.listed_tree` make it) under exclusive links, two
    ports per node and no receive cost (``multi_port``: the send-order shortcut's domain,
    :func:`~hetcoll.simulator.ordered.simulate_ordered`); 0.0 otherwise.

    There a node's port takes its next send once the previous one released it and the
    slice has arrived, the send starts once the link's previous transfer released it,
    releases the port ``send`` later, the link ``hold`` later and arrives ``delay`` later.
    So with ``P_u`` a lower bound on the first slice's arrival at ``u`` (0 at the root),
    ``S_u`` the sum of ``u``'s sends per slice and ``s_<i`` those to its children before
    ``c_i``: the first slice leaves for ``c_i`` no sooner than ``P_u + s_<i`` (so
    ``P_{c_i} = P_u + s_<i + delay_i``), and the last of the ``J`` slices no sooner than
    ``P_u + s_<i + (J - 1) max(S_u, hold_i)`` (every earlier send of the port, and every
    earlier slice held on the link), then arrives ``delay_i`` later, and reaches the
    nodes below ``c_i`` no sooner than ``D(c_i)`` after that (``D(v)`` the most over
    ``v``'s children of ``s_<i + delay_i + D(c_i)``: the last slice's sends at ``v`` one
    after the other).  The makespan is no less than any such arrival.  Where a saturated
    port sets the rate (the root's on a Fig. 4 platform, n = 50, seed 4, 10^4 slices) the
    bound is within 10^-10 of the simulated time, so :mod:`.multitree` simulates only the
    candidate that can win.  The bound sums in another order than the run: less a
    relative 10^-9 (as :func:`port_bound`), far above the rounding of a run of at most
    :data:`~hetcoll.schedule.MAX_TIMETABLE_TRANSFERS` transfers.  O(N)."""
    from ..patterns import OrderedSend

    if len(s.flows) != 1 or s.timetable or s.hypercube is not None or s.rooted or s.per_root:
        return 0.0
    flow = s.flows[0]
    size = flow.segment_size or flow.nbytes
    if flow.relays or size <= 0 or flow.nbytes % size:
        return 0.0
    kids = {u: tuple(cs) for u, cs in flow.tree.children.items() if cs}
    if s.order and dict(s.order) != {
        u: tuple(OrderedSend(0, c) for c in cs) for u, cs in kids.items()
    }:
        return 0.0  # another send order than the tree's
    bound = req.model.bind(platform)
    if bound.unidirectional or bound.contention != "exclusive" or not kids:
        return 0.0
    pairs = [(u, c) for u, cs in kids.items() for c in cs]
    u_idx = np.array(platform.indices([u for u, _c in pairs]), dtype=np.int64)
    v_idx = np.array(platform.indices([c for _u, c in pairs]), dtype=np.int64)
    costs = bound.costs(u_idx, v_idx, np.full(len(pairs), size, dtype=np.int64))
    offset, hold = costs.window()
    lengths = np.diff(costs.offsets)
    send = np.asarray(costs.send_busy, dtype=float)
    delay = np.asarray(costs.delay, dtype=float)
    if (
        np.any(np.asarray(costs.recv_busy) != 0)
        or np.any(lengths > 1)
        or np.any(offset != 0)
        or not np.all(send > 0)
        or not np.all(delay > 0)
    ):
        return 0.0
    held = np.where(lengths == 1, hold, 0.0).tolist()
    cost = dict(zip(pairs, zip(send.tolist(), delay.tolist(), held, strict=True), strict=True))
    order = flow.tree.nodes  # parents before children
    below: dict[str, float] = {}
    for u in reversed(order):
        before, most = 0.0, 0.0
        for c in kids.get(u, ()):
            x, d, _h = cost[(u, c)]
            most = max(most, before + d + below[c])
            before += x
        below[u] = most
    slices = flow.nbytes // size - 1
    first = {flow.tree.root: 0.0}
    best = 0.0
    for u in order:
        cs = kids.get(u, ())
        per_slice = sum(cost[(u, c)][0] for c in cs)
        before = 0.0
        for c in cs:
            x, d, h = cost[(u, c)]
            first[c] = first[u] + before + d
            last = first[u] + before + slices * max(per_slice, h)
            best = max(best, last + d + below[c])
            before += x
    return best * (1 - 1e-9)


def tree_floor(prob, g: PlanGraph, total: int) -> float:
    """No more than :func:`port_bound` of any tree that reaches every node of the plan
    graph ``g`` from its root (``prob``'s edges ``g``'s): such a tree has an edge into each
    other node, which loads some resource at least its heaviest entry of ``prob``, and a
    sum of nonnegative loads is no less than any of its terms (in floats too).  So: over
    the nodes, the largest of the least heaviest entries of their edges in; 0 when a node
    has no edge in or a load is negative."""
    usage = prob.usage.tocsc()
    if usage.nnz and usage.data.min() < 0:
        return 0.0
    heaviest = np.asarray(usage.max(axis=0).toarray()).ravel()  # per edge
    least = np.full(g.k, np.inf)
    np.minimum.at(least, g.dst, heaviest)
    least[g.root] = 0.0
    if not np.all(np.isfinite(least)):
        return 0.0
    return float(least.max(initial=0.0)) * (total - 1) * (1 - 1e-9)


def trees_exceed(prob, slices: float, beat: float) -> bool:
    """Whether every spanning arborescence of ``prob``'s edges from its root keeps some
    resource busy longer than ``beat`` over ``slices`` slices (its load, the sum of its
    edges' rows of ``prob.usage``, times ``slices``), proved by :func:`no_tree_within`;
    False when not proved.  :func:`port_bound` of ``total`` slices is ``slices = (total - 1)
    * (1 - 1e-9)``; :meth:`hetcoll.bounds.SliceBound.of` of a tree carrying the message,
    ``slices = nbytes / slice_size``."""
    if not (slices > 0 and 0.0 < beat < np.inf):
        return False
    return no_tree_within(prob, beat / slices * (1 + _SLACK))


def no_tree_within(prob, limit: float, budget: int = SEARCH_BUDGET) -> bool:
    """Whether it is proved that no spanning arborescence of ``prob``'s edges from its root
    keeps every resource (a row of ``prob.usage``) busy at most ``limit`` per slice, the sum
    of its edges' entries; False when not proved (within ``budget`` propagation rounds).

    Each node but the root picks one parent edge.  Search: an edge is dropped when it would
    overload a resource with the edges fixed so far or close a cycle with them; a node with
    one edge left takes it; a branch fails when a node has none left, when some node
    cannot be reached from the root over the edges left, or when more nodes can take no
    child than a tree has leaves (``1 + sum(children - 1)`` over its nodes, each node's
    children at most those of its own edges left that fit its send port's room, cheapest
    first); then it branches on the parent of the node with the fewest edges left.  Every
    rule only drops what no such tree uses, so "no tree" is proved.  At a limit just under
    the fastest multi-tree time most nodes can feed one child only, and the leaves fail
    the first rounds (on the ``bench_sizes.py --auto`` platforms, where a single tree
    takes 1.4x the multi-tree's time).  Exponential in the worst case: ``budget`` caps it.
    """
    n, root = prob.n, prob.root
    if n < 2:
        return False
    usage = prob.usage.tocsc()
    if usage.nnz and usage.data.min() < 0:
        return False
    src, dst = prob.src.tolist(), prob.dst.tolist()
    rows = [usage.indices[usage.indptr[e] : usage.indptr[e + 1]].tolist() for e in range(prob.m)]
    vals = [usage.data[usage.indptr[e] : usage.indptr[e + 1]].tolist() for e in range(prob.m)]
    # the send port of each edge's sender (its row that every edge from it loads), if any
    send = [
        dict(zip(r, v, strict=True)).get(src[e], 0.0)
        for e, (r, v) in enumerate(zip(rows, vals, strict=True))
    ]
    cand: list[list[int]] = [[] for _ in range(n)]
    for e in range(prob.m):
        if dst[e] != root and src[e] != dst[e] and max(vals[e], default=0.0) <= limit:
            cand[dst[e]].append(e)
    steps = [0]

    def fits(e: int, used: list[float]) -> bool:
        return all(used[r] + x <= limit for r, x in zip(rows[e], vals[e], strict=True))

    def above(v: int, u: int, parent: list[int]) -> bool:  # v an ancestor of u (fixed edges)
        for _ in range(n + 1):
            if u == v:
                return True
            if u == root or parent[u] < 0:
                return False
            u = src[parent[u]]
        return True  # pragma: no cover - the fixed edges have no cycle

    def take(e: int, parent: list[int], used: list[float]) -> None:
        parent[dst[e]] = e
        for r, x in zip(rows[e], vals[e], strict=True):
            used[r] += x

    def feasible(cand: list[list[int]], parent: list[int], used: list[float]) -> bool:
        changed = True
        while changed:
            steps[0] += 1
            if steps[0] > budget:
                raise _GiveUp
            changed = False
            for v in range(n):
                if v == root or parent[v] >= 0:
                    continue
                left = [e for e in cand[v] if fits(e, used) and not above(v, src[e], parent)]
                if not left:
                    return False
                if len(left) == 1:
                    take(left[0], parent, used)
                    changed = True
                elif len(left) != len(cand[v]):
                    changed = True
                cand[v] = left
        # every node reachable from the root over the fixed edges and those left
        kids: list[list[int]] = [[] for _ in range(n)]
        for v in range(n):
            if v != root:
                for e in [parent[v]] if parent[v] >= 0 else cand[v]:
                    kids[src[e]].append(v)
        seen = [False] * n
        seen[root] = True
        stack = [root]
        while stack:
            for v in kids[stack.pop()]:
                if not seen[v]:
                    seen[v] = True
                    stack.append(v)
        if not all(seen):
            return False
        # leaves: nodes that can take no child, against 1 + sum(children - 1)
        count = [0] * n
        more: list[list[float]] = [[] for _ in range(n)]
        for v in range(n):
            if v == root:
                continue
            if parent[v] >= 0:
                count[src[parent[v]]] += 1
            else:
                for e in cand[v]:
                    more[src[e]].append(send[e])
        leaves, most = 0, 1
        for u in range(n):
            room, kids_u = limit - used[u], count[u]
            for x in sorted(more[u]):
                if x > room:
                    break
                room -= x
                kids_u += 1
            if kids_u == 0:
                if u == root:
                    return False
                leaves += 1
            most += max(kids_u - 1, 0)
        if leaves > most:
            return False
        free = [v for v in range(n) if v != root and parent[v] < 0]
        if not free:
            return True
        v = min(free, key=lambda v: (len(cand[v]), v))
        for e in cand[v]:
            again, fixed, busy = [list(c) for c in cand], list(parent), list(used)
            take(e, fixed, busy)
            if feasible(again, fixed, busy):
                return True
        return False

    try:
        return not feasible(cand, [-1] * n, [0.0] * usage.shape[0])
    except _GiveUp:
        return False


class _GiveUp(Exception):
    """:func:`no_tree_within` ran out of its budget."""


def hops_bound(prob, req, g: PlanGraph, s: Schedule, total: int) -> float:
    """:func:`port_bound` of single trees whose edges may be relayed (``binomial_graph``'s):
    each hop of each tree edge a plan-graph edge (counted once per tree edge it carries),
    0 when a hop is none (no bound known)."""
    edges = _flow_edges(req, g, s)
    if edges is None:
        return 0.0
    return port_bound(prob, [e for f in edges for e in f], total)


def flows_bound(prob, req, g: PlanGraph, s: Schedule) -> float:
    """No less than the makespan of ``s``, pipelined trees that each carry their flow's
    slices: every resource is busy its load (the rows of ``prob``, per full slice) for
    each slice of each flow, less one slice of the flow that loads it most (at most one
    slice of the message is short); 0 when a hop is not a plan-graph edge."""
    edges = _flow_edges(req, g, s)
    if edges is None:
        return 0.0
    busy = np.zeros(prob.rows)
    most = np.zeros(prob.rows)
    for f, tree in zip(s.flows, edges, strict=True):
        load = prob.loads(tree)
        busy += load * (-(-f.nbytes // f.segment_size) if f.segment_size else 1)
        np.maximum(most, load, out=most)
    return float((busy - most).max(initial=0.0)) * (1 - 1e-9)


def _flow_edges(req, g: PlanGraph, s: Schedule) -> list[list[int]] | None:
    """Per flow of ``s``, the plan-graph edges of its transfers (each hop of a relayed
    edge); None when a hop is not a plan-graph edge."""
    local = {req.ids[x]: k for k, x in enumerate(g.nodes.tolist())}
    index = {pair: e for e, pair in enumerate(zip(g.src.tolist(), g.dst.tolist(), strict=True))}
    out = []
    for f in s.flows:
        relay = f.relay_of()
        edges = []
        for u, v in f.tree.edges():
            for a, b in pairwise((u, *relay.get((u, v), ()), v)):
                e = index.get((local.get(a, -1), local.get(b, -1)))
                if e is None:
                    return None
                edges.append(e)
        out.append(edges)
    return out


def bound_problem(platform, req, g: PlanGraph):
    """The problem whose resource loads bound a run of the plan graph's trees (the
    one-port ports, or the multi-port model's ports and links), None when none is known
    (a multicast: its trees' hops may be relayed through other nodes)."""
    from .steady import model_problem

    if req.collective != "bcast":
        return None
    if g.ports != "multi":
        return g.problem()
    prob = model_problem(platform, req.root, req.message_size(), req.model)
    same = np.array_equal(prob.src, g.src) and np.array_equal(prob.dst, g.dst)
    return prob if same else None
