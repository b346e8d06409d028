"""An explicit start-up and drain for ``multi_tree``'s periodic timetables: the transfers its
first periods key list scheduled, the timetable's periods after them; and the transfers its
last periods key list scheduled after the timetable's.

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
the rest (the timetable's listing, every lag one more).  With ``ahead``, the list
schedule's priority takes the transfers on a tree path to a priced port (one whose
packing price is positive: the edges that use it and those above them) as keyed
``ahead`` periods earlier, so the saturated ports get their slices sooner where the
others have slack (on seeds 0, 2 and 3 below, one period ends 8 192 slices 0.07-0.15 % of
the bound sooner; ``multi_tree`` keeps it only where its finish bound is lower).

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

The drain is the same at the other end.  In the timetable's last periods the root has sent
everything and each slice still waits, hop after hop, for its pair's turn in the period
(the lags again): on seed 4 the one priced port (a receive port at depth 1) receives its
last slice 1.21 s before the run ends.  :func:`drained` list schedules the transfers keyed
in the last :data:`DRAIN` periods, in the timetable's order among the ready ones, from the
start of the first of those periods (every transfer keyed before it has ended by then: a
feasible timetable again), and keeps them where that lowers the finish bound.  Each flow
with a slice among them is cut at a period: its first periods keep their listing, the
rest becomes a flow listed one by one, its transfers keyed before the drain at their
timetable keys and slots, the drain's at the drain's first key in the order they start.
On the same platforms, after the start-up, 8 192 slices reach 98.45 / 99.29 / 98.27 /
98.99 / 99.02 % of the bound and 10^4 slices 98.68 / 99.40 / 98.47 / 99.32 / 99.20 %
(from 98.61 / 99.31 / 98.39 / 99.32 / 99.15 %), each at the period that finishes first as
a timetable; ``multi_tree`` gives the runners-up among periods a start-up and a drain too
and keeps the one that then ends first (``multitree._ends_first``: 98.45 / 99.41 / 98.41
/ 99.17 / 99.02 % at 8 192 slices).  A longer drain lowers the finish bound
more and can run slower (the self-timed run is ahead of its timetable when the drain
begins: seed 0 at 10^4 slices, 24 periods, 98.61 %; 30 periods 98.58 %), a shorter one
gains less on seed 4 (12 periods: 98.97 % at 8 192).
"""

from __future__ import annotations

import numpy as np

from ..patterns import Flow, OrderedSend
from ..schedule import ListedOrder, Schedule
from .justify import _scheduled
from .pipelined import PlanGraph

__all__ = ["AHEAD", "DRAIN", "PERIODS", "drained", "priced_edges", "started"]

#: the timetable periods whose transfers are list scheduled (on the n = 50 platforms of
#: ``bench_sizes.py``, seeds 0-4, 8 192 slices: 10 periods gain 0-0.22 % of the bound, 20
#: periods 0-0.31 %, 30 periods 0-0.32 % for 1.5-2 times the CPU of 20, 40 periods less:
#: the list schedule packs the ports looser than the timetable once the lags are filled)
PERIODS = 20
#: the last timetable periods (keys) whose transfers :func:`drained` list schedules (on the
#: n = 50 platforms of ``bench_sizes.py``, seeds 0-4, 8 192 and 10^4 slices: 12, 16, 20
#: periods all gain on every platform, 16 and 20 about as much, 24 and 30 lose on seed 0)
DRAIN = 16
#: the periods by which :func:`started`'s list schedule may put the transfers on a path
#: to a priced port ahead of the timetable's order, one start-up each (``multi_tree``
#: keeps the one whose finish bound is lowest).  On the n = 50 platforms of
#: ``bench_sizes.py``, seeds 0-4, 8 192 slices, 1 period ends seeds 0, 2 and 3 0.07-0.15 %
#: of the bound sooner (seed 1 0.003 % later: its bound is higher too, not kept); 2 periods
#: gain less everywhere, 0.5 less on seeds 0 and 2 and more on seed 3 (99.29 %, not 99.24):
#: not worth one more start-up (each 0.1-0.2 s CPU at 10^4 slices)
AHEAD = (1.0,)


