"""``multi_tree``'s trees when their edges are relayed.

A multicast's plan graph links every pair of members, so a tree edge between members with
no link of their own is sent through the nodes of the shortest route, store and forward
(``Flow.relays``).  The periodic timetable has no place for those relays: it books only
the members' ports, a relayed edge one transfer of its whole route's time, so its period
and its finish bound say nothing of the run, and a timetable cannot list relayed edges
(:meth:`hetcoll.schedule.Schedule._check_order`).  Such trees therefore run in the
timetable's send order without its slots (:func:`untimed`: each member sends in the
timetable's issue order, period by period, each relay forwarding a slice as soon as it has
it), and that schedule is simulated and kept only when it ends before the best single
tree (:func:`relayed_choice`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..schedule import MAX_TRANSFERS, Schedule

__all__ = ["relayed", "relayed_choice", "untimed"]


def relayed(s: Schedule) -> bool:
    """Whether a flow of ``s`` has a relayed edge."""
    return any(f.relays for f in s.flows)


def untimed(params: dict) -> dict:
    """``multi_tree``'s ``params`` of trees with relayed edges: no ``period`` nor
    ``finish_bound`` (the timetable's, which does not book the relays' ports)."""
    return {k: v for k, v in params.items() if k not in ("period", "finish_bound")}


def relayed_choice(
    platform,
    req,
    multi: Schedule,
    singles: Callable[[float | None], tuple[Schedule | None, float]],
) -> Schedule:
    """``multi`` (relayed trees in an untimed send order) or the single tree of
    ``singles(beat)`` (the fastest simulated, none whose load bound exceeds ``beat``),
    whichever the simulator finishes first (ties: the single tree).  ``multi`` is
    simulated when it has at most :data:`~hetcoll.schedule.MAX_TRANSFERS` messages (the
    event loop's cap), else the single tree is kept when there is one."""
    from ..simulator import simulate

    ran = (
        simulate(platform, multi, req.model).makespan if multi.transfers <= MAX_TRANSFERS else None
    )
    single, time = singles(beat=ran)
    if single is None or (ran is not None and time > ran):
        return multi
    return single
