"""The timetable shortcut (:func:`hetcoll.simulator.timetable.simulate_timetable`) against the
event loop: every transfer's times and blocker, each rank's arrival and the throughput
identical on multi-tree timetables of random platforms and slice counts and on the size
benchmark's schedules; ``simulate`` takes it by itself where it applies, and leaves the
event loop what it does not cover."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _send_rule import postal
from hetcoll import plan
from hetcoll.errors import ScheduleError
from hetcoll.generators import random_graph_platform
from hetcoll.patterns import Flow, OrderedSend, Tree
from hetcoll.platform import Platform
from hetcoll.schedule import MAX_TIMETABLE_TRANSFERS, MAX_TRANSFERS, Schedule
from hetcoll.simulator import simulate
from hetcoll.simulator.predict import prediction
from hetcoll.simulator.timetable import simulate_timetable

L = 10**6


def _same_as_the_event_loop(p: Platform, s: Schedule) -> None:
    bound = p.model.bind(p)
    assert simulate_timetable(bound, s, s.nbytes) is not None, "the shortcut does not take it"
    fast = prediction(p, s, None, shortcut=True)
    slow = prediction(p, s, None, shortcut=False)
    assert list(fast.transfers) == list(slow.transfers)  # times, blockers, order
    assert fast.arrival == slow.arrival
    assert fast.makespan == slow.makespan
    assert fast.throughput == slow.throughput
    assert fast.to_dict() == slow.to_dict()


def _timetable(p: Platform, slices: int, period: int, short: int = 0) -> Schedule | None:
    s = plan(
        p,
        "0",
        method="multi_tree",
        nbytes=slices * L - short,
        segment_size=L,
        options={"slices_per_period": period},
    )
    return s if s.timetable else None


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(3, 16),
    density=st.sampled_from([0.12, 0.2, 0.4, 0.8]),
    seed=st.integers(0, 10**6),
    slices=st.integers(1, 120),
    period=st.sampled_from([16, 24, 32, 48, 64]),
    short=st.sampled_from([0, 1, L // 3]),
)
def test_the_shortcut_equals_the_event_loop_on_random_timetables(
    n, density, seed, slices, period, short
):
    p = random_graph_platform(n, density, seed=seed, model="one_port")
    s = _timetable(p, slices, period, short)
    if s is None:  # one tree carries it all: no timetable
        return
    _same_as_the_event_loop(p, s)


@pytest.mark.parametrize(
    ("n", "seed", "slices"), [(30, 0, 1024), (30, 0, 256), (30, 1, 64), (50, 0, 256)]
)
def test_the_shortcut_equals_the_event_loop_on_the_size_benchmark(n, seed, slices):
    # the platforms of benchmarks/simulated/bench_sizes.py, the schedules multi_tree plans
    p = random_graph_platform(n, 0.12, seed=seed, model="one_port")
    s = plan(p, "0", method="multi_tree", nbytes=slices * L, segment_size=L)
    if not s.timetable:  # the best single tree won: plan the timetable
        s = _timetable(p, slices, 16)
    assert s is not None and s.params["trees"] > 1
    _same_as_the_event_loop(p, s)


def test_simulate_takes_the_shortcut_by_itself(monkeypatch):
    p = random_graph_platform(30, 0.12, seed=0, model="one_port")
    s = _timetable(p, 64, 16)
    want = simulate(p, s)
    from hetcoll.simulator import predict

    def no_event_loop(*args, **kwargs):
        raise AssertionError("the event loop ran")

    monkeypatch.setattr(predict, "Simulation", no_event_loop)
    assert simulate(p, s) == want


def test_the_shortcut_leaves_the_event_loop_what_it_does_not_cover():
    uni = random_graph_platform(12, 0.3, seed=3, model="one_port_uni")
    s = _timetable(uni, 40, 16)
    assert s is not None
    assert simulate_timetable(uni.model.bind(uni), s, s.nbytes) is None  # one port per node
    p = random_graph_platform(12, 0.3, seed=3, model="one_port")
    single = plan(p, "0", method="throughput_tree", nbytes=8 * L, segment_size=L)
    assert simulate_timetable(p.model.bind(p), single, single.nbytes) is None  # no timetable


def _two_trees(slots: tuple[int, int, int, int]) -> Schedule:
    trees = (
        Flow(Tree("r", {"r": ("a",), "a": ("b",)}), 4),
        Flow(Tree("r", {"r": ("b",), "b": ("a",)}), 4, offset=4),
    )
    s0, s1, s2, s3 = slots
    order = {
        "r": (OrderedSend(0, "a", 0, s0), OrderedSend(1, "b", 0, s1)),
        "a": (OrderedSend(0, "b", 0, s2),),
        "b": (OrderedSend(1, "a", 0, s3),),
    }
    return Schedule("bcast", "table", 8, trees, order=order)


def test_keys_that_do_not_order_the_dependencies_go_to_the_event_loop():
    p = postal("rab", 2)  # the send rule table's timetable case: postal, two ports
    bound = p.model.bind(p)
    ordered = _two_trees((0, 1, 2, 3))
    assert simulate_timetable(bound, ordered, 8) is not None
    _same_as_the_event_loop(p, ordered)
    # a forwards tree 0's slice in slot 0, before r sends it to a (slot 2), and a and b
    # receive in slot order: a deadlock, which the shortcut leaves to the event loop to say
    backwards = _two_trees((2, 1, 0, 3))
    assert simulate_timetable(bound, backwards, 8) is None
    with pytest.raises(ScheduleError, match="deadlocks"):
        simulate(p, backwards)


def _long_two_trees(segments: int) -> Schedule:
    """:func:`_two_trees` in 1-byte segments: 4 messages per segment of each flow."""
    s = _two_trees((0, 1, 2, 3))
    flows = tuple(Flow(f.tree, segments, f.offset and segments, segment_size=1) for f in s.flows)
    return Schedule("bcast", "table", 2 * segments, flows, order=s.order)


def test_a_timetable_may_send_more_messages_than_the_event_loop_is_given():
    p = postal("rab", 2)
    over = MAX_TRANSFERS // 4 + 1  # 4 messages per segment pair: one pair over the cap
    s = _long_two_trees(over)
    assert MAX_TRANSFERS < s.transfers <= MAX_TIMETABLE_TRANSFERS
    assert simulate(p, s).makespan > 0  # the timetable shortcut runs it
    uni = Platform(p.nodes, latency=p.latency, bandwidth=p.bandwidth, model="one_port_uni")
    with pytest.raises(ScheduleError, match="simulated by the event loop; use segments of"):
        simulate(uni, s)  # one port per node: the event loop's, over its cap
    with pytest.raises(ScheduleError, match=f"more than {MAX_TIMETABLE_TRANSFERS} per"):
        _long_two_trees(MAX_TIMETABLE_TRANSFERS // 4 + 1)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-5, 5), st.integers(0, 3), st.integers(-(2**62), 2**62)),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 3),
)
def test_the_packed_sort_is_lexsort(rows, n_keys):
    # ties in index order, negative keys, and keys too wide to pack (the lexsort path)
    import numpy as np

    from hetcoll.simulator.timetable import _sorted_by

    keys = [np.array(c, dtype=np.int64) for c in zip(*rows, strict=True)][:n_keys]
    index = np.arange(len(rows))
    want = np.lexsort((index, *reversed(keys)))
    assert _sorted_by(*keys).tolist() == want.tolist()
