"""``auto``: the best registered tree planner for this platform, request and size.

A planner registered like the others, but one layer above them: it plans with every
candidate and ranks them by simulation through the comparison service
(:func:`hetcoll.compare.compare`), which itself plans through the registry.  Living here,
above :mod:`hetcoll.compare`, it closes no import circle; importing :mod:`hetcoll`
registers it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from .compare import ROOTED_OPERATIONS, compare, slice_choices
from .errors import PlannerError
from .planners._common import prepare
from .planners._registry import Option, register
from .planners._shared import shared_work
from .platform import Platform
from .schedule import Schedule

__all__ = ["auto", "everyone_bound"]


#: the collectives whose candidates take ``align`` (an element's bytes)
_ALIGNED = ("allgather", "reduce_scatter", "allreduce")


@register(
    "auto",
    collectives=("bcast", "multicast", *ROOTED_OPERATIONS),
    paper="hetcoll (selection by simulation, like MPI libraries' tuned collectives)",
    complexity="sum of the candidates' costs + one simulation each",
    summary="simulate every applicable tree planner (and slice size) and keep the fastest",
    kind="select",
    options=("message_cost", "align"),
)
def auto(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str | None = None,
    sizes: Mapping[str, int] | None = None,
    message_cost: float = 0.0,
    align: Annotated[int, Option(most=1 << 20)] = 1,
) -> Schedule:
    """Plan with every applicable registered tree planner, simulate each, keep the fastest.

    ``collective`` (a rooted one: ``reduce``, ``gather``, ``scatter``, ``allreduce``,
    ``allgather``, ``reduce_scatter``) compares every planner of it: the rooted planners,
    every broadcast tree planner run backwards, and for ``allreduce``/``allgather`` the
    hypercube planners too; ``root`` None lets each planner choose.  The message goes in
    one piece unless ``segment_size`` is given.

    The candidates and their ranking are :func:`hetcoll.compare.compare`'s (the registry's
    one applicability rule; ties go to the name that sorts first, so every rank picks the
    same).  The returned schedule is the winner's, with ``algorithm="auto"``,
    ``params["chosen"]`` naming it and ``params["candidates"]`` every simulated
    candidate's time.  ``align`` (an allreduce's, reduce-scatter's or allgather's element
    size in bytes) goes to every candidate that takes it (``forest``, ``ring``,
    ``rabenseifner``, ``balanced``: shares and segments in whole elements), as
    ``HetComm`` plans them for its datatype, so ``hetcoll plan --algo auto --option
    align=8`` plans what a ``HetComm`` of doubles runs; a broadcast ignores it.

    **Choose by size.**  Without ``segment_size`` the slice size is chosen too, among
    :func:`hetcoll.compare.slice_choices` (the message in one piece, then 8, 32, 128, 512,
    ... slices down to 4 KiB): a small message goes in one piece down a latency tree (FNF,
    ...), a large one in slices down a single pipelined tree or several (``multi_tree``),
    whichever the simulator finds fastest; ``params["segment_size"]`` is the chosen slice.
    Every candidate is simulated in one piece; after that, the slice sizes lowest lower
    bound first (:func:`hetcoll.bounds.slice_bound`, with the pipeline's fill), and a
    slice size, or a candidate at a slice size, whose lower bound exceeds the fastest time
    found is not planned or not simulated (it cannot win), so a candidate's time in
    ``params["candidates"]`` is its fastest over the slice sizes where it was simulated.

    **Stop at the bound.**  An allgather, reduce-scatter or allreduce on every node of the
    platform plans ``forest`` (a segment search by play-outs and simulations, seconds of
    CPU at 8 nodes) after the other candidates, and not at all when one of them is within
    :data:`hetcoll.compare.NEAR` (0.1 %) of the lower bound of
    :func:`hetcoll.allbounds.collective_bound` (no schedule is faster than it): the ring,
    the hypercube or Rabenseifner's schedule often is on a star of equal NICs.

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> auto(load_platform("fig1"), "1").params["chosen"] in ("fnf", "optimal")
    True
    """
    bound = None
    if collective in ROOTED_OPERATIONS:
        operation = collective
        slices = [segment_size]
        bound = everyone_bound(platform, collective, root, members, model, nbytes, sizes)
    else:
        req = prepare(platform, root, members, model, nbytes, segment_size)
        operation = req.collective
        slices = [req.segment_size] if segment_size is not None else slice_choices(req.nbytes)
    try:
        with shared_work():  # one packing per problem for the candidates that start from it
            found = compare(
                platform,
                operation,
                root=root,
                members=members,
                model=model,
                nbytes=nbytes,
                slices=slices,
                sizes=sizes,
                prune=True,
                message_cost=message_cost,
                bound=bound,
                options={"align": align} if align > 1 and collective in _ALIGNED else None,
            )
    except PlannerError as exc:
        raise PlannerError(f"auto: {exc}") from None
    chosen = found.best.schedule
    best: dict[str, float] = {}
    for c in found.ranked:  # each planner's best time over the slice sizes
        best.setdefault(c.algorithm, c.predicted_time)
    params: dict[str, Any] = {"chosen": found.best.algorithm, "candidates": best}
    if message_cost:
        params["message_cost"] = message_cost
    if segment_size is None and len(slices) > 1:
        params["segment_size"] = found.best.segment_size
    return chosen.relabelled("auto", params)  # every field of what runs


def everyone_bound(
    platform: Platform,
    collective: str,
    root: str | None,
    members: Iterable[str] | None,
    model: Any,
    nbytes: int,
    sizes: Mapping[str, int] | None,
) -> Callable[[], float | None] | None:
    """For an allgather, reduce-scatter or allreduce of equal blocks on every node of
    ``platform``: a function giving a lower bound on its time, of the whole vector
    (``nbytes`` for an allreduce, each member's ``nbytes`` block times their number
    otherwise; None where it cannot be computed); None for any other request.

    The bound is the one without a packing (one byte's reach, each node's port, the cuts:
    :func:`hetcoll.allbounds.members_bound` over every node; an allreduce's transmission
    count, :func:`hetcoll.allbounds.port_bounds`): on a star it is the optimum's, and
    :func:`hetcoll.allbounds.collective_bound`'s packing would cost auto as much as
    ``forest``'s own (9 CPU s for a 64-node allreduce, where the cut gives the same
    bound).  O(N) maximum flows."""
    if collective not in ("allgather", "reduce_scatter", "allreduce") or sizes is not None:
        return None
    if members is not None:
        everyone = {members} if isinstance(members, str) else set(members)
        if everyone | ({root} if root is not None else set()) != set(platform.ids):
            return None
    vector = int(nbytes) if collective == "allreduce" else int(nbytes) * len(platform)

    def bound() -> float | None:
        from .allbounds import members_bound, port_bounds
        from .errors import HetcollError

        try:
            found = members_bound(platform, collective, vector, platform.ids, model)
        except HetcollError:
            return None
        if collective != "allreduce":
            return found.lower_bound
        return max(found.lower_bound, port_bounds(platform, vector, model)["count"])

    return bound
