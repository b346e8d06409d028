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


def _classes_chain(probed, fit, key: str) -> bool:
    """Whether each speed class's nodes, in order of their own fit, are within 5 % of the
    first or have ``fit[key]`` intervals that chain into one (the rule of step 6)."""
    raw, spans = fit["node_raw"]["t_ini"], fit[key]["t_ini"]
    for value in np.unique(probed.t_ini):
        members = sorted(np.flatnonzero(probed.t_ini == value), key=lambda k: raw[k])
        first, top = raw[members[0]], spans[members[0]][1]
        for k in members[1:]:
            if not (raw[k] <= first * 1.05 or spans[k][0] <= top):
                return False
            top = max(top, spans[k][1])
    return True


def test_the_json_gives_the_intervals_the_classes_were_split_on():
    """Three rounds: a class's nodes overlap in their 95 % intervals (what the classes are
    split on), which are wider than the rounds' ranges; the JSON gives those intervals, so
    a reader can see why nodes whose ranges do not meet share a class."""
    sizes = (0, 4096, 65536)
    true = make_testbed(8, 4)
    ranges_fail = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        rounds = _rounds_delayed_per_node(true, sizes, 3, rng, 1.0, 2.5)
        probed, fit = fit_platform(np.nanmin(rounds, axis=0), sizes, true.ids, spread_rounds=rounds)
        assert _classes_chain(probed, fit, "node_interval"), seed
        lo, hi = np.array(fit["node_interval"]["t_ini"]).T
        slo, shi = np.array(fit["node_spread"]["t_ini"]).T
        assert (lo <= slo).all() and (hi >= shi).all()
        ranges_fail += not _classes_chain(probed, fit, "node_spread")
    assert ranges_fail  # the ranges alone would not explain every class


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
    """Round trips with 1-3 % noise on a host whose bytes cost 1.57 ns up to 16 MiB and
    3.55 ns beyond: probed at the default sizes (0 B-64 MiB) the fitted platform's model
    predicts a 64 MiB round trip within 5 %; probed up to 16 MiB only (the former default)
    the last segment's cost is extrapolated and the prediction is off by more than the
    20 % a plan needs."""
    from hetcoll.runtime.probe import DEFAULT_SIZES
    from hetcoll.sizecurve import SizeCurve

    host = SizeCurve((0, 16 << 20), (1.57 / 3.55, 1.0))
    n = 64 << 20
    for sizes, ok in ((DEFAULT_SIZES, True), ((0, 4096, 65536, 1 << 20, 16 << 20), False)):
        true = curved_rtt(sizes, 30e-6, 3.55e-9, host)
        rtt = true * np.random.default_rng(0).uniform(1.01, 1.03, size=true.shape)
        rtt = (rtt + rtt.transpose(1, 0, 2)) / 2
        probed, _ = fit_platform(rtt, sizes, [str(i) for i in range(4)], tolerance=0.0)
        want = 2 * (30e-6 + host.effective(n) * 3.55e-9)
        error = abs(predicted(probed, n) / want - 1)
        assert error < 0.05 if ok else error > 0.2, (sizes, error)


# -- large messages: the trimmed mean of interleaved samples (step 3) -----------------------

LARGE_SIZES = (0, 4096, 65536, 1 << 20, 16 << 20, 64 << 20)


def curved_rtt(sizes, t_ini, t_byte, curve) -> np.ndarray:
    """Round trips of equal nodes on a host whose bytes cost ``curve`` times ``t_byte``
    (a :class:`SizeCurve`), 4 x 4 x sizes."""
    eff = np.asarray(curve.effective(np.asarray(sizes, dtype=float)))
    one = 2 * (t_ini + eff * t_byte)
    rtt = np.broadcast_to(one, (4, 4, len(sizes))).copy()
    for s in range(len(sizes)):
        np.fill_diagonal(rtt[:, :, s], 0.0)
    return rtt


