"""Resource prices from the densest cut: a dual start for the per-root packing.

The packing's certificate (:mod:`hetcoll.planners.forest`) holds at any resource prices
``y >= 0``: ``phi <= sum(y) / sum_r w_r c_r(y)``, ``c_r(y)`` the cheapest arborescence of
root ``r``.  The master LP's first dual prices are degenerate: they price a few resources
only, every root has a tree that avoids them (``c_r = 0``), and the bound stays infinite
for hundreds of iterations on a 64-node graph.  A cut gives prices that bound at once:

- every arborescence out of a root in ``S`` leaves ``S`` over one of its edges; prices
  ``y`` with ``usage(e) . y >= 1`` on every edge ``e`` leaving ``S`` (the least such
  ``sum(y)``: a small covering LP) make each of them cost at least 1, so
  ``phi <= sum(y) / sum_{r in S} w_r``.  On a bandwidth-only link graph (one resource
  per edge) ``sum(y)`` is the cut's capacity ``B+(S)`` and the densest ``S`` gives Zhao &
  Krishnamurthy's cut bound: the optimum;
- trees into their root (a reduce-scatter): the same on the reversed edges;
- an allreduce (each root's tree in and tree out, shares free): every root pays at least 1
  in one of its two directions at a cut's prices, so ``phi <= sum(y)``: the least cut.

:func:`cut_prices` finds the cuts by maximum flows (Dinkelbach's iteration on the ratio
``sum_{r in S} w_r / B+(S)``, each step one flow from a super source per sink, capacities
rounded to integers: a cut found is exact, its ratio computed in floats; rounding can at
worst miss the densest cut, never make a bound invalid, since every bound is recomputed
from its prices by :func:`hetcoll.planners.forest.pack_forest`).  Edge capacities: the
rate each edge alone could run at (the inverse of its busiest resource's usage).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["cut_prices"]

#: integer capacity of the largest edge (or block) in the maximum flows
RESOLUTION = 1 << 22
#: Dinkelbach steps at most
STEPS = 50


def _capacities(A: Any) -> np.ndarray:
    """Per edge, the rate it alone could run at: ``1 / max_rho usage(rho, e)``."""
    most = np.asarray(abs(A).max(axis=0).todense()).ravel()
    with np.errstate(divide="ignore"):
        return np.where(most > 0, 1.0 / np.maximum(most, 1e-300), math.inf)


def _source_sides(n: int, src: np.ndarray, dst: np.ndarray, cap: np.ndarray, supply: Any):
    """For each sink ``v``, the source side (a boolean mask over the nodes) of a minimum
    cut from the super source (``supply[r]`` into node ``r``; None: node 0 is the source)
    to ``v``, with its flow value, capacities scaled to integers."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    finite = np.isfinite(cap)
    big = max(float(cap[finite].max(initial=0.0)), 1e-300)
    if supply is not None:
        big = max(big, float(np.max(supply)))
    unit = RESOLUTION / big
    c = np.where(finite, np.minimum(np.round(cap * unit), 2**27), 2**27).astype(np.int64)
    a, b = src, dst
    if supply is not None:
        a = np.append(src, np.full(n, n))
        b = np.append(dst, np.arange(n))
        c = np.append(c, np.round(np.asarray(supply) * unit).astype(np.int64))
    size = n + (supply is not None)
    graph = csr_matrix((c.astype(np.int32), (a, b)), shape=(size, size))
    graph.sum_duplicates()
    source = n if supply is not None else 0
    out = []
    for v in range(n):
        if v == source:
            continue
        flow = maximum_flow(graph, source, v)
        residual = (graph - flow.flow).tocsr()
        residual.data = np.where(residual.data > 0, 1, 0).astype(np.int32)
        residual.eliminate_zeros()
        reached = breadth_first_order(residual, source, return_predecessors=False)
        side = np.zeros(size, dtype=bool)
        side[reached] = True
        out.append((side[:n], flow.flow_value))
    return out


