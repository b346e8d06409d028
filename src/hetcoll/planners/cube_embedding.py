"""Hypercube embeddings on a pairwise cost matrix (Figueira & Reddi): the algorithms themselves.

Everything here works on a symmetric ``n x n`` weight matrix and node indices ``0..n-1``; the
registered planners (:mod:`hetcoll.planners.hypercube`) wrap it for platforms and schedules.
An embedding is ``positions`` (the node at each of the ``2**d`` cube positions) and ``folds``
(``(extra, partner)`` node pairs for the ``n - 2**d`` nodes that do not fit in the cube).

- :func:`calc_cost`: the cost of an embedding, the paper's Sec. 5.1 pseudocode;
- :func:`blind_embedding`, :func:`dim2_embedding`, :func:`tsts_embedding`,
  :func:`eff_embedding`: Sec. 4 (blind = rank order, as MPICH does);
- :func:`improve_embedding`: our local search on top of any of them;
- :func:`embed`: all of them by name, for experiments and benchmarks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..units import check_quantities

__all__ = [
    "calc_cost",
    "cube_cost",
    "finish_times",
    "check_weights",
    "blind_embedding",
    "dim2_embedding",
    "tsts_embedding",
    "eff_embedding",
    "improve_embedding",
    "local_cost",
    "mst_parents",
    "fold_pairs",
    "embed",
    "EMBEDDINGS",
]

Folds = tuple[tuple[int, int], ...]
Embedding = tuple[np.ndarray, Folds]


# -- input checks --------------------------------------------------------------------------------


def check_weights(weights: Any, *, symmetric: bool = True, name: str = "weights") -> np.ndarray:
    """``weights`` as a float array, or ``ValueError`` naming the first bad entry.

    It must be a square matrix of finite numbers >= 0 (and symmetric when ``symmetric``).
    """
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name}: must be a square matrix of numbers") from None
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ArgumentError(f"{name}: must be a square matrix, got shape {w.shape}")
    bad = np.argwhere(~np.isfinite(w) | (w < 0))
    if len(bad):
        i, j = bad[0]
        raise ArgumentError(f"{name}[{i}][{j}]: must be a finite number >= 0, got {w[i, j]}")
    check_quantities(w, "time", name, error=ArgumentError)  # at most MAX_TIME: sums stay finite
    if symmetric:
        asym = np.argwhere(w != w.T)
        if len(asym):
            i, j = asym[0]
            raise ArgumentError(
                f"{name}: must be symmetric (one cost per pair), but {name}[{i}][{j}] = "
                f"{w[i, j]} and {name}[{j}][{i}] = {w[j, i]}"
            )
    return w


def _check_embedding(n: int, positions: Any, folds: Any) -> tuple[np.ndarray, Folds]:
    try:
        pos = np.asarray(positions)
        if pos.dtype.kind not in "iu" and pos.size:
            raise TypeError
    except (TypeError, ValueError):
        raise ArgumentError("positions: must be a sequence of node indices") from None
    pos = pos.astype(np.intp).reshape(-1)
    p = len(pos)
    if p == 0 or p & (p - 1):
        raise ArgumentError(f"positions: need a power of two of nodes (1, 2, 4, ...), got {p}")
    try:
        out = tuple((int(e), int(q)) for e, q in folds)
    except (TypeError, ValueError):
        raise ArgumentError("folds: must be (extra, partner) pairs of node indices") from None
    nodes = np.concatenate([pos, np.array([e for e, _ in out], dtype=np.intp)])
    if nodes.min() < 0 or nodes.max() >= n:
        raise ArgumentError(f"positions: node indices must be in 0..{n - 1}")
    if len(np.unique(nodes)) != len(nodes):
        raise ArgumentError("positions: a node appears twice in the embedding")
    partners = [q for _, q in out]
    where = set(pos.tolist())
    if any(q not in where for q in partners) or len(set(partners)) != len(partners):
        raise ArgumentError("folds: each partner must be a distinct node of the cube")
    return pos, out


# -- cost ----------------------------------------------------------------------------------------


def finish_times(weights: np.ndarray, positions: np.ndarray, folds: Folds = ()) -> np.ndarray:
    """When each cube position finishes the hypercube (before the fold-out), unchecked.

    ``c[p] = max(c[p], c[p ^ 2**i]) + w[node(p ^ 2**i), node(p)]`` for each dimension ``i``
    in order, starting from 0 (or, at a partner, the arrival of its extra's contribution).
    ``weights[u, v]`` is the time a message from ``u`` takes to reach ``v``.
    """
    p = len(positions)
    c = np.zeros(p)
    if folds:
        where = {int(node): k for k, node in enumerate(positions)}
        for extra, partner in folds:
            c[where[partner]] = weights[extra, partner]
    idx = np.arange(p)
    for i in range(p.bit_length() - 1):
        q = idx ^ (1 << i)
        c = np.maximum(c, c[q]) + weights[positions[q], positions]
    return c


def calc_cost(
    weights: Any, positions: Sequence[int], folds: Sequence[tuple[int, int]] = ()
) -> float:
    """The cost of a hypercube embedding: Figueira & Reddi, Sec. 5.1, ``calc_cost``.

    The cost of each node starts as the weight to its neighbour in the first dimension; for
    each further dimension it becomes the larger of its own cost and its neighbour's, plus the
    weight to that neighbour; the cube's cost is the largest.  It is the time of the
    hypercube algorithm (Sec. 3) when a message between two nodes takes their weight and an
    exchange starts once both nodes are ready: exactly what :func:`hetcoll.simulate`
    predicts for the schedule under the ``postal`` model with zero overhead.

    Parameters
    ----------
    weights : array_like, shape (n, n)
        Symmetric cost between each pair of nodes (finite, >= 0).
    positions : sequence of int
        The node at each cube position: ``2**d`` distinct indices.
    folds : sequence of (int, int), optional
        ``(extra, partner)`` node pairs for nodes outside the cube (our extension for sizes
        that are not powers of two): the partner starts the cube once the extra's
        contribution has arrived, and the extra finishes ``weight`` after its partner.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        A non-square, non-symmetric, negative or non-finite matrix, or an embedding that is
        not a set of distinct nodes on ``2**d`` positions.

    Notes
    -----
    O(P log P) for a cube of P positions (vectorised over positions).

    References
    ----------
    S. M. Figueira and V. J. Reddi, "Topology-Based Hypercube Structures for Global
    Communication in Heterogeneous Networks", Sec. 5.1.

    Examples
    --------
    A 2-cube (square) 0-1-3-2: the first dimension costs 1 (pair 0-1) and 3 (pair 2-3), the
    second adds 5 on both sides: max(1, 3) + 5 = 8.

    >>> w = [[0, 1, 5, 9], [1, 0, 9, 5], [5, 9, 0, 3], [9, 5, 3, 0]]
    >>> calc_cost(w, [0, 1, 2, 3])
    8.0
    >>> calc_cost(w, [0, 2, 1, 3])   # pairs 0-2 and 1-3 first (5 each), then 0-1, 2-3
    8.0
    >>> calc_cost(w, [0, 3, 1, 2])   # 9 first, then 1 or 3: 12
    12.0
    """
    w = check_weights(weights)
    pos, out = _check_embedding(len(w), positions, folds)
    return cube_cost(w, pos, out)


def cube_cost(weights: np.ndarray, positions: np.ndarray, folds: Folds = ()) -> float:
    """:func:`calc_cost` without the input checks (for loops over many embeddings)."""
    c = finish_times(weights, positions, folds)
    total = float(c.max())
    if folds:
        where = {int(node): k for k, node in enumerate(positions)}
        for extra, partner in folds:
            total = max(total, float(c[where[partner]] + weights[partner, extra]))
    return total


# -- non-powers of two ---------------------------------------------------------------------------


def fold_pairs(weights: np.ndarray, extras: int) -> list[tuple[int, int]]:
    """``extras`` disjoint ``(extra, partner)`` pairs of cheap weight (greedy matching).

    Pairs are taken in increasing weight (ties: lowest indices first) while both nodes are
    free; in each pair, the node farther on average from all the others is the extra (ties:
    the higher index), so the cube keeps the more central one.  O(n^2 log n).
    """
    if extras <= 0:
        return []
    n = len(weights)
    iu, ju = np.triu_indices(n, 1)
    order = np.lexsort((ju, iu, weights[iu, ju]))
    mean = weights.sum(axis=1)
    free = np.ones(n, dtype=bool)
    out = []
    for k in order:
        a, b = int(iu[k]), int(ju[k])
        if free[a] and free[b]:
            free[a] = free[b] = False
            extra, partner = (a, b) if mean[a] > mean[b] else (b, a)
            out.append((extra, partner))
            if len(out) == extras:
                break
    return out


def _cube_size(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def _with_folds(weights: np.ndarray, core: Callable[[np.ndarray], np.ndarray]) -> Embedding:
    """Fold the extra nodes (:func:`fold_pairs`), embed the rest with ``core``."""
    n = len(weights)
    folds = fold_pairs(weights, n - _cube_size(n))
    extras = {e for e, _ in folds}
    cube = np.array([v for v in range(n) if v not in extras], dtype=np.intp)
    local = core(weights[np.ix_(cube, cube)]) if len(cube) < n else core(weights)
    return cube[local], tuple(folds)


# -- the paper's embeddings ----------------------------------------------------------------------


def blind_embedding(weights: np.ndarray) -> Embedding:
    """Nodes in rank order, as MPICH's recursive doubling places them (the paper's *blind*).

    With ``r = n - 2**d`` extra nodes, the first ``2r`` ranks pair up: rank ``2k`` folds into
    rank ``2k + 1``, which takes position ``k``; rank ``j >= 2r`` takes position ``j - r``.
    """
    n = len(weights)
    r = n - _cube_size(n)
    positions = np.array([2 * k + 1 for k in range(r)] + list(range(2 * r, n)), dtype=np.intp)
    return positions, tuple((2 * k, 2 * k + 1) for k in range(r))


def _dim2(w: np.ndarray) -> np.ndarray:
    n = len(w)
    pos = np.empty(n, dtype=np.intp)
    marked = np.zeros(n, dtype=bool)
    first = 0
    for i in range(0, n - 1, 2):
        while marked[first]:
            first += 1
        marked[first] = True
        row = np.where(marked, np.inf, w[first])
        j = int(np.argmin(row))  # the closest unmarked node, lowest index on ties
        marked[j] = True
        pos[i], pos[i + 1] = first, j
    if n == 1:
        pos[0] = 0
    return pos


def dim2_embedding(weights: np.ndarray) -> Embedding:
    """Dim2_Cube: each even position takes the first unmarked node, its first-dimension
    neighbour that node's closest unmarked node (Figueira & Reddi, Sec. 4.1).  O(n^2)."""
    return _with_folds(weights, _dim2)


