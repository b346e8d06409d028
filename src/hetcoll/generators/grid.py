"""Grid-scale platforms (Park et al. 2004): sites of clusters over light and heavy WAN links.

:func:`grid_platform` draws a full pairwise latency matrix (and optionally a bandwidth
matrix) for processes grouped into clusters, clusters into sites and sites into light-WAN
regions; :func:`drift` and :func:`drift_series` make its WAN latencies wander over time
(daytime congestion and a random walk), for the probe's forecaster.  :func:`eight_sites` is a
Fig. 1-2 style example of eight sites.  Everything is a pure function of the parameters and
``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..platform import Node, Platform
from ..rng import as_rng
from ..units import check_quantity

__all__ = [
    "LATENCY",
    "BANDWIDTH",
    "grid_platform",
    "eight_sites",
    "drift",
    "drift_series",
]

#: Default latency ranges (seconds) per level.  Neighbouring bands are at least 3x apart, so
#: :func:`hetcoll.levels.levels` recovers the levels from the matrix alone.
LATENCY: dict[str, tuple[float, float]] = {
    "intra": (20e-6, 60e-6),  # two processes of one cluster
    "lan": (0.2e-3, 0.6e-3),  # two clusters of one site
    "light": (2e-3, 5e-3),  # two sites of one light-WAN region
    "heavy": (20e-3, 150e-3),  # two regions (the heterogeneous Internet)
}

#: Default bandwidth ranges (bytes/s) per level, for ``bandwidth=True``.
BANDWIDTH: dict[str, tuple[float, float]] = {
    "intra": (80e6, 120e6),
    "lan": (40e6, 60e6),
    "light": (5e6, 10e6),
    "heavy": (0.5e6, 2e6),
}


def _ranges(given: Mapping[str, Any] | None, default: Mapping[str, tuple[float, float]], what):
    out = dict(default)
    if given is not None and not isinstance(given, Mapping):
        raise ArgumentError(f"{what}: must map levels to ranges, got {given!r}")
    kind = "bandwidth" if what == "bw" else "time"
    for key, value in (given or {}).items():
        if key not in default:
            raise ArgumentError(f"{what}: unknown level {key!r} (expected: {', '.join(default)})")
        pair = (value, value) if np.isscalar(value) else value
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ArgumentError(f"{what}[{key!r}]: need a number or a (low, high) pair")
        if any(isinstance(x, int | float) and not isinstance(x, bool) and x < 0 for x in pair):
            raise ArgumentError(f"{what}[{key!r}]: need 0 <= low <= high < inf, got {value!r}")
        lo, hi = (check_quantity(x, kind, f"{what}[{key!r}]") for x in pair)
        if not 0 <= lo <= hi or not math.isfinite(hi):
            raise ArgumentError(f"{what}[{key!r}]: need 0 <= low <= high < inf, got {value!r}")
        out[key] = (lo, hi)
    return out


def _layout(sites, clusters, procs, layout) -> list[list[int]]:
    if layout is None:
        for name, v in (("sites", sites), ("clusters", clusters), ("procs", procs)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ArgumentError(f"{name} must be an integer >= 1, got {v!r}")
        return [[int(procs)] * int(clusters) for _ in range(int(sites))]
    if not isinstance(layout, Sequence) or any(not isinstance(s, Sequence) for s in layout):
        raise ArgumentError(f"layout: must be a list of lists of process counts, got {layout!r}")
    out = [[check_quantity(n, "count", "layout") for n in site] for site in layout]
    if not out or any(not site or min(site) < 1 for site in out):
        raise ArgumentError("layout: every site needs at least one cluster of >= 1 processes")
    return out


def grid_platform(
    sites: int = 4,
    clusters: int = 2,
    procs: int = 4,
    *,
    layout: Sequence[Sequence[int]] | None = None,
    regions: int | None = None,
    latency: Mapping[str, Any] | None = None,
    access: float = 10e-6,
    bandwidth: bool | Mapping[str, Any] | None = None,
    t_byte: float = 0.0,
    asymmetry: float = 0.0,
    names: Sequence[str] | None = None,
    model: Any = "postal",
    seed: int | np.random.Generator | None = None,
) -> Platform:
    """A grid: ``sites`` sites of ``clusters`` clusters of ``procs`` processes.

    Parameters
    ----------
    sites, clusters, procs : int
        A regular layout; or give ``layout``.
    layout : list of list of int, optional
        Processes per cluster, per site (``[[4, 4], [8]]``: two sites, three clusters).
    regions : int, optional
        Light-WAN regions: the sites are split into this many contiguous blocks, linked by
        light-WAN latencies inside a block and heavy-WAN ones across.  None (default): every
        site its own region, every WAN link heavy; 1: the whole WAN is light.
    latency : mapping, optional
        Overrides of :data:`LATENCY` (``{"heavy": (30e-3, 90e-3)}``), seconds.
    access : float
        Largest per-process access latency (seconds), drawn uniformly from ``[0, access]``
        and added at both ends of every inter-cluster pair: pairs of clusters share one base
        latency, their processes differ a little.
    bandwidth : bool or mapping, optional
        Add a bandwidth matrix (a per-byte cost ``n / bandwidth``): True for
        :data:`BANDWIDTH`, a mapping to override its ranges (bytes/s).  Default: none.
    t_byte : float
        Every process's per-byte sending cost (seconds/byte: LogGP's ``G``).
    asymmetry : float
        Each directed latency is multiplied by ``1 + asymmetry * U(-1, 1)`` (0: symmetric).
    names : sequence of str, optional
        Site names (default ``s0, s1, ...``).
    model : str or mapping
        The platform's default cost model (``postal``, eq. 2 of Park et al.).
    seed : int or Generator, optional

    Returns
    -------
    Platform
        Node ids ``{site}c{cluster}p{process}`` (just ``{site}`` when every site has one
        process), labels ``site`` and ``cluster`` (``{site}c{cluster}``), a full
        ``latency`` matrix (and ``bandwidth`` if asked).

    Notes
    -----
    Inside a cluster every pair draws its own latency from ``intra``; between two clusters
    one base latency per cluster pair is drawn from ``lan`` (same site), ``light`` (same
    region) or ``heavy`` (different regions), plus both processes' access latencies.  With
    random heavy-WAN latencies the triangle inequality often fails, which is what HLOT and
    the shortest-path tree exploit.  O(N^2).

    Examples
    --------
    >>> p = grid_platform(sites=2, clusters=2, procs=2, seed=0)
    >>> len(p), p.nodes[0].id, p.nodes[0].cluster, p.nodes[-1].site
    (8, 's0c0p0', 's0c0', 's1')
    """
    shape = _layout(sites, clusters, procs, layout)
    lat = _ranges(latency, LATENCY, "latency")
    bw_ranges = None
    if bandwidth:
        bw_ranges = _ranges(bandwidth if isinstance(bandwidth, Mapping) else None, BANDWIDTH, "bw")
        if any(lo <= 0 for lo, _ in bw_ranges.values()):
            raise ArgumentError("bandwidth ranges must be > 0")
    asymmetry = check_quantity(asymmetry, "factor", "asymmetry")
    access = check_quantity(access, "time", "access")
    t_byte = check_quantity(t_byte, "time", "t_byte")
    if not 0 <= asymmetry < 1:
        raise ArgumentError(f"asymmetry must be in [0, 1), got {asymmetry}")
    if access < 0:
        raise ArgumentError(f"access must be >= 0, got {access}")
    k = len(shape)
    if names is None:
        names = [f"s{i}" for i in range(k)]
    names = [str(x) for x in names]
    if len(names) != k or len(set(names)) != k:
        raise ArgumentError(f"names: need {k} distinct site names, got {names!r}")
    if regions is None:
        region_of = list(range(k))
    else:
        if isinstance(regions, bool) or not isinstance(regions, int) or not 1 <= regions <= k:
            raise ArgumentError(f"regions must be between 1 and the number of sites {k}")
        region_of = [0] * k
        for r, block in enumerate(np.array_split(np.arange(k), regions)):
            for s in block:
                region_of[int(s)] = r

    rng = as_rng(seed)
    nodes, site_of = [], []
    single = all(sum(site) == 1 for site in shape)
    for s, site in enumerate(shape):
        for c, size in enumerate(site):
            for q in range(size):
                nid = names[s] if single else f"{names[s]}c{c}p{q}"
                nodes.append(Node(nid, site=names[s], cluster=f"{names[s]}c{c}"))
                site_of.append(s)
    n = len(nodes)
    cl = np.array(_cluster_index(shape))
    st = np.array(site_of)
    rg = np.array([region_of[s] for s in site_of])
    n_cl = int(cl.max()) + 1
    cl_site = np.array([st[cl == c][0] for c in range(n_cl)])
    cl_region = np.array([rg[cl == c][0] for c in range(n_cl)])

    def level_of(a, b):
        if cl_site[a] == cl_site[b]:
            return "lan"
        return "light" if cl_region[a] == cl_region[b] else "heavy"

    def draw(ranges, size=None):
        lo, hi = ranges
        return rng.uniform(lo, hi, size)

    base = np.zeros((n_cl, n_cl))
    base_bw = np.zeros((n_cl, n_cl))
    for a in range(n_cl):
        for b in range(a + 1, n_cl):
            lv = level_of(a, b)
            base[a, b] = base[b, a] = draw(lat[lv])
            if bw_ranges:
                base_bw[a, b] = base_bw[b, a] = draw(bw_ranges[lv])
    acc = rng.uniform(0.0, access, n)
    w = base[cl[:, None], cl[None, :]] + acc[:, None] + acc[None, :]
    same = cl[:, None] == cl[None, :]
    intra = np.triu(draw(lat["intra"], (n, n)), 1)
    intra = intra + intra.T
    w = np.where(same, intra, w)
    if asymmetry:
        w = w * (1 + asymmetry * rng.uniform(-1.0, 1.0, (n, n)))
    np.fill_diagonal(w, 0.0)
    bw = None
    if bw_ranges:
        ib = np.triu(draw(bw_ranges["intra"], (n, n)), 1)
        ib = ib + ib.T
        bw = np.where(same, ib, base_bw[cl[:, None], cl[None, :]])
        np.fill_diagonal(bw, np.inf)
    if t_byte:
        nodes = [Node(x.id, 0.0, float(t_byte), x.site, x.cluster) for x in nodes]
    name = f"grid: {k} sites, {n_cl} clusters, {n} processes"
    return Platform(tuple(nodes), latency=w, bandwidth=bw, model=model, name=name)


def _cluster_index(shape: list[list[int]]) -> list[int]:
    out, c = [], 0
    for site in shape:
        for size in site:
            out += [c] * size
            c += 1
    return out


def eight_sites(
    procs: int = 1,
    *,
    latency: tuple[float, float] = (0.1, 0.9),
    seed: int | np.random.Generator | None = None,
    model: Any = "postal",
) -> Platform:
    """Eight sites ``A``-``H`` over a heterogeneous WAN, like Park et al.'s Fig. 1-2.

    The paper's Fig. 1 matrix is not in its text, so this draws a plausible one: one
    cluster of ``procs`` processes per site, every pair of sites a heavy-WAN latency drawn
    uniformly from ``latency`` (default 100-900 ms, the magnitudes of Fig. 2's "time
    units").  The built-in platform ``park-fig2`` is a fixed matrix constructed to
    reproduce the times the text quotes.
    """
    return grid_platform(
        layout=[[procs]] * 8,
        latency={"heavy": latency},
        names=list("ABCDEFGH"),
        seed=seed,
        model=model,
    )


# -- drift over time -----------------------------------------------------------------------------


def _drift_groups(platform: Platform, level: str) -> np.ndarray:
    labels = platform.labels(level)
    if any(x is None for x in labels):
        labels = platform.ids
    ids: dict[Any, int] = {}
    return np.array([ids.setdefault(x, len(ids)) for x in labels])


def drift_series(
    platform: Platform,
    times: Iterable[float],
    *,
    seed: int | np.random.Generator | None = None,
    step: float = 300.0,
    walk: float = 0.05,
    reversion: float = 0.02,
    diurnal: float = 0.5,
    period: float = 86400.0,
    level: str = "site",
) -> Iterator[tuple[float, Platform]]:
    """The platform at each of ``times`` (seconds, nondecreasing) as its WAN latencies drift.

    Every pair of groups (``level`` labels; every node its own group without them) gets a
    factor applied to the latencies between them - pairs inside one group do not drift::

        factor(t) = exp(x_k) * (1 + diurnal * (1 - cos(2 pi t / period + phase)) / 2)

    where ``x_k`` is a mean-reverting random walk (``x_{k+1} = (1 - reversion) x_k + walk
    z_k``, ``z_k`` standard normal) advanced every ``step`` seconds (``k = floor(t /
    step)``) and ``phase`` is drawn per pair: daytime congestion plus slow random change,
    as Park et al. (Sec. 3.1) describe grid links.  Yields ``(t, Platform)``.  Pure: the same
    seed gives the same series, and :func:`drift` at one time agrees with it.
    """
    if platform.latency is None:
        raise ArgumentError("drift: the platform needs a 'latency' matrix")
    step = check_quantity(step, "time", "step", positive=True)
    period = check_quantity(period, "time", "period", positive=True)
    for name, value in (("walk", walk), ("reversion", reversion), ("diurnal", diurnal)):
        check_quantity(value, "factor", name)
    if isinstance(times, str) or not isinstance(times, Iterable):
        raise ArgumentError(f"times: must be a list of times (seconds), got {times!r}")
    groups = _drift_groups(platform, level)
    g = int(groups.max()) + 1
    rng = as_rng(seed)
    phase = rng.uniform(0.0, 2 * np.pi, (g, g))
    phase = np.triu(phase, 1) + np.triu(phase, 1).T
    x = np.zeros((g, g))
    k = 0
    base = np.asarray(platform.latency)
    cross = groups[:, None] != groups[None, :]
    last = -math.inf
    for t in times:
        t = check_quantity(t, "time", "times")
        if t < last or t < 0:
            raise ArgumentError(f"times must be nondecreasing and >= 0, got {t} after {last}")
        last = t
        while k < math.floor(t / step):
            z = rng.standard_normal((g, g))
            z = np.triu(z, 1) + np.triu(z, 1).T
            x = (1 - reversion) * x + walk * z
            k += 1
        day = 1 + diurnal * (1 - np.cos(2 * np.pi * t / period + phase)) / 2
        factor = (np.exp(x) * day)[groups[:, None], groups[None, :]]
        w = np.where(cross, base * factor, base)
        yield (
            t,
            Platform(
                platform.nodes,
                latency=w,
                bandwidth=platform.bandwidth,
                model=platform.model,
                name=platform.name,
            ),
        )


def drift(platform: Platform, t: float, **kwargs: Any) -> Platform:
    """The platform at time ``t`` (seconds) under :func:`drift_series`'s drift."""
    for _, p in drift_series(platform, [t], **kwargs):
        return p
    raise AssertionError("unreachable")
