"""The whole message's list schedules (``message_transfers``, ``justify``'s passes) and a
timetable's order check against plain references: every node (port) looked at at every
instant, the transfers (activities) that end together grouped by a dict.  Their event
loops keep a heap of (end, ...) under way and look only at what an instant frees; with
whole-number times many transfers end together, so the instants where several do (their
other branch) are exercised too."""

from __future__ import annotations

import heapq
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.errors import ScheduleError
from hetcoll.patterns import Flow, OrderedSend, Tree
from hetcoll.planners.justify import _scheduled
from hetcoll.planners.message_schedule import message_transfers, tree_children
from hetcoll.schedule import Schedule


def _graph(k: int, times: list[int], root: int = 0) -> SimpleNamespace:
    """The complete digraph on ``k`` nodes, edge ``(u, v)`` taking ``times[...]`` seconds."""
    pairs = [(u, v) for u in range(k) for v in range(k) if u != v]
    src = np.array([u for u, _ in pairs], dtype=np.int64)
    dst = np.array([v for _, v in pairs], dtype=np.int64)
    T = np.array([float(times[e % len(times)]) for e in range(len(pairs))])
    return SimpleNamespace(k=k, src=src, dst=dst, T=T, root=root)


def _tree(g: SimpleNamespace, parents: list[int]) -> np.ndarray:
    """The edges of the arborescence where node ``order[j]`` hangs under ``parents[j]``."""
    index = {(int(u), int(v)): e for e, (u, v) in enumerate(zip(g.src, g.dst, strict=True))}
    return np.array([index[(p, v)] for v, p in enumerate(parents) if v != g.root])


def _reference_transfers(g, trees, share):
    """``message_transfers`` as its docstring says it, every node looked at each instant."""
    k = g.k
    T = {(int(g.src[e]), int(g.dst[e])): float(g.T[e]) for e in range(len(g.src))}
    kids, waiting = tree_children(g, trees)
    work = [0.0] * k
    for i, children in enumerate(kids):
        for u, vs in children.items():
            for v in vs:
                work[u] += share[i] * T[(u, v)]
            vs.sort()
    keys = sorted(((q + 0.5) / s, i, q) for i, s in enumerate(share) for q in range(s))
    for r, (_p, i, _q) in enumerate(keys):
        for v in kids[i].get(g.root, ()):
            heapq.heappush(waiting[g.root][v], r)
    free_s, free_r = [0.0] * k, [0.0] * k
    ending: dict[float, list[tuple[int, int]]] = {}
    out, t, span = [], 0.0, 0.0

    def pick(u):
        best = None
        for w, heap in waiting[u].items():
            if heap and free_r[w] <= t and (best is None or heap[0] < best[1][0]):
                best = (w, heap)
        return best

    while True:
        ready = [u for u in range(k) if free_s[u] <= t and pick(u) is not None]
        for u in sorted(ready, key=lambda u: (-work[u], u)):
            got = pick(u)
            if got is None:
                continue
            v, heap = got
            r = heapq.heappop(heap)
            _p, i, q = keys[r]
            out.append((t, u, v, i, q))
            free_s[u] = free_r[v] = end = t + T[(u, v)]
            work[u] -= T[(u, v)]
            ending.setdefault(end, []).append((v, r))
        if not ending:
            return out, span
        t = span = min(ending)
        for v, r in ending.pop(t):
            for w in kids[keys[r][1]].get(v, ()):
                heapq.heappush(waiting[v][w], r)


@settings(max_examples=80, deadline=None)
@given(
    k=st.integers(2, 7),
    data=st.data(),
    times=st.lists(st.integers(1, 3), min_size=1, max_size=7),
)
def test_the_message_list_schedule_equals_its_reference(k, data, times):
    g = _graph(k, times)
    count = data.draw(st.integers(1, 3))
    trees = []
    for _ in range(count):  # random arborescences: each node under an earlier one
        order = [0, *data.draw(st.permutations(range(1, k)))]
        parents = [0] * k
        for j in range(1, k):
            parents[order[j]] = order[data.draw(st.integers(0, j - 1))]
        trees.append(_tree(g, parents))
    share = data.draw(st.lists(st.integers(1, 6), min_size=count, max_size=count))
    got = message_transfers(g, trees, share)
    want = _reference_transfers(g, trees, share)
    assert got == want


