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

import numpy as np

from .pipelined import PlanGraph

__all__ = ["justified", "list_schedule"]

#: the most transfers justified (a larger list schedule is kept as it is; 2 048 slices at
#: n = 40: 79 872, 1 536 at n = 50): the passes cost about 7 us of CPU a transfer, so this
#: many cost about 0.6 CPU s.  ``auto``, planning a 1 GiB broadcast at n = 50,
#: weighs ``multi_tree``'s list schedules at several slice sizes, 2 048 slices (10^5
#: transfers) among them: justifying that one too would add 0.6-0.8 CPU s to that planning
#: (and reach 95.4-97.0 % of the bound, not 92.0-93.3 %; ``bench_sizes.py --auto --sizes
#: 50 --seeds 3`` prints its CPU)
MOST = 85_000
#: backward-then-forward passes (the first gains most: on the n = 50 platforms of
#: ``benchmarks/simulated/bench_sizes.py``, 1 024 slices, from 90.2, 89.0 and 89.7 % of the
#: bound to 93.5, 93.9 and 95.4 %; five more gain at most 0.6 %)
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
    ptr = np.zeros(len(first) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in after])
    succ = np.fromiter((c for x in after for c in x), dtype=np.int64, count=int(ptr[-1]))
    return _scheduled(
        np.asarray(first, dtype=np.int64),
        np.asarray(second, dtype=np.int64),
        np.asarray(seconds, dtype=float),
        ptr,
        succ,
        np.asarray(waits, dtype=np.int64),
        np.asarray(priority, dtype=float),
    )


def _scheduled(first, second, seconds, ptr, succ, waits, priority) -> tuple[list[float], float]:
    """:func:`list_schedule` of arrays, the successors of activity ``a`` in
    ``succ[ptr[a]:ptr[a + 1]]``.

    The activities are renumbered by rank (priority, then index) before the event loop,
    so that its heaps of ints pop the activity itself; every per-activity datum is a plain
    list in that numbering (a list item costs a fraction of a numpy scalar), built with
    array operations, and each port's partners are listed once."""
    n = len(first)
    by_rank = np.argsort(priority, kind="stable")  # ties: by index
    rank = np.empty(n, dtype=np.int64)
    rank[by_rank] = np.arange(n)
    counts = np.diff(ptr)[by_rank]
    new_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    gather = np.repeat(ptr[:-1][by_rank] - new_ptr[:-1], counts) + np.arange(int(new_ptr[-1]))
    nxt = rank[succ[gather]].tolist()
    nptr = new_ptr.tolist()
    port_a = first[by_rank]
    port_b = second[by_rank]
    dur = seconds[by_rank].tolist()
    left = waits[by_rank].tolist()
    # one heap of ranks per (first, second) pair, the pairs in port order
    n_b = int(second.max()) + 1 if n else 1
    pairs, which = np.unique(port_a * n_b + port_b, return_inverse=True)
    heaps: list[list[int]] = [[] for _ in range(len(pairs))]
    outs: list[list[tuple[int, list[int]]]] = [[] for _ in range(int(first.max()) + 1 if n else 1)]
    users: list[list[int]] = [[] for _ in range(n_b)]
    for heap, pair in zip(heaps, pairs.tolist(), strict=True):
        x, y = divmod(pair, n_b)
        outs[x].append((y, heap))
        users[y].append(x)
    heap_of = [heaps[j] for j in which.tolist()]
    port_a = port_a.tolist()
    port_b = port_b.tolist()
    around = [tuple(x) for x in users]  # the ports that may start when ``y`` frees
    heappush, heappop = heapq.heappush, heapq.heappop
    # the ports that may start at an instant: those using a second port freed at it (the
    # first ports freed among them) and those with an activity made ready at it
    check: set[int] | tuple[int, ...] = set()
    for r in np.flatnonzero(waits[by_rank] == 0).tolist():
        heap_of[r].append(r)  # in ascending rank: already a heap
        check.add(port_a[r])
    free_a = [0.0] * len(outs)
    free_b = [0.0] * n_b
    start = [0.0] * n
    ends: list[tuple[float, int]] = []  # (end, activity) under way: the next to end first
    t = span = 0.0
    while True:
        offers = []
        for x in check:
            if free_a[x] <= t:
                best = n  # _best, inline: most instants look at few ports
                for y, heap in outs[x]:
                    if heap and heap[0] < best and free_b[y] <= t:
                        best, pick, py = heap[0], heap, y
                if best < n:
                    offers.append((best, x, py, pick))
        if len(offers) > 1:
            offers.sort()  # ranks are distinct: never compares further
        for _r, x, y, heap in offers:
            if free_b[y] > t:  # an earlier offer took that port: the next best
                got = _best(outs[x], free_b, t, n)
                if got is None:
                    continue
                y, heap = got
            r = heappop(heap)
            start[r] = t
            free_a[x] = free_b[y] = end = t + dur[r]
            heappush(ends, (end, r))
        if not ends:
            break
        t, r = heappop(ends)
        span = t
        if not ends or ends[0][0] != t:  # most instants: one activity ends, its ports
            check = around[port_b[r]]  # (port_a[r] among them)
            for c in nxt[nptr[r] : nptr[r + 1]]:
                left[c] -= 1
                if not left[c]:
                    heappush(heap_of[c], c)
                    if port_a[c] not in check:
                        check = (*check, port_a[c])
            continue
        done = [r]
        while ends and ends[0][0] == t:
            done.append(heappop(ends)[1])
        check = set()
        for r in done:
            check.update(users[port_b[r]])
            for c in nxt[nptr[r] : nptr[r + 1]]:
                left[c] -= 1
                if not left[c]:
                    heappush(heap_of[c], c)
                    check.add(port_a[c])
    return [start[r] for r in rank.tolist()], span


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
    starts0, sender, receiver, tree, piece = (np.asarray(c) for c in zip(*transfers, strict=True))
    sender = sender.astype(np.int64)
    receiver = receiver.astype(np.int64)
    T = np.zeros((k, k))
    T[g.src, g.dst] = g.T
    seconds = T[sender, receiver]
    before = _arrival(sender, receiver, tree, piece)  # -1: the root's
    # forward: each transfer after the one that brought its slice; backward (a gather,
    # time reversed): after every transfer that forwards it
    has = before >= 0
    fwd_succ = np.flatnonzero(has)[np.argsort(before[has], kind="stable")]
    fwd_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(before[has], minlength=n), out=fwd_ptr[1:])
    back_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(has, out=back_ptr[1:])
    back_succ = before[has]
    waits = has.astype(np.int64)
    back_waits = np.diff(fwd_ptr)
    ports_b = receiver + k  # receive ports after send ports
    starts = starts0.astype(float)
    best: tuple[float, np.ndarray] = (span, starts)
    for _ in range(rounds):
        back, back_span = _scheduled(
            ports_b, sender, seconds, back_ptr, back_succ, back_waits, -(starts + seconds)
        )
        # time reversed: a gather's transfer from ``r`` to ``r + seconds`` is the
        # broadcast's from ``back_span - r - seconds``
        starts = back_span - np.asarray(back) - seconds
        if back_span < best[0]:
            best = (back_span, starts)
        fwd, fwd_span = _scheduled(sender, ports_b, seconds, fwd_ptr, fwd_succ, waits, starts)
        starts = np.asarray(fwd)
        if fwd_span < best[0]:
            best = (fwd_span, starts)
    if best[0] >= span:
        return transfers, span
    out, end = _timed(sender, receiver, tree, seconds, best[1])
    return (out, end) if end < span else (transfers, span)


