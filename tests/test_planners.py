"""Tree planners: the paper's worked example, eq. (1), structure, invariants of every planner."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll import REGISTRY, PlannerError, Platform, Schedule, UnknownPlannerError, plan, simulate
from hetcoll.errors import HetcollError, UnknownNodeError
from hetcoll.planners import plan_multiple
from hetcoll.planners.classic import binomial_edges
from hetcoll.planners.spoc import spoc_bound
from hetcoll.platform import load_platform, nodes_from_costs

TREE_PLANNERS = sorted(k for k, v in REGISTRY.items() if "bcast" in v.collectives)


def tini(costs, t_byte=0.0):
    return Platform(nodes_from_costs(costs, t_byte), model="tini")


@st.composite
def instances(draw, max_n=12, classes=(1, 2, 3, 4, 5, 6, 7, 8)):
    n = draw(st.integers(2, max_n))
    costs = [draw(st.sampled_from(classes)) * 100e-6 for _ in range(n)]
    t_byte = draw(st.sampled_from([0.0, 1e-9, 5e-8]))
    root = draw(st.integers(0, n - 1))
    k = draw(st.integers(1, n - 1))
    others = [i for i in range(n) if i != root]
    members = draw(st.one_of(st.none(), st.permutations(others).map(lambda xs: xs[:k])))
    nbytes = draw(st.sampled_from([0, 1, 1024]))
    p = tini(costs, t_byte)
    return p, str(root), None if members is None else [str(m) for m in members], nbytes


def test_fig1_exact():
    p = load_platform("fig1")
    times = {m: simulate(p, plan(p, "1", method=m)).makespan for m in ("binomial", "spoc", "fnf")}
    assert times == pytest.approx({"binomial": 700e-6, "spoc": 500e-6, "fnf": 400e-6})
    assert spoc_bound(
        100e-6, [300e-6, 300e-6, 300e-6, 300e-6, 100e-6, 300e-6, 300e-6]
    ) == pytest.approx(500e-6)


def test_fig1_trees():
    p = load_platform("fig1")
    assert plan(p, "1", method="binomial").tree.children == {
        "1": ("5", "3", "2"),
        "5": ("7", "6"),
        "3": ("4",),
        "7": ("8",),
    }
    # SPOC: fast node 6 takes binomial position 4 (3 descendants)
    assert plan(p, "1", method="spoc").tree.children["6"] == ("3", "7")
    fnf = plan(p, "1", method="fnf").tree
    assert fnf.children == {"1": ("6", "2", "4", "7"), "6": ("3", "5", "8")}


def test_binomial_edges_mpich_order():
    assert binomial_edges(8) == [(0, 4), (0, 2), (0, 1), (2, 3), (4, 6), (4, 5), (6, 7)]
    assert binomial_edges(5) == [(0, 4), (0, 2), (0, 1), (2, 3)]
    assert binomial_edges(1) == []


@given(instances())
def test_every_planner_gives_a_valid_deterministic_schedule(inst):
    p, root, members, nbytes = inst
    expected = {root} | set(members or p.ids)
    for method in TREE_PLANNERS:
        s = plan(p, root, members, method=method, nbytes=nbytes)
        assert set(s.participants) == expected
        assert s.root == root
        s.validate(p)
        again = plan(p, root, members, method=method, nbytes=nbytes)
        assert again.to_json() == s.to_json()
        assert Schedule.from_json(s.to_json()) == s


@given(instances(max_n=40))
def test_spoc_never_exceeds_eq1(inst):
    """Eq. (1) is SPOC's time on Fig. 1 and an upper bound in general."""
    p, root, members, nbytes = inst
    s = plan(p, root, members, method="spoc", nbytes=nbytes)
    cost = p.t_ini + nbytes * p.t_byte
    idx = [p.index(m) for m in s.participants if m != root]
    bound = spoc_bound(cost[p.index(root)], cost[idx])
    assert simulate(p, s).makespan <= bound * (1 + 1e-12)


