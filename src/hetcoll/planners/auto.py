"""``auto``: the best registered tree planner for this platform, request and size."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._common import prepare
from ._registry import REGISTRY, register

__all__ = ["auto"]


@register(
    "auto",
    collectives=("bcast", "multicast"),
    paper="hetcoll (selection by simulation, like MPI libraries' tuned collectives)",
    complexity="sum of the candidates' costs + one simulation each",
    summary="simulate every applicable tree planner and keep the fastest",
)
def auto(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Plan with every applicable registered tree planner, simulate each, keep the fastest.

    Candidates are the planners registered for the operation whose ``max_members`` admits the
    request and, for exact planners, whose models include the cost model.  Ties go to the
    name that sorts first, so every rank picks the same.  The returned schedule is the
    winner's, with ``algorithm="auto"`` and ``params["chosen"]`` naming it.

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> auto(load_platform("fig1"), "1").params["chosen"] in ("fnf", "optimal")
    True
    """
    from ..simulate import simulate

    req = prepare(platform, root, members, model, nbytes, segment_size)
    results: dict[str, tuple[float, Schedule]] = {}
    for name, info in sorted(REGISTRY.items()):
        if name == "auto" or info.kind not in ("tree", "exact"):
            continue
        if req.collective not in info.collectives and "bcast" not in info.collectives:
            continue
        if info.max_members is not None and len(req.members) > info.max_members:
            continue
        if info.kind == "exact" and req.model.name not in info.exact_models:
            continue
        try:
            schedule = info.func(
                platform, root, members, model, nbytes=nbytes, segment_size=segment_size
            )
        except PlannerError:
            continue
        results[name] = (simulate(platform, schedule, req.model).makespan, schedule)
    if not results:
        raise PlannerError("auto: no registered planner applies to this request")
    best = min(results, key=lambda k: (results[k][0], k))
    chosen = results[best][1]
    params = {"chosen": best, "candidates": {k: t for k, (t, _) in results.items()}}
    return Schedule(chosen.collective, "auto", chosen.nbytes, chosen.flows, params, chosen.model)
