"""An explicit start-up for ``multi_tree``'s periodic timetables: the transfers its first
periods key list scheduled, the timetable's periods after them.

A periodic timetable (:mod:`.periodic_timetable`) keys the transfer of a slice of period
``j`` over a pair of lag ``l`` at period ``j + l`` of the timetable, and its self-timed run
chains every port's transfers in key order.  In the first periods a port's chain lacks the
transfers of lag above the period (no slice yet), and a transfer whose slice comes late
holds the port's next ones back: the ports the packing's dual prices name idle at the start
about as long as their sends' lags (:func:`~.message_gaps.priced_lags`, 0.77-1.26 s on the
n = 50 platforms of ``benchmarks/simulated/bench_sizes.py`` at 8 192 slices).

:func:`started` takes the transfers keyed before period :data:`PERIODS` (the slices of
those periods, each up to the hop whose lag takes it past them) out of the chains and list
schedules them (:func:`~.justify.list_schedule`: whenever a send and a receive port are
free, the ready transfer first in the timetable's order starts), so a port sends what has
arrived instead of waiting in order, and the ports with slack (the root's, those the
prices do not name) run ahead of the saturated ones.  They are keyed as one period 0, in
the order they start, and the timetable's periods follow, each key ``PERIODS - 1`` periods
earlier.  Each flow becomes two: its slices of those first periods (listed one by one) and
the rest (the timetable's listing, every lag one more).

The list schedule and then the timetable's periods, executed as timed one after the other,
are a feasible timetable (the start-up's transfers all end by its ``span``, and a transfer
keyed at period ``p >= 1`` then starts at ``span + (p - 1) * period + start``): the run ends
by the timetable's finish bound less ``PERIODS * period - span``, and :func:`started` keeps
the start-up only where that is smaller.  On those platforms (seeds 0-4, 8 192 slices)
it takes 98.08 / 99.02 / 98.05 / 98.60 / 98.97 % of the bound to 98.39 / 99.18 / 98.17 /
98.85 / 98.97 % (seed 4: unchanged; the priced ports still idle about 0.6-0.9 s at the
start, where the list schedule waits for their slices too).  O(X log X) for the X
transfers of the start-up (1.6-2.7 10^4 at n = 50), in numpy but for the list schedule's
event loop (0.04-0.06 s of the 0.07-0.1 s CPU it adds there).
"""

from __future__ import annotations

import numpy as np

from ..patterns import Flow, OrderedSend
from ..schedule import ListedOrder, Schedule
from .justify import _scheduled
from .pipelined import PlanGraph

__all__ = ["PERIODS", "started"]

#: the timetable periods whose transfers are list scheduled (on the n = 50 platforms of
#: ``bench_sizes.py``, seeds 0-4, 8 192 slices: 10 periods gain 0-0.22 % of the bound, 20
#: periods 0-0.31 %, 30 periods 0-0.32 % for 1.5-2 times the CPU of 20, 40 periods less:
#: the list schedule packs the ports looser than the timetable once the lags are filled)
PERIODS = 20


