"""Where the whole message's one-port list schedule idles (planners/message_gaps.py):
exact idle profiles of hand-made ports, the schedules as multi_tree plans them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.errors import PlannerError
from hetcoll.generators import random_graph_platform
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.message_gaps import idle_profile, message_gaps
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


def test_message_gaps_one_port_only():
    p = random_graph_platform(6, 0.5, seed=1, model="multi_port")
    with pytest.raises(PlannerError, match="one send and one receive port"):
        message_gaps(p, "0", 8 * 10**6, 10**6)
