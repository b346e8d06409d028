"""Whole slices per period (planners/period_rounding.py): the busiest port of the rounding
that multi_tree timetables is at least as idle as the greedy rounding's, no single slice
moved from a tree to another lowers it, and on a small instance it is the optimum that a
brute force finds and the greedy misses."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.planners.period_rounding import greedy, shares_and_loads, whole_slices
from hetcoll.planners.periodic_timetable import PERIODS
from test_planners_multi_tree_sizes import DENSITIES, SEEDS, packed


def _brute(loads: np.ndarray, periods: int) -> float:
    """The least busiest port over every split of ``periods`` slices among the trees."""
    k = len(loads)
    return min(
        float((np.bincount(c, minlength=k) @ loads).max())
        for c in itertools.combinations_with_replacement(range(k), periods)
    )


def test_the_rounding_finds_the_optimum_the_greedy_misses():
    # three trees on three ports: rounding down and handing out the rest greedily gives
    # (0, 2, 3) slices, busiest port 11; the optimum is (0, 4, 1), busiest 8
    loads = np.array([[3.0, 3.0, 3.0], [1.0, 1.0, 2.0], [1.0, 3.0, 0.0]])
    share = np.array([0.132, 0.256, 0.612])
    assert greedy(share, loads, 5).tolist() == [0.0, 2.0, 3.0]
    m = whole_slices(share, loads, 5)
    assert m.tolist() == [0.0, 4.0, 1.0]
    assert float((m @ loads).max()) == _brute(loads, 5) == 8.0


@settings(max_examples=15, deadline=None)
@given(n=st.integers(4, 16), density=DENSITIES, seed=SEEDS)
def test_no_single_move_lowers_the_busiest_port(n, density, seed):
    case = packed(n, density, seed, 256)
    if case is None:
        return
    _p, _req, g, packing = case
    share, loads = shares_and_loads(g, packing)
    for periods in PERIODS[:8]:
        m = whole_slices(share, loads, periods)
        assert m.sum() == periods and np.all(m >= 0) and np.all(m == np.round(m))
        top = float((m @ loads).max())
        assert top <= float((greedy(share, loads, periods) @ loads).max()) * (1 + 1e-12)
        for a in np.flatnonzero(m > 0):
            for b in range(len(m)):
                if b != a:
                    moved = m @ loads - loads[a] + loads[b]
                    assert float(moved.max()) >= top * (1 - 1e-9), (periods, a, b)


def test_the_fewest_flows_of_any_candidate_period():
    # two trees on one port, 97 % and 3 % of the slices: 16 per period round to (16, 0),
    # so that period's timetable has one flow; 32 round to (31, 1), two flows
    from hetcoll.planners.period_rounding import fewest_flows

    share, loads = np.array([0.97, 0.03]), np.array([[1.0], [1.0]])
    assert whole_slices(share, loads, 16).tolist() == [16.0, 0.0]
    assert whole_slices(share, loads, 32).tolist() == [31.0, 1.0]
    assert fewest_flows(share, loads, 1000, [32]) == 2
    assert fewest_flows(share, loads, 1000, [16, 32]) == fewest_flows(share, loads, 1000, [16]) == 1
    assert fewest_flows(share, loads, 10, [32]) == 1  # (9.6875, 0.3125) slices: (10, 0)
