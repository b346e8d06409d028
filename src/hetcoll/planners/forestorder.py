"""The order in which the ranks of per-root flows send: a play-out of the flows' segments on
the packing's resources (the steady state of Zhao et al. 2024, ForestColl, Sec. 5, realised
segment by segment).

A rank that issues its sends in a fixed order loses time whenever the send it issues next
waits for a busy link while another of its links idles (head-of-line blocking); on a
saturated packing that idle time is never made up (a 16-node random link graph ran its
allgather at 1.98x the optimum so).  :func:`per_root_order` therefore plays the flows out
first on the resources of the packing's LP (:func:`hetcoll.planners.forest.forest_problem`:
each transfer of a segment holds its sender's send port, its receiver's receive port, its
link or NICs for its busy times there): whenever a transfer's busiest resource is free it
starts the most urgent transfer ready for it, urgency being the segment's place in its
tree's share (segment ``k`` of ``S`` at ``(k + 1/2) / S``: every tree advancing at its
rate; a flow whose segments are of several sizes, its ``cuts``: the place of the segment's
middle byte in the share).  A reduce-scatter's receiver combines in the order its transfers started.

Given a *horizon* ``H`` (seconds: the packing's bound), urgency is a latest start instead:
``H (k + 1/2) / S - LEAD * D``, ``D`` the transfer's way to the end of its tree (its own
time plus its longest path onward, each hop at the edge's time for the segment, nothing in
its way), :data:`LEAD` times over for the waits on the way.  A segment near the root of a
deep tree then goes before one of the same place near a leaf: the links deep in a tree
are otherwise idle at the start, waiting for data (on the 64-node graph of
``benchmarks/simulated/bench_packing.py`` the links into the node that finished last idled
a quarter of the first tenth of the run), and a saturated link never makes it up.

The rank of each transfer's start is its *slot* (:class:`~hetcoll.patterns.OrderedSend`).
Lowered in slot order with each rank's sends one after the other
(:func:`hetcoll.perroot.per_root_program`), the simulator replays the play-out exactly when
the model's resources are those of the LP (multi-port links without send costs: every send
is taken by its port the moment the play-out started it).

Given ``above`` (seconds: the fastest play-out a planner has already), a play-out stops as
soon as it is proved slower: each resource ends no earlier than when it is next free plus
the busy time of the transfers still to start on it, and where every transfer arrives no
earlier than it leaves each of its resources (a transfer's delay at least its busy times:
bandwidth-only link graphs), the play-out ends no earlier than the largest of those.  Its
time is then infinite and it has no order: the planner keeps the same play-out, for less
work (:func:`hetcoll.planners.forestplan.forest` plays out up to three cuts).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from heapq import heappop, heappush, heappushpop
from operator import add
from typing import Any

import numpy as np

from ..patterns import Flow, OrderedSend
from ..platform import Platform
from ..simulator.predict import gc_paused
from .forest import forest_problem

__all__ = ["PlayOut", "per_root_order"]

#: event kinds, in the order they are handled at one time
_ARRIVED, _READY, _FREE = 0, 1, 2
#: an event is ``(time, kind * _KIND + seq, what)``: ordered as ``(time, kind, seq)`` (the
#: sequence numbers stay below it), one integer compared where times tie
_KIND = 1 << 40
#: given a horizon, a transfer's urgency is its segment's place in the horizon less this
#: many times its way to the end of its tree, nothing in its way (module docstring): the
#: planned allgather's and reduce-scatter's time over the optimum at 64 nodes
#: (``bench_packing.py``) over the column generation's trees, without the shallower
#: rebuild (``forestshallow.py``): 1.079 and 1.0955 without the urgency, 1.054 and 1.064
#: at 2, 1.064 and 1.064 at 3; and the allgather's cut played out at 1 and 4: 1.066, 1.074
LEAD = 2.0


class _Costs:
    """Per edge ``(u, v)`` and size: the resources a transfer holds, for how long, and its
    delay; affine in the size between the model's costs at two sizes (exact for the affine
    models)."""

    def __init__(self, platform: Platform, size: int, model: Any, direction: str) -> None:
        self.lo, self.hi = max(size // 2, 1), max(size, 2)
        lo = forest_problem(platform, self.lo, model, direction)
        hi = forest_problem(platform, self.hi, model, direction)
        self.index = {
            (int(a), int(b)): e for e, (a, b) in enumerate(zip(hi.src, hi.dst, strict=True))
        }
        a, b = lo.usage.tocsc(), hi.usage.tocsc()
        self.a, self.b = a, b
        self.ta, self.tb = np.asarray(lo.T, dtype=float), np.asarray(hi.T, dtype=float)
        self.cache: dict[
            tuple[int, int], tuple[tuple[int, ...], tuple[float, ...], float, int]
        ] = {}
        # per edge: its resources and their busy times at both sizes (most segment sizes
        # are a flow's own, so most calls of :meth:`of` miss the cache above)
        self.cols: dict[int, tuple[tuple[int, ...], list[tuple[float, float]], float, float]] = {}

    def of(
        self, u: int, v: int, nbytes: int
    ) -> tuple[tuple[int, ...], tuple[float, ...], float, int]:
        """``(resources, busy times, delay, busiest resource)`` of ``nbytes`` over ``u -> v``."""
        e = self.index[(u, v)]
        got = self.cache.get((e, nbytes))
        if got is not None:
            return got
        at = self.cols.get(e)
        if at is None:
            a, b = self.a, self.b
            col: dict[int, list[float]] = {}
            for m, w in ((a, 0), (b, 1)):
                for k in range(m.indptr[e], m.indptr[e + 1]):
                    col.setdefault(int(m.indices[k]), [0.0, 0.0])[w] = float(m.data[k])
            rows = tuple(sorted(col))
            ta, tb = float(self.ta[e]), float(self.tb[e])
            at = self.cols[e] = (rows, [(col[r][0], col[r][1]) for r in rows], ta, tb)
        rows, ends, ta, tb = at
        f = (nbytes - self.lo) / (self.hi - self.lo)
        busy = tuple([max(0.0, x + f * (y - x)) for x, y in ends])
        delay = max(0.0, ta + f * (tb - ta))
        if len(rows) == 1:  # (one resource: a link of a bandwidth-only link graph)
            primary = rows[0]
        elif rows:  # the busiest, the first of equals
            top = max(range(len(busy)), key=busy.__getitem__)
            primary = rows[top]
        else:
            primary = -1 - u
        got = self.cache[(e, nbytes)] = (rows, busy, delay, primary)
        return got


class _Spans:
    """A root's reduced spans ``(lo, hi, transfer)`` sorted by ``lo``, with the longest
    span's length: the spans meeting ``[lo, hi)`` are found by bisection, in O(log S + k)
    rather than by a scan of all ``S`` (which made the play-out quadratic in segments)."""

    def __init__(self, spans: list[tuple[int, int, int]]) -> None:
        self.spans = sorted(spans)
        self.starts = [a for a, _, _ in self.spans]
        self.longest = max((b - a for a, b, _ in self.spans), default=0)

    def meeting(self, lo: int, hi: int) -> list[int]:
        first = bisect_right(self.starts, lo - self.longest)
        last = bisect_left(self.starts, hi)
        return [y for a, b, y in self.spans[first:last] if a < hi and lo < b]


def _overlapping(
    cache: dict[str, _Spans],
    finals: dict[str, list[tuple[int, int, int]]],
    v: str,
    lo: int,
    hi: int,
) -> list[int]:
    """The reduce transfers into ``v`` whose bytes meet ``[lo, hi)``, in ``lo`` order (every
    reduce flow is listed before the broadcast flows that read its spans)."""
    spans = cache.get(v)
    if spans is None or len(spans.spans) != len(finals.get(v, ())):
        spans = cache[v] = _Spans(finals.get(v, []))
    return spans.meeting(lo, hi)


class PlayOut:
    """A play-out's result: ``order`` (each node's sends, one listing per segment, with its
    slot), ``time`` (when its last transfer has arrived and been combined, seconds),
    ``arrived`` (each listing's arrival, seconds, in ``order``'s places) and ``complete``:
    every transfer started, so every slot is an int from 0 (else a slot is -1).

    ``deal``: given instead of ``order`` and ``arrived``, a function returning both, called
    on the first read of either (with the cyclic garbage collector paused): a planner that
    plays out several cuts and keeps the fastest deals out only that one's order (a
    listing per transfer, a quarter of a 131 000-transfer play-out's time)."""

    def __init__(
        self,
        order: dict[str, tuple[OrderedSend, ...]] | None,
        time: float,
        arrived: dict[str, tuple[float, ...]] | None = None,
        complete: bool = False,
        deal: Callable[[], tuple[dict, dict]] | None = None,
    ) -> None:
        self._order = order
        self._arrived = arrived or {}
        self._deal = deal
        self.time = time
        self.complete = complete

    def _dealt(self) -> None:
        if self._deal is not None:
            with gc_paused():
                self._order, self._arrived = self._deal()
            self._deal = None

    @property
    def order(self) -> dict[str, tuple[OrderedSend, ...]]:
        self._dealt()
        return self._order  # type: ignore[return-value]

    @property
    def arrived(self) -> dict[str, tuple[float, ...]]:
        self._dealt()
        return self._arrived


