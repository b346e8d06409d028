"""The optimal steady-state throughput of a pipelined broadcast (Beaumont, Marchal & Robert
2004, Sec. 4.1), exactly and fast.

A message cut into slices of ``L`` bytes is broadcast along several spanning trees at once
(the MTP problem); under the bidirectional one-port model a node sends for at most one time
unit per time unit and receives for at most one.  Two exact methods give the optimal number
of slices per second ``TP`` and the slices ``n_uv`` each edge carries:

- :func:`lp_throughput`, the paper's linear program (2): one flow per destination ``w``.
  **As printed it over-estimates the optimum**: its conservation law (c) leaves the source
  and ``w`` free, so the flow "to ``w``" can be a circulation ``s -> a -> s`` plus one
  ``w -> b -> w`` that carries nothing from ``s`` to ``w``.  On the path 0-1-2-3 with
  ``T = 1, 10, 1`` the printed LP gives 1.0 slice per time unit, the true optimum is 0.1.
  We forbid flow to ``w`` on the edges that enter the source or leave ``w``
  (``printed=False``, the default); ``printed=True`` keeps the paper's text.
- :func:`pack_arborescences`, the fast one: by Edmonds' branching theorem the optimum is a
  packing of spanning arborescences under the per-node port constraints, a master LP with
  ``2 N`` rows (HiGHS through ``highspy``, warm-started as columns arrive) whose columns are
  found by a minimum-cost arborescence (:func:`hetcoll.arborescence.min_arborescence`)
  under the dual prices, stabilised by Wentges' smoothing.  Every answer carries an upper
  bound from the dual prices (``sum of prices / cheapest arborescence``) and stops when the
  packing's value meets it (1e-10 relative); it also hands back the trees.

``n_uv`` is not unique (the LP has many optimal vertices), so the LP heuristics would
depend on the solver's choice.  :func:`edge_loads` makes it well defined: among packings
of optimal throughput, the one minimising ``sum_uv T_uv n_uv`` (the least link time per
time unit; a second column generation, or a second LP on (2)).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..arborescence import (
    balanced_arborescence,
    depths,
    min_arborescence,
    shortest_path_arborescence,
)
from ..errors import PlannerError, PlannerWarning
from ..platform import Platform

__all__ = [
    "SteadyProblem",
    "Packing",
    "LPResult",
    "Optimum",
    "steady_problem",
    "model_problem",
    "unbounded",
    "pack_arborescences",
    "edge_loads",
    "edge_loads_certified",
    "lp_throughput",
    "optimum",
    "tree_period",
]

#: relative gap at which column generation stops (the packing is within it of the optimum)
GAP = 1e-10
#: the second stage (least link time, :func:`edge_loads`) stops when its certified gap to
#: the least link time is below this, relative
LOAD_TOL = 1e-6
#: ... or after this many new trees (it refines loads that are already optimal in throughput;
#: the gap left is certified and reported, see :func:`edge_loads_certified`)
LOAD_COLUMNS = 2000
#: seconds the LP method may take by default (its size grows as N^2 E: at N = 100 it can
#: run for minutes)
LP_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class SteadyProblem:
    """A broadcast from ``root`` over edges ``src[e] -> dst[e]``, each busy ``T[e]`` seconds
    per slice of ``nbytes`` bytes, under the one-port model (``ports``).

    ``resources``, when given, replaces the one-port ports: a sparse matrix (rows x edges)
    of the seconds a slice over each edge keeps each resource busy (a node's send or receive
    port, a link), every resource busy at most one second per second
    (:func:`model_problem`); ``ports`` then only names them."""

    n: int
    root: int
    src: np.ndarray
    dst: np.ndarray
    T: np.ndarray
    nbytes: int
    ports: str = "bidirectional"
    ids: tuple[str, ...] = ()
    resources: Any = None

    @property
    def m(self) -> int:
        return len(self.src)

    @cached_property
    def depth(self) -> np.ndarray:
        """Hops of every node from the root."""
        return depths(self.n, self.src, self.dst, self.root)

    @cached_property
    def usage(self) -> Any:
        """Seconds per slice each edge keeps each resource busy (scipy CSC, rows x edges):
        ``resources``, else the one-port ports (out-ports then in-ports, or one per node)."""
        from scipy.sparse import csc_matrix

        if self.resources is not None:
            return csc_matrix(self.resources)
        out_row, in_row = self.row_of_edges()
        edges = np.arange(self.m)
        rows = 2 * self.n if self.ports == "bidirectional" else self.n
        data = (
            np.concatenate([self.T, self.T]),
            (np.concatenate([out_row, in_row]), np.concatenate([edges, edges])),
        )
        return csc_matrix(data, shape=(rows, self.m))

    def loads(self, edges: Iterable[int], weight: float = 1.0) -> np.ndarray:
        """Resource loads (the rows of :attr:`usage`) of ``weight`` slices per second over
        ``edges``."""
        e = np.fromiter(edges, dtype=np.int64)
        return np.asarray(self.usage[:, e].sum(axis=1)).ravel() * weight

    @property
    def rows(self) -> int:
        return int(self.usage.shape[0])

    def row_of_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The out-port row and the in-port row of every edge."""
        shift = self.n if self.ports == "bidirectional" else 0
        return self.src, self.dst + shift


