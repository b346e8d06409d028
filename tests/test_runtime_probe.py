"""The probe on a busy host, without MPI: round trips a host can only delay, confirmed or
reported (the MPI side is in test_cli_runtime_mpi.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import plan
from hetcoll.generators import testbed as make_testbed
from hetcoll.runtime.probe import RESOLUTION, confirmed, fit_platform, reliability

SIZES = (0, 4096, 16384)


def true_rtt(platform) -> np.ndarray:
    """Round trips of the sender-only model: one send of each end, N x N x sizes."""
    t = np.array([[n.t_ini + s * n.t_byte for s in SIZES] for n in platform.nodes])
    rtt = t[:, None, :] + t[None, :, :]
    for s in range(len(SIZES)):
        np.fill_diagonal(rtt[:, :, s], 0.0)
    return rtt


def busy_rounds(rtt: np.ndarray, rounds: int, rng, clean: int) -> np.ndarray:
    """``rounds`` measurements of every series, each delayed by a busy host (never early)
    except in ``clean`` randomly chosen rounds per series."""
    delays = rng.exponential(0.4, size=(rounds, *rtt.shape)) * rtt[None]
    for idx in np.ndindex(rtt.shape):
        for r in rng.choice(rounds, size=clean, replace=False):
            delays[(r, *idx)] = 0.0
    delays = np.triu(delays.transpose(0, 3, 1, 2), 1).transpose(0, 2, 3, 1)
    delays = delays + delays.transpose(0, 2, 1, 3)  # symmetric, as the probe combines them
    return rtt[None] + delays


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), rounds=st.integers(2, 6))
def test_two_undisturbed_rounds_are_confirmed_and_recover_the_platform(seed, rounds):
    """The least round trip of a series is the undisturbed one; once a second round agrees,
    the probe trusts it, and the fit is the true platform (the emulated costs)."""
    rng = np.random.default_rng(seed)
    true = make_testbed(8, 4)
    measured = busy_rounds(true_rtt(true), rounds, rng, clean=2)
    rel = reliability(measured, 0.05, true.ids, SIZES)
    assert rel["reliable"] and rel["unconfirmed"] == []
    probed, _ = fit_platform(np.nanmin(measured, axis=0), SIZES, true.ids)
    assert np.allclose(probed.t_ini, true.t_ini, rtol=1e-9)
    assert plan(probed, "0", method="fnf").tree == plan(true, "0", method="fnf").tree


def test_a_series_disturbed_in_every_round_but_one_is_reported():
    rng = np.random.default_rng(4)
    true = make_testbed(6, 3)
    rtt = true_rtt(true)
    measured = busy_rounds(rtt, 3, rng, clean=3)  # undisturbed...
    measured[:, 1, 4, 2] = measured[:, 4, 1, 2] = rtt[1, 4, 2] * np.array([1.0, 1.3, 1.7])
    rel = reliability(measured, 0.05, true.ids, SIZES)
    assert not rel["reliable"]
    assert rel["unconfirmed"] == [["1", "4", 16384]]  # ...except this one
    assert rel["spread"] == pytest.approx(0.3)


def test_confirmation_is_relative_with_an_absolute_floor():
    # 1 % apart: confirmed at 5 %; 10 % apart: not; 1 µs apart on 5 µs: the timer's noise
    rounds = np.array([[1e-3, 1e-3, 5e-6], [1.01e-3, 1.1e-3, 6e-6]])
    assert confirmed(rounds, 0.05).tolist() == [True, False, True]
    assert RESOLUTION >= 1e-6
    # a series measured once (NaN in the other rounds) is never confirmed
    assert not confirmed(np.array([[1e-3], [np.nan], [np.nan]]), 0.05)[0]


def test_a_forecast_of_disturbed_rounds_can_be_wrong_where_the_minimum_is_not():
    """Why the default estimate is the minimum: the NWS forecaster tracks the last round
    when it was the least wrong recently, and a busy host's last round may be delayed."""
    from hetcoll.runtime.forecast import Forecaster

    true = make_testbed(4, 2)
    rtt = true_rtt(true)
    measured = np.stack([rtt, rtt, rtt * 1.3])  # the last round on a busy host
    f = Forecaster()
    for r in measured:
        f.update(r)
    assert not np.allclose(f.forecast(), rtt)
    assert np.array_equal(np.nanmin(measured, axis=0), rtt)


