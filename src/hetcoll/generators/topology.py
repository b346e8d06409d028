"""Random pairwise-cost topologies (Figueira & Reddi, Sec. 5).

The paper's emulator "generates the topologies by generating the communication cost between
every pair of nodes", a cost in number of (Fast Ethernet) links, at most 5 ("nodes close") or
20 ("nodes not close"); the latency enforced is that number times a *base latency*.  We draw
each unordered pair's cost independently and uniformly from ``{1, ..., max_links}``: the
matrix is symmetric with a zero diagonal and need not satisfy the triangle inequality (the
paper does not ask for it, and its costs are generated per pair, not from a graph).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from ..platform import Node, Platform
from ..rng import as_rng
from ..units import check_quantity

__all__ = ["BASE_LATENCY", "random_link_costs", "figueira_platform"]

#: Latency of one Fast Ethernet hop, seconds.  The paper writes "~35ms"; 35 µs is a realistic
#: Fast Ethernet latency and keeps emulated runs short.  Gains are ratios: they do not depend
#: on it.
BASE_LATENCY = 35e-6


def random_link_costs(
    n: int, max_links: int = 5, *, seed: int | np.random.Generator | None = None
) -> np.ndarray:
    """An ``n x n`` symmetric matrix of link counts, uniform in ``{1, ..., max_links}``.

    Zero diagonal, dtype ``int64``.  A pure function of ``(n, max_links, seed)``.

    >>> m = random_link_costs(4, 5, seed=1)
    >>> bool((m == m.T).all()), int(m.diagonal().max()), int(m.max()) <= 5
    (True, 0, True)
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ArgumentError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(max_links, bool) or not isinstance(max_links, int | np.integer) or max_links < 1:
        raise ArgumentError(f"max_links must be an integer >= 1, got {max_links!r}")
    rng = as_rng(seed)
    iu = np.triu_indices(n, 1)
    m = np.zeros((n, n), dtype=np.int64)
    m[iu] = rng.integers(1, max_links + 1, size=len(iu[0]))
    return m + m.T


def figueira_platform(
    n: int,
    max_links: int = 5,
    *,
    base_latency: float = BASE_LATENCY,
    seed: int | np.random.Generator | None = None,
) -> Platform:
    """A ``postal`` platform of ``n`` nodes ``"0".."n-1"`` whose latency is
    ``random_link_costs(n, max_links) * base_latency`` (Figueira & Reddi, Sec. 5.1-5.2)."""
    costs = random_link_costs(n, max_links, seed=seed)
    nodes = tuple(Node(str(i)) for i in range(n))
    return Platform(
        nodes,
        latency=costs * check_quantity(base_latency, "time", "base_latency"),
        model="postal",
        name=f"figueira n={n} max_links={max_links}",
    )