def per_root_order(
    platform: Platform,
    flows: Sequence[Flow],
    model: Any = None,
    costs: Any = None,
    wait: str = "busiest",
    lead: float | None = None,
    above: float | None = None,
) -> PlayOut:
    """Play per-root ``flows`` out on the platform's resources under ``model`` (module
    docstring): each node's sends in the order they started, with their slots, and the
    play-out's time.  ``costs``: the resources a transfer holds, if not the packing's LP
    (an object whose ``of(u, v, nbytes)`` answers as :meth:`_Costs.of`, with node
    indices: :mod:`hetcoll.planners.sitesorder`'s routed host pairs).  ``wait``: a
    transfer whose busiest resource is free starts at once, its other resources booked
    from when they are free (``"busiest"``), or only once every one of its resources is
    free, else it waits at the one free last (``"all"``: no resource is booked ahead and
    left idle meanwhile).  ``lead``: the horizon (seconds) of the latest-start urgency
    (module docstring); None: each segment's place in its flow.  ``above``: stop once
    proved slower than this many seconds (module docstring; then ``time`` is infinite and
    the order empty).  O(T log T) for T transfers, with the cyclic garbage collector
    paused (:func:`hetcoll.simulator.predict.gc_paused`: a play-out allocates a few objects
    per transfer, and the collections they trigger scanned them all again and again, a
    third of a 16-node allgather's planning)."""
    with gc_paused():
        return _play(platform, flows, model, costs, wait, lead, above)


