"""multi_tree ranks the periodic timetables of a long one-port broadcast by their lags too
(planners/multitree.py, _lag_choice; periodic_timetable.lag_ranked, lag_estimate): the
finish bound's choice is still found exactly, the run kept is never slower than it, and on
a Fig. 4 platform the estimate's choice runs faster."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import plan, simulate
from hetcoll.bounds import lower_bound
from hetcoll.generators import random_graph_platform
from hetcoll.planners import multitree, periodic_timetable
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.pipelined import _start
from hetcoll.planners.slack_packing import shared_slack
from hetcoll.planners.steady import unbounded

L = 10**6


def _both(p, total: int, monkeypatch=None):
    """multi_tree's plan of ``total`` slices as it is and as the finish bound alone ranks
    the periods (``_lag_prices`` None)."""
    s = plan(p, "0", method="multi_tree", nbytes=total * L, segment_size=L)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(multitree, "_lag_prices", lambda *args: None)
        by_finish = plan(p, "0", method="multi_tree", nbytes=total * L, segment_size=L)
    return s, by_finish


def test_on_a_fig4_platform_the_lags_choose_a_faster_timetable():
    """n = 30, seed 1, 8 192 slices (bench_sizes.py's platform): the finish bound keeps
    16 slices per period, 98.85 % of the bound; ranked by the lags, 28, 99.29 %."""
    p = random_graph_platform(30, 0.12, seed=1)
    s, by_finish = _both(p, 8192)
    bound = lower_bound(p, "0", 8192 * L).seconds
    fast, slow = simulate(p, s).makespan, simulate(p, by_finish).makespan
    assert by_finish.params["slices_per_period"] == 16 and bound / slow < 0.989
    assert fast < slow and bound / fast > 0.992
    assert s.params["finish_bound"] >= fast  # still the kept timetable's own bound


@settings(max_examples=10, deadline=None)
@given(
    n=st.integers(5, 14),
    density=st.sampled_from([0.2, 0.4]),
    seed=st.integers(0, 10**6),
    total=st.sampled_from([64, 160, 400]),
)
def test_never_slower_than_the_finish_bounds_choice(n, density, seed, total):
    """Every message made too long to be list scheduled whole (MESSAGE_TRANSFERS 0): the
    run kept is no slower than the one the finish bound alone keeps."""
    p = random_graph_platform(n, density, seed=seed)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(multitree, "MESSAGE_TRANSFERS", 0)
        s, by_finish = _both(p, total)
    assert simulate(p, s).makespan <= simulate(p, by_finish).makespan


@pytest.mark.parametrize(("n", "seed", "total"), [(30, 1, 8192), (20, 3, 2048), (12, 5, 640)])
def test_lag_ranked_finds_timetabled_s_choice(n, seed, total):
    """by_finish is timetabled's candidate exactly (the search by estimate goes further but
    leaves the finish bound's choice as it was), for the packing's trees and the slack
    packing's (repaired, finer periods); by_estimate is no worse by its estimate."""
    p = random_graph_platform(n, 0.12 if n > 20 else 0.3, seed=seed)
    _req, g = _start(p, "0", None, None, total * L, L)
    prob = g.problem()
    assert not unbounded(prob)
    packing = shared_packing(prob)
    for pack, repair in ((packing, False), (shared_slack(prob, packing), True)):
        if pack is None:
            continue
        by_estimate, by_finish = periodic_timetable.lag_ranked(
            g, pack, total, repair, packing.prices
        )
        m, trees, timetable, finish = periodic_timetable.timetabled(g, pack, None, total, repair)
        assert by_finish[0] == m and by_finish[3] == finish and by_finish[2][1:] == timetable[1:]
        assert all((a == b).all() for a, b in zip(by_finish[1], trees, strict=True))
        assert by_finish[2][0] == timetable[0]
        assert by_estimate[4] <= by_finish[4] and by_estimate[3] >= 0


def test_the_periods_of_lag_finer_are_weighed_by_the_estimate():
    """n = 50, seed 2, 8 192 slices (bench_sizes.py's platform): the slack packing's trees
    at 26 slices per period (periodic_timetable.LAG_FINER), 98.22 % of the bound, where the
    periods the finish bound weighs keep 20, 98.05 %."""
    assert 26 in periodic_timetable.LAG_FINER
    assert 26 not in periodic_timetable.candidate_periods(8192, True)
    p = random_graph_platform(50, 0.12, seed=2)
    s = plan(p, "0", method="multi_tree", nbytes=8192 * L, segment_size=L)
    bound = lower_bound(p, "0", 8192 * L).seconds
    assert s.params["slices_per_period"] == 26
    assert bound / simulate(p, s).makespan > 0.982
