"""The cost-model interface every model implements.

A *model* is plain data (its parameters); :meth:`CostModel.bind` attaches it to a platform and
returns a :class:`BoundModel` that answers, for one point-to-point transfer of ``nbytes`` from
node ``u`` to node ``v`` (node indices) that starts at time ``s``:

- ``send_busy(u, v, nbytes)``: how long ``u``'s send port is occupied from ``s``;
- ``delay(u, v, nbytes)``: when, after ``s``, ``v`` holds the data and may forward it;
- ``recv_busy(u, v, nbytes)``: how long ``v``'s receive port is occupied, ending at the
  arrival (0 when the model has no receive port);
- ``path(u, v)``: the link resources the transfer occupies from ``s`` to its arrival.

The simulator (:mod:`hetcoll.simulate`) is the only consumer of these answers that produces
times a user sees; planners may call the cheap vectorised estimates ``node_cost`` and
``delay_matrix`` to make decisions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import ModelError
from ..units import check_quantity

if TYPE_CHECKING:
    from ..platform import Platform

__all__ = ["CostModel", "BoundModel"]


@dataclass(frozen=True)
class CostModel(ABC):
    """Base class: a named cost model with float parameters (seconds), all >= 0."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def __post_init__(self) -> None:
        # every float parameter is a time: numbers and strings ("20us") alike go through the
        # one validator, which also refuses NaN, infinities, negatives and huge values
        for f in fields(self):
            if f.type in ("float", float):
                where = f"model {self.name!r}: {f.name}"
                value = check_quantity(getattr(self, f.name), "time", where, error=ModelError)
                object.__setattr__(self, f.name, value)

    def to_spec(self) -> str | dict[str, Any]:
        """``"name"`` when every parameter has its default, else ``{"name": ..., params}``."""
        params = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != f.default
        }
        return {"name": self.name, **params} if params else self.name

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> CostModel:
        known = {f.name for f in fields(cls)}
        extra = sorted(set(params) - known)
        if extra:
            expected = ", ".join(sorted(known)) or "no parameters"
            raise ModelError(f"model {cls.name!r}: unknown parameter {extra[0]!r} ({expected})")
        return cls(**params)

    @abstractmethod
    def bind(self, platform: Platform) -> BoundModel:
        """Attach to ``platform``; :class:`ModelError` if the platform lacks what it needs."""


class BoundModel:
    """A cost model attached to a platform (see the module docstring for the contract)."""

    #: one port for sending *and* receiving (unidirectional one-port), else separate ports
    unidirectional: bool = False
    #: costs depend on the sender only (``send_busy == delay == f(u, nbytes)``): planners may
    #: then use O(N log N) shortcuts
    sender_only: bool = False

    def __init__(self, model: CostModel, platform: Platform) -> None:
        self.model = model
        self.platform = platform
        self.n = len(platform)

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        raise NotImplementedError

    def delay(self, u: int, v: int, nbytes: int) -> float:
        raise NotImplementedError

    def recv_busy(self, u: int, v: int, nbytes: int) -> float:
        return 0.0

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return ()

    def relay_path(self, u: int, v: int, nbytes: int) -> tuple[int, ...] | None:
        """None when ``u`` may send to ``v`` directly; else the nodes ``u, ..., v`` that relay
        it, store and forward (models where only adjacent nodes talk: ``one_port``, ...)."""
        return None

    # -- vectorised estimates for planners --------------------------------------------------

    def delay_matrix(self, nbytes: int) -> np.ndarray:
        """``D[u, v]``: transfer delay from ``u`` to ``v`` (N x N; may be a read-only view)."""
        raise NotImplementedError

    def send_matrix(self, nbytes: int) -> np.ndarray:
        """``S[u, v]``: how long ``u`` is busy sending to ``v`` (N x N)."""
        raise NotImplementedError

    def node_cost(self, nbytes: int) -> np.ndarray:
        """A per-node sending cost used by node-speed planners (SPOC, FNF): the mean busy time
        of a send to the other nodes.  Exact for models whose costs depend on the sender only."""
        s = np.array(self.send_matrix(nbytes), dtype=float)
        if self.n == 1:
            return np.diag(s).copy()
        np.fill_diagonal(s, 0.0)
        return s.sum(axis=1) / (self.n - 1)
