"""The simulator against closed forms, contention rules and determinism."""

from __future__ import annotations

import importlib
import importlib.util
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll import Flow, Link, Node, Platform, Schedule, ScheduleError, Tree, plan, simulate
from hetcoll.platform import nodes_from_costs
from hetcoll.program import Chunk, Op, Program
from hetcoll.simulator import simulate_program


def tini(costs, t_byte=0.0):
    return Platform(nodes_from_costs(costs, t_byte), model="tini")


def bcast(tree, nbytes=0, seg=None):
    return Schedule("bcast", "test", nbytes, (Flow(tree, nbytes, segment_size=seg),))


def chain_tree(n):
    return Tree.from_edges("0", [(str(i), str(i + 1)) for i in range(n - 1)])


@given(st.lists(st.integers(1, 9), min_size=2, max_size=10))
def test_tini_chain_is_the_sum_of_sender_costs(costs):
    p = tini([c * 1e-6 for c in costs])
    pred = simulate(p, bcast(chain_tree(len(costs))))
    assert pred.makespan == pytest.approx(sum(costs[:-1]) * 1e-6)
    for k in range(len(costs)):
        assert pred.arrival[str(k)] == pytest.approx(sum(costs[:k]) * 1e-6)


@given(st.integers(2, 40), st.integers(1, 9), st.integers(0, 5000), st.integers(1, 5))
def test_tini_flat_tree_serialises_the_root(n, t, nbytes, tb):
    p = tini([t * 1e-6] * n, t_byte=tb * 1e-9)
    pred = simulate(p, plan(p, "0", method="flat", nbytes=nbytes))
    per_send = t * 1e-6 + nbytes * tb * 1e-9
    assert pred.makespan == pytest.approx((n - 1) * per_send)
    # the k-th child hears at k sends
    for k in range(1, n):
        assert pred.arrival[str(k)] == pytest.approx(k * per_send)


@given(st.integers(1, 70))
def test_binomial_on_homogeneous_nodes_takes_ceil_log2_rounds(n):
    p = tini([1e-3] * n)
    pred = simulate(p, plan(p, "0", method="binomial"))
    assert pred.makespan == pytest.approx(math.ceil(math.log2(n)) * 1e-3 if n > 1 else 0)


def line_platform(n, latency, bandwidth, model="hockney"):
    nodes = tuple(Node(str(i)) for i in range(n))
    links = tuple(Link(str(i), str(i + 1), latency, bandwidth) for i in range(n - 1))
    return Platform(nodes, links, model=model)


@given(st.integers(2, 7), st.integers(1, 12))
def test_hockney_pipelined_chain_closed_form(n, segments):
    """A chain of n nodes, S equal segments, one-port: (n - 2 + S) hop times; throughput
    = segment / hop time."""
    seg = 1000
    p = line_platform(n, 1e-4, 1e7)
    hop = 1e-4 + seg / 1e7
    pred = simulate(p, bcast(chain_tree(n), nbytes=seg * segments, seg=seg))
    assert pred.makespan == pytest.approx((n - 2 + segments) * hop)
    assert pred.throughput == pytest.approx(seg / hop)


def test_hockney_link_contention_serialises_a_shared_link():
    # a - b - c - d: "a -> d" and "b -> c" at the same time both need link b-c (same direction)
    p = line_platform(4, 1e-3, math.inf)
    s1 = Schedule("multicast", "t", 0, (Flow(Tree("0", {"0": ("3",)}), 0),))
    s2 = Schedule("multicast", "t", 0, (Flow(Tree("1", {"1": ("2",)}), 0),))
    pred = simulate(p, Schedule.concurrent([s1, s2]))
    assert pred.arrival["3"] == pytest.approx(3e-3)  # started first (rank 0 wins the tie)
    assert pred.arrival["2"] == pytest.approx(4e-3)  # waited for the link: 3 ms + 1 ms
    # the opposite direction is a separate resource
    s2r = Schedule("multicast", "t", 0, (Flow(Tree("2", {"2": ("1",)}), 0),))
    pred = simulate(p, Schedule.concurrent([s1, s2r]))
    assert pred.arrival["1"] == pytest.approx(1e-3)


def test_unidirectional_one_port_cannot_send_while_receiving():
    lat = np.array([[0, 1.0, 1.0], [1.0, 0, 1.0], [1.0, 1.0, 0]])
    base = Platform((Node("a"), Node("b"), Node("c")), latency=lat, model="hockney")
    # a -> b and c -> a at the same time: a sends and receives at once
    s1 = Schedule("multicast", "t", 0, (Flow(Tree("a", {"a": ("b",)}), 0),))
    s2 = Schedule("multicast", "t", 0, (Flow(Tree("c", {"c": ("a",)}), 0),))
    both = Schedule.concurrent([s1, s2])
    assert simulate(base, both).makespan == pytest.approx(1.0)
    uni = simulate(base, both, model={"name": "hockney", "ports": "unidirectional"})
    assert uni.makespan == pytest.approx(2.0)


