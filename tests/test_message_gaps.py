"""Where the whole message's one-port list schedule idles (planners/message_gaps.py):
exact idle profiles of hand-made ports, the schedules as multi_tree plans them; any one-port
run's distance to the fluid bound split by the packing's prices (priced_idle)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.errors import PlannerError
from hetcoll.generators import random_graph_platform
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.message_gaps import (
    idle_profile,
    message_gaps,
    priced_idle,
    priced_lags,
    waiting_idle,
)
from hetcoll.planners.multitree import _message_timetable, _shares
from hetcoll.planners.pipelined import _start


def test_idle_profile_exact():
    # busy [0.5, 2), [3, 8.5), [9, 9.5) of 10 s: idle 0.5 in the first tenth, 1 + 0.5 in
    # the middle, 0.5 in the last tenth
    got = idle_profile([(3.0, 8.5), (0.5, 2.0), (9.0, 9.5)], 10.0)
    assert got == {"load": 7.5, "first": 0.5, "head": 0.5, "middle": 1.5, "tail": 0.5, "drain": 0.5}
    # a port busy across both cuts idles only at the ends
    assert idle_profile([(0.25, 9.75)], 10.0) == {
        "load": 9.5,
        "first": 0.25,
        "head": 0.25,
        "middle": 0.0,
        "tail": 0.25,
        "drain": 0.25,
    }
    # a port never used idles throughout
    idle = idle_profile([], 10.0)
    assert idle == {
        "load": 0.0,
        "first": 10.0,
        "head": 1.0,
        "middle": 8.0,
        "tail": 1.0,
        "drain": 10.0,
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(1, 50)), max_size=12))
def test_idle_profile_adds_up_to_the_span(raw):
    """Disjoint intervals (integers, so exact): load and the three idle parts sum to the
    span, each part at most its own length."""
    busy, at = [], 0
    for gap, length in raw:
        busy.append((float(at + gap), float(at + gap + length)))
        at += gap + length
    span = float(at + 7)
    got = idle_profile(busy[::-1], span)
    assert got["load"] + got["head"] + got["middle"] + got["tail"] == pytest.approx(span)
    assert got["head"] <= 0.1 * span + 1e-9 and got["tail"] <= 0.1 * span + 1e-9
    assert got["drain"] == pytest.approx(7.0)
    assert got["first"] == (busy[0][0] if busy else span)


def test_waiting_idle_exact():
    # busy [1, 2), [4, 6) of 8 s: idle [0, 1), [2, 4), [6, 8); waiting over [0.5, 3) and
    # [2.5, 5) (overlapping: [0.5, 5) once) covers 0.5 + 2 of it; an empty interval nothing
    busy = [(4.0, 6.0), (1.0, 2.0)]
    assert waiting_idle(busy, [(2.5, 5.0), (0.5, 3.0), (7.0, 7.0)], 8.0) == 2.5
    assert waiting_idle(busy, [], 8.0) == 0.0
    assert waiting_idle(busy, [(0.0, 8.0)], 8.0) == 5.0  # all the idle time
    assert waiting_idle([], [(1.0, 2.0), (3.0, 4.0)], 5.0) == 2.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(1, 9)), max_size=8),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=8),
)
def test_waiting_idle_counts_each_idle_instant_once(raw, spans):
    """Integers, so exact: the waiting idle time is the measure of the idle instants some
    waiting interval covers, counted on a grid of half-units."""
    busy, at = [], 0
    for gap, length in raw:
        busy.append((float(at + gap), float(at + gap + length)))
        at += gap + length
    span = float(at + 5)
    waiting = [(float(a), float(a + d)) for a, d in spans]
    grid = [x / 2 + 0.25 for x in range(int(2 * span))]  # the half-units' midpoints
    want = sum(
        0.5
        for x in grid
        if not any(a <= x < b for a, b in busy) and any(a <= x < b for a, b in waiting)
    )
    assert waiting_idle(busy, waiting, span) == want


def test_message_gaps_is_multi_tree_s_schedule():
    """The justified span is the one multi_tree's whole-message timetable has, no later
    than the list schedule's; the critical ports are the busiest (within 1 %), busiest
    first, each profile summing to the span."""
    p = random_graph_platform(10, 0.3, seed=3, model="one_port")
    nbytes, slice_ = 48 * 10**6, 10**6
    got = message_gaps(p, "0", nbytes, slice_)
    _req, g = _start(p, "0", None, None, nbytes, slice_)
    packing = shared_packing(g.problem())
    share = _shares(48, list(packing.weights))
    keep = [i for i in range(len(share)) if share[i] > 0]
    _order, span, _reach = _message_timetable(
        g, [packing.trees[i] for i in keep], [share[i] for i in keep]
    )
    assert got["justified"] == span <= got["list"]
    assert got["transfers"] == 48 * 9
    loads = [prof["load"] for _port, prof in got["ports"]]
    assert loads == sorted(loads, reverse=True) and loads[-1] >= 0.99 * loads[0]
    for (kind, node), prof in got["ports"]:
        assert kind in ("send", "recv") and node in {n.id for n in p.nodes}
        total = prof["load"] + prof["head"] + prof["middle"] + prof["tail"]
        assert total == pytest.approx(span)
        assert 0.0 <= prof["waiting"] <= span - prof["load"] + 1e-9


def test_message_gaps_waiting_by_hand():
    """A star, root 0 to leaves 1 and 2, 1 s a slice: the root sends 4 slices to each leaf
    back to back (8 s), never idle; each leaf's receive port idles 4 s: before its last
    slice always while the root holds one for it (the root busy with the other leaf),
    waiting; after it (its drain) starved."""
    from hetcoll.platform import Link, Node, Platform

    nodes = tuple(Node(str(i)) for i in range(3))
    links = (Link("0", "1", bandwidth=1e6), Link("0", "2", bandwidth=1e6))
    p = Platform(nodes, links, model="one_port")
    got = message_gaps(p, "0", 4 * 10**6, 10**6, near=0.4)
    ports = dict(got["ports"])
    assert got["justified"] == pytest.approx(8.0)
    assert set(ports) == {("send", "0"), ("recv", "1"), ("recv", "2")}
    root = ports[("send", "0")]
    assert root["load"] == pytest.approx(8.0) and root["waiting"] == 0.0
    for leaf in ("1", "2"):
        recv = ports[("recv", leaf)]
        assert recv["load"] == pytest.approx(4.0)
        assert recv["waiting"] == pytest.approx(4.0 - recv["drain"])
    assert min(ports[("recv", leaf)]["drain"] for leaf in ("1", "2")) == 0.0


def test_message_gaps_one_port_only():
    p = random_graph_platform(6, 0.5, seed=1, model="multi_port")
    with pytest.raises(PlannerError, match="one send and one receive port"):
        message_gaps(p, "0", 8 * 10**6, 10**6)


def _chain(k: int):
    from hetcoll.platform import Link, Node, Platform

    nodes = tuple(Node(str(i)) for i in range(3))
    links = (Link("0", "1", bandwidth=1e6), Link("1", "2", bandwidth=1e6))
    return Platform(nodes, links, model="one_port"), k * 10**6


def test_priced_idle_by_hand():
    """A chain 0 -> 1 -> 2, 1 s a slice, 4 slices: the optimum is a slice a second (8 s of
    ports' work, 4 s each port the prices may name), the pipeline ends at 5 s; whichever
    saturated ports carry the prices, the priced idle time is the 1 s between, no waste."""
    from hetcoll import plan

    p, nbytes = _chain(4)
    s = plan(p, "0", method="throughput_tree", nbytes=nbytes, segment_size=10**6)
    got = priced_idle(p, "0", s)
    assert got["makespan"] == pytest.approx(5.0) and got["steady"] == pytest.approx(4.0)
    assert got["waste"] == pytest.approx(0.0, abs=1e-9)
    assert got["head"] + got["middle"] + got["tail"] == pytest.approx(1.0)
    assert priced_lags(p, "0", s) == 0.0  # a pipelined tree: no lags


@pytest.mark.parametrize("method", ["throughput_tree", "multi_tree", "periodic"])
def test_priced_idle_adds_up_to_the_makespan(method):
    """On a Fig. 4 platform the five parts sum to the simulated makespan, ``steady`` is
    the fluid bound with that slice, no part is negative; a periodic timetable's lags
    cost its priced ports some start-up."""
    from hetcoll import plan, simulate
    from hetcoll.bounds import slice_bound

    p = random_graph_platform(12, 0.3, seed=2, model="one_port")
    nbytes, slice_ = 256 * 10**6, 10**6
    options = {"slices_per_period": 16} if method == "periodic" else {}
    name = "multi_tree" if method == "periodic" else method
    s = plan(p, "0", method=name, nbytes=nbytes, segment_size=slice_, options=options)
    run = simulate(p, s)
    got = priced_idle(p, "0", s, prediction=run)
    assert got["makespan"] == run.makespan
    assert got["steady"] == pytest.approx(slice_bound(p, "0", nbytes, slice_).seconds, rel=1e-12)
    parts = ("steady", "waste", "head", "middle", "tail")
    assert sum(got[x] for x in parts) == pytest.approx(run.makespan, rel=1e-12)
    assert got["waste"] >= -1e-9 * run.makespan
    assert all(got[x] >= 0 for x in ("head", "middle", "tail"))
    lags = priced_lags(p, "0", s)
    assert lags >= 0 and (lags > 0) == (method == "periodic")


def test_priced_idle_one_port_whole_slices_only():
    from hetcoll import plan

    p = random_graph_platform(6, 0.5, seed=1, model="multi_port")
    s = plan(p, "0", method="throughput_tree", nbytes=8 * 10**6, segment_size=10**6)
    with pytest.raises(PlannerError, match="one send and one receive port"):
        priced_idle(p, "0", s)
    q, _nbytes = _chain(4)
    s = plan(q, "0", method="throughput_tree", nbytes=5 * 10**6 + 1, segment_size=10**6)
    with pytest.raises(PlannerError, match="every message is one slice"):
        priced_idle(q, "0", s)