def noisy_samples(rtt, m, rng, noise, outliers, factor) -> np.ndarray:
    """``m`` samples per series (N x N x sizes x m, symmetric): each the true round trip
    times ``1 +- noise`` (uniform), and ``outliers`` of them per series and side ``factor``
    times slower and as many ``factor`` times faster."""
    n, _, k = rtt.shape
    x = rtt[..., None] * rng.uniform(1 - noise, 1 + noise, size=(n, n, k, m))
    for idx in np.ndindex(n, n, k):
        picked = rng.choice(m, size=2 * outliers, replace=False)
        x[idx][picked[:outliers]] *= factor
        x[idx][picked[outliers:]] /= factor
    iu = np.triu_indices(n, 1)
    x[iu[1], iu[0]] = x[iu[0], iu[1]]
    for s in range(k):
        for j in range(m):
            np.fill_diagonal(x[:, :, s, j], 0.0)
    return x


def predicted(platform, n) -> float:
    bound = platform.model.bind(platform)
    return bound.delay(0, 1, n) + bound.delay(1, 0, n)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    m=st.integers(8, 24),
    noise=st.floats(0.0, 0.05),
    factor=st.floats(1.5, 20.0),
    scales=st.lists(st.floats(0.2, 3.0), min_size=4, max_size=4),
)
def test_the_trimmed_mean_recovers_the_curve_despite_outliers(seed, m, noise, factor, scales):
    """Samples with up to a quarter of outliers on each side (slower and faster, by up to
    20x) and noise of at most 5 %: the fit of the probe's estimate predicts every probed
    large round trip (1 MiB and up) within the noise and a few per cent, and the curve it
    fits is the host's, segment by segment; the least sample (``"min"``) is dragged down
    by the fast outliers."""
    from hetcoll.runtime.probe import TRIM, pooled, series_estimate
    from hetcoll.sizecurve import SizeCurve

    rng = np.random.default_rng(seed)
    curve = SizeCurve((0, *LARGE_SIZES[1:-1]), (*scales, 1.0))
    true = curved_rtt(LARGE_SIZES, 20e-6, 0.5e-9, curve)
    out = int(TRIM * m)  # per side: exactly what the trimmed mean drops
    rounds = [noisy_samples(true, m, rng, noise, out, factor)]
    rtt = series_estimate(pooled(rounds), LARGE_SIZES)
    big = np.asarray(LARGE_SIZES) >= (1 << 20)
    assert np.allclose(rtt[0, 1, big], true[0, 1, big], rtol=noise + 1e-9)
    probed, _ = fit_platform(rtt, LARGE_SIZES, [str(i) for i in range(4)], tolerance=0.0)
    for k, n in enumerate(LARGE_SIZES):
        if n >= 1 << 20:
            assert predicted(probed, n) == pytest.approx(true[0, 1, k], rel=2 * noise + 0.01)
    if out and factor > 1 + 4 * noise:
        least = np.nanmin(pooled(rounds), axis=-1)
        assert (least[0, 1, big] < true[0, 1, big] * (1 - noise) / (factor**0.5)).all()


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=20),
    extra=st.integers(0, 5),
    seed=st.integers(0, 1000),
)
def test_trimmed_mean_ignores_a_quarter_at_each_end_and_missing_samples(values, extra, seed):
    from hetcoll.runtime.probe import trimmed_mean

    x = np.array(values)
    rng = np.random.default_rng(seed)
    cut = int(0.25 * len(x))
    got = trimmed_mean(np.concatenate([rng.permutation(x), [np.nan] * extra]))
    assert got == pytest.approx(np.sort(x)[cut : len(x) - cut].mean(), rel=1e-12)
    # the values it drops can be anything beyond the kept ones
    wild = np.sort(x)
    wild[:cut] = 0.0
    wild[len(x) - cut :] = 1e9
    assert trimmed_mean(rng.permutation(wild)) == pytest.approx(got, rel=1e-12)
    assert np.isnan(trimmed_mean(np.full(3, np.nan)))


