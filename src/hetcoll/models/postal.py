"""The postal / LogP latency model of Park et al. (2004), eq. (2)-(4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .base import BoundModel, CostModel, TransferCosts

__all__ = ["PostalModel"]


@dataclass(frozen=True)
class PostalModel(CostModel):
    """Per-pair latency, non-blocking sends, LogP overhead and gap (Park et al., eq. 2).

    A node's ``c``-th send starts ``(c - 1) * (overhead + gap)`` after it holds the message
    (plus ``n * t_byte`` per send: a per-byte gap as in LogGP) and arrives
    ``latency(u, v) + n / bandwidth(u, v) + recv_overhead`` after it starts, so that

        T_i = T_j + (c - 1)(overhead + gap) + L_ji + recv_overhead          (eq. 2)

    With the default parameters (all 0) a node sends to all its children at once and
    ``T_i = T_j + L_ji`` (eq. 3-4).  The sending overhead is paid between successive sends,
    as eq. (2) has it, not before the first.  Latencies come from the platform's matrix, or
    from the lowest-latency routes over its links.  Messages do not contend for links.
    """

    name = "postal"
    summary = "pairwise latency, non-blocking sends, LogP overhead/gap (Park eq. 2)"
    overhead: float = 0.0
    gap: float = 0.0
    recv_overhead: float = 0.0

    def _bind(self, platform) -> BoundModel:
        if not platform.has_network:
            raise ModelError(
                "model 'postal' needs pairwise latencies: give a 'latency' matrix or 'links' "
                "in the platform"
            )
        return _BoundPostal(self, platform)


class _BoundPostal(BoundModel):
    def __init__(self, model: PostalModel, platform) -> None:
        super().__init__(model, platform)
        self._routes = platform.routes
        self._t_byte = platform.t_byte
        self._busy = model.overhead + model.gap
        self._recv = model.recv_overhead

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        return float(self._busy + nbytes * self._t_byte[u])

    def delay(self, u: int, v: int, nbytes: int) -> float:
        lat, bw = self._routes.pair(u, v)
        return float(lat + nbytes / bw + self._recv)

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        lat, bw, _, _ = self._routes.pairs(u, v)
        n = np.asarray(nbytes)
        empty = np.empty(0, dtype=np.int64)
        return TransferCosts(
            self._busy + n * self._t_byte[u],
            lat + n / bw + self._recv,
            np.zeros(len(n)),
            empty,
            np.zeros(len(n) + 1, dtype=np.int64),
        )

    def send_matrix(self, nbytes: int) -> np.ndarray:
        row = self._busy + nbytes * self._t_byte
        return np.broadcast_to(row[:, None], (self.n, self.n))

    def delay_matrix(self, nbytes: int) -> np.ndarray:
        r = self._routes
        m = r.latency + nbytes / r.bandwidth if nbytes else r.latency + 0.0
        m += self._recv
        np.fill_diagonal(m, 0.0)
        return m

    def node_cost(self, nbytes: int) -> np.ndarray:
        # For a "speed" ranking under a latency model, the mean latency to the others is what
        # distinguishes nodes; the send busy time is the same for everyone.
        d = np.array(self.delay_matrix(nbytes))
        if self.n == 1:
            return np.zeros(1)
        return d.sum(axis=1) / (self.n - 1)
