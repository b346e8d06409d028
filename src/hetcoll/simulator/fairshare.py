"""Max-min fair sharing of link bandwidth among flows (shared contention)."""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_rates"]


def max_min_rates(paths: list[np.ndarray], caps: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows over shared links (progressive filling).

    Flow ``i`` crosses the resources ``paths[i]`` and may not exceed ``caps[i]``; resource
    ``l`` carries at most ``capacity[l]`` in total.  Every round raises the rates of the
    flows not yet fixed equally until a resource is full (or a flow reaches its cap); the
    flows through it are fixed at that rate.  Bertsekas & Gallager, *Data Networks*,
    Sec. 6.5.2.  O(rounds x total path length), at most one round per flow.

    >>> paths = [np.array([0]), np.array([0]), np.array([1])]
    >>> max_min_rates(paths, np.full(3, np.inf), np.array([10.0, 4.0])).tolist()
    [5.0, 5.0, 4.0]
    """
    f = len(paths)
    rate = np.zeros(f)
    lens = np.array([len(p) for p in paths], dtype=np.int64)
    flow_of = np.repeat(np.arange(f), lens)
    if len(flow_of):
        links, local = np.unique(np.concatenate(paths), return_inverse=True)
        left = np.asarray(capacity, dtype=float)[links].copy()
    else:
        links, local, left = np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    fixed = np.zeros(f, dtype=bool)
    caps = np.asarray(caps, dtype=float)
    while not fixed.all():
        live = ~fixed[flow_of]
        count = np.bincount(local[live], minlength=len(links))
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, left / np.maximum(count, 1), np.inf)
        best = caps.copy()
        np.minimum.at(best, flow_of[live], share[local[live]])
        best[fixed] = np.inf
        level = best[~fixed].min()
        if level == np.inf:
            rate[~fixed] = np.inf
            break
        now_fixed = ~fixed & (best <= level)
        rate[now_fixed] = level
        fixed |= now_fixed
        used = now_fixed[flow_of]
        np.subtract.at(left, local[used], level)
        np.maximum(left, 0.0, out=left)
    return rate
