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

import dataclasses
from typing import Any

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from .forestorder import per_root_order

__all__ = ["RouteCosts", "timetable"]


class RouteCosts:
    """Per host pair ``(u, v)`` (node indices) and size: the transfer holds ``u``'s send
    port (resource ``u``) and ``v``'s receive port (resource ``n + v``) for the model's
    send and receive busy times, and arrives after its delay (the route's latency and
    bandwidth: :meth:`hetcoll.models.base.BoundModel.delay`)."""

    def __init__(self, platform: Platform, model: Any = None) -> None:
        from ..models import get_model

        self.bound = (get_model(model) if model is not None else platform.model).bind(platform)
        self.n = len(platform)
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
            got = self.cache[key] = ((u, self.n + v), (send, recv), b.delay(u, v, nbytes), primary)
        return got


def timetable(platform: Platform, schedule: Schedule, model: Any = None) -> Schedule:
    """``schedule`` (per-root flows of the planner ``sites``) with the send order of its
    play-out on the hosts' ports (module docstring).  Raises :class:`PlannerError` for an
    allreduce with an empty share (the play-out reads a broadcast's bytes from the
    reduced spans that meet them: an empty span meets none)."""
    if schedule.collective == "allreduce" and not all(f.nbytes for f in schedule.flows):
        raise PlannerError("timetable: an allreduce's shares must not be empty")
    played = per_root_order(
        platform, schedule.flows, model, RouteCosts(platform, model), wait="all"
    )
    return dataclasses.replace(schedule, order=played.order)