def tree_period(problem: SteadyProblem, edges: Iterable[int]) -> float:
    """Seconds per slice of one pipelined tree (its edges): the busiest resource,
    ``max_u max(sum_children T_uv, T_parent,u)`` under the bidirectional one-port model."""
    return float(problem.loads(edges).max(initial=0.0))


def steady_problem(
    platform: Platform,
    root: str | int,
    nbytes: int,
    model: Any = None,
) -> SteadyProblem:
    """The one-port problem of ``platform``: its links' digraph with ``T_uv`` of a slice of
    ``nbytes`` bytes under a graph model (``one_port``, ``one_port_uni``, ``multi_port``:
    the link occupation), else every pair with the model's transfer time.

    Raises :class:`PlannerError` when a node cannot be reached from ``root``.
    """
    from ..models import get_model

    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    r = root if isinstance(root, int) else platform.index(root)
    size = max(int(nbytes), 1)  # a 0-byte slice still costs its latency; never all-zero times
    graph = getattr(bound, "graph", None)
    if graph is not None:
        graph.check_reachable(r, platform.ids)
        src, dst = graph.src, graph.dst
        T = np.array(bound.edge_costs(size)[0], dtype=float)
    else:
        n = len(platform)
        d = np.array(bound.delay_matrix(size), dtype=float)
        src, dst = (a.ravel() for a in np.nonzero(~np.eye(n, dtype=bool)))
        T = d[src, dst]
    ports = "unidirectional" if getattr(bound, "unidirectional", False) else "bidirectional"
    if len(platform) > 1 and not np.any(T > 0):
        raise PlannerError("every transfer takes no time: the throughput is unbounded")
    return SteadyProblem(len(platform), r, src, dst, T, int(nbytes), ports, platform.ids)


def model_problem(
    platform: Platform,
    root: str | int,
    nbytes: int,
    model: Any = None,
) -> SteadyProblem:
    """The steady-state problem under the cost model's own resources: a slice of ``nbytes``
    keeps its sender's send port busy ``send_busy``, its receiver's ``recv_busy`` (one port
    per node if unidirectional), under exclusive contention every link of its route
    its link window; a shared link at most its bandwidth.  Edges: the links' digraph under a
    graph model, else every ordered pair.  ``one_port``: :func:`steady_problem`'s;
    ``multi_port``: Sec. 3.2's (the paper did not compute its optimum, Sec. 5.2.2).  It
    bounds every schedule whose messages carry at most ``nbytes`` (affine costs: a resource
    is busy at most ``M`` in ``M`` seconds; every byte crosses every root-node cut)."""
    from ..models import get_model

    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    r = root if isinstance(root, int) else platform.index(root)
    n = len(platform)
    size = max(int(nbytes), 1)
    graph = getattr(bound, "graph", None)
    if graph is not None:
        graph.check_reachable(r, platform.ids)
        src, dst = np.asarray(graph.src), np.asarray(graph.dst)
    else:
        src, dst = (a.ravel() for a in np.nonzero(~np.eye(n, dtype=bool)))
    costs = bound.costs(src, dst, np.full(len(src), size, dtype=np.int64))
    edges = np.arange(len(src))
    uni = bool(getattr(bound, "unidirectional", False))
    recv_row = dst if uni else dst + n
    hops = np.diff(costs.offsets)
    link_edges = np.repeat(edges, hops)
    if bound.contention == "shared":
        cap = np.asarray(bound.capacity(), dtype=float)
        link_busy = size / cap[costs.resources] if len(costs.resources) else np.zeros(0)
    else:  # held during the model's link window (start to arrival unless it says otherwise)
        link_busy = np.asarray(costs.window()[1], dtype=float)[link_edges]
    rows = np.concatenate([src, recv_row, 2 * n + np.asarray(costs.resources, dtype=np.int64)])
    cols = np.concatenate([edges, edges, link_edges])
    vals = np.concatenate([costs.send_busy, costs.recv_busy, link_busy]).astype(float)
    keep = vals > 0
    nlinks = int(costs.resources.max()) + 1 if len(costs.resources) else 0
    from scipy.sparse import csc_matrix

    usage = csc_matrix((vals[keep], (rows[keep], cols[keep])), shape=(2 * n + nlinks, len(src)))
    receives = "bidirectional" if np.any(costs.recv_busy > 0) else "send"
    ports = "unidirectional" if uni else receives
    if np.any(link_busy > 0):
        ports += "+links"
    T = np.asarray(costs.delay, dtype=float)
    return SteadyProblem(n, r, src, dst, T, int(nbytes), ports, platform.ids, usage)