def test_eq1_is_not_always_exact():
    """A counterexample to eq. (1) as an exact formula: a fast node deep in the tree."""
    # three nodes: the root sends twice (2 t_0); eq. (1) charges t_0 + t_1 instead
    p = tini([1e-4, 9e-4, 9e-4])
    s = plan(p, "0", method="spoc")
    assert simulate(p, s).makespan == pytest.approx(2e-4)
    assert spoc_bound(1e-4, [9e-4, 9e-4]) == pytest.approx(10e-4)


@given(st.integers(2, 64), st.integers(1, 9))
def test_homogeneous_fnf_and_spoc_match_binomial(n, t):
    """Sec. 6.4: with equal costs FNF and SPOC give the binomial tree's time."""
    p = tini([t * 1e-4] * n)
    times = {m: simulate(p, plan(p, "0", method=m)).makespan for m in ("binomial", "spoc", "fnf")}
    assert times["spoc"] == pytest.approx(times["binomial"])
    assert times["fnf"] == pytest.approx(times["binomial"])


@given(st.integers(1, 5), st.data())
def test_half_fast_including_source_spoc_equals_fnf(k, data):
    """Sec. 6.4: when half the nodes, the source among them, are fast, SPOC and FNF agree."""
    n = 2**k
    order = data.draw(st.permutations(range(1, n)))
    fast = {0, *order[: n // 2 - 1]}
    p = tini([1e-4 if i in fast else 4e-4 for i in range(n)])
    assert simulate(p, plan(p, "0", method="spoc")).makespan == pytest.approx(
        simulate(p, plan(p, "0", method="fnf")).makespan
    )


@given(instances(max_n=30))
def test_fnf_receivers_join_fastest_first(inst):
    p, root, members, nbytes = inst
    s = plan(p, root, members, method="fnf", nbytes=nbytes)
    cost = p.t_ini + nbytes * p.t_byte
    arrival = simulate(p, s).arrival
    by_speed = sorted(
        (m for m in s.participants if m != root), key=lambda m: (cost[p.index(m)], p.index(m))
    )
    times = [arrival[m] for m in by_speed]
    assert times == sorted(times)


def test_fnf_pairwise_model_uses_the_matrix():
    lat = np.array([[0, 1, 9, 9], [1, 0, 1, 9], [9, 1, 0, 1], [9, 9, 1, 0]], dtype=float)
    p = Platform.from_dict(
        {"model": "postal", "nodes": [{"id": x} for x in "abcd"], "latency": lat.tolist()}
    )
    pred = simulate(p, plan(p, "a", method="fnf"))
    assert pred.makespan == pytest.approx(3.0)  # along the cheap path a-b-c-d


def test_multicast_reaches_exactly_the_members():
    p = load_platform("fig1")
    s = plan(p, "3", ["8", "1", "5"], method="fnf")
    assert s.collective == "multicast"
    assert set(s.participants) == {"3", "8", "1", "5"}
    # 3 -> 1 (fast) at 300 µs; 1 then serves 5 at 400 µs and 8 at 500 µs
    assert simulate(p, s).arrival == pytest.approx({"3": 0, "1": 3e-4, "5": 4e-4, "8": 5e-4})


def test_multiple_multicast_plans_one_tree_per_group():
    p = load_platform("fig1")
    s = plan_multiple(p, [("1", ["2", "3"]), ("6", ["7", "8", "1"])], method="fnf")
    assert s.roots == {0: "1", 1: "6"}
    assert set(s.members(1)) == {"6", "7", "8", "1"}
    s.validate(p)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"method": "fnff"}, UnknownPlannerError, "unknown planner 'fnff'; choose from: .*fnf"),
        ({"root": "9"}, UnknownNodeError, "unknown node '9'"),
        ({"members": ["2", "x"]}, UnknownNodeError, "unknown node 'x'"),
        ({"members": []}, PlannerError, "members: empty"),
        ({"members": ["1"]}, PlannerError, "no destination besides the root"),
        ({"members": ["2", "2"]}, PlannerError, "listed twice"),
        ({"nbytes": -1}, PlannerError, "size"),
        ({"segment_size": 0}, PlannerError, "segment size"),
    ],
)
def test_bad_requests(kwargs, error, message):
    p = load_platform("fig1")
    args = {"root": "1", "members": None, "method": "fnf", **kwargs}
    with pytest.raises(error, match=message):
        plan(p, args.pop("root"), args.pop("members"), **args)


