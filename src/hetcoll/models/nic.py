"""A star of full-duplex NICs into one non-blocking switch (model ``nic``).

Each node ``u`` has a NIC of rate ``b_u`` (bytes/s) in each direction and a latency
``l_u``; the switch itself never limits (non-blocking).  A transfer of ``n`` bytes from
``u`` to ``v`` pays ``t_ini[u] + n t_byte[u] + l_u + l_v`` once (node costs and latency
occupy no NIC), then its bytes flow at the max-min fair share of ``u``'s sending NIC and
``v``'s receiving NIC among the flows crossing them at that moment (recomputed whenever a
flow starts or ends).  Alone it takes ``t_ini[u] + n t_byte[u] + l_u + l_v + n / min(b_u,
b_v)``.  The simulator's shared-contention mode does the sharing
(:func:`hetcoll.simulator.fairshare.max_min_rates` over two resources per node: its
sending NIC ``u`` and its receiving NIC ``N + u``).

A sender issues its sends one at a time, each holding its send port until its bytes are in
(the simulator's rule for shared contention), while a receiver takes any number of flows at
once: its receiving NIC is what they share (``k`` senders into one node each get ``b_v /
k`` when their own NICs are faster).  This is the single-switch model with per-node NIC
rates under which the cut bound of an allgather is ``(M/N) max_S |S| / B+(S)`` (Zhao &
Krishnamurthy 2023, ForestColl) and an allreduce needs ``max(M / b_min, 2 (N-1) M /
sum_i b_i)``.

Platform file::

    {"model": "nic",
     "nodes": [{"id": "a", "bandwidth": "25Gbps", "latency": "5us"}, ...]}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .base import BoundModel, CostModel, TransferCosts

__all__ = ["NicModel"]

#: the switch's name in a blocked-link report
SWITCH = "switch"


@dataclass(frozen=True)
class NicModel(CostModel):
    """Per-node full-duplex NICs into one non-blocking switch, max-min fair sharing.

    Needs a star platform (every node with a NIC ``bandwidth``; :mod:`hetcoll.platform`).
    Costs of a transfer of ``n`` bytes ``u -> v``: a lead of ``t_ini[u] + n t_byte[u] +
    latency[u] + latency[v]``, then the bytes at the max-min fair rate of ``u``'s sending
    and ``v``'s receiving NIC.  O(1) per transfer; the simulator's sharing costs
    O(flows x NICs) per flow start or end.
    """

    name = "nic"
    summary = "star of full-duplex NICs, one non-blocking switch, max-min fair sharing"

    def _bind(self, platform) -> BoundModel:
        if not platform.is_star:
            raise ModelError(
                "model 'nic' needs a star: give every node its NIC 'bandwidth' (and "
                "'latency') in the platform"
            )
        return _BoundNic(self, platform)


class _BoundNic(BoundModel):
    contention = "shared"

    def __init__(self, model: NicModel, platform) -> None:
        super().__init__(model, platform)
        self._routes = platform.routes  # the star's pairwise matrices
        self._t_ini = platform.t_ini
        self._t_byte = platform.t_byte
        bw = np.array([node.bandwidth for node in platform.nodes], dtype=float)
        self._capacity = np.concatenate([bw, bw])
        self._capacity.setflags(write=False)
        self._matrix: tuple[int, np.ndarray] | None = None

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        lat, bw = self._routes.pair(u, v)
        return float(self._t_ini[u] + nbytes * self._t_byte[u] + lat + nbytes / bw)

    delay = send_busy

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return (u, self.n + v)

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        lat, bw, _, _ = self._routes.pairs(u, v)
        n = np.asarray(nbytes)
        lead = self._t_ini[u] + n * self._t_byte[u] + lat  # same order as send_busy
        total = lead + n / bw
        resources = np.empty(2 * len(u), dtype=np.int64)
        resources[0::2] = u
        resources[1::2] = self.n + v
        offsets = np.arange(0, 2 * len(u) + 1, 2, dtype=np.int64)
        return TransferCosts(
            total,
            total,
            np.zeros(len(u)),
            resources,
            offsets,
            lead,
            np.full(len(u), np.inf),
        )

    def capacity(self) -> np.ndarray:
        return self._capacity

    def nic_rate(self, u: int) -> float | None:
        return float(self._capacity[u])

    def resource_name(self, resource: int) -> tuple[str, str]:
        ids = self.platform.ids
        if resource < self.n:
            return ids[resource], SWITCH
        return SWITCH, ids[resource - self.n]

    def send_matrix(self, nbytes: int) -> np.ndarray:
        """The alone time ``t_ini[u] + n t_byte[u] + l_u + l_v + n / min(b_u, b_v)`` of every
        pair (read-only, kept for the last size asked: delay and send matrices are equal)."""
        if self._matrix is not None and self._matrix[0] == nbytes:
            return self._matrix[1]
        m = self._routes.cost_matrix(self._t_ini + nbytes * self._t_byte, nbytes)
        m.setflags(write=False)
        self._matrix = (nbytes, m)
        return m

    delay_matrix = send_matrix

    def node_cost(self, nbytes: int) -> np.ndarray:
        s = self.send_matrix(nbytes)
        if self.n == 1:
            return np.zeros(1)
        return s.sum(axis=1) / (self.n - 1)
