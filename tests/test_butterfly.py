"""The ``balanced`` planner (:mod:`hetcoll.planners.butterfly`): hivemind's butterfly
allreduce with bandwidth-balanced shares — the shares against the LP's optimum, the data
every rank ends with, the shifted all-to-all order, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from hetcoll import PlannerError, plan, simulate
from hetcoll.generators.stars import star_platform
from hetcoll.planners.butterfly import balanced_shares
from test_recursive import check_result, equal


def lp_time(rates, total):
    """hivemind's LP by brute force: minimise T subject to M + (N - 2) b_i <= T B_i,
    sum b = M, b >= 0 (variables b_1..b_N, T)."""
    n = len(rates)
    c = np.zeros(n + 1)
    c[-1] = 1.0
    a = np.zeros((n, n + 1))
    for i, r in enumerate(rates):
        a[i, i] = n - 2
        a[i, -1] = -r
    eq = np.ones((1, n + 1))
    eq[0, -1] = 0
    got = linprog(c, A_ub=a, b_ub=-np.full(n, float(total)), A_eq=eq, b_eq=[total])
    assert got.status == 0
    return got.fun


@pytest.mark.parametrize("seed", range(12))
def test_shares_reach_the_lp_optimum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10))
    rates = rng.choice([1.0, 2.5, 10.0, 40.0], size=n)
    total = 10**6
    shares = balanced_shares(rates, total)
    assert sum(shares) == total and min(shares) >= 0
    t = max((total + (n - 2) * b) / r for b, r in zip(shares, rates, strict=True))
    assert t == pytest.approx(lp_time(rates, total), rel=1e-5)
    assert t == pytest.approx(max(total / rates.min(), 2 * (n - 1) * total / rates.sum()))


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_every_rank_ends_with_the_sum(n):
    for p in (equal(n, 1e-6, 1e-9), star_platform(n)):
        for nbytes in (3, 1000 * n + 1):
            check_result(plan(p, None, method="balanced", collective="allreduce", nbytes=nbytes))


def test_a_shifted_all_to_all():
    """Step ``s`` of each phase: rank ``u`` sends rank ``u + s + 1``, so on equal NICs
    each phase is ``N - 1`` steps of ``M / N`` bytes, as the ring's: the same time."""
    n = 6
    p = star_platform(n, ("10Gbps",))
    s = plan(p, None, method="balanced", collective="allreduce", nbytes=6 << 20)
    assert [x.child for x in s.order["2"]] == [str((2 + k % 5 + 1) % n) for k in range(10)]
    ring = plan(p, None, method="ring", collective="allreduce", nbytes=6 << 20)
    assert simulate(p, s).makespan == pytest.approx(simulate(p, ring).makespan, rel=1e-9)


def test_refusals():
    p = equal(3, 1e-6, 1e-9)
    with pytest.raises(PlannerError, match="does not plan a allgather"):
        plan(p, None, method="balanced", collective="allgather", nbytes=8)