def unbounded(p: SteadyProblem) -> bool:
    """Whether the throughput is unbounded: the edges that keep no resource busy reach every
    node from the root (one tree of them could carry any number of slices per second)."""
    free = np.asarray(abs(p.usage).sum(axis=0)).ravel() == 0
    return p.n > 1 and bool(np.all(depths(p.n, p.src[free], p.dst[free], p.root) < p.n))


def _check_bounded(p: SteadyProblem) -> None:
    if unbounded(p):
        raise PlannerError(
            "every node can be reached by transfers that keep nothing busy (no time, no "
            "port, no link): the throughput is unbounded"
        )


# -- column generation over arborescences ----------------------------------------------------


def _quiet_highs():
    """A ``highspy.Highs()`` that prints nothing.

    highspy 1.16 writes its banner on the process's standard output (file descriptor 1, from
    C++) while the object is built, before any option can be set: it would corrupt the JSON
    that ``hetcoll run`` and the MPI jobs print.  So descriptor 1 points to the null device
    while the object is built, and logging is off from then on.
    """
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            ctypes.CDLL(None).fflush(None)  # what C's stdio still holds goes to the null device
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return h


class _Master:
    """The restricted master LP in HiGHS: columns added one at a time, warm-started."""

    def __init__(self, lower: Sequence[float], upper: Sequence[float]) -> None:
        import highspy

        self.h = h = _quiet_highs()
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        # a new column leaves the basis primal feasible: primal simplex goes on from it (the
        # default, dual simplex, takes about twice the time per solve at n = 200)
        h.setOptionValue("simplex_strategy", 4)
        self.inf = highspy.kHighsInf
        empty_i, empty_v = np.zeros(0, dtype=np.int32), np.zeros(0)
        for lo, hi in zip(lower, upper, strict=True):  # (the infinities as HiGHS's)
            h.addRow(max(lo, -self.inf), min(hi, self.inf), 0, empty_i, empty_v)

    def add(self, cost: float, rows: np.ndarray, values: np.ndarray) -> None:
        self.h.addCol(float(cost), 0.0, self.inf, len(rows), rows.astype(np.int32), values)

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        self.h.run()
        status = str(self.h.getModelStatus())
        if "Optimal" not in status:
            raise PlannerError(f"the master LP did not solve: {status}")
        sol = self.h.getSolution()
        value = self.h.getInfo().objective_function_value
        return value, np.array(sol.col_value), np.array(sol.row_dual)


@dataclass
class Packing:
    """Spanning arborescences (edge index arrays) and their weights (slices per second).

    ``throughput = sum(weights)``: a feasible packing (no port busier than one second per
    second); ``upper_bound`` bounds every packing's throughput (dual prices; ``prices``
    those of the resources, summing to 1: every tree keeps them busy at least
    ``1 / upper_bound`` per slice, weighted); ``gap`` is their relative difference.
    """

    trees: list[np.ndarray]
    weights: np.ndarray
    throughput: float
    upper_bound: float
    iterations: int
    seconds: float
    columns: list[np.ndarray] = field(default_factory=list, repr=False)
    prices: np.ndarray | None = field(default=None, repr=False)

    @property
    def gap(self) -> float:
        return (self.upper_bound - self.throughput) / self.throughput if self.throughput else 0.0

    def edge_slices(self, m: int) -> np.ndarray:
        """``n_e``: slices per second over each edge."""
        n = np.zeros(m)
        for tree, w in zip(self.trees, self.weights, strict=True):
            n[tree] += w
        return n


