"""The grid generator and its drift over time."""

from __future__ import annotations

import numpy as np
import pytest

from hetcoll.generators import drift, drift_series, eight_sites, grid_platform
from hetcoll.generators.grid import LATENCY


def test_pure_function_of_seed():
    a = grid_platform(3, 2, 3, seed=7, bandwidth=True, asymmetry=0.2)
    b = grid_platform(3, 2, 3, seed=7, bandwidth=True, asymmetry=0.2)
    c = grid_platform(3, 2, 3, seed=8, bandwidth=True, asymmetry=0.2)
    assert np.array_equal(a.latency, b.latency) and np.array_equal(a.bandwidth, b.bandwidth)
    assert not np.array_equal(a.latency, c.latency)


def test_latency_bands_per_level():
    p = grid_platform(4, 2, 3, regions=2, seed=1, access=10e-6)
    n = len(p)
    site = np.array([int(x.site[1:]) for x in p.nodes])
    cl = np.array(p.labels("cluster"))
    region = site // 2
    w = p.latency
    assert np.array_equal(w, w.T) and np.all(np.diag(w) == 0)
    off = ~np.eye(n, dtype=bool)
    for mask, band in (
        ((cl[:, None] == cl[None, :]) & off, "intra"),
        ((cl[:, None] != cl[None, :]) & (site[:, None] == site[None, :]), "lan"),
        ((site[:, None] != site[None, :]) & (region[:, None] == region[None, :]), "light"),
        (region[:, None] != region[None, :], "heavy"),
    ):
        lo, hi = LATENCY[band]
        extra = 0 if band == "intra" else 20e-6
        assert mask.any()
        assert w[mask].min() >= lo and w[mask].max() <= hi + extra
    # one base latency per cluster pair: processes differ only by their access latency
    a = [i for i in range(n) if cl[i] == "s0c0"]
    b = [i for i in range(n) if cl[i] == "s3c1"]
    block = w[np.ix_(a, b)]
    assert block.max() - block.min() <= 20e-6


def test_layout_names_bandwidth_and_t_byte():
    p = grid_platform(layout=[[2, 1], [3]], names=["yonsei", "kisti"], bandwidth=True, t_byte=1e-9)
    assert p.ids == (
        "yonseic0p0",
        "yonseic0p1",
        "yonseic1p0",
        "kistic0p0",
        "kistic0p1",
        "kistic0p2",
    )
    assert p.labels("cluster")[2] == "yonseic1" and p.labels("site")[-1] == "kisti"
    assert np.all(p.t_byte == 1e-9)
    bw = p.bandwidth
    assert np.isinf(np.diag(bw)).all() and (bw[~np.eye(6, dtype=bool)] > 0).all()
    assert bw[0, 5] <= 2e6  # heavy WAN by default
    assert p.model.name == "postal"


def test_asymmetry():
    p = grid_platform(2, 1, 3, seed=3, asymmetry=0.3)
    assert not np.array_equal(p.latency, p.latency.T)
    ratio = p.latency[~np.eye(6, dtype=bool)] / p.latency.T[~np.eye(6, dtype=bool)]
    assert ratio.max() <= 1.3 / 0.7 + 1e-12


def test_eight_sites():
    p = eight_sites(seed=0)
    assert p.ids == tuple("ABCDEFGH")
    off = p.latency[~np.eye(8, dtype=bool)]
    assert off.min() >= 0.1 and off.max() <= 0.9 + 20e-6
    assert len(eight_sites(procs=4, seed=0)) == 32


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sites": 0}, "sites must be an integer >= 1"),
        ({"regions": 9}, "regions must be between 1"),
        ({"asymmetry": 1.0}, "asymmetry must be in"),
        ({"latency": {"wan": (1, 2)}}, "unknown level 'wan'"),
        ({"latency": {"heavy": (2, 1)}}, "need 0 <= low <= high"),
        ({"names": ["a"]}, "names: need 4 distinct site names"),
        ({"layout": [[]]}, "layout: every site needs"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        grid_platform(**kwargs)


def test_drift_is_pure_and_consistent_with_the_series():
    p = grid_platform(3, 2, 2, seed=5)
    times = [0.0, 600.0, 3600.0, 43200.0]
    series = list(drift_series(p, times, seed=9))
    assert [t for t, _ in series] == times
    again = drift(p, 3600.0, seed=9)
    assert np.array_equal(again.latency, series[2][1].latency)
    # at t = 0 nothing has drifted yet except the diurnal term (zero at phase 0 only)
    site = np.array([x.site for x in p.nodes])
    same_site = site[:, None] == site[None, :]
    for _, q in series:
        assert np.array_equal(q.latency[same_site], p.latency[same_site])
        assert (q.latency[~same_site] >= p.latency[~same_site] * np.exp(-10)).all()
        assert q.ids == p.ids
    assert not np.array_equal(series[1][1].latency, series[3][1].latency)
    # symmetric platforms stay symmetric: one factor per pair of sites
    assert np.array_equal(series[3][1].latency, series[3][1].latency.T)


def test_drift_diurnal_range_without_walk():
    p = grid_platform(2, 1, 1, seed=0)
    series = [
        q.latency[0, 1] / p.latency[0, 1]
        for _, q in drift_series(p, np.linspace(0, 86400, 97), seed=1, walk=0.0, diurnal=0.5)
    ]
    assert min(series) >= 1.0 - 1e-12 and max(series) <= 1.5 + 1e-12
    assert max(series) - min(series) > 0.45


def test_drift_rejects_going_back_in_time():
    p = grid_platform(2, 1, 1, seed=0)
    with pytest.raises(ValueError, match="nondecreasing"):
        list(drift_series(p, [10.0, 5.0]))
