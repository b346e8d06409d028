"""The simulator's front door: :func:`simulate` (a schedule on a platform under a model, to a
:class:`~hetcoll.simulator.results.Prediction`) and :func:`simulate_program` (a lowered
program under a bound model).  It takes the one-tree shortcut
(:func:`~hetcoll.simulator.tree.simulate_tree`), the timetable shortcut
(:func:`~hetcoll.simulator.timetable.simulate_timetable`) or the send-order shortcut
(:func:`~hetcoll.simulator.ordered.simulate_ordered`) where it applies, else the event loop
(:class:`~hetcoll.simulator.events.Simulation`); all follow the rules of
:mod:`hetcoll.simulator`."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..models import BoundModel, get_model
from ..platform import Platform
from ..program import Program
from ..schedule import (
    MAX_SHARED_TRANSFERS,
    MAX_TRANSFERS,
    Schedule,
    check_delivery,
    check_transfers,
)
from .events import Exceeded, Simulation
from .ordered import simulate_ordered
from .results import Prediction, Transfer
from .timetable import simulate_timetable
from .tree import simulate_tree

__all__ = ["gc_paused", "prediction", "simulate", "simulate_program", "simulate_within"]


def simulate(
    platform: Platform,
    schedule: Schedule,
    model: Any = None,
) -> Prediction:
    """Predict the time of ``schedule`` on ``platform`` under ``model``.

    Parameters
    ----------
    platform : Platform
    schedule : Schedule
    model : str, mapping or CostModel, optional
        Defaults to the platform's model.

    Returns
    -------
    Prediction

    Raises
    ------
    ScheduleError
        If the schedule is invalid (a node sends data it does not hold, a receive with no
        send), deadlocks, or is a bcast that does not reach every node of ``platform``.
    UnknownNodeError
        If the schedule names a node the platform does not have.

    Notes
    -----
    O(M log M) for M = number of messages, plus the length of their routes; see
    :mod:`hetcoll.simulator` for the rules.

    Examples
    --------
    Banikazemi et al. (1998), Fig. 1(a): MPICH's binomial tree takes 700 µs.

    >>> from hetcoll import load_platform, plan
    >>> p = load_platform("fig1")
    >>> round(simulate(p, plan(p, "1", method="binomial")).makespan * 1e6, 6)
    700.0
    """
    run = prediction(platform, schedule, model)
    assert run is not None  # (None only given ``above``)
    return run


def simulate_within(
    platform: Platform, schedule: Schedule, model: Any, above: float
) -> Prediction | None:
    """:func:`simulate`, or None where the run is proved to take longer than ``above``
    seconds before it ends: under shared contention the event loop stops as soon as its
    lower bound (every resource carrying the bytes left through it at its capacity,
    :meth:`hetcoll.simulator.events._Flows.bound`) passes ``above`` by more than
    :data:`~hetcoll.simulator.events.MARGIN`; a search that keeps the fastest candidate
    asks this of each one after the first (``above``: the time it must beat).  A
    Prediction it returns is :func:`simulate`'s, bit for bit.

    On a star of eight NICs (at 25 and 10 Gbit/s) the phased butterfly allreduce of 1 MiB
    in 32 segments per share takes 1.196 times as long as in 16; asked to beat the 16's
    time, its run stops at 58 % of its simulated time:

    >>> from hetcoll.generators import star_platform
    >>> from hetcoll.planners.butterflypipe import butterfly_pipelined
    >>> p = star_platform(8, ("25Gbps", "10Gbps"), "5us")
    >>> fast, slow = (
    ...     butterfly_pipelined(p, nbytes=1 << 20, segment_size=s, cut="phased")
    ...     for s in (16384, 8192)
    ... )
    >>> t = simulate(p, fast).makespan
    >>> round(simulate(p, slow).makespan / t, 3), simulate_within(p, slow, None, t) is None
    (1.196, True)
    >>> simulate_within(p, fast, None, t).makespan == t
    True
    """
    return prediction(platform, schedule, model, above=above)


def prediction(
    platform: Platform,
    schedule: Schedule,
    model: Any,
    shortcut: bool = True,
    above: float | None = None,
) -> Prediction | None:
    """:func:`simulate`; ``shortcut=False`` never takes the one-tree, the timetable or the
    send-order shortcut (:func:`~hetcoll.simulator.tree.simulate_tree`,
    :func:`~hetcoll.simulator.timetable.simulate_timetable`,
    :func:`~hetcoll.simulator.ordered.simulate_ordered`), so that tests can compare them
    with the event loop; ``above``: :func:`simulate_within`'s (None only with it)."""
    check_delivery(schedule, platform)  # a bcast that misses nodes has no time to predict
    cost_model = get_model(model) if model is not None else platform.model
    bound = cost_model.bind(platform)
    if bound.contention == "shared":  # a message costs ~8x as much to simulate there
        check_transfers(schedule.flows, MAX_SHARED_TRANSFERS, " simulated under shared contention")
    total_bytes = schedule.nbytes * len(schedule.buffers)
    with gc_paused():
        quick = None
        if shortcut:
            quick = (
                simulate_tree(bound, schedule, total_bytes)
                or simulate_timetable(bound, schedule, total_bytes)
                or simulate_ordered(bound, schedule, total_bytes)
            )
        if quick is None:
            # a send order may have more messages than the event loop is given
            check_transfers(schedule.flows, MAX_TRANSFERS, " simulated by the event loop")
            program = schedule.program()
            sim = Simulation(bound, program)  # names unknown nodes first
            try:
                sim.run(above)
            except Exceeded:
                return None
            transfers = sim.transfers()
            arrival = sim.arrivals()
            throughput = sim.throughput(total_bytes)
        else:
            transfers, arrival, throughput = quick
    makespan = max(arrival.values(), default=0.0)
    slices = None
    if throughput is not None and any(f.chunks > 1 for f in schedule.flows):
        slice_size = next((f.segment_size for f in schedule.flows if f.segment_size), None)
        slices = throughput / slice_size if slice_size else None
    return Prediction(
        algorithm=schedule.algorithm,
        collective=schedule.collective,
        model=cost_model.to_spec(),
        nbytes=schedule.nbytes,
        makespan=makespan,
        arrival=arrival,
        throughput=throughput,
        transfers=transfers,
        slices_per_second=slices,
        effective_rate=total_bytes / makespan if total_bytes and makespan > 0 else None,
    )


def simulate_program(
    bound: BoundModel, program: Program
) -> tuple[list[Transfer], dict[str, list[float]]]:
    """Run ``program`` under a bound model: the transfers in start order and each op's
    completion time (``done[rank][i]``).  Raises :class:`ScheduleError` on a deadlock."""
    with gc_paused():
        sim = Simulation(bound, program)
        sim.run()
        transfers = sim.transfers()
    return transfers, {rank: sim.done_of(rank) for rank in program.ops}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a run allocates an object or two per operation,
    and the collections that allocation triggers would scan every one of them again and
    again (half the time of a 100 000-transfer run).  Nothing a run makes needs the cycle
    collector before it ends; reference counting frees the rest as usual.  (``auto``'s
    search pauses it too: :func:`hetcoll.compare.compare`'s ``prune``.)  Nested pauses
    leave the collector as the outermost found it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
