"""Probe a communicator: all-pairs ping-pong, fitted costs, a platform file.

Method
------
1. **Ping-pong.**  Pairs are measured in a round-robin tournament (``N - 1`` rounds of
   ``N / 2`` disjoint pairs, in parallel; ``serial=True`` measures one pair at a time, the
   default where a host runs more of the ranks than it has cores: pairs at once there
   measure how the host's scheduler shares the cores between ranks that copy and poll,
   not the pairs' costs, see :func:`crowded`).  For
   each message size, each pair does ``repeat`` round trips through the same executor as
   the collectives (so under emulation they pay the emulated costs); a round trip is timed
   on the initiator's clock from the start of its send to the completion of the receive of
   the reply (when the reply was there: under emulation its modelled arrival, or its real
   one when the data really came later; not when a busy initiator got round to looking),
   and every round trip is kept but the first of each pair's chain (a warm-up: it waits
   for the partner to be scheduled after the start, as a program's first message does).
   A round's value of a series (a pair and a size) is :func:`series_estimate` of its
   repeats: the least below :data:`LARGE` (1 MiB), the trimmed mean from there on (step 3).
2. **Repeat until confirmed.**  The whole measurement is repeated ``rounds`` times, so a
   series' samples are interleaved with every other pair's and size's.  A busy host only
   ever *delays* a short message, so the least round trip of a series is the one it
   disturbed least; a series is *confirmed* when a second round's value agrees with the
   least round's within ``spread`` (relative, or 2 µs, the clock's resolution for
   practical purposes).  Series that are not confirmed are measured again, only those, up
   to ``retries`` more rounds; what is still unconfirmed then is reported
   (:attr:`ProbeResult.reliability`: ``reliable`` is False and ``unconfirmed`` names the
   pairs and sizes): the host was too busy for the probe to trust its numbers.
3. **Estimate.**  ``estimate="robust"`` (default) fits :func:`series_estimate` of all the
   rounds' samples of a series together: the least round trip below 1 MiB, the trimmed
   (interquartile) mean from 1 MiB on.  A long message shares the host's memory bandwidth
   and cores with whatever else runs, so its cost varies both ways; the least of a dozen
   samples is an outlier that a second probe does not repeat, while a mean of the middle
   half of the samples moves less and is what a program's own large messages cost
   (``benchmarks/mpi/bench_probe_fit.py`` prints how far two measurements of each
   estimate differ on the host it runs on).  ``"min"``
   fits the least round trip at every size; ``"forecast"`` feeds the full rounds to an
   NWS-style :class:`~hetcoll.runtime.forecast.Forecaster` and fits its forecast (for a
   network whose costs drift between probes).  The forecaster's winners are in the
   result (``ProbeResult.winners``; the CLI's ``--json``).
4. **Fit.**  First the host's per-byte cost by size (:func:`size_curve`, a
   :class:`~hetcoll.sizecurve.SizeCurve`): one host's bytes cost more in large messages
   than in small ones (caches, preemption), which no single per-byte cost predicts within
   20 %; per segment between two probed sizes, the median over pairs of the pair's
   incremental per-byte cost there over its cost in the last segment.  Then, in the
   curve's effective sizes (the real ones when no curve is needed), per pair ``RTT(n) = a
   + b n`` by least squares of the *relative* error over the sizes (each size weighs alike:
   a fit of absolute errors would let the largest size set the intercept); the default
   sizes span 0 B to 64 MiB, and ``benchmarks/mpi/bench_probe_fit.py`` checks the fitted
   platform against measured round trips at 1 to 64 MiB (the same estimate of
   interleaved repeats).  Per node,
   ``a_uv = o_u + o_v`` and ``b_uv = beta_u + beta_v``, solved robustly (for each node the
   median over pairs ``v, w`` of ``(a_uv + a_uw - a_vw) / 2``): the per-node overhead
   ``t_ini = o`` and per-byte cost ``t_byte = beta`` of the sender-only model (a round trip
   pays one send of each end).  What the nodes do not explain is the
   network's: ``latency_uv = (a_uv - o_u - o_v) / 2`` and
   ``1 / bandwidth_uv = (b_uv - beta_u - beta_v) / 2`` (clipped at 0; infinite bandwidth
   when nothing is left), so that ``hockney`` and ``postal`` can use the file too.
5. **Spread.**  Each full round (its values, step 1) is also fitted on its own; a node's
   *spread* is the range of its costs over those rounds (:attr:`ProbeResult.fit`
   ``node_spread``; the CLI prints it as a fraction of the cost).
6. **Classes.**  Nodes whose fitted costs agree within ``tolerance``, *or whose
   confidence intervals overlap* (the 95 % interval of the mean of the rounds' own fits,
   at least their range: :func:`confidence`; ``fit["node_interval"]``), are given their
   class mean, as the paper's testbed has speed classes (Banikazemi et al. 1998, Sec.
   7.1.1): measurement noise then cannot reorder nodes that are equally fast, and a
   planner breaks their ties by rank as it would on the true platform.  On a busy host the
   rounds disagree (each round sees other load): the intervals overlap, the probe reports
   one class (``fit["classes"]``) and does not invent heterogeneity.
7. **Pipeline.**  Natively (``pipeline=None``; ``True`` or ``False`` forces it), the chain
   of every rank then forwards segments through the engine, every rank busy at once, and
   what each segment cost beyond the fitted platform's prediction is added to every
   node's ``t_ini`` (:mod:`.pipeline_cost`; ``fit["pipeline"]``): on a host with more ranks
   than cores a pipelined segment waits for its rank's turn on a core, which the least
   round trip of step 3 never saw, and slices planned without it are far too small.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..platform import Node, Platform
from ..program import Chunk, Op, Program
from ..sizecurve import SizeCurve
from .comm import ScheduleComm
from .executor import ByteRanges
from .forecast import Forecaster

__all__ = [
    "ProbeResult",
    "fit_platform",
    "pooled",
    "probe",
    "confirmed",
    "relative_errors",
    "reliability",
    "series_estimate",
    "size_curve",
    "trimmed_mean",
    "speed_classes",
    "confidence",
    "tournament",
]

#: 0 B to 64 MiB, the largest size ``hetcoll tune`` measures by default: the fit must
#: predict large messages, and the size curve is measured only within the probed span
#: (module doc, step 4)
DEFAULT_SIZES = (0, 4096, 65536, 1 << 20, 4 << 20, 16 << 20, 64 << 20)
#: round trips closer than this (seconds) agree whatever their ratio (timer resolution)
RESOLUTION = 2e-6
#: from this size on a series is the trimmed mean of its samples, below it the least one
LARGE = 1 << 20
#: the share of a series' samples dropped at each end for its trimmed mean
TRIM = 0.25
#: how :func:`probe` makes one round trip of a series' samples (module doc, step 3)
ESTIMATES = ("robust", "min", "forecast")
MAX_SIZE_INF = 1 << 62  # no size reaches it: the least round trip at every size


@dataclass
class ProbeResult:
    """Everything the probe measured and fitted (rank 0 holds the full result)."""

    platform: Platform
    sizes: tuple[int, ...]
    rtt: np.ndarray  # forecast round trips, N x N x sizes (seconds)
    rounds: list[np.ndarray] = field(repr=False, default_factory=list)
    winners: dict[str, int] = field(default_factory=dict)
    fit: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    reliability: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform.to_dict(),
            "sizes": list(self.sizes),
            "rtt": self.rtt.tolist(),
            "rounds": len(self.rounds),
            "forecast_winners": self.winners,
            "fit": self.fit,
            "seconds": self.seconds,
            "reliability": self.reliability,
        }


def tournament(n: int) -> list[list[tuple[int, int]]]:
    """Rounds of disjoint pairs covering every pair once (the circle method)."""
    ids = list(range(n)) + ([None] if n % 2 else [])
    m = len(ids)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for k in range(m // 2):
            a, b = ids[k], ids[m - 1 - k]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        ids = [ids[0], ids[-1], *ids[1:-1]]
    return rounds


def crowded(hosts: list[str], cores: list[int]) -> bool:
    """Whether some host runs more of the ranks than it has cores (``hosts[r]``: rank
    ``r``'s processor name, ``cores[r]``: the cores it may run on).  O(N).

    Disjoint pairs measured at once each keep two ranks busy copying and polling; with
    more such ranks than cores the round trips are the scheduler's time slices, and they
    differ from one probe to the next (module doc, step 1).

    >>> crowded(["a"] * 4, [2] * 4), crowded(["a", "a", "b", "b"], [2] * 4)
    (True, False)
    """
    ranks: dict[str, int] = {}
    for h in hosts:
        ranks[h] = ranks.get(h, 0) + 1
    return any(ranks[h] > c for h, c in zip(hosts, cores, strict=True))


def pairs_one_at_a_time(hc: ScheduleComm) -> bool:
    """The default of :func:`probe`'s ``serial`` (collective): one pair at a time natively
    where a host is :func:`crowded`; disjoint pairs at once under emulation, whose costs
    are timed waits that ranks sharing a core do not stretch."""
    from mpi4py import MPI

    from ..knobs import usable_cores

    if hc.emulate:
        return False
    return crowded(hc.comm.allgather(MPI.Get_processor_name()), hc.comm.allgather(usable_cores()))


def _pingpong_program(pairs, nodes, repeat: int, nbytes: int) -> Program:
    """For each pair (u, v): u sends, v answers, ``repeat`` times in a chain."""
    chunks = [Chunk(0, 0, nbytes)] * (2 * repeat)
    ops: dict[str, list[Op]] = {node: [] for node in nodes}
    for u, v in pairs:
        a, b = nodes[u], nodes[v]
        for k in range(repeat):
            # u: send 2k (after receiving 2k-1), receive 2k+1; v: receive 2k, send 2k+1
            deps_u = (len(ops[a]) - 1,) if k else ()
            ops[a].append(Op("send", b, 2 * k, deps_u))
            ops[a].append(Op("recv", b, 2 * k + 1))
            ops[b].append(Op("recv", a, 2 * k))
            ops[b].append(Op("send", a, 2 * k + 1, (len(ops[b]) - 1,)))
    initial = {nodes[u]: frozenset(range(0, 2 * repeat, 2)) for u, _ in pairs}
    initial.update({nodes[v]: frozenset(range(1, 2 * repeat, 2)) for _, v in pairs})
    return Program({k: tuple(v) for k, v in ops.items()}, tuple(chunks), initial)


def _measure_round(
    hc: ScheduleComm, sizes, repeat: int, serial: bool, wanted: np.ndarray | None = None
) -> np.ndarray:
    """One round: per pair and size the ``repeat`` round trips (seconds) but the first, a
    warm-up (all of them when ``repeat`` is 1), N x N x sizes x kept, the same on every
    rank; NaN where ``wanted`` (pairs x pairs x sizes, symmetric) is False."""
    n = hc.size
    first = 1 if repeat > 1 else 0
    rtt = np.full((n, n, len(sizes), repeat - first), np.nan)
    me = hc.rank
    buf = memoryview(bytearray(max(sizes) if sizes else 0))
    schedule = tournament(n)
    if serial:
        schedule = [[p] for rnd in schedule for p in rnd]
    for round_pairs in schedule:
        for s, nbytes in enumerate(sizes):
            pairs = [(u, v) for u, v in round_pairs if wanted is None or wanted[u, v, s]]
            if not pairs:
                continue
            program = _pingpong_program(pairs, hc.nodes, repeat, nbytes)
            hc.start_together(1e-3)
            trace = hc.run(program, ByteRanges(program.chunks, {0: buf}), "probe ping-pong")
            for u, v in pairs:
                if me == u:
                    # ops alternate send, recv: round trip k = done(recv k) - start(send k)
                    done, started = trace.done, trace.started
                    trips = [done[2 * k + 1] - started[2 * k] for k in range(first, repeat)]
                    rtt[u, v, s] = rtt[v, u, s] = np.array(trips) / 1e9
    # every rank measured only its own pairs: combine (NaN elsewhere)
    out = np.empty_like(rtt)
    hc._wait(hc.comm.Iallreduce(np.nan_to_num(rtt, nan=-1.0), out, op=_max()), "combining probes")
    out[out < 0] = np.nan
    for s in range(len(sizes)):
        for k in range(repeat - first):
            np.fill_diagonal(out[:, :, s, k], 0.0)
    return out


def trimmed_mean(samples: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """The mean of each series' middle values (last axis; NaN: not measured): of ``m``
    values the ``floor(trim * m)`` least and as many largest are dropped (``trim`` 0.25:
    the interquartile mean; of 2 values, their mean).  NaN where nothing was measured.
    O(values log values).

    Examples
    --------
    >>> trimmed_mean(np.array([[1.0, 2.0, 3.0, 100.0], [5.0, np.nan, np.nan, np.nan]])).tolist()
    [2.5, 5.0]
    """
    ordered = np.sort(samples, axis=-1)  # NaN last
    count = np.sum(~np.isnan(samples), axis=-1)
    cut = np.floor(trim * count).astype(int)
    pos = np.arange(samples.shape[-1])
    keep = (pos >= cut[..., None]) & (pos < (count - cut)[..., None])
    with np.errstate(invalid="ignore"):
        return np.where(keep, ordered, 0.0).sum(-1) / np.where(count > 0, keep.sum(-1), np.nan)


def series_estimate(
    samples: np.ndarray, sizes, large: int = LARGE, trim: float = TRIM
) -> np.ndarray:
    """One round trip per series from its samples (``... x sizes x samples``, NaN where not
    measured): below ``large`` bytes the least one (noise only delays a short message),
    from ``large`` on their trimmed mean (:func:`trimmed_mean`: a long message shares
    the host's memory and cores with everything else running, so its cost varies both
    ways, and the least of a few samples is as far from a typical one as the host's
    swings; a mean of the middle ones repeats).  O(values log values).

    Examples
    --------
    >>> x = np.array([[1.0, 2.0, 9.0, 2.0], [10.0, 12.0, 30.0, 11.0]])
    >>> series_estimate(x, [0, 1 << 20]).tolist()
    [1.0, 11.5]
    """
    small = np.nanmin(np.where(np.isnan(samples).all(-1, keepdims=True), np.inf, samples), -1)
    small[np.isinf(small)] = np.nan
    big = np.asarray(sizes) >= large
    if not big.any():
        return small
    return np.where(big, trimmed_mean(samples, trim), small)


def pooled(rounds: list[np.ndarray]) -> np.ndarray:
    """Rounds of samples (each N x N x sizes x repeat) as one series of samples per pair and
    size: N x N x sizes x (rounds * repeat)."""
    return np.concatenate(rounds, axis=-1)


def confirmed(rounds: np.ndarray, spread: float) -> np.ndarray:
    """Per series (the trailing axes), whether its least value is confirmed: a second
    round's value (``rounds`` is rounds x ..., NaN where a round did not measure) agrees
    with it within ``spread`` (relative) or :data:`RESOLUTION` (absolute).

    Examples
    --------
    >>> confirmed(np.array([[1.0, 1.0], [1.3, 1.04], [1.6, np.nan]]), 0.05).tolist()
    [False, True]
    """
    ordered = np.sort(rounds, axis=0)  # NaN last
    if len(ordered) < 2:
        return np.zeros(rounds.shape[1:], dtype=bool)
    least, second = ordered[0], ordered[1]
    with np.errstate(invalid="ignore"):
        return second <= least + np.maximum(spread * least, RESOLUTION)


def reliability(
    rounds: np.ndarray, spread: float, ids, sizes, full: int | None = None
) -> dict[str, Any]:
    """What :func:`probe` reports of its measurement: ``reliable`` (every series confirmed),
    ``unconfirmed`` (``[u, v, size]`` of the others), ``spread`` (the largest relative gap
    between a series' least and second least round), ``remeasured`` (series measured again
    after the full rounds) and ``max_rounds`` (the most rounds a series took)."""
    n = rounds.shape[1]
    full = len(rounds) if full is None else full  # the rounds that measured every pair
    iu, iv = np.triu_indices(n, 1)
    series = rounds[:, iu, iv, :]  # rounds x pairs x sizes
    ok = confirmed(series, spread)
    ordered = np.sort(series, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = (ordered[1] - ordered[0]) / ordered[0] if len(ordered) > 1 else ordered[0] * np.inf
    bad = np.argwhere(~ok)
    counts = np.sum(~np.isnan(series), axis=0)
    return {
        "reliable": bool(ok.all()),
        "unconfirmed": [[ids[iu[p]], ids[iv[p]], int(sizes[s])] for p, s in bad],
        "spread": float(np.nanmax(gap)) if np.isfinite(gap).any() else None,
        "spread_allowed": spread,
        "remeasured": int(np.sum(~np.isnan(series[full:]))),
        "max_rounds": int(counts.max()) if counts.size else 0,
    }


def _max():
    from mpi4py import MPI

    return MPI.MAX


def fit_platform(
    rtt: np.ndarray,
    sizes,
    ids,
    *,
    model: Any = "tini",
    tolerance: float = 0.05,
    hosts=None,
    name: str = "probed",
    spread_rounds: Any = None,
    curve: bool = True,
) -> tuple[Platform, dict[str, Any]]:
    """Fit per-node and per-pair costs to round trips ``rtt[u, v, size]`` (see module doc);
    ``spread_rounds``: full rounds (each N x N x sizes) whose own fits give each node's
    spread, and keep nodes whose spreads overlap in one class (step 6); ``curve``: fit the
    per-byte cost by size (step 4; False: one per-byte cost for every size)."""
    n = rtt.shape[0]
    measured_sizes = sizes
    fitted_curve = size_curve(rtt, sizes, tolerance) if curve else None
    sizes = np.asarray(sizes, dtype=float)
    if fitted_curve is not None:  # the affine fit in effective bytes (sizecurve.py)
        sizes = np.asarray(fitted_curve.effective(sizes), dtype=float)
    iu, iv = np.triu_indices(n, 1)
    a, b, o, beta = _node_fit(rtt, sizes)
    raw = {"t_ini": o.tolist(), "t_byte": beta.tolist()}
    lo_o = hi_o = lo_b = hi_b = None
    ci_o: tuple[np.ndarray, np.ndarray] | tuple[None, None] = (None, None)
    ci_b: tuple[np.ndarray, np.ndarray] | None = None
    if spread_rounds is not None and len(spread_rounds):
        fits = [_node_fit(r, sizes)[2:] for r in spread_rounds]
        per_o, per_b = np.array([f[0] for f in fits]), np.array([f[1] for f in fits])
        lo_o, hi_o = np.minimum(per_o.min(0), o), np.maximum(per_o.max(0), o)
        lo_b, hi_b = np.minimum(per_b.min(0), beta), np.maximum(per_b.max(0), beta)
        ci_o, ci_b = confidence(per_o, o), confidence(per_b, beta)
    # What the largest probe can resolve: a per-byte cost adding less than ``tolerance`` of
    # the per-message cost at the largest size is indistinguishable from noise.
    largest = float(sizes.max()) if len(sizes) and sizes.max() > 0 else 0.0
    if tolerance > 0 or lo_o is not None:
        # classes by t_ini, then by t_byte within each, so equally fast nodes become identical
        groups = speed_classes(o, tolerance, lo=ci_o[0], hi=ci_o[1])
        o = groups
        for value in np.unique(groups):
            members = np.flatnonzero(groups == value)
            resolution = tolerance * value / largest if largest else np.inf
            costs = speed_classes(
                beta[members],
                tolerance,
                floor=resolution,
                lo=None if ci_b is None else ci_b[0][members],
                hi=None if ci_b is None else ci_b[1][members],
            )
            costs[costs < resolution] = 0.0
            beta[members] = costs
        # each class's cost is then what explains its pairs (the per-node shares of a few
        # noisy pairs move, and their class mean with them; the pairs' median does not)
        zero = beta == 0.0
        o = _class_fit(a, iu, iv, _labels(o), o)
        beta = _class_fit(b, iu, iv, _labels(np.stack([o, beta], axis=1)), beta)
        beta[zero] = 0.0
    lat = np.zeros((n, n))
    inv_bw = np.zeros((n, n))
    lat[iu, iv] = lat[iv, iu] = np.maximum((a - o[iu] - o[iv]) / 2, 0.0)
    inv_bw[iu, iv] = inv_bw[iv, iu] = np.maximum((b - beta[iu] - beta[iv]) / 2, 0.0)
    # residuals within the noise of the node fit are no network cost
    pair_o = np.maximum(o[:, None], o[None, :])
    lat[lat < tolerance * pair_o] = 0.0
    if largest:
        inv_bw[inv_bw < tolerance * pair_o / largest] = 0.0
    with np.errstate(divide="ignore"):
        bw = np.where(inv_bw > 1e-15, 1.0 / np.where(inv_bw > 0, inv_bw, 1.0), np.inf)
    np.fill_diagonal(bw, np.inf)
    hosts = hosts or [None] * n
    nodes = tuple(
        Node(str(i), float(o[k]), float(beta[k]), host=hosts[k]) for k, i in enumerate(ids)
    )
    platform = Platform(
        nodes, latency=lat, bandwidth=bw, model=model, name=name, size_curve=fitted_curve
    )
    fit = {
        "sizes": [int(x) for x in measured_sizes],
        "size_curve": None if fitted_curve is None else fitted_curve.to_list(),
        "pair_intercept": a.tolist(),
        "pair_slope": b.tolist(),
        "node_raw": raw,
        "residual_latency_max": float(lat.max()),
        "classes": len({(float(x), float(y)) for x, y in zip(o, beta, strict=True)}),
    }
    if lo_o is not None:
        fit["node_spread"] = {
            "t_ini": [[float(x), float(y)] for x, y in zip(lo_o, hi_o, strict=True)],
            "t_byte": [[float(x), float(y)] for x, y in zip(lo_b, hi_b, strict=True)],
        }
        # the intervals step 6 split the classes on (wider than the spread with few rounds)
        fit["node_interval"] = {
            "t_ini": [[float(x), float(y)] for x, y in zip(*ci_o, strict=True)],
            "t_byte": [[float(x), float(y)] for x, y in zip(*ci_b, strict=True)],
        }
    return platform, fit


def size_curve(rtt: np.ndarray, sizes, tolerance: float = 0.05) -> SizeCurve | None:
    """The host's per-byte cost by message size (module doc, step 4), or None when one
    per-byte cost explains every segment within ``tolerance`` (or fewer than 3 sizes).

    Segment ``k`` runs from the ``k``-th measured size to the next (the first from 0 B, the
    last on without end); its scale is the median over pairs of the pair's per-byte cost
    there, ``(RTT(s_k+1) - RTT(s_k)) / (s_k+1 - s_k)``, over the pair's cost in the last
    segment (which scales 1, so ``t_byte`` is the largest messages' cost).  Pairs whose
    last segment does not rise beyond :data:`RESOLUTION` and ``tolerance`` are no
    yardstick.  O(pairs x sizes).

    Examples
    --------
    >>> rtt = np.zeros((2, 2, 4))
    >>> rtt[0, 1] = rtt[1, 0] = [10.0, 12.0, 32.0, 72.0]  # 2, then 1, then 2 per byte
    >>> size_curve(rtt, [0, 1, 21, 41]).to_list()
    [[0, 1.0], [1, 0.5], [21, 1.0]]
    """
    s = np.asarray(sizes, dtype=float)
    if len(s) < 3 or np.any(np.diff(s) <= 0):
        return None
    iu, iv = np.triu_indices(rtt.shape[0], 1)
    y = rtt[iu, iv, :]  # pairs x sizes
    slopes = np.diff(y, axis=1) / np.diff(s)  # pairs x segments
    rise = y[:, -1] - y[:, -2]
    ok = rise > np.maximum(RESOLUTION, tolerance * y[:, -2])
    if not ok.any():
        return None
    scales = np.maximum(np.median(slopes[ok] / slopes[ok, -1:], axis=0), 0.0)
    scales[-1] = 1.0
    if np.all(np.abs(scales - 1.0) <= tolerance):
        return None
    starts = (0, *(int(x) for x in s[1:-1]))
    return SizeCurve(starts, tuple(float(m) for m in scales))


def _node_fit(rtt: np.ndarray, sizes: np.ndarray):
    """Pair intercepts and slopes (relative least squares, module doc step 4) and the
    per-node shares of both: ``(a, b, o, beta)``."""
    n = rtt.shape[0]
    iu, iv = np.triu_indices(n, 1)
    y = rtt[iu, iv, :]  # pairs x sizes
    if len(sizes) >= 2:
        a, b = np.empty(len(iu)), np.empty(len(iu))
        design = np.stack([np.ones_like(sizes), sizes], axis=1)
        for k, row in enumerate(y):
            w = 1.0 / np.maximum(row, RESOLUTION)  # relative errors
            (a[k], b[k]), *_ = np.linalg.lstsq(design * w[:, None], row * w, rcond=None)
    else:
        a, b = y[:, 0].copy(), np.zeros(len(iu))
    b = np.maximum(b, 0.0)
    if n == 1:
        o, beta = np.zeros(1), np.zeros(1)
    elif n == 2:
        o, beta = np.full(2, a[0] / 2), np.full(2, b[0] / 2)
    else:
        o, beta = _node_costs(a, iu, iv, n), _node_costs(b, iu, iv, n)
    return a, b, np.maximum(o, 0.0), np.maximum(beta, 0.0)


def _labels(values: np.ndarray) -> np.ndarray:
    """Class numbers 0, 1, ... of equal values (rows, for a 2-d array)."""
    return np.unique(values, axis=0, return_inverse=True)[1].reshape(-1)


def _class_fit(
    pair: np.ndarray, iu: np.ndarray, iv: np.ndarray, labels: np.ndarray, fallback: np.ndarray
) -> np.ndarray:
    """Per-node costs, one per class (``labels``), whose sums explain the pair values
    ``pair_uv = x_u + x_v``: per pair of classes the median over its pairs, then the class
    costs by least squares over those medians (weighted by the number of pairs); one class
    costs half its pairs' median.  ``fallback`` where the medians do not determine every
    class (two single-node classes, say).  O(pairs x classes^2).

    Examples
    --------
    >>> iu, iv = np.triu_indices(3, 1)  # pairs 01, 02, 12
    >>> _class_fit(np.array([2.0, 9.0, 2.2]), iu, iv, np.zeros(3, int), np.zeros(3)).tolist()
    [1.1, 1.1, 1.1]
    """
    k = int(labels.max()) + 1
    rows, rhs, weights = [], [], []
    cu, cv = labels[iu], labels[iv]
    for c in range(k):
        for d in range(c, k):
            sel = ((cu == c) & (cv == d)) | ((cu == d) & (cv == c))
            if sel.any():
                row = np.zeros(k)
                row[c] += 1.0
                row[d] += 1.0
                rows.append(row)
                rhs.append(float(np.median(pair[sel])))
                weights.append(np.sqrt(sel.sum()))
    design = np.array(rows)
    if not rows or np.linalg.matrix_rank(design) < k:
        return fallback
    w = np.array(weights)
    sol, *_ = np.linalg.lstsq(design * w[:, None], np.array(rhs) * w, rcond=None)
    return np.maximum(sol, 0.0)[labels]


#: Student's t quantile, two-sided 95 %, by degrees of freedom 1..10 (beyond: 2.0)
_T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23)


def confidence(per_round: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node (last axis), ``(lo, hi)``: the 95 % confidence interval of the mean of its
    per-round fits ``per_round`` (rounds x nodes; Student's t over the rounds), widened to
    hold the rounds' range and ``value`` (the fit of every round together).  What
    :func:`speed_classes` separates on: nodes are told apart only where their intervals do
    not overlap, so equal nodes measured with noise stay one class (their rounds' ranges
    alone fail to overlap by chance with few rounds), while nodes that differ beyond the
    noise separate.  O(rounds x nodes).

    Examples
    --------
    >>> lo, hi = confidence(np.array([[1.0, 2.0], [1.2, 2.1], [1.1, 1.9]]), np.array([1.1, 2.0]))
    >>> np.round(lo, 3).tolist(), np.round(hi, 3).tolist()
    ([0.852, 1.752], [1.348, 2.248])
    """
    per_round = np.asarray(per_round, dtype=float)
    lo = np.minimum(per_round.min(0), value)
    hi = np.maximum(per_round.max(0), value)
    r = len(per_round)
    if r < 2:
        return lo, hi
    t = _T95[r - 2] if r - 1 <= len(_T95) else 2.0
    half = t * per_round.std(0, ddof=1) / np.sqrt(r)
    mean = per_round.mean(0)
    return np.minimum(lo, mean - half), np.maximum(hi, mean + half)


def _node_costs(pair: np.ndarray, iu: np.ndarray, iv: np.ndarray, n: int) -> np.ndarray:
    """Per-node shares ``o`` of pair sums ``pair_uv = o_u + o_v``: for each ``u`` the median
    over pairs ``v, w`` of ``(p_uv + p_uw - p_vw) / 2``, robust to a few bad pairs (a least
    squares fit would spread one slow measurement over every node)."""
    m = np.zeros((n, n))
    m[iu, iv] = m[iv, iu] = pair
    out = np.empty(n)
    for u in range(n):
        others = np.array([x for x in range(n) if x != u])
        v, w = np.triu_indices(len(others), 1)
        v, w = others[v], others[w]
        out[u] = np.median((m[u, v] + m[u, w] - m[v, w]) / 2)
    return out


def speed_classes(
    values: np.ndarray,
    tolerance: float,
    floor: float = 0.0,
    *,
    lo: np.ndarray | None = None,
    hi: np.ndarray | None = None,
) -> np.ndarray:
    """Replace values by the mean of their class: sorted values split where the next one is
    more than ``tolerance`` (relative) and ``floor`` (absolute) above the class's first,
    and, with ``lo``/``hi`` (each value's spread), where its spread starts above the
    highest spread in the class (measurements that overlap do not separate).

    Examples
    --------
    >>> speed_classes(np.array([1.0, 1.02, 2.0]), 0.05).tolist()
    [1.01, 1.01, 2.0]
    >>> speed_classes(np.array([1.0, 2.0]), 0.05, lo=np.array([0.9, 0.8]),
    ...               hi=np.array([2.5, 2.1])).tolist()
    [1.5, 1.5]
    """
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    out = values.copy()
    start, top = 0, -np.inf  # top: the highest spread in the class so far
    for k in range(1, len(order) + 1):
        if hi is not None:
            top = max(top, hi[order[k - 1]])
        if k < len(order):
            first = values[order[start]]
            split = values[order[k]] > first + max(first * tolerance, floor, 1e-15)
            if split and lo is not None:
                split = lo[order[k]] > top
            if not split:
                continue
        members = order[start:k]
        out[members] = values[members].mean()
        start, top = k, -np.inf
    return out


def probe(
    hc: ScheduleComm,
    *,
    sizes=DEFAULT_SIZES,
    repeat: int = 4,
    rounds: int = 3,
    serial: bool | None = None,
    model: Any = "tini",
    tolerance: float = 0.05,
    spread: float = 0.05,
    retries: int = 3,
    estimate: str = "robust",
    name: str = "probed",
    pipeline: bool | None = None,
) -> ProbeResult:
    """Measure every pair of ``hc``'s ranks and fit a :class:`Platform` (collective).

    Node ids are ``hc.nodes`` (the platform ids of the ranks) and each node's ``host`` is
    the processor name (none under emulation: the emulated nodes are separate hosts).
    ``serial``: one pair at a time (None: :func:`pairs_one_at_a_time` decides).
    ``spread`` and ``retries``: when a series is confirmed, and how many extra rounds the
    unconfirmed ones get (module doc, step 2); ``estimate``: ``"robust"``, ``"min"`` or
    ``"forecast"`` (step 3); ``pipeline``: whether the per-message cost of a pipeline is
    measured and added (step 7; None: natively, not under emulation).  Returns the same
    result on every rank.
    """
    from mpi4py import MPI

    from ..errors import HetcollError

    if estimate not in ESTIMATES:
        raise HetcollError(f"estimate: expected one of {', '.join(ESTIMATES)}, got {estimate!r}")
    if rounds < 1 or repeat < 1 or retries < 0:
        raise HetcollError("probe: rounds and repeat must be >= 1, retries >= 0")
    t0 = time.monotonic()
    sizes = tuple(int(s) for s in sizes)
    if serial is None:
        serial = pairs_one_at_a_time(hc)
    large = MAX_SIZE_INF if estimate == "min" else LARGE
    forecaster = Forecaster()
    samples: list[np.ndarray] = []  # per round: N x N x sizes x repeat
    measured: list[np.ndarray] = []  # per round: one round trip per series
    for _ in range(rounds):
        samples.append(_measure_round(hc, sizes, repeat, serial))
        measured.append(series_estimate(samples[-1], sizes, large))
        forecaster.update(measured[-1])
    for _ in range(retries):
        wanted = ~confirmed(np.stack(measured), spread)
        if not wanted.any():
            break
        samples.append(_measure_round(hc, sizes, repeat, serial, wanted))
        measured.append(series_estimate(samples[-1], sizes, large))
    stack = np.stack(measured)
    if estimate == "forecast":
        rtt = forecaster.forecast()
    else:  # the interleaved rounds' samples together
        rtt = series_estimate(pooled(samples), sizes, large)
    hosts = None if hc.emulate else hc.comm.allgather(MPI.Get_processor_name())
    platform, fit = fit_platform(
        rtt,
        sizes,
        hc.nodes,
        model=model,
        tolerance=tolerance,
        hosts=hosts,
        name=name,
        spread_rounds=measured[:rounds] if rounds > 1 else None,
    )
    if (not hc.emulate if pipeline is None else pipeline) and hc.size > 1:
        from .pipeline_cost import pipeline_fit

        platform, fit["pipeline"] = pipeline_fit(hc, platform)
    fit["estimate"] = {"name": estimate, "large": None if estimate == "min" else large}
    fit["pairs"] = "one at a time" if serial else "disjoint pairs at once"
    return ProbeResult(
        platform,
        sizes,
        rtt,
        measured,
        forecaster.winner_counts(),
        fit,
        time.monotonic() - t0,
        reliability(stack, spread, hc.nodes, sizes, full=rounds),
    )


def relative_errors(probed: Platform, true: Platform, time_scale: float = 1.0) -> dict[str, Any]:
    """The largest relative error of the probed per-node costs against the true platform's
    (emulated ``time_scale`` times): ``t_ini_max_rel_error``, ``t_byte_max_rel_error`` (None
    where a true cost is 0).

    Examples
    --------
    >>> from hetcoll.platform import nodes_from_costs
    >>> true = Platform(nodes_from_costs([1e-3, 2e-3]))
    >>> probed = Platform(nodes_from_costs([1.1e-3, 2e-3]))
    >>> round(relative_errors(probed, true)["t_ini_max_rel_error"], 3)
    0.1
    """
    out: dict[str, Any] = {}
    for key in ("t_ini", "t_byte"):
        want = getattr(true, key) * time_scale
        got = getattr(probed, key)
        ok = bool((want > 0).all())
        out[f"{key}_max_rel_error"] = float((abs(got - want) / want).max()) if ok else None
    return out