def _way(
    got: Sequence[tuple[Any, Any, float, int]], links: Sequence[tuple[int, int]]
) -> list[float]:
    """Each transfer's way to the end of its tree, one segment's transfers ``got`` (their
    costs: the delay third) with ``links`` (``(a, b)``: ``b`` waits for ``a``): its delay
    plus the longest way of those waiting for it (seconds)."""
    onward: list[list[int]] = [[] for _ in got]
    waits = [0] * len(got)
    for a, b in links:
        onward[a].append(b)
        waits[b] += 1
    order, stack = [], [j for j in range(len(got)) if waits[j] == 0]
    while stack:  # a topological order: every transfer before those waiting for it
        a = stack.pop()
        order.append(a)
        for b in onward[a]:
            waits[b] -= 1
            if waits[b] == 0:
                stack.append(b)
    way = [0.0] * len(got)
    for a in reversed(order):
        way[a] = got[a][2] + max((way[b] for b in onward[a]), default=0.0)
    return way


def _play(
    platform: Platform,
    flows: Sequence[Flow],
    model: Any,
    costs: Any,
    wait: str,
    lead: float | None = None,
    above: float | None = None,
) -> PlayOut:
    """:func:`per_root_order`'s play-out: :func:`_run`'s transfers dealt out to their
    senders in slot order, on the first read of the order (:class:`PlayOut`)."""
    who, slot, arrival, end = _run(platform, flows, model, costs, wait, lead, above)
    if end == math.inf:  # proved slower than ``above``: nothing to deal out
        return PlayOut({}, end, {}, complete=False)

    def deal() -> tuple[dict, dict]:
        order: dict[str, list[OrderedSend]] = {}
        times: dict[str, list[float]] = {}
        for x in _by_slot(slot):
            fi, u, v = who[x]
            sends = order.get(u)
            if sends is None:
                sends = order[u] = []
                times[u] = []
            sends.append(OrderedSend(fi, v, 0, slot[x]))
            times[u].append(arrival[x])
        out = {u: tuple(order[u]) for u in sorted(order)}
        return out, {u: tuple(times[u]) for u in out}

    return PlayOut(None, end, complete=min(slot, default=0) >= 0, deal=deal)