def started(req, g: PlanGraph, schedule: Schedule, periods: int = PERIODS) -> Schedule | None:
    """``schedule`` (a periodic timetable of ``multi_tree`` for the request ``req`` on its plan
    graph ``g``, with a finish bound) with the transfers keyed before period ``periods`` list
    scheduled first (see the module docstring), or None when that does not lower the
    finish bound (or some flow has fewer than ``2 * periods`` periods: the start-up would
    be most of the message).

    ``params``: the schedule's, ``"finish_bound"`` lowered by ``periods * period`` less the
    start-up's span, ``"startup"`` the periods list scheduled, ``"trees"`` unchanged (each
    tree carries two flows: flow ``f`` of ``schedule`` is flows ``f`` and ``F + f``, ``F``
    its flows)."""
    params = schedule.params
    finish, span = params.get("finish_bound"), params.get("period")
    if finish is None or span is None or not schedule.timetable or periods < 1:
        return None
    name = [req.ids[x] for x in g.nodes.tolist()]  # a plan-graph node's id
    local = {x: j for j, x in enumerate(name)}
    T = np.zeros((g.k, g.k))
    T[g.src, g.dst] = g.T
    flows = schedule.flows
    listing = _listings(schedule, local)
    per = [len(next(iter(x.values()))[0]) for x in listing]  # slices per period, each flow
    if any(len(f.segments()) < 2 * periods * m for f, m in zip(flows, per, strict=True)):
        return None
    width = 1 + max(int(s.max()) for x in listing for _lags, s in x.values())
    # the start-up's transfers, flow by flow, edge by edge (parents first), segment by
    # segment: per flow, (edges, segments) matrices of keys, slots and transfer ids
    count, parts, made = 0, [], []
    for f, flow in enumerate(flows):
        m, pre = per[f], periods * per[f]
        edges = flow.tree.edges()
        u = np.array([local[a] for a, _b in edges], dtype=np.int64)
        v = np.array([local[b] for _a, b in edges], dtype=np.int64)
        row_of = {b: e for e, (_a, b) in enumerate(edges)}  # the edge into each node
        up = np.array([row_of.get(a, -1) for a, _b in edges], dtype=np.int64)
        k = np.arange(pre)
        lags = np.stack(
            [listing[f][(a, b)][0] for a, b in zip(u.tolist(), v.tolist(), strict=True)]
        )
        slots = np.stack(
            [listing[f][(a, b)][1] for a, b in zip(u.tolist(), v.tolist(), strict=True)]
        )
        key = k // m + lags[:, k % m]
        slot = slots[:, k % m]
        inside = key < periods
        ids = np.where(inside, count + np.cumsum(inside).reshape(inside.shape) - 1, -1)
        count += int(inside.sum())
        # each transfer after the one that brought its segment (a parent's is inside
        # whenever its child's is: its key is smaller)
        pred = np.where(up[:, None] >= 0, ids[np.maximum(up, 0)], -1)
        rows = np.broadcast_to(np.arange(len(edges))[:, None], key.shape)[inside]
        parts.append(
            (
                u[rows],
                v[rows] + g.k,
                T[u, v][rows],
                pred[inside],
                key[inside] * width + slot[inside],
            )
        )
        made.append((u, v, ids, key, slot, inside))
    first, second, seconds, pred, prio = (np.concatenate(x) for x in zip(*parts, strict=True))
    has = pred >= 0
    succ = np.flatnonzero(has)[np.argsort(pred[has], kind="stable")]
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(pred[has], minlength=count), out=ptr[1:])
    starts, end = _scheduled(
        first, second, seconds, ptr, succ, has.astype(np.int64), prio.astype(float)
    )
    saved = periods * span - end
    if not saved > 0:
        return None
    rank = np.empty(count, dtype=np.int64)
    rank[np.argsort(np.asarray(starts), kind="stable")] = np.arange(count)
    # flow f's start-up (one entry per segment: keyed 0 and its rank inside, else its
    # timetable period less periods - 1), then flow F + f, the rest (the timetable's
    # entries, every lag one more)
    nf = len(flows)
    order: dict[str, list[OrderedSend]] = {}
    for f, (u, v, ids, key, slot, inside) in enumerate(made):
        lag = np.where(inside, 0, key - periods + 1).tolist()
        at = np.where(inside, rank[np.maximum(ids, 0)], slot).tolist()
        for a, b, lg, st in zip(u.tolist(), v.tolist(), lag, at, strict=True):
            child = name[b]
            order.setdefault(name[a], []).extend(
                map(OrderedSend, [f] * len(lg), [child] * len(lg), lg, st)
            )
    for f in range(nf):
        for (a, b), (lags, slots) in listing[f].items():
            child, n = name[b], len(lags)
            order.setdefault(name[a], []).extend(
                map(OrderedSend, [nf + f] * n, [child] * n, (lags + 1).tolist(), slots.tolist())
            )
    out = []
    for part in range(2):
        for f, flow in enumerate(flows):
            cut = periods * per[f] * flow.segment_size
            at, nbytes = (flow.offset, cut) if part == 0 else (flow.offset + cut, flow.nbytes - cut)
            out.append(
                Flow(flow.tree, nbytes, at, segment_size=flow.segment_size, relays=flow.relays)
            )
    return Schedule(
        schedule.collective,
        schedule.algorithm,
        schedule.nbytes,
        tuple(out),
        dict(params, finish_bound=finish - saved, startup=periods),
        schedule.model,
        order=ListedOrder({x: tuple(sends) for x, sends in order.items()}),
    )


def _listings(schedule: Schedule, local: dict[str, int]) -> list[dict]:
    """Per flow, per plan-graph pair ``(u, v)``: the lags and slots of its entries in the
    order of the node's listing (entry ``q`` carries the period's ``q``-th segment)."""
    out: list[dict[tuple[int, int], tuple[list, list]]] = [{} for _ in schedule.flows]
    for node, sends in schedule.order.items():
        u = local[node]
        for s in sends:
            lags, slots = out[s.flow].setdefault((u, local[s.child]), ([], []))
            lags.append(s.lag)
            slots.append(s.slot)
    return [
        {
            pair: (np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
            for pair, (a, b) in d.items()
        }
        for d in out
    ]
