"""What the simulator answers: a :class:`Prediction` of a schedule, made of the
:class:`Transfer` of every message, and what may hold a transfer back (:data:`BLOCKERS`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BLOCKERS", "Prediction", "Transfer"]

#: What can hold back a transfer's start, in the order they are reported when several do.
BLOCKERS = ("dependency", "posted", "send_port", "recv_port", "link")


@dataclass(frozen=True)
class Transfer:
    """One simulated message: who, which chunk, when it started, arrived, freed the sender.

    ``blocked_by`` is the index (in :attr:`Prediction.transfers`) of the transfer that set
    this one's start, and ``blocked_on`` what it waited for: ``"dependency"`` (the data: the
    transfer that completed the send's last dependency), ``"posted"`` (the receiver posting
    its receive: the transfer that completed that receive's last dependency),
    ``"send_port"`` (the sender's port, held by its previous send, or by a receive on a
    unidirectional port), ``"recv_port"`` (the receiver's port) or ``"link"`` (the directed
    link ``blocked_link = (from, to)``, held under exclusive contention).  Both are None
    when nothing held it back (it started at 0, or its dependencies were met at the start).
    """

    sender: str
    receiver: str
    chunk: int
    nbytes: int
    start: float
    arrival: float
    sender_free: float
    blocked_by: int | None = None
    blocked_on: str | None = None
    blocked_link: tuple[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "sender": self.sender,
            "receiver": self.receiver,
            "chunk": self.chunk,
            "nbytes": self.nbytes,
            "start": self.start,
            "arrival": self.arrival,
            "blocked_by": self.blocked_by,
            "blocked_on": self.blocked_on,
        }
        if self.blocked_link is not None:
            out["blocked_link"] = list(self.blocked_link)
        return out


@dataclass(frozen=True)
class Prediction:
    """The simulator's answer, JSON-serialisable via :meth:`to_dict`.

    Attributes
    ----------
    makespan : float
        Seconds from the start until the last receive completes (the last member holds its
        data): the latency of a broadcast as Banikazemi et al. Sec. 7.1.2 define it.
    arrival : dict
        For every participant, when it holds everything it receives (0 for a source).
    throughput : float or None
        Steady-state bytes per second.  For a pipelined schedule (every receiver gets its
        data in several messages), the rate this run achieved: the slowest receiver's bytes
        over time between holding a quarter and three quarters of its data
        (:func:`hetcoll.simulator.rate.measure`; for one pipelined tree, exactly Beaumont et
        al.'s closed form).  Otherwise message bytes over the total busy time of the
        bottleneck resource (a port or a link).  None when no resource is ever busy or the
        message is empty.
    transfers : list of Transfer
        Every message, in start order.
    slices_per_second : float or None
        A pipelined schedule's ``throughput`` in segments (slices) per second.
    """

    algorithm: str
    collective: str
    model: Any
    nbytes: int
    makespan: float
    arrival: dict[str, float]
    throughput: float | None
    transfers: list[Transfer] = field(repr=False)
    slices_per_second: float | None = None

    def sends(self) -> list[tuple[str, str]]:
        """``(sender, receiver)`` pairs ordered by the start of their first message.

        A sender's pairs appear in the order it issues them: a rank starts its sends in
        program order, one at a time.
        """
        seen: dict[tuple[str, str], None] = {}
        for t in self.transfers:
            seen.setdefault((t.sender, t.receiver))
        return list(seen)

    def to_dict(self, transfers: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "algorithm": self.algorithm,
            "collective": self.collective,
            "model": self.model,
            "nbytes": self.nbytes,
            "predicted_time": self.makespan,
            "throughput": self.throughput,
            "slices_per_second": self.slices_per_second,
            "sends": [list(p) for p in self.sends()],
            "arrival": dict(self.arrival),
        }
        if transfers:
            out["transfers"] = [t.to_dict() for t in self.transfers]
        return out
