"""Planners of the rooted family: the exact programme against brute force (every tree,
every order, simulated), ``rooted_ls`` against the optimum and every broadcast planner run
backwards, the tree times the planners use against the simulator, and the reversal."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import Platform, load_platform, simulate
from hetcoll.compare import compare
from hetcoll.errors import PlannerError
from hetcoll.planners import REGISTRY, plan
from hetcoll.planners.rooted import EdgeCosts, prepare_rooted, rooted_schedule, rooted_time
from hetcoll.platform import Node
from hetcoll.schedule import Flow, Schedule, Tree

US = 1e-6
COLLECTIVES = ("reduce", "gather", "scatter", "allreduce", "allgather", "reduce_scatter")
FREE = ("allreduce", "allgather", "reduce_scatter")  # no root given: the planner chooses


def platform(n, model, seed):
    rng = np.random.default_rng(seed)
    nodes = tuple(
        Node(
            str(i),
            float(rng.choice([1, 2, 4, 8])) * 10 * US,
            float(rng.choice([1, 3])) * 1e-9,
            gamma=float(rng.choice([0, 2, 8])) * 1e-9,
        )
        for i in range(n)
    )
    if model == "tini":
        return Platform(nodes, model="tini")
    lat = rng.uniform(5, 50, (n, n)) * US
    np.fill_diagonal(lat, 0)
    bw = rng.choice([1e8, 1e9], (n, n))
    return Platform(nodes, latency=lat, bandwidth=bw, model=model)


def root_of(collective):
    return None if collective in FREE else "0"


def brute_force(p, collective, nbytes):
    """The least simulated time over every tree (and every root, when free) and every
    order of every node's children: the definition the programme must meet."""
    ids = p.ids
    n = len(ids)
    best = np.inf
    roots = ids if collective in FREE else ("0",)
    up = collective in ("reduce", "gather", "allreduce", "allgather", "reduce_scatter")
    down = collective in ("scatter", "allreduce", "allgather", "reduce_scatter")
    for root in roots:
        others = [v for v in ids if v != root]
        for parents in itertools.product(ids, repeat=n - 1):
            par = dict(zip(others, parents, strict=True))
            if not _is_tree(par, root):
                continue
            kids = {v: [c for c in others if par[c] == v] for v in ids}
            nodes = [v for v in ids if len(kids[v]) > 1]
            for perms in itertools.product(*(itertools.permutations(kids[v]) for v in nodes)):
                children = {v: tuple(kids[v]) for v in ids if kids[v]}
                children.update(dict(zip(nodes, perms, strict=True)))
                tree = Tree(root, children)
                up_tree, down_tree = (tree if up else None), (tree if down else None)
                best = min(best, _time(p, collective, nbytes, up_tree, down_tree))
    return best


def _is_tree(par, root):
    for v in par:
        seen = set()
        while v != root:
            if v in seen:
                return False
            seen.add(v)
            v = par[v]
    return True


def _time(p, collective, nbytes, up, down):
    total = nbytes * len(p)
    flows = []
    if up is not None:
        kind = "gather" if collective in ("gather", "allgather") else "reduce"
        size = total if kind == "gather" or collective == "reduce_scatter" else nbytes
        flows.append(Flow(up, size, kind=kind))
    if down is not None:
        kind = "bcast" if collective in ("allreduce", "allgather") else "scatter"
        size = nbytes if collective == "allreduce" else total
        flows.append(Flow(down, size, kind=kind))
    return simulate(p, Schedule(collective, "x", nbytes, tuple(flows))).makespan


@pytest.mark.parametrize("model", ["tini", "postal"])
@pytest.mark.parametrize("collective", ["reduce", "gather", "scatter"])
@pytest.mark.parametrize("nbytes", [1000, 40_000])
def test_the_programme_is_the_brute_force_optimum(model, collective, nbytes):
    """Small and large messages: at 40 000 bytes a postal sender's per-byte busy time
    exceeds the transfer's delay, so a sender's last send must not count beyond its
    arrival."""
    for seed in range(3):
        p = platform(5, model, seed)
        got = simulate(p, plan(p, "0", method="rooted_exact", collective=collective, nbytes=nbytes))
        assert got.makespan == pytest.approx(brute_force(p, collective, nbytes), rel=1e-9)
        assert got.makespan == pytest.approx(
            plan(p, "0", method="rooted_exact", collective=collective, nbytes=nbytes).params[
                "optimum"
            ],
            rel=1e-9,
        )


