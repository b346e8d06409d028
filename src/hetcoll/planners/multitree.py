"""``multi_tree``: a schedule that reaches the optimal multi-tree throughput.

Beaumont, Marchal & Robert (2004) compute the optimal MTP throughput and stop there ("mostly
of theoretical interest", Sec. 1).  Here the optimum comes with its trees (the arborescence
packing of :func:`hetcoll.planners.steady.pack_arborescences`), and the schedule runs them
all at once:

1. **Integer periods.** Tree ``i`` carries ``lambda_i`` slices per second; scaled to a period
   and rounded, it carries ``m_i`` whole slices per period (the smallest period, among
   16, 32, ..., 4096 slices, whose rounding keeps 99.8 % of the optimum).
2. **Flows.** Each tree becomes a pipelined flow carrying its share of the message
   (``m_i / sum m`` of the slices, contiguous bytes).
3. **Order.** One period's transfers form a bipartite multigraph between the senders' out-
   ports and the receivers' in-ports whose weighted degree is at most the period (the
   packing's port constraints).  Its Birkhoff-von Neumann decomposition (on the matrix of
   busy times, padded to equal line sums) splits it into matchings that run one after the
   other without two transfers meeting at a port; each node issues its sends in the order
   their matchings come (``Schedule.order``, one period, repeated).

The simulator then measures the rate the program order achieves
(:func:`hetcoll.pipeline.steady_state`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from ._common import relays
from ._registry import register
from .pipelined import PlanGraph, _schedule, _start
from .steady import Packing, pack_arborescences

__all__ = ["multi_tree", "integer_weights", "period_order"]

#: the rounding to whole slices per period keeps at least this share of the optimum
KEEP = 0.998
PERIODS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


@register(
    "multi_tree",
    collectives=("bcast", "multicast"),
    paper="hetcoll, after Beaumont, Marchal & Robert 2004 Sec. 4.1 (optimal MTP throughput)",
    complexity="column generation + O(K (N + E)) matchings for K slots",
    summary="the optimal multi-tree packing as pipelined flows in a matching order",
    models=("one_port", "one_port_uni"),
    options=("slices_per_period",),
)
def multi_tree(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    slices_per_period: int | None = None,
) -> Schedule:
    """Several pipelined trees at once, at the optimal one-port throughput.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As every planner; the slice is ``segment_size`` (the whole message if None).
    slices_per_period : int, optional
        Round the trees' weights to this many slices per period (default: the smallest of
        16, 32, ..., 4096 that keeps 99.8 % of the optimum).

    Returns
    -------
    Schedule
        One flow per tree (``params["trees"]`` of them), ``order`` the per-node send order
        of one period (``params["slices_per_period"]`` slices, ``params["slots"]``
        matchings), ``params["optimum"]`` the optimal throughput (bytes/s).

    Notes
    -----
    See the module docstring.  The trees are spanning arborescences of the links' digraph
    (of the members, with store-and-forward relays, for a multicast).
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    prob = g.problem()
    if g.k == 1 or req.nbytes == 0:
        return _schedule(req, g, "multi_tree", _best_single(g))
    packing = pack_arborescences(prob)
    m = integer_weights(g, packing, slices_per_period)
    keep = [i for i in range(len(m)) if m[i] > 0]
    trees = [packing.trees[i] for i in keep]
    m = [int(m[i]) for i in keep]
    size = req.message_size()
    total = -(-req.nbytes // size)
    share = _shares(total, m)
    flows, flow_of, offset = [], {}, 0
    for i, (tree, s) in enumerate(zip(trees, share, strict=True)):
        if s == 0:
            continue
        nb = min(s * size, req.nbytes - offset)
        pairs = [(int(g.nodes[g.src[e]]), int(g.nodes[g.dst[e]])) for e in _bfs_edges(g, tree)]
        ids = req.ids
        flow_of[i] = len(flows)
        flows.append(
            Flow(
                Tree.from_edges(ids[req.root], ((ids[a], ids[b]) for a, b in pairs)),
                nb,
                offset,
                segment_size=req.segment_size,
                relays=relays(req, pairs),
            )
        )
        offset += nb
    if offset != req.nbytes:  # pragma: no cover - _shares covers every slice
        raise PlannerError("multi_tree: the flows do not cover the message")
    local_order, slots = period_order(g, trees, m)
    order = {
        req.ids[int(g.nodes[u])]: tuple(
            (flow_of[i], req.ids[int(g.nodes[v])]) for i, v in seq if i in flow_of
        )
        for u, seq in local_order.items()
    }
    order = {u: seq for u, seq in order.items() if seq}
    params = {
        "trees": len(flows),
        "slices_per_period": sum(m[i] for i in flow_of),
        "slots": slots,
        "optimum": packing.throughput * size,
    }
    return Schedule(
        req.collective,
        "multi_tree",
        req.nbytes,
        tuple(flows),
        params,
        req.model.to_spec(),
        order=order,
    )


def _best_single(g: PlanGraph) -> list[int]:
    from .pipelined import _grow_one_port

    return _grow_one_port(g)


def _bfs_edges(g: PlanGraph, tree: np.ndarray) -> list[int]:
    kids: dict[int, list[int]] = {}
    for e in tree.tolist():
        kids.setdefault(int(g.src[e]), []).append(e)
    out, queue = [], [g.root]
    for v in queue:
        for e in sorted(kids.get(v, ()), key=lambda e: int(g.dst[e])):
            out.append(e)
            queue.append(int(g.dst[e]))
    return out


def integer_weights(g: PlanGraph, packing: Packing, target: int | None = None) -> np.ndarray:
    """Whole slices per period for each tree of ``packing`` (see the module docstring)."""
    lam = np.asarray(packing.weights, dtype=float)
    share = lam / lam.sum()
    prob = g.problem()
    best: tuple[float, np.ndarray] | None = None
    for periods in (target,) if target else PERIODS:
        m = np.floor(share * periods + 0.5)
        if m.sum() == 0:
            m[int(np.argmax(share))] = 1
        load = np.zeros(prob.rows)
        for tree, k in zip(packing.trees, m, strict=True):
            if k:
                load += prob.loads(tree.tolist(), float(k))
        rate = m.sum() / load.max()
        if best is None or rate > best[0]:
            best = (rate, m)
        if rate >= KEEP * packing.throughput:
            break
    assert best is not None
    return best[1].astype(np.int64)


def _shares(total: int, m: list[int]) -> list[int]:
    """``total`` slices split in proportion to ``m`` (largest remainders, then order)."""
    weight = np.array(m, dtype=float)
    exact = total * weight / weight.sum()
    out = np.floor(exact).astype(np.int64)
    rest = total - int(out.sum())
    for i in sorted(range(len(m)), key=lambda i: (-(exact[i] - out[i]), i))[:rest]:
        out[i] += 1
    return out.tolist()


def period_order(
    g: PlanGraph, trees: list[np.ndarray], m: list[int]
) -> tuple[dict[int, list[tuple[int, int]]], int]:
    """Each node's sends of one period, ``(tree index, child)`` in issue order, and the
    number of matchings (slots) of the period's Birkhoff-von Neumann decomposition."""
    k = g.k
    count: dict[tuple[int, int], dict[int, int]] = {}
    for i, (tree, mi) in enumerate(zip(trees, m, strict=True)):
        for e in tree.tolist():
            u, v = int(g.src[e]), int(g.dst[e])
            count.setdefault((u, v), {})[i] = mi
    T = {(int(g.src[e]), int(g.dst[e])): float(g.T[e]) for e in range(len(g.src))}
    busy = np.zeros((k, k))
    for (u, v), per_tree in count.items():
        busy[u, v] = sum(per_tree.values()) * T[(u, v)]
    slots = _birkhoff(busy)
    # when, in the decomposed period, the middle of each transfer of a pair passes
    stamps: dict[int, list[tuple[float, int, int, int]]] = {}
    clock = 0.0
    done: dict[tuple[int, int], float] = {}
    emitted: dict[tuple[int, int], int] = {}
    for pairs, length in slots:
        for u, v in pairs:
            if (u, v) not in count:
                continue
            t_uv = T[(u, v)]
            total = sum(count[(u, v)].values())
            before = done.get((u, v), 0.0)
            after = before + length
            j = emitted.get((u, v), 0)
            while j < total and (j + 0.5) * t_uv <= after + 1e-12 * t_uv:
                at = clock + ((j + 0.5) * t_uv - before)
                stamps.setdefault(u, []).append((at, v, j, u))
                j += 1
            emitted[(u, v)] = j
            done[(u, v)] = after
        clock += length
    for (u, v), per_tree in count.items():  # rounding leftovers, at the end
        total = sum(per_tree.values())
        for j in range(emitted.get((u, v), 0), total):
            stamps.setdefault(u, []).append((clock + j, v, j, u))
    order: dict[int, list[tuple[int, int]]] = {}
    for u, items in stamps.items():
        seq = []
        for _, v, j, _ in sorted(items):
            seq.append((_tree_of(count[(u, v)], j), v))
        order[u] = seq
    return order, len(slots)


def _tree_of(per_tree: dict[int, int], j: int) -> int:
    """The tree of a pair's ``j``-th transfer in a period: the trees' transfers spread
    evenly (tree ``i``'s ``q``-th at ``(q + 1/2) / m_i``), merged."""
    marks = sorted(((q + 0.5) / mi, i) for i, mi in per_tree.items() for q in range(mi))
    return marks[j][1]


def _birkhoff(busy: np.ndarray) -> list[tuple[list[tuple[int, int]], float]]:
    """Decompose ``busy`` (row and column sums at most their maximum D) into matchings
    with durations summing to D: the matrix is padded to ``[[B, diag(D - r)],
    [diag(D - c), B^T]]`` (every line sums to D) and peeled by perfect matchings on its
    support (Birkhoff-von Neumann)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    k = busy.shape[0]
    r, c = busy.sum(axis=1), busy.sum(axis=0)
    D = float(max(r.max(initial=0.0), c.max(initial=0.0)))
    if D <= 0:
        return []
    big = np.zeros((2 * k, 2 * k))
    big[:k, :k] = busy
    big[:k, k:] = np.diag(D - r)
    big[k:, :k] = np.diag(D - c)
    big[k:, k:] = busy.T
    tol = 1e-12 * D
    big[big < tol] = 0.0
    out = []
    remaining = D
    while remaining > tol:
        match = maximum_bipartite_matching(csr_matrix(big > 0), perm_type="column")
        if np.any(match < 0):  # numerical leftovers: stop (the rest goes at the end)
            break
        rows = np.arange(2 * k)
        length = float(big[rows, match].min())
        big[rows, match] -= length
        big[big < tol] = 0.0
        remaining -= length
        pairs = [
            (int(u), int(match[u])) for u in range(k) if match[u] < k and busy[u, match[u]] > 0
        ]
        out.append((pairs, length))
    return out