def _densest(n: int, src: np.ndarray, dst: np.ndarray, cap: np.ndarray, w: np.ndarray):
    """Node sets ``S`` of large ``sum_{r in S} w_r / B+(S)`` (Dinkelbach: at ratio ``t``,
    a minimum cut from a source feeding ``w_r`` into every ``r`` to a sink, edges at ``t``
    times their capacity, is below ``sum(w)`` exactly when its source side is denser than
    ``t``), densest first."""
    found: dict[bytes, float] = {}

    def ratio(side: np.ndarray) -> float:
        out = cap[side[src] & ~side[dst]].sum()
        return float(w[side].sum() / out) if out > 0 else math.inf

    for r in range(n):  # the single nodes: a first ratio
        side = np.zeros(n, dtype=bool)
        side[r] = True
        found[side.tobytes()] = ratio(side)
    t = max(found.values())
    for _ in range(STEPS):
        if not math.isfinite(t) or t <= 0:
            break
        best = t
        for side, _value in _source_sides(n, src, dst, cap * t, w):
            if side.any() and not side.all():
                found[side.tobytes()] = x = ratio(side)
                best = max(best, x)
        if best <= t * (1 + 1e-12):
            break
        t = best
    order = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
    return [np.frombuffer(k, dtype=bool) for k, _ in order]


def _covering(A: Any, edges: np.ndarray) -> np.ndarray | None:
    """The least-sum prices ``y >= 0`` with ``usage(e) . y >= 1`` for every edge in
    ``edges`` (a covering LP), or None if it has none."""
    sub = A[:, edges].tocsr()
    sub.eliminate_zeros()
    rows = np.unique(sub.nonzero()[0])
    if not len(rows) or not len(edges):
        return None
    per_edge = sub[rows].getnnz(axis=0)
    if per_edge.min() == 0:
        return None  # an edge that keeps nothing busy: no price makes it cost
    y = np.zeros(A.shape[0])
    if per_edge.max() == 1:  # one resource per edge (a link): each at its edges' largest
        one = sub.tocoo()
        np.maximum.at(y, one.row, 1.0 / one.data)
        return y
    from scipy.optimize import linprog

    res = linprog(
        np.ones(len(rows)),
        A_ub=-sub[rows].T.tocsr(),
        b_ub=-np.ones(len(edges)),
        bounds=(0, None),
        method="highs",
    )
    if res.status != 0:
        return None
    y[rows] = np.maximum(res.x, 0.0)
    return y


def cut_prices(A: Any, src: np.ndarray, dst: np.ndarray, w: np.ndarray, dirs: tuple[str, ...],
               most: int = 3) -> list[np.ndarray]:  # fmt: skip
    """Resource prices (rows of ``A``, the scaled usage, rows x edges) from up to ``most``
    of the densest cuts for roots of weight ``w`` (0: not a root) and tree directions
    ``dirs`` (module docstring), densest first; each prices every edge leaving its cut
    at least 1."""
    n = len(w)
    cap = _capacities(A)
    if dirs == ("out",):
        sides = _densest(n, src, dst, cap, w)
        leaving = [(s[src] & ~s[dst]) for s in sides]
    elif dirs == ("in",):
        sides = _densest(n, dst, src, cap, w)
        leaving = [(s[dst] & ~s[src]) for s in sides]
    else:  # both: the least cuts out of node 0 and into it
        cuts = [(value, 0, s) for s, value in _source_sides(n, src, dst, cap, None)]
        cuts += [(value, 1, s) for s, value in _source_sides(n, dst, src, cap, None)]
        cuts.sort(key=lambda c: (c[0], c[1], c[2].tobytes()))
        leaving = [s[src] & ~s[dst] if k == 0 else s[dst] & ~s[src] for _, k, s in cuts]
    prices, seen = [], set()
    for mask in leaving:
        key = mask.tobytes()
        if key in seen or not mask.any():
            continue
        seen.add(key)
        y = _covering(A, np.flatnonzero(mask))
        if y is not None:
            prices.append(y)
        if len(prices) >= most:
            break
    return prices
