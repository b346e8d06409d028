"""The per-root packing among some of a platform's nodes only, the others routing: a
multi-site platform's hosts (:func:`hetcoll.generators.multisite_platform`), its switches
carrying the hosts' messages but holding no block and receiving none.

Under a model whose transfers are routed host to host (``hockney``, ``postal``: an edge per
ordered pair of nodes, each keeping its sender's send port, its receiver's receive port and
every link of its route busy), the packing of :func:`hetcoll.planners.forest.pack_forest`
spans every node, switches included: the trees must reach the switches as if they were
ranks.  :func:`restrict` keeps the members' edges, ports and every link, so that the
arborescences span the members alone and every message between two of them still loads the
links of its route: the optimal steady state of an allgather or reduce-scatter among the
members (the same LP, the same certificate).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from .steady import SteadyProblem

__all__ = ["restrict", "restrict_members"]


def restrict_members(platform: Platform, p: SteadyProblem, members: Sequence[str]) -> SteadyProblem:
    """:func:`restrict` to the nodes ``members`` (ids) of ``platform``.  Raises
    :class:`~hetcoll.errors.UnknownNodeError` for an unknown member,
    :class:`PlannerError` for a repeated one or for a model whose transfers
    go link by link (a graph model: the other nodes would relay, holding what they pass
    on, so they belong to the trees)."""
    keep = platform.indices(list(members))
    if p.m != p.n * (p.n - 1) and len(keep) < p.n:
        raise PlannerError(
            "members: the model's transfers go link by link (a graph model): the packing "
            "spans every node"
        )
    return restrict(p, keep)


def restrict(p: SteadyProblem, keep: Sequence[int]) -> SteadyProblem:
    """``p`` (rows: ``n`` send ports, ``n`` receive ports, then the links, as
    :func:`hetcoll.planners.steady.model_problem` builds them) among the nodes ``keep``
    (indices, in that order) only: their edges, their ports, every link.  Raises
    :class:`PlannerError` for a repeated or unknown node or fewer than one."""
    keep = [int(k) for k in keep]
    n = p.n
    if not keep or len(set(keep)) != len(keep) or not all(0 <= k < n for k in keep):
        raise PlannerError("members: each a node of the platform, each once")
    k = len(keep)
    new = np.full(n, -1, dtype=np.int64)
    new[keep] = np.arange(k)
    edges = np.flatnonzero((new[p.src] >= 0) & (new[p.dst] >= 0))
    usage = p.usage.tocsc()[:, edges].tocoo()
    rows = np.asarray(usage.row, dtype=np.int64)
    ports = rows < 2 * n
    node = np.where(ports, new[rows % n], 0)
    if np.any(ports & (node < 0)):  # pragma: no cover - a member edge loads its own ports
        raise PlannerError("members: an edge between members keeps another node's port busy")
    rows = np.where(ports, node + (rows >= n) * k, rows - 2 * n + 2 * k)
    from scipy.sparse import csc_matrix

    shape = (2 * k + usage.shape[0] - 2 * n, len(edges))
    restricted = csc_matrix((usage.data, (rows, usage.col)), shape=shape)
    root = int(new[p.root]) if new[p.root] >= 0 else 0
    ids = tuple(p.ids[i] for i in keep) if p.ids else ()
    src, dst = new[p.src[edges]], new[p.dst[edges]]
    return SteadyProblem(k, root, src, dst, p.T[edges], p.nbytes, p.ports, ids, restricted)
