"""The list schedule of a whole message over packed trees under a port per link
(``multi_port``): which node sends which slice to which child when, each slice at its
latest start.

Tree ``i`` of a packing carries ``share[i]`` of the message's slices.  Spread evenly over
the message, its ``q``-th slice is due when ``(q + 1/2) / share[i]`` of the message has
been sent at the trees' rate (the busiest port's or link's time for the whole message,
:func:`horizon`), and, to reach every node of tree ``i`` by then, it must leave ``u`` for
its child ``w`` by its *latest start*: that time less the longest path of link times from
``u`` through ``w`` to a leaf of tree ``i`` below it (:func:`tail_times`, the upward rank
of list scheduling: Topcuoglu, Hariri & Wu, "Performance-Effective and Low-Complexity Task
Scheduling for Heterogeneous Computing", IEEE TPDS 13(3), 2002).  A node sends the slice
of least latest start first, so a deep tree's slices leave the root ahead of a shallow
one's and the trees drain together, where taking the slices in the message's order alone
at every node of every tree leaves the deep trees last.
"""

from __future__ import annotations

import heapq
import math
from operator import itemgetter

import numpy as np

from .message_schedule import tree_children
from .pipelined import PlanGraph

__all__ = [
    "CRITICAL",
    "MARGIN",
    "critical_links",
    "gap_bound",
    "horizon",
    "multi_port_transfers",
    "tail_times",
]

#: :func:`multi_port_transfers` with ``beat`` stops once its run is sure to end later than
#: ``beat`` by more than this share of it (the bound's running sums may round)
MARGIN = 1e-9
#: a link busy at least this share of :func:`horizon` (and longer than its sender's port)
#: is critical (:func:`critical_links`)
CRITICAL = 0.97


class _Slower(Exception):
    """:func:`multi_port_transfers`'s run is sure to end after ``beat``."""


def tail_times(g: PlanGraph, tree: np.ndarray) -> dict[tuple[int, int], float]:
    """Per edge ``(u, w)`` of ``tree`` (plan-graph edges), the longest sum of link times
    ``T`` along a path from ``u`` through ``w`` down to a leaf: the least time from
    ``u``'s send of a slice to its arrival at every node below ``w``."""
    T = g.T.tolist()
    edges = [(int(g.src[e]), int(g.dst[e]), T[e]) for e in tree.tolist()]
    kids: dict[int, list[tuple[int, float]]] = {}
    for u, w, t in edges:
        kids.setdefault(u, []).append((w, t))
    order, stack = [], [g.root]  # the tree's nodes, parents before children
    while stack:
        u = stack.pop()
        order.append(u)
        stack += [w for w, _t in kids.get(u, ())]
    below: dict[int, float] = {}
    tail: dict[tuple[int, int], float] = {}
    for u in reversed(order):
        most = 0.0
        for w, t in kids.get(u, ()):
            tail[(u, w)] = t + below[w]
            most = max(most, tail[(u, w)])
        below[u] = most
    return tail


def horizon(g: PlanGraph, trees: list[np.ndarray], share: list[int]) -> float:
    """The busiest send port's or link's time for the whole message when tree ``i``
    carries ``share[i]`` slices (the message's time at the trees' rate)."""
    port = np.zeros(g.k)
    link = np.zeros(len(g.T))
    for tree, s in zip(trees, share, strict=True):
        np.add.at(port, g.src[tree], s * g.send[tree])
        link[tree] += s * g.T[tree]
    return float(max(port.max(initial=0.0), link.max(initial=0.0)))


def critical_links(g: PlanGraph, trees: list[np.ndarray], share: list[int]) -> np.ndarray | None:
    """Per edge, whether its link is critical when tree ``i`` carries ``share[i]`` slices:
    busy at least :data:`CRITICAL` of :func:`horizon`, and longer than its sender's port
    (which then has time to wait for it); None when no link is.

    Such a link sets the message's rate, and every moment it idles with its sender
    holding a slice for it is lost at the end.  Under the list schedule's rule alone a
    link that frees while its port sends to another child waits for that send to end: on
    a Fig. 4 platform (n = 50, density 0.12, seed 2) the gap packing's slack packing
    saturates the link ``48 -> 28`` (its ``T`` 2.83 sends of its port, which is busy 71 %
    of the time), which idles 0.34 s of an 8.35 s run that way (1 024 slices)."""
    port = np.zeros(g.k)
    link = np.zeros(len(g.T))
    for tree, s in zip(trees, share, strict=True):
        np.add.at(port, g.src[tree], s * g.send[tree])
        link[tree] += s * g.T[tree]
    busy = float(max(port.max(initial=0.0), link.max(initial=0.0)))
    out = (link >= CRITICAL * busy) & (link > port[g.src] * (1 + 1e-9)) & (link > 0)
    return out if np.any(out) else None


