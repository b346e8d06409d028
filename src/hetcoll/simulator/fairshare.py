"""Max-min fair sharing of link bandwidth among flows (shared contention)."""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_flat", "max_min_rates"]


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
    lens = np.array([len(p) for p in paths], dtype=np.int64)
    flow_of = np.repeat(np.arange(len(paths)), lens)
    crossed = np.concatenate(paths).astype(np.int64) if len(flow_of) else flow_of
    return max_min_flat(flow_of, crossed, caps, capacity)


def max_min_flat(
    flow_of: np.ndarray,
    crossed: np.ndarray,
    caps: np.ndarray,
    capacity: np.ndarray,
    width: int = 0,
) -> np.ndarray:
    """:func:`max_min_rates` of flows given by their incidence: flow ``flow_of[j]``
    crosses resource ``crossed[j]`` (``caps``: one per flow).  ``width``: every flow
    crosses that many resources and ``flow_of`` is ``repeat(arange(len(caps)), width)``
    (the rounds then take each flow's tightest share column by column, the same
    minimum).  The event loop's form (its paths stored once per distinct transfer)."""
    caps = np.asarray(caps, dtype=float)
    f = len(caps)
    rate = np.zeros(f)
    left = np.asarray(capacity, dtype=float).copy()
    columns = [crossed[j::width] for j in range(width)] if width else []
    free = np.ones(f, dtype=bool)  # the flows not yet fixed
    while free.any():
        live = free[flow_of]
        count = np.bincount(crossed[live], minlength=len(left))
        share = left / np.maximum(count, 1)
        share[count == 0] = np.inf
        best = caps.copy()
        if columns:
            for column in columns:
                np.minimum(best, share[column], out=best)
        else:
            np.minimum.at(best, flow_of[live], share[crossed[live]])
        level = best[free].min()
        if level == np.inf:
            rate[free] = np.inf
            break
        now_fixed = free & (best <= level)
        rate[now_fixed] = level
        free &= ~now_fixed
        np.subtract.at(left, crossed[now_fixed[flow_of]], level)
        np.maximum(left, 0.0, out=left)
    return rate
