"""The cost-model interface every model implements.

A *model* is plain data (its parameters); :meth:`CostModel.bind` attaches it to a platform and
returns a :class:`BoundModel` that answers, for one point-to-point transfer of ``nbytes`` from
node ``u`` to node ``v`` (node indices) that starts at time ``s``:

- ``send_busy(u, v, nbytes)``: how long ``u``'s send port is occupied from ``s``;
- ``delay(u, v, nbytes)``: when, after ``s``, ``v`` holds the data and may forward it;
- ``recv_busy(u, v, nbytes)``: how long ``v``'s receive port is occupied, ending at the
  arrival (0 when the model has no receive port);
- ``path(u, v)``: the link resources the transfer occupies;
- ``link_window(u, v, nbytes)``: when it occupies them, ``(offset, length)`` from ``s``;
  None (the default) for the whole transfer, from ``s`` to its arrival;
- ``combine(u, nbytes)``: how long ``u`` takes to reduce a received partial result into
  its own (the node's ``gamma`` per byte, the same under every model).

:meth:`BoundModel.costs` answers the same for many transfers at once (numpy arrays, a
:class:`TransferCosts`); the simulator asks it once per program.  ``contention`` says how
transfers share links: ``"exclusive"`` (a transfer holds every directed link of its route
during its link window, by default from its start to its arrival) or ``"shared"`` (flow
level: see :mod:`hetcoll.simulator`).

The simulator (:mod:`hetcoll.simulator`) is the only consumer of these answers that produces
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
    from ..sizecurve import SizeCurve

__all__ = ["CostModel", "BoundModel", "CurvedBound", "TransferCosts"]


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

    def bind(self, platform: Platform) -> BoundModel:
        """Attach to ``platform``; :class:`ModelError` if the platform lacks what it needs.

        A platform's ``size_curve`` (:mod:`hetcoll.sizecurve`) applies to every model: its
        per-byte terms see the curve's effective size (:class:`CurvedBound`)."""
        bound = self._bind(platform)
        curve = getattr(platform, "size_curve", None)
        if curve is None or curve.is_identity():
            return bound
        return CurvedBound(bound, curve)

    @abstractmethod
    def _bind(self, platform: Platform) -> BoundModel:
        """The model's own costs on ``platform`` (per-byte terms affine in the size)."""


@dataclass(frozen=True)
class TransferCosts:
    """The costs of transfers ``i = 0 .. M-1`` (arrays of length M), from :meth:`BoundModel.costs`.

    ``send_busy``, ``delay`` and ``recv_busy`` are what the scalar methods answer; the route
    of transfer ``i`` is ``resources[offsets[i]:offsets[i + 1]]`` (directed-link resources).
    Under ``"exclusive"`` contention transfer ``i`` holds its route during ``[start +
    hold_offset[i], start + hold_offset[i] + hold[i])`` (:meth:`BoundModel.link_window`);
    None for both means ``[start, start + delay)``, the whole transfer.
    For ``"shared"`` contention, ``lead`` is the part of ``delay`` that occupies no link
    (node costs and latency: the bytes start to flow ``lead`` after the start) and ``cap``
    a transfer's own rate limit in bytes/s besides its links (a matrix platform's pairwise
    bandwidth; ``inf`` when the links decide), so that alone it takes
    ``lead + nbytes / min(cap, its links' bandwidths)``.
    """

    send_busy: np.ndarray
    delay: np.ndarray
    recv_busy: np.ndarray
    resources: np.ndarray
    offsets: np.ndarray
    lead: np.ndarray | None = None
    cap: np.ndarray | None = None
    hold_offset: np.ndarray | None = None
    hold: np.ndarray | None = None

    def window(self) -> tuple[np.ndarray, np.ndarray]:
        """``(hold_offset, hold)`` of every transfer, ``(0, delay)`` where none is given."""
        if self.hold is None:
            return np.zeros(len(self.delay)), np.asarray(self.delay, dtype=float)
        return np.asarray(self.hold_offset, dtype=float), np.asarray(self.hold, dtype=float)