def _initial_trees(p: SteadyProblem) -> list[np.ndarray]:
    """Starting columns: the min-sum arborescence, the shortest-path tree, and a tree that
    balances out-degrees (Alg. 3's greedy)."""
    trees = []
    first = min_arborescence(p.n, p.src, p.dst, p.T, p.root)
    if first is None:  # pragma: no cover - steady_problem checked reachability
        raise PlannerError("some node is unreachable from the root")
    trees.append(first)
    trees.append(shortest_path_arborescence(p.n, p.src, p.dst, p.T, p.root))
    trees.append(balanced_arborescence(p.n, p.src, p.dst, p.T, p.root))
    return trees


def pack_arborescences(
    problem: SteadyProblem,
    *,
    initial: Iterable[Iterable[int]] = (),
    smoothing: float = 0.9,
    max_iterations: int = 100_000,
    time_limit: float | None = None,
) -> Packing:
    """The optimal MTP throughput as a packing of spanning arborescences.

    Parameters
    ----------
    problem : SteadyProblem
    initial : iterable of edge-index sequences, optional
        Extra starting trees (the master also starts from three of its own).
    smoothing : float
        Wentges' dual smoothing factor in ``[0, 1)`` (0: plain column generation): prices
        at ``smoothing * best + (1 - smoothing) * master``, ``best`` the prices of the best
        bound so far.  0.9 takes 255-330 iterations (1.8-3.4 CPU s) on one-port
        ``random_graph_platform(200, 0.1, seed=s)``, ``s`` = 0-2, where 0.5 takes 320-680
        (3.3-18 s); at n = 50, density 0.12, both take under 0.1 s.
    max_iterations, time_limit
        Stop early (the packing is then feasible but maybe not optimal: see ``gap``).

    Returns
    -------
    Packing

    Notes
    -----
    Master: maximise ``sum_A lambda_A`` subject to, for every node, ``sum_A lambda_A
    out_u(A) <= 1`` and ``sum_A lambda_A in_u(A) <= 1`` (one row per node when
    unidirectional), where ``out_u(A)`` is the time ``u`` sends per slice in ``A``.
    Pricing at dual prices ``y``: the cheapest arborescence under ``c_uv = T_uv (y_u +
    y'_v)``; a column improves if ``c(A) < 1``, and ``sum(y) / min_A c(A)`` bounds the
    optimum.  Times are scaled by their largest value inside.

    References
    ----------
    Beaumont, Marchal & Robert (2004), Sec. 4.1, LP (2); Edmonds (1973), "Edge-disjoint
    branchings"; Wentges (1997), "Weighted Dantzig-Wolfe decomposition".
    """
    p = problem
    start = time.perf_counter()
    if p.n == 1:
        return Packing([], np.zeros(0), math.inf, math.inf, 0, 0.0)
    _check_bounded(p)
    scale = float(abs(p.usage).max())
    A = p.usage / scale
    AT = A.T.tocsr()
    master = _Master([-math.inf] * p.rows, [1.0] * p.rows)
    columns: list[np.ndarray] = []
    seen: set[bytes] = set()

    def add(tree: np.ndarray) -> bool:
        tree = np.sort(np.asarray(tree, dtype=np.int64))
        key = tree.tobytes()
        if key in seen:
            return False
        seen.add(key)
        rows, vals = _column(A, tree)
        master.add(-1.0, rows, vals)
        columns.append(tree)
        return True

    for tree in [*_initial_trees(p), *(np.asarray(list(t)) for t in initial)]:
        add(tree)
    best_ub = math.inf
    best_price: np.ndarray | None = None
    lb = 0.0
    iterations = 0
    alpha = smoothing
    while iterations < max_iterations:
        iterations += 1
        value, lam, duals = master.solve()
        lb = -value
        price = np.maximum(-duals, 0.0)
        sep = price if best_price is None else alpha * best_price + (1 - alpha) * price
        tree, c = _price(p, AT, sep)
        if c > 0:
            ub = float(sep.sum()) / c
            if ub < best_ub:
                best_ub, best_price = ub, sep
        if best_ub - lb <= GAP * lb:
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        reduced = float((AT @ price)[tree].sum())
        if reduced < 1 - 1e-12 and add(tree):
            alpha = smoothing
            continue
        # mis-price: the smoothed prices found nothing the master's prices want
        tree, c = _price(p, AT, price)
        if c > 0 and float(price.sum()) / c < best_ub:
            best_ub, best_price = float(price.sum()) / c, price
        if c >= 1 - 1e-12 or not add(tree):
            best_ub = min(best_ub, lb) if c >= 1 - 1e-12 else best_ub
            break
        alpha = 0.0
    value, lam, _ = master.solve()
    used = np.flatnonzero(lam > 1e-13)
    trees = [columns[j] for j in used]
    weights = lam[used]
    # exactly feasible: rescale so that the busiest resource is busy exactly one time unit
    per_edge = np.zeros(p.m)
    for tree, w in zip(trees, weights, strict=True):
        per_edge[tree] += w
    load = A @ per_edge
    weights = weights / max(float(load.max()), 1e-300)
    tp = float(weights.sum()) / scale
    ub = max(best_ub / scale, tp)
    sure = best_price is not None and best_price.sum() > 0
    prices = best_price / best_price.sum() if sure else None  # (best_ub's, <= ub)
    elapsed = time.perf_counter() - start
    return Packing(trees, weights / scale, tp, ub, iterations, elapsed, columns, prices)


