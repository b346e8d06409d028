"""The forward-backward improvement of a whole message's list schedule
(:func:`hetcoll.planners.justify.justified`): a feasible timetable, transfer by transfer,
never later than the list schedule it starts from, whose self-timed run ends exactly at its
span; and on a Fig. 4 platform the message ends sooner than the list schedule alone let it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _one_port import assert_one_port_timetable
from hetcoll import plan, simulate
from hetcoll.bounds import lower_bound
from hetcoll.generators import random_graph_platform
from hetcoll.planners.justify import justified, list_schedule
from hetcoll.planners.message_schedule import message_transfers
from hetcoll.planners.multitree import _message_timetable, _shares, _timetable_schedule
from hetcoll.planners.pipelined import _start
from hetcoll.planners.steady import pack_arborescences, unbounded

L = 10**6


def test_the_message_ends_sooner_than_its_list_schedule():
    # Fig. 4 generator, n = 12, density 0.3, seed 1, 64 slices of 1 MB: the list schedule
    # alone took 1.0014 s (multi_tree kept it), the forward pass after the backward one
    # 0.9694 s, for a bound of 0.8790 s
    p = random_graph_platform(12, 0.3, seed=1, model="one_port")
    s = plan(p, "0", method="multi_tree", nbytes=64 * L, segment_size=L)
    assert s.params["trees"] == 7
    assert simulate(p, s).makespan == pytest.approx(0.9693530435998474, rel=1e-9)
    assert lower_bound(p, "0", 64 * L).seconds == pytest.approx(0.8790, abs=1e-4)


def test_list_schedule_by_hand():
    # a (ports 0 and 11, 1 s) then its successor b (ports 1 and 12, 1 s); c (ports 0
    # and 13, 2 s).  c first (priority) keeps port 0 busy for 2 s, a waits, b ends at 4;
    # a first lets b run while c holds port 0: all done at 3
    first, second = [0, 1, 0], [11, 12, 13]
    seconds, after, waits = [1.0, 1.0, 2.0], [[1], [], []], [0, 1, 0]
    assert list_schedule(first, second, seconds, after, waits, [1.0, 2.0, 0.0]) == (
        [2.0, 3.0, 0.0],
        4.0,
    )
    assert list_schedule(first, second, seconds, after, waits, [0.0, 1.0, 2.0]) == (
        [0.0, 1.0, 1.0],
        3.0,
    )


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(3, 14),
    density=st.sampled_from([0.15, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    total=st.integers(1, 80),
)
def test_the_justified_schedule_is_a_feasible_timetable_never_later(n, density, seed, total):
    """Checked transfer by transfer as the list schedule's own test does: every slice of
    every tree reaches every node once, no port carries two transfers at once, a node
    forwards a slice only once it holds it, a pair of a tree carries its slices in order,
    listed by start, the last ending at the span, no later than the list schedule's; and
    the self-timed run of the timetable's order ends exactly then."""
    p = random_graph_platform(n, density, seed=seed, model="one_port")
    req, g = _start(p, "0", None, None, total * L, L)
    if g.k == 1 or unbounded(g.problem()):
        return
    packing = pack_arborescences(g.problem())
    parts = _shares(total, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(parts)) if parts[i] > 0]
    mm = [x for x in parts if x > 0]
    listed, list_span = message_transfers(g, trees, mm)
    transfers, span = justified(g, listed, list_span)
    assert span <= list_span
    assert sorted(x[1:] for x in transfers) == sorted(x[1:] for x in listed)
    assert_one_port_timetable(g, trees, mm, transfers, span)
    timetable = _message_timetable(g, trees, mm)
    assert timetable[1] == span
    s = _timetable_schedule(req, g, mm, trees, timetable, total, 1.0, span)
    if s.params.get("trees", 1) > 1:
        assert simulate(p, s).makespan == pytest.approx(span, rel=1e-12)


def test_a_list_schedule_of_more_than_most_transfers_is_kept(monkeypatch):
    # the 12-node platform above: 64 slices over 11 children, 704 transfers
    from hetcoll.planners import justify

    p = random_graph_platform(12, 0.3, seed=1, model="one_port")
    _req, g = _start(p, "0", None, None, 64 * L, L)
    packing = pack_arborescences(g.problem())
    parts = _shares(64, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(parts)) if parts[i] > 0]
    listed, span = message_transfers(g, trees, [x for x in parts if x > 0])
    assert len(listed) == 704
    assert justified(g, listed, span)[1] < span
    monkeypatch.setattr(justify, "MOST", 703)
    assert justified(g, listed, span) == (listed, span)


def _digest(found) -> str:
    """A digest of ``(transfers, span)``: every start, port, tree and slice, exactly."""
    import hashlib

    return hashlib.sha256(repr(found).encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("n", "density", "seed", "total", "listed", "digest"),
    [
        (12, 0.3, 1, 64, 704, ("328698f4f547f1a1", "d09b659cb0677a3f")),
        (30, 0.12, 0, 96, 2784, ("5dc5dbe2c756afc5", "113d939f5cb06a83")),
        (50, 0.12, 2, 48, 2352, ("2400dca303f300e6", "6de26fcf04e0739a")),
    ],
)
def test_the_passes_are_pinned_transfer_by_transfer(n, density, seed, total, listed, digest):
    """The justified schedule of three Fig. 4 platforms' messages, every start exactly
    (the passes' data structures may change, never their schedule)."""
    p = random_graph_platform(n, density, seed=seed, model="one_port")
    _req, g = _start(p, "0", None, None, total * L, L)
    packing = pack_arborescences(g.problem())
    parts = _shares(total, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(parts)) if parts[i] > 0]
    found = message_transfers(g, trees, [x for x in parts if x > 0])
    assert len(found[0]) == listed
    assert justified(g, *found)[1] < found[1]
    assert (_digest(found), _digest(justified(g, *found))) == digest


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_list_schedule_is_feasible_and_never_leaves_two_ports_idle(data):
    """On random activities over four first and four second ports, with random
    precedences and priorities: every activity starts once its predecessors ended, no
    port holds two at once, the span is the last end, and at no instant (the start or an
    end) is a ready activity left waiting while both its ports are free."""
    n = data.draw(st.integers(1, 24))
    first = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    second = data.draw(st.lists(st.integers(4, 7), min_size=n, max_size=n))
    seconds = data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n))
    priority = data.draw(st.lists(st.floats(-10, 10), min_size=n, max_size=n))
    preds = [
        sorted(set(data.draw(st.lists(st.integers(0, a - 1), max_size=2)))) if a else []
        for a in range(n)
    ]
    after: list[list[int]] = [[] for _ in range(n)]
    for a, ps in enumerate(preds):
        for p in ps:
            after[p].append(a)
    start, span = list_schedule(first, second, seconds, after, [len(p) for p in preds], priority)
    end = [s + d for s, d in zip(start, seconds, strict=True)]
    assert span == max(end)
    for a in range(n):
        assert all(start[a] >= end[p] for p in preds[a])
        for b in range(a):
            if first[a] == first[b] or second[a] == second[b]:
                assert end[a] <= start[b] or end[b] <= start[a]

    def busy(port, which, t):
        return any(which[b] == port and start[b] <= t < end[b] for b in range(n))

    for t in {0.0, *end}:
        for a in range(n):
            if start[a] > t and all(end[p] <= t for p in preds[a]):
                assert busy(first[a], first, t) or busy(second[a], second, t)
