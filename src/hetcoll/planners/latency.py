"""Latency-matrix trees of Park et al. (2004): MST, shortest-path tree and HLOT (Fig. 3).

All three read the planning model's pairwise delay matrix ``W`` (``delay_matrix`` at the
message size: latency + bytes / bandwidth + receive overhead under ``postal``) and work on
node indices.  The paper gives no send order; by default each node sends to its children
longest-subtree-first (the optimal order for a fixed tree under eq. 2; under eq. 3-4 every
order gives the same times), ``order="join"`` sends in the order the links joined the tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._common import Request, prepare, tree_schedule
from ._registry import register
from ._trees import Matrices, children_from_parents, longest_first, matrices, tree_edges

__all__ = ["mst", "spt", "hlot", "mst_parents", "spt_parents", "hlot_parents"]

_TREE_OPS = ("bcast", "multicast")
PARK = "Park et al., ICCSA 2004"


# -- index-level algorithms (also used by the multi-level planners) ----------------------------


def mst_parents(w: np.ndarray, root: int, members: Sequence[int]) -> tuple[dict[int, int], list]:
    """Prim's algorithm from ``root`` on the directed weights ``w[c, n]`` over ``members``.

    Returns ``(parent, join_order)``.  The next node is the one with the lightest edge from
    the tree (ties: lowest index); its parent the earliest-joined tree node with that weight.
    O(N^2).
    """
    return _prim(w, root, members, filtered=False)


def hlot_parents(w: np.ndarray, root: int, members: Sequence[int]) -> tuple[dict[int, int], list]:
    """HLOT (Park et al. 2004, Fig. 3): Prim's order, keeping only latency-optimal links.

    Prim's loop picks the fastest link ``e(c, n)`` from the tree to a new node; the link is
    rejected (and the next fastest one tried) when it would deliver later than the root's
    direct link, ``D[c] + W[c][n] > W[root][n]``, where ``D[c]`` is the path latency from the
    root to ``c``.  The direct link always passes, so the loop ends with every node at
    ``D[n] <= W[root][n]``.  Returns ``(parent, join_order)``.  O(N^2).
    """
    return _prim(w, root, members, filtered=True)


def _prim(
    w: np.ndarray, root: int, members: Sequence[int], *, filtered: bool
) -> tuple[dict[int, int], list[int]]:
    members = [int(m) for m in members]
    others = np.array([m for m in members if m != root], dtype=np.intp)
    k = len(others)
    parent: dict[int, int] = {}
    order = [root]
    if k == 0:
        return parent, order
    direct = np.array(w[root, others], dtype=float)  # W[root][n]: HLOT's bound
    best = direct.copy()  # lightest acceptable link into each outside node
    best_path = direct.copy()  # D[c] + W[c][n] of that link (tie-break: the shorter path)
    best_par = np.full(k, root, dtype=np.intp)
    outside = np.ones(k, dtype=bool)
    dist = {root: 0.0}
    for _ in range(k):
        cand = np.flatnonzero(outside)
        j = cand[np.lexsort((others[cand], best[cand]))[0]]  # lightest link, then lowest index
        n, p = int(others[j]), int(best_par[j])
        outside[j] = False
        parent[n] = p
        order.append(n)
        dist[n] = dist[p] + float(w[p, n])
        rest = np.flatnonzero(outside)
        if not len(rest):
            break
        weight = w[n, others[rest]]
        path = dist[n] + weight
        better = (weight < best[rest]) | ((weight == best[rest]) & (path < best_path[rest]))
        if filtered:
            # the paper's rule: never deliver later than the root's direct link would
            better &= path <= direct[rest]
        upd = rest[better]
        best[upd] = weight[better]
        best_path[upd] = path[better]
        best_par[upd] = n
    return parent, order


def spt_parents(w: np.ndarray, root: int, members: Sequence[int]) -> tuple[dict[int, int], list]:
    """Dijkstra's shortest-path tree from ``root`` on ``w[u, v]`` over ``members``.

    The next node settled is the closest (ties: lowest index); a node keeps the first parent
    that reached its final distance (the root first, then in settling order).  Returns
    ``(parent, settle_order)``.  O(N^2).
    """
    members = [int(m) for m in members]
    others = np.array([m for m in members if m != root], dtype=np.intp)
    k = len(others)
    parent: dict[int, int] = {}
    order = [root]
    if k == 0:
        return parent, order
    dist = np.array(w[root, others], dtype=float)
    par = np.full(k, root, dtype=np.intp)
    outside = np.ones(k, dtype=bool)
    for _ in range(k):
        cand = np.flatnonzero(outside)
        j = cand[np.lexsort((others[cand], dist[cand]))[0]]
        n = int(others[j])
        outside[j] = False
        parent[n] = int(par[j])
        order.append(n)
        rest = np.flatnonzero(outside)
        if not len(rest):
            break
        nd = dist[j] + w[n, others[rest]]
        better = nd < dist[rest]
        dist[rest[better]] = nd[better]
        par[rest[better]] = n
    return parent, order


# -- planners -----------------------------------------------------------------------------------


ORDERS = ("longest", "join")


def ordered_children(
    root: int, parent: dict[int, int], join: Sequence[int], mats: Matrices, order: str
) -> list[list[int]]:
    """Children lists in send order: ``"longest"`` subtree first, or ``"join"`` order."""
    if order not in ORDERS:
        raise PlannerError(f"order: must be 'longest' or 'join', got {order!r}")
    children = children_from_parents(len(mats.delay), parent, join)
    if order == "longest":
        children = longest_first(root, children, mats.delay, mats.busy)
    return children


def _latency_tree(req: Request, algorithm: str, build, order: str) -> Schedule:
    mats = matrices(req)
    parent, join = build(mats.delay_array, req.root, req.members)
    children = ordered_children(req.root, parent, join, mats, order)
    return tree_schedule(req, algorithm, tree_edges(req.root, children), order=order)


_ORDER_DOC = """order : {"longest", "join"}
        Each node's send order: longest subtree first (default; the optimal order for the
        tree under eq. 2, irrelevant under eq. 3-4), or the order the links joined the tree
        (nearest first - the literal reading of the algorithm's edge list)."""


@register(
    "mst",
    collectives=_TREE_OPS,
    paper=f"{PARK}, Sec. 2 and Fig. 2 (minimum spanning tree)",
    complexity="O(N^2)",
    summary="Prim's minimum spanning tree from the root on the latency matrix",
    models=("postal",),
    options=("order",),
)
def mst(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    order: Literal["longest", "join"] = "longest",
) -> Schedule:
    """Minimum spanning tree grown from the root with Prim's algorithm.

    Picks the lowest-latency link one at a time, which Park et al. (2004, Sec. 3.1) show can
    build a long, slow path (Fig. 2: ``A, H, G, F, E``, 1150 time units).  On an asymmetric
    matrix the link weight is the latency from the tree node to the new node.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As for every planner (:func:`hetcoll.plan`).
    {order}

    Returns
    -------
    Schedule

    Notes
    -----
    Model: any model with a pairwise delay matrix (designed for ``postal``).  Ties: the
    lowest index joins first, from the earliest-joined parent.  O(N^2).

    References
    ----------
    Park et al., "An Efficient Collective Communication Method for Grid Scale Networks",
    ICCSA 2004, Sec. 2-3.1, Fig. 2.

    Examples
    --------
    >>> from hetcoll import load_platform, simulate
    >>> p = load_platform("park-fig2")
    >>> round(simulate(p, mst(p, "A")).makespan * 1e3, 6)  # time units of 1 ms
    1150.0
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    return _latency_tree(req, "mst", mst_parents, order)


@register(
    "spt",
    collectives=_TREE_OPS,
    paper="Dijkstra 1959; optimal under Park et al. 2004 eq. (4)",
    complexity="O(N^2)",
    summary="shortest-path tree from the root (optimal when sends cost no overhead or gap)",
    models=("postal",),
    options=("order",),
)
def spt(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    order: Literal["longest", "join"] = "longest",
) -> Schedule:
    """Shortest-path tree: every member receives along its lowest-latency path from the root.

    Under eq. (4) of Park et al. (no sending overhead or gap, sends non-blocking) a node
    receives at the sum of the delays along its tree path, and that sum is at least its
    shortest-path distance in any tree; this tree meets the bound for every node at once, so
    it is optimal (and HLOT, MST, flat and binomial can only tie or lose).  Under eq. (2) its
    hubs pay ``(c - 1)(overhead + gap)`` per extra child and it can lose to others.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As for every planner (:func:`hetcoll.plan`).
    {order}

    Returns
    -------
    Schedule

    Notes
    -----
    Dijkstra on the planning model's delay matrix restricted to the members (directed, so
    asymmetric matrices are fine).  Ties: the node settled first is the closest then lowest
    index; a node keeps the first parent reaching its distance (the root's direct link
    first).  Optimal whenever sends do not occupy the sender (``postal`` with overhead, gap
    and per-byte cost 0).  O(N^2).

    References
    ----------
    E. W. Dijkstra, "A note on two problems in connexion with graphs", 1959; Park et al.,
    ICCSA 2004, eq. (4).

    Examples
    --------
    >>> from hetcoll import load_platform, simulate
    >>> p = load_platform("park-fig2")
    >>> round(simulate(p, spt(p, "A")).makespan * 1e3, 6)
    580.0
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    return _latency_tree(req, "spt", spt_parents, order)


