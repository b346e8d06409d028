"""Topology-blind trees as MPI libraries build them: flat, chain, binomial."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from ..platform import Platform
from ..schedule import Schedule
from ._common import prepare, relative_order, tree_schedule
from ._registry import register

__all__ = ["flat", "chain", "binomial", "binomial_edges"]

_TREE_OPS = ("bcast", "multicast")


@register(
    "flat",
    collectives=_TREE_OPS,
    paper="Bernaschi & Iannello 1998; Park et al. 2004 eq. (3) (MPICH-G2 WAN level)",
    complexity="O(N)",
    summary="the root sends to every member in rank order",
)
def flat(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Flat tree: the root sends to every other member, in relative-rank order.

    Optimal under the postal model without overhead when every other path is longer
    (Park et al. 2004, eq. 3).  O(N).
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    order = relative_order(req)
    return tree_schedule(req, "flat", ((order[0], c) for c in order[1:]))


@register(
    "chain",
    collectives=_TREE_OPS,
    paper="pipelined chain (Beaumont et al. 2004, Sec. 1)",
    complexity="O(N)",
    summary="each member forwards to the next in relative-rank order",
)
def chain(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Chain: member ``k`` forwards to member ``k + 1`` in relative-rank order.  O(N).

    The best single tree for long pipelined messages on homogeneous one-port platforms.
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    order = relative_order(req)
    return tree_schedule(req, "chain", itertools.pairwise(order))


def binomial_edges(n: int) -> list[tuple[int, int]]:
    """Edges of MPICH's binomial tree on relative ranks ``0..n-1``, in send order.

    Rank ``r`` receives from ``r - lowbit(r)`` and sends to ``r + mask`` for ``mask`` from
    ``lowbit(r) / 2`` (the highest power of two below ``n`` for the root) down to 1: the
    biggest subtree first.  Edges are listed parent by parent, in each parent's send order.
    """
    edges = []
    for r in range(n):
        mask = 1
        while mask < n and not r & mask:
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if r + mask < n:
                edges.append((r, r + mask))
            mask >>= 1
    return edges


@register(
    "binomial",
    collectives=_TREE_OPS,
    paper="MPICH MPI_Bcast; Banikazemi et al. 1998, Fig. 1(a) (MPI-DEF)",
    complexity="O(N)",
    summary="MPICH's binomial tree in rank order, children in decreasing-mask order",
)
def binomial(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """MPICH's binomial tree over the members in rank order, rotated to the root.

    Blind to heterogeneity: the default of MPI libraries, the baseline of every paper
    (Banikazemi et al. 1998, Fig. 1(a): 700 µs on the eight-node example).  O(N).

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> binomial(load_platform("fig1"), "1").tree.children["1"]
    ('5', '3', '2')
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    order = relative_order(req)
    return tree_schedule(
        req, "binomial", ((order[a], order[b]) for a, b in binomial_edges(len(order)))
    )
