"""Work that several planners repeat on one request, done once while ``auto`` plans.

At each slice size ``auto`` plans a dozen candidates, and four of them start from the same
optimal packing of the same steady-state problem: ``throughput_tree``, ``lp_grow``,
``lp_prune`` (its edge loads) and ``multi_tree`` (its packing, and for its single-tree
search ``throughput_tree``'s tree again).  Inside :func:`shared_work` those answers are
kept, keyed by everything they depend on (the problem's nodes, edges, times and
resources), and handed to the next planner that asks.  Each is a deterministic solve, so
every schedule is byte for byte the one it plans alone; outside the block every call
solves, as before.  The answers are dropped when the outermost block ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import numpy as np

from .steady import Packing, SteadyProblem, edge_loads, pack_arborescences

__all__ = ["loads", "packing", "problem_key", "shared", "shared_work"]

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


def packing(problem: SteadyProblem) -> Packing:
    """:func:`~hetcoll.planners.steady.pack_arborescences` of ``problem`` (a copy of the
    kept one inside :func:`shared_work`: its fields may be replaced, its arrays are
    shared and never written)."""
    if _SHARED.get() is None:
        return pack_arborescences(problem)
    return replace(shared(("packing", problem_key(problem)), lambda: pack_arborescences(problem)))


def is_shared(problem: SteadyProblem, pack: Packing) -> bool:
    """Whether ``pack`` is :func:`packing`'s kept answer for ``problem``."""
    memo = _SHARED.get()
    kept = memo.get(("packing", problem_key(problem))) if memo is not None else None
    return kept is not None and kept.trees is pack.trees


def loads(problem: SteadyProblem, pack: Packing) -> np.ndarray:
    """:func:`~hetcoll.planners.steady.edge_loads` of ``problem`` from ``pack`` (kept when
    ``pack`` is the kept packing of ``problem``; a copy is returned)."""
    if not is_shared(problem, pack):
        return edge_loads(problem, pack)
    key = ("loads", problem_key(problem))
    return shared(key, lambda: edge_loads(problem, pack)).copy()