def mst_parents(weights: np.ndarray) -> np.ndarray:
    """A minimum spanning tree of the complete graph, rooted at node 0 (Prim, dense).

    ``parent[v]`` for every node (``-1`` for the root).  Ties go to the node added first to
    the tree, then to the lowest index, so the tree is deterministic.  O(n^2) with numpy.
    """
    n = len(weights)
    parent = np.full(n, -1, dtype=np.intp)
    if n == 1:
        return parent
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = weights[0].astype(float)
    parent[1:] = 0
    for _ in range(n - 1):
        v = int(np.argmin(np.where(in_tree, np.inf, best)))
        in_tree[v] = True
        better = (weights[v] < best) & ~in_tree
        best[better] = weights[v][better]
        parent[better] = v
    return parent


def _preorder(parent: np.ndarray) -> list[int]:
    children: list[list[int]] = [[] for _ in parent]
    for v, p in enumerate(parent.tolist()):
        if p >= 0:
            children[p].append(v)  # increasing index
    order, stack = [], [0]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(reversed(children[v]))
    return order


def gray_code(k: int | np.ndarray) -> int | np.ndarray:
    """The ``k``-th reflected Gray code: consecutive codes differ in one bit."""
    return k ^ (k >> 1)


def _tsts(w: np.ndarray) -> np.ndarray:
    tour = np.array(_preorder(mst_parents(w)), dtype=np.intp)
    pos = np.empty(len(w), dtype=np.intp)
    pos[gray_code(np.arange(len(w)))] = tour
    return pos