def started(
    req,
    g: PlanGraph,
    schedule: Schedule,
    periods: int = PERIODS,
    ahead: float = 0.0,
    priced: np.ndarray | None = None,
) -> Schedule | None:
    """``schedule`` (a periodic timetable of ``multi_tree`` for the request ``req`` on its plan
    graph ``g``, with a finish bound) with the transfers keyed before period ``periods`` list
    scheduled first (see the module docstring), or None when that does not lower the
    finish bound (or some flow has fewer than ``2 * periods`` periods: the start-up would
    be most of the message).  ``ahead``: the list schedule's priority takes each transfer
    on a path to a priced edge (``priced``, :func:`priced_edges`'s; :func:`_toward_priced`)
    as keyed that many periods earlier (0 or no ``priced``: the timetable's order).

    ``params``: the schedule's, ``"finish_bound"`` lowered by ``periods * period`` less the
    start-up's span, ``"startup"`` the periods list scheduled, ``"trees"`` unchanged (each
    tree carries two flows: flow ``f`` of ``schedule`` is flows ``f`` and ``F + f``, ``F``
    its flows)."""
    params = schedule.params
    read = _read(req, g, schedule, periods)
    if read is None:
        return None
    finish, span, name, local, T, listing, per = read
    flows = schedule.flows
    if any(len(f.segments()) < 2 * periods * m for f, m in zip(flows, per, strict=True)):
        return None
    width = 1 + max(int(s.max()) for x in listing for _lags, s in x.values())
    # the start-up's transfers, flow by flow, edge by edge (parents first), segment by
    # segment: per flow, (edges, segments) matrices of keys, slots and transfer ids
    count, parts, made = 0, [], []
    priced = priced if ahead else None
    for f, flow in enumerate(flows):
        u, v, up, key, slot = _keyed(flow, listing[f], local, per[f], np.arange(periods * per[f]))
        inside = key < periods
        # the priced ports idle where their slices come late: the transfers that bring
        # them go first among the ready ones (a priority only: every order is feasible)
        first = key if priced is None else key - ahead * _toward_priced(u, v, up, priced)[:, None]
        # each transfer after the one that brought its segment (a parent's is inside
        # whenever its child's is: its key is smaller)
        ids, part = _part(u, v, up, key, slot, inside, count, T, width, first)
        count += len(part[0])
        parts.append(part)
        made.append((u, v, ids, key, slot, inside))
    starts, end = _list_scheduled(parts, count)
    saved = periods * span - end
    if not saved > 0:
        return None
    rank = _ranks(starts)
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


