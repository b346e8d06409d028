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