def tsts_embedding(weights: np.ndarray) -> Embedding:
    """TSTS_Cube: the shortcut tour of a minimum spanning tree (its preorder from node 0,
    children by index), laid along the cube in Gray-code order, so that consecutive nodes of
    the tour are cube neighbours (Figueira & Reddi, Sec. 4.2).  O(n^2)."""
    return _with_folds(weights, _tsts)


def local_cost(weights: np.ndarray, positions: np.ndarray, position: int) -> np.ndarray:
    """Eff_Cube's *local cost* of putting each node at the empty ``position``: the sum of its
    weights to the nodes already at the neighbouring positions (``positions`` holds -1 at
    empty positions).  One value per node."""
    d = len(positions).bit_length() - 1
    nbrs = positions[[position ^ (1 << j) for j in range(d)]]
    nbrs = nbrs[nbrs >= 0]
    return weights[nbrs].sum(axis=0) if len(nbrs) else np.zeros(len(weights))


def _eff(w: np.ndarray) -> np.ndarray:
    n = len(w)
    d = n.bit_length() - 1
    pos = np.full(n, -1, dtype=np.intp)
    if n == 1:
        pos[0] = 0
        return pos
    used = np.zeros(n, dtype=bool)
    for j in range(d):  # the neighbours of position 0 get nodes 0, 1, ..., d-1
        pos[1 << j] = j
        used[j] = True
    dims = [1 << j for j in range(d)]
    for i in range(n):
        for bit in dims:
            y = i ^ bit
            if pos[y] >= 0:
                continue
            cost = np.where(used, np.inf, local_cost(w, pos, y))
            k = int(np.argmin(cost))  # strict "<" in the pseudocode: the lowest index wins ties
            pos[y] = k
            used[k] = True
    return pos


