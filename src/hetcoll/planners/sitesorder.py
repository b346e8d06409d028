"""A send order (timetable) for the planner ``sites``: its per-root flows played out on the
hosts' ports (:func:`hetcoll.planners.forestorder.per_root_order`), each transfer a
host-to-host message the network routes.

Under a one-port model (``hockney``) a transfer holds its sender's send port and its
receiver's receive port from its start to its arrival (a WAN segment the leader's port for
the WAN's latency as well); a rank that issues its sends flow by flow waits for a busy
receiver while holding its own port.  The play-out starts a transfer only once both its
ports are free (the most urgent ready one first: the segment's place in its flow), and a
transfer whose receiver is busy waits for it there rather than booking it ahead, so its
sender's port serves another receiver meanwhile (``wait="all"``; booking ahead leaves the
sender idle until then); the timetable it yields reserves the receivers' ports and
interleaves the trees' sends; the
simulator and the engine follow it (:attr:`hetcoll.schedule.Schedule.order`).  It is a
heuristic (greedy list scheduling): the planner keeps it only where it simulates faster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..errors import PlannerError
from ..patterns import OrderedSend
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from .forestorder import per_root_order

__all__ = [
    "RouteCosts",
    "allreduce_timetable",
    "as_broadcasts",
    "reversed_timetable",
    "timetable",
]


class RouteCosts:
    """Per host pair ``(u, v)`` (node indices) and size: the transfer holds ``u``'s send
    port (resource ``u``) and ``v``'s receive port (resource ``n + v``) for the model's
    send and receive busy times, and arrives after its delay (the route's latency and
    bandwidth: :meth:`hetcoll.models.base.BoundModel.delay`).

    With ``links``, it also holds each directed link of its route that neither leaves its
    sender nor enters its receiver (a multi-site platform's WAN; resource ``2 n + r`` for
    the route's resource ``r``) for its bytes' time on that link alone, ``nbytes /
    bandwidth``, from its start.  Every transfer crossing such a link pays the same
    latency before its bytes flow (one WAN between two sites), so the next one may start
    that latency before the previous one's bytes end, and its bytes follow them: two
    senders' messages over one WAN are played out staggered, each latency overlapping the
    other's bytes, where without it they start together and share the link at half its
    rate, holding both receivers' ports twice as long.  The ports bound the play-out as
    they do without the links; the link only delays starts, and the simulator judges the
    result."""

    def __init__(self, platform: Platform, model: Any = None, links: bool = False) -> None:
        from ..models import get_model

        self.bound = (get_model(model) if model is not None else platform.model).bind(platform)
        self.n = len(platform)
        self.platform = platform if links and platform.routes.has_links else None
        self.cache: dict[
            tuple[int, int, int], tuple[tuple[int, ...], tuple[float, ...], float, int]
        ] = {}

    def of(
        self, u: int, v: int, nbytes: int
    ) -> tuple[tuple[int, ...], tuple[float, ...], float, int]:
        """``(resources, busy times, delay, busiest resource)`` of ``nbytes`` over ``u -> v``."""
        key = (u, v, nbytes)
        got = self.cache.get(key)
        if got is None:
            b = self.bound
            send, recv = b.send_busy(u, v, nbytes), b.recv_busy(u, v, nbytes)
            primary = u if send >= recv else self.n + v
            rows, busy = (u, self.n + v), (send, recv)
            if self.platform is not None:
                rows, busy = self._links(u, v, nbytes, rows, busy)
            got = self.cache[key] = (rows, busy, b.delay(u, v, nbytes), primary)
        return got

    def _links(
        self, u: int, v: int, nbytes: int, rows: tuple[int, ...], busy: tuple[float, ...]
    ) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """``rows`` and ``busy`` with the route's inner links (class docstring)."""
        routes = self.platform.routes
        _, _, resources, offsets = routes.pairs([u], [v])
        bandwidth = routes.resource_bandwidth
        extra = []
        for r in resources[offsets[0] : offsets[1]]:
            a, b = routes.resource_ends(int(r))
            if a != u and b != v:
                extra.append((2 * self.n + int(r), nbytes / float(bandwidth[r])))
        return rows + tuple(r for r, _ in extra), busy + tuple(t for _, t in extra)


def timetable(
    platform: Platform,
    schedule: Schedule,
    model: Any = None,
    links: bool = False,
    lead: float | None = None,
) -> Schedule:
    """``schedule`` (per-root flows of the planner ``sites``) with the send order of its
    play-out on the hosts' ports (module docstring; with ``links`` the WAN's bytes too:
    :class:`RouteCosts`; ``lead``: the play-out's urgency,
    :func:`~hetcoll.planners.forestorder.per_root_order`'s, 0 the transfer with the longest
    way to the end of its tree first, such as a WAN crossing).  Raises :class:`PlannerError` for an
    allreduce with an empty share (the play-out reads a broadcast's bytes from the
    reduced spans that meet them: an empty span meets none)."""
    if schedule.collective == "allreduce" and not all(f.nbytes for f in schedule.flows):
        raise PlannerError("timetable: an allreduce's shares must not be empty")
    costs = RouteCosts(platform, model, links)
    played = per_root_order(platform, schedule.flows, model, costs, wait="all", lead=lead)
    return replace(schedule, order=played.order)


def as_broadcasts(flows: Sequence[Flow], trees: Callable[[str], Tree] | None = None) -> list[Flow]:
    """A reduce-scatter's (or an allreduce's reduce) ``flows`` as the allgather whose
    timetable run backwards is one of theirs (:func:`reversed_timetable`): each a ``bcast``
    flow of the same segments, on ``trees(root)`` (a planner's broadcast tree of that
    root) or, without ``trees``, on its own tree.  O(len(flows)) trees."""
    return [replace(f, kind="bcast", tree=f.tree if trees is None else trees(f.tree.root))
            for f in flows]  # fmt: skip


def reversed_timetable(
    platform: Platform,
    schedule: Schedule,
    model: Any = None,
    links: bool = False,
    lead: float | None = None,
    trees: Callable[[str], Tree] | None = None,
) -> Schedule:
    """A reduce-scatter: an allgather's timetable run backwards.  ``schedule``: the
    allgather (per-root ``bcast`` flows of the planner ``sites``), in its timetable
    (:func:`timetable`, unless it has an order), or the reduce-scatter itself, its flows
    then played out as that allgather's (:func:`as_broadcasts`, on ``trees``; its own
    order, if any, unused).  Run backwards: the same trees, each edge's data going from
    child to parent (``reduce`` flows), every transfer of slot ``s`` of the allgather's
    ``S`` the receiver's send of slot ``S - s``.

    A reduce-scatter is an allgather run backwards (every block's partial sums flow up its
    owner's tree as its copies flowed down), so an allgather's timetable is one for it, the
    same busy times on every port (the roles of send and receive ports swapped); the
    play-out of the reduce flows themselves (:func:`timetable`) fares worse on the same
    ports.  A send's segments are listed in slot order, so the ``j``-th send of an edge
    carries its ``j``-th segment (the allgather's last crossing that edge: every segment of
    a flow's other edges relabelled alike, the dependencies are the same).  Raises
    :class:`PlannerError` for another collective."""
    if schedule.collective == "reduce_scatter":
        flows = tuple(as_broadcasts(schedule.flows, trees))
        schedule = replace(schedule, collective="allgather", flows=flows, order=None)
    if schedule.collective != "allgather":
        raise PlannerError(f"reversed_timetable: an allgather to run backwards (or its "
                           f"reduce-scatter), not a {schedule.collective}")  # fmt: skip
    timed = schedule
    if schedule.order is None:
        timed = timetable(platform, schedule, model, links, lead)
    order, _ = _backwards(timed.order)
    flows = tuple(replace(f, kind="reduce") for f in timed.flows)
    return replace(timed, collective="reduce_scatter", flows=flows, order=order)


def allreduce_timetable(
    platform: Platform,
    schedule: Schedule,
    model: Any = None,
    own: bool = False,
    links: bool = False,
    lead: float | None = None,
) -> Schedule:
    """An allreduce of the planner ``sites`` (its reduce flows, then its ``bcast`` flows of
    the same shares) as its broadcast phase's timetable (the ``bcast`` flows played out as
    an allgather) preceded by a reduce phase in an allgather's timetable run backwards
    (:func:`reversed_timetable`): that of the broadcast phase on the same trees (each
    member's share reduced up the tree it is then broadcast down), or with ``own`` that of
    the schedule's own reduce trees played out as an allgather's (its reduce flows kept,
    in their reversed play-out's order: on two 4-host stars, where the bcast trees' a -> b
    WAN stream leaves site ``a``'s leader and the reduce trees' too, the reduce phase's
    last WAN sends are each leader's own and its first broadcast sends wait for them, where
    on the bcast trees run backwards the other members cross the WAN while the leader
    already broadcasts).  Raises :class:`PlannerError` for an empty share (as
    :func:`timetable`)."""
    if schedule.collective != "allreduce" or not all(f.nbytes for f in schedule.flows):
        raise PlannerError("allreduce_timetable: an allreduce of non-empty shares")
    down = tuple(f for f in schedule.flows if f.kind == "bcast")
    costs = RouteCosts(platform, model, links)
    played = per_root_order(platform, down, model, costs, wait="all", lead=lead)
    up = down
    if own:
        up = tuple(as_broadcasts([f for f in schedule.flows if f.kind == "reduce"]))
        first = per_root_order(platform, up, model, costs, wait="all", lead=lead).order
    else:
        first = played.order
    back, top = _backwards(first)
    order = {v: list(es) for v, es in back.items()}
    for u, sends in played.order.items():
        order.setdefault(u, []).extend(
            OrderedSend(e.flow + len(up), e.child, 0, e.slot + top + 1) for e in sends
        )
    flows = tuple(replace(f, kind="reduce") for f in up) + down
    order = {v: tuple(sorted(es, key=lambda e: e.slot)) for v, es in sorted(order.items())}
    return replace(schedule, flows=flows, order=order)


def _backwards(order: Any) -> tuple[dict[str, tuple[OrderedSend, ...]], int]:
    """A timetable's order run backwards (each send ``u -> v`` of slot ``s`` of ``S`` a
    send ``v -> u`` of slot ``S - s``) and ``S``.  Raises :class:`PlannerError` for an
    order without slots."""
    slots = [e.slot for sends in order.values() for e in sends]
    if any(s is None for s in slots):
        raise PlannerError("the order to run backwards must be a timetable (slots)")
    top = max(slots, default=0)
    back: dict[str, list[OrderedSend]] = {}
    for u, sends in order.items():
        for e in sends:
            back.setdefault(e.child, []).append(OrderedSend(e.flow, u, 0, top - e.slot))
    return {v: tuple(sorted(es, key=lambda e: e.slot)) for v, es in sorted(back.items())}, top
