"""Single spanning trees for pipelined broadcasts on platform graphs (Beaumont, Marchal &
Robert, "Broadcast Trees for Heterogeneous Platforms", LIP RR-2004-46), and ours.

A message cut into slices of ``L`` bytes flows down one spanning tree; each node forwards
every slice to its children.  Under the bidirectional one-port model a tree sends one slice
every ``max_u max(sum_children T_uv, T_parent,u)`` seconds, under the multi-port model every
``max_u max(k_u send_u, max_i T_{u,v_i})`` (Sec. 3.2).  The heuristics search for a tree
that makes that period small:

=========================  ===================================================  ==========
planner                    idea                                                 paper
=========================  ===================================================  ==========
``prune_simple``           delete the heaviest edges while all stay reachable   Alg. 1
``prune_degree``           delete from the node of largest weighted out-degree  Alg. 2
``grow_tree``              Prim, cost = the out-degree the node would have      Alg. 3
``binomial_graph``         MPI's binomial tree, relayed along shortest paths    Alg. 4
``grow_tree_multiport``    Alg. 3 with the multi-port period                    Alg. 5
``prune_degree_multiport`` Alg. 2 with the multi-port period                    Fig. 5
``lp_prune``               delete the edges carrying fewest slices in the LP    Alg. 6
``lp_grow``                Prim on the edges carrying most slices in the LP     Alg. 7
``throughput_tree``        ours: the best of them, then a local search          --
=========================  ===================================================  ==========

The slice size is the request's segment size (the whole message when not pipelined).
Under a model where only neighbours talk (``one_port``, ``one_port_uni``, ``multi_port``)
the trees use the links' digraph; under any other, every pair is an edge costing the
model's transfer time.  A multicast plans on its members, an edge between members that
are not neighbours costing the store-and-forward path (relayed by the schedule).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..digraph import reachable_from
from ..platform import Platform
from ..schedule import Schedule
from ._common import Request, prepare, tree_schedule
from ._registry import register
from ._shared import is_shared, scale_class, scaled, shared
from ._shared import loads as shared_loads
from ._shared import packing as shared_packing
from .steady import Packing, SteadyProblem

__all__ = [
    "PlanGraph",
    "plan_graph",
    "prune_simple",
    "prune_degree",
    "grow_tree",
    "binomial_graph",
    "grow_tree_multiport",
    "prune_degree_multiport",
    "lp_prune",
    "lp_grow",
    "throughput_tree",
    "node_periods",
]

_OPS = ("bcast", "multicast")
#: how many of the optimal packing's trees throughput_tree improves (the least busy ones)
STARTS = 16
_PAPER = "Beaumont, Marchal & Robert 2004 (LIP RR-2004-46)"


@dataclass(frozen=True)
class PlanGraph:
    """A request's planning graph: local nodes ``0 .. k-1`` (platform indices ``nodes``),
    edges ``src -> dst`` with ``T`` (one-port occupation of a slice) and ``send`` (the
    sender's busy time, multi-port), the root, and the model's port kind."""

    nodes: np.ndarray
    root: int
    src: np.ndarray
    dst: np.ndarray
    T: np.ndarray
    send: np.ndarray
    ports: str  # "bidirectional", "unidirectional" or "multi"
    nbytes: int

    @property
    def k(self) -> int:
        return len(self.nodes)

    def problem(self) -> SteadyProblem:
        """The one-port steady-state problem of this graph (LP (2), the packing)."""
        ports = "unidirectional" if self.ports == "unidirectional" else "bidirectional"
        return SteadyProblem(self.k, self.root, self.src, self.dst, self.T, self.nbytes, ports)


def plan_graph(req: Request) -> PlanGraph:
    """The planning graph of ``req`` (see the module docstring)."""
    size = max(req.message_size(), 1)
    bound = req.bound
    members = np.array(req.members, dtype=np.int64)
    root = int(np.flatnonzero(members == req.root)[0])
    graph = getattr(bound, "graph", None)
    multi = getattr(bound, "multi_port", False)
    ports = "multi" if multi else ("unidirectional" if bound.unidirectional else "bidirectional")
    if graph is not None and len(members) == req.platform.__len__():
        T, send, _ = bound.edge_costs(size)
        return PlanGraph(members, root, graph.src, graph.dst, T, send, ports, size)
    k = len(members)
    src, dst = (a.ravel() for a in np.nonzero(~np.eye(k, dtype=bool)))
    D = np.array(bound.delay_matrix(size), dtype=float)[np.ix_(members, members)]
    S = np.array(bound.send_matrix(size), dtype=float)[np.ix_(members, members)]
    return PlanGraph(members, root, src, dst, D[src, dst], S[src, dst], ports, size)


# -- evaluation --------------------------------------------------------------------------------


def node_periods(g: PlanGraph, edges: Iterable[int]) -> np.ndarray:
    """Each node's seconds per slice in the tree made of ``edges`` under ``g``'s model:
    one-port ``max(out, in)`` (unidirectional ``out + in``), multi-port
    ``max(sum send, max T)`` (Sec. 3.1, 3.2)."""
    e = np.fromiter(edges, dtype=np.int64)
    out = np.zeros(g.k)
    inc = np.zeros(g.k)
    np.add.at(inc, g.dst[e], g.T[e])
    if g.ports == "multi":
        sends = np.zeros(g.k)
        np.add.at(sends, g.src[e], g.send[e])
        longest = np.zeros(g.k)
        np.maximum.at(longest, g.src[e], g.T[e])
        return np.maximum(sends, longest)
    np.add.at(out, g.src[e], g.T[e])
    return out + inc if g.ports == "unidirectional" else np.maximum(out, inc)


def tree_period_of(g: PlanGraph, edges: Iterable[int]) -> float:
    """The tree's period: its busiest node's :func:`node_periods`."""
    return float(node_periods(g, edges).max(initial=0.0))


def _schedule(req: Request, g: PlanGraph, name: str, edges: Iterable[int], **params) -> Schedule:
    """The tree of ``edges`` (local edge indices) as a schedule: each node sends to the
    child whose subtree takes longest to fill first (latency), ties by index."""
    edges = list(edges)
    kids: dict[int, list[int]] = {}
    for e in edges:
        kids.setdefault(int(g.src[e]), []).append(e)
    height = np.zeros(g.k)
    order = _bfs(g, edges)
    for v in reversed(order):
        for e in kids.get(v, ()):
            height[v] = max(height[v], g.T[e] + height[g.dst[e]])
    pairs = []
    for v in order:
        for e in sorted(
            kids.get(v, ()), key=lambda e: (-(g.T[e] + height[g.dst[e]]), int(g.dst[e]))
        ):
            pairs.append((int(g.nodes[g.src[e]]), int(g.nodes[g.dst[e]])))
    return tree_schedule(req, name, pairs, **params)


def _bfs(g: PlanGraph, edges: list[int]) -> list[int]:
    kids: dict[int, list[int]] = {}
    for e in edges:
        kids.setdefault(int(g.src[e]), []).append(int(g.dst[e]))
    order = [g.root]
    for v in order:
        order.extend(sorted(kids.get(v, ())))
    return order


# -- pruning (Alg. 1, 2, 6 and Multiport-Prune-Degree) -----------------------------------------


class _Pruner:
    """The edges kept so far; whether one can go with every node still reachable from the
    root.  An edge found necessary stays necessary (removing edges never helps another go),
    so each edge is examined at most once: O(E^2) in all."""

    def __init__(self, g: PlanGraph) -> None:
        self.g = g
        self.alive = np.ones(len(g.src), dtype=bool)
        self.essential = np.zeros(len(g.src), dtype=bool)
        self.out: list[list[int]] = [[] for _ in range(g.k)]
        for e, u in enumerate(g.src.tolist()):
            self.out[u].append(e)
        self.indeg = np.bincount(g.dst, minlength=g.k)
        self.count = len(g.src)

    def try_remove(self, e: int) -> bool:
        g = self.g
        if not self.alive[e] or self.essential[e]:
            return False
        v = int(g.dst[e])
        if v != g.root and self.indeg[v] == 1:
            self.essential[e] = True
            return False
        if v != g.root and not self._reaches(v, e):
            self.essential[e] = True
            return False
        self.alive[e] = False
        self.indeg[v] -= 1
        self.count -= 1
        return True

    def _reaches(self, target: int, skip: int) -> bool:
        """Is ``target`` reachable from the root without edge ``skip``?  (If so, every node
        is: a simple path through ``skip`` ends at its head, which the new path reaches.)"""
        g = self.g
        seen = np.zeros(g.k, dtype=bool)
        seen[g.root] = True
        stack = [g.root]
        alive, dst = self.alive, g.dst
        while stack:
            u = stack.pop()
            for f in self.out[u]:
                if f == skip or not alive[f]:
                    continue
                w = int(dst[f])
                if w == target:
                    return True
                if not seen[w]:
                    seen[w] = True
                    stack.append(w)
        return False

    def edges(self) -> list[int]:
        return np.flatnonzero(self.alive).tolist()


def _check_spanning(g: PlanGraph) -> None:
    seen = reachable_from(g.k, g.src, g.dst, g.root)
    if not seen.all():  # pragma: no cover - prepare() checked reachability
        raise AssertionError("planning graph is not spanning")


def _prune_in_order(g: PlanGraph, order: Iterable[int]) -> list[int]:
    """One pass over ``order``, deleting every edge that can go: the result is minimal,
    hence a spanning arborescence (Alg. 1 and 6)."""
    _check_spanning(g)
    pruner = _Pruner(g)
    for e in order:
        pruner.try_remove(int(e))
    return pruner.edges()


def _prune_by_node(g: PlanGraph, metric) -> list[int]:
    """Alg. 2: repeatedly take the nodes by non-increasing ``metric(u, kept edges)``, delete
    the heaviest edge of the first that has a deletable one, and sort again."""
    _check_spanning(g)
    pruner = _Pruner(g)
    by_node = [sorted(es, key=lambda e: (-g.T[e], e)) for es in pruner.out]
    values = [metric(u, [e for e in by_node[u] if pruner.alive[e]]) for u in range(g.k)]
    while pruner.count > g.k - 1:
        for u in sorted(range(g.k), key=lambda u: (-values[u], u)):
            if any(pruner.try_remove(e) for e in by_node[u] if pruner.alive[e]):
                # a deletion changes only u's kept edges: only u's metric is computed again
                values[u] = metric(u, [e for e in by_node[u] if pruner.alive[e]])
                break  # "goto 4": sort the nodes again
        else:  # pragma: no cover - a non-minimal graph always has a deletable edge
            break
    return pruner.edges()


def _one_port_degree(g: PlanGraph):
    return lambda u, es: float(g.T[es].sum()) if es else 0.0


def _multi_port_period(g: PlanGraph):
    return lambda u, es: max(float(g.send[es].sum()), float(g.T[es].max())) if es else 0.0


# -- growing (Alg. 3, 5, 7) ------------------------------------------------------------------


def _grow(g: PlanGraph, cost) -> list[int]:
    """Prim from the root: repeatedly add the edge from the tree to a new node of least
    ``cost(e, children so far)``; costs only grow as a node gains children, so stale heap
    entries are pushed back with their new cost.  O(E log E)."""
    out: list[list[int]] = [[] for _ in range(g.k)]
    for e, u in enumerate(g.src.tolist()):
        out[u].append(e)
    children: list[list[int]] = [[] for _ in range(g.k)]
    inside = np.zeros(g.k, dtype=bool)
    inside[g.root] = True
    heap = [(cost(e, children[g.root]), e) for e in out[g.root]]
    heapq.heapify(heap)
    chosen = []
    while heap:
        c, e = heapq.heappop(heap)
        u, v = int(g.src[e]), int(g.dst[e])
        if inside[v]:
            continue
        now = cost(e, children[u])
        if now > c:
            heapq.heappush(heap, (now, e))
            continue
        inside[v] = True
        chosen.append(e)
        children[u].append(e)
        for f in out[v]:
            if not inside[g.dst[f]]:
                heapq.heappush(heap, (cost(f, children[v]), f))
    return chosen


def _grow_one_port(g: PlanGraph) -> list[int]:
    # the weighted out-degree u would have with this edge (the prose of Sec. 3.1.3)
    return _grow(
        g, lambda e, kids: float(g.T[kids].sum()) + float(g.T[e]) if kids else float(g.T[e])
    )


def _grow_multi_port(g: PlanGraph) -> list[int]:
    # the period u would have with this edge (Alg. 5, after adding it)
    def cost(e: int, kids: list[int]) -> float:
        sends = float(g.send[kids].sum()) + float(g.send[e])
        longest = max(float(g.T[kids].max()) if kids else 0.0, float(g.T[e]))
        return max(sends, longest)

    return _grow(g, cost)


# -- the LP's loads ----------------------------------------------------------------------------


def lp_loads(g: PlanGraph) -> np.ndarray:
    """``n_uv`` of the optimal multi-tree solution (well defined: least link time)."""
    if g.k == 1:
        return np.zeros(len(g.src))
    prob = g.problem()
    return shared_loads(prob, shared_packing(prob))


# -- registered planners -----------------------------------------------------------------------


def _planner(name: str, summary: str, alg: str, complexity: str, models=None, single=True):
    # single: one tree of the plan graph's edges (binomial_graph's edges may be relayed)
    return register(
        name,
        collectives=_OPS,
        paper=f"{_PAPER}, {alg}",
        complexity=complexity,
        summary=summary,
        models=models,
        pipelined=True,
        single_tree=single,
    )


def _start(platform, root, members, model, nbytes, segment_size) -> tuple[Request, PlanGraph]:
    req = prepare(platform, root, members, model, nbytes, segment_size)
    return req, plan_graph(req)


@_planner(
    "prune_simple", "delete the heaviest edges while every node stays reachable", "Alg. 1", "O(E^2)"
)
def prune_simple(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Simple platform pruning (Sec. 3.1.1, Alg. 1): go through the edges by non-increasing
    ``T_uv`` and delete each one whose removal keeps every node reachable from the root.

    One pass suffices: what remains is minimal, hence a spanning arborescence.  Ties: the
    lower edge index first.  O(E^2) (a reachability search per edge).
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "prune_simple", _heuristic(g, "prune_simple"))


@_planner(
    "prune_degree",
    "delete edges from the node of largest weighted out-degree",
    "Alg. 2",
    "O(E^2 + E N log N)",
)
def prune_degree(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Refined platform pruning (Sec. 3.1.2, Alg. 2): take the nodes by non-increasing
    weighted out-degree ``sum T_uv`` over the edges kept, and delete the heaviest deletable
    edge of the first node that has one.

    The pseudocode's ``goto 4`` sits where it would end the pass early; the prose ("trying
    to delete an edge from the node which maximizes this metric") re-sorts the nodes after
    each deletion, which is what this does.  "Connected" is every node reachable from the
    root.
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "prune_degree", _heuristic(g, "prune_degree"))


@_planner(
    "grow_tree",
    "Prim: attach by the weighted out-degree the sender would have",
    "Alg. 3",
    "O(E log E)",
)
def grow_tree(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Growing a minimum weighted out-degree tree (Sec. 3.1.3, Alg. 3).

    From the root, repeatedly add the edge ``(u, w)`` from the tree to a new node of least
    cost, the weighted out-degree ``u`` *would* have: ``sum_{children v} T_uv + T_uw``.
    The pseudocode's update (``cost(u, w) += cost(u, v)``) would count earlier children
    several times; the prose's metric is used.  O(E log E).
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "grow_tree", _heuristic(g, "grow_tree"))


@_planner(
    "binomial_graph",
    "MPI's binomial tree on the platform graph, relayed",
    "Alg. 4",
    "O(N log N + relays)",
    single=False,
)
def binomial_graph(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """The binomial tree of Alg. 4 (Sec. 3.1.4) on the platform graph.

    With the root at position 0 and the others in relative-rank order, a binomial tree on
    the first ``2^m`` positions (``m = floor(log2 N)``); each remaining position ``x``
    receives from ``x - 2^m`` (the prose: the pseudocode's path goes from ``x`` to
    ``x - 2^m``).  A transfer between nodes with no link is relayed along the shortest
    path, store and forward, each node on the way receiving and sending it.
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    pos = [*req.members[req.members.index(req.root) :], *req.members[: req.members.index(req.root)]]
    n = len(pos)
    m = n.bit_length() - 1
    pairs = []
    for p in range(m):
        step = 1 << (m - p)
        for x in range(1 << p):
            pairs.append((pos[x * step], pos[x * step + step // 2]))
    pairs += [(pos[x - (1 << m)], pos[x]) for x in range(1 << m, n)]
    pairs.sort(key=lambda e: pos.index(e[0]))  # a parent's sends in the order they were added
    return tree_schedule(req, "binomial_graph", pairs)


@_planner(
    "grow_tree_multiport",
    "Alg. 3 with the multi-port period max(k send_u, max T_uv)",
    "Alg. 5",
    "O(E log E)",
    models=("multi_port",),
)
def grow_tree_multiport(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Multi-port growing tree (Sec. 3.2, Alg. 5): Prim with the cost of edge ``(u, w)``
    the period ``u`` has *after* adding it, ``max((k_u + 1) send_u, max_i T_{u,v_i},
    T_uw)``.  O(E log E)."""
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "grow_tree_multiport", _heuristic(g, "grow_tree_multiport"))


@_planner(
    "prune_degree_multiport",
    "Alg. 2 with the multi-port period",
    "Sec. 5.2.2 (Multiport-Prune-Degree)",
    "O(E^2 + E N log N)",
    models=("multi_port",),
)
def prune_degree_multiport(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Multiport-Prune-Degree (Sec. 5.2.2): Alg. 2 with the node metric
    ``max(k_u send_u, max_i T_{u,v_i})`` over the edges kept."""
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "prune_degree_multiport", _heuristic(g, "prune_degree_multiport"))


@_planner(
    "lp_prune",
    "delete the edges carrying the fewest slices in the optimal LP",
    "Alg. 6",
    "LP + O(E^2)",
)
def lp_prune(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Communication graph pruning (Sec. 4.2.1, Alg. 6).

    Weights ``n_uv`` from the optimal multi-tree solution (the least-link-time one, so they
    are well defined: :func:`hetcoll.planners.steady.edge_loads`); delete, in one pass, the
    edges carrying the *fewest* slices first (the prose; the pseudocode sorts the other
    way), each when every node stays reachable.  Ties: the slower edge first, then index.
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "lp_prune", _heuristic(g, "lp_prune", lp_loads(g)))


@_planner(
    "lp_grow",
    "Prim on the edges carrying the most slices in the optimal LP",
    "Alg. 7",
    "LP + O(E log E)",
)
def lp_grow(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Growing a tree over the communication graph (Sec. 4.2.2, Alg. 7): from the root,
    repeatedly add the edge from the tree to a new node carrying the most slices ``n_uv``
    in the optimal multi-tree solution (ties: the faster edge, then index)."""
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    return _schedule(req, g, "lp_grow", _heuristic(g, "lp_grow", lp_loads(g)))


# -- ours ------------------------------------------------------------------------------------


def paper_trees(g: PlanGraph, loads: np.ndarray | None = None) -> dict[str, list[int]]:
    """The trees of the paper's heuristics for ``g``'s model (local edge indices)."""
    names = ["prune_simple"]
    if g.ports == "multi":
        names += ["grow_tree_multiport", "prune_degree_multiport"]
    names += ["grow_tree", "prune_degree"]
    trees = {name: _heuristic(g, name) for name in names}
    if loads is not None:
        trees |= {name: _heuristic(g, name, loads) for name in ("lp_prune", "lp_grow")}
    return trees


def _heuristic(g: PlanGraph, name: str, loads: np.ndarray | None = None) -> list[int]:
    """The tree (edges of ``g``) of the paper's heuristic ``name`` (``lp_prune`` and
    ``lp_grow`` from the LP's ``loads``).  Inside :func:`~hetcoll.planners._shared.
    shared_work` the one made for the same graph (and loads) is handed out again:
    ``auto`` plans the heuristic's planner, and ``throughput_tree`` and ``multi_tree``
    start their searches from the same trees, at each slice size.  The key holds every
    input, its times multiplied by the power of two that brings the largest into
    ``[1/2, 1)`` (its loads, rates, divided by it): exact, so two graphs share a key
    exactly when each time of one is the other's times a power of two, and then every
    sum and comparison a heuristic makes is the other's scaled (as ``throughput_tree``'s
    search, :func:`best_tree`): one tree for the slice sizes of a power-of-two message
    under costs proportional to the bytes."""
    most = max(float(g.T.max(initial=0.0)), float(g.send.max(initial=0.0)))
    unit = 2.0 ** -math.frexp(most)[1] if 0.0 < most < math.inf else 1.0
    arrays = [g.nodes, g.src, g.dst, g.T * unit, g.send * unit]
    if loads is not None:
        arrays.append(np.asarray(loads, dtype=float) / unit)
    key = (
        "heuristic tree",
        name,
        g.root,
        g.ports,
        *(np.ascontiguousarray(a).tobytes() for a in arrays),
    )
    return list(shared(key, lambda: _HEURISTICS[name](g, loads)))


def _prune_heaviest(g: PlanGraph, _loads) -> list[int]:
    return _prune_in_order(g, sorted(range(len(g.src)), key=lambda e: (-g.T[e], e)))


def _prune_least_loaded(g: PlanGraph, loads) -> list[int]:
    return _prune_in_order(g, sorted(range(len(g.src)), key=lambda e: (loads[e], -g.T[e], e)))


#: each heuristic's tree from the graph (and the LP's loads)
_HEURISTICS = {
    "prune_simple": _prune_heaviest,
    "prune_degree": lambda g, _loads: _prune_by_node(g, _one_port_degree(g)),
    "grow_tree": lambda g, _loads: _grow_one_port(g),
    "grow_tree_multiport": lambda g, _loads: _grow_multi_port(g),
    "prune_degree_multiport": lambda g, _loads: _prune_by_node(g, _multi_port_period(g)),
    "lp_prune": _prune_least_loaded,
    "lp_grow": lambda g, loads: _grow(g, lambda e, kids: (-loads[e], g.T[e])),
}


@register(
    "throughput_tree",
    collectives=_OPS,
    paper="hetcoll: the best of Beaumont et al.'s trees, then a local search on the period",
    complexity="LP + the heuristics + O(rounds E)",
    summary="best paper tree improved by moving children to less busy parents",
    pipelined=True,
    single_tree=True,
)
def throughput_tree(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Our single tree for pipelined broadcasts: never worse than the paper's heuristics.

    Starts from every tree of the paper's heuristics (Alg. 1-3, 5-7 with the LP's loads)
    and from the :data:`STARTS` least busy trees of the optimal multi-tree packing,
    improves each by a local search on the period under the request's model, and keeps the
    best (so it is never worse than the best paper heuristic).  A move re-parents one node
    ``c`` (with its subtree) to another in-neighbour ``w``
    outside that subtree; it is taken when the busiest of the three nodes it changes
    (old parent, ``w``, ``c``) becomes strictly less busy, so the sorted vector of node
    periods decreases lexicographically and the search ends.  Moves are tried on the
    busiest nodes first.
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    if g.k == 1:
        return _schedule(req, g, "throughput_tree", [])
    name, edges, _ = best_tree(g, shared_packing(g.problem()))
    return _schedule(req, g, "throughput_tree", edges, start=name)


def best_tree(g: PlanGraph, packing: Packing) -> tuple[str, list[int], dict[str, list[int]]]:
    """:func:`throughput_tree`'s tree (its start's name and its edges) from the optimal
    ``packing`` of ``g``'s problem, and the paper heuristics' trees it started from (the
    answer kept by :func:`~hetcoll.planners._shared.shared_work` for the kept packing)."""
    prob = g.problem()
    if not is_shared(prob, packing):
        return _best_tree(g, packing)
    # the same trees at every slice size of the problem's scale class
    cls, scale = scale_class(prob)
    key = ("best_tree", cls, g.nodes.tobytes(), (g.send / scale).tobytes(), g.ports)
    name, edges, papers = scaled(key, scale, lambda: _best_tree(g, packing), _same)
    return name, list(edges), {k: list(v) for k, v in papers.items()}


def _same(answer: Any, _ratio: float) -> Any:
    """An answer without times: the same at every scale."""
    return answer


def _best_tree(g: PlanGraph, packing: Packing) -> tuple[str, list[int], dict[str, list[int]]]:
    prob = g.problem()
    starts = paper_trees(g, shared_loads(prob, packing))
    papers = dict(starts)
    # the optimal multi-tree solution's own trees, the least busy first
    columns = sorted(packing.columns, key=lambda t: (tree_period_of(g, t), t.tolist()))
    for j, tree in enumerate(columns[:STARTS]):
        starts[f"packing tree {j}"] = tree.tolist()
    best: tuple[float, str, list[int]] | None = None
    for name, tree in starts.items():
        better = _local_search(g, tree)
        key = (tree_period_of(g, better), name, better)
        if best is None or key[0] < best[0]:
            best = key
    assert best is not None
    return best[1], best[2], papers


def _local_search(g: PlanGraph, tree: list[int], max_rounds: int = 10_000) -> list[int]:
    """Re-parent nodes while the max period among the nodes a move touches decreases
    (plain Python lists: the moves look at a few numbers each)."""
    search = _Search(g, tree)
    for _ in range(max_rounds):
        if not (search.single_move() or search.eject()):
            break
    return [e for e in search.parent_edge if e >= 0]


class _Search:
    """A tree under local search: each node's parent edge and children."""

    def __init__(self, g: PlanGraph, tree: list[int]) -> None:
        self.g = g
        self.k = k = g.k
        self.T = g.T.tolist()
        self.send = g.send.tolist()
        self.src = g.src.tolist()
        self.multi = g.ports == "multi"
        self.uni = g.ports == "unidirectional"
        self.parent_edge = [-1] * k
        for e in tree:
            self.parent_edge[int(g.dst[e])] = int(e)
        self.in_edges: list[list[int]] = [[] for _ in range(k)]
        for e, v in enumerate(g.dst.tolist()):
            if self.src[e] != v:
                self.in_edges[v].append(e)
        self.kids: list[set[int]] = [set() for _ in range(k)]
        for v in range(k):
            if self.parent_edge[v] >= 0:
                self.kids[self.src[self.parent_edge[v]]].add(v)
        # each node's period, kept up to date by move() (which changes three of them)
        self.periods = [self.period(u) for u in range(k)]

    def period(self, u: int, extra: int = -1, without: int = -1, pe: int = -2) -> float:
        T, pes = self.T, self.parent_edge
        es = [pes[c] for c in self.kids[u] if c != without]
        if extra >= 0:
            es.append(extra)
        if self.multi:
            return max(sum(self.send[e] for e in es), max(T[e] for e in es)) if es else 0.0
        out = sum(T[e] for e in es)
        up = pes[u] if pe == -2 else pe
        inc = T[up] if up >= 0 else 0.0
        return out + inc if self.uni else max(out, inc)

    def in_subtree(self, x: int, top: int) -> bool:
        pes, src = self.parent_edge, self.src
        while x >= 0:
            if x == top:
                return True
            x = src[pes[x]] if pes[x] >= 0 else -1
        return False

    def move(self, c: int, e: int) -> None:
        old, new = self.src[self.parent_edge[c]], self.src[e]
        self.kids[old].discard(c)
        self.kids[new].add(c)
        self.parent_edge[c] = e
        # the nodes whose period reads c's parent edge (the same sums as a recount)
        periods, period = self.periods, self.period
        periods[old], periods[new], periods[c] = period(old), period(new), period(c)

    def single_move(self) -> bool:
        """One move that lowers the busiest of the nodes it touches, busiest nodes first."""
        root, T, pes, src = self.g.root, self.T, self.parent_edge, self.src
        periods = self.periods
        for u in sorted(range(self.k), key=lambda u: (-periods[u], u)):
            # the nodes whose move may relieve u: its children (out-load) or u itself (in)
            for c in [*sorted(self.kids[u], key=lambda c: (-T[pes[c]], c)), u]:
                if c == root or pes[c] < 0:
                    continue
                old = src[pes[c]]
                before = max(periods[old], periods[c])
                left = None  # old's period without c: the same for every e
                for e in self.in_edges[c]:
                    w = src[e]
                    if w == old or self.in_subtree(w, c):
                        continue
                    if left is None:
                        left = self.period(old, without=c)
                    after = max(left, self.period(w, extra=e), self.period(c, pe=e))
                    if after < max(before, periods[w]) * (1 - 1e-15):
                        self.move(c, e)
                        return True
        return False

    def eject(self) -> bool:
        """Two moves at once, when no single one helps: a child ``c`` of the busiest node
        goes to ``w`` while a child ``d`` of ``w`` makes room by going to ``x``; taken when
        every node they touch ends below the busiest node's period (an ejection chain of
        length 2)."""
        T, pes, src = self.T, self.parent_edge, self.src
        periods = self.periods
        u = max(range(self.k), key=lambda v: (periods[v], -v))
        top = periods[u]
        for c in sorted(self.kids[u], key=lambda c: (-T[pes[c]], c)):
            if self.period(u, without=c) >= top:
                continue
            for e in self.in_edges[c]:
                w = src[e]
                if w == u or T[e] >= top or self.in_subtree(w, c):
                    continue
                for d in sorted(self.kids[w], key=lambda d: (-T[pes[d]], d)):
                    if self.period(w, extra=e, without=d) >= top:
                        continue
                    for f in self.in_edges[d]:
                        x = src[f]
                        if x in (w, u) or T[f] >= top or self.in_subtree(x, d):
                            continue
                        if self.in_subtree(x, c) or self.period(x, extra=f) >= top:
                            continue
                        back_c, back_d = pes[c], pes[d]
                        self.move(c, e)
                        self.move(d, f)
                        if max(self.period(v) for v in (u, w, x, c, d)) < top:
                            return True
                        self.move(d, back_d)  # undo: c or d got a slower way in
                        self.move(c, back_c)
        return False


def _bfs_edges(g: PlanGraph, tree: np.ndarray) -> list[int]:
    """The edges of ``tree`` (edge indices of the plan graph ``g``) breadth-first from the
    root, each node's in the order of their heads.  O(N log N)."""
    kids: dict[int, list[int]] = {}
    for e in tree.tolist():
        kids.setdefault(int(g.src[e]), []).append(e)
    out, queue = [], [g.root]
    for v in queue:
        for e in sorted(kids.get(v, ()), key=lambda e: int(g.dst[e])):
            out.append(e)
            queue.append(int(g.dst[e]))
    return out
