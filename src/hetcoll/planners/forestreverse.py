"""A reduce-scatter's timetable as a broadcast's play-out run backwards in time.

A reduce-scatter is an allgather run backwards: every block's partial sums flow up its
owner's trees as its copies flow down them.  So a play-out of the *broadcast* over the
reduce flows' trees (:func:`hetcoll.planners.forestorder.per_root_order`), on the reduce's
own resources (transfer ``p -> c`` holding what ``c -> p`` holds), is a timetable for the
reduce-scatter read backwards: the transfer that started at ``t`` and arrived at ``a`` of a
play-out of time ``T`` becomes the child's send that starts at ``T - a`` and arrives at
``T - t``.  Each node then has its children's contributions before it sends (it forwarded
the segment only after receiving it), and every resource carries the same busy spans,
mirrored.  The play-out of the reduce flows themselves does worse: a node forwards a
segment only once its last child's has come, so a late child holds the subtree back
(on the 64-node graph of ``benchmarks/simulated/bench_packing.py``, over the column
generation's deep trees, its reduce-scatter takes 1.27x the optimum, the allgather's
play-out 1.08x).

Run backwards, a node sends in the order of its forward *arrivals*, latest first, but
receives and combines in the order of its forward *starts*, latest first; the two differ
(a transfer's time depends on its link), so one order of slots cannot give both.  The
schedule's ``order`` lists each node's sends in their issue order and gives each the slot
of its receive: ``S - s`` for the forward slot ``s`` of ``S``, so every receiver combines
in slot order, a fixed order (the same bits on every run for floating-point data), and the
ranks issue in the list's order (:func:`hetcoll.perroot.per_root_program`).  Every flow's
segments are relabelled alike (forward segment ``k`` of ``K`` is segment ``K - 1 - k``
backwards), so the ``j``-th listing of an edge carries its ``j``-th segment, as the order's
rules have it, and the dependencies are the same.  Replayed with those orders, no transfer
starts later than in the mirror image (each waits only for what it waited for there), so
on a model whose resources are the play-out's (bandwidth-only link graphs, no combine
cost) the simulator's time is at most the play-out's (the broadcast played out with each
flow's segments in reverse order, its last, shorter one first, as they cross backwards).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..patterns import Flow, OrderedSend
from ..platform import Platform
from ..simulator.predict import gc_paused
from .forestorder import PlayOut, _Costs, _run

__all__ = ["reversed_play_out"]


class _Mirrored:
    """The costs of ``u -> v`` are those of ``v -> u``: a broadcast played out on the
    resources of the reduce it mirrors."""

    def __init__(self, costs: Any) -> None:
        self.costs = costs

    def of(self, u: int, v: int, nbytes: int) -> Any:
        return self.costs.of(v, u, nbytes)


class _Backwards:
    """A reduce flow as the broadcast it mirrors: its segments in reverse order (its last,
    shorter one first), so that forward segment ``k`` of ``K`` has the size of the reduce's
    segment ``K - 1 - k`` (and its ``cuts``, reversed: each segment's place in the share
    is that of its middle byte, :mod:`.forestorder`)."""

    kind = "bcast"

    def __init__(self, flow: Flow) -> None:
        self.tree, self.nbytes, self.segment_size = flow.tree, flow.nbytes, flow.segment_size
        self._segments = flow.segments()[::-1]
        self.cuts = flow.cuts[::-1]

    def segments(self) -> list[tuple[int, int]]:
        return self._segments


def reversed_play_out(
    platform: Platform,
    flows: Sequence[Flow],
    model: Any = None,
    lead: float | None = None,
    above: float | None = None,
) -> PlayOut:
    """The ``reduce`` ``flows`` (a reduce-scatter's) timetabled as their broadcast's
    play-out run backwards (module docstring): each node's sends in issue order, each
    with the slot that places its receive, and the play-out's time (seconds); ``lead``:
    the broadcast's play-out's horizon and ``above`` a time it stops at once proved
    slower (then ``time`` is infinite: :func:`.forestorder.per_root_order`).  The
    cyclic garbage collector is paused throughout, as in the play-out: the listing made
    per transfer here triggered collections that scanned the play-out's objects again and
    again (about a third of this function's time on a 64-node reduce-scatter)."""
    with gc_paused():
        return _reversed(platform, flows, model, lead, above)


def _reversed(
    platform: Platform,
    flows: Sequence[Flow],
    model: Any,
    lead: float | None,
    above: float | None = None,
) -> PlayOut:
    """:func:`reversed_play_out`'s timetable."""
    size = max((f.segment_size or f.nbytes or 1) for f in flows)
    down: Any = [_Backwards(f) for f in flows]
    costs = _Mirrored(_Costs(platform, size, model, "in"))
    who, slot, arrival, end = _run(platform, down, model, costs, "busiest", lead, above)
    if end == math.inf:  # proved slower than ``above``: nothing to deal out
        return PlayOut({}, end, {}, complete=False)
    top = max(slot, default=0)

    def deal() -> tuple[dict, dict]:
        # forward u -> v of slot s arrived at a: v -> u, issued at T - a with slot top - s;
        # each node's sends by their issue, ties by slot: all of them sorted once (latest
        # arrival first, then the latest forward slot), then dealt out
        back: dict[str, list[OrderedSend]] = {}
        by_slot = -np.asarray(slot, dtype=np.int64)
        ranked = np.lexsort((by_slot, -np.asarray(arrival, dtype=float)))
        for x in ranked.tolist():
            fi, u, v = who[x]
            sends = back.get(v)
            if sends is None:
                sends = back[v] = []
            sends.append(OrderedSend(fi, u, 0, top - slot[x]))
        return {v: tuple(back[v]) for v in sorted(back)}, {}

    complete = min(slot, default=0) >= 0
    return PlayOut(None, end, complete=complete, deal=deal)
