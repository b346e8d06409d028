"""hetcoll's gap-aware planner: optimal under eq. (4), never slower than flat / HLOT / SPT
under eq. (2), and its building blocks (exact tree evaluator, ECEF, local search)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import Node, PlannerError, Platform, Schedule, load_platform, plan, simulate
from hetcoll.planners._common import prepare
from hetcoll.planners._trees import arrival_times, matrices, subtree_times
from hetcoll.planners.gap_aware import ecef_parents, improve_tree

BASELINES = ("flat", "hlot", "spt")


def _platform(
    seed, n, *, o=0.0, g=0.0, o_r=0.0, t_byte=0.0, bandwidth=False, asym=True, spread=None
):
    rng = np.random.default_rng(seed)
    w = rng.uniform(1e-3, spread or rng.choice([2e-3, 2e-2, 2e-1]), (n, n))
    if not asym:
        w = np.triu(w, 1) + np.triu(w, 1).T
    np.fill_diagonal(w, 0.0)
    bw = None
    if bandwidth:
        bw = rng.uniform(1e6, 1e8, (n, n))
        np.fill_diagonal(bw, np.inf)
    nodes = tuple(Node(str(i), t_byte=t_byte) for i in range(n))
    model = {"name": "postal", "overhead": o, "gap": g, "recv_overhead": o_r}
    return Platform(nodes, latency=w, bandwidth=bw, model=model)


def _time(p, method, root="0", members=None, nbytes=0, **options):
    return simulate(p, plan(p, root, members, method=method, nbytes=nbytes, options=options))


@settings(max_examples=150)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 14),
    o=st.sampled_from([0.0, 1e-4, 2e-3]),
    g=st.sampled_from([0.0, 5e-4, 1e-2]),
    o_r=st.sampled_from([0.0, 3e-4]),
    root=st.integers(0, 13),
    asym=st.booleans(),
)
def test_never_slower_than_flat_hlot_spt_under_eq2(seed, n, o, g, o_r, root, asym):
    p = _platform(seed, n, o=o, g=g, o_r=o_r, asym=asym)
    r = str(root % n)
    mine = _time(p, "gap_aware", r).makespan
    for name in BASELINES:
        assert mine <= _time(p, name, r).makespan, name  # exactly: same arithmetic
        assert mine <= _time(p, name, r, order="join").makespan if name != "flat" else True


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 10), nbytes=st.integers(1, 10**6))
def test_never_slower_with_per_byte_costs(seed, n, nbytes):
    p = _platform(seed, n, o=1e-4, g=1e-4, t_byte=1e-9, bandwidth=True)
    mine = _time(p, "gap_aware", nbytes=nbytes).makespan
    assert all(mine <= _time(p, b, nbytes=nbytes).makespan for b in BASELINES)


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 12), k=st.integers(2, 12))
def test_never_slower_for_multicast(seed, n, k):
    p = _platform(seed, n, g=2e-3)
    members = [str(i) for i in np.random.default_rng(seed).permutation(n)[: min(k, n)]]
    root, rest = members[0], members[1:]
    pred = _time(p, "gap_aware", root, rest)
    assert set(pred.arrival) == {root, *rest}
    assert all(pred.makespan <= _time(p, b, root, rest).makespan for b in BASELINES)


@settings(max_examples=150)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 14), o_r=st.sampled_from([0, 1e-3]))
def test_optimal_under_eq4_equals_spt(seed, n, o_r):
    p = _platform(seed, n, o_r=o_r)
    assert _time(p, "gap_aware").makespan == _time(p, "spt").makespan


def _best_ordered_tree(p, root=0):
    """Brute force under eq. (2): every rooted tree, each in longest-first order (optimal
    for a fixed tree, so this is the optimum up to floating-point rounding)."""
    req = prepare(p, str(root), None, None, 0, None)
    m = matrices(req)
    n = len(p)
    others = [v for v in range(n) if v != root]
    best = np.inf
    for choice in itertools.product(range(n), repeat=n - 1):
        parent = dict(zip(others, choice, strict=True))
        kids = [[] for _ in range(n)]
        for v, u in parent.items():
            kids[u].append(v)
        seen, stack = {root}, [root]
        while stack:
            stack.extend(c for c in kids[stack.pop()] if c not in seen and not seen.add(c))
        if len(seen) != n:
            continue
        s = subtree_times(root, kids, m.delay, m.busy)
        best = min(best, s[root])
    return best


@pytest.mark.parametrize("seed", range(6))
def test_never_better_than_the_optimum_and_often_reaches_it(seed):
    p = _platform(seed, 6, o=2e-3, g=6e-3)
    best = _best_ordered_tree(p)
    mine = _time(p, "gap_aware").makespan
    assert mine >= best * (1 - 1e-12)
    assert mine <= min(_time(p, b).makespan for b in BASELINES)


def test_strictly_faster_on_many_instances():
    """Where the gap is comparable to the latencies (here 1-20 ms against 4 ms)."""
    wins = 0
    for seed in range(20):
        p = _platform(seed, 16, o=1e-3, g=3e-3, spread=2e-2)
        mine = _time(p, "gap_aware").makespan
        if mine < min(_time(p, b).makespan for b in BASELINES):
            wins += 1
    assert wins >= 15


def test_evaluator_is_the_simulator_bit_for_bit():
    for seed in range(30):
        p = _platform(seed, 11, o=1e-4 * (seed % 3), g=7e-4, o_r=1e-5, t_byte=1e-9, bandwidth=True)
        s = plan(p, "0", method="binomial", nbytes=1000)
        req = prepare(p, "0", None, None, 1000, None)
        m = matrices(req)
        kids = [[int(c) for c in s.tree.children.get(str(v), ())] for v in range(len(p))]
        got = arrival_times(0, kids, m.delay, m.busy)
        pred = simulate(p, s)
        assert {str(k): v for k, v in got.items()} == pred.arrival  # ==, not approx


def test_ecef_is_dijkstra_without_gap_and_charges_the_gap_otherwise():
    p = _platform(3, 12)
    req = prepare(p, "0", None, None, 0, None)
    m = matrices(req)
    parent, join = ecef_parents(m, 0, req.members)
    kids = [[] for _ in range(12)]
    for v in join[1:]:
        kids[parent[v]].append(v)
    assert max(arrival_times(0, kids, m.delay, m.busy).values()) == _time(p, "spt").makespan
    # with a gap the greedy's own estimates are the simulated arrivals (join order = send order)
    q = _platform(3, 12, g=5e-3)
    req = prepare(q, "0", None, None, 0, None)
    m = matrices(req)
    parent, join = ecef_parents(m, 0, req.members, lookahead=True)
    edges = [(str(parent[v]), str(v)) for v in join[1:]]
    from hetcoll.schedule import Flow, Tree

    sched = Schedule("bcast", "ecef", 0, (Flow(Tree.from_edges("0", edges), 0),))
    sched.validate(q)


def test_local_search_never_worsens_and_respects_max_steps():
    p = _platform(11, 24, o=1e-3, g=4e-3)
    req = prepare(p, "0", None, None, 0, None)
    m = matrices(req)
    star = [list(range(1, 24))] + [[] for _ in range(23)]
    before = subtree_times(0, [list(k) for k in star], m.delay, m.busy)[0]
    kids, steps = improve_tree(0, star, m.delay, m.busy, max_steps=5)
    assert steps <= 5
    after = subtree_times(0, kids, m.delay, m.busy)[0]
    assert after < before
    assert sorted(v for k in kids for v in k) == list(range(1, 24))
    assert star[0] == list(range(1, 24))  # input untouched


def test_options_and_provenance():
    p = load_platform("park-fig2").with_model({"name": "postal", "gap": 0.2})
    s = plan(p, "A", method="gap_aware")
    assert s.params["start"]
    s.validate(p)
    assert Schedule.from_json(s.to_json()) == s
    assert plan(p, "A", method="gap_aware") == s  # deterministic
    no_ls = plan(p, "A", method="gap_aware", options={"max_steps": 0})
    assert simulate(p, no_ls).makespan >= simulate(p, s).makespan
    with pytest.raises(PlannerError, match="max_steps: must be an integer >= 0"):
        plan(p, "A", method="gap_aware", options={"max_steps": -1})