def eff_embedding(weights: np.ndarray) -> Embedding:
    """Eff_Cube: fill the empty neighbours of each position in turn with the unused node of
    least local cost (Figueira & Reddi, Sec. 4.3, Fig. 4-5).  O(n^2 log n), vectorised over
    the candidate nodes."""
    return _with_folds(weights, _eff)


# -- our improvement: local search over position swaps ------------------------------------------


class _Search:
    """State of the swap local search: the embedding, its per-dimension edge weights and the
    fold costs that travel with each cube node."""

    def __init__(self, w: np.ndarray, positions: np.ndarray, folds: Folds) -> None:
        self.w = w
        self.pos = positions.copy()
        p = len(positions)
        self.d = p.bit_length() - 1
        self.idx = np.arange(p)
        self.nbr = (self.idx[:, None] ^ (1 << np.arange(self.d))[None, :]).astype(np.intp)
        extra_of = dict((q, e) for e, q in folds)
        # per node: arrival of its extra's contribution (fold in) and cost of the fold out
        self.fold_in = np.zeros(len(w))
        self.fold_out = np.zeros(len(w))
        for q, e in extra_of.items():
            self.fold_in[q] = w[e, q]
            self.fold_out[q] = w[q, e]
        self._edges()

    def _edges(self) -> None:
        # edge[i, x]: weight of position x's edge in dimension i; inc[x]: their sum
        self.edge = self.w[self.pos[self.nbr.T], self.pos[None, :]]
        self.inc = self.edge.sum(axis=0)

    def evaluate(self, a: int, bs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Finish times of every position after swapping positions ``a`` and ``b`` for each
        ``b`` in ``bs``; returns (makespan, sum of finish times, finish times) per swap.

        Same arithmetic as :func:`finish_times` (max, then add the weight), so the values are
        exactly those of :func:`calc_cost`."""
        k = len(bs)
        pos, w = self.pos, self.w
        rows = np.arange(k)
        node = np.broadcast_to(pos, (k, len(pos))).copy()
        node[rows, a] = pos[bs]
        node[rows, bs] = pos[a]
        c = self.fold_in[node]
        col = np.stack([np.full(k, a), bs], axis=1)
        for i in range(self.d):
            h = 1 << i
            v = c.reshape(k, -1, 2, h)
            m = np.maximum(v[:, :, 0], v[:, :, 1])
            c = (m[:, :, None, :] + self.edge[i].reshape(-1, 2, h)).reshape(k, -1)
            x = np.concatenate([col, col ^ h], axis=1)  # positions whose edge i changed
            r = rows[:, None]
            c[r, x] = m[r, x >> (i + 1), x & (h - 1)] + w[node[r, x ^ h], node[r, x]]
        total = c + self.fold_out[node]
        return total.max(axis=1), total.sum(axis=1), total

    def candidates(self, a: int, count: int) -> np.ndarray:
        """The ``count`` positions whose swap with ``a`` lowers the sum of the two positions'
        edge weights most (a cheap O(P d) proxy), excluding ``a``; ties by position."""
        pos, w, nbr = self.pos, self.w, self.nbr
        x = pos[a]
        here = w[:, pos[nbr[a]]].sum(axis=1)[pos]  # each node at b, moved to a
        there = w[x, pos][nbr].sum(axis=1)  # a's node, moved to each b
        delta = here + there - self.inc[a] - self.inc
        adj = nbr[a]
        delta[adj] += 2 * w[x, pos[adj]]  # the a-b edge itself keeps its weight
        delta[a] = np.inf
        order = np.lexsort((self.idx, delta))
        return order[: min(count, len(pos) - 1)]

    def apply(self, a: int, b: int) -> None:
        self.pos[a], self.pos[b] = self.pos[b], self.pos[a]
        self._edges()


def improve_embedding(
    weights: np.ndarray,
    positions: np.ndarray,
    folds: Folds = (),
    *,
    candidates: int = 8,
    max_evals: int | None = None,
    time_limit: float | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Local search over swaps of two cube positions, from a given embedding.

    The objective is lexicographic: the embedding's cost (:func:`calc_cost`, fold-out
    included) first, then the sum of all positions' finish times, which breaks the long
    plateaus of a bottleneck objective.  Positions are tried from the one that finishes last;
    for each, the ``candidates`` partners that lower the two positions' summed edge weights
    most are evaluated exactly, all at once (vectorised :func:`finish_times`), and the best
    swap is taken if it improves the objective.  Don't-look bits skip positions whose swaps
    all failed until a neighbour moves.  Deterministic; stops at a local optimum, after
    ``max_evals`` positions tried (default ``8 P``, rarely reached: a local optimum takes
    about ``2 P``), or after ``time_limit`` seconds (which makes the result depend on the
    machine's speed: leave it unset when ranks plan independently).

    Returns the new positions and statistics (``evals``, ``moves``, ``seconds``).  O(c P log P)
    per position tried, with c = ``candidates``.
    """
    _check_count(candidates, "candidates", 1)
    if max_evals is not None:
        _check_count(max_evals, "max_evals", 0)
    if time_limit is not None and (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, int | float)
        or not time_limit >= 0
    ):
        raise ArgumentError(f"time_limit: must be a number of seconds >= 0, got {time_limit!r}")
    p = len(positions)
    start = time.perf_counter()
    stats = {"evals": 0, "moves": 0, "seconds": 0.0}
    if p <= 2:
        return positions.copy(), stats
    s = _Search(weights, positions, folds)
    mk, sm, total = s.evaluate(0, np.array([0]))
    best = (float(mk[0]), float(sm[0]))
    finish = total[0]
    look = np.ones(p, dtype=bool)
    budget = max_evals if max_evals is not None else 8 * p
    while stats["evals"] < budget:
        order = np.lexsort((s.idx, -finish))
        order = order[look[order]]
        if not len(order):
            break
        moved = False
        for a in order.tolist():
            if stats["evals"] >= budget or (
                time_limit is not None and time.perf_counter() - start > time_limit
            ):
                budget = stats["evals"]
                break
            stats["evals"] += 1
            bs = s.candidates(a, candidates)
            mk, sm, total = s.evaluate(a, bs)
            k = int(np.lexsort((sm, mk))[0])
            if (float(mk[k]), float(sm[k])) < best:
                b = int(bs[k])
                s.apply(a, b)
                best, finish = (float(mk[k]), float(sm[k])), total[k]
                look[[a, b]] = True
                look[s.nbr[a]] = True
                look[s.nbr[b]] = True
                stats["moves"] += 1
                moved = True
                break
            look[a] = False
        if not moved and not look.any():
            break
    stats["seconds"] = time.perf_counter() - start
    return s.pos, stats


