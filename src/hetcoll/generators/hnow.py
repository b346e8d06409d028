"""Heterogeneous networks of workstations with sender-only costs (Banikazemi et al. 1998)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ArgumentError
from ..platform import Platform, nodes_from_costs
from ..rng import as_rng
from ..units import check_quantity

__all__ = ["two_class_tini", "classes_tini"]


def two_class_tini(
    n: int,
    fast_fraction: float,
    *,
    t_fast: float = 400e-6,
    speed_factor: float = 4.0,
    t_byte: float = 0.0,
    seed: int | np.random.Generator | None = None,
    shuffle: bool = True,
) -> Platform:
    """``n`` nodes, ``round(n * fast_fraction)`` of them fast (``t_fast``), the others
    ``speed_factor`` times slower; every node pays ``t_byte`` per byte.

    The set-up of Banikazemi et al. (1998), Sec. 7.2.1 (t_fast = 400 µs, speed factors 2, 4,
    6). With ``shuffle`` the fast nodes are placed at random ranks (the MPI rank order is
    blind to speed); otherwise they are the first ranks.
    """
    n = _nodes(n)
    fast_fraction = check_quantity(fast_fraction, "factor", "fast_fraction")
    if not 0.0 <= fast_fraction <= 1.0:
        raise ArgumentError(f"fast_fraction must be in [0, 1], got {fast_fraction}")
    t_fast = check_quantity(t_fast, "time", "t_fast")
    speed_factor = check_quantity(speed_factor, "factor", "speed_factor", positive=True)
    n_fast = round(n * fast_fraction)
    fast = np.zeros(n, dtype=bool)
    fast[:n_fast] = True
    if shuffle:
        fast = as_rng(seed).permutation(fast)
    t_ini = np.where(fast, t_fast, t_fast * speed_factor)
    return Platform(nodes_from_costs(t_ini, t_byte), model="tini")


def classes_tini(
    n: int,
    values: Sequence[float],
    *,
    t_byte: float = 0.0,
    seed: int | np.random.Generator | None = None,
) -> Platform:
    """``n`` nodes whose ``t_ini`` is drawn uniformly from ``values`` (cost classes).

    Banikazemi et al. (1998), Sec. 6.3: values {100, 200, ..., 800} µs.
    """
    n = _nodes(n)
    if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray) or not len(values):
        raise ArgumentError(f"values: must be a non-empty list of times, got {values!r}")
    costs = [check_quantity(v, "time", f"values[{i}]") for i, v in enumerate(values)]
    rng = as_rng(seed)
    t_ini = rng.choice(np.asarray(costs, dtype=float), size=n)
    return Platform(nodes_from_costs(t_ini, t_byte), model="tini")


def _nodes(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ArgumentError(f"n must be an integer >= 1, got {n!r}")
    return int(n)