def _price(p: SteadyProblem, AT: Any, price: np.ndarray) -> tuple[np.ndarray, float]:
    """The cheapest arborescence when a resource costs ``price`` per second busy."""
    cost = AT @ price
    tree = min_arborescence(p.n, p.src, p.dst, cost, p.root)
    return tree, float(cost[tree].sum())


def _column(A: Any, tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The master's column of a tree: the rows it keeps busy and for how long per slice
    (``A[:, tree].sum(axis=1)`` of the CSC matrix ``A``, its terms added in that order)."""
    start, count = A.indptr[tree], A.indptr[tree + 1] - A.indptr[tree]
    at = np.arange(count.sum()) + np.repeat(start - np.cumsum(count) + count, count)
    col = np.bincount(A.indices[at], weights=A.data[at], minlength=A.shape[0])
    rows = np.flatnonzero(col)
    return rows, col[rows]


def edge_loads(problem: SteadyProblem, packing: Packing) -> np.ndarray:
    """``n_uv`` (slices per second per edge), well defined: among packings of the optimal
    throughput, one of least ``sum_uv T_uv n_uv`` (a second column generation, started
    from ``packing``'s trees, until its certified gap is under :data:`LOAD_TOL` or after
    :data:`LOAD_COLUMNS` new trees; deterministic, as HiGHS is): see
    :func:`edge_loads_certified`."""
    return edge_loads_certified(problem, packing)[0]


def edge_loads_certified(
    problem: SteadyProblem, packing: Packing, smoothing: float = 0.9
) -> tuple[np.ndarray, float]:
    """:func:`edge_loads` and its certified relative gap to the least link time of a packing
    of optimal throughput.  Certificate (Lagrangian): at any prices ``y >= 0`` of the
    resources and ``mu >= 0`` of the throughput, no such packing is below ``mu * target -
    sum(y)`` plus the cheapest tree's reduced cost (if negative) times the most slices per
    second (the throughput's upper bound).  Prices are smoothed as in
    :func:`pack_arborescences` (Wentges; 0: plain column generation): on random 50-node
    platforms 2-3.5x fewer master solves (``benchmarks/simulated/bench_edge_loads.py``)."""
    p = problem
    if p.n == 1:
        return np.zeros(p.m), 0.0
    scale = float(abs(p.usage).max())
    A = p.usage / scale
    AT = A.T.tocsr()
    T = p.T / scale
    target = packing.throughput * scale * (1 - 1e-9)
    master = _Master([-math.inf] * p.rows + [target], [1.0] * p.rows + [math.inf])
    columns: list[np.ndarray] = []
    seen: set[bytes] = set()

    def add(tree: np.ndarray) -> bool:
        tree = np.sort(np.asarray(tree, dtype=np.int64))
        if tree.tobytes() in seen:
            return False
        seen.add(tree.tobytes())
        rows, vals = _column(A, tree)
        rows, vals = np.append(rows, p.rows), np.append(vals, 1.0)
        master.add(float(T[tree].sum()), rows, vals)
        columns.append(tree)
        return True

    most = max(packing.upper_bound, packing.throughput) * scale  # slices/s, scaled

    def bound(y: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
        cost = T + AT @ y
        tree = min_arborescence(p.n, p.src, p.dst, cost, p.root)
        reduced = float(cost[tree].sum()) - mu
        return mu * target - float(y.sum()) + min(reduced, 0.0) * most, tree

    for tree in packing.columns or packing.trees:
        add(tree)
    lower, best, alpha = -math.inf, None, smoothing
    for _ in range(LOAD_COLUMNS + 1):
        value, lam, duals = master.solve()
        y, mu = np.maximum(-duals[: p.rows], 0.0), max(float(duals[p.rows]), 0.0)
        added = False
        for k in range(2):  # at the smoothed prices, then (a mis-price) the master's
            ys, ms = y, mu
            if best is not None and not k:
                ys, ms = alpha * best[0] + (1 - alpha) * y, alpha * best[1] + (1 - alpha) * mu
            bound_, tree = bound(ys, ms)
            if bound_ > lower:
                lower, best = bound_, (ys, ms)
            if value - lower <= LOAD_TOL * abs(value):
                break
            improves = k or float((T + AT @ y)[tree].sum()) - mu < -1e-12
            if improves and add(tree):
                added = True
                break
        if not added:
            break
        alpha = smoothing if k == 0 else 0.0
    n = np.zeros(p.m)
    for j in np.flatnonzero(lam > 1e-13):
        n[columns[j]] += lam[j]
    gap = max(value - lower, 0.0) / value if value > 0 else 0.0
    return n / scale, gap


# -- the paper's LP (2) ------------------------------------------------------------------------


@dataclass(frozen=True)
class LPResult:
    """LP (2)'s answer: ``throughput`` (slices/s), ``n`` per edge, HiGHS's status, time;
    ``n_status`` the second LP's (``min_link_time``; ``""`` if not asked): unless
    ``"optimal"``, ``n`` is the first LP's, of optimal throughput but not least link time."""

    throughput: float
    n: np.ndarray
    status: str
    seconds: float
    printed: bool
    n_status: str = ""

    @property
    def solved(self) -> bool:
        return self.status == "optimal"


def lp_throughput(
    problem: SteadyProblem,
    *,
    printed: bool = False,
    min_link_time: bool = False,
    time_limit: float | None = None,
) -> LPResult:
    """Solve LP (2) of Sec. 4.1 with HiGHS (``scipy.optimize.linprog``).

    Parameters
    ----------
    problem : SteadyProblem
    printed : bool
        Solve the LP as printed (over-estimates: see the module docstring); default the
        corrected one, where no flow to ``w`` enters the source or leaves ``w``.
    min_link_time : bool
        Then solve a second LP: minimise ``sum T_uv n_uv`` at the optimal throughput, so
        that ``n`` is well defined (``n_status`` says whether it solved).
    time_limit : float, optional
        Seconds per LP; ``status`` (``n_status``) says ``"time limit"`` when it is reached.

    Notes
    -----
    ``(N - 1) E`` flow variables and as many constraints ``x_w^e <= n_e`` (constraint (d)
    as ``max``): slow beyond a few dozen nodes; :func:`pack_arborescences` gives the same
    value much faster.

    Examples
    --------
    The path 0-1-2-3 with ``T = 1, 10, 1`` in both directions (Sec. 4.1's flaw):

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 1, 2, 2, 3]), np.array([1, 0, 2, 1, 3, 2])
    >>> p = SteadyProblem(4, 0, src, dst, np.array([1.0, 1, 10, 10, 1, 1]), 1)
    >>> round(lp_throughput(p).throughput, 9), round(lp_throughput(p, printed=True).throughput, 9)
    (0.1, 1.0)
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    p = problem
    start = time.perf_counter()
    if p.n == 1:
        return LPResult(math.inf, np.zeros(p.m), "optimal", 0.0, printed)
    _check_bounded(p)
    scale = float(abs(p.usage).max())
    T = p.T / scale
    dests = [w for w in range(p.n) if w != p.root]
    # flow variables x[w, e], skipping (corrected LP) edges that enter the source or leave w
    var_w, var_e = [], []
    for w in dests:
        ok = np.ones(p.m, dtype=bool) if printed else (p.dst != p.root) & (p.src != w)
        es = np.flatnonzero(ok)
        var_w.append(np.full(len(es), w))
        var_e.append(es)
    xw, xe = np.concatenate(var_w), np.concatenate(var_e)
    nx = len(xw)
    tp, n0 = nx, nx + 1  # columns: x..., TP, n_0 .. n_{m-1}
    ncol = nx + 1 + p.m
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def row(c: Sequence[int] | np.ndarray, v: Sequence[float] | np.ndarray, low: float, up: float):
        nonlocal r
        rows.append(np.full(len(c), r))
        cols.append(np.asarray(c))
        vals.append(np.asarray(v, dtype=float))
        lo.append(low)
        hi.append(up)
        r += 1

    widx = {w: k for k, w in enumerate(dests)}
    start_of = np.concatenate([[0], np.cumsum([len(e) for e in var_e])])
    for w in dests:
        k = widx[w]
        ids = np.arange(start_of[k], start_of[k + 1])
        es = xe[ids]
        out_s = ids[p.src[es] == p.root]
        row([*out_s, tp], [1.0] * len(out_s) + [-1.0], 0.0, 0.0)  # (a)
        in_w = ids[p.dst[es] == w]
        row([*in_w, tp], [1.0] * len(in_w) + [-1.0], 0.0, 0.0)  # (b)
        for v in range(p.n):  # (c)
            if v in (p.root, w):
                continue
            ins, outs = ids[p.dst[es] == v], ids[p.src[es] == v]
            if len(ins) or len(outs):
                row([*ins, *outs], [1.0] * len(ins) + [-1.0] * len(outs), 0.0, 0.0)
    # (d) x[w, e] <= n_e, vectorised
    dr = r + np.arange(nx)
    rows += [dr, dr]
    cols += [np.arange(nx), n0 + xe]
    vals += [np.ones(nx), -np.ones(nx)]
    lo += [-np.inf] * nx
    hi += [0.0] * nx
    r += nx
    # (e)-(j): port times (every resource's, under a model's resources)
    use = (p.usage / scale).tocoo()
    rows.append(r + use.row)
    cols.append(n0 + use.col)
    vals.append(use.data)
    lo += [-np.inf] * p.rows
    hi += [1.0] * p.rows
    r += p.rows
    a = coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, ncol)
    ).tocsr()
    lo_a, hi_a = np.array(lo, dtype=float), np.array(hi, dtype=float)
    eq = lo_a == hi_a
    ub_rows = ~eq
    bounds = [(0, None)] * ncol
    options: dict[str, Any] = {"presolve": True}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    c = np.zeros(ncol)
    c[tp] = -1.0
    # rows with finite upper bounds only: A_ub x <= hi
    a_ub, b_ub, a_eq, b_eq = a[ub_rows], hi_a[ub_rows], a[eq], hi_a[eq]

    def solve(cost: np.ndarray, box: list):
        return linprog(cost, a_ub, b_ub, a_eq, b_eq, bounds=box, method="highs", options=options)

    res = solve(c, bounds)
    status = _status(res)
    if status != "optimal":
        return LPResult(math.nan, np.zeros(p.m), status, time.perf_counter() - start, printed)
    best = -res.fun
    x = res.x
    n_status = ""
    if min_link_time:
        c2 = np.zeros(ncol)
        c2[n0:] = T
        bounds2 = list(bounds)
        bounds2[tp] = (best * (1 - 1e-9), None)
        res2 = solve(c2, bounds2)
        n_status = _status(res2)
        if n_status == "optimal":
            x = res2.x
    seconds = time.perf_counter() - start
    return LPResult(best / scale, x[n0:] / scale, "optimal", seconds, printed, n_status)


def _status(res) -> str:
    if res.status == 0:
        return "optimal"
    if res.status == 1:
        return "time limit"
    return str(res.message)


def _lp_gap(res: LPResult, limit: float) -> float | None:
    """The certified gap of the LP method's ``n``: 0 when its second LP solved, else
    unknown (None), with a warning naming the limit (never a silent 0)."""
    if res.n_status == "optimal":
        return 0.0
    warnings.warn(
        f"optimum: the least-link-time LP did not solve ({res.n_status}, {limit:g} s per "
        "LP): n carries the optimal throughput but its link time is not certified least "
        "(n_gap unknown); raise the time limit, or use the method 'packing'",
        PlannerWarning,
        stacklevel=3,
    )
    return None


# -- the front door ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Optimum:
    """The optimal pipelined-broadcast throughput of a platform (``hetcoll optimum``).

    ``throughput`` is bytes per second (``slices_per_second`` times the slice size),
    ``upper_bound`` the dual certificate (bytes/s), ``n`` the slices per second each edge
    ``(sender, receiver)`` carries (well defined: :func:`edge_loads`), ``trees`` the
    arborescences (as ``(parent, child)`` id pairs) and their ``weights`` in slices/s;
    ``n_gap`` the certified relative gap of ``n``'s link time to the least one
    (:func:`edge_loads_certified`; ``n_minimal`` in JSON when it is under
    :data:`LOAD_TOL`), None when nothing certifies it (the LP method's second LP stopped at
    its time limit: a :class:`~hetcoll.errors.PlannerWarning` says so)
    """

    root: str
    slice_size: int
    slices_per_second: float
    throughput: float
    upper_bound: float
    edges: list[tuple[str, str]]
    n: list[float]
    trees: list[list[tuple[str, str]]]
    weights: list[float]
    method: str
    iterations: int
    seconds: float
    ports: str
    n_gap: float | None = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "slice_size": self.slice_size,
            "slices_per_second": self.slices_per_second,
            "throughput": self.throughput,
            "upper_bound": self.upper_bound,
            "ports": self.ports,
            "method": self.method,
            "iterations": self.iterations,
            "solver_seconds": self.seconds,
            "n_gap": self.n_gap,
            "n_minimal": None if self.n_gap is None else self.n_gap <= LOAD_TOL,
            "n": [
                {"u": u, "v": v, "slices_per_second": x}
                for (u, v), x in zip(self.edges, self.n, strict=True)
                if x > 0
            ],
            "trees": [
                {"weight": w, "edges": [list(e) for e in t]}
                for t, w in zip(self.trees, self.weights, strict=True)
            ],
        }


def optimum(
    platform: Platform,
    root: str,
    segment_size: int,
    model: Any = None,
    *,
    method: str = "packing",
    time_limit: float | None = None,
) -> Optimum:
    """The optimal MTP throughput of broadcasting from ``root`` in slices of
    ``segment_size`` bytes under the cost model's resources (:func:`model_problem`), and
    the edge loads ``n_uv``: no schedule whose transfers carry at most ``segment_size``
    bytes each is faster.

    Parameters
    ----------
    platform : Platform
    root : str
    segment_size : int
        The slice size ``L`` (bytes, > 0).
    model : optional
        Defaults to the platform's.  ``one_port``: the paper's bidirectional one-port model;
        ``one_port_uni``: one port per node for sends and receives; ``multi_port``: Sec.
        3.2's (the sender busy ``send_uv``, the links ``T_uv`` in parallel); any other
        model its own ports and links.  ``ports`` in the answer names the resources:
        ``bidirectional``, ``unidirectional`` or ``send`` (no receive port), ``+links``
        when links are resources too.
    method : {"packing", "lp"}
        :func:`pack_arborescences` (fast, certified) or the corrected LP (2).
    time_limit : float, optional
        Seconds for the solver (the LP method: :data:`LP_TIME_LIMIT` by default).

    Examples
    --------
    >>> from hetcoll import Platform
    >>> p = Platform.from_dict({"model": "one_port", "nodes": [{"id": i} for i in "0123"],
    ...     "links": [{"u": "0", "v": "1", "bandwidth": 1e6}, {"u": "1", "v": "2",
    ...     "bandwidth": 1e5}, {"u": "2", "v": "3", "bandwidth": 1e6}]})
    >>> round(optimum(p, "0", 1000).throughput)  # the slow middle link: 100 kB/s
    100000
    """
    from ._common import check_size

    segment_size = check_size(segment_size, "segment size", positive=True)
    prob = model_problem(platform, root, segment_size, model)
    ids = platform.ids
    edges = [(ids[a], ids[b]) for a, b in zip(prob.src.tolist(), prob.dst.tolist(), strict=True)]
    if method == "lp":
        limit = LP_TIME_LIMIT if time_limit is None else time_limit
        res = lp_throughput(prob, min_link_time=True, time_limit=limit)
        if not res.solved:
            raise PlannerError(
                f"LP (2) did not solve: {res.status} ({limit:g} s; raise the time limit, or "
                "use the method 'packing', exact and much faster)"
            )
        tp, ub, n, n_gap = res.throughput, res.throughput, res.n, _lp_gap(res, limit)
        trees, weights, iterations, seconds = [], [], 0, res.seconds
    elif method == "packing":
        pack = pack_arborescences(prob, time_limit=time_limit)
        tp, ub = pack.throughput, pack.upper_bound
        n, n_gap = edge_loads_certified(prob, pack)
        trees = [[edges[e] for e in t] for t in pack.trees]
        weights = pack.weights.tolist()
        iterations, seconds = pack.iterations, pack.seconds
    else:
        raise PlannerError(f"method: 'packing' or 'lp', got {method!r}")
    size = segment_size
    return Optimum(
        ids[prob.root],
        size,
        tp,
        tp * size,
        ub * size,
        edges,
        [float(x) for x in n],
        trees,
        weights,
        method,
        iterations,
        seconds,
        prob.ports,
        n_gap,
    )
