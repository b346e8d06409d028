"""Random capacitated link graphs: the bandwidth-only networks of the arborescence-packing
literature (ForestColl, Zhao et al. 2024, Sec. 6: random topologies of links of a few
capacities), on which the per-root packing's optimum is the cut bound
(:mod:`hetcoll.allbounds`).
"""

from __future__ import annotations

import numpy as np

from ..platform import Platform
from ..rng import as_rng

__all__ = ["LINK_SPEEDS", "capacitated_graph_platform"]

#: link bandwidths drawn from (bytes/s): 1, 2.5, 10 and 40 GB/s
LINK_SPEEDS = (1e9, 2.5e9, 1e10, 4e10)


def capacitated_graph_platform(
    n: int, density: float = 0.3, *, seed: int | np.random.Generator | None = None
) -> Platform:
    """A connected random graph of ``n`` nodes under ``multi_port`` with no send costs
    (``send_latency`` 0, ``send_bandwidth`` infinite): a random tree (node ``k`` linked to
    a uniform earlier node), plus each other pair with probability ``density``, every link
    full-duplex at a bandwidth drawn uniformly from :data:`LINK_SPEEDS`.  A pure function of
    its arguments; O(n^2).

    >>> p = capacitated_graph_platform(5, 0.0, seed=1)
    >>> len(p.links), {link.bandwidth for link in p.links} <= set(LINK_SPEEDS)
    (4, True)
    """
    rng = as_rng(seed)
    pairs = {(int(rng.integers(0, k)), k) for k in range(1, n)}
    pairs |= {(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < density}
    links = [
        {"u": str(a), "v": str(b), "bandwidth": float(rng.choice(LINK_SPEEDS)),
         "send_latency": 0, "send_bandwidth": "inf"}
        for a, b in sorted(pairs)
    ]  # fmt: skip
    return Platform.from_dict(
        {"model": "multi_port", "nodes": [{"id": str(i)} for i in range(n)], "links": links}
    )
