"""What every tree planner does first and last: normalise the request, wrap the tree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..models import BoundModel, CostModel, get_model
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from ..units import check_quantity

__all__ = [
    "Request",
    "prepare",
    "tree_schedule",
    "relative_order",
    "relays",
    "check_platform",
    "check_size",
    "member_list",
]


@dataclass(frozen=True)
class Request:
    """A normalised planning request.

    ``members`` holds node indices in rank (platform) order and includes ``root``.
    """

    platform: Platform
    root: int
    members: tuple[int, ...]
    collective: str
    nbytes: int
    model: CostModel
    bound: BoundModel
    segment_size: int | None

    @property
    def ids(self) -> tuple[str, ...]:
        return self.platform.ids

    def others(self) -> list[int]:
        """Members other than the root, in rank order."""
        return [m for m in self.members if m != self.root]

    def message_size(self) -> int:
        """Bytes of one message: the segment size when the message is pipelined."""
        if self.segment_size:
            return min(self.segment_size, self.nbytes)
        return self.nbytes

    def node_cost(self) -> np.ndarray:
        return self.bound.node_cost(self.message_size())


def prepare(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Request:
    """Validate and normalise planner arguments.

    ``members`` None means every node (a broadcast); otherwise the root is added if missing
    and the collective is a multicast.  Raises UnknownNodeError / PlannerError.
    """
    check_platform(platform)
    r = platform.index(root)
    if members is None:
        idx = tuple(range(len(platform)))
        collective = "bcast"
    else:
        names = member_list(members)
        if not names:
            raise PlannerError("members: empty; give at least one destination")
        idx_set: dict[int, None] = {}
        for m in names:
            i = platform.index(m)
            if i in idx_set:
                raise PlannerError(f"members: {m!r} is listed twice")
            idx_set[i] = None
        idx_set[r] = None
        idx = tuple(sorted(idx_set))
        if len(idx) == 1 and len(platform) > 1:
            raise PlannerError("members: no destination besides the root")
        collective = "bcast" if len(idx) == len(platform) else "multicast"
    nbytes = check_size(nbytes, "size")
    if segment_size is not None:
        segment_size = check_size(segment_size, "segment size", positive=True)
    cost_model = get_model(model) if model is not None else platform.model
    bound = cost_model.bind(platform)
    graph = getattr(bound, "graph", None)  # models where only neighbours talk
    if graph is not None:
        graph.check_reachable(r, platform.ids, idx)
    return Request(
        platform,
        r,
        idx,
        collective,
        int(nbytes),
        cost_model,
        bound,
        int(segment_size) if segment_size else None,
    )


def check_platform(platform: Any) -> None:
    """A planner plans on a :class:`Platform`: anything else is a ``TypeError``."""
    if not isinstance(platform, Platform):
        raise TypeError(
            f"platform: expected a Platform (hetcoll.load_platform(...)), got "
            f"{type(platform).__name__}"
        )


def member_list(members: Any) -> list[Any]:
    """``members`` as a list (one id alone is a list of one); :class:`PlannerError` if it is
    not a list of ids at all."""
    if isinstance(members, str):
        return [members]
    if isinstance(members, Mapping) or not isinstance(members, Iterable):
        raise PlannerError(f"members: must be a list of node ids, got {members!r}")
    return list(members)


def check_size(value: Any, what: str, positive: bool = False) -> int:
    """A size in bytes given to a planner: a whole number (not a string, not a fraction) in
    range, through :func:`hetcoll.units.check_quantity`; :class:`PlannerError` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < positive:
        what_is = "a positive number of bytes" if positive else "a whole number of bytes >= 0"
        raise PlannerError(f"{what}: must be {what_is}, got {value!r}")
    return int(check_quantity(int(value), "size", what, error=PlannerError, positive=positive))


def relative_order(req: Request) -> list[int]:
    """Members in MPI relative-rank order: rank order rotated so the root comes first."""
    pos = req.members.index(req.root)
    return list(req.members[pos:] + req.members[:pos])


def relays(req: Request, edges: Iterable[tuple[int, int]]) -> tuple[tuple[str, ...], ...]:
    """The relay paths (ids) of the tree edges ``(parent, child)`` (indices) that the
    request's model cannot send directly (:meth:`BoundModel.relay_path`)."""
    out = []
    for p, c in edges:
        path = req.bound.relay_path(p, c, req.message_size())
        if path is not None:
            out.append(tuple(req.ids[x] for x in path))
    return tuple(out)


def tree_schedule(
    req: Request, algorithm: str, edges: Iterable[tuple[int, int]], **params: Any
) -> Schedule:
    """Wrap ``(parent, child)`` index pairs, in each parent's send order, as a Schedule.

    Under a model where only neighbours talk (``one_port``, ...), a tree edge between nodes
    with no link is relayed along the shortest path, store and forward (``Flow.relays``)."""
    ids = req.ids
    edges = list(edges)
    tree = Tree.from_edges(ids[req.root], ((ids[p], ids[c]) for p, c in edges))
    if len(tree.nodes) != len(req.members):
        raise AssertionError(f"{algorithm}: tree spans {len(tree.nodes)} of {len(req.members)}")
    flow = Flow(tree, req.nbytes, segment_size=req.segment_size, relays=relays(req, edges))
    return Schedule(req.collective, algorithm, req.nbytes, (flow,), params, req.model.to_spec())