def gap_bound(g: PlanGraph, trees: list[np.ndarray], share: list[int]) -> float:
    """A lower bound on the span of every list schedule (:func:`multi_port_transfers`) of
    the message when tree ``i`` carries ``share[i]`` slices, from the gaps that whole sends
    leave in a port whose link is a fraction of a send longer than whole sends (the rows
    of :func:`~hetcoll.planners.port_slots.gap_problem`, which asks each port's sends to
    be the same; here ``s`` is the node's shortest send); 0 where no link is such.

    Let node ``u`` send ``n`` slices, ``m`` of them over an edge ``e`` whose link time is
    ``tau s``, ``j < tau < j + 1`` for a whole ``j >= 1``.  Then the span is at least
    ``a n + b m`` with ``a = (j + 1 - tau) s`` and ``b = (tau - j (j + 1 - tau)) s``.
    Proof: the sends of ``u`` start one after the other from 0, each holding the port at
    least ``s``; each send over ``e`` holds the link ``tau s`` from its start, so the next
    one over ``e`` starts ``tau s`` later at the soonest.  Cut the time at the starts of
    the sends over ``e``: before the first, ``w`` sends take at least ``w s >= w a``; from
    each start over ``e`` to the next (after the last, to the span, which is at least
    every transfer's end and every port's release), a stretch holding ``w >= 1`` sends of
    ``u`` lasts at least ``max(w, tau) s``, and ``max(w, tau) >= tau + (w - j)(j + 1 -
    tau)`` (equal at ``w = j`` and ``w = j + 1``, a line of slope below 1 through
    ``(j, tau)``), which is ``b / s`` plus ``a / s`` per send.  Summed: ``a n + b m``
    (``b >= 0`` as ``tau >= j``).  The port's own bound is ``s n``; this one is above it
    where the link is busy most of the time: whole sends cannot keep both busy.  At
    n = 50, seed 2, 10^4 slices (``benchmarks/simulated/bench_sizes.py --model
    multi_port``), the optimal packing's trees, whose list schedule ends 4.7 % after the
    fastest way's, have a link of ``tau = 1.39`` that puts it 4.3 % above that way's span.
    O(edges of the trees)."""
    send, T, src = g.send.tolist(), g.T.tolist(), g.src.tolist()
    over: dict[int, int] = {}  # slices per edge
    for tree, s in zip(trees, share, strict=True):
        for e in tree.tolist():
            over[e] = over.get(e, 0) + s
    least: dict[int, float] = {}  # per sender, its shortest send
    sends: dict[int, int] = {}  # per sender, its sends
    for e, m in over.items():
        u = src[e]
        least[u] = min(least.get(u, math.inf), send[e])
        sends[u] = sends.get(u, 0) + m
    most = 0.0
    for e, m in over.items():
        s = least[src[e]]
        if not s > 0:
            continue
        tau = T[e] / s
        j = math.floor(tau * (1 + 1e-9))
        if j < 1 or tau - j <= 1e-9 * tau:  # no longer than a send, or whole sends
            continue
        a, b = (j + 1 - tau) * s, (tau - j * (j + 1 - tau)) * s
        most = max(most, a * sends[src[e]] + b * m)
    return most