def _by_slot(slot: list[int]) -> list[int]:
    """The transfers in slot order, those never started (slot -1) first: a stable sort by
    slot, as a permutation's inverse where every transfer started (the slots are then
    0 .. T - 1, each once)."""
    if min(slot, default=0) < 0:
        return sorted(range(len(slot)), key=slot.__getitem__)
    inverse = [0] * len(slot)
    for x, k in enumerate(slot):
        inverse[k] = x
    return inverse


#: a play-out given ``above`` checks whether it is proved slower every this many starts
_CHECK = 1024


def _work(uses: Sequence[tuple[list, int]], count: int) -> list[float] | None:
    """Per resource, the busy time of every transfer on it, the transfers given as their
    segments' cost lists with how many segments use each (``uses``: the transfers share
    their cost tuples, one per edge and size, and a flow's segments of one size their
    list); None when some transfer arrives before it leaves one of its resources (its
    delay less than a busy time): then the end of a resource's work does not bound the
    play-out's.  O(distinct lists times their length), not O(transfers)."""
    times: dict[int, int] = {}
    kinds: dict[int, Any] = {}
    for got, k in uses:  # each tuple counted as often as it is a transfer's
        for c in got:
            i = id(c)
            if i in times:
                times[i] += k
            else:
                times[i] = k
                kinds[i] = c
    left = [0.0] * count
    for i, (rows, busy, delay, _) in kinds.items():
        if busy and max(busy) > delay * (1 + 1e-12):
            return None
        for rr, b in zip(rows, busy, strict=False):
            left[rr] += b * times[i]
    return left


def _proved_slower(free: list[float], left: list[float], above: float) -> bool:
    """Whether every way on ends after ``above``: some resource, free from ``free[r]``,
    still has ``left[r]`` seconds of transfers to start, each arriving no earlier than it
    leaves the resource (:func:`_work`), so the play-out ends at ``free[r] + left[r]`` or
    later (a margin of 1e-9 for the sums' rounding)."""
    return max(map(add, free, left), default=0.0) > above * (1 + 1e-9)


