"""The optimal steady state of an allgather or a reduce-scatter: spanning arborescences
packed per root, every member's block over trees of its own, all sharing the ports and
links (Zhao, Krishnamurthy et al. 2024, ForestColl, Sec. 4-5; Zhao & Krishnamurthy 2023).

An allgather moves each member ``r``'s block of ``b_r`` bytes to every other member: a
broadcast from ``r``, so by Edmonds' branching theorem a packing of spanning arborescences
rooted at ``r`` (one commodity per root, N commodities in all).  A reduce-scatter is the
same with the trees reversed: ``r``'s block of every member's vector is reduced to ``r``
over in-arborescences, each receiver combining what it receives (``gamma`` per byte, a
resource of its own: a rank combines one partial result at a time).

:func:`pack_forest` solves the master LP

    maximise ``phi``  subject to, for every resource ``rho`` (a send or receive port, a
    link, a combining unit), ``sum_A usage_rho(A) x_A <= 1``, and for every root ``r``,
    ``sum_{A rooted at r} x_A >= phi b_r / b_max``

by column generation over arborescences (the pricing step is a minimum-cost arborescence
per root, :func:`hetcoll.arborescence.min_arborescence`), as
:func:`hetcoll.planners.steady.pack_arborescences` does for one root.  Its certificate:
at any resource prices ``y >= 0``, with ``c_r(y)`` the cheapest arborescence of root ``r``,
``phi <= sum(y) / sum_r (b_r / b_max) c_r(y)`` (the dual with ``pi_r = c_r``).  On a
bandwidth-only link graph the optimum time is Zhao & Krishnamurthy's cut bound
``max_S (sum_{r in S} b_r) / B+(S)`` (``tests/test_forest.py`` checks it against every cut).

Two things keep the column generation short on large graphs.  The master's dual prices
are zero on most resources, so many spanning trees are cheapest (cost 0 or nearly) and
the arborescence algorithm's choice among them is arbitrary: a new column is the cheapest
tree under the prices plus :data:`TIE` of the largest edge price spread over the edges in
proportion to the resource time each takes (the least busy of the nearly cheapest trees),
added if it prices out, else the cheapest tree is.  On the 64-node graph of
``benchmarks/simulated/bench_packing.py --full`` this takes the allgather's packing from
386 iterations to about 45.  And the bound starts finite: the prices of the densest cuts
(:func:`hetcoll.planners.forestcut.cut_prices`) bound ``phi`` before the first LP solve,
so that a packing stopped by its time limit still has a certificate, and Wentges'
smoothing has a centre from the first iteration.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arborescence import (
    balanced_arborescence,
    min_arborescence,
    min_arborescences,
    shortest_path_arborescence,
)
from ..errors import PlannerError
from ..platform import Platform
from .forestcut import cut_prices
from .forestdepth import heights, shallowest
from .forestmembers import restrict_members
from .forestshallow import depths, shallower
from .steady import SteadyProblem, _Master, model_problem

__all__ = ["Forest", "forest_problem", "pack_forest"]

#: relative gap at which column generation stops
GAP = 1e-9
#: a new column's tree is the cheapest under its prices plus this fraction of the largest
#: edge price spread in proportion to the resource time each edge takes (module docstring)
TIE = 1e-2
#: rounds of rebuilding the optimal packing's trees along the fastest paths of no dearer
#: edges (:func:`hetcoll.planners.forestshallow.shallower`) before the shallowest packing
#: is chosen: on the 64-node graph of ``bench_packing.py`` the allgather's longest tree
#: goes from 39 hops to 19 in one round; a third round changes nothing there
SHALLOW_ROUNDS = 2
#: the shallowest packing minimises its trees' rates weighted by their depths (relative to
#: the slowest edge's time) to this power, plus :data:`HOP` per hop: a tree of twice the
#: depth weighs 16 times as much per byte, so the deepest trees go first: of the 12
#: allgathers and reduce-scatters of ``bench_packing.py --nodes 64 --seeds 6`` at 1 MiB per
#: rank, 8 take less time than with depths to the power 1 and 2 take more
#: (``tests/test_forest_depths.py``)
DEPTH_POWER = 4
#: the shallowest packing's weight per hop: among trees of one depth, the fewest hops
HOP = 1e-6


@dataclass
class Forest:
    """Arborescences per root and the bytes per second each carries.

    ``trees[k]``: edge indices of ``problem`` (the data go ``src -> dst``), rooted at
    ``roots[k]`` (a node index), out of the root or into it (``dirs[k]``: ``out``, ``in``);
    ``rates[k]``: bytes per second it carries.  ``blocks``: each root's block (relative, for
    an allreduce: its share of the vector).  ``time``: seconds the packing takes to move
    the blocks at those rates (allreduce: per byte of the vector); ``bound``: the certified
    lower bound on that time of any packing (dual prices); ``gap = time / bound - 1``.
    """

    problem: SteadyProblem
    op: str
    blocks: np.ndarray
    trees: list[np.ndarray]
    roots: list[int]
    dirs: list[str]
    rates: np.ndarray
    time: float
    bound: float
    iterations: int
    seconds: float
    slice_size: int = 0
    columns: list[tuple[int, str, np.ndarray]] = field(default_factory=list, repr=False)

    @property
    def gap(self) -> float:
        """``time / bound - 1``; infinite when no positive bound certifies a positive
        time (column generation stopped by its time limit before its dual prices gave
        one), so that nobody reads an uncertified packing as optimal."""
        if self.bound > 0:
            return self.time / self.bound - 1
        return 0.0 if self.time <= 0 else math.inf

    def of_root(self, r: int, direction: str) -> list[tuple[np.ndarray, float]]:
        """``(edges, bytes per second)`` of root ``r``'s trees of ``direction`` (``out``,
        ``in``), largest share first (ties: edge lists in order): a deterministic order."""
        mine = [
            (t, float(w))
            for t, w, q, d in zip(self.trees, self.rates, self.roots, self.dirs, strict=True)
            if q == r and d == direction
        ]
        return sorted(mine, key=lambda tw: (-tw[1], tw[0].tolist()))


def forest_problem(
    platform: Platform,
    slice_size: int,
    model: Any = None,
    direction: str = "out",
    members: Sequence[str] | None = None,
) -> SteadyProblem:
    """The resources of the model's transfers of ``slice_size`` bytes (the steady-state
    problem of :func:`~hetcoll.planners.steady.model_problem`), with, for ``direction``
    ``"in"`` (a reduce-scatter), one combining unit per node busy ``gamma * slice_size``
    per slice it receives; among ``members`` only (node ids; default every node), the
    others routing (:func:`hetcoll.planners.forestmembers.restrict`)."""
    from scipy.sparse import csc_matrix, vstack

    base = model_problem(platform, 0, slice_size, model)
    if members is not None:
        base = restrict_members(platform, base, members)
    if direction == "out":
        return base
    gamma = np.asarray(platform.gamma, dtype=float)[[platform.index(v) for v in base.ids]]
    gamma = gamma[base.dst] * max(int(slice_size), 1)
    keep = gamma > 0
    combine = csc_matrix(
        (gamma[keep], (base.dst[keep], np.flatnonzero(keep))), shape=(base.n, base.m)
    )
    usage = vstack([csc_matrix(base.usage), combine]).tocsc()
    ports = base.ports + ("+combine" if np.any(keep) else "")
    return SteadyProblem(base.n, 0, base.src, base.dst, base.T, base.nbytes, ports, base.ids, usage)


def _tree(p: SteadyProblem, cost: np.ndarray, root: int, direction: str) -> np.ndarray:
    """The cheapest spanning arborescence of ``root`` under ``cost`` per edge: out of the
    root (``out``) or into it (``in``: on the reversed edges)."""
    if direction == "out":
        tree = min_arborescence(p.n, p.src, p.dst, cost, root)
    else:
        tree = min_arborescence(p.n, p.dst, p.src, cost, root)
    if tree is None:
        way = "reach" if direction == "out" else "be reached from"
        raise PlannerError(f"node {p.ids[root]!r} cannot {way} every node over the links")
    return np.sort(np.asarray(tree, dtype=np.int64))


def _trees(
    p: SteadyProblem, cost: np.ndarray, goods: Sequence[tuple[int, str]]
) -> dict[tuple[int, str], np.ndarray]:
    """:func:`_tree` of every ``(root, direction)`` of ``goods`` under ``cost``, the edges
    sorted once per direction (:func:`hetcoll.arborescence.min_arborescences`)."""
    found = {}
    for direction in dict.fromkeys(d for _, d in goods):
        roots = [r for r, d in goods if d == direction]
        ends = (p.src, p.dst) if direction == "out" else (p.dst, p.src)
        for root, tree in zip(roots, min_arborescences(p.n, *ends, cost, roots), strict=True):
            if tree is None:
                way = "reach" if direction == "out" else "be reached from"
                raise PlannerError(f"node {p.ids[root]!r} cannot {way} every node over the links")
            found[(root, direction)] = np.sort(np.asarray(tree, dtype=np.int64))
    return {g: found[g] for g in goods}


def _initial(
    p: SteadyProblem, root: int, direction: str, first: np.ndarray | None = None
) -> list[np.ndarray]:
    """The starting columns of ``root``: its cheapest tree under the transfer times
    (``first`` if given, found for every root at once: :func:`_trees`), its shortest-path
    tree and a tree balancing the out-degrees."""
    src, dst = (p.src, p.dst) if direction == "out" else (p.dst, p.src)
    trees = [_tree(p, p.T, root, direction) if first is None else first]
    for make in (shortest_path_arborescence, balanced_arborescence):
        tree = make(p.n, src, dst, p.T, root)
        if tree is not None:
            trees.append(np.sort(np.asarray(tree, dtype=np.int64)))
    return trees


def _columns(A: Any) -> Any:
    """``column(tree)``: the master's column of a tree, the rows of ``A`` (CSC, rows x
    edges) it keeps busy and for how long per slice, in row order (the sum of its edges'
    columns, without scipy's indexing per call)."""
    A = A.tocsc()
    A.sort_indices()
    ptr, idx, val = A.indptr, A.indices, A.data
    R = A.shape[0]

    def column(tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = ptr[tree], ptr[tree + 1]
        at = np.repeat(lo - np.cumsum(np.append(0, (hi - lo)[:-1])), hi - lo)
        at += np.arange(len(at))
        # per row, its entries summed in the order of ``at`` (bincount adds in input
        # order); the rows no entry or only a zero sum reaches are left out
        sums = np.bincount(idx[at], weights=val[at], minlength=R)
        rows = np.flatnonzero(sums)
        return rows, sums[rows]

    return column


#: the trees each operation packs: out of their root (allgather), into it (reduce-scatter),
#: both (allreduce: each member's share of the vector reduced to it, then sent back)
DIRECTIONS = {"allgather": ("out",), "reduce_scatter": ("in",), "allreduce": ("in", "out")}


def pack_forest(
    platform: Platform,
    op: str = "allgather",
    blocks: Mapping[str, float] | Sequence[float] | None = None,
    *,
    slice_size: int = 1 << 20,
    model: Any = None,
    smoothing: float = 0.5,
    time_limit: float | None = None,
    max_iterations: int = 10_000,
    members: Sequence[str] | None = None,
) -> Forest:
    """The optimal per-root packing of ``op`` on every node of ``platform`` (or among
    ``members`` only, node ids, the others routing: :mod:`hetcoll.planners.forestmembers`),
    transfers of ``slice_size`` bytes under ``model`` (default the platform's).

    ``allgather`` and ``reduce_scatter``: every member ``r``'s block of ``blocks[r]`` bytes
    (member order or by id; default 1 byte each) over arborescences out of ``r`` (into
    it); :attr:`Forest.time` is the packing's time for the blocks.  ``allreduce``
    (reduce-scatter then allgather on one packing, both sharing the resources for the whole
    run, pipelined): the members' shares of the vector are free (``blocks`` is ignored);
    the LP chooses them with the trees, ``Forest.blocks`` says which, and ``time`` is the
    time for a vector of one byte (multiply by the vector's size).  ``bound`` certifies
    ``time`` (no packing of this form is faster; see the module docstring).

    Column generation with Wentges' smoothing (``smoothing``), stopping at a relative gap of
    :data:`GAP`, or at ``time_limit`` seconds or ``max_iterations`` (then ``gap`` says how
    far from optimal it may be).  Per iteration: one master LP solve and one minimum-cost
    arborescence per root and direction, O(N E log N).

    Raises :class:`PlannerError` when some node cannot reach (or be reached from) every
    other, or when every transfer keeps nothing busy (the rate is unbounded).
    """
    if op not in DIRECTIONS:
        raise PlannerError(f"op: one of {', '.join(DIRECTIONS)}, not {op!r}")
    dirs = DIRECTIONS[op]
    start = time.perf_counter()
    p = forest_problem(platform, slice_size, model, "in" if "in" in dirs else "out", members)
    n = p.n
    free = op == "allreduce"
    if free or blocks is None:
        b = np.ones(n)
    elif isinstance(blocks, Mapping):
        b = np.array([float(blocks.get(v, 0)) for v in p.ids])
    else:
        b = np.asarray(blocks, dtype=float)
    roots = [int(r) for r in np.flatnonzero(b > 0)]
    L = max(int(slice_size), 1)
    if n == 1 or not roots:
        return Forest(p, op, b, [], [], [], np.zeros(0), 0.0, 0.0, 0, 0.0, L)
    scale = float(abs(p.usage).max()) if p.usage.nnz else 0.0
    if scale <= 0:
        raise PlannerError("every transfer keeps nothing busy: the rate is unbounded")
    A = p.usage / scale
    AT = A.T.tocsr()
    R = p.rows
    w = b / b.max()
    goods = [(r, d) for r in roots for d in dirs]  # one demand row each
    row = {g: R + k for k, g in enumerate(goods)}
    master = _Master([-math.inf] * (R + len(goods)), [1.0] * R + [0.0] * len(goods))
    if free:  # phi_r: root r's share rate, in both its rows
        for r in roots:
            master.add(-1.0, np.array([row[(r, d)] for d in dirs]), np.ones(len(dirs)))
        nphi = len(roots)
    else:
        master.add(-1.0, np.array([row[g] for g in goods]), w[[r for r, _ in goods]])
        nphi = 1
    column = _columns(A)
    columns: list[tuple[int, str, np.ndarray]] = []
    seen: set[tuple[int, str, bytes]] = set()

    def add(g: tuple[int, str], tree: np.ndarray) -> bool:
        key = (*g, tree.tobytes())
        if key in seen:
            return False
        seen.add(key)
        rows, vals = column(tree)
        master.add(0.0, np.append(rows, row[g]), np.append(vals, -1.0))
        columns.append((*g, tree))
        return True

    def upper(price: np.ndarray, cost_of: dict) -> float:
        """The certificate at resource prices ``price`` (see the module docstring)."""
        if free:
            denom = min(sum(cost_of[(r, d)] for d in dirs) for r in roots)
        else:
            denom = float(sum(w[r] * cost_of[(r, d)] for r, d in goods))
        return float(price.sum()) / denom if denom > 0 else math.inf

    try:  # the cheapest trees under the times, the edges sorted once per direction
        firsts: dict = _trees(p, p.T, goods)
    except PlannerError:  # raised below, root by root: the first unreachable (root, direction)
        firsts = {}
    for g in goods:
        for tree in _initial(p, g[0], g[1], firsts.get(g)):
            add(g, tree)
    best_ub, best_y = math.inf, None
    for price in cut_prices(A, p.src, p.dst, np.where(b > 0, w, 0.0), dirs):
        cost = AT @ price  # a cut's prices: a finite bound from the start (forestcut)
        found = _trees(p, cost, goods)
        ub = upper(price, {g: float(cost[t].sum()) for g, t in found.items()})
        if ub < best_ub:
            best_ub, best_y = ub, price
    busy = AT @ np.ones(R)  # seconds per slice each edge keeps every resource busy
    busy_most = max(float(busy.max()), 1e-300)
    lb, iterations = 0.0, 0
    while iterations < max_iterations:
        iterations += 1
        value, lam, duals = master.solve()
        lb = -value
        y = np.maximum(-duals[:R], 0.0)
        pi = np.maximum(-duals[R:], 0.0)
        ready = AT @ y
        tries = [y] if best_y is None else [smoothing * best_y + (1 - smoothing) * y, y]
        added = 0
        for price in tries:
            cost = AT @ price
            found = _trees(p, cost, goods)
            ub = upper(price, {g: float(cost[t].sum()) for g, t in found.items()})
            if ub < best_ub:
                best_ub, best_y = ub, price
            if best_ub - lb <= GAP * lb:
                break
            # the column: among trees about as cheap, one keeping the resources least busy
            # (module docstring), else the cheapest, if either prices out
            lean = cost + TIE * (float(cost.max()) or 1.0) / busy_most * busy
            leanest = _trees(p, lean, goods)
            for k, g in enumerate(goods):
                for t in (leanest[g], found[g]):
                    if float(ready[t].sum()) < pi[k] * (1 - 1e-12):
                        added += add(g, t)
                        break
            if added:
                break
        if not added or best_ub - lb <= GAP * lb:
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
    # among the optimal packings the shallowest (forestdepth.py), the same certificate,
    # over the trees found and their rebuilds along the fastest paths of no dearer edges
    # (forestshallow.py); not an allreduce's (on a star it would put the whole vector
    # through one member: 1.31x T*)
    shallow = None
    if not free:
        for _ in range(SHALLOW_ROUNDS):
            _, lam, duals = master.solve()
            cost = AT @ np.maximum(-duals[:R], 0.0)
            x = lam[nphi:]
            used = np.flatnonzero(x > 1e-13 * max(float(x.max(initial=0.0)), 1e-300))
            if not sum([add(columns[j][:2], shallower(p, cost, *columns[j])) for j in used]):
                break
        # the fewest hops among trees of one depth (a star of NICs: the stars, not a
        # tree through a fast NIC of the same slowest path)
        tie = HOP * np.asarray(heights(p, columns), dtype=float)
        deep = np.asarray(depths(p, columns)) ** DEPTH_POWER
        shallow = shallowest(master, list(deep + tie))
    if shallow is None:
        value, lam, _ = master.solve()
    else:
        lam = shallow
    phis, x = lam[:nphi], lam[nphi:]
    used = np.flatnonzero(x > 1e-13 * max(float(x.max(initial=0.0)), 1e-300))
    trees = [columns[j][2] for j in used]
    tree_roots = [columns[j][0] for j in used]
    tree_dirs = [columns[j][1] for j in used]
    rates = x[used]
    # exactly feasible: the busiest resource busy one second per second
    per_edge = np.zeros(p.m)
    for t, xr in zip(trees, rates, strict=True):
        per_edge[t] += xr
    rates = rates / max(float((A @ per_edge).max()), 1e-300)
    got = {g: 0.0 for g in goods}
    for r, d, xr in zip(tree_roots, tree_dirs, rates, strict=True):
        got[(r, d)] += float(xr)
    if free:  # each root's share: what both its directions carry
        share = np.zeros(n)
        for r in roots:
            share[r] = min(got[(r, d)] for d in dirs)
        b = share / share.sum()
        phi = float(share.sum())
        to_time = scale / L  # seconds for a vector of one byte, per unit of phi
    else:
        phi = float(min(got[g] / w[g[0]] for g in goods))
        to_time = scale * b.max() / L
    del phis
    ub = max(best_ub, phi)
    return Forest(
        p,
        op,
        b,
        trees,
        tree_roots,
        tree_dirs,
        rates * L / scale,
        to_time / phi,
        to_time / ub,
        iterations,
        time.perf_counter() - start,
        L,
        columns,
    )
