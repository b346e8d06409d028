"""Forward-backward improvement of a whole message's one-port list schedule: the same
transfers list scheduled again, backward in time and then forward, each pass in the order
the previous one timed them.

:func:`~hetcoll.planners.message_schedule.message_transfers` sends whatever comes first in
the message's nominal order whenever two ports are free.  On a Fig. 4 platform at n = 50
the optimal packing loads twenty-odd send and receive ports to within 1 % of the busiest,
and such a greedy leaves each of them idle about a tenth of the run, waiting for a parent
that is busy elsewhere: 90 % of the bound at 1 024 slices.  Justification (Valls,
Ballestín & Quintanilla 2005, for resource-constrained project scheduling) list schedules
the transfers once more from the end: the message's gather, time reversed, each port
taking the ready transfer that ended latest in the forward schedule, so that what the
forward schedule packed tight at its end stays tight and the slack moves to the start;
then forward again, each port taking the ready transfer that starts first in the backward
schedule.  Either pass is a feasible schedule (a time reversed gather is a broadcast:
every precedence and port reversed twice), and the one that ends first is kept, never
the greedy's if it ends later.  Whole passes, in the list schedule's own event loop
(:func:`list_schedule`), not a local search.

A tree's slices then leave a node in whichever order the passes timed them;
:func:`justified` relabels them so that each pair of a tree carries its slices in order
(the ``q``-th transfer of tree ``i`` from ``u`` to ``v`` carries slice ``q``), which the
timetable's order lists implicitly.  The relabelling keeps every start: slices reach a
node of a tree in the order its parent sends them, so by induction from the root the
``q``-th transfer of a pair starts no sooner than the ``q``-th slice arrived (a slot that
held some later slice, or ``q`` earlier ones, is never before the ``q``-th arrival).
"""

from __future__ import annotations

import heapq

from .pipelined import PlanGraph

__all__ = ["justified", "list_schedule"]

#: the most transfers justified (a larger list schedule is kept as it is; n = 50, 1 024
#: slices: 50 176): the passes cost about 10 us of CPU a transfer, and ``auto``, planning a
#: 1 GiB broadcast at n = 50, weighs ``multi_tree``'s list schedules at several slice
#: sizes, 2 048 slices (10^5 transfers) among them: justifying every one would add about
#: 1.2 CPU s to that planning, those up to this many add about 0.3 s
#: (``bench_sizes.py --auto --sizes 50 --seeds 3`` prints its CPU)
MOST = 60_000
#: backward-then-forward passes (the first gains most: on the n = 50 platforms of
#: ``benchmarks/simulated/bench_sizes.py``, 1 024 slices, from 90.2, 89.0 and 89.7 % of the
#: bound to 93.5, 93.9 and 95.4 %; five more gained at most 0.6 %)
ROUNDS = 1


def list_schedule(
    first: list[int],
    second: list[int],
    seconds: list[float],
    after: list[list[int]],
    waits: list[int],
    priority: list[float],
) -> tuple[list[float], float]:
    """Each activity's start and when the last ends: activity ``a`` holds ports
    ``first[a]`` and ``second[a]`` for ``seconds[a]``, may start once ``waits[a]`` of its
    predecessors have ended (it is in ``after[p]`` of each predecessor ``p``), and among
    the ready ones the lower ``priority`` starts first.

    Event driven as :func:`~hetcoll.planners.message_schedule.message_transfers`: at each
    instant, each free ``first`` port whose ready activities include one with a free
    ``second`` port offers the best of them, and the offers start in priority order (an
    offer whose ``second`` port an earlier one took makes way for that port's next best).
    No port is left free with a ready activity for a free partner."""
    n = len(first)
    left = list(waits)
    # the heaps hold ranks (ints compare fastest): rank r is activity by_rank[r]
    by_rank = sorted(range(n), key=lambda a: (priority[a], a))
    rank = [0] * n
    for r, a in enumerate(by_rank):
        rank[a] = r
    heaps: dict[tuple[int, int], list[int]] = {}
    outs: list[list[tuple[int, list[int]]]] = [[] for _ in range(max(first) + 1)]
    users: list[list[int]] = [[] for _ in range(max(second) + 1)]
    heap_of: list[list[int]] = []
    for a in range(n):
        key = (first[a], second[a])
        heap = heaps.get(key)
        if heap is None:
            heap = heaps[key] = []
            outs[key[0]].append((key[1], heap))
            users[key[1]].append(key[0])
        heap_of.append(heap)
    for lst in outs:
        lst.sort(key=lambda x: x[0])
    heappush, heappop = heapq.heappush, heapq.heappop
    check: set[int] = set()
    for a in range(n):
        if not left[a]:
            heappush(heap_of[a], rank[a])
            check.add(first[a])
    free_a = [0.0] * len(outs)
    free_b = [0.0] * len(users)
    start = [0.0] * n
    ends: list[tuple[float, int]] = []
    t = span = 0.0
    while True:
        offers = []
        for x in check:
            if free_a[x] <= t:
                best, pick = n, None  # _best, inline: most instants look at few ports
                for out in outs[x]:
                    heap = out[1]
                    if heap and heap[0] < best and free_b[out[0]] <= t:
                        best, pick = heap[0], out
                if pick is not None:
                    offers.append((best, x, pick))
        if len(offers) > 1:
            offers.sort()  # ranks are distinct: never compares further
        for _r, x, pick in offers:
            if free_b[pick[0]] > t:  # an earlier offer took that port: the next best
                pick = _best(outs[x], free_b, t, n)
                if pick is None:
                    continue
            y, heap = pick
            a = by_rank[heappop(heap)]
            start[a] = t
            free_a[x] = free_b[y] = end = t + seconds[a]
            heappush(ends, (end, a))
        if not ends:
            break
        t = span = ends[0][0]
        check.clear()
        while ends and ends[0][0] <= t:
            a = heappop(ends)[1]
            check.add(first[a])
            check.update(users[second[a]])
            for c in after[a]:
                left[c] -= 1
                if not left[c]:
                    heappush(heap_of[c], rank[c])
                    check.add(first[c])
    return start, span


