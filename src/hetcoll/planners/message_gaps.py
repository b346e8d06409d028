"""Where a whole message's one-port list schedule loses time against the bound: its busiest
ports' idle time at the start, in the middle and at the end of the run.

``multi_tree`` list schedules a message of up to :data:`~hetcoll.planners.multitree.
MESSAGE_TRANSFERS` transfers whole (:func:`~hetcoll.planners.message_schedule.
message_transfers`) and then justifies it (:func:`~hetcoll.planners.justify.justified`).
The optimal packing loads many ports to within a percent of the busiest, so the run can end
near the bound only if those ports are seldom idle.  :func:`message_gaps` plans both
schedules as ``multi_tree`` does and reports, for each *critical* port of the justified
one (loaded at least ``near`` times the busiest port), its idle time in the first tenth of
the run (the start-up: the port waits for its first slices), in the middle eight tenths
(the pipeline full: the port waits for a partner busy elsewhere) and in the last tenth
(the drain: its work done, or waiting for the last slices), by :func:`idle_profile`, and
how much of its idle time some transfer of that port was *waiting*: its slice already at
the sender, the transfer not yet started (:func:`waiting_idle`; the port's partner busy
with another transfer, or the justified order putting another transfer of this port first),
the rest *starved*: no slice for the port held anywhere.  Waiting idle time is lost to the
interleaving of the ports; starved time to the parents' sends reaching the node too late.
``benchmarks/simulated/bench_sizes.py --gap`` prints them with the middle's rate, measured
as the slope between the message and its first half.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ._shared import packing as shared_packing
from .justify import justified
from .message_schedule import message_transfers
from .pipelined import _start
from .steady import unbounded

__all__ = ["idle_profile", "message_gaps", "waiting_idle"]

#: the share of the run counted as its start, and as its end, by :func:`idle_profile`
EDGE = 0.1


def idle_profile(busy: list[tuple[float, float]], span: float) -> dict[str, float]:
    """How long a port that is busy over the disjoint intervals ``busy`` (``(start, end)``,
    any order) idles within ``[0, span]``: ``"head"`` over the first :data:`EDGE` of
    ``span``, ``"middle"`` between, ``"tail"`` over the last :data:`EDGE`; with ``"load"``
    (the busy seconds: the four sum to ``span``), ``"first"`` (its first start) and
    ``"drain"`` (``span`` after its last end)."""
    cuts = (0.0, EDGE * span, (1.0 - EDGE) * span, span)
    idle = [0.0, 0.0, 0.0]
    load = 0.0
    at = 0.0
    for a, b in [*sorted(busy), (span, span)]:
        if a > at:  # idle over [at, a): its share of each part
            for j in range(3):
                idle[j] += max(0.0, min(a, cuts[j + 1]) - max(at, cuts[j]))
        load += b - a
        at = max(at, b)
    first = min((a for a, _b in busy), default=span)
    last = max((b for _a, b in busy), default=0.0)
    return {
        "load": load,
        "first": first,
        "head": idle[0],
        "middle": idle[1],
        "tail": idle[2],
        "drain": span - last,
    }


def waiting_idle(
    busy: list[tuple[float, float]], waiting: list[tuple[float, float]], span: float
) -> float:
    """The seconds within ``[0, span]`` that a port busy over the disjoint intervals
    ``busy`` idles while at least one of the intervals ``waiting`` (``(from, to)``, any
    order, overlapping or empty) covers it."""
    edges = sorted((a, b) for a, b in waiting if b > a)
    covered: list[tuple[float, float]] = []  # the union of the waiting intervals
    for a, b in edges:
        if covered and a <= covered[-1][1]:
            covered[-1] = (covered[-1][0], max(covered[-1][1], b))
        else:
            covered.append((a, b))
    idle, at = [], 0.0
    for a, b in [*sorted(busy), (span, span)]:
        if a > at:
            idle.append((at, a))
        at = max(at, b)
    total, j = 0.0, 0
    for a, b in idle:  # both sorted and disjoint: one merge
        while j < len(covered) and covered[j][1] <= a:
            j += 1
        i = j
        while i < len(covered) and covered[i][0] < b:
            total += min(b, covered[i][1]) - max(a, covered[i][0])
            i += 1
    return total


def message_gaps(
    platform: Platform,
    root: str,
    nbytes: int,
    segment_size: int,
    model: Any = None,
    near: float = 0.99,
) -> dict[str, Any]:
    """The whole message's list schedule and its justified form as ``multi_tree`` plans
    them (one port per node, every tree of the optimal packing a share of the slices in
    proportion to its weight): ``"list"`` and ``"justified"`` their spans (seconds),
    ``"transfers"`` how many, ``"ports"`` the :func:`idle_profile` of each critical port
    of the justified schedule (``("send", node)`` or ``("recv", node)``, loaded at least
    ``near`` times the busiest port), busiest first, each with ``"waiting"``, the seconds of
    its idle time some transfer of that port was waiting (:func:`waiting_idle`).

    A :class:`~hetcoll.errors.PlannerError` under any other port model (``multi_tree``
    list schedules those differently) and when the message has no transfer that takes
    time."""
    req, g = _start(platform, root, None, model, nbytes, segment_size)
    if g.ports != "bidirectional":
        raise PlannerError("message_gaps: one send and one receive port per node only")
    prob = g.problem()
    if g.k == 1 or req.nbytes == 0 or unbounded(prob):
        raise PlannerError("message_gaps: no transfer of this message takes time")
    from .multitree import _shares

    packing = shared_packing(prob)
    total = -(-req.nbytes // req.message_size())
    share = _shares(total, list(packing.weights))
    keep = [i for i in range(len(share)) if share[i] > 0]
    trees = [packing.trees[i] for i in keep]
    listed, list_span = message_transfers(g, trees, [share[i] for i in keep])
    transfers, span = justified(g, listed, list_span)
    T = np.zeros((g.k, g.k))
    T[g.src, g.dst] = g.T
    busy: dict[tuple[str, int], list[tuple[float, float]]] = {}
    waiting: dict[tuple[str, int], list[tuple[float, float]]] = {}
    arrived = {}  # (node, tree, slice): when the slice reached the node
    for t, u, v, i, q in transfers:  # in start order: a slice reaches u before u sends it
        end = t + float(T[u, v])
        arrived[(v, i, q)] = end
        ready = arrived.get((u, i, q), 0.0)  # the root holds every slice from the start
        busy.setdefault(("send", u), []).append((t, end))
        busy.setdefault(("recv", v), []).append((t, end))
        waiting.setdefault(("send", u), []).append((ready, t))
        waiting.setdefault(("recv", v), []).append((ready, t))
    profiles = {
        port: idle_profile(iv, span) | {"waiting": waiting_idle(iv, waiting[port], span)}
        for port, iv in busy.items()
    }
    top = max(p["load"] for p in profiles.values())
    ports = sorted(
        ((port, p) for port, p in profiles.items() if p["load"] >= near * top),
        key=lambda x: (-x[1]["load"], x[0]),
    )
    name = [req.ids[x] for x in g.nodes.tolist()]
    return {
        "list": list_span,
        "justified": span,
        "transfers": len(transfers),
        "ports": [((kind, name[u]), p) for (kind, u), p in ports],
    }
