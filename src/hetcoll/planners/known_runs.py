"""Runs whose makespan a planner already knows exactly: ``multi_tree``'s whole-message list
schedule (:func:`~hetcoll.planners.justify.justified`'s self-timed run of its order) ends at
its span, bit for bit what the simulator predicts when every transfer's costs are the
plan graph's times (:func:`runs_as_listed`).  Inside
:func:`~hetcoll.planners._shared.shared_work` the comparison then ranks the schedule by
that span without simulating it (:class:`KnownRun`): 10^5 transfers at 2 048 slices of
50 nodes (``benchmarks/simulated/bench_sizes.py --auto`` prints ``auto``'s CPU)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PlannerError

__all__ = ["KnownRun", "runs_as_listed"]


def runs_as_listed(req: Any, g: Any, total: int) -> bool:
    """Whether a timetable of ``g``'s edges carrying ``total`` slices of ``req`` is
    simulated exactly as its list schedule's sums of ``g.T`` (the same floats: the
    simulator's :func:`~hetcoll.simulator.timetable.simulate_timetable` starts each
    transfer at the latest of its sender's previous release, its data's arrival and its
    receiver's previous arrival, each ``start + cost``): two ports per node, exclusive
    contention, every message a full slice (the last slice of a message the slices do not
    divide is shorter, so it would end sooner) and, on every edge, a send port busy and a
    delay both exactly its ``T`` (no link on any route, a receive port busy within the
    transfer)."""
    bound = req.bound
    size = req.message_size()
    if (
        g.ports != "bidirectional"
        or bound.unidirectional
        or bound.contention != "exclusive"
        or total * size != req.nbytes
        or not len(g.src)
    ):
        return False
    costs = bound.costs(g.nodes[g.src], g.nodes[g.dst], np.full(len(g.src), size, np.int64))
    send = np.asarray(costs.send_busy, dtype=float)
    delay = np.asarray(costs.delay, dtype=float)
    recv = np.asarray(costs.recv_busy, dtype=float)
    return bool(
        not len(costs.resources)
        and np.array_equal(send, g.T)
        and np.array_equal(delay, g.T)
        and np.all(g.T > 0)
        and np.all((recv >= 0) & (recv <= delay))
    )


class KnownRun:
    """A prediction of ``schedule`` whose ``makespan`` is known exactly; any other
    attribute runs the simulator once (and checks that it ends at ``makespan``)."""

    def __init__(self, makespan: float, platform: Any, schedule: Any, model: Any) -> None:
        self.makespan = makespan
        self._inputs = (platform, schedule, model)
        self._run: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_inputs", "_run"):
            raise AttributeError(name)
        if self._run is None:
            from ..simulator import simulate

            run = simulate(*self._inputs)
            if run.makespan != self.makespan:
                raise PlannerError(
                    f"a run known to end at {self.makespan!r} s is simulated to end at "
                    f"{run.makespan!r} s"
                )
            self._run = run
        return getattr(self._run, name)