def _best(outs, free_b: list[float], t: float, never: int):
    """The ``(port, heap)`` of ``outs`` whose heap's first rank comes first among the free
    ports (ties: the first listed), None when none is."""
    best, pick = never, None
    for out in outs:
        heap = out[1]
        if heap and heap[0] < best and free_b[out[0]] <= t:
            best, pick = heap[0], out
    return pick


def justified(
    g: PlanGraph,
    transfers: list[tuple[float, int, int, int, int]],
    span: float,
    rounds: int = ROUNDS,
) -> tuple[list[tuple[float, int, int, int, int]], float]:
    """``(transfers, span)`` of the message's list schedule ``transfers`` (``(start,
    sender, receiver, tree, slice)`` in start order, as :func:`~hetcoll.planners.
    message_schedule.message_transfers` lists them, the last ending at ``span``) or of a
    backward or forward pass of :data:`ROUNDS` (see the module docstring), whichever ends
    first (ties: the earlier), in the same form: listed by start, each pair of a tree
    carrying its slices in order; ``transfers`` as they are when there are more than
    :data:`MOST`."""
    n = len(transfers)
    if n == 0 or n > MOST or rounds <= 0:
        return transfers, span
    k = g.k
    T = {(int(g.src[e]), int(g.dst[e])): float(g.T[e]) for e in range(len(g.src))}
    which = {(v, i, q): a for a, (_t, _u, v, i, q) in enumerate(transfers)}
    sender = [u for _t, u, _v, _i, _q in transfers]
    receiver = [k + v for _t, _u, v, _i, _q in transfers]  # receive ports after send ports
    seconds = [T[(u, v)] for _t, u, v, _i, _q in transfers]
    before = [which.get((u, i, q), -1) for _t, u, _v, i, q in transfers]  # -1: the root
    after: list[list[int]] = [[] for _ in range(n)]
    for a, b in enumerate(before):
        if b >= 0:
            after[b].append(a)
    waits = [int(b >= 0) for b in before]
    back_after = [[b] if b >= 0 else [] for b in before]
    back_waits = [len(x) for x in after]
    starts = [x[0] for x in transfers]
    best: tuple[float, list[float]] = (span, starts)
    for _ in range(rounds):
        ends = [s + d for s, d in zip(starts, seconds, strict=True)]
        back, back_span = list_schedule(
            receiver, sender, seconds, back_after, back_waits, [-e for e in ends]
        )
        # time reversed: a gather's transfer from ``r`` to ``r + seconds`` is the
        # broadcast's from ``back_span - r - seconds``
        starts = [back_span - r - d for r, d in zip(back, seconds, strict=True)]
        if back_span < best[0]:
            best = (back_span, starts)
        starts, fwd_span = list_schedule(sender, receiver, seconds, after, waits, starts)
        if fwd_span < best[0]:
            best = (fwd_span, starts)
    if best[0] >= span:
        return transfers, span
    out, end = _timed(_relabelled(transfers, best[1]), T)
    return (out, end) if end < span else (transfers, span)


def _timed(
    transfers: list[tuple[float, int, int, int, int]], T: dict
) -> tuple[list[tuple[float, int, int, int, int]], float]:
    """The transfers in their order, each started as soon as its slice has arrived and
    both its ports are free after the transfers listed before it: the self-timed run of
    that order, exactly (a backward pass's starts, reversed by subtraction, may be a
    rounding off), and its end."""
    arrive: dict[tuple[int, int, int], float] = {}
    free_s: dict[int, float] = {}
    free_r: dict[int, float] = {}
    out = []
    span = 0.0
    for _t, u, v, i, q in transfers:
        t = max(arrive.get((u, i, q), 0.0), free_s.get(u, 0.0), free_r.get(v, 0.0))
        free_s[u] = free_r[v] = arrive[(v, i, q)] = end = t + T[(u, v)]
        span = max(span, end)
        out.append((t, u, v, i, q))
    out.sort(key=lambda x: x[0])  # stable: the order's ties kept
    return out, span


def _relabelled(
    transfers: list[tuple[float, int, int, int, int]], starts: list[float]
) -> list[tuple[float, int, int, int, int]]:
    """The transfers at ``starts``, listed by start (ties: the nominal listing's order),
    each pair of a tree carrying its slices in the order of its starts."""
    ranked = sorted(range(len(transfers)), key=lambda a: (starts[a], a))
    count: dict[tuple[int, int, int], int] = {}
    out = []
    for a in ranked:
        _t, u, v, i, _q = transfers[a]
        q = count.get((u, v, i), 0)
        count[(u, v, i)] = q + 1
        out.append((starts[a], u, v, i, q))
    return out
