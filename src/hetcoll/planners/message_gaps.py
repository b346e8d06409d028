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

:func:`priced_idle` splits any one-port run's distance to the fluid bound exactly: the
optimal packing's dual prices weight each port's idle time at the start, in the middle and
at the end of the run, plus the weighted work its trees do beyond the optimum's
(``--gap`` prints it for the periodic timetable ``multi_tree`` keeps), and
:func:`priced_lags` the start-up a timetable's lags cost the priced ports.
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

__all__ = ["idle_profile", "message_gaps", "priced_idle", "priced_lags", "waiting_idle"]

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


def _priced(platform: Platform, root: str, slice_size: int, model: Any):
    """The one-port steady-state problem with slices of ``slice_size`` and its packing's
    prices and upper bound (slices per second), as :func:`hetcoll.bounds.slice_bound`
    takes them; a :class:`~hetcoll.errors.PlannerError` under other port models or
    without a bound."""
    from .steady import model_problem

    problem = model_problem(platform, root, slice_size, model)
    if problem.ports != "bidirectional":
        raise PlannerError("priced_idle: one send and one receive port per node only")
    if unbounded(problem):
        raise PlannerError("priced_idle: no transfer of this message takes time")
    pack = shared_packing(problem)
    if pack.prices is None or not pack.upper_bound > 0:  # pragma: no cover - HiGHS's duals
        raise PlannerError("priced_idle: the packing has no certificate")
    return problem, np.asarray(pack.prices, dtype=float), float(pack.upper_bound)


def _edge_of(problem) -> dict[tuple[str, str], int]:
    """Each edge of ``problem`` by its ends' node ids."""
    ids, pairs = problem.ids, zip(problem.src.tolist(), problem.dst.tolist(), strict=True)
    return {(ids[a], ids[b]): e for e, (a, b) in enumerate(pairs)}


def priced_idle(
    platform: Platform, root: str, schedule: Any, model: Any = None, prediction: Any = None
) -> dict[str, float]:
    """Where a one-port broadcast ``schedule`` whose every message is one slice
    (``segment_size``, dividing the message) loses time against the fluid bound, exactly:
    ``makespan = steady + waste + head + middle + tail`` (seconds).

    ``steady = k / B``, ``k`` the slices and ``B`` the optimal packing's certified upper
    bound (slices per second; :func:`hetcoll.bounds.slice_bound`'s ``seconds``), and
    ``y_r`` its dual prices on the ports (summing to 1).  The run (``prediction``, else
    simulated) keeps port ``r`` busy ``T_e`` from the start of each transfer over an edge
    ``e`` that uses it; ``waste = sum_r y_r load_r - k / B``, the priced work its trees
    do beyond the optimum's (``>= 0``: each slice's first copies form an arborescence,
    whose priced work is at least ``1 / B``); ``head``, ``middle``, ``tail`` the ports'
    idle seconds in the first tenth, the middle and the last tenth of the run
    (:func:`idle_profile`), weighted by ``y_r``.  Since ``sum_r y_r = 1`` and each port's
    load and idle seconds add up to the makespan, the five parts do.  A
    :class:`~hetcoll.errors.PlannerError` under other port models, for a multicast or
    messages of another size, or where a port's transfers overlap (a model whose ports
    are busy other than ``T_e`` from the start).  O(transfers + ports)."""
    from .. import simulate

    size = schedule.flows[0].segment_size if schedule.flows else None
    if (
        size is None
        or schedule.nbytes % size
        or any(f.kind != "bcast" or f.segment_size != size for f in schedule.flows)
        or any(f.nbytes % size for f in schedule.flows)
    ):
        raise PlannerError("priced_idle: a broadcast whose every message is one slice only")
    problem, prices, upper = _priced(platform, root, size, model)
    pred = prediction if prediction is not None else simulate(platform, schedule, model)
    span = float(pred.makespan)
    usage = problem.usage.tocsc()
    # each edge's ports and the seconds it keeps each busy
    uses = [
        list(zip(usage.indices[a:b].tolist(), usage.data[a:b].tolist(), strict=True))
        for a, b in zip(usage.indptr[:-1].tolist(), usage.indptr[1:].tolist(), strict=True)
    ]
    edge = _edge_of(problem)
    busy: dict[int, list[tuple[float, float]]] = {}
    for t in pred.transfers:
        e = edge.get((t.sender, t.receiver))
        if e is None:
            raise PlannerError("priced_idle: a transfer over no edge of the model")
        for r, seconds in uses[e]:
            busy.setdefault(r, []).append((t.start, t.start + seconds))
    parts = dict.fromkeys(("load", "head", "middle", "tail"), 0.0)
    for r in np.flatnonzero(prices > 0).tolist():
        prof = idle_profile(busy.get(r, []), span)
        if abs(sum(prof[x] for x in parts) - span) > 1e-9 * max(span, 1.0):
            raise PlannerError("priced_idle: a port's transfers overlap")
        for x in parts:
            parts[x] += prices[r] * prof[x]
    steady = schedule.nbytes // size / upper
    load = parts.pop("load")
    return {"makespan": span, "steady": steady, "waste": float(load - steady)} | {
        x: float(v) for x, v in parts.items()
    }


def priced_lags(platform: Platform, root: str, schedule: Any, model: Any = None) -> float:
    """The start-up a periodic timetable's lags cost the priced ports (seconds):
    ``sum (y_u + y_v) lag T_uv`` over one period's sends of ``schedule.order`` (``y``
    the optimal packing's dual prices of ``u``'s send port and ``v``'s receive port, as
    in :func:`priced_idle`).  A send of lag ``l`` has no slice in the run's first ``l``
    periods, so where the priced ports are saturated they idle about this long at the
    start (an estimate, not a bound: a self-timed run catches up where its ports have
    slack).  A schedule with a start-up (:func:`~.startup.started`, ``params["startup"]``)
    is read for its timetable's lags: the entries of its flows after the start-up's
    (``params["trees"]`` of them), each lag one less (what the start-up takes the place
    of); the flows of a drain (:func:`~.startup.drained`, appended after those) are not
    read.  0 for a schedule without an order.
    O(sends of a period)."""
    size = schedule.flows[0].segment_size if schedule.flows else None
    problem, prices, _upper = _priced(platform, root, size or schedule.nbytes, model)
    usage = problem.usage.tocsc()
    edge = _edge_of(problem)
    shifted = 1 if schedule.params.get("startup") else 0
    # the timetable's flows: after the start-up's, before the drain's (appended last)
    trees = int(schedule.params.get("trees", len(schedule.flows)))
    first = trees if shifted else 0
    total = 0.0
    for u, sends in (schedule.order or {}).items():
        for send in sends:
            lag = send.lag - shifted
            if lag > 0 and first <= send.flow < first + trees:
                e = edge[(u, send.child)]
                a, b = usage.indptr[e], usage.indptr[e + 1]
                total += lag * float(prices[usage.indices[a:b]] @ usage.data[a:b])
    return total
