"""The steady state of a pipelined schedule, measured on a simulated run.

A pipelined broadcast of ``S`` slices finishes in about ``fill + S / rate``; what matters
for large messages is the rate.  :func:`steady_state` reads it from the simulator's
transfers (so it reflects what the schedule's program order actually achieves, not a
bound): for every receiving node, the bytes it received between the moment it held a
quarter of its data and the moment it held three quarters, over that time; the schedule's
rate is the slowest node's.  On a single pipelined tree in steady state this is exactly
``slice / max_u max(sum_children T_uv, T_parent,u)`` (one-port) or the multi-port period
of Beaumont et al. (2004, Sec. 3.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..schedule import Schedule

__all__ = ["SteadyState", "measure", "steady_state"]


@dataclass(frozen=True)
class SteadyState:
    """``bytes_per_second`` and ``slices_per_second`` of the slowest receiver in the middle
    half of its data; ``bottleneck`` is that node.  None when a receiver gets its data in
    fewer than two messages (nothing to measure a rate on)."""

    bytes_per_second: float | None
    slices_per_second: float | None
    bottleneck: str | None
    slice_size: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "throughput": self.bytes_per_second,
            "slices_per_second": self.slices_per_second,
            "bottleneck": self.bottleneck,
            "slice_size": self.slice_size,
        }


def steady_state(
    prediction, schedule: Schedule, window: tuple[float, float] = (0.25, 0.75)
) -> SteadyState:
    """The steady-state rate of ``schedule`` in ``prediction`` (its simulation).

    Parameters
    ----------
    prediction : Prediction
        ``simulate(platform, schedule)``.
    schedule : Schedule
    window : (float, float)
        The shares of its data between which each receiver's rate is measured (default the
        middle half; a periodic schedule whose fill and drain are known can be measured on
        a shorter run between them).

    Returns
    -------
    SteadyState
    """
    slice_size = next((f.segment_size for f in schedule.flows if f.segment_size), None)
    return measure(schedule.program(), prediction.transfers, slice_size, window)


def measure(
    program, transfers, slice_size: int | None, window: tuple[float, float] = (0.25, 0.75)
) -> SteadyState:
    """:func:`steady_state` from a program and its simulated transfers."""
    mine: dict[str, set[int]] = {}
    for rank, ops in program.ops.items():
        for op in ops:
            stored = op.result if op.result is not None else op.chunk
            if op.kind == "recv" and program.chunks[stored].copy_of is None:
                mine.setdefault(rank, set()).add(op.chunk)
    got: dict[str, list[tuple[float, int]]] = {}
    for t in transfers:
        if t.chunk in mine.get(t.receiver, ()):
            got.setdefault(t.receiver, []).append((t.arrival, t.nbytes))
    worst: tuple[float, str] | None = None
    for rank, events in got.items():
        rate = _middle_rate(sorted(events), *window)
        if rate is None:
            return SteadyState(None, None, None, slice_size)
        if worst is None or (rate, rank) < worst:
            worst = (rate, rank)
    if worst is None:
        return SteadyState(None, None, None, slice_size)
    rate, rank = worst
    slices = rate / slice_size if slice_size else None
    return SteadyState(rate, slices, rank, slice_size)


def _middle_rate(
    events: list[tuple[float, int]], lo: float = 0.25, hi: float = 0.75
) -> float | None:
    total = sum(n for _, n in events)
    if len(events) < 2 or total == 0:
        return None
    cum = 0
    start = end = None
    for t, n in events:
        cum += n
        if start is None and cum >= lo * total:
            start = (t, cum)
        if end is None and cum >= hi * total:
            end = (t, cum)
    assert start is not None and end is not None
    if end[0] <= start[0]:
        # the middle half arrived at once: fall back to the whole run after the first message
        (t0, n0), (t1, _) = events[0], events[-1]
        return (total - n0) / (t1 - t0) if t1 > t0 else None
    return (end[1] - start[1]) / (end[0] - start[0])
