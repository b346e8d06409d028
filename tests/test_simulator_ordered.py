"""The send-order shortcut (:func:`hetcoll.simulator.ordered.simulate_ordered`) against the
event loop: every transfer's times and blocker, each rank's arrival and the throughput
identical on ``multi_tree``'s multi-port list schedules of random platforms; a send order
of more messages than the event loop is given is simulated by it under ``multi_port``, and
still refused, in one line, where it does not apply."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import Platform, plan
from hetcoll.errors import ScheduleError
from hetcoll.generators import random_graph_platform
from hetcoll.patterns import Flow, OrderedSend, Tree
from hetcoll.schedule import MAX_TRANSFERS, Schedule
from hetcoll.simulator import simulate
from hetcoll.simulator.ordered import simulate_ordered
from hetcoll.simulator.predict import prediction

L = 10**6


def _whole_message(p: Platform, slices: int, short: int = 0) -> Schedule | None:
    from hetcoll.planners.multitree import _multi_port_message
    from hetcoll.planners.pipelined import _start

    req, g = _start(p, "0", None, None, slices * L - short, L)
    return _multi_port_message(p, req, g, slices)


def _same_as_the_event_loop(p: Platform, s: Schedule) -> bool:
    """Whether the shortcut took ``s``; its prediction is the event loop's either way."""
    taken = simulate_ordered(p.model.bind(p), s, s.nbytes) is not None
    fast = prediction(p, s, None, shortcut=True)
    slow = prediction(p, s, None, shortcut=False)
    assert list(fast.transfers) == list(slow.transfers)  # times, blockers, links, order
    assert fast.arrival == slow.arrival
    assert fast.throughput == slow.throughput
    assert fast.to_dict() == slow.to_dict()
    return taken


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(3, 14),
    density=st.sampled_from([0.12, 0.2, 0.4, 0.8]),
    seed=st.integers(0, 10**6),
    slices=st.integers(2, 80),
    short=st.sampled_from([0, 0, 1, L // 3]),
)
def test_the_shortcut_equals_the_event_loop_on_multi_port_list_schedules(
    n, density, seed, slices, short
):
    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    s = _whole_message(p, slices, short)
    if s is None or not s.order:  # one tree carries it: no send order
        return
    taken = _same_as_the_event_loop(p, s)
    # whole slices: each node takes its sends in the listed order, so the shortcut applies
    assert taken or short


@pytest.mark.parametrize(("n", "seed", "slices"), [(30, 0, 64), (50, 0, 256), (50, 1, 128)])
def test_the_shortcut_equals_the_event_loop_on_the_size_benchmark(n, seed, slices):
    # the platforms of benchmarks/simulated/bench_sizes.py --model multi_port
    p = random_graph_platform(n, 0.12, seed=seed, model="multi_port")
    s = _whole_message(p, slices)
    assert s is not None and s.params["trees"] > 1
    assert _same_as_the_event_loop(p, s)


def test_a_send_order_the_port_would_not_keep_is_left_to_the_event_loop():
    # 0 sends byte a then byte b to 1 (1 s each on a 1 B/s link); 1 lists b before a to 2,
    # but its port, free from 0 on, takes a when it arrives at 1 s (nothing else is
    # startable then): a reaches 2 at 2 s, b at 3 s.  The listed order would end at 4 s
    p = Platform.from_dict(
        {
            "model": "multi_port",
            "nodes": [{"id": i} for i in "012"],
            "links": [{"u": a, "v": b, "bandwidth": 1.0} for a, b in ("01", "12")],
        }
    )
    chain = Tree.from_edges("0", [("0", "1"), ("1", "2")])
    flows = (Flow(chain, 1, 0, segment_size=1), Flow(chain, 1, 1, segment_size=1))
    a, b = OrderedSend(0, "1"), OrderedSend(1, "1")
    to_2 = (OrderedSend(1, "2"), OrderedSend(0, "2"))
    s = Schedule("bcast", "x", 2, flows, {}, order={"0": (a, b), "1": to_2})
    assert simulate_ordered(p.model.bind(p), s, 2) is None
    assert simulate(p, s).makespan == 3.0
    kept = Schedule("bcast", "x", 2, flows, {}, order={"0": (a, b), "1": to_2[::-1]})
    assert _same_as_the_event_loop(p, kept)
    assert simulate(p, kept).makespan == 3.0


def _one_edge(messages: int, model: str) -> tuple[Platform, Schedule]:
    """Two nodes, a 1 B/s link: ``messages`` one-byte segments, 1 s each, in a send order."""
    p = Platform.from_dict(
        {
            "model": model,
            "nodes": [{"id": i} for i in "01"],
            "links": [{"u": "0", "v": "1", "bandwidth": 1.0}],
        }
    )
    flow = Flow(Tree.from_edges("0", [("0", "1")]), messages, segment_size=1)
    order = {"0": (OrderedSend(0, "1"),)}
    return p, Schedule("bcast", "x", messages, (flow,), {}, order=order)


def test_a_send_order_over_the_event_loops_cap_is_simulated_under_multi_port():
    # one more message than the event loop is given: 1 s each, one after the other
    p, s = _one_edge(MAX_TRANSFERS + 1, "multi_port")
    assert simulate(p, s).makespan == float(MAX_TRANSFERS + 1)


def test_a_send_order_over_the_cap_is_refused_where_the_shortcut_does_not_apply():
    # one port a node (a receive port busy the whole transfer): the event loop's, refused
    p, s = _one_edge(MAX_TRANSFERS + 1, "one_port")
    with pytest.raises(ScheduleError, match="simulated by the event loop"):
        simulate(p, s)


def test_multi_tree_over_the_event_loops_cap_is_simulated(monkeypatch):
    # the triangle's list schedule of more messages than the event loop is given (the
    # cap lowered to 40 where the planner and the simulator read it): simulated by the
    # shortcut, the two trees' 51 ms + 1 us, not refused
    from hetcoll.planners import multitree, port_choice
    from hetcoll.simulator import predict

    for module in (multitree, port_choice, predict):
        monkeypatch.setattr(module, "MAX_TRANSFERS", 40)
    p = Platform.from_dict(
        {
            "model": "multi_port",
            "nodes": [{"id": i, "t_byte": 1e-9} for i in "012"],
            "links": [{"u": a, "v": b, "bandwidth": 1e6} for a, b in ("01", "02", "12")],
        }
    )
    s = plan(p, "0", method="multi_tree", nbytes=100 * 1000, segment_size=1000)
    assert s.params["trees"] == 2 and s.transfers > 40
    assert simulate(p, s).makespan == pytest.approx(0.051001, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(3, 12),
    density=st.sampled_from([0.15, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    slices=st.integers(1, 60),
)
def test_a_tree_with_its_children_listed_runs_as_the_plain_tree(n, density, seed, slices):
    # multi_tree's single tree over the event loop's cap (port_choice.listed_tree): the
    # same program, so the shortcut's prediction is the event loop's of the plain tree
    from hetcoll.planners.pipelined import _schedule, _start, best_tree
    from hetcoll.planners.port_choice import listed_tree
    from hetcoll.planners.steady import pack_arborescences

    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    req, g = _start(p, "0", None, None, slices * L, L)
    _start_name, edges, _papers = best_tree(g, pack_arborescences(g.problem()))
    plain = _schedule(req, g, "multi_tree", edges)
    listed = listed_tree(req, g, edges)
    assert listed.order and listed.flows == plain.flows
    fast = prediction(p, listed, None, shortcut=True)
    slow = prediction(p, plain, None, shortcut=False)
    assert simulate_ordered(p.model.bind(p), listed, listed.nbytes) is not None
    assert list(fast.transfers) == list(slow.transfers)
    assert fast.arrival == slow.arrival and fast.throughput == slow.throughput
    # and the plain tree itself (segment by segment, child by child) takes the shortcut
    if any(f.chunks > 1 for f in plain.flows) or slices > 1:
        assert _same_as_the_event_loop(p, plain)


def _without_starts(p: Platform, s: Schedule):
    """``s``'s shortcut prediction without its planner's starts."""
    from dataclasses import replace

    return prediction(p, replace(s, listed_starts=None), None, shortcut=True)


def _checks(monkeypatch) -> list:
    """What each :func:`~hetcoll.simulator.ordered._witnessed` call returns from now on (a
    planner's starts are checked there, and only there, when their order is the run's)."""
    from hetcoll.simulator import ordered

    seen: list = []
    check = ordered._witnessed
    monkeypatch.setattr(ordered, "_witnessed", lambda *a: seen.append(check(*a)) or seen[-1])
    return seen


@pytest.mark.parametrize(("n", "seed", "slices"), [(30, 1, 40), (30, 0, 64), (50, 2, 96)])
def test_the_list_schedules_starts_are_taken_and_change_no_time(monkeypatch, n, seed, slices):
    # multi_tree's schedule carries its list schedule's starts; the simulator checks them
    # against the run's equations, takes them, and predicts exactly what its own replay does
    p = random_graph_platform(n, 0.12, seed=seed, model="multi_port")
    s = _whole_message(p, slices)
    assert s is not None and s.order and s.listed_starts is not None
    assert all(s.listed_starts[x][0] is s.order[x] for x in s.order)
    seen = _checks(monkeypatch)
    fast = prediction(p, s, None, shortcut=True)
    assert len(seen) == 1 and seen[0] is not None  # taken, no replay
    assert fast.to_dict() == _without_starts(p, s).to_dict()
    assert list(fast.transfers) == list(_without_starts(p, s).transfers)
    assert len(seen) == 1  # (none to check without them)


def test_the_starts_are_a_hint_not_part_of_the_schedule():
    # left out of the document, of equality and of pickles (an unpickled order is made of
    # other tuples, which would refuse them anyway)
    import pickle
    from dataclasses import replace

    p = random_graph_platform(30, 0.12, seed=1, model="multi_port")
    s = _whole_message(p, 40)
    assert s is not None and s.listed_starts is not None
    bare = replace(s, listed_starts=None)
    assert s == bare and s.to_dict() == bare.to_dict() and repr(s) == repr(bare)
    assert "listed_starts" not in s.to_json()
    back = pickle.loads(pickle.dumps(s))
    assert back.listed_starts is None and back == s and back.to_dict() == s.to_dict()
    assert s.listed_starts is not None  # (the pickled one keeps its own)
    with pytest.raises(ScheduleError, match="listed_starts"):
        replace(s, listed_starts=[1.0])


@pytest.mark.parametrize("wrong", ["later", "sooner", "shifted", "other order"])
def test_starts_that_are_not_the_run_are_never_taken(monkeypatch, wrong):
    # a start one ulp off, all of them shifted, or the starts of another order object:
    # each fails the check, and the prediction is the replay's
    from dataclasses import replace

    import numpy as np

    from hetcoll.schedule import ListedOrder

    p = random_graph_platform(30, 0.12, seed=1, model="multi_port")
    s = _whole_message(p, 48)
    assert s is not None and s.order and s.listed_starts is not None
    kept = dict(s.listed_starts)
    node = max(kept, key=lambda x: len(kept[x][1]))
    sends, at = kept[node]
    at = at.copy()
    if wrong == "later":
        at[len(at) // 2] = np.nextafter(at[len(at) // 2], np.inf)
    elif wrong == "sooner":
        at[-1] = np.nextafter(at[-1], -np.inf)
    elif wrong == "shifted":
        at = at + 1.0
    else:
        sends = tuple(sends)[:-1] + tuple(sends)[-1:]  # equal, not the schedule's tuple
    kept[node] = (sends, at)
    # the same order's very tuples (a ListedOrder keeps them), with the starts changed
    t = replace(s, order=ListedOrder(s.order), listed_starts=kept)
    assert all(t.order[x] is s.order[x] for x in s.order)
    seen = _checks(monkeypatch)
    fast = prediction(p, t, None, shortcut=True)
    assert seen == ([] if wrong == "other order" else [None])
    assert fast.to_dict() == _without_starts(p, s).to_dict()
    assert list(fast.transfers) == list(prediction(p, s, None, shortcut=False).transfers)


def test_a_stale_hint_is_not_taken(monkeypatch):
    # a schedule made from the planner's with one node's sends listed in another order
    # carries its starts over (a field), every other node's listing the very same tuple:
    # the changed node refuses them, and the prediction is the new order's own run
    from dataclasses import replace

    from hetcoll.schedule import ListedOrder

    p = random_graph_platform(30, 0.12, seed=1, model="multi_port")
    s = _whole_message(p, 48)
    assert s is not None and s.listed_starts is not None
    node = max(s.order, key=lambda x: len(s.order[x]))
    sends = s.order[node]
    k = next(i for i in range(len(sends) - 1, 0, -1) if sends[i] != sends[i - 1])
    swapped = (*sends[: k - 1], sends[k], sends[k - 1], *sends[k + 1 :])  # the last two apart
    t = replace(s, order=ListedOrder({**s.order, node: swapped}))
    assert t.listed_starts is s.listed_starts and t.order[node] != s.order[node]
    assert all(t.order[x] is s.order[x] for x in s.order if x != node)
    seen = _checks(monkeypatch)
    fast = prediction(p, t, None, shortcut=True)
    assert seen == []  # not even checked
    slow = prediction(p, t, None, shortcut=False)
    assert list(fast.transfers) == list(slow.transfers)
    assert fast.to_dict() == slow.to_dict()
    # (its transfers are not s's: the hint would have been another run's)
    assert list(fast.transfers) != list(prediction(p, s, None, shortcut=False).transfers)


def test_two_interleaved_plans_each_keep_their_own_starts(monkeypatch):
    # planned one after the other, simulated in the other order: each schedule's starts
    # are its own (a side channel would have kept only the last plan's), each taken
    a = _whole_message(random_graph_platform(30, 0.12, seed=1, model="multi_port"), 40)
    pb = random_graph_platform(30, 0.12, seed=0, model="multi_port")
    b = _whole_message(pb, 64)
    pa = random_graph_platform(30, 0.12, seed=1, model="multi_port")
    assert a is not None and b is not None and a.listed_starts and b.listed_starts
    assert a.listed_starts is not b.listed_starts
    seen = _checks(monkeypatch)
    for p, s in ((pa, a), (pb, b), (pa, a)):
        fast = prediction(p, s, None, shortcut=True)
        assert seen[-1] is not None  # taken
        assert list(fast.transfers) == list(prediction(p, s, None, shortcut=False).transfers)
    assert len(seen) == 3


def test_starts_that_solve_a_cycle_by_rounding_are_not_taken():
    # two transfers each forwarding the other's data: no run, yet at 1e20 s a delay of
    # 1 s rounds away and the starts solve the equations; they do not start after what
    # they depend on, so they are refused
    import numpy as np

    from hetcoll.simulator.ordered import _witnessed

    start = np.array([1e20, 1e20])
    first = np.array([True, True])
    ones = np.ones(2)
    dat, none = np.array([1, 0]), np.array([-1, -1])
    assert _witnessed(start, first, dat, none, ones, ones, ones) is None
    # without the cycle (the second forwards the first's data) the run is taken
    taken, got = _witnessed(np.array([0.0, 1.0]), first, np.array([-1, 0]), none, ones, ones, ones)
    assert taken.tolist() == [0.0, 1.0] and got.tolist() == [0.0, 1.0]