@pytest.mark.parametrize("model", ["tini", "postal"])
def test_compositions_are_the_sum_of_their_parts(model):
    """The up part ends before the down part starts, so the best composition is, over the
    roots, the least sum of the best up part and the best down part there: a
    reduce-scatter's from the programme's reduce and scatter alone (each checked against
    brute force above), an allreduce's (tini) from Banikazemi's exact broadcast."""
    p = platform(5, model, 7)
    total = 500 * len(p)

    def best(collective, root, nbytes, method="rooted_exact"):
        if collective == "bcast":
            return simulate(p, plan(p, root, method=method, nbytes=nbytes)).makespan
        sched = plan(p, root, method=method, collective=collective, nbytes=nbytes)
        return simulate(p, sched).makespan

    whole = plan(p, None, method="rooted_exact", collective="reduce_scatter", nbytes=500)
    parts = min(best("reduce", r, total) + best("scatter", r, 500) for r in p.ids)
    assert simulate(p, whole).makespan == pytest.approx(parts, rel=1e-9)
    if model == "tini":
        whole = plan(p, None, method="rooted_exact", collective="allreduce", nbytes=500)
        parts = min(best("reduce", r, 500) + best("bcast", r, 500, "optimal") for r in p.ids)
        assert simulate(p, whole).makespan == pytest.approx(parts, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 8),
    st.sampled_from(["tini", "postal"]),
    st.sampled_from(COLLECTIVES),
    st.integers(0, 10_000),
)
def test_rooted_ls_between_the_optimum_and_every_reversed_planner(n, model, collective, seed):
    p = platform(n, model, seed)
    root = root_of(collective)
    ours = simulate(p, plan(p, root, method="rooted_ls", collective=collective, nbytes=2048))
    exact = simulate(p, plan(p, root, method="rooted_exact", collective=collective, nbytes=2048))
    assert ours.makespan >= exact.makespan * (1 - 1e-9)
    for name in ("binomial", "flat", "chain", "fnf", "spoc"):
        other = simulate(p, plan(p, root, method=name, collective=collective, nbytes=2048))
        assert ours.makespan <= other.makespan * (1 + 1e-9), name


@pytest.mark.parametrize("model", ["tini", "postal", "hockney"])
def test_the_planners_tree_times_are_the_simulators(model):
    """Where the model has no links to share, the time a rooted planner computes for a
    tree, its children listed in the order it gives (arrival up, Jackson's down), is the
    simulator's, and no other order of the same tree is faster."""
    for seed, collective in itertools.product(range(3), COLLECTIVES):
        p = platform(7, model, seed)
        root = root_of(collective)
        sched = plan(p, root, method="rooted_ls", collective=collective, nbytes=3000)
        assert sched.params["estimate"] == pytest.approx(simulate(p, sched).makespan, rel=1e-9)
        other = plan(p, root, method="binomial", collective=collective, nbytes=3000)
        rr = prepare_rooted(p, collective, other.root, None, None, 3000)
        costs = EdgeCosts(rr, 3000)
        local = {v: k for k, v in enumerate(p.ids)}
        trees = []
        for kind in (rr.up, rr.down):
            flow = next((f for f in other.flows if f.kind == kind), None)
            kids = [[] for _ in p.ids]
            if flow is not None:
                for a, cs in flow.tree.children.items():
                    kids[local[a]] = [local[c] for c in cs]
            trees.append(kids if flow is not None else None)
        t, up, down = rooted_time(rr, costs, trees[0], trees[1], local[other.root])
        relisted = rooted_schedule(rr, "x", local[other.root], up, down)
        assert t == pytest.approx(simulate(p, relisted).makespan, rel=1e-9)
        # the planners' order of children (arrival up, Jackson down) is never slower
        assert t <= simulate(p, other).makespan * (1 + 1e-9)