def _reference_scheduled(first, second, seconds, ptr, succ, waits, priority):
    """``justify.list_schedule`` as its docstring says it: every free first port offers
    its best ready activity with a free second port, the offers start by priority, one
    whose second port an earlier offer took making way for its port's next best."""
    n = len(first)
    rank = {a: j for j, a in enumerate(np.argsort(priority, kind="stable").tolist())}
    left = [int(x) for x in waits]
    ready = {a for a in range(n) if not left[a]}
    free: dict[tuple[str, int], float] = {}
    start = [0.0] * n
    ending: dict[float, list[int]] = {}
    t = span = 0.0

    def best(x):
        mine = [a for a in ready if first[a] == x and free.get(("b", int(second[a])), 0.0) <= t]
        return min(mine, key=rank.__getitem__, default=None)

    while True:
        ports = sorted({int(first[a]) for a in ready})
        offers = []
        for x in ports:
            if free.get(("a", x), 0.0) <= t:
                a = best(x)
                if a is not None:
                    offers.append((rank[a], x))
        for _r, x in sorted(offers):
            a = best(x)
            if a is None:
                continue
            ready.discard(a)
            start[a] = t
            end = t + float(seconds[a])
            free[("a", x)] = free[("b", int(second[a]))] = end
            ending.setdefault(end, []).append(a)
        if not ending:
            return start, span
        t = span = min(ending)
        for a in ending.pop(t):
            for c in succ[ptr[a] : ptr[a + 1]].tolist():
                left[c] -= 1
                if not left[c]:
                    ready.add(c)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n=st.integers(1, 30), ports=st.integers(1, 4))
def test_the_justify_pass_equals_its_reference(data, n, ports):
    ints = st.integers(0, ports - 1)
    first = np.array(data.draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.int64)
    second = np.array(data.draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.int64)
    seconds = np.array(data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)), float)
    after = [
        sorted(set(data.draw(st.lists(st.integers(a + 1, n - 1), max_size=3)))) if a < n - 1 else []
        for a in range(n)
    ]
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in after])
    succ = np.array([c for x in after for c in x], dtype=np.int64)
    waits = np.zeros(n, dtype=np.int64)
    for x in after:
        waits[x] += 1
    priority = np.array(data.draw(st.permutations(range(n))), dtype=float)
    got = _scheduled(first, second, seconds, ptr, succ, waits, priority)
    assert got == _reference_scheduled(first, second, seconds, ptr, succ, waits, priority)


def _timed_schedule(order):
    tree = Tree("a", {"a": ("b", "c")})
    flows = (Flow(tree, 2, segment_size=1),)
    return Schedule("bcast", "x", 2, flows, order=order)


def test_a_timetable_s_order_is_counted_per_send():
    """A timetable's order (every entry with a slot) counted send by send: the same
    refusals as an order counted per distinct entry object."""
    ok = {"a": (OrderedSend(0, "b", 0, 0), OrderedSend(0, "c", 0, 1))}
    assert _timed_schedule(ok).timetable
    twice = {"a": (*ok["a"], OrderedSend(0, "b", 0, 2))}
    with pytest.raises(ScheduleError, match=r"lists \(0, 'c'\) 1 time\(s\) but other sends"):
        _timed_schedule(twice)
    missing = {"a": (OrderedSend(0, "b", 0, 0),)}
    with pytest.raises(ScheduleError, match=r"must list each \(flow, child\) send"):
        _timed_schedule(missing)
    unslotted = {"a": (OrderedSend(0, "b", 0, 0), OrderedSend(0, "c"))}
    with pytest.raises(ScheduleError, match=r"a timetable gives \[flow, child, lag, slot\]"):
        _timed_schedule(unslotted)