def test_postal_eq2_child_order():
    """Park et al. eq. (2): T_i = T_j + (c - 1)(o + g) + L_ji + o_r."""
    lat = [[0, 5, 7, 9], [5, 0, 1, 1], [7, 1, 0, 1], [9, 1, 1, 0]]
    p = Platform.from_dict(
        {
            "model": {"name": "postal", "overhead": 0.5, "gap": 1.5, "recv_overhead": 0.25},
            "nodes": [{"id": x} for x in "ABCD"],
            "latency": lat,
        }
    )
    t = Tree.from_edges("A", [("A", "B"), ("A", "C"), ("B", "D")])
    pred = simulate(p, bcast(t))
    assert pred.arrival["B"] == pytest.approx(0 + 0 * 2 + 5 + 0.25)
    assert pred.arrival["C"] == pytest.approx(0 + 1 * 2 + 7 + 0.25)
    assert pred.arrival["D"] == pytest.approx(5.25 + 0 * 2 + 1 + 0.25)


def test_multiple_multicast_shares_the_senders_port():
    p = tini([100e-6] * 6)
    from hetcoll import plan_multiple

    s = plan_multiple(p, [("0", ["1", "2"]), ("0", ["3", "4"])], method="flat")
    assert simulate(p, s).makespan == pytest.approx(400e-6)
    # different roots do not share
    s = plan_multiple(p, [("0", ["1", "2"]), ("5", ["3", "4"])], method="flat")
    assert simulate(p, s).makespan == pytest.approx(200e-6)


def test_rendezvous_exchange_starts_when_both_sides_are_ready():
    """A transfer starts when the receive is posted: an exchange after unequal waits costs
    max(ready) + w, the rule Figueira's calc_cost relies on."""
    lat = [[0, 1, 5, 9], [1, 0, 9, 9], [5, 9, 0, 9], [9, 9, 9, 0]]
    p = Platform.from_dict(
        {"model": "postal", "nodes": [{"id": x} for x in "abcd"], "latency": lat}
    )
    # step 1: a<->b (w=1); step 2: a<->c (w=5), c is ready at 0, a at 1
    ops = {
        "a": (
            Op("send", "b", 0),
            Op("recv_reduce", "b", 1),
            Op("send", "c", 2, (1,)),
            Op("recv_reduce", "c", 3, (1,)),
        ),
        "b": (Op("send", "a", 1), Op("recv_reduce", "a", 0)),
        "c": (Op("send", "a", 3), Op("recv_reduce", "a", 2)),
        "d": (),
    }
    initial = {"a": frozenset({0, 2}), "b": frozenset({1}), "c": frozenset({3})}
    prog = Program(ops, tuple(Chunk(0, 0, 0) for _ in range(4)), initial)
    prog.validate()
    bound = p.model.bind(p)
    _, done = simulate_program(bound, prog)
    assert done["a"][3] == pytest.approx(1 + 5)  # c's message waits for a's receive at t=1
    assert done["c"][1] == pytest.approx(1 + 5)


def test_deadlock_is_an_error_not_a_hang():
    p = tini([1.0, 1.0])
    ops = {
        "0": (Op("recv", "1", 1), Op("send", "1", 0, (0,))),
        "1": (Op("recv", "0", 0), Op("send", "0", 1, (0,))),
    }
    prog = Program(
        ops, (Chunk(0, 0, 1), Chunk(0, 0, 1)), {"0": frozenset({0}), "1": frozenset({1})}
    )
    with pytest.raises(ScheduleError, match="deadlocks"):
        simulate_program(p.model.bind(p), prog)


def test_sends_are_listed_in_start_order_and_each_senders_order():
    p = tini([1e-4, 3e-4, 3e-4, 3e-4, 3e-4, 1e-4, 3e-4, 3e-4])
    pred = simulate(p, plan(p, "0", method="binomial"))
    starts = [t.start for t in pred.transfers]
    assert starts == sorted(starts)
    by_sender = {}
    for a, b in pred.sends():
        by_sender.setdefault(a, []).append(b)
    tree = plan(p, "0", method="binomial").tree
    for a, kids in tree.children.items():
        assert tuple(by_sender[a]) == kids


def test_simulation_is_deterministic():
    p = tini([1e-4 * (1 + (i * 7) % 5) for i in range(30)])
    for method in ("binomial", "fnf", "spoc"):
        s = plan(p, "3", method=method, nbytes=10)
        a, b = simulate(p, s), simulate(p, s)
        assert a.to_dict(transfers=True) == b.to_dict(transfers=True)


def test_zero_bytes_still_synchronises_and_has_no_throughput():
    p = tini([1e-4] * 3)
    pred = simulate(p, plan(p, "0", method="chain"))
    assert pred.makespan == pytest.approx(2e-4)
    assert pred.throughput is None


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tiny_platforms(n):
    p = tini([1e-4] * n)
    for method in ("binomial", "flat", "chain", "spoc", "fnf"):
        pred = simulate(p, plan(p, "0", method=method))
        assert pred.makespan == pytest.approx((n - 1) * 1e-4 if n < 3 else 2e-4)
        assert set(pred.arrival) == {str(i) for i in range(n)}