def test_below_large_the_least_sample_and_none_where_nothing_was_measured():
    from hetcoll.runtime.probe import series_estimate

    x = np.array([[[1.0, 5.0, 3.0], [np.nan] * 3], [[10.0, 50.0, 30.0], [8.0, 9.0, np.nan]]])
    got = series_estimate(x, [4096, 1 << 20])
    assert got[0, 0] == 1.0 and np.isnan(got[0, 1]) and got[1, 0] == 10.0
    assert got[1, 1] == 8.5  # two samples: nothing trimmed
    assert series_estimate(x, [1 << 20, 1 << 21], large=1 << 62)[1].tolist() == [10.0, 8.0]


@settings(max_examples=25, deadline=None)
@given(low=st.floats(0.4, 0.8), seed=st.integers(0, 1000))
def test_one_class_costs_half_its_pairs_median_round_trip(low, seed):
    """Four equal nodes whose pairs 0-1 and 2-3 (measured in the same tournament round)
    came out ``low`` times the others: the per-node shares of such pairs fall below every
    node's true cost (their class mean predicts less than any pair but the two measured
    low), while the class's cost from the pairs' median predicts the majority."""
    true = curved_rtt(LARGE_SIZES, 30e-6, 1e-9, _identity())
    rng = np.random.default_rng(seed)
    rtt = true * rng.uniform(0.99, 1.01, size=true.shape)
    rtt = (rtt + rtt.transpose(1, 0, 2)) / 2
    for u, v in ((0, 1), (2, 3)):
        rtt[u, v] = rtt[v, u] = rtt[u, v] * low
    probed, fit = fit_platform(rtt, LARGE_SIZES, [str(i) for i in range(4)])
    assert fit["classes"] == 1
    n = 64 << 20
    assert predicted(probed, n) == pytest.approx(true[0, 2, -1], rel=0.02)


def _identity():
    from hetcoll.sizecurve import SizeCurve

    return SizeCurve((0,), (1.0,))


def _noisy_rounds(t_ini, rounds: int, seed: int, noise: float) -> tuple:
    """``rounds`` rounds of every pair's round trips (sizes 0 B-4 MiB), each node's costs
    scaled per round by a normal factor of mean 1 and deviation ``noise``."""
    from hetcoll.platform import Platform, nodes_from_costs

    sizes = (0, 65536, 1 << 20, 4 << 20)
    true = Platform(nodes_from_costs(t_ini, [1e-9 * x / t_ini[0] for x in t_ini]))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        f = rng.normal(1.0, noise, size=len(true))
        t = np.array([[n.t_ini + s * n.t_byte for s in sizes] for n in true.nodes]) * f[:, None]
        rtt = t[:, None, :] + t[None, :, :]
        for s in range(len(sizes)):
            np.fill_diagonal(rtt[:, :, s], 0.0)
        out.append(rtt)
    return true, sizes, np.stack(out)


@settings(max_examples=40, deadline=None)
@given(seed=st.one_of(st.sampled_from([4, 34, 41, 51, 70]), st.integers(0, 10**6)))
def test_equal_nodes_measured_with_noise_are_one_class(seed):
    """Four equal nodes, three rounds, 8 % noise per node and round: the rounds' ranges of
    two nodes fail to overlap by chance (seeds 4, 34, 41, 51, 70: two classes before the
    confidence intervals), the intervals do not; always one class."""
    true, sizes, rounds = _noisy_rounds([50e-6] * 4, 3, seed, 0.08)
    best = np.nanmin(rounds, axis=0)
    _, fit = fit_platform(best, sizes, true.ids, spread_rounds=rounds, curve=False)
    assert fit["classes"] == 1


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_nodes_twice_as_slow_beyond_the_noise_are_two_classes(seed):
    """Fast and slow nodes alternating, 2x apart, 3 rounds of 2 % noise: two classes, the
    slow ones the slow class."""
    true, sizes, rounds = _noisy_rounds([50e-6, 100e-6] * 2, 3, seed, 0.02)
    best = np.nanmin(rounds, axis=0)
    probed, fit = fit_platform(best, sizes, true.ids, spread_rounds=rounds, curve=False)
    assert fit["classes"] == 2
    assert (probed.t_ini[1::2] > probed.t_ini[::2]).all()
