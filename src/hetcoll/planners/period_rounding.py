"""Whole slices per period: the packed trees' weights rounded so that the busiest port stays
least busy.

A periodic timetable (:mod:`.multitree`) sends tree ``i``'s slices ``m_i`` at a time, whole
slices, ``sum m_i`` per period; the period lasts at least its busiest port's load
``max_r sum_i m_i load_ir``, so the rounding of the optimal weights ``lambda_i`` decides how
much of the optimal throughput a period of that many slices can keep at best.  The smallest
such load is an integer program; :func:`whole_slices` starts from a greedy rounding
(:func:`greedy`) and improves it by local search, one slice moved from a tree to another
while the move lowers the busiest port's load, or keeps it and lowers the sum of the
squared loads (so that a move may free a second busiest port before the busiest), until
no move does.  Each move strictly lowers that pair, so the search ends.

Short periods need it most: they fill a pipeline sooner (a long message's periodic
timetable is kept at 24-64 slices per period on the n = 50 platforms of
``benchmarks/simulated/bench_sizes.py``), and have few slices per tree to round.  On those
platforms (Fig. 4 generator, density 0.12, seeds 0, 1, 2) the greedy keeps 92.0, 88.8 and
87.0 % of the optimum at 16 slices per period, 98.2, 90.8 and 94.7 % at 32, 98.5, 96.6 and
98.3 % at 64; the search 94.7, 88.8, 90.6 %, 98.7, 92.8, 96.6 % and 99.5, 96.6, 98.3 %.  A
local optimum, not always the integer program's (99.1 % for seed 2 at 64 slices).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fewest_flows", "greedy", "shares", "shares_and_loads", "whole_slices"]


def greedy(share: np.ndarray, loads: np.ndarray, periods: int) -> np.ndarray:
    """``periods`` slices split among the trees near ``share``: rounded down, then one at a
    time to the tree whose slice leaves the busiest port least busy (ties: the tree
    furthest below its share, then the first).  ``loads[i, r]``: tree ``i``'s seconds per
    slice on port ``r``."""
    m = np.floor(share * periods)
    load = m @ loads
    for _ in range(periods - int(m.sum())):
        busiest = (load[None, :] + loads).max(axis=1)
        behind = share * periods - m
        i = int(np.lexsort((np.arange(len(m)), -behind, busiest))[0])
        m[i] += 1
        load += loads[i]
    return m


def whole_slices(share: np.ndarray, loads: np.ndarray, periods: int) -> np.ndarray:
    """``periods`` whole slices among the trees (floats, summing to ``periods``): the
    :func:`greedy` rounding of ``share``, then improved by moving one slice at a time
    (see the module docstring).  Among the moves that lower the pair ``(busiest load,
    sum of squared loads)`` the one of least busiest load, then least sum of squares,
    then first ``(from, to)`` is taken: deterministic.  The greedy's rounding is returned
    unchanged unless the search lowers its busiest port (an equal one may timetable
    differently, and run no faster)."""
    start = greedy(share, loads, periods)
    if len(start) < 2:
        return start
    m = start.copy()
    load = m @ loads
    first = float(load.max())
    tol = 1e-12 * max(first, 1e-300)
    while True:
        top, squares = float(load.max()), float(load @ load)
        best: tuple[float, float, int, int] | None = None
        for a in np.flatnonzero(m > 0).tolist():
            moved = load - loads[a] + loads  # row b: one of a's slices moved to b
            tops = moved.max(axis=1)
            sums = np.einsum("br,br->b", moved, moved)
            better = (tops < top - tol) | ((tops <= top + tol) & (sums < squares - tol * top))
            better[a] = False
            if not better.any():
                continue
            key = np.lexsort((sums, np.where(better, tops, np.inf)))
            b = int(key[0])
            cand = (float(tops[b]), float(sums[b]), a, b)
            if best is None or cand[:2] < best[:2]:
                best = cand
        if best is None:
            return m if float(load.max()) < first - tol else start
        _t, _s, a, b = best
        m[a] -= 1
        m[b] += 1
        load = load - loads[a] + loads[b]


def shares(total: int, m: list[int]) -> list[int]:
    """``total`` slices split in proportion to ``m`` (largest remainders, then order)."""
    weight = np.array(m, dtype=float)
    exact = total * weight / weight.sum()
    out = np.floor(exact).astype(np.int64)
    rest = total - int(out.sum())
    for i in sorted(range(len(m)), key=lambda i: (-(exact[i] - out[i]), i))[:rest]:
        out[i] += 1
    return out.tolist()


def fewest_flows(share: np.ndarray, loads: np.ndarray, total: int, candidates) -> int:
    """The fewest trees that carry a slice of a message of ``total`` slices when it is split
    (:func:`shares`) in proportion to the :func:`whole_slices` rounding of ``share`` to
    any of ``candidates`` slices per period (the flows of any periodic timetable
    :mod:`.multitree` may keep among those periods)."""
    fewest = len(share)
    for periods in candidates:
        m = [int(x) for x in whole_slices(share, loads, periods) if x > 0]
        fewest = min(fewest, sum(1 for x in shares(total, m) if x))
    return fewest


def shares_and_loads(g, packing) -> tuple[np.ndarray, np.ndarray]:
    """Each tree of ``packing`` (a :class:`~hetcoll.planners.steady.Packing` on the plan
    graph ``g``) its share of the slices and its load on every port, per slice.  O(trees x
    edges)."""
    lam = np.asarray(packing.weights, dtype=float)
    prob = g.problem()
    return lam / lam.sum(), np.array([prob.loads(tree.tolist()) for tree in packing.trees])