def drained(
    req, g: PlanGraph, schedule: Schedule, lead: float = 0.0, periods: int = DRAIN
) -> Schedule | None:
    """``schedule`` (a timetable of ``multi_tree`` with a finish bound, periodic or with a
    start-up from :func:`started`) with its transfers keyed in its last ``periods``
    periods list scheduled after the others (see the module docstring), or None when that
    does not lower the finish bound (or the message is too short: some flow would go to
    the drain whole).  ``lead``: the schedule's transfers keyed ``p`` start at ``p *
    period + lead`` plus their start in the period (0 for a periodic timetable; for
    :func:`started`'s, its start-up's span less one period).

    ``params``: the schedule's, ``"finish_bound"`` lowered to when the drain's list
    schedule ends, ``"drain"`` the periods list scheduled; each flow whose slices reach
    the drain's keys is cut at a period: its first periods keep its listing, the rest
    (listed one by one, appended after every flow) its timetable's keys before the drain
    and the drain's order within it."""
    params = schedule.params
    read = _read(req, g, schedule, periods)
    if read is None:
        return None
    finish, span, name, local, T, listing, per = read
    flows = schedule.flows
    sizes = [len(f.segments()) for f in flows]
    tops = [max(int(lags.max()) for lags, _s in x.values()) for x in listing]
    last = max((n - 1) // m + top for n, m, top in zip(sizes, per, tops, strict=True))
    cut = last + 1 - periods  # the first key of the drain
    width = 1 + max(int(s.max()) for x in listing for _lags, s in x.values())
    count, parts, made = 0, [], []
    for f, flow in enumerate(flows):
        m, n = per[f], sizes[f]
        begin = max(0, cut - tops[f]) * m  # the flow's first slice with a key in the drain
        if begin >= n:
            continue
        if begin == 0:  # the whole flow in the drain: too short a message
            return None
        u, v, up, key, slot = _keyed(flow, listing[f], local, m, np.arange(begin, n))
        inside = key >= cut
        # each transfer after the one that brought its segment, when that one is in the
        # drain too (a child's key is never below its parent's)
        ids, part = _part(u, v, up, key, slot, inside, count, T, width)
        count += len(part[0])
        parts.append(part)
        made.append((f, begin, u, v, ids, key, slot, inside))
    if not count:
        return None
    starts, end = _list_scheduled(parts, count)
    # every transfer keyed before the drain ends by its first key's period
    bound = cut * span + lead + end
    if not bound < finish:
        return None
    rank = _ranks(starts)
    nf = len(flows)
    order: dict[str, list[OrderedSend]] = {x: list(s) for x, s in schedule.order.items()}
    out = list(flows)
    for j, (f, begin, u, v, ids, key, slot, inside) in enumerate(made):
        flow = flows[f]
        at = begin * flow.segment_size
        out[f] = Flow(flow.tree, at, flow.offset, segment_size=flow.segment_size)
        out.append(
            Flow(flow.tree, flow.nbytes - at, flow.offset + at, segment_size=flow.segment_size)
        )
        # the drain's flow: one listing per segment, keyed as in the timetable before the
        # drain (the flow's period 0 is the schedule's), the drain's at its first key
        lag = np.where(inside, cut, key).tolist()
        ranked = np.where(inside, rank[np.maximum(ids, 0)], slot).tolist()
        for a, b, lg, st in zip(u.tolist(), v.tolist(), lag, ranked, strict=True):
            child = name[b]
            order[name[a]].extend(map(OrderedSend, [nf + j] * len(lg), [child] * len(lg), lg, st))
    return Schedule(
        schedule.collective,
        schedule.algorithm,
        schedule.nbytes,
        tuple(out),
        dict(params, finish_bound=bound, drain=periods),
        schedule.model,
        order=ListedOrder({x: tuple(sends) for x, sends in order.items()}),
    )


def _read(req, g: PlanGraph, schedule: Schedule, periods: int):
    """``(finish, span, name, local, T, listing, per)`` of a timetable ``schedule`` with a
    finish bound and a period (else None, as for ``periods < 1``): each plan-graph node's
    id and each id's node, the transfers' seconds (a ``k x k`` matrix), each flow's
    :func:`_listings` and slices per period."""
    finish, span = schedule.params.get("finish_bound"), schedule.params.get("period")
    if finish is None or span is None or not schedule.timetable or periods < 1:
        return None
    name = [req.ids[x] for x in g.nodes.tolist()]  # a plan-graph node's id
    local = {x: j for j, x in enumerate(name)}
    T = np.zeros((g.k, g.k))
    T[g.src, g.dst] = g.T
    listing = _listings(schedule, local)
    per = [len(next(iter(x.values()))[0]) for x in listing]  # slices per period, each flow
    return finish, span, name, local, T, listing, per


def _keyed(flow: Flow, listing: dict, local: dict[str, int], m: int, k: np.ndarray):
    """``(u, v, up, key, slot)``: ``flow``'s tree edges (parents first) as plan-graph
    senders ``u`` and receivers ``v`` and ``up`` the row of the edge into each sender (-1
    at the root); for its segments ``k``, the (edges, segments) matrices of their
    transfers' keys and slots (``listing``: the flow's of :func:`_listings`, ``m`` its
    slices per period)."""
    edges = flow.tree.edges()
    u = np.array([local[a] for a, _b in edges], dtype=np.int64)
    v = np.array([local[b] for _a, b in edges], dtype=np.int64)
    row_of = {b: e for e, (_a, b) in enumerate(edges)}  # the edge into each node
    up = np.array([row_of.get(a, -1) for a, _b in edges], dtype=np.int64)
    pairs = list(zip(u.tolist(), v.tolist(), strict=True))
    lags = np.stack([listing[p][0] for p in pairs])
    slots = np.stack([listing[p][1] for p in pairs])
    return u, v, up, k // m + lags[:, k % m], slots[:, k % m]


def priced_edges(g: PlanGraph, prices: np.ndarray | None) -> np.ndarray:
    """A ``k x k`` boolean matrix: whether the edge ``(u, v)`` of ``g`` uses a port (``u``'s
    send port, ``v``'s receive port) that ``prices`` (a packing's dual prices of ``g``'s
    problem, :class:`~.steady.Packing`) name; none without prices.  O(k^2)."""
    out = np.zeros((g.k, g.k), dtype=bool)
    if prices is not None:
        named = np.asarray(prices) > 0  # send ports, then receive ports (as in _part)
        out[g.src, g.dst] = named[g.src] | named[g.k + g.dst]
    return out


def _toward_priced(u, v, up, priced: np.ndarray) -> np.ndarray:
    """1.0 for each tree edge (``u``, ``v``, ``up`` as :func:`_keyed` gives them: parents
    first) with a priced edge (``priced``, :func:`priced_edges`) at or below it, else 0.0.
    O(edges)."""
    toward = priced[u, v].copy()
    for e in range(len(u) - 1, -1, -1):  # children before parents
        if toward[e] and up[e] >= 0:
            toward[up[e]] = True
    return toward.astype(float)


def _part(u, v, up, key, slot, inside, count: int, T, width: int, first=None):
    """``(ids, part)``: the transfers ``inside`` (of :func:`_keyed`'s matrices) numbered
    from ``count`` (``ids``, -1 outside), and their send port, receive port (after the
    send ports), seconds, predecessor (the transfer that brought the segment when it is
    inside too, else -1) and priority (the timetable's order: by ``key``, or ``first``
    where given, then slot), as :func:`_list_scheduled` takes them."""
    k = T.shape[0]
    ids = np.where(inside, count + np.cumsum(inside).reshape(inside.shape) - 1, -1)
    pred = np.where(up[:, None] >= 0, ids[np.maximum(up, 0)], -1)
    rows = np.broadcast_to(np.arange(len(u))[:, None], key.shape)[inside]
    part = (
        u[rows],
        v[rows] + k,
        T[u, v][rows],
        pred[inside],
        (key if first is None else first)[inside] * width + slot[inside],
    )
    return ids, part


def _list_scheduled(parts: list, count: int) -> tuple[list[float], float]:
    """The list schedule (:func:`~.justify.list_schedule`) of the ``count`` transfers of
    ``parts`` (:func:`_part`'s): each one's start and when the last ends."""
    first, second, seconds, pred, prio = (np.concatenate(x) for x in zip(*parts, strict=True))
    has = pred >= 0
    succ = np.flatnonzero(has)[np.argsort(pred[has], kind="stable")]
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(pred[has], minlength=count), out=ptr[1:])
    return _scheduled(first, second, seconds, ptr, succ, has.astype(np.int64), prio.astype(float))


def _ranks(starts: list[float]) -> np.ndarray:
    """Each transfer's rank in the order the list schedule starts them (ties: by number)."""
    rank = np.empty(len(starts), dtype=np.int64)
    rank[np.argsort(np.asarray(starts), kind="stable")] = np.arange(len(starts))
    return rank
