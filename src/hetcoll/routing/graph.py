"""The link graph: a platform's undirected links as directed edges (resources).

Resource ``2k`` is link ``k`` from its ``u`` to its ``v``, ``2k + 1`` the other direction;
the two directions never contend.  Everything else in the package reads these arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .tuning import DEFAULT, Tuning, Work


class LinkGraph:
    """The directed edges of an undirected link list: per resource its ``tail``,
    ``head``, latency ``weight`` and bandwidth ``resource_bw``; ``link_bandwidth`` per
    link.  Also carries the search's :class:`~.tuning.Tuning` and its
    :class:`~.tuning.Work` counters, which every part of the search reads.  O(E)."""

    def __init__(
        self,
        n: int,
        u: Sequence[int],
        v: Sequence[int],
        latency: Sequence[float],
        bandwidth: Sequence[float],
        tuning: Tuning = DEFAULT,
    ) -> None:
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        lat = np.asarray(latency, dtype=float)
        self.n = n
        self.tuning = tuning
        self.work = Work()
        self.link_bandwidth = np.asarray(bandwidth, dtype=float)
        m = len(u)
        # directed edge 2k: u[k] -> v[k]; 2k + 1: v[k] -> u[k]
        self.tail = np.empty(2 * m, dtype=np.int64)
        self.head = np.empty(2 * m, dtype=np.int64)
        self.tail[0::2], self.tail[1::2] = u, v
        self.head[0::2], self.head[1::2] = v, u
        self.weight = np.repeat(lat, 2)
        self.resource_bw = np.repeat(self.link_bandwidth, 2)
