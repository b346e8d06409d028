"""Banikazemi et al. (1998): every node has its own message initiation cost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import BoundModel, CostModel, TransferCosts

__all__ = ["TiniModel"]


@dataclass(frozen=True)
class TiniModel(CostModel):
    """Sender-only costs (Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 3 and 5).

    A send of ``n`` bytes keeps its sender busy ``t_ini + n * t_byte`` (the sender's own
    costs); sends are sequential; the receiver holds the message when that send ends and may
    forward it at once.  The network itself costs nothing beyond what the node costs absorb,
    so links are ignored.
    """

    name = "tini"
    summary = "sender busy t_ini + n*t_byte per send; receiver may forward at once"

    def _bind(self, platform) -> BoundModel:
        return _BoundTini(self, platform)


class _BoundTini(BoundModel):
    sender_only = True

    def __init__(self, model, platform) -> None:
        super().__init__(model, platform)
        self._t_ini = platform.t_ini
        self._t_byte = platform.t_byte

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        return float(self._t_ini[u] + nbytes * self._t_byte[u])

    delay = send_busy

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        busy = self._t_ini[u] + np.asarray(nbytes) * self._t_byte[u]
        return TransferCosts(
            busy,
            busy,
            np.zeros(len(busy)),
            np.empty(0, dtype=np.int64),
            np.zeros(len(busy) + 1, dtype=np.int64),
        )

    def node_cost(self, nbytes: int) -> np.ndarray:
        return self._t_ini + nbytes * self._t_byte

    def send_matrix(self, nbytes: int) -> np.ndarray:
        return np.broadcast_to(self.node_cost(nbytes)[:, None], (self.n, self.n))

    delay_matrix = send_matrix
