"""Shallower trees at the same price: the optimal packing's trees rebuilt along the fastest
paths their prices allow, and the pipeline depth the shallowest packing minimises.

The column generation of :func:`hetcoll.planners.forest.pack_forest` prices a tree by the
sum of its edges' dual prices, and most edges cost nothing: of the many cheapest trees the
minimum arborescence returns one of arbitrary shape, on the 64-node graph of
``benchmarks/simulated/bench_packing.py`` chains up to 39 hops deep.  A segment crosses a
tree hop after hop, so its pipeline fills and drains in its slowest path's time
(:func:`depths`), and within the simulator's message budget a deep tree gets too few
segments to hide it.  :func:`shallower` rebuilds a tree without raising its price: each
node may be entered by any edge no dearer than the tree's edge into it, and among those
edges every node is reached by its fastest path from the root (Dijkstra over the edges'
transfer times).  Any arborescence of those edges costs at most the tree's price, so a tree
of reduced cost zero gives one of reduced cost at most zero: a column the optimal packing
may use at no loss.  :func:`hetcoll.planners.forestdepth.shallowest` then minimises the
trees' rates weighted by :func:`depths` among the optimal packings.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from .steady import SteadyProblem

__all__ = ["depths", "shallower"]


def shallower(
    p: SteadyProblem, cost: np.ndarray, root: int, direction: str, tree: np.ndarray
) -> np.ndarray:
    """``tree`` (edge indices of ``p``, an arborescence of ``root`` out of it or into it,
    ``direction``) rebuilt over the edges entering each node at most at the price
    (``cost`` per edge) of the tree's edge into it, every node reached by its fastest path
    from the root (``p.T`` per edge): no dearer than ``tree``; sorted edge indices."""
    kid, mom = (p.dst, p.src) if direction == "out" else (p.src, p.dst)
    n = p.n
    top = np.full(n, -np.inf)
    top[kid[tree]] = cost[tree]
    tol = 1e-12 * max(float(np.abs(cost).max(initial=0.0)), 1e-300)
    ok = np.flatnonzero(cost <= top[kid] + tol)  # never into the root: its top is -inf
    # an edge of no time still counts as an edge (a stored zero is no edge to csgraph)
    times = np.asarray(p.T, dtype=float)[ok]
    times = np.maximum(times, 1e-12 * max(float(times.max(initial=0.0)), 1e-300))
    graph = csr_matrix((times, (mom[ok], kid[ok])), shape=(n, n))
    far, pred = dijkstra(graph, directed=True, indices=root, return_predecessors=True)
    if not np.all(np.isfinite(far)):  # cannot happen: the tree's own edges are allowed
        return tree
    which = csr_matrix((ok + 1, (mom[ok], kid[ok])), shape=(n, n))
    v = np.delete(np.arange(n), root)
    edges = np.asarray(which[pred[v], v]).ravel() - 1
    return np.sort(edges.astype(np.int64))


def depths(p: SteadyProblem, columns: list[tuple[int, str, np.ndarray]]) -> list[float]:
    """Each column's ``(root, direction, edges)`` pipeline depth: its slowest path from the
    root to a leaf, edge after edge at ``p.T`` (a slice's time), relative to the slowest
    edge's; all at once by pointer jumping (a node's time to the root plus its ancestor's,
    the ancestor's ancestor next), about ``log2 N`` numpy steps, as
    :func:`hetcoll.planners.forestdepth.heights` counts hops."""
    if not columns:
        return []
    n = p.n
    T = np.asarray(p.T, dtype=float)
    T = T / max(float(T.max(initial=0.0)), 1e-300)
    anc = np.tile(np.arange(n, dtype=np.int64), (len(columns), 1))
    far = np.zeros((len(columns), n))
    for k, (_, direction, tree) in enumerate(columns):
        kid, mom = (p.dst, p.src) if direction == "out" else (p.src, p.dst)
        anc[k, kid[tree]] = mom[tree]
        far[k, kid[tree]] = T[tree]
    while True:
        up = np.take_along_axis(anc, anc, axis=1)
        if np.array_equal(up, anc):
            break
        far += np.take_along_axis(far, anc, axis=1)
        anc = up
    return [float(x) for x in far.max(axis=1)]