def test_a_broadcast_planner_backwards_combines_in_the_reverse_send_order():
    """binomial backwards is MPICH's binomial reduce: a node receives from its smallest
    subtree first (mask 1, 2, 4, ...); a scatter keeps the broadcast's order."""
    p = load_platform("fig1")
    bcast = plan(p, "1", method="binomial").tree.children
    reduce = plan(p, "1", method="binomial", collective="reduce", nbytes=4)
    assert reduce.flows[0].kind == "reduce"
    assert {k: v[::-1] for k, v in reduce.tree.children.items()} == bcast
    assert reduce.tree.children["1"] == ("2", "3", "5")
    scatter = plan(p, "1", method="binomial", collective="scatter", nbytes=4)
    assert scatter.tree.children == bcast and scatter.params["reversed"] == "binomial"


def test_which_planners_serve_the_rooted_family():
    for name, info in REGISTRY.items():
        tree_planner = info.kind == "tree" and "bcast" in info.collectives and not info.pipelined
        for collective in COLLECTIVES:
            expected = tree_planner or collective in info.collectives
            assert info.serves(collective) == expected, (name, collective)
    assert REGISTRY["rooted_exact"].unfit("reduce", "tini", 8) is None
    assert "exact only under" in REGISTRY["rooted_exact"].unfit("reduce", "hockney", 8)
    assert "at most 8" in REGISTRY["rooted_exact"].unfit("reduce", "tini", 9)
    with pytest.raises(PlannerError, match="does not plan a reduce"):
        plan(load_platform("fig1"), "1", method="multi_tree", collective="reduce")


def test_auto_chooses_among_trees_and_hypercubes():
    p = load_platform("park-fig2")
    found = compare(p, "allreduce", nbytes=64)
    chosen = plan(p, None, method="auto", collective="allreduce", nbytes=64)
    assert chosen.params["chosen"] == found.best.algorithm
    assert simulate(p, chosen).makespan == found.best.predicted_time
    kinds = {c.schedule.hypercube is None for c in found.ranked}
    assert kinds == {True, False}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"collective": "reduce", "root": None}, "a reduce needs a root"),
        ({"collective": "alltoall", "root": "1"}, "unknown collective 'alltoall'"),
        ({"collective": "gather", "root": "1", "segment_size": 4}, "in one message"),
        ({"collective": "reduce", "root": "1", "sizes": {"1": 4}}, "only a collective of blocks"),
        ({"collective": "gather", "root": "1", "sizes": {"1": 4}}, "'2' is missing"),
    ],
)
def test_bad_rooted_requests_are_refused(kwargs, message):
    p = load_platform("fig1")
    root = kwargs.pop("root")
    with pytest.raises(PlannerError, match=message):
        plan(p, root, method="rooted_ls", nbytes=4, **kwargs)


def test_v_sizes_reach_the_schedule_and_the_messages():
    p = platform(4, "tini", 1)
    sizes = {"0": 10, "1": 20, "2": 30, "3": 40}
    for method in ("rooted_ls", "rooted_exact", "binomial"):
        sched = plan(p, "0", method=method, collective="gather", sizes=sizes)
        assert sched.sizes == sizes and sched.flows[0].nbytes == 100
        sched.program().validate()


def test_rooted_planners_are_deterministic_and_round_trip():
    p = platform(12, "postal", 3)
    for collective in COLLECTIVES:
        a = plan(p, root_of(collective), method="rooted_ls", collective=collective, nbytes=99)
        b = plan(p, root_of(collective), method="rooted_ls", collective=collective, nbytes=99)
        assert a.to_json() == b.to_json()
        assert Schedule.from_json(a.to_json()) == a


@pytest.mark.parametrize(
    ("name", "default", "expected"),
    [
        (None, "auto", "auto"),  # per call: the plan or MPI's own, whichever the model favours
        (None, "mpi", "mpi"),
        (None, "fnf", "rooted_ls"),
        (None, "rooted_exact", "rooted_exact"),
        ("mpi", "fnf", "mpi"),
        ("binomial", "auto", "binomial"),  # a broadcast tree run backwards
        ("auto", "auto", "auto"),
    ],
)
def test_hetcomm_rooted_planner(name, default, expected):
    from hetcoll.hetcomm import rooted_planner

    assert rooted_planner(name, default) == expected


def test_hetcomm_rooted_planner_refuses_a_hypercube_planner():
    from hetcoll.errors import PlannerError
    from hetcoll.hetcomm import rooted_planner

    with pytest.raises(PlannerError, match="plans no reduce"):
        rooted_planner("eff_cube")
