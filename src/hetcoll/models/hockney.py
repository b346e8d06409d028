"""Hockney's alpha-beta model on links, one-port, with exclusive or shared link contention."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .base import BoundModel, CostModel, TransferCosts

__all__ = ["HockneyModel"]


@dataclass(frozen=True)
class HockneyModel(CostModel):
    """Per-pair latency plus size over bandwidth, one-port (Hockney 1994; Bhat et al. 1999).

    A transfer of ``n`` bytes from ``u`` to ``v`` takes
    ``t_ini[u] + n * t_byte[u] + alpha(u, v) + n / beta(u, v)`` where ``alpha`` is the
    end-to-end latency and ``beta`` the bottleneck bandwidth of the route (or the matrix
    entries).  Sender and receiver are both busy for the whole transfer (one-port); with
    ``ports="unidirectional"`` a node cannot send and receive at the same time, with
    ``"bidirectional"`` (default) it can.

    On a link platform, transfers that cross the same directed link contend for it, as
    ``contention`` says:

    - ``"exclusive"`` (default): a transfer holds every directed link of its route from its
      start to its arrival, latency included; a transfer that needs a held link waits
      (circuit or wormhole switching: what switch networks do);
    - ``"shared"``: flow level, as SimGrid's CM02 model: node costs and latency occupy no
      link, then the ``n`` bytes flow at a rate given by max-min fair sharing of every
      directed link's bandwidth among the flows crossing it at that moment (recomputed
      whenever a flow starts or ends); sender and receiver stay busy until the arrival.

    Alone on its route a transfer takes the same time under both.  The two directions of a
    link never contend.
    """

    name = "hockney"
    summary = "alpha + n/beta per route, one-port sender and receiver, link contention"
    ports: str = "bidirectional"
    contention: str = "exclusive"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ports not in ("bidirectional", "unidirectional"):
            raise ModelError(
                f"model 'hockney': ports must be 'bidirectional' or 'unidirectional', "
                f"got {self.ports!r}"
            )
        if self.contention not in ("exclusive", "shared"):
            raise ModelError(
                f"model 'hockney': contention must be 'exclusive' or 'shared', "
                f"got {self.contention!r}"
            )

    def _bind(self, platform) -> BoundModel:
        if not platform.has_network:
            raise ModelError(
                "model 'hockney' needs latencies and bandwidths: give 'links' or a 'latency' "
                "matrix in the platform"
            )
        return _BoundHockney(self, platform)


class _BoundHockney(BoundModel):
    def __init__(self, model: HockneyModel, platform) -> None:
        super().__init__(model, platform)
        self.unidirectional = model.ports == "unidirectional"
        self.contention = model.contention
        self._routes = platform.routes
        self._t_ini = platform.t_ini
        self._t_byte = platform.t_byte
        self._matrix: tuple[int, np.ndarray] | None = None

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        lat, bw = self._routes.pair(u, v)
        return float(self._t_ini[u] + nbytes * self._t_byte[u] + lat + nbytes / bw)

    delay = send_busy
    recv_busy = send_busy

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return self._routes.path(u, v)

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        lat, bw, resources, offsets = self._routes.pairs(u, v)
        n = np.asarray(nbytes)
        lead = self._t_ini[u] + n * self._t_byte[u] + lat  # same order as send_busy
        total = lead + n / bw
        shared = self.contention == "shared"
        cap = None
        if shared:
            cap = np.full(len(n), np.inf) if self._routes.has_links else bw
        return TransferCosts(total, total, total, resources, offsets, lead if shared else None, cap)

    def capacity(self) -> np.ndarray:
        return self._routes.resource_bandwidth

    def send_matrix(self, nbytes: int) -> np.ndarray:
        """``t_ini[u] + n t_byte[u] + alpha + n / beta`` for every pair (read-only, kept for
        the last size asked: delay and send matrices are the same)."""
        if self._matrix is not None and self._matrix[0] == nbytes:
            return self._matrix[1]
        m = self._routes.cost_matrix(self._t_ini + nbytes * self._t_byte, nbytes)
        m.setflags(write=False)
        self._matrix = (nbytes, m)
        return m

    delay_matrix = send_matrix

    def node_cost(self, nbytes: int) -> np.ndarray:
        s = self.send_matrix(nbytes)  # zero diagonal already
        if self.n == 1:
            return np.zeros(1)
        return s.sum(axis=1) / (self.n - 1)
