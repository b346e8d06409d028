"""``hetcoll reproduce banikazemi-table2``: FNF against the optimum (Banikazemi et al., Table 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hetcoll.experiments import Config, get_experiment
from hetcoll.experiments.banikazemi import TABLE2_PAPER, _table2_chunk, table2
from hetcoll.figures import draw_figures


@pytest.fixture(scope="module")
def moderate():
    """2 500 trials per row: a relative standard error of about 1 % on each mean."""
    return table2(Config(trials=2500, seed=11, workers=2))


def test_registered():
    assert get_experiment("banikazemi-table2").func is table2


def test_small_run_shape_and_provable_rows(tmp_path):
    result = table2(Config(trials=150, seed=5, workers=1))
    rows = {r["participants"]: r for r in result.data["rows"]}
    assert sorted(rows) == list(range(2, 10))
    for r in rows.values():
        assert r["trials"] == 150
        assert r["fnf_below_opt"] == 0  # no single trial where FNF beats the optimum
        assert r["fnf_mean"] >= r["opt_mean"] * (1 - 1e-12)
    for n in (2, 3):  # FNF is optimal for 2 and 3 participants: the paper's 0.00 %
        assert rows[n]["gap_pct"] == pytest.approx(0.0, abs=1e-9)
        assert rows[n]["fnf_optimal_pct"] == 100.0
    # two participants: the latency is the source's cost, uniform in {100..800} µs
    assert 350e-6 < rows[2]["opt_mean"] < 550e-6
    assert "984.29" in result.tables[0] and "977.12" in result.tables[0]
    json.dumps(result.data)  # JSON as it is
    (png,) = draw_figures(result, tmp_path)
    assert png.stat().st_size > 0


def test_trial_chunks_are_pure_functions_of_their_seed():
    task = (7, 40, 123)
    assert _table2_chunk(task) == _table2_chunk(task)
    assert _table2_chunk(task) != _table2_chunk((7, 40, 124))


def test_means_match_the_paper(moderate):
    for r in moderate.data["rows"]:
        paper_fnf, paper_opt = (x * 1e-6 for x in TABLE2_PAPER[r["participants"]])
        assert r["fnf_mean"] == pytest.approx(paper_fnf, rel=0.04)
        assert r["opt_mean"] == pytest.approx(paper_opt, rel=0.04)


def test_fnf_is_near_optimal_as_the_paper_finds(moderate):
    for r in moderate.data["rows"]:
        assert r["fnf_below_opt"] == 0
        assert 0.0 <= r["gap_pct"] < 1.6  # the paper: 0 to 0.99 %
        assert r["fnf_optimal_pct"] >= 85.0  # the paper: identical trees in 90-100 % of cases
        if r["participants"] <= 5:  # the paper's 0.00 % rows
            assert r["gap_pct"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_fnf_is_optimal_up_to_5_participants_on_the_table2_costs(n):
    """Why the paper's first four rows are exactly 0.00 %: over every (source cost, multiset
    of other costs) from {100, ..., 800} µs, FNF's simulated latency is the optimum."""
    import itertools

    from hetcoll import plan, simulate
    from hetcoll.experiments.banikazemi import TABLE2_COSTS
    from hetcoll.planners.optimal import optimal_time
    from hetcoll.platform import Platform, nodes_from_costs

    for root in TABLE2_COSTS:
        for others in itertools.combinations_with_replacement(TABLE2_COSTS, n - 1):
            p = Platform(nodes_from_costs([root, *others]), model="tini")
            t_fnf = simulate(p, plan(p, "0", method="fnf")).makespan
            assert t_fnf == pytest.approx(optimal_time(root, others), rel=1e-12)


def test_fnf_is_not_always_optimal_with_6_participants():
    """Source 200 µs, others 300, 400, 400, 400, 400 µs: FNF 800 µs; the optimum,
    700 µs, serves a 400 µs node before the 300 µs one."""
    from hetcoll import plan, simulate
    from hetcoll.planners.optimal import optimal_time
    from hetcoll.platform import Platform, nodes_from_costs

    costs = [200e-6, 300e-6, 400e-6, 400e-6, 400e-6, 400e-6]
    p = Platform(nodes_from_costs(costs), model="tini")
    t_fnf = simulate(p, plan(p, "0", method="fnf")).makespan
    t_opt = simulate(p, plan(p, "0", method="optimal")).makespan
    assert t_opt == pytest.approx(optimal_time(costs[0], costs[1:]))
    assert (t_fnf * 1e6, t_opt * 1e6) == pytest.approx((800.0, 700.0))


# -- sharing the work across trials changes no byte ------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_output_is_byte_identical_to_the_trial_by_trial_run(capsys, tmp_path, workers):
    """``tests/golden/banikazemi-table2_trials120_seed7.*`` were written when every trial was
    planned, simulated and solved on its own: the table on stdout and
    the JSON file are the same bytes now that equal cases are computed once per size."""
    from _cli import run
    from _golden import TABLE2_ARGS, assert_table2_golden

    code, out, _ = run(capsys, *TABLE2_ARGS, "--workers", workers, "--out", tmp_path)
    assert code == 0
    assert_table2_golden(out, tmp_path)


def test_each_trial_latency_equals_its_own_plan_and_simulation():
    """The shared path's per-case values against planning, simulating and solving each
    drawn trial separately, as main did (FNF by simulate, the optimum by optimal_time)."""
    from hetcoll import simulate
    from hetcoll.experiments.banikazemi import (
        _table2_cases,
        _table2_draw,
        _table2_fnf,
        _table2_optimal,
    )
    from hetcoll.planners import fnf
    from hetcoll.planners.optimal import optimal_time
    from hetcoll.platform import Platform, nodes_from_costs

    for n in (2, 5, 9):
        costs = _table2_draw((n, 60, 99 + n))
        cases, inverse = _table2_cases(costs)
        t_fnf = np.asarray(_table2_fnf(cases))[inverse]
        t_opt = _table2_optimal(cases)[inverse]
        for row, f, o in zip(costs.tolist(), t_fnf, t_opt, strict=True):
            p = Platform(nodes_from_costs(row), model="tini")
            assert f == simulate(p, fnf(p, "0")).makespan  # bit for bit
            assert o == optimal_time(row[0], row[1:])