def _rounds_delayed_per_node(true, sizes, rounds: int, rng, low: float, high: float):
    """Each round delays every node's costs by its own factor in [low, high] (a loaded host
    slows processes unevenly, and differently from one probe to the next)."""
    out = []
    for _ in range(rounds):
        f = rng.uniform(low, high, size=len(true))
        t = np.array([[n.t_ini + s * n.t_byte for s in sizes] for n in true.nodes]) * f[:, None]
        rtt = t[:, None, :] + t[None, :, :]
        for s in range(len(sizes)):
            np.fill_diagonal(rtt[:, :, s], 0.0)
        out.append(rtt)
    return np.stack(out)


def test_rounds_that_disagree_do_not_invent_heterogeneity():
    """Eight equal nodes, each round slowed 1-5x per node: the least round trips differ
    from node to node, and without the rounds' spreads the fit would call them different
    (several speed classes); with them it keeps one class."""
    from hetcoll.platform import Platform, nodes_from_costs

    sizes = (0, 4096, 65536)
    true = Platform(nodes_from_costs([50e-6] * 8, [1e-9] * 8))
    rounds = _rounds_delayed_per_node(true, sizes, 3, np.random.default_rng(3), 1.0, 5.0)
    best = np.nanmin(rounds, axis=0)
    _, blind = fit_platform(best, sizes, true.ids)
    assert blind["classes"] > 1  # what the probe reported before it looked at the rounds
    probed, fit = fit_platform(best, sizes, true.ids, spread_rounds=rounds)
    assert fit["classes"] == 1 and len(set(probed.t_ini)) == 1
    lo, hi = np.array(fit["node_spread"]["t_ini"]).T
    assert (hi / lo > 1.5).all()  # reported: the rounds disagreed


def test_nodes_that_differ_beyond_the_spread_stay_apart():
    sizes = (0, 4096, 65536)
    true = make_testbed(8, 4)  # fast and slow, 2.15x apart
    rounds = _rounds_delayed_per_node(true, sizes, 3, np.random.default_rng(5), 1.0, 1.03)
    probed, fit = fit_platform(np.nanmin(rounds, axis=0), sizes, true.ids, spread_rounds=rounds)
    assert fit["classes"] == 2
    fast = probed.t_ini == probed.t_ini.min()
    assert (fast == (true.t_ini == true.t_ini.min())).all()
    assert np.allclose(probed.t_ini, true.t_ini, rtol=0.03)


def test_the_fit_predicts_large_messages():
    """Round trips with 1-3 % noise at the default sizes (0 B-16 MiB): the fitted platform's
    model predicts a 64 MiB round trip within 5 %; one per-byte cost fitted on 0-16 KiB
    only, as the probe once did, is off by far more than the 20 % a plan needs."""
    from hetcoll.platform import Platform, nodes_from_costs
    from hetcoll.runtime.probe import DEFAULT_SIZES

    true = Platform(nodes_from_costs([30e-6] * 4, [0.25e-9] * 4))
    rng = np.random.default_rng(0)
    for sizes, curve, ok in ((DEFAULT_SIZES, True, True), ((0, 4096, 16384), False, False)):
        rtt = true_rtt_at(true, sizes) * rng.uniform(1.01, 1.03, size=(4, 4, len(sizes)))
        rtt = (rtt + rtt.transpose(1, 0, 2)) / 2
        probed, _ = fit_platform(rtt, sizes, true.ids, tolerance=0.0, curve=curve)
        n = 64 << 20
        want = 2 * (30e-6 + n * 0.25e-9)
        bound = probed.model.bind(probed)
        got = bound.delay(0, 1, n) + bound.delay(1, 0, n)
        assert (abs(got / want - 1) < 0.05) == ok, (sizes, got / want)


def true_rtt_at(platform, sizes) -> np.ndarray:
    t = np.array([[n.t_ini + s * n.t_byte for s in sizes] for n in platform.nodes])
    rtt = t[:, None, :] + t[None, :, :]
    for s in range(len(sizes)):
        np.fill_diagonal(rtt[:, :, s], 0.0)
    return rtt