def _run(
    platform: Platform,
    flows: Sequence[Flow],
    model: Any,
    costs: Any,
    wait: str,
    lead: float | None = None,
    above: float | None = None,
) -> tuple[list[tuple[int, str, str]], list[int], list[float], float]:
    """The play-out itself: every transfer ``(flow, sender, receiver)``, its slot and its
    arrival (seconds), and the play-out's time: infinite once proved more than ``above``
    (:func:`_proved_slower`; only where the bound holds: no reduce flow, whose
    dependencies may leave a transfer never started, and every transfer's delay at least
    its busy times)."""
    ids = platform.ids
    idx = {v: i for i, v in enumerate(ids)}
    size = max((f.segment_size or f.nbytes or 1) for f in flows)
    reduces = any(f.kind == "reduce" for f in flows)
    if costs is None:
        costs = _Costs(platform, size, model, "in" if reduces else "out")
    gamma = np.asarray(platform.gamma, dtype=float)
    # transfers: (flow, sender, receiver) and their bytes, urgency, costs, dependencies
    who: list[tuple[int, str, str]] = []
    nbytes: list[int] = []  # (only where some flow reduces: its combine times)
    urgency: list[tuple[float, int, int]] = []
    cost: list[tuple[tuple[int, ...], tuple[float, ...], float, int]] = []
    need: list[int] = []  # dependencies still to complete
    # the transfers waiting on each one: ``after_at[x] + j`` for ``j`` in ``after_on[x]``
    # (its segment's first transfer and its flow's list, shared by the segments), then
    # ``extra[x]`` (a broadcast's transfers waiting on the reduce transfer ``x``)
    after_at: list[int] = []
    after_on: list[list[int]] = []
    extra: dict[int, list[int]] = {}
    blocks: list[tuple[int, int, int]] = []  # per flow: its first transfer, m, segments
    finals: dict[str, list[tuple[int, int, int]]] = {}  # root -> (lo, hi, transfer) into it
    uses: dict[int, list] = {}  # id of a segment's cost list -> [the list, its segments]
    spans_at: dict[str, _Spans] = {}  # root -> its finals sorted, for lookups by range
    for fi, f in enumerate(flows):
        # one segment's transfers (u, v), each one's dependencies within the segment
        # (a, b: b waits for a) and, broadcasting, those sent by a node that receives
        # nothing in the tree (an allreduce's root sends bytes once it has reduced them);
        # every segment repeats them
        parent, kids, root = f.tree.parent(), f.tree.children, f.tree.root
        pairs: list[tuple[str, str]] = []
        links: list[tuple[int, int]] = []
        tops: list[tuple[int, str]] = []
        into: list[int] = []
        if f.kind == "reduce":
            pairs = [(v, parent[v]) for v in f.tree.nodes if v in parent]
            local = {v: j for j, (v, _) in enumerate(pairs)}
            links = [(local[c], j) for j, (v, _) in enumerate(pairs) for c in kids.get(v, ())]
            into = [local[c] for c in kids.get(root, ())]
        else:
            down: dict[str, int] = {}
            for v in f.tree.nodes:
                for c in kids.get(v, ()):
                    down[c] = j = len(pairs)
                    pairs.append((v, c))
                    if v in down:
                        links.append((down[v], j))
                    else:
                        tops.append((j, v))
        trio = [(fi, u, v) for u, v in pairs]
        ends = [(idx[u], idx[v]) for u, v in pairs]
        m = len(pairs)
        onward: list[list[int]] = [[] for _ in range(m)]  # each one's dependents, by links
        waits = [0] * m  # each one's dependencies within the segment
        for a, b in links:
            onward[a].append(b)
            waits[b] += 1
        of_size: dict[int, list] = {}
        way_of: dict[int, list[float]] = {}
        segs = f.segments()
        cut, done = bool(getattr(f, "cuts", ())), 0
        blocks.append((len(who), m, len(segs)))
        for k, (lo, n) in enumerate(segs):
            if cut:  # segments of several sizes: the place of the segment's middle byte
                key = ((done + n / 2) / max(f.nbytes, 1), fi, k)
                done += n
            else:
                key = ((k + 0.5) / len(segs), fi, k)
            hi = lo + max(n, 1)
            base = len(who)
            who.extend(trio)
            if reduces:
                nbytes.extend([n] * m)
            need.extend(waits)
            after_at.extend([base] * m)
            after_on.extend(onward)
            got = of_size.get(n)
            if got is None:
                got = of_size[n] = [costs.of(u, v, n) for u, v in ends]
                uses[id(got)] = [got, 0]
            uses[id(got)][1] += 1
            if lead is None:
                urgency.extend([key] * m)
            else:
                way = way_of.get(n)
                if way is None:
                    way = way_of[n] = [LEAD * w for w in _way(got, links)]
                due = lead * key[0]
                urgency.extend([(due - w, fi, k) for w in way])
            cost.extend(got)
            if f.kind == "reduce":
                finals.setdefault(root, []).extend((lo, hi, base + j) for j in into)
                continue
            for j, v in tops if finals else ():  # (no reduce flow: no spans to wait for)
                for y in _overlapping(spans_at, finals, v, lo, hi):
                    extra.setdefault(y, []).append(base + j)
                    need[base + j] += 1
    # per resource (an index; a transfer that holds none waits at ``-1 - sender``, a
    # negative index, past the resources' from the list's end): free from, the ready
    # transfers it is the busiest of (by urgency), the time of its one pending _FREE event
    kinds = {id(c): c for got, _ in uses.values() for c in got}.values()  # (in cost order)
    count = 1 + max((max(c[0]) for c in kinds if c[0]), default=-1)
    count += max(0, -min((c[3] for c in kinds), default=0))
    free = [0.0] * count
    # per resource: the busy time of the transfers still to start on it (``above`` only)
    left = _work(list(uses.values()), count) if above is not None and not reduces else None
    check = _CHECK if left is not None else -1
    queue: list[list[tuple[tuple[float, int, int], int]]] = [[] for _ in range(count)]
    inf = np.inf
    wake = [inf] * count
    events: list[tuple[float, int, int]] = []  # (time, kind and seq, transfer or resource)
    seq = 0

    def push(t: float, kind: int, what: int) -> None:
        nonlocal seq
        seq += 1
        heappush(events, (t, kind * _KIND + seq, what))

    def ask(r: int, t: float) -> None:
        if wake[r] > t:
            wake[r] = t
            push(t, _FREE, r)

    # the segments of one send start in segment order (the order's j-th listing of a send
    # is its j-th segment, and a rank waits for its bytes in that order): a segment ready
    # before the previous one has started waits for that start
    # (a flow's segments are consecutive runs of its m transfers, in one order)
    earlier, later = [-1] * len(who), [-1] * len(who)
    for first, m, count_k in blocks:
        if count_k > 1 and m:
            span = first + m * count_k
            earlier[first + m : span] = range(first, span - m)
            later[first : span - m] = range(first + m, span)
    held = [False] * len(who)
    for x in range(len(who)):
        if need[x] == 0:
            push(0.0, _READY, x)
    combined = dict.fromkeys(ids, 0.0)  # when each node's last combine ends
    # a reduce transfer's combine time at its receiver (None: no combine)
    if reduces:
        combine = [
            float(gamma[idx[v]]) * n if flows[fi].kind == "reduce" else None
            for (fi, _, v), n in zip(who, nbytes, strict=True)
        ]
    else:
        combine = [None] * len(who)
    busiest = [c[3] for c in cost]
    slot = [-1] * len(who)
    arrival = [0.0] * len(who)
    started, end = 0, 0.0
    every = wait == "all"
    # the loop below inlines push() and ask() (a third of its time as calls), and reads
    # the heap's functions and the event kinds as locals (no global look-ups)
    hpop, hpush, pushpop = heappop, heappush, heappushpop
    ready_, free_ = _READY * _KIND, _FREE * _KIND
    while events:
        t, code, what = hpop(events)
        if code < ready_:  # `what` arrived (and is combined): release its dependents
            b0 = after_at[what]
            for j in after_on[what]:
                y = b0 + j
                need[y] -= 1
                if need[y] == 0:
                    seq += 1
                    hpush(events, (t, ready_ + seq, y))
            for y in extra.get(what, ()) if extra else ():
                need[y] -= 1
                if need[y] == 0:
                    seq += 1
                    hpush(events, (t, ready_ + seq, y))
            continue
        if code >= free_:
            r = what
            if wake[r] != t:
                continue  # superseded by an earlier one
            wake[r] = inf
            q = queue[r]
            if not q:
                continue
            fr = free[r]
            if fr > t:  # busy (held for a transfer started meanwhile): ask again then
                if wake[r] > fr:
                    wake[r] = fr
                    seq += 1
                    hpush(events, (fr, free_ + seq, r))
                continue
            x = hpop(q)[1]  # the most urgent
        else:  # wait for its busiest resource
            e = earlier[what]
            if e >= 0 and slot[e] < 0:
                held[what] = True
                continue
            r = busiest[what]
            q = queue[r]
            fr = free[r]
            if fr > t:  # busy (perhaps held for another transfer): ask again then
                hpush(q, (urgency[what], what))
                if wake[r] > fr:
                    wake[r] = fr
                    seq += 1
                    hpush(events, (fr, free_ + seq, r))
                continue
            # the most urgent of the queue and itself (no queue: itself; the keys are
            # distinct, so the one popped does not depend on the heap's layout)
            x = pushpop(q, (urgency[what], what))[1] if q else what
        rows, busy, delay, _ = cost[x]
        if every:
            late = max(rows, key=lambda rr: (free[rr], rr))
            if free[late] > t:  # another of its resources is busy: wait there
                hpush(queue[late], (urgency[x], x))
                ask(late, free[late])
                if q:
                    ask(r, t)
                continue
        start = t
        for rr in rows:
            fr = free[rr]
            if fr > start:
                start = fr
        if left is None:
            for rr, b in zip(rows, busy, strict=False):  # (as long: a busy time per resource)
                free[rr] = start + b
        else:
            for rr, b in zip(rows, busy, strict=False):
                free[rr] = start + b
                left[rr] -= b
        slot[x] = started
        started += 1
        if started == check:
            check += _CHECK
            if _proved_slower(free, left, above):  # type: ignore[arg-type]
                return who, slot, arrival, math.inf
        y = later[x]
        if y >= 0 and held[y]:
            held[y] = False
            seq += 1
            hpush(events, (start, ready_ + seq, y))
        done = start + delay
        c = combine[x]
        if c is not None:  # the receiver combines in slot order
            v = who[x][2]
            done = max(done, combined[v]) + c
            combined[v] = done
        if done > end:
            end = done
        arrival[x] = done
        if after_on[x] or x in extra:  # (an arrival nobody waits for releases nothing)
            seq += 1
            hpush(events, (done, seq, x))  # (arrived: kind 0)
        if q:
            fr = free[r] if rows else start
            tt = fr if fr > t else t
            if wake[r] > tt:
                wake[r] = tt
                seq += 1
                hpush(events, (tt, free_ + seq, r))
    return who, slot, arrival, end