def multi_port_transfers(
    g: PlanGraph,
    trees: list[np.ndarray],
    share: list[int],
    patience: float = 0.0,
    beat: float = math.inf,
    critical: np.ndarray | None = None,
) -> tuple[list[tuple[float, int, int, int, int]], float] | None:
    """The message's transfers ``(start, sender, receiver, tree, slice)`` list scheduled
    under a port per link, in the order they start, and when the last ends.

    A transfer over ``u -> v`` keeps ``u``'s port busy ``send_uv`` and the link ``T_uv``
    from its start, and ``v`` holds the slice at its end (the ``multi_port`` model).
    Whenever ``u``'s port is free and ``u`` holds a slice for a child, it takes, among the
    slices it holds, the one whose link frees first (ties: the least latest start, see
    the module docstring; a link that frees within ``patience`` times the send of now
    counts as free) and holds its port until that link is free: the simulator's send
    rule (:mod:`hetcoll.simulator`) for a node sending in this order, so the self-timed
    run of the schedule whose order it is ends exactly at the span
    (``tests/test_planners_multi_tree_multiport.py``).  A node that waits for a free link
    with its port free instead would send in an order the run does not keep: on a Fig. 4
    platform, n = 50, seed 0, 1 024 slices, that list schedule would end at 88.0 % of the
    bound and its run at 84.2 %.

    With ``beat``: None as soon as the schedule is sure to end after ``beat`` (by more
    than :data:`MARGIN` of it), so that of several list schedules the one that ends first
    is found without running the others to their end.  The bound, after each send of a
    node ``u``: ``u``'s port is busy its sends left (each slice of each tree it still
    sends to each of its children in that tree, ``send`` each) one after the other from
    its release, and the last of them ends (at its receiver) no sooner than ``T - send``
    of some edge of ``u`` (at most 0) after its port's release.  On a Fig. 4 platform,
    n = 50, seed 0, the two trials of 1 024 slices that end 5 % later than the best were
    found slower 56-60 % of the way through.  Before the list schedule starts, also the
    bound of the gaps whole sends leave in the ports (:func:`gap_bound`): at n = 50,
    seed 2, 10^4 slices, the optimal packing's list schedule, which ends 4.7 % after the
    fastest way's, is found slower before it starts, where the ports alone find it 39 %
    of the way through (a third of a second of CPU).

    With ``critical`` (per edge, :func:`critical_links`), a node whose choice is a slice
    over a link that is not critical, and which holds a slice for a critical link that
    frees during that send, sends over the critical link instead (holding its port until
    that link frees, the earliest such; ties the first child listed): its port idles
    less than a send so that the link sets the message's rate does not.  On a Fig. 4
    platform, n = 50, seed 2, the gap packing's slack packing with :data:`~hetcoll.
    planners.port_slots.PATIENCE` lists 1 024 slices in 92.2 % of the bound without it,
    94.5 % with it, and 8 192 slices in 93.4 % and 97.1 %."""
    if beat < math.inf and gap_bound(g, trees, share) > beat + abs(beat) * MARGIN:
        return None  # (sure to end after beat before it starts)
    k = g.k
    T, send = g.T.tolist(), g.send.tolist()
    kids, waiting = tree_children(g, trees)
    tails = [tail_times(g, tree) for tree in trees]
    busy = horizon(g, trees, share)
    due = [busy / s for s in share]
    root = g.root
    edge = {(u, w): e for e, (u, w) in enumerate(zip(g.src.tolist(), g.dst.tolist(), strict=True))}
    # per node, its children's queues in waiting's order (the ties' order): (queue, edge,
    # the edge's patience in seconds); per tree and node, the queues a slice it receives
    # joins, with their tails (None at a leaf)
    dst = g.dst.tolist()
    outs = [
        [(heap, edge[(u, w)], patience * send[edge[(u, w)]]) for w, heap in waiting[u].items()]
        for u in range(k)
    ]
    crit = [False] * len(T) if critical is None else [bool(c) for c in critical]
    # per node, its critical links' queues and edges (most nodes: none)
    crits = [[(heap, e) for heap, e, _within in outs[u] if crit[e]] for u in range(k)]
    fwd: list[list] = [[None] * k for _ in trees]
    for i in range(len(trees)):
        for v, ws in kids[i].items():
            fwd[i][v] = [(waiting[v][w], tails[i][(v, w)]) for w in ws]
    for i, s in enumerate(share):
        for v in kids[i].get(root, ()):
            tail = tails[i][(root, v)]
            waiting[root][v] += [((q + 0.5) * due[i] - tail, i, q) for q in range(s)]
    for heap in waiting[root].values():
        heapq.heapify(heap)
    heappush, heappop = heapq.heappush, heapq.heappop
    free_s = [0.0] * k
    free_link = [0.0] * len(T)
    # (time, sender) when a send port frees; (time, receiver, tree, slice, the receiver's
    # queues for it) when a transfer ends (its sender need not look again: it chose knowing
    # when the link frees)
    events: list[tuple] = []
    transfers: list[tuple[float, int, int, int, int]] = []
    append = transfers.append
    bounded = beat < math.inf
    left, slack = [0.0] * k, [0.0] * k  # per node: its port's seconds of sends left; T - send
    limit = beat + abs(beat) * MARGIN
    if bounded:
        src = g.src.tolist()
        for tree, s in zip(trees, share, strict=True):
            for e in tree.tolist():
                left[src[e]] += s * send[e]
                slack[src[e]] = min(slack[src[e]], T[e] - send[e])

    def take(u: int, t: float) -> None:
        """``u``'s sends at ``t`` while its port is free and it holds a slice: the slice
        of least ``(soon, latest start, start)``, ties the first child listed.  A link
        free within its patience has ``soon == t``, before every other: the least
        ``(latest start, start)`` of those, else of the others the least ``(start,
        latest start)`` (there ``soon == start``)."""
        while free_s[u] <= t:
            rb = lb = None  # the best with a free link, and of the others
            rh, rs, re, lh, ls, le = (), 0.0, -1, (), 0.0, -1
            for heap, e, within in outs[u]:
                if heap:
                    free = free_link[e]
                    if free <= t + within:
                        h = heap[0]
                        start = free if free > t else t
                        if rb is None or h < rh or (h == rh and start < rs):
                            rb, rh, rs = heap, h, start
                            re = e
                    elif rb is None and (lb is None or free < ls or (free == ls and heap[0] < lh)):
                        lb, lh, ls = heap, heap[0], free
                        le = e
            if rb is None:
                if lb is None:
                    return
                rb, rs, re = lb, ls, le
            if crits[u] and not crit[re]:  # a critical link that frees during this send
                ends, wait = rs + send[re], None
                for heap, e in crits[u]:
                    free = free_link[e]
                    if heap and rs < free < ends:
                        ends, wait = free, (heap, e)
                if wait is not None:
                    (rb, re), rs = wait, ends
            _key, i, q = heappop(rb)
            bv = dst[re]
            append((rs, u, bv, i, q))
            free_s[u] = released = rs + send[re]
            free_link[re] = end = rs + T[re]
            if bounded:
                left[u] -= send[re]
                if released + left[u] + slack[u] > limit:
                    raise _Slower
            heappush(events, (released, u))
            forward = fwd[i][bv]
            if forward:  # (its queues: never compared, the slice arrives there once)
                heappush(events, (end, bv, i, q, forward))
            elif end > leaves[0]:  # a leaf's: nothing to do then but end the span
                leaves[0] = end

    def arrive(v: int, i: int, q: int) -> bool:
        """Slice ``q`` of tree ``i`` is at ``v``: queued for its children there; whether
        it has any."""
        forward = fwd[i][v]
        if not forward:
            return False
        base = (q + 0.5) * due[i]
        for heap, tail in forward:
            heappush(heap, (base - tail, i, q))
        return True

    # At each instant every event of that instant is taken first, then each node whose
    # port is free sends (in node order), so a node whose port is free never holds a
    # slice between instants: the link that frees when a transfer ends changes no choice
    # of its sender, which took the link's release into account when it chose.
    t = 0.0  # the events come in time order: the last one's is the span's
    leaves = [0.0]  # the last end of a transfer to a leaf of its tree

    try:
        take(root, 0.0)
        while events:
            event = heappop(events)
            t = event[0]
            if not events or events[0][0] > t:  # the instant's only event (most of them)
                if len(event) == 2:
                    take(event[1], t)
                else:
                    _t, v, i, q, forward = event
                    base = (q + 0.5) * due[i]
                    for heap, tail in forward:
                        heappush(heap, (base - tail, i, q))
                    if free_s[v] <= t:
                        take(v, t)
                continue
            check = set()
            while True:
                if len(event) == 2:
                    check.add(event[1])
                else:
                    _t, v, i, q, _forward = event
                    if arrive(v, i, q):
                        check.add(v)
                if not events or events[0][0] > t:
                    break
                event = heappop(events)
            for u in sorted(check):
                take(u, t)
    except _Slower:
        return None
    transfers.sort(key=itemgetter(0))
    return transfers, max(t, leaves[0])