def _arrival(sender, receiver, tree, piece) -> np.ndarray:
    """Per transfer, the transfer that brought its slice to its sender (-1: none, the
    root's)."""
    width = int(piece.max()) + 1
    trees = int(tree.max()) + 1
    key_in = (receiver * trees + tree) * width + piece  # each slice reaches a node once
    order = np.argsort(key_in, kind="stable")
    keys = key_in[order]
    want = (sender * trees + tree) * width + piece
    at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    return np.where(keys[at] == want, order[at], -1)


def _timed(sender, receiver, tree, seconds, starts) -> tuple[list[tuple], float]:
    """The transfers at ``starts`` listed by start (ties: the nominal listing's order),
    each pair of a tree carrying its slices in the order of its starts (a slice reaches
    a node of a tree in the order its parent sends them, so by induction from the root the
    ``q``-th transfer of a pair starts no sooner than the ``q``-th slice arrived); then
    each started as soon as its slice has arrived and both its ports are free after the
    transfers listed before it: the self-timed run of that order, exactly (a backward
    pass's starts, reversed by subtraction, may be a rounding off), and its end."""
    ranked = np.argsort(starts, kind="stable")
    u, v, i, d = sender[ranked], receiver[ranked], tree[ranked], seconds[ranked]
    # the q-th of a pair of a tree in that order carries slice q
    k = int(max(u.max(), v.max())) + 1
    group = (u * k + v) * (int(i.max()) + 1) + i
    by_group = np.argsort(group, kind="stable")
    sorted_group = group[by_group]
    first_of = np.searchsorted(sorted_group, sorted_group)
    q = np.empty(len(ranked), dtype=np.int64)
    q[by_group] = np.arange(len(ranked)) - first_of
    pred = _arrival(u, v, i, q).tolist()
    free_s = [0.0] * k
    free_r = [0.0] * k
    arrive = [0.0] * len(ranked)
    out_t = []
    span = 0.0
    for a, (x, y, dt, p) in enumerate(zip(u.tolist(), v.tolist(), d.tolist(), pred, strict=True)):
        t = free_s[x]
        if free_r[y] > t:
            t = free_r[y]
        if p >= 0 and arrive[p] > t:
            t = arrive[p]
        out_t.append(t)
        free_s[x] = free_r[y] = arrive[a] = end = t + dt
        if end > span:
            span = end
    at = np.asarray(out_t)
    order = np.argsort(at, kind="stable")  # the order's ties kept
    out = list(
        zip(
            at[order].tolist(),
            u[order].tolist(),
            v[order].tolist(),
            i[order].tolist(),
            q[order].tolist(),
            strict=True,
        )
    )
    return out, span
