"""Among the optimal per-root packings, the shallowest: the trees a pipeline fills and
drains fastest through.

The column generation of :func:`hetcoll.planners.forest.pack_forest` stops at a vertex of
its master LP, and where the optimum is degenerate any vertex will do for the LP: on a star
of NICs whose slow NICs alone bind, a chain through every node and a star out of the root
cost the same there.  A schedule does not: a segment crosses a tree of height ``h`` in
``h`` hops, so the pipeline fills and drains in about ``h`` segment times (a reduce-scatter
on an 8-node star of 25 and 10 Gbit/s NICs, 1 MiB per rank, over the chains the LP
chooses would take 1.17x its bound).  :func:`shallowest` solves the master LP once more
over the columns it has: the throughput held at its optimum, the trees' rates weighted by
their depths minimised (:func:`hetcoll.planners.forestshallow.depths`: each tree's slowest
path from its root at the edges' times, to the power
:data:`hetcoll.planners.forest.DEPTH_POWER`: the deepest trees go first; a lexicographic
optimum: the certificate stands).
"""

from __future__ import annotations

import numpy as np

from .steady import SteadyProblem

__all__ = ["height", "heights", "shallowest"]


def height(p: SteadyProblem, tree: np.ndarray, direction: str) -> int:
    """The height of a spanning arborescence of ``p`` (edge indices; data ``src -> dst``,
    out of the root for ``out``, into it for ``in``): the most hops from the root."""
    if direction == "out":
        up = {int(p.dst[e]): int(p.src[e]) for e in tree}
    else:
        up = {int(p.src[e]): int(p.dst[e]) for e in tree}
    depth: dict[int, int] = {}
    for v in up:
        path = []
        while v in up and v not in depth:
            path.append(v)
            v = up[v]
        d = depth.get(v, 0)
        for u in reversed(path):
            d += 1
            depth[u] = d
    return max(depth.values(), default=0)


def heights(p: SteadyProblem, columns: list[tuple[int, str, np.ndarray]]) -> list[int]:
    """:func:`height` of every column ``(root, direction, edges)`` at once (the same
    integers): each tree's parents in one row, the hops to the root counted by pointer
    jumping (a node's count plus its ancestor's, the ancestor's ancestor next), about
    ``log2 N`` numpy steps for all the trees rather than a Python walk per tree."""
    if not columns:
        return []
    n = p.n
    anc = np.tile(np.arange(n, dtype=np.int64), (len(columns), 1))
    for k, (_, direction, tree) in enumerate(columns):
        kid, mom = (p.dst, p.src) if direction == "out" else (p.src, p.dst)
        anc[k, kid[tree]] = mom[tree]
    hops = (anc != np.arange(n)).astype(np.int64)  # 1 below the root, 0 at it
    while True:
        up = np.take_along_axis(anc, anc, axis=1)
        if np.array_equal(up, anc):
            break
        hops += np.take_along_axis(hops, anc, axis=1)
        anc = up
    return [int(h) for h in hops.max(axis=1)]


def shallowest(master, depths: list[float]) -> np.ndarray | None:
    """The master LP's column values again, its one ``phi`` column (the first) held at its
    optimum by its lower bound (a bound the simplex meets exactly, where a row would hold
    it only to the feasibility tolerance) and ``sum_A depth(A) x_A`` minimised over the
    tree columns (``depths``, in column order after ``phi``); None when the second solve
    fails (the first one's solution stands).  The master is left changed: call it last."""
    h = master.h
    lam = master.solve()[1]
    if h.getNumCol() != 1 + len(depths) or lam[0] <= 0:
        return None
    h.changeColBounds(0, float(lam[0]), master.inf)
    h.changeColCost(0, 0.0)
    for k, hk in enumerate(depths):
        h.changeColCost(1 + k, float(hk))
    h.run()
    if "Optimal" not in str(h.getModelStatus()):
        return None
    return np.array(h.getSolution().col_value)
