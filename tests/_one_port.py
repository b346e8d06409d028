"""Helpers for the tests of a whole message's one-port list schedules."""

from __future__ import annotations

from itertools import pairwise


def assert_one_port_timetable(g, trees, mm, transfers, span) -> None:
    """``transfers`` (``(start, sender, receiver, tree, slice)``) are a feasible one-port
    timetable of ``mm[i]`` slices over each tree ``trees[i]`` of plan graph ``g``: listed
    by start, no port carries two transfers at once, a node forwards a slice only once it
    holds it, a pair of a tree carries its slices in order, and the last ends at ``span``."""
    T = {(int(g.src[e]), int(g.dst[e])): float(g.T[e]) for e in range(len(g.src))}
    assert [x[0] for x in transfers] == sorted(x[0] for x in transfers)
    arrive = {(g.root, i, q): 0.0 for i in range(len(trees)) for q in range(mm[i])}
    busy: dict[tuple[str, int], list[tuple[float, float]]] = {}
    carried: dict[tuple[int, int, int], list[int]] = {}
    for start, u, v, i, q in transfers:
        assert start >= arrive[(u, i, q)]
        arrive[(v, i, q)] = start + T[(u, v)]
        busy.setdefault(("out", u), []).append((start, start + T[(u, v)]))
        busy.setdefault(("in", v), []).append((start, start + T[(u, v)]))
        carried.setdefault((u, v, i), []).append(q)
    for spans in busy.values():
        assert all(a[1] <= b[0] for a, b in pairwise(spans))
    assert all(qs == sorted(qs) for qs in carried.values())
    assert span == max(start + T[(u, v)] for start, u, v, _i, _q in transfers)
