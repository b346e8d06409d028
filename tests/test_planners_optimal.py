"""The exact ``optimal`` planner against the full recurrence and lemma-free reference solvers
(tests/_reference.py)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _reference import brute_force_optimum, ordered_trees, subset_optimum
from hetcoll import PlannerError, Schedule, load_platform, plan, simulate
from hetcoll.planners import REGISTRY, applicable
from hetcoll.planners.optimal import _ClassDP, optimal, optimal_time, optimal_times
from hetcoll.platform import Platform, nodes_from_costs

US = 1e-6
T_INI = [k * 100 * US for k in range(1, 9)]  # Banikazemi et al., Sec. 6.3
T_BYTE = [0.0, 1e-9, 2.5e-9]
SIZES = [0, 1, 1000, 4096]


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


@st.composite
def instances(draw, max_n: int = 8):
    """A tini platform (costs from a few classes), a root, members (None or a subset), nbytes."""
    n = draw(st.integers(2, max_n))
    values = draw(st.lists(st.sampled_from(T_INI), min_size=1, max_size=4, unique=True))
    t_ini = draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))
    t_byte = draw(st.lists(st.sampled_from(T_BYTE), min_size=n, max_size=n))
    platform = Platform(nodes_from_costs(t_ini, t_byte), model="tini")
    root = draw(st.integers(0, n - 1))
    members = None
    if draw(st.booleans()):
        keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        members = [str(i) for i in range(n) if keep[i] and i != root]
        if not members:
            members = [str((root + 1) % n)]
    return platform, str(root), members, draw(st.sampled_from(SIZES))


def member_costs(platform, root, members, nbytes) -> tuple[list[float], int]:
    """The members' sending costs in rank order and the root's position among them."""
    cost = platform.t_ini + nbytes * platform.t_byte
    ids = [int(root)] + ([int(m) for m in members] if members is not None else [])
    idx = sorted(set(ids)) if members is not None else list(range(len(platform)))
    return [float(cost[i]) for i in idx], idx.index(int(root))


# -- the paper's example -------------------------------------------------------------------


def test_fig1_optimum_is_400us():
    p = load_platform("fig1")
    schedule = plan(p, "1", method="optimal")
    assert simulate(p, schedule).makespan == approx(400 * US)
    assert optimal_time(100 * US, [300 * US] * 5 + [100 * US] + [300 * US]) == approx(400 * US)


def test_fig1_every_root():
    p = load_platform("fig1")
    costs = [float(c) for c in p.t_ini]
    for r, node in enumerate(p.ids):
        expected = subset_optimum(costs, r)
        assert simulate(p, optimal(p, node)).makespan == approx(expected)


# -- exactness against the lemma-free references -------------------------------------------


@settings(max_examples=150)
@given(instances(max_n=8))
def test_equals_subset_recurrence_and_its_own_value(case):
    platform, root, members, nbytes = case
    schedule = optimal(platform, root, members, nbytes=nbytes)
    simulated = simulate(platform, schedule).makespan
    costs, r = member_costs(platform, root, members, nbytes)
    value = optimal_time(costs[r], costs[:r] + costs[r + 1 :])
    assert simulated == approx(value)  # the schedule achieves the programme's value
    assert value == approx(subset_optimum(costs, r))


@settings(max_examples=25)
@given(instances(max_n=6))
def test_equals_brute_force_over_every_ordered_tree(case):
    platform, root, members, nbytes = case
    best = brute_force_optimum(platform, root, members, nbytes)
    assert simulate(platform, optimal(platform, root, members, nbytes=nbytes)).makespan == approx(
        best
    )


@settings(max_examples=40)
@given(instances(max_n=6))
def test_the_bounds_path_equals_brute_force(case):
    """The planner with its lower bounds on every instance (as it runs on large ones: the
    threshold below which it runs the full recurrence set to 0) against every ordered tree."""
    platform, root, members, nbytes = case
    best = brute_force_optimum(platform, root, members, nbytes)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys.modules["hetcoll.planners.optimal"], "_FULL_IS_CHEAP", 0)
        schedule = optimal(platform, root, members, nbytes=nbytes)
    assert simulate(platform, schedule).makespan == approx(best)


def test_the_bounds_path_equals_the_subset_recurrence_on_300_seeded_instances():
    """The lower-bound path against the lemma-free recurrence over subsets (an independent
    solver, tests/_reference.py), up to 8 participants in 1-5 classes."""
    rng = np.random.default_rng(1313)
    for _ in range(300):
        costs = [float(c) for c in _seeded_costs(rng, 7)]
        r = int(rng.integers(len(costs)))
        others = costs[:r] + costs[r + 1 :]
        fast = _ClassDP.of(costs[r], others, certify=True).value
        assert fast == pytest.approx(subset_optimum(costs, r), rel=1e-12), costs


def test_ordered_tree_enumeration_counts():
    # (2n-2)! / (n-1)! ordered trees on n labelled nodes, divided by n for a fixed root
    for n in range(1, 7):
        count = sum(1 for _ in ordered_trees(0, frozenset(range(1, n))))
        assert count == math.factorial(2 * n - 2) // math.factorial(n - 1) // n


@settings(max_examples=400)
@given(
    st.lists(st.floats(1.0, 10.0), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(0, 3), min_size=2, max_size=8),
    st.data(),
)
def test_lemma2_loses_nothing(values, picks, data):
    """Banikazemi et al.'s Lemma 2, which the fast programme relies on, checked against the
    lemma-free subset recurrence and the lemma-free class programme."""
    costs = [values[i % len(values)] for i in picks]
    r = data.draw(st.integers(0, len(costs) - 1))
    others = costs[:r] + costs[r + 1 :]
    reference = subset_optimum(costs, r)
    assert _ClassDP.of(costs[r], others, lemma2=False).value == approx(reference)
    assert _ClassDP.of(costs[r], others).value == approx(reference)


def test_lemma2_on_seeded_instances_up_to_11_members():
    rng = np.random.default_rng(2024)
    for _ in range(300):
        n = int(rng.integers(2, 12))
        costs = list(rng.choice(rng.uniform(1, 10, size=int(rng.integers(1, 5))), size=n))
        with_lemma = _ClassDP.of(costs[0], costs[1:]).value
        assert with_lemma == approx(_ClassDP.of(costs[0], costs[1:], lemma2=False).value)


def test_all_costs_distinct():
    rng = np.random.default_rng(7)
    costs = list(rng.uniform(1e-4, 1e-3, size=8))
    for r in (0, 3, 7):
        assert optimal_time(costs[r], costs[:r] + costs[r + 1 :]) == approx(
            subset_optimum(costs, r)
        )


# -- the lower bounds settle entries exactly ------------------------------------------------


def _seeded_costs(rng: np.random.Generator, max_n: int) -> np.ndarray:
    """1-5 classes, random or multiples of 100 µs, sometimes a free (cost 0) node."""
    k = int(rng.integers(1, 6))
    if rng.random() < 0.5:
        values = rng.uniform(1e-4, 1e-3, k)
    else:
        values = rng.choice(np.asarray(T_INI), k, replace=False)
    costs = rng.choice(values, size=int(rng.integers(2, max_n + 1)))
    return np.append(costs, 0.0) if rng.random() < 0.2 else costs


def test_tables_equal_the_full_recurrence_entry_by_entry():
    """400 seeded instances: every entry of the programme that settles entries by its lower
    bounds equals the full recurrence's (``certify=False``: every entry the minimum over
    every D, the planner as it was before the bounds), bit for bit, and so do the trees."""
    rng = np.random.default_rng(13)
    for _ in range(400):
        costs = _seeded_costs(rng, 14)
        fast = _ClassDP.of(costs[0], costs[1:], certify=True)
        full = _ClassDP.of(costs[0], costs[1:], certify=False)
        assert np.array_equal(fast.L, full.L), costs
        assert np.array_equal(fast.S, full.S), costs
        others = list(range(1, len(costs)))
        assert fast.edges(0, others) == full.edges(0, others), costs


@pytest.mark.parametrize(("n", "k"), [(20, 3), (18, 4), (16, 6)])
def test_larger_instances_equal_the_full_recurrence(n, k):
    rng = np.random.default_rng(n * k)
    costs = rng.choice(rng.uniform(1e-4, 1e-3, k), size=n)
    for r in (0, int(np.argmax(costs))):
        others = np.delete(costs, r)
        fast = _ClassDP.of(costs[r], others, certify=True)
        full = _ClassDP.of(costs[r], others, certify=False)
        assert np.array_equal(fast.L, full.L)
        assert fast.evaluations < full.evaluations  # what the bounds are for


@settings(max_examples=60)
@given(instances(max_n=9))
def test_schedule_equals_the_full_recurrences(case):
    platform, root, members, nbytes = case
    from hetcoll.planners._common import prepare, tree_schedule

    req = prepare(platform, root, members, "tini", nbytes)
    cost = req.node_cost()
    others = req.others()
    full = _ClassDP.of(float(cost[req.root]), [float(cost[m]) for m in others], certify=False)
    expected = tree_schedule(req, "optimal", full.edges(req.root, others))
    assert optimal(platform, root, members, nbytes=nbytes).to_json() == expected.to_json()


def test_optimal_times_equal_optimal_time_bit_for_bit():
    """Many instances over the same classes in one programme (banikazemi-table2's use)."""
    rng = np.random.default_rng(5)
    values = [T_INI[k] for k in (5, 0, 3, 7, 1)]  # distinct, in no particular order
    rows = [rng.choice(values, size=int(rng.integers(1, 10))) for _ in range(300)]
    roots = [values.index(row[0]) for row in rows]
    counts = [[int(np.sum(row[1:] == v)) for v in values] for row in rows]
    got = optimal_times(values, roots, counts)
    for row, t in zip(rows, got, strict=True):
        assert t == optimal_time(row[0], row[1:])  # exactly
    assert optimal_times(values, [], np.zeros((0, len(values)))).shape == (0,)


def test_optimal_times_refuses_repeated_classes():
    with pytest.raises(PlannerError, match="distinct cost classes"):
        optimal_times([1.0, 1.0], [0], [[1, 1]])


# -- invariants shared with the other planners ---------------------------------------------


def _whole_message_tree(schedule: Schedule) -> bool:
    """One tree carrying the whole unsegmented message: what the optimum is taken over."""
    (flow,) = schedule.flows if len(schedule.flows) == 1 else (None,)
    return flow is not None and flow.segment_size is None and flow.nbytes == schedule.nbytes


@settings(max_examples=100)
@given(instances(max_n=10))
def test_no_registered_tree_planner_beats_it(case):
    platform, root, members, nbytes = case
    best = simulate(platform, optimal(platform, root, members, nbytes=nbytes)).makespan
    tried = set()
    for name, info in sorted(REGISTRY.items()):
        if name in ("optimal", "auto") or "bcast" not in info.collectives:
            continue
        try:
            schedule = plan(platform, root, members, method=name, nbytes=nbytes)
        except PlannerError:
            continue
        if not _whole_message_tree(schedule):
            continue
        tried.add(name)
        assert simulate(platform, schedule).makespan >= best * (1 - 1e-12), name
    assert {"binomial", "flat", "chain", "spoc", "fnf"} <= tried


@settings(max_examples=40)
@given(instances(max_n=10))
def test_deterministic_valid_and_json_round_trip(case):
    platform, root, members, nbytes = case
    first = optimal(platform, root, members, nbytes=nbytes)
    again = plan(platform, root, members, method="optimal", nbytes=nbytes)
    assert first.to_json() == again.to_json()
    back = Schedule.from_json(first.to_json())
    assert back == first
    assert back.to_json() == first.to_json()
    first.program().validate()
    assert set(first.participants) == {root, *(members or platform.ids)}


def test_worst_case_24_members_in_8_classes():
    p = Platform(nodes_from_costs(np.repeat(T_INI, 3)), model="tini")
    for root in ("0", "23"):
        schedule = optimal(p, root)
        t = simulate(p, schedule).makespan
        assert t == approx(optimal_time(p.t_ini[int(root)], np.delete(p.t_ini, int(root))))
        assert t <= simulate(p, plan(p, root, method="fnf")).makespan * (1 + 1e-12)
        schedule.program().validate()


def test_ties_reach_fast_nodes_first():
    # Fig. 1: like FNF, the root first serves the other fast node
    assert optimal(load_platform("fig1"), "1").tree.children["1"][0] == "6"


def test_single_node_and_pair():
    solo = Platform(nodes_from_costs([5 * US]), model="tini")
    assert simulate(solo, optimal(solo, "0")).makespan == 0.0
    pair = Platform(nodes_from_costs([5 * US, 1 * US]), model="tini")
    assert simulate(pair, optimal(pair, "1")).makespan == approx(1 * US)


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["hockney", "postal"])
def test_refuses_pairwise_models(model):
    n = 4
    latency = np.full((n, n), 10 * US) - np.diag([10 * US] * n)
    p = Platform(nodes_from_costs([1 * US] * n), latency=latency, bandwidth=np.full((n, n), 1e9))
    with pytest.raises(PlannerError, match=rf"exact only under the 'tini' model.*'{model}'"):
        optimal(p, "0", model=model)