def _check_count(value: Any, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ArgumentError(f"{name}: must be an integer >= {low}, got {value!r}")


# -- by name -------------------------------------------------------------------------------------


def _eff_ls(weights: np.ndarray, **options: Any) -> Embedding:
    positions, folds = eff_embedding(weights)
    improved, _ = improve_embedding(weights, positions, folds, **options)
    return improved, folds


#: name -> function(weights) -> (positions, folds): the embeddings of the planners.
EMBEDDINGS: dict[str, Callable[..., Embedding]] = {
    "blind": blind_embedding,
    "dim2_cube": dim2_embedding,
    "tsts_cube": tsts_embedding,
    "eff_cube": eff_embedding,
    "eff_cube_ls": _eff_ls,
}


def embed(weights: Any, method: str = "eff_cube", **options: Any) -> Embedding:
    """The embedding of planner ``method`` for a symmetric weight matrix.

    Returns ``(positions, folds)`` of node indices; ``options`` go to the local search of
    ``eff_cube_ls``.

    Greedy local costs can mislead: Eff_Cube puts the expensive pairs in the first
    dimension here, and the local search repairs it.

    >>> w = [[0, 1, 5, 9], [1, 0, 9, 5], [5, 9, 0, 3], [9, 5, 3, 0]]
    >>> for method in ("blind", "eff_cube", "eff_cube_ls"):
    ...     positions, folds = embed(w, method)
    ...     print(method, positions.tolist(), calc_cost(w, positions))
    blind [0, 1, 2, 3] 8.0
    eff_cube [2, 0, 1, 3] 14.0
    eff_cube_ls [0, 2, 1, 3] 8.0
    """
    if method not in EMBEDDINGS:
        raise ArgumentError(f"unknown embedding {method!r}; choose from: {', '.join(EMBEDDINGS)}")
    w = check_weights(weights)
    return EMBEDDINGS[method](w, **options)
