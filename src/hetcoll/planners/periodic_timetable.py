"""The periodic timetables of ``multi_tree`` (steps 1, 3 and 4 of :mod:`.multitree`'s
docstring): whole slices per period for each packed tree, one period's transfers
timetabled (dense, spread or repaired, :mod:`.dense_timetable`), each slice placed in
the first free transfer of its pair after it arrives (its lag), and the period that ends
a message of a given number of slices first by its finish bound.

Beaumont, Marchal & Robert (2004), Sec. 4.1, give the periodic schedule of a multi-tree
packing in the abstract; this module builds it for a finite message.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

import numpy as np

from ..platform import Platform
from ._shared import packing as shared_packing
from ._shared import scale_class, scaled
from .dense_timetable import dense_timetable, repaired_timetable
from .period_rounding import shares as _shares
from .period_rounding import shares_and_loads as _shares_and_loads
from .period_rounding import whole_slices as _round
from .pipelined import PlanGraph, _start
from .steady import Packing, unbounded

__all__ = [
    "PERIODS",
    "RUNNERS_UP",
    "candidate_periods",
    "finish_bound",
    "integer_weights",
    "period_order",
    "steady_period",
    "timetabled",
]

#: the rounding to whole slices per period keeps at least this share of the optimum
KEEP = 0.998
#: the timetable of one period keeps at least this share of the optimum (when some period
#: of :data:`PERIODS` does)
KEEP_TIMETABLE = 0.995
#: periods of at most ``total / LONGEST`` slices, none longer after PATIENCE in a row that
#: finish no sooner (:func:`timetabled`: on the platforms measured there, the period that
#: finishes first is never longer)
LONGEST, PATIENCE = 8, 3
#: the styles of a period's timetable: dense (:func:`~.dense_timetable.dense_timetable`, the
#: busiest ports first), spread (each pair's transfers spread over the period: a shorter
#: fill, a looser period) and repaired (:func:`~.dense_timetable.repaired_timetable`)
DENSE, SPREAD, REPAIRED = "dense", "spread", "repaired"
#: periods also tried for the slack packing's trees (steps of 1.14-1.25 up to 64 slices, where
#: its periods are kept: seed 2 of ``bench_sizes.py``, n = 50, keeps 20 slices per period
#: for 8 192 slices, 98.17 % of the bound where 24 reach 97.82 %)
FINER = (20, 28, 40, 56)
#: the most periods besides the one that finishes first that :func:`timetabled` hands to
#: ``others``: those whose periods alone (their finish bound less the fill, ``reach``)
#: end first, and before the kept one's: the start-up and the drain list scheduled take
#: most of the fill away (on the n = 50 platforms of ``bench_sizes.py``, seeds 0-3, 8 192
#: slices, and n = 30 seed 1, the period that then ends first is the one that finishes
#: first or among the first two so ranked; by the finish bound alone, up to the fourth)
RUNNERS_UP = 2
#: the candidate slices per period (steps of 1.5 and 4/3)
PERIODS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)


def integer_weights(
    g: PlanGraph, packing: Packing, target: int | None = None, limit: int | None = None
) -> np.ndarray:
    """Whole slices per period for each tree of ``packing`` (see the module docstring):
    ``target`` slices per period, or the fewest of :data:`PERIODS` (at most ``limit``,
    when given) that keep :data:`KEEP` of the optimum."""
    share, loads = _shares_and_loads(g, packing)
    best: tuple[float, np.ndarray] | None = None
    choices = [p for p in PERIODS if limit is None or p <= max(limit, PERIODS[0])]
    for periods in (target,) if target else choices:
        m = _round(share, loads, periods)
        rate = m.sum() / (m @ loads).max()
        if best is None or rate > best[0]:
            best = (rate, m)
        if rate >= KEEP * packing.throughput:
            break
    assert best is not None
    return best[1].astype(np.int64)


def timetabled(
    g: PlanGraph,
    packing: Packing,
    target: int | None,
    total: int | None,
    repair: bool = False,
    others: list | None = None,
):
    """The trees' whole slices per period, their period's timetable and the time within
    which its run of ``total`` slices ends (:func:`finish_bound`): with ``target``, that
    many slices per period; else, among the periods of :data:`PERIODS` up to the first
    whose timetable keeps :data:`KEEP_TIMETABLE` of the optimum (and at most ``total /
    LONGEST`` slices, :data:`LONGEST`), the one that finishes the message first.

    A long period keeps more of the optimum but fills the pipeline more slowly (the fill
    is the largest lag, in periods): on a Fig. 4 platform (n = 30, density 0.12, seed 0,
    one-port, 1 MB slices) a 1 024-slice message takes 23.8 s simulated with 256 slices
    per period and 17.6 s with 16 (``slices_per_period``; the bound is 16.7 s).  The
    rounding alone keeps :data:`KEEP`, but the timetable can be longer than the busiest
    port's load (its greedy does not always pack perfectly): on the Fig. 4 grid's n = 40,
    density 0.08 platform of seed 3477823293863096931 (``experiments.beaumont.
    grid_platforms``), 32 slices per period keep 99.8 % of the optimum when rounded and
    98.4 % when timetabled.

    A period fills in its largest lag (8-13 periods at n = 50, whatever its length): none
    longer than an eighth of the message, nor after :data:`PATIENCE` periods in a row that
    finish no sooner, finishes first (on 270 random and Fig. 4 platforms, n = 4-50,
    16-8 192 slices).

    With ``repair`` (and ``total`` without ``target``) each period is also timetabled by
    :func:`~.dense_timetable.repaired_timetable`, one more candidate, and the periods of
    :data:`FINER` are tried too.

    ``others``: where up to :data:`RUNNERS_UP` other periods (each in its style that
    finishes first) are appended, those whose finish bound less its fill (``span *
    (periods - 1)``) is the smallest, and below the kept one's, first the smallest, as
    ``(m, trees, timetable, finish)`` like the one returned but ``timetable`` a function
    that lists it (only those used are listed); ``multi_tree`` list schedules the
    start-up and the drain of each and keeps the one that then ends first
    (:func:`~.multitree._ends_first`)."""
    share, loads = _shares_and_loads(g, packing)
    if target is not None:
        sizes = [int(integer_weights(g, packing, target).sum())]
    else:
        sizes = candidate_periods(total, repair)
    best, stale = None, 0  # stale: periods in a row that finished no sooner
    ends: dict[int, tuple] = {}  # each period's soonest style, as ``best``
    for periods in sizes:
        if total is not None and stale >= PATIENCE:
            break
        stale += 1
        m = (
            integer_weights(g, packing, target)
            if target is not None
            else _round(share, loads, periods)
        )
        keep = [i for i in range(len(m)) if m[i] > 0]
        trees = [packing.trees[i] for i in keep]
        mm = [int(m[i]) for i in keep]
        rate = 0.0
        # the spread timetable fills sooner but packs looser: only when the period is
        # ours to choose for this message (a given period plans the periodic regime, as
        # for an endless message: on a Fig. 4 platform, n = 20, density 0.2, seed 20000,
        # 192 slices per period, the spread one keeps 97.4 % of the optimum, this 99.6 %)
        ours = total is not None and target is None
        built: dict[str, dict] = {}  # the dense timetable's starts, the repair's first round
        for style in ((DENSE, SPREAD) + ((REPAIRED,) if repair else ())) if ours else (DENSE,):
            placed = _placed_timetable(g, trees, mm, style, built)
            if placed is None:  # (a repair that does not better the dense timetable)
                continue
            span = placed[1]
            r = sum(mm) / span if span > 0 else np.inf
            rate = max(rate, r)
            # an endless message (total None): the best rate
            finish = finish_bound(placed[1:], mm, total) if total is not None else -r
            got = (mm, trees, placed, finish)
            if best is None or finish < best[3]:
                best, stale = got, 0
            if periods not in ends or finish < ends[periods][3]:
                ends[periods] = got
        if rate >= KEEP_TIMETABLE * packing.throughput:
            break
    assert best is not None
    # only the kept period's timetable is listed node by node (the listing costs about a
    # third of a timetable: at n = 50 one is kept of up to eighteen built)
    mm, trees, (placed, span, reach), finish = best
    if others is not None:
        # not a period whose periods alone end no sooner than the kept one's: it
        # finishes no sooner either, and the start-up and the drain take away fill, not
        # periods (none such ended first on the platforms of RUNNERS_UP)
        alone = finish - reach
        runners = sorted(
            (x for x in ends.values() if x[3] - x[2][2] < alone), key=lambda x: x[3] - x[2][2]
        )
        for om, ot, (op, ospan, oreach), ofinish in runners[:RUNNERS_UP]:
            others.append((om, ot, partial(_listed_timetable, op, ospan, oreach), ofinish))
    return mm, trees, (_listed(placed, span), span, reach), finish


def _listed_timetable(placed: dict, span: float, reach: float) -> tuple:
    """``(listing, span, reach)``, a timetable as :func:`timetabled` returns it."""
    return _listed(placed, span), span, reach


def candidate_periods(total: int | None, finer: bool = False) -> list[int]:
    """The periods :func:`timetabled` tries for ``total`` slices without a target (with
    ``finer``, those of :data:`FINER` too)."""
    most = total if total is None else total // LONGEST
    grid = sorted(PERIODS + FINER) if finer else PERIODS
    return [p for p in grid if most is None or p <= most] or [PERIODS[0]]


def steady_period(
    platform: Platform,
    root: str,
    segment_size: int,
    members: Iterable[str] | None = None,
    model: Any = None,
) -> int:
    """The slices per period ``multi_tree`` would choose for an endless message: the
    fewest of :data:`PERIODS` whose timetable keeps :data:`KEEP_TIMETABLE` of the optimum
    (else the best of them).  ``slices_per_period`` set to it plans the periodic regime
    at any size (to measure its rate on a short run)."""
    _req, g = _start(platform, root, members, model, segment_size, segment_size)
    prob = g.problem()
    if g.k == 1 or unbounded(prob):
        return PERIODS[0]
    m, _trees, _timetable, _rate = timetabled(g, shared_packing(prob), None, None)
    return int(sum(m))


def finish_bound(span_reach: tuple[float, float], m: list[int], total: int) -> float:
    """When a run of ``total`` slices split by :func:`_shares` ends at the latest: tree
    ``i``'s ``q``-th slice travels in period ``q // m_i`` (its transfers each at their
    lag's period and their start in it), and a self-timed run (each port in the
    timetable's order, as soon as it can) is never later than the timetable itself, so
    it ends by ``span * (max_i ceil(share_i / m_i) - 1) + reach``, ``reach`` the latest
    end of a transfer of the first period (``lag * span + start + T``)."""
    span, reach = span_reach
    share = _shares(total, m)
    periods = max((-(-s // mi) for s, mi in zip(share, m, strict=True)), default=0)
    return span * max(periods - 1, 0) + reach


def period_order(
    g: PlanGraph, trees: list[np.ndarray], m: list[int]
) -> tuple[dict[int, list[tuple[int, int, int, int]]], float]:
    """``(order, span)`` of :func:`_period_timetable`."""
    order, span, _reach = _period_timetable(g, trees, m)
    return order, span


def _period_timetable(
    g: PlanGraph, trees: list[np.ndarray], m: list[int], style: str = DENSE
) -> tuple[dict[int, list[tuple[int, int, int, int]]], float, float]:
    """Each node's sends of one period, ``(tree index, child, lag, slot)`` in issue order
    (the ``q``-th listing of a tree and child carries the tree's ``q``-th slice of the
    period), the period ``span`` of the timetable they come from, and ``reach``: when the
    first period's slices have all arrived (``lag * span + start + T``, the latest).

    The timetable is a dense list schedule of the period's transfers (an open shop): at
    every moment a sender's port and a receiver's port are both free, a transfer between
    them starts, the senders with the most work left first, each to the free receiver with
    the most work left or, in the :data:`SPREAD` style, whose pair is furthest behind an
    even spread of its transfers over the period (a shorter fill; the dense style packs the
    period tighter: on the Fig. 4 platform of n = 40, seed 0, at 64 slices per period the
    spread style keeps 91.8 % of the optimum, the dense one 98.1 %; at n = 20, density
    0.2, seed 20000, 192 slices per period, 97.4 and 99.6 %).  Ports never overlap, so
    executed as timed it repeats every ``span`` seconds (the busiest port's load, when the
    greedy packs perfectly).

    Which slice each of a pair's transfers carries is chosen by when the slices arrive
    (:func:`_assign_slices`): a node forwards slice ``q`` of tree ``i`` in the first free
    transfer of that pair at or after the slice's arrival.  With the pairs' transfers
    spread over the period, a slice waits a fraction of a period per hop rather than up to
    a whole one.  The *lag* of a transfer is how many periods after the root's that slice
    leaves ``u``.  On a Fig. 4 platform (n = 30, density 0.12, seed 0, 1 024 slices, 16
    slices per period) the run takes 17.6 s for a bound of 16.7 s.
    """
    got = _placed_timetable(g, trees, m, style)
    assert got is not None  # (dense or spread: always a timetable)
    placed, span, reach = got
    return _listed(placed, span), span, reach


def _placed_timetable(
    g: PlanGraph,
    trees: list[np.ndarray],
    m: list[int],
    style: str = DENSE,
    built: dict[str, dict] | None = None,
) -> tuple[dict[tuple[int, int, int, int], tuple[int, float, int]], float, float] | None:
    """``(placed, span, reach)`` of :func:`_period_timetable`: the timetable and where each
    slice travels in it (:func:`_assign_slices`), before its listing node by node
    (:func:`_listed`), which only the period kept needs.  ``built``: where a dense
    timetable of these trees and slices, built here, leaves its starts, and where a
    repaired one takes them as its first round
    (:func:`~.dense_timetable.repaired_timetable`) rather than building them again.

    Inside :func:`~hetcoll.planners._shared.shared_work` one timetable serves every slice
    size of the problem's :func:`~hetcoll.planners._shared.scale_class` (``span`` and
    ``reach`` rescaled exactly; the starts in ``placed`` are the kept scale's, which only
    their order, the same at every scale, is read from)."""
    cls, scale = scale_class(g.problem())
    key = (
        "timetable",
        cls,
        g.nodes.tobytes(),
        tuple(np.asarray(t, dtype=np.int64).tobytes() for t in trees),
        tuple(int(x) for x in m),
        style,
    )
    return scaled(
        key, scale, lambda: _one_timetable(g, trees, m, style, built), _rescaled_timetable
    )


def _rescaled_timetable(found: tuple | None, ratio: float) -> tuple | None:
    """A timetable kept at a scale ``ratio`` times ours: its times divided by ``ratio``."""
    if found is None:
        return None
    placed, span, reach = found
    return placed, span / ratio, reach / ratio


def _one_timetable(
    g: PlanGraph, trees: list[np.ndarray], m: list[int], style: str, built: dict | None = None
) -> tuple[dict[tuple[int, int, int, int], tuple[int, float, int]], float, float] | None:
    """:func:`_placed_timetable`, built (None: :data:`REPAIRED` not bettering the dense)."""
    k = g.k
    per_pair: dict[tuple[int, int], int] = {}
    for tree, mi in zip(trees, m, strict=True):
        for e in tree.tolist():
            pair = (int(g.src[e]), int(g.dst[e]))
            per_pair[pair] = per_pair.get(pair, 0) + mi
    T = {(int(g.src[e]), int(g.dst[e])): float(g.T[e]) for e in range(len(g.src))}
    if style == REPAIRED:  # None where the dense timetable is not bettered
        starts = repaired_timetable(k, T, per_pair, (built or {}).get(DENSE))
        if starts is None:
            return None
    else:
        starts = dense_timetable(k, T, per_pair, style == SPREAD)
        if built is not None and style == DENSE:
            built[DENSE] = starts
    span = max((t + T[pair] for pair, ts in starts.items() for t in ts), default=0.0)
    placed = _assign_slices(g, trees, m, T, starts, span)
    reach = max(
        (lag * span + s + T[(u, v)] for (u, v, _i, _q), (lag, s, _d) in placed.items()), default=0.0
    )
    return placed, span, reach


def _listed(
    placed: dict[tuple[int, int, int, int], tuple[int, float, int]], span: float
) -> dict[int, list[tuple[int, int, int, int]]]:
    """Each node's sends of one period, ``(tree index, child, lag, slot)`` in issue order
    (the ``order`` of :func:`_period_timetable`), from the placed slices."""
    # one slot per transfer: its rank in the period by start time, the same at both ends
    # (ties: the shallower first, so a parent ranks before a child it reaches in no time)
    ranked = sorted(placed, key=lambda x: (placed[x][1], placed[x][2], x))
    order: dict[int, list[tuple[int, int, int, int]]] = {}
    slot_of = {x: slot for slot, x in enumerate(ranked)}
    for u, v, i, q in ranked:
        order.setdefault(u, []).append((i, v, q, slot_of[(u, v, i, q)]))
    # the q-th listing of (tree, child) is slice q: list each pair's slices in slice order
    # at the places its transfers take in the issue order
    out: dict[int, list[tuple[int, int, int, int]]] = {}
    for u, seq in order.items():
        by_pair: dict[tuple[int, int], list[int]] = {}
        for i, v, q, _slot in seq:
            by_pair.setdefault((i, v), []).append(q)
        for qs in by_pair.values():
            qs.sort(reverse=True)
        listed = []
        for i, v, _q, _slot in seq:
            q = by_pair[(i, v)].pop()
            listed.append((i, v, placed[(u, v, i, q)][0], slot_of[(u, v, i, q)]))
        out[u] = listed
    return out


def _assign_slices(g: PlanGraph, trees, m, T, starts, span):
    """``(lag, start in the period, depth)`` of each transfer ``(u, v, tree, slice)``.

    Slices are taken in order of arrival (one heap over every tree's slices), each in the
    first free transfer of its pair at or after it arrives (cyclically: a wrap to the next
    period costs one period of lag); the root sends tree ``i``'s ``q``-th slice in the
    first free transfer at or after ``(q + 1/2) / m_i`` of the period, lag 0.  A parent's
    transfer of a slice ends no later than its child's starts (in the periodic timetable),
    so the timetable with these lags is feasible."""
    import heapq
    from bisect import bisect_left
    from math import floor

    # each tree's sends from each node: (child, the pair's sorted starts, next-free
    # pointers over them (made once: a pair is taken many times), duration), children in
    # order
    kids: list[dict[int, list]] = [{} for _ in trees]
    nxt_of = {pair: list(range(len(ts) + 1)) for pair, ts in starts.items()}
    for i, tree in enumerate(trees):
        for e in tree.tolist():
            u, v = int(g.src[e]), int(g.dst[e])
            kids[i].setdefault(u, []).append(v)
        for u, vs in kids[i].items():
            vs.sort()
            kids[i][u] = [(v, starts[(u, v)], nxt_of[(u, v)], T[(u, v)]) for v in vs]
    placed: dict[tuple[int, int, int, int], tuple[int, float, int]] = {}
    root = g.root
    early = 1e-12 * span  # a slice arriving this early still takes a transfer at its time
    heap = [(-1.0, 0, i, q, root) for i, mi in enumerate(m) for q in range(mi)]
    heapq.heapify(heap)  # (arrival, depth, tree, slice, node)
    heappop, heappush = heapq.heappop, heapq.heappush
    while heap:
        arrive, depth, i, q, u = heappop(heap)
        sends = kids[i].get(u)
        if not sends:
            continue
        if u == root:
            phase, base = (q + 0.5) / m[i] * span, 0
        else:
            base = floor(arrive / span + 1e-12) if span > 0 else 0
            phase = arrive - base * span
        for v, ts, nxt, d in sends:
            # the first free transfer at or after the phase, else the first free one of
            # the next period (a wrap: one more period of lag, except at the root)
            j, wrapped = bisect_left(ts, phase - early), 0
            while True:
                r = j
                while nxt[r] != r:
                    r = nxt[r]
                while nxt[j] != r:  # path compression
                    nxt[j], j = r, nxt[j]
                if r < len(ts):
                    nxt[r] = r + 1
                    break
                j, wrapped = 0, 1
            lag = 0 if u == root else base + wrapped
            start = ts[r]
            placed[(u, v, i, q)] = (lag, start, depth)
            heappush(heap, (lag * span + start + d, depth + 1, i, q, v))
    return placed
