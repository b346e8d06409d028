"""Work that several planners repeat on one request, done once while ``auto`` plans.

At each slice size ``auto`` plans a dozen candidates, and four of them start from the same
optimal packing of the same steady-state problem: ``throughput_tree``, ``lp_grow``,
``lp_prune`` (its edge loads) and ``multi_tree`` (its packing, and for its single-tree
search ``throughput_tree``'s tree again).  Inside :func:`shared_work` those answers are
kept, keyed by everything they depend on (the problem's nodes, edges, times and
resources), and handed to the next planner that asks; so are the paper heuristics' trees,
which their planners make and ``throughput_tree``'s search starts from
(:func:`~hetcoll.planners.pipelined._heuristic`).  Each is a deterministic solve, so
every schedule is byte for byte the one it plans alone; outside the block every call
solves.  The answers are dropped when the outermost block ends.

**A planner's own simulation.**  A planner that chose its schedule by simulating it
(``forest`` under windows per edge) keeps that prediction (:func:`keep_prediction`), and
the comparison takes it (:func:`simulated`) instead of simulating the same schedule again.

**Across slice sizes.**  Under costs proportional to the bytes (no per-message cost) the
problem of one slice size is another's with every time multiplied by their ratio, and
``auto``'s slices of a power-of-two message are a power of two apart.  Multiplying every
input by a power of two multiplies every sum, product and quotient of a solve by it
exactly and keeps every comparison, so the packing, the edge loads, ``throughput_tree``'s
search and ``multi_tree``'s period timetables of one slice size give another's bit for
bit once multiplied by that power of two (:func:`scale_class`: the problems whose times
are one another's times a power of two; each answer is kept with the scale it was solved
at).  So they are solved once per request, not once per slice size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import numpy as np

from .steady import Packing, SteadyProblem, edge_loads, pack_arborescences

__all__ = [
    "keep_makespan",
    "keep_prediction",
    "kept_as",
    "loads",
    "packing",
    "problem_key",
    "scale_class",
    "scaled",
    "shared",
    "shared_work",
    "simulate_kept",
    "simulated",
]

#: the answers kept while :func:`shared_work` runs (None outside it)
_SHARED: ContextVar[dict | None] = ContextVar("hetcoll_shared_work", default=None)


@contextmanager
def shared_work() -> Iterator[None]:
    """Keep the shared answers (:func:`packing`, :func:`loads`, :func:`shared`) for the
    duration of the block (nested blocks share the outermost one's)."""
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared(key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, or inside :func:`shared_work` the answer it gave for ``key`` there
    (the key must name every input of ``compute``)."""
    memo = _SHARED.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def problem_key(p: SteadyProblem) -> tuple:
    """What a packing of ``p`` depends on: its nodes, root, edges, times and resources."""
    u = p.usage
    arrays = (p.src, p.dst, np.asarray(p.T, dtype=float), u.data, u.indices, u.indptr)
    return (p.n, p.root, p.ports, u.shape, *(np.ascontiguousarray(a).tobytes() for a in arrays))


def scale_class(p: SteadyProblem) -> tuple[tuple, float]:
    """``(key, scale)``: ``scale`` the longest time a slice keeps a resource busy, ``key``
    the same for two problems exactly when each of their times (edges' and resources')
    is the other's times a power of two (their unit problems, every time divided by its
    ``scale``, are equal and their scales' mantissas too).  A problem without a positive
    finite scale is its own class (scale 1)."""
    import math

    scale = float(abs(p.usage).max()) if p.m else 0.0
    if not 0.0 < scale < math.inf:
        return (problem_key(p), None), 1.0
    usage = p.usage.copy()
    usage.data = usage.data / scale
    unit = replace(p, T=np.asarray(p.T, dtype=float) / scale, resources=usage)
    return (problem_key(unit), math.frexp(scale)[0]), scale


def scaled(key: tuple, scale: float, compute: Callable[[], Any], rescale) -> Any:
    """``compute()`` for a problem of :func:`scale_class` ``scale``, or inside
    :func:`shared_work` ``rescale(kept, ratio)`` of the answer kept for ``key`` (a key
    holding the problem's class) at its scale, ``ratio`` the kept scale over ``scale``
    (a power of two: ``rescale`` divides each time, and multiplies each rate, by it,
    exactly)."""
    if _SHARED.get() is None:
        return compute()
    kept_scale, kept = shared(key, lambda: (scale, compute()))
    return rescale(kept, kept_scale / scale)


def packing(problem: SteadyProblem) -> Packing:
    """:func:`~hetcoll.planners.steady.pack_arborescences` of ``problem`` (inside
    :func:`shared_work` the one kept for its :func:`scale_class`, rescaled: its arrays
    are new, its trees shared and never written)."""
    if _SHARED.get() is None:
        return pack_arborescences(problem)
    key, scale = scale_class(problem)
    return scaled(("packing", key), scale, lambda: pack_arborescences(problem), _rescaled)


def _rescaled(pack: Packing, ratio: float) -> Packing:
    """``pack`` of a problem whose times are ``pack``'s problem's divided by ``ratio``."""
    return replace(
        pack,
        weights=pack.weights * ratio,
        throughput=pack.throughput * ratio,
        upper_bound=pack.upper_bound * ratio,
    )


def is_shared(problem: SteadyProblem, pack: Packing) -> bool:
    """Whether ``pack`` is :func:`packing`'s kept answer for ``problem``."""
    memo = _SHARED.get()
    if memo is None:
        return False
    kept = memo.get(("packing", scale_class(problem)[0]))
    return kept is not None and kept[1].trees is pack.trees


def loads(problem: SteadyProblem, pack: Packing) -> np.ndarray:
    """:func:`~hetcoll.planners.steady.edge_loads` of ``problem`` from ``pack`` (kept when
    ``pack`` is the kept packing of ``problem``; a new array is returned)."""
    if not is_shared(problem, pack):
        return edge_loads(problem, pack)
    key, scale = scale_class(problem)
    return scaled(("loads", key), scale, lambda: edge_loads(problem, pack), np.multiply)


def keep_prediction(platform: Any, schedule: Any, model: Any, prediction: Any) -> None:
    """Inside :func:`shared_work`: ``prediction`` is what simulating ``schedule`` on
    ``platform`` under ``model`` gives (:func:`simulated` returns it for these very
    objects); outside it, nothing."""
    memo = _SHARED.get()
    if memo is not None:
        memo[("prediction", id(schedule))] = (schedule, platform, model, prediction)


def keep_makespan(platform: Any, schedule: Any, model: Any, makespan: float) -> None:
    """Inside :func:`shared_work`: simulating ``schedule`` on ``platform`` under ``model``
    ends exactly at ``makespan`` (:func:`~hetcoll.planners.known_runs.runs_as_listed`),
    which :func:`simulated` then hands out as a :class:`~hetcoll.planners.known_runs.
    KnownRun` for these very objects.  One at a time (the last replaces the one before);
    outside the block, nothing."""
    memo = _SHARED.get()
    if memo is not None:
        from .known_runs import KnownRun

        run = KnownRun(makespan, platform, schedule, model)
        memo["known run"] = (schedule, platform, model, run)


def simulated(platform: Any, schedule: Any, model: Any = None) -> Any:
    """:func:`hetcoll.simulator.simulate` of ``schedule``, or inside :func:`shared_work`
    the prediction a planner kept for these very objects (:func:`keep_prediction`, or
    the last :func:`simulate_kept`; the objects are held, so their ids are not reused),
    or the run whose makespan it knew (:func:`keep_makespan`: simulated only when more
    than its makespan is asked)."""
    memo = _SHARED.get()
    if memo is not None:
        for key in ("known run", "last run", ("prediction", id(schedule))):
            got = memo.get(key)
            if got is not None and got[0] is schedule and got[1] is platform and got[2] is model:
                if key in ("known run", "last run"):  # one at a time: handed out once
                    del memo[key]
                return got[3]
    from ..simulator import simulate

    return simulate(platform, schedule, model)


def kept_as(schedule: Any, same: Any) -> None:
    """Inside :func:`shared_work`: the last run kept (:func:`simulate_kept`), if it is
    ``schedule``'s, is also ``same``'s (a copy with the same transfers, which
    :func:`simulated` then hands it out for instead); outside it, nothing."""
    memo = _SHARED.get()
    got = None if memo is None else memo.get("last run")
    if got is not None and got[0] is schedule:
        memo["last run"] = (same, *got[1:])


def simulate_kept(platform: Any, schedule: Any, model: Any = None) -> Any:
    """:func:`hetcoll.simulator.simulate` of ``schedule``; inside :func:`shared_work` its
    prediction is also kept as the last run, which :func:`simulated` hands out for these
    very objects.  One run only (the last replaces the one before): a planner that
    simulates its candidates and returns the last it simulated (``multi_tree``: 10^5
    transfers at 2 048 slices of 50 nodes) is not simulated again by the comparison,
    and no more than one prediction is held."""
    from ..simulator import simulate

    prediction = simulate(platform, schedule, model)
    memo = _SHARED.get()
    if memo is not None:
        memo["last run"] = (schedule, platform, model, prediction)
    return prediction
