"""Which slice sizes and candidates ``auto``'s search plans (:func:`hetcoll.compare.compare`
with ``prune``): the lower bound of each slice size, the valley past which a slice size is
not planned, and the single-tree planners planned last."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["bounded", "past_the_valley", "single_trees", "size_bounds"]


def past_the_valley(size: int, fastest: Mapping[int, float]) -> bool:
    """Whether two slice sizes visited lie on the same side of ``size``, the nearer one
    slower than the farther (``fastest``: each one's fastest time): a pipeline's time over
    its slice size falls to one valley and rises past it (fill against per-message costs),
    so ``size`` is past the rise and not planned.  A heuristic, not a bound: on the
    platforms of ``bench_sizes.py --auto`` (seeds 0-2, n = 30 and 50, with and without
    ``--latency 50us``) and of its latency sweep it leaves every choice and time as the
    search without it, and spares the slice sizes past the winner's neighbours."""
    for near, t_near in fastest.items():
        for far, t_far in fastest.items():
            if t_near > t_far and (far < near < size or size < near < far):
                return True
    return False


def size_bounds(sizes: list[int | None], bounds: list[Any], nbytes: int) -> list[float]:
    """Per slice size, a lower bound on every candidate's time there: its
    :attr:`~hetcoll.bounds.SliceBound.whole` where every registered planner sends
    messages of exactly that size, which holds when it divides each half of the message
    (``two_vbbs``, and ``switch_aware`` when it keeps it, sends each half down its own
    tree: an odd number of slices ends each half in a half slice;
    ``tests/test_bounds_whole_slices.py`` checks every planner),
    else its ``seconds``; and the ``seconds`` of every size at least as large (which hold
    for smaller messages too); 0 without one."""
    out = []
    for size, bound in zip(sizes, bounds, strict=True):
        low = 0.0
        if bound is not None:
            low = bound.whole if size and nbytes % (2 * size) == 0 else bound.seconds
        for other, b in zip(sizes, bounds, strict=True):
            if b is not None and size and other and other >= size:
                low = max(low, b.seconds)
        out.append(low)
    return out


def bounded(bound: Any) -> bool:
    """Whether ``bound`` (a :class:`~hetcoll.bounds.SliceBound` or None) has the problem
    that bounds each schedule."""
    return bound is not None and bound.problem is not None


def single_trees(names: Sequence[str], operation: str) -> list[str]:
    """The planners of ``names`` whose broadcast is one tree of the model's edges
    (``PlannerInfo.single_tree``): ``auto``'s search plans them after the others at a
    slice size, and not at all where no such tree can beat the fastest time then."""
    from .planners import REGISTRY

    if operation != "bcast":  # (a multicast's tree spans the members, maybe relayed)
        return []
    return [n for n in names if n in REGISTRY and REGISTRY[n].single_tree]