def test_unknown_option_warns():
    p = load_platform("fig1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan(p, "1", method="fnf", options={"depth": 3})
    assert any("ignores unknown option 'depth'" in str(w.message) for w in caught)


def test_registry_metadata_is_complete():
    for name, info in REGISTRY.items():
        assert info.name == name
        assert info.paper and info.complexity and info.summary
        assert (info.func.__doc__ and "Examples" in info.func.__doc__) or name not in (
            "binomial",
            "spoc",
            "fnf",
        )


def test_pipelined_chain_beats_binomial_for_long_messages():
    off_diagonal = np.ones((8, 8)) - np.eye(8)
    p = Platform.from_dict(
        {
            "model": "hockney",
            "nodes": [{"id": str(i)} for i in range(8)],
            "latency": (off_diagonal * 1e-5).tolist(),
            "bandwidth": np.full((8, 8), 1e9).tolist(),
        }
    )
    n = 8 * 2**20
    chain = simulate(p, plan(p, "0", method="chain", nbytes=n, segment_size=64 * 1024)).makespan
    binom = simulate(p, plan(p, "0", method="binomial", nbytes=n)).makespan
    assert binom == pytest.approx(3 * (1e-5 + n / 1e9))
    assert chain < binom / 2
    assert math.isfinite(chain)


@given(instances(max_n=10))
def test_auto_is_the_best_of_the_registered_planners(inst):
    p, root, members, nbytes = inst
    s = plan(p, root, members, method="auto", nbytes=nbytes)
    # a message in one piece: the planners for pipelined messages are no candidates
    count = len(p) if members is None else len({root, *members})
    best = min(
        simulate(p, plan(p, root, members, method=m, nbytes=nbytes)).makespan
        for m in TREE_PLANNERS
        if m != "auto" and REGISTRY[m].unfit("bcast", "tini", count, pipelined=False) is None
    )
    assert simulate(p, s).makespan == pytest.approx(best)
    assert s.params["chosen"] in TREE_PLANNERS


@given(
    st.integers(2, 400),
    st.lists(st.sampled_from([100, 150, 200, 300, 333, 450, 800, 1700]), min_size=1, max_size=8),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_fnf_window_path_equals_the_heap(n, classes, seed, jitter):
    """FNF's vectorised slot assignment builds exactly the tree of Fig. 3's heap loop."""
    from hetcoll.planners.fnf import _slots_by_heap, _slots_by_window

    rng = np.random.default_rng(seed)
    cost = rng.choice(np.array(classes) * 1e-6, size=n)
    if jitter:  # near-ties across classes
        cost = cost + rng.uniform(0, 1e-9, size=n)
    root = int(rng.integers(0, n))
    order = [int(i) for i in np.argsort(cost, kind="stable") if i != root]
    assert _slots_by_window(root, np.array(order), cost) == _slots_by_heap(root, order, cost)


def test_fnf_with_zero_costs_falls_back_to_the_heap():
    p = tini([0.0] * 70 + [1e-4] * 30)
    s = plan(p, "80", method="fnf")
    assert simulate(p, s).makespan == pytest.approx(1e-4)  # one slow send, then free relays


@st.composite
def routed_instances(draw):
    """A hockney platform on random links (a random tree plus extra links; latencies and
    node costs from small sets: many ties), a root, members (or all) and a size."""
    from hetcoll import Link, Node

    n = draw(st.integers(2, 14))
    pairs = [(draw(st.integers(0, i - 1)), i) for i in range(1, n)]
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n))
    seen = {frozenset(q) for q in pairs}
    for a, b in extra:
        if a != b and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            pairs.append((a, b))
    lat = st.sampled_from([0.0, 1e-6, 2e-6, 0.1, 0.2, 0.3])
    bw = st.sampled_from([1e6, 2e6, math.inf])
    links = tuple(Link(str(a), str(b), draw(lat), draw(bw)) for a, b in pairs)
    t_ini = st.sampled_from([0.0, 1e-6, 0.1])
    nodes = tuple(Node(str(i), t_ini=draw(t_ini)) for i in range(n))
    p = Platform(nodes, links, model="hockney")
    root = draw(st.integers(0, n - 1))
    others = [i for i in range(n) if i != root]
    members = draw(
        st.one_of(st.none(), st.permutations(others).map(lambda xs: xs[: len(xs) // 2 + 1]))
    )
    nbytes = draw(st.sampled_from([0, 1, 1000]))
    return p, str(root), None if members is None else [str(m) for m in members], nbytes


def _fnf_pairwise_reference(delay, busy, root, order):
    """Fig. 3 with pairwise costs in plain Python: each receiver, in order, goes to the
    sender (in join order) with the least ``free + delay``, the first one on ties."""
    senders, free, edges = [root], [0.0], []
    for receiver in order:
        times = [free[j] + delay[s][receiver] for j, s in enumerate(senders)]
        j = times.index(min(times))
        edges.append((senders[j], receiver))
        free[j] += busy[senders[j]][receiver]
        senders.append(receiver)
        free.append(times[j])
    return edges


@given(routed_instances())
def test_fnf_pairwise_is_figure_3_in_plain_python(inst):
    """FNF's vectorised loop under hockney on routed platforms (ties everywhere: equal
    latencies, zero latencies, equal node costs) picks exactly the senders of the plain
    loop, ties to the earliest-joined sender, and the schedule is those edges."""
    import importlib

    from hetcoll.planners._common import prepare

    fnf_module = importlib.import_module("hetcoll.planners.fnf")
    p, root, members, nbytes = inst
    req = prepare(p, root, members, None, nbytes, None)
    cost = req.node_cost()
    others = np.array(req.others(), dtype=np.intp)
    order = others[np.argsort(cost[others], kind="stable")].tolist()
    m = req.message_size()
    delay = req.bound.delay_matrix(m).tolist()
    busy = req.bound.send_matrix(m).tolist()
    expected = _fnf_pairwise_reference(delay, busy, req.root, order)
    assert fnf_module._fnf_pairwise(req, order) == expected
    tree = plan(p, root, members, method="fnf", nbytes=nbytes).tree
    children = {}
    for a, b in expected:
        children.setdefault(p.ids[a], []).append(p.ids[b])
    assert {k: list(v) for k, v in tree.children.items()} == children


def test_every_registered_planner_plans_or_refuses_on_a_nic_star():
    """Every planner, every operation it plans, on a star under the ``nic`` model (shared
    max-min NICs): a valid schedule the simulator runs, or a one-line refusal."""
    from hetcoll.generators import star_platform
    from hetcoll.planners import plan_hypercube

    p = star_platform(6, ("25Gbps", "10Gbps"), "5us")
    planned = 0
    for name, info in sorted(REGISTRY.items()):
        for op in info.collectives:
            if op in ("multicast", "multi_multicast"):
                continue
            try:
                if info.kind == "hypercube":
                    s = plan_hypercube(p, op, method=name, nbytes=0 if op == "barrier" else 4096)
                else:
                    extra = {} if op == "bcast" else {"collective": op}
                    s = plan(p, "0", method=name, nbytes=4096, **extra)
            except HetcollError as exc:
                assert "\n" not in str(exc), (name, op)
                continue
            s.validate(p)
            assert simulate(p, s).makespan > 0, (name, op)
            planned += 1
    assert planned >= len(REGISTRY)