class BoundModel:
    """A cost model attached to a platform (see the module docstring for the contract)."""

    #: one port for sending *and* receiving (unidirectional one-port), else separate ports
    unidirectional: bool = False
    #: costs depend on the sender only (``send_busy == delay == f(u, nbytes)``): planners may
    #: then use O(N log N) shortcuts
    sender_only: bool = False
    #: how transfers share a link: "exclusive" (held during the link window, by default from
    #: the start to the arrival) or "shared" (max-min)
    contention: str = "exclusive"
    #: "shared" contention only: the send port is busy ``send_busy`` from the start and then
    #: free for the next send while the flow goes on (a node's flows share its links, ``nic``),
    #: instead of held until the flow's bytes are in
    concurrent_sends: bool = False

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

    def link_window(self, u: int, v: int, nbytes: int) -> tuple[float, float] | None:
        """``(offset, length)``: an exclusive transfer that starts at ``s`` holds its route
        during ``[s + offset, s + offset + length)``; None: from ``s`` to its arrival."""
        return None

    def combine(self, u: int, nbytes: int) -> float:
        """How long node ``u`` takes to reduce a received partial result of ``nbytes`` into
        its own: ``nbytes * gamma(u)`` under every model (the platform's ``nodes[].gamma``;
        docs/simulator.md, Combining)."""
        return float(nbytes * self.platform.gamma[u])

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        """The costs of transfers ``(u[i], v[i], nbytes[i])`` as arrays.

        This default asks the scalar methods one transfer at a time; models override it
        with vectorised arithmetic that gives the same floating-point values.
        """
        items = list(
            zip(
                np.asarray(u).tolist(),
                np.asarray(v).tolist(),
                np.asarray(nbytes).tolist(),
                strict=True,
            )
        )
        paths = [self.path(a, b) for a, b, _ in items]
        offsets = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in paths], out=offsets[1:])
        delay = np.array([self.delay(a, b, n) for a, b, n in items], dtype=float)
        windows = [self.link_window(a, b, n) for a, b, n in items]
        hold_offset = hold = None
        if any(w is not None for w in windows):
            pairs = [
                (0.0, d) if w is None else w for w, d in zip(windows, delay.tolist(), strict=True)
            ]
            hold_offset = np.array([w[0] for w in pairs], dtype=float)
            hold = np.array([w[1] for w in pairs], dtype=float)
        return TransferCosts(
            np.array([self.send_busy(a, b, n) for a, b, n in items], dtype=float),
            delay,
            np.array([self.recv_busy(a, b, n) for a, b, n in items], dtype=float),
            np.array([r for p in paths for r in p], dtype=np.int64),
            offsets,
            hold_offset=hold_offset,
            hold=hold,
        )

    def resource_name(self, resource: int) -> tuple[str, str]:
        """The ``(from, to)`` ends of a directed-link resource, as :class:`Transfer`'s
        ``blocked_link`` names them: node ids on a link platform (a switch model names its
        switches)."""
        a, b = self.platform.routes.resource_ends(resource)
        return self.platform.ids[a], self.platform.ids[b]

    def capacity(self) -> np.ndarray:
        """Bandwidth (bytes/s) of each directed-link resource, for ``"shared"`` contention."""
        return np.empty(0)

    def nic_rate(self, u: int) -> float | None:
        """Node ``u``'s NIC rate (bytes/s) in each direction when the model shares one among
        the node's flows (``nic``), else None: what the runtime's emulation paces a rank's
        receptions through (:mod:`hetcoll.runtime.emulation`)."""
        return None

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


class CurvedBound(BoundModel):
    """Any model on a platform with a measured size curve (:mod:`hetcoll.sizecurve`).

    It wraps a model bound to the platform and hands it, wherever a size
    prices bytes, the curve's effective size instead of the real one: a message of ``n`` bytes
    costs what ``effective(n)`` bytes cost under the model's affine per-byte terms (node
    ``t_byte``, link bandwidths alike: the probe measures them together, in the round trip).
    Reductions (``combine``) are computation, not transfer, and keep the real size.  Models
    whose links are shared among flows (``contention="shared"``) size those flows in real
    bytes inside the simulator, where the curve cannot reach: they refuse a curve.
    O(log K) per size for a curve of K segments on top of the inner model's cost.
    """

    def __init__(self, inner: BoundModel, curve: SizeCurve) -> None:
        if inner.contention == "shared":
            raise ModelError(
                f"model {inner.model.name!r}: shares links among flows, so a platform's "
                "size_curve cannot price them; use a model with exclusive links (tini, "
                "postal, hockney)"
            )
        super().__init__(inner.model, inner.platform)
        self.inner, self.curve = inner, curve
        self.unidirectional = inner.unidirectional
        self.sender_only = inner.sender_only
        self.contention = inner.contention

    def __getattr__(self, name: str) -> Any:
        # what a model adds beyond the interface and prices no bytes (routes, links)
        return getattr(self.__dict__["inner"], name)

    def _size(self, nbytes):
        return self.curve.effective(nbytes)

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        return self.inner.send_busy(u, v, self._size(nbytes))

    def delay(self, u: int, v: int, nbytes: int) -> float:
        return self.inner.delay(u, v, self._size(nbytes))

    def recv_busy(self, u: int, v: int, nbytes: int) -> float:
        return self.inner.recv_busy(u, v, self._size(nbytes))

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return self.inner.path(u, v)

    def link_window(self, u: int, v: int, nbytes: int) -> tuple[float, float] | None:
        return self.inner.link_window(u, v, self._size(nbytes))

    def combine(self, u: int, nbytes: int) -> float:
        return self.inner.combine(u, nbytes)

    def costs(self, u: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> TransferCosts:
        return self.inner.costs(u, v, np.asarray(self._size(np.asarray(nbytes)), dtype=float))

    def resource_name(self, resource: int) -> tuple[str, str]:
        return self.inner.resource_name(resource)

    def capacity(self) -> np.ndarray:
        return self.inner.capacity()

    def nic_rate(self, u: int) -> float | None:
        return self.inner.nic_rate(u)

    def relay_path(self, u: int, v: int, nbytes: int) -> tuple[int, ...] | None:
        return self.inner.relay_path(u, v, self._size(nbytes))

    def delay_matrix(self, nbytes: int) -> np.ndarray:
        return self.inner.delay_matrix(self._size(nbytes))

    def send_matrix(self, nbytes: int) -> np.ndarray:
        return self.inner.send_matrix(self._size(nbytes))

    def node_cost(self, nbytes: int) -> np.ndarray:
        return self.inner.node_cost(self._size(nbytes))

    def edge_costs(self, nbytes: float):
        """The graph models' per-edge costs (:mod:`hetcoll.models.graph`) at the effective size."""
        return self.inner.edge_costs(self._size(nbytes))