def test_every_pair_of_flows_of_a_buffer_is_simulated():
    """Two trees each carrying half a message (multi-tree) deliver both halves."""
    p = tini([1e-4] * 3, t_byte=1e-6)
    t1 = Tree.from_edges("0", [("0", "1"), ("1", "2")])
    t2 = Tree.from_edges("0", [("0", "2"), ("2", "1")])
    s = Schedule("bcast", "two-trees", 100, (Flow(t1, 50), Flow(t2, 50, offset=50)))
    pred = simulate(p, s)
    per = 1e-4 + 50e-6
    # root: 0->1 [0, per), 0->2 [per, 2 per); 1->2 at per; 2->1 at 2 per
    assert pred.arrival["2"] == pytest.approx(2 * per)
    assert pred.arrival["1"] == pytest.approx(3 * per)
    assert len(pred.transfers) == 4
    assert sorted(pred.sends()) == [("0", "1"), ("0", "2"), ("1", "2"), ("2", "1")]


# -- send order: program order, no overtaking ------------------------------------------------


def link_platform(links, ids=None, model="hockney"):
    """Nodes in ``ids`` order (default: as the links first name them)."""
    if ids is None:
        ids = list(dict.fromkeys(x for a, b, *_ in links for x in (a, b)))
    nodes = tuple(Node(x) for x in ids)
    return Platform(nodes, tuple(Link(a, b, *rest) for a, b, *rest in links), model=model)


def test_a_later_child_never_overtakes_an_earlier_one_whose_link_is_busy():
    """r sends to a, e, b in that order; a forwards to d over a -> r -> e -> d, holding the
    link r -> e during [1, 4) (a takes it first: at equal times the lower node index goes
    first).  r keeps its port for e and waits: e at 5, then b at 8 (the old rule sent to b
    first: b at 4, e at 5, makespan 5 instead of 8)."""
    p = link_platform(
        [("r", "a", 1.0), ("r", "e", 1.0), ("e", "d", 1.0), ("r", "b", 3.0)],
        ids=["a", "r", "e", "d", "b"],
    )
    tree = Tree("r", {"r": ("a", "e", "b"), "a": ("d",)})
    pred = simulate(p, bcast(tree))
    assert pred.arrival == {"r": 0.0, "a": 1.0, "d": 4.0, "e": 5.0, "b": 8.0}
    assert pred.makespan == 8.0
    assert [s for s in pred.sends() if s[0] == "r"] == [("r", "a"), ("r", "e"), ("r", "b")]
    by = {(t.sender, t.receiver): t for t in pred.transfers}
    index = {(t.sender, t.receiver): k for k, t in enumerate(pred.transfers)}
    assert by[("r", "e")].blocked_on == "link"
    assert by[("r", "e")].blocked_link == ("r", "e")
    assert by[("r", "e")].blocked_by == index[("a", "d")]
    assert by[("r", "b")].blocked_on == "send_port"
    assert by[("r", "b")].blocked_by == index[("r", "e")]
    assert by[("a", "d")].blocked_on == "dependency"
    assert by[("a", "d")].blocked_by == index[("r", "a")]
    assert by[("r", "a")].blocked_by is None


def test_a_sender_waits_for_a_link_another_collective_holds():
    """x -> z crosses r -> a during [0, 3); r's first send (to a) waits for it, holding the
    port, and its second (to b) follows: a at 4, b at 6."""
    p = link_platform(
        [("x", "r", 1.0), ("r", "a", 1.0), ("a", "z", 1.0), ("r", "b", 2.0)],
        ids=["x", "r", "a", "z", "b"],
    )
    s1 = Schedule("multicast", "t", 0, (Flow(Tree("r", {"r": ("a", "b")}), 0),))
    s2 = Schedule("multicast", "t", 0, (Flow(Tree("x", {"x": ("z",)}), 0),))
    pred = simulate(p, Schedule.concurrent([s1, s2]))
    assert pred.arrival["z"] == 3.0
    assert pred.arrival["a"] == 4.0
    assert pred.arrival["b"] == 6.0
    assert pred.sends() == [("x", "z"), ("r", "a"), ("r", "b")]


def test_hetcoll_simulate_is_the_function_and_no_module_shadows_it():
    """``hetcoll.simulate`` is the function; the simulator's modules live in
    ``hetcoll.simulator``, so ``import hetcoll.simulate`` cannot give a module whose name the
    package attribute hides."""
    import hetcoll
    import hetcoll.simulator

    assert hetcoll.simulate is hetcoll.simulator.simulate
    assert importlib.util.find_spec("hetcoll.simulate") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("hetcoll.simulate")
