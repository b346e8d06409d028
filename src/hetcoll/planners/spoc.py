"""Speed-Partitioned Ordered Chain (Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 4, Fig. 2)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..platform import Platform
from ..schedule import Schedule
from ._common import prepare, tree_schedule
from ._registry import register
from .classic import binomial_edges

__all__ = ["spoc", "spoc_bound"]


@register(
    "spoc",
    collectives=("bcast", "multicast"),
    paper="Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 4, Fig. 2",
    complexity="O(N log N)",
    summary="binomial tree with the fastest nodes where the most descendants are",
    models=("tini",),
)
def spoc(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """SPOC: MPICH's binomial tree shape, fastest members on the positions with most descendants.

    Builds the binomial tree on N positions, sorts positions by number of descendants
    (descending, ties by position) and the non-root members by sending cost (ascending, ties
    by rank), and pairs the two lists; the root keeps position 0 (Fig. 2).  The sending cost
    is ``t_ini + n t_byte`` under the ``tini`` model, the model's mean send time otherwise.
    Its time is at most :func:`spoc_bound` (eq. 1).  O(N log N).

    Examples
    --------
    Fig. 1(b): nodes 1 and 6 fast (100 µs), the rest 300 µs: 500 µs instead of 700 µs.

    >>> from hetcoll import load_platform, simulate
    >>> p = load_platform("fig1")
    >>> round(simulate(p, spoc(p, "1")).makespan * 1e6, 6)
    500.0
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    n = len(req.members)
    edges = binomial_edges(n)
    descendants = [0] * n
    for parent, child in reversed(edges):  # children are listed after their parents
        descendants[parent] += descendants[child] + 1
    positions = sorted(range(n), key=lambda p: (-descendants[p], p))
    cost = req.node_cost()
    others = sorted(req.others(), key=lambda m: (cost[m], m))
    node_at = {0: req.root}
    node_at.update(zip(positions[1:], others, strict=True))
    return tree_schedule(req, "spoc", ((node_at[a], node_at[b]) for a, b in edges))


def spoc_bound(root_cost: float, other_costs: Sequence[float]) -> float:
    """Banikazemi et al. eq. (1): ``sum_{i=0}^{ceil(log2 N)-1} max(t_0, t_{2^i - 1})``.

    ``t_0`` is the root's cost, ``t_1 <= ... <= t_{N-1}`` the others' sorted costs (the
    index ``2^i - 1 = 0`` is the root itself).  The paper presents it as SPOC's completion
    time; it is exact on Fig. 1 but only an upper bound in general (a fast node placed
    deeper can finish its subtree early).

    >>> spoc_bound(100e-6, [100e-6] + [300e-6] * 6) * 1e6
    500.0
    """
    costs = [root_cost, *sorted(other_costs)]
    n = len(costs)
    rounds = math.ceil(math.log2(n)) if n > 1 else 0
    return float(sum(max(costs[0], costs[2**i - 1]) for i in range(rounds)))
