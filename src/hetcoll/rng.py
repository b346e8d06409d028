"""The one place where randomness enters: :func:`as_rng`."""

from __future__ import annotations

import numpy as np

from .errors import ArgumentError

__all__ = ["as_rng", "spawn_seeds"]


def as_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """A NumPy ``Generator`` from a seed, an existing generator (returned as is), or None (fresh).

    Like scikit-learn's ``check_random_state``: every function that draws random numbers
    takes ``seed`` and calls this, so that results are reproducible from one integer.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise TypeError(f"seed must be an int, a numpy Generator or None, got {seed!r}")
    if seed is not None and seed < 0:
        raise ArgumentError(f"seed: must be >= 0, got {seed}")
    return np.random.default_rng(seed)


def spawn_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent integer seeds derived from ``seed`` (stable across runs and platforms).

    Used to hand independent trials to worker processes: trial ``i`` gets ``spawn_seeds(seed,
    n)[i]`` whatever the number of workers, so results do not depend on parallelism.
    """
    for name, value in (("seed", seed), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name} must be an int, got {value!r}")
        if value < 0:
            raise ArgumentError(f"{name}: must be >= 0, got {value}")
    children = np.random.SeedSequence(seed).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint64)[0]) for c in children]
