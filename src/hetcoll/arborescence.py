"""Minimum-cost spanning arborescence (Chu & Liu 1965; Edmonds 1967), vectorised with numpy.

The pricing step of the steady-state broadcast optimum (:mod:`hetcoll.planners.steady`)
calls it hundreds of times, with costs that tie often (dual prices are 0 on idle ports), so
it must be fast and exact under ties: each round picks, for every node, its cheapest
incoming edge (ties: the lowest edge index), contracts the cycles those edges form, and
recurses; the expansion keeps every cycle edge but the one into the node where the
contracted cycle is entered.
"""

from __future__ import annotations

import numpy as np

__all__ = ["min_arborescence", "depths"]


def min_arborescence(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    cost: np.ndarray,
    root: int,
    depth: np.ndarray | None = None,
) -> np.ndarray | None:
    """Edges of a minimum-cost spanning arborescence rooted at ``root``.

    Parameters
    ----------
    n : int
        Number of nodes ``0 .. n-1``.
    src, dst : array of int
        Edge ``e`` goes from ``src[e]`` to ``dst[e]``.
    cost : array of float
        Edge costs (any sign).
    root : int
    depth : array of int, optional
        Hops from ``root`` of every node (:func:`depths`): pass it when calling many times
        on one graph.

    Returns
    -------
    numpy.ndarray or None
        The ``n - 1`` edge indices (the edge entering each non-root node, in node order), or
        None when some node cannot be reached from ``root``.

    Notes
    -----
    O(E) numpy work plus O(N) Python per contraction round, at most N rounds (usually a
    few).  Deterministic: among equal-cost choices the lowest edge index wins.

    Examples
    --------
    >>> import numpy as np
    >>> src, dst = np.array([0, 0, 1, 2]), np.array([1, 2, 2, 1])
    >>> min_arborescence(3, src, dst, np.array([5.0, 1.0, 1.0, 1.0]), 0).tolist()
    [3, 1]
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cost = np.asarray(cost, dtype=float)
    if n <= 1:
        return np.zeros(0, dtype=np.int64)
    keep = np.flatnonzero((src != dst) & (dst != root))
    s, d, w = src[keep], dst[keep], cost[keep]
    # ties go to the parent nearest the root (then the lowest edge index): with many equal
    # costs (zero prices) arbitrary ties form cycles round after round
    depth = depths(n, src, dst, root) if depth is None else depth
    origin = keep  # this level's edge -> the caller's edge index
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    size, r = n, root
    while True:
        inedge = _cheapest_in(size, d, w, depth[s])
        inedge[r] = -1
        if int((inedge < 0).sum()) > 1:
            return None
        parent = np.where(inedge >= 0, s[np.maximum(inedge, 0)], -1)
        label, count = _cycles(parent, r)
        if count == 0:
            chosen = inedge[inedge >= 0]
            break
        # contract: every cycle becomes one node, the other nodes keep a node of their own
        newid = np.empty(size, dtype=np.int64)
        free = label < 0
        newid[free] = np.arange(count, count + int(free.sum()))
        newid[~free] = label[~free]
        s2, d2 = newid[s], newid[d]
        w2 = w - np.where(label[d] >= 0, w[np.maximum(inedge[d], 0)], 0.0)
        up = np.flatnonzero(s2 != d2)
        levels.append((d, inedge, label, up))
        new_depth = np.full(size_new := count + int(free.sum()), np.iinfo(np.int64).max)
        np.minimum.at(new_depth, newid, depth)
        depth = new_depth
        s, d, w = s2[up], d2[up], w2[up]
        size, r = size_new, int(newid[r])
    for d_lvl, inedge, label, up in reversed(levels):
        chosen = up[chosen]  # back to this level's edge indices
        entered = np.zeros(len(inedge), dtype=bool)
        entered[d_lvl[chosen]] = True
        extra = inedge[(label >= 0) & ~entered]
        chosen = np.concatenate([chosen, extra])
    out = origin[chosen]
    return out[np.argsort(dst[out], kind="stable")]


def depths(n: int, src: np.ndarray, dst: np.ndarray, root: int) -> np.ndarray:
    """Hops from ``root`` along the edges (``n`` for the unreachable)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    g = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    order, pred = breadth_first_order(g, root, directed=True)
    depth = np.full(n, n, dtype=np.int64)
    depth[root] = 0
    for v in order[1:].tolist():
        depth[v] = depth[pred[v]] + 1
    return depth


def _cheapest_in(size: int, d: np.ndarray, w: np.ndarray, near: np.ndarray) -> np.ndarray:
    """For each node its cheapest incoming edge (ties: the source nearest the root, then the
    lowest index), -1 if none."""
    order = np.lexsort((near, w, d))  # stable: the lowest index among full ties
    dd = d[order]
    first = np.ones(len(dd), dtype=bool)
    first[1:] = dd[1:] != dd[:-1]
    inedge = np.full(size, -1, dtype=np.int64)
    inedge[dd[first]] = order[first]
    return inedge


def _cycles(parent: np.ndarray, root: int) -> tuple[np.ndarray, int]:
    """Label the nodes of each cycle of the functional graph ``v -> parent[v]`` with
    ``0 .. count-1`` (other nodes -1)."""
    size = len(parent)
    label = np.full(size, -1, dtype=np.int64)
    state = [0] * size  # 0 new, 1 on the current walk, 2 done
    par = parent.tolist()
    count = 0
    for start in range(size):
        if state[start]:
            continue
        walk = []
        v = start
        while v >= 0 and state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = par[v] if v != root else -1
        if v >= 0 and state[v] == 1:  # closed a cycle at v
            u = v
            while True:
                label[u] = count
                u = par[u]
                if u == v:
                    break
            count += 1
        for u in walk:
            state[u] = 2
    return label, count
