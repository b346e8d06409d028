"""Hockney's alpha-beta model on links, one-port."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .base import BoundModel, CostModel

__all__ = ["HockneyModel"]


@dataclass(frozen=True)
class HockneyModel(CostModel):
    """Per-pair latency plus size over bandwidth, one-port (Hockney 1994; Bhat et al. 1999).

    A transfer of ``n`` bytes from ``u`` to ``v`` takes
    ``t_ini[u] + n * t_byte[u] + alpha(u, v) + n / beta(u, v)`` where ``alpha`` is the
    end-to-end latency and ``beta`` the bottleneck bandwidth of the route (or the matrix
    entries).  Sender and receiver are both busy for the whole transfer (one-port); with
    ``ports="unidirectional"`` a node cannot send and receive at the same time, with
    ``"bidirectional"`` (default) it can.  On a link platform every link of the route is
    occupied for the transfer's duration, in each direction separately (link contention).
    """

    name = "hockney"
    summary = "alpha + n/beta per route, one-port sender and receiver, link contention"
    ports: str = "bidirectional"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ports not in ("bidirectional", "unidirectional"):
            raise ModelError(
                f"model 'hockney': ports must be 'bidirectional' or 'unidirectional', "
                f"got {self.ports!r}"
            )

    def bind(self, platform) -> BoundModel:
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
        self._routes = platform.routes
        self._t_ini = platform.t_ini
        self._t_byte = platform.t_byte

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        r = self._routes
        return float(
            self._t_ini[u] + nbytes * self._t_byte[u] + r.latency[u, v] + nbytes / r.bandwidth[u, v]
        )

    delay = send_busy
    recv_busy = send_busy

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return self._routes.path(u, v)

    def send_matrix(self, nbytes: int) -> np.ndarray:
        r = self._routes
        node = self._t_ini + nbytes * self._t_byte
        with np.errstate(divide="ignore"):
            m = node[:, None] + r.latency + nbytes / r.bandwidth
        np.fill_diagonal(m, 0.0)
        return m

    delay_matrix = send_matrix
