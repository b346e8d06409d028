"""A star of full-duplex NICs into one non-blocking switch (model ``nic``).

Each node ``u`` has a NIC of rate ``b_u`` (bytes/s) in each direction and a latency
``l_u``; the switch itself never limits (non-blocking).  A transfer of ``n`` bytes from
``u`` to ``v`` that starts at ``s``:

- keeps ``u``'s send port busy ``t_ini[u] + n t_byte[u]`` from ``s`` (the node's own work
  per message: its sends start one at a time, ``send_busy``), then frees it;
- pays a lead of ``t_ini[u] + n t_byte[u] + l_u + l_v`` once (node costs and latency
  occupy no NIC): its bytes start to flow at ``s + lead``;
- then its bytes flow at the max-min fair share of ``u``'s sending NIC and ``v``'s
  receiving NIC among all the flows crossing them at that moment (recomputed whenever a
  flow starts or ends), and it arrives (and the send completes) when they are all in.

So a node's concurrent sends share its sending NIC as a node's concurrent receptions share
its receiving NIC: ``u`` sending ``n`` bytes to two receivers at once, each NIC faster than
its own, runs each flow at ``b_u / 2`` and both end at ``lead + 2 n / b_u``; ``k``
senders into one node each get ``b_v / k`` when their own NICs are faster.  Alone a
transfer takes ``t_ini[u] + n t_byte[u] + l_u + l_v + n / min(b_u, b_v)`` (``delay``).
The simulator's shared-contention mode does the sharing
(:func:`hetcoll.simulator.fairshare.max_min_rates` over two resources per node: its
sending NIC ``u`` and its receiving NIC ``N + u``; ``concurrent_sends`` frees the send port
after ``send_busy``).  This is the single-switch model with per-node NIC rates under which
the cut bound of an allgather is ``(M/N) max_S |S| / B+(S)`` (Zhao & Krishnamurthy 2023,
ForestColl) and an allreduce needs ``max(M / b_min, 2 (N-1) M / sum_i b_i)``.

The planners' estimates (:meth:`~hetcoll.models.base.BoundModel.send_matrix`,
``delay_matrix``, ``node_cost``) price a send at its time alone: the NIC time a tree
planner's child costs its parent (``k`` sends at once through one NIC end together at the
time the last of them ends when sent one after the other).

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
    Costs of a transfer of ``n`` bytes ``u -> v``: the send port busy ``t_ini[u] + n
    t_byte[u]``, a lead of ``t_ini[u] + n t_byte[u] + latency[u] + latency[v]``, then the
    bytes at the max-min fair rate of ``u``'s sending and ``v``'s receiving NIC, which a
    node's concurrent sends share as its concurrent receptions do.  O(1) per transfer; the
    simulator's sharing costs O(flows x NICs) per flow start or end.
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
    concurrent_sends = True

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
        return float(self._t_ini[u] + nbytes * self._t_byte[u])

    def delay(self, u: int, v: int, nbytes: int) -> float:
        lat, bw = self._routes.pair(u, v)
        return float(self._t_ini[u] + nbytes * self._t_byte[u] + lat + nbytes / bw)

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return (u, self.n + v)

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        lat, bw, _, _ = self._routes.pairs(u, v)
        n = np.asarray(nbytes)
        busy = self._t_ini[u] + n * self._t_byte[u]
        lead = busy + lat  # same order as delay
        total = lead + n / bw
        resources = np.empty(2 * len(u), dtype=np.int64)
        resources[0::2] = u
        resources[1::2] = self.n + v
        offsets = np.arange(0, 2 * len(u) + 1, 2, dtype=np.int64)
        return TransferCosts(
            np.asarray(busy, dtype=float),
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
        pair: the planners' estimate of what a send costs its sender (see the module
        docstring; read-only, kept for the last size asked: delay and send matrices are
        equal)."""
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