@register(
    "hlot",
    collectives=_TREE_OPS,
    paper=f"{PARK}, Sec. 3.2, Fig. 3",
    complexity="O(N^2)",
    summary="hierarchical latency-optimal tree: Prim, rejecting links slower than the root's",
    models=("postal",),
    options=("order",),
)
def hlot(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    order: Literal["longest", "join"] = "longest",
) -> Schedule:
    """Hierarchical Latency-Optimal Tree (HLOT), Park et al. (2004), Fig. 3.

    Grows the tree in Prim's order (the fastest link from the tree to a new node first) but
    only accepts a link ``e(c, n)`` when the path through ``c`` delivers no later than the
    root's direct link: ``D[c] + W[c][n] <= W[root][n]``.  A rejected link is dropped for
    good (``D[c]`` never changes) and the next fastest is tried; the direct link always
    passes, so the loop terminates.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As for every planner (:func:`hetcoll.plan`).
    {order}

    Returns
    -------
    Schedule

    Notes
    -----
    **Reading of Fig. 3.**  The pseudocode is ambiguous; this implementation takes:

    * "choose fastest link e(c, n)" as Prim's choice, the smallest ``W[c][n]`` over tree
      nodes ``c`` and new nodes ``n``;
    * "if D[n] is higher than W[0][n]: continue // try again" as a test of the *candidate*
      path latency ``D[c] + W[c][n]`` against the root's direct latency, rejecting the link
      and trying the next fastest (not retrying the same link forever);
    * "add c to Y" as a typo for "add n to Y" (``c`` is already in the tree);
    * ties: equal latency prefers the shorter path, then the lower index.

    This reading keeps the property the paper states in Sec. 3.2: under eq. (4) every node
    receives no later than from the flat tree (``D[n] <= W[root][n]``, so
    ``T_HLOT <= max W[root][n] = T_flat``), exactly, in floating point too.  Alternatives:

    * choosing the link with the smallest *path* ``D[c] + W[c][n]`` makes the test
      always pass and HLOT becomes Dijkstra's shortest-path tree (:func:`spt`);
    * testing ``D[n]`` against ``W[0][n]`` *after* adding the link (undoing it on failure)
      is the same as this reading;
    * testing the tree node's own distance ``D[c] > W[0][c]`` never rejects anything
      (every tree node already passed) and gives the plain MST, which can be slower than
      flat - contradicting the paper's claim.

    Model: designed for eq. (3)-(4) (``postal`` with no overhead or gap).  Under eq. (2)
    hubs pay ``(c - 1)(overhead + gap)``: sending in join order (nearest first, the
    farthest child last) HLOT can be slower than the flat tree; with the default
    longest-first order it was never slower in thousands of random instances (not proven).
    Not optimal even under eq. (4): Prim's order may settle a node through a light link
    before its shortest path is known (``park-fig2``: D joins through F's light link at
    600 while its shortest path, through H, takes 540; HLOT 600, :func:`spt` 580).  O(N^2).

    References
    ----------
    Park, Lee, Lee, Kwon, Park, Park & Kim, "An Efficient Collective Communication Method
    for Grid Scale Networks", ICCSA 2004, LNCS 3036, Sec. 3.2, Fig. 3, eq. (3)-(4).

    Examples
    --------
    Fig. 2 (``park-fig2``, time units of 1 ms): HLOT 600, flat 900.

    >>> from hetcoll import load_platform, plan, simulate
    >>> p = load_platform("park-fig2")
    >>> round(simulate(p, hlot(p, "A")).makespan * 1e3, 6)
    600.0
    >>> round(simulate(p, plan(p, "A", method="flat")).makespan * 1e3, 6)
    900.0
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    return _latency_tree(req, "hlot", hlot_parents, order)


for _f in (mst, spt, hlot):
    _f.__doc__ = _f.__doc__.replace("{order}", _ORDER_DOC)
