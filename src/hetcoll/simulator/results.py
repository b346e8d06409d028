"""What the simulator answers: a :class:`Prediction` of a schedule, made of the
:class:`Transfer` of every message, and what may hold a transfer back (:data:`BLOCKERS`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["BLOCKERS", "Prediction", "Transfer", "TransferTable"]

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


#: :class:`TransferTable`'s columns, in order
_COLUMNS = ("sender", "receiver", "chunk", "nbytes", "start", "arrival", "free", "by", "on")


class TransferTable(Sequence[Transfer]):
    """The transfers of a run kept as columns, each made a :class:`Transfer` only when read:
    a run of a million transfers costs a few arrays instead of a million objects.

    ``sender``, ``receiver``: indices into ``ranks``; ``by``: index of the blocking
    transfer or -1; ``on``: index into :data:`BLOCKERS` or -1 (then ``by`` is -1 too);
    ``link``: the blocking link of each, or None for none.  Compares equal to any sequence
    of the same transfers.  Columns
    given as numpy arrays are made lists when first read (a run whose transfers nobody
    reads, 490 000 of a multi-port message, then makes none).
    """

    def __init__(
        self,
        ranks: Sequence[str],
        sender: Sequence[int],
        receiver: Sequence[int],
        chunk: Sequence[int],
        nbytes: Sequence[int],
        start: Sequence[float],
        arrival: Sequence[float],
        free: Sequence[float],
        by: Sequence[int],
        on: Sequence[int],
        link: Sequence[tuple[str, str] | None] | None = None,
    ) -> None:
        self.ranks = list(ranks)
        self._given: tuple | None = (sender, receiver, chunk, nbytes, start, arrival, free, by, on)
        self._columns: tuple[list, ...] | None = None
        self.link = list(link) if link is not None else None
        self._len = len(sender)

    @property
    def columns(self) -> tuple[list, ...]:
        """The columns as lists (sender, receiver, chunk, nbytes, start, arrival, free,
        by, on)."""
        if self._columns is None:
            assert self._given is not None
            self._columns = tuple(
                c.tolist() if isinstance(c, np.ndarray) else list(c) for c in self._given
            )
            self._given = None
        return self._columns

    def __len__(self) -> int:
        return self._len

    def _make(self, row: tuple, link: tuple[str, str] | None) -> Transfer:
        a, b, k, n, s, t, f, x, w = row
        ranks = self.ranks
        return Transfer(
            ranks[a],
            ranks[b],
            k,
            n,
            s,
            t,
            f,
            x if x >= 0 else None,
            BLOCKERS[w] if w >= 0 else None,
            link,
        )

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = tuple(c[i] for c in self.columns)
        return self._make(row, self.link[i] if self.link is not None else None)

    def __iter__(self) -> Iterator[Transfer]:
        links = self.link if self.link is not None else [None] * len(self)
        for row, link in zip(zip(*self.columns, strict=True), links, strict=True):
            yield self._make(row, link)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))

    def array(self, name: str) -> np.ndarray:
        """One column (``sender``, ``receiver``, ``chunk``, ``nbytes``, ``start``,
        ``arrival``, ``free``, ``by`` or ``on``) as a numpy array, without making the
        others lists nor any transfer."""
        k = _COLUMNS.index(name)
        got = self._given[k] if self._given is not None else self.columns[k]
        return np.asarray(got)

    def pairs(self) -> list[tuple[str, str]]:
        """``(sender, receiver)`` pairs in order of their first transfer, without making
        the transfers."""
        seen = dict.fromkeys(zip(self.columns[0], self.columns[1], strict=True))
        ranks = self.ranks
        return [(ranks[a], ranks[b]) for a, b in seen]


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
        The steady-state rate of the schedule's periodic part, in bytes per second, the same
        meaning for every schedule: the message's bytes over the busy time of its busiest
        resource (a send or receive port, or a link), so the rate at which the schedule's
        pattern moves data once nothing but that resource holds it back.  A pipelined tree
        repeats one slice: this is Beaumont et al.'s closed form
        ``slice / max_u max(sum_children T_uv, T_parent,u)`` (one-port), the same at every
        message size; several trees (``multi_tree``) repeat their weights' pattern: the rate
        of those weights.  A makespan never beats ``nbytes / throughput``.  None when no
        resource is ever busy or the message is empty.
    transfers : sequence of Transfer
        Every message, in start order (a :class:`TransferTable`).
    slices_per_second : float or None
        A pipelined schedule's ``throughput`` in segments (slices) per second.
    effective_rate : float or None
        The message's bytes over the makespan (``size / predicted time``): what a caller
        sees for this message, fill and drain included.  None for an empty message.
    """

    algorithm: str
    collective: str
    model: Any
    nbytes: int
    makespan: float
    arrival: dict[str, float]
    throughput: float | None
    transfers: Sequence[Transfer] = field(repr=False)
    slices_per_second: float | None = None
    effective_rate: float | None = None

    def sends(self) -> list[tuple[str, str]]:
        """``(sender, receiver)`` pairs ordered by the start of their first message.

        A sender's pairs appear in the order it issues them: a rank starts its sends in
        program order, one at a time.
        """
        if isinstance(self.transfers, TransferTable):
            return self.transfers.pairs()
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
            "effective_rate": self.effective_rate,
            "sends": [list(p) for p in self.sends()],
            "arrival": dict(self.arrival),
        }
        if transfers:
            out["transfers"] = [t.to_dict() for t in self.transfers]
        return out