def test_refuses_segmented_messages():
    with pytest.raises(PlannerError, match="unsegmented"):
        optimal(load_platform("fig1"), "1", nbytes=4096, segment_size=1024)


def test_refuses_instances_beyond_max_pairs():
    with pytest.raises(PlannerError, match=r"8 participants in 2 cost classes.*max_pairs=10"):
        plan(load_platform("fig1"), "1", method="optimal", options={"max_pairs": 10})


def test_registry_entry():
    info = REGISTRY["optimal"]
    assert info.kind == "exact"
    assert info.exact_models == ("tini",)
    assert "optimal" in applicable("bcast", "tini", 24)
    assert "optimal" not in applicable("bcast", "hockney", 8)
    assert "optimal" not in applicable("bcast", "tini", 25)


def test_refuses_a_bad_max_pairs():
    with pytest.raises(PlannerError, match="max_pairs: must be an integer >= 0"):
        plan(load_platform("fig1"), "1", method="optimal", options={"max_pairs": "many"})
    with pytest.raises(PlannerError, match="max_states: must be an integer >= 0"):
        plan(load_platform("fig1"), "1", method="optimal", options={"max_states": -1})


def test_refuses_instances_beyond_max_states():
    with pytest.raises(PlannerError, match=r"8 participants in 2 cost classes need tables of 21"):
        plan(load_platform("fig1"), "1", method="optimal", options={"max_states": 20})


def test_gives_up_after_max_pairs_evaluations():
    """The bounds settle most entries; when they do not, the budget is checked as it goes."""
    costs = np.random.default_rng(1).choice(T_INI[:4], size=16)
    dp = _ClassDP.of(costs[0], costs[1:], certify=True)
    with pytest.raises(PlannerError, match=r"took more than max_pairs"):
        _ClassDP.of(costs[0], costs[1:], certify=True, max_pairs=dp.evaluations // 2)


def test_huge_instances_are_refused_before_any_allocation():
    costs = [float(c) for c in range(2, 102)]  # 100 distinct costs: 3^100 pairs
    with pytest.raises(PlannerError, match=r"101 participants in 100 cost classes"):
        optimal_time(1.0, costs)


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan])
def test_optimal_time_refuses_bad_costs(bad):
    with pytest.raises(PlannerError, match="finite and >= 0"):
        optimal_time(1.0, [2.0, bad])
    with pytest.raises(PlannerError, match="finite and >= 0"):
        optimal_time(bad, [2.0])
