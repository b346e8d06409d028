"""The send order of ``forest`` schedules (:mod:`hetcoll.planners.forestorder`): the
play-out of the flows on the packing's resources, which the simulator replays exactly on
bandwidth-only link graphs, and which brings the schedules to the certified optimum;
a per-root ``order`` that breaks its rules is refused in one line."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import Schedule, plan, simulate
from hetcoll.allbounds import collective_bound
from hetcoll.errors import ScheduleError
from hetcoll.generators import capacitated_graph_platform
from hetcoll.patterns import OrderedSend
from hetcoll.planners.forestorder import per_root_order

MiB = 2**20


@pytest.mark.parametrize(("n", "seed"), [(6, 1), (8, 0)])
@pytest.mark.parametrize(("op", "tolerance"), [("allgather", 0.01), ("reduce_scatter", 0.03)])
def test_forest_is_within_the_tolerance_of_the_optimum(n, seed, op, tolerance):
    """Simulated time over the certified optimum (the cut bound on these graphs): within 1 %
    (allgather) and 3 % (reduce-scatter).  In program order without the play-out the
    8-node reduce-scatter took 1.30x (a rank's sends waiting behind a busy link)."""
    p = capacitated_graph_platform(n, seed=seed)
    s = plan(p, None, method="forest", collective=op, nbytes=MiB)
    best = collective_bound(p, op, n * MiB)
    assert best.optimum is not None
    t = simulate(p, s).makespan
    assert best.optimum * (1 - 1e-9) <= t <= best.optimum * (1 + tolerance)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_sixteen_nodes_are_within_three_percent_at_one_mib(op):
    """The issue's 1 MiB per rank target on the benchmark's 16-node graph: every tree cut
    into segments of about one size, the finest within the transfer budget
    (``tests/test_forest_depths.py``).  Over the column generation's deeper trees, one size
    from the largest share's cuts of at least 4 KiB took 1.036x (allgather) and 1.053x
    (reduce-scatter)."""
    p = capacitated_graph_platform(16, seed=0)
    s = plan(p, None, method="forest", collective=op, nbytes=MiB)
    best = collective_bound(p, op, 16 * MiB)
    t = simulate(p, s).makespan
    assert best.optimum * (1 - 1e-9) <= t <= best.optimum * 1.03
    counts = [len(f.segments()) for f in s.flows if (f.segment_size or 0) > 1024]
    assert counts and min(counts) > 1  # no tree's share sent whole


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter", "allreduce"])
def test_the_simulator_replays_the_play_out(op):
    """Without send costs a rank's port takes each send the moment the play-out started
    it: the simulated time is the play-out's, to rounding; the play-out's urgency a latest
    start within the packing's bound (an allreduce's: per byte of the vector).  The
    reduce-scatter's own play-out is within 0.5 % of the bound here (1.399 ms, 1.0008x),
    so it is not run backwards (``tests/test_forest_reverse.py``: a graph where it is)."""
    p = capacitated_graph_platform(7, seed=3)
    s = plan(p, None, method="forest", collective=op, nbytes=MiB, segment_size=64 * 1024)
    assert s.per_root and s.order is not None
    lead = s.params["packing_bound"] * (MiB if op == "allreduce" else 1)
    played = per_root_order(p, s.flows, lead=lead)
    assert played.order == s.order
    assert simulate(p, s).makespan == pytest.approx(played.time, rel=1e-9)


def test_an_allreduce_through_one_root_replays_its_play_out():
    """On the 8-node graph the packing puts the whole vector on one member: a reduce and a
    broadcast through it.  Such a schedule was lowered as a rooted reduce and broadcast,
    its order dropped, and the simulator ran it at 2.00x the optimum (4.79 ms for 8 MiB)
    while its play-out took 2.400 ms; lowered in slot order it replays the play-out,
    within 1 % of the optimum (2.397 ms)."""
    p = capacitated_graph_platform(8, seed=0)
    s = plan(p, None, method="forest", collective="allreduce", nbytes=8 * MiB)
    assert len({f.tree.root for f in s.flows}) == 1
    assert s.per_root and s.timetable
    t = simulate(p, s).makespan
    assert t == pytest.approx(s.params["estimate"], rel=1e-9)
    best = collective_bound(p, "allreduce", 8 * MiB)
    assert best.optimum is not None
    assert best.optimum * (1 - 1e-9) <= t <= best.optimum * 1.01
    assert Schedule.from_json(s.to_json()) == s


def test_a_per_root_order_round_trips_and_bad_ones_are_refused():
    p = capacitated_graph_platform(5, seed=2)
    s = plan(p, None, method="forest", collective="reduce_scatter", nbytes=MiB)
    assert Schedule.from_json(s.to_json()) == s
    doc = s.to_dict()
    node = sorted(doc["order"])[0]
    bad = [
        ({**doc["order"], node: doc["order"][node][1:]}, "once per segment"),
        ({**doc["order"], node: [e[:2] for e in doc["order"][node]]}, "[flow, peer, 0, slot]"),
    ]
    for order, message in bad:
        with pytest.raises(ScheduleError, match=message.replace("[", r"\[")):
            Schedule.from_dict({**doc, "order": order})
    twice = {u: list(map(list, v)) for u, v in doc["order"].items()}
    other = sorted(u for u in twice if u != node)[0]
    twice[other][0][3] = twice[node][0][3]
    with pytest.raises(ScheduleError, match="is taken"):
        Schedule.from_dict({**doc, "order": twice})


def test_an_order_against_the_data_is_refused_when_lowered():
    """Slots that put a node's forwarding of a segment before its receipt of it."""
    p = capacitated_graph_platform(4, 0.0, seed=0)  # a tree: every broadcast crosses the middle
    s = plan(p, None, method="forest", collective="allgather", nbytes=4096)
    flipped = {
        u: tuple(OrderedSend(x.flow, x.child, 0, 10**6 - x.slot) for x in reversed(sends))
        for u, sends in s.order.items()
    }
    bad = Schedule(s.collective, s.algorithm, s.nbytes, s.flows, s.params, order=flipped)
    with pytest.raises(ScheduleError, match="waits for one of a later slot"):
        bad.program()


def test_segments_of_one_send_start_in_segment_order():
    """An allreduce on a star of two NIC speeds: a broadcast segment whose bytes were reduced
    early became ready before the previous segment of its send; the play-out started it
    first, and renumbering the send's slots by segment then put the root's send before the
    reduction it needs ("waits for one of a later slot" when lowered).  Each send's
    segments now start in segment order, so the order lowers and the simulator runs it."""
    from hetcoll.generators import star_platform

    p = star_platform(8, ("25Gbps", "10Gbps"), "5us")
    s = plan(p, None, method="forest", collective="allreduce", nbytes=2 * MiB, options={"align": 8})
    # forest runs windows per edge on a star (tests/test_forest_edge.py): its play-out here
    s = replace(s, order=per_root_order(p, s.flows).order, chain="rank", stagger=0)
    for listed in s.order.values():
        first: dict[tuple[int, str], int] = {}
        for x in listed:  # a send's listings are its segments in order: slots rise
            assert x.slot > first.get((x.flow, x.child), -1)
            first[(x.flow, x.child)] = x.slot
    best = collective_bound(p, "allreduce", 2 * MiB)
    assert simulate(p, s).makespan >= best.lower_bound * (1 - 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    spans=st.lists(
        st.tuples(st.integers(0, 200), st.integers(1, 40), st.integers(0, 10**6)), max_size=30
    ),
    lo=st.integers(0, 240),
    width=st.integers(1, 60),
)
def test_the_spans_a_broadcast_segment_waits_for_are_found_by_bisection(spans, lo, width):
    """The reduced spans of a root that meet a segment's bytes ``[lo, hi)``: bisection over
    the spans sorted by start (the play-out's lookup, once a scan of every span per
    segment, quadratic in the segments) finds exactly those a scan finds, in start order."""
    from hetcoll.planners.forestorder import _Spans

    rows = [(a, a + n, y) for a, n, y in spans]
    hi = lo + width
    want = [y for a, b, y in sorted(rows) if a < hi and lo < b]
    assert _Spans(rows).meeting(lo, hi) == want
