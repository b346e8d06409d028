"""``auto``: the best registered tree planner for this platform, request and size."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._common import prepare
from ._registry import register

__all__ = ["auto"]


@register(
    "auto",
    collectives=("bcast", "multicast"),
    paper="hetcoll (selection by simulation, like MPI libraries' tuned collectives)",
    complexity="sum of the candidates' costs + one simulation each",
    summary="simulate every applicable tree planner and keep the fastest",
    kind="select",
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

    The candidates and their ranking are :func:`hetcoll.compare.compare`'s (the registry's
    one applicability rule; ties go to the name that sorts first, so every rank picks the
    same).  The returned schedule is the winner's, with ``algorithm="auto"``,
    ``params["chosen"]`` naming it and ``params["candidates"]`` every candidate's time.

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> auto(load_platform("fig1"), "1").params["chosen"] in ("fnf", "optimal")
    True
    """
    from ..compare import compare

    req = prepare(platform, root, members, model, nbytes, segment_size)
    try:
        found = compare(
            platform,
            req.collective,
            root=root,
            members=members,
            model=model,
            nbytes=nbytes,
            segment_size=segment_size,
        )
    except PlannerError as exc:
        raise PlannerError(f"auto: {exc}") from None
    chosen = found.best.schedule
    params = {
        "chosen": found.best.algorithm,
        "candidates": {c.algorithm: c.predicted_time for c in found.ranked},
    }
    return Schedule(chosen.collective, "auto", chosen.nbytes, chosen.flows, params, chosen.model)
