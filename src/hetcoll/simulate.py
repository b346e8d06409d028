"""The simulator: the one place that turns a schedule into the times a user sees.

:func:`simulate` lowers a :class:`~hetcoll.schedule.Schedule` to its per-rank program and runs
it under a cost model as a discrete-event list schedule:

- a send becomes *startable* when its dependencies have completed and its matching receive
  is posted (rendezvous);
- it *starts* at the earliest time its sender's send port, its receiver's receive port (for
  models that have one; a single port per node for unidirectional one-port models) and every
  link of its route are free; among the startable sends of a rank the first in program order
  wins;
- the sender's port is then busy ``send_busy``, the links until the arrival, the receiver's
  port for the ``recv_busy`` that ends at the arrival, and the receive completes at the
  arrival ``start + delay``.

Transfers are committed in nondecreasing start time with a heap (lazy re-keying when a
resource turns out busier), so the cost is O(M log M) for M operations.  Concurrent
collectives (several flows, several buffers) share every node's ports.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import ScheduleError
from .models import BoundModel, get_model
from .platform import Platform
from .schedule import Program, Schedule, check_delivery

__all__ = ["Transfer", "Prediction", "simulate", "simulate_program"]


@dataclass(frozen=True)
class Transfer:
    """One simulated message: who, which chunk, when it started, arrived, freed the sender."""

    sender: str
    receiver: str
    chunk: int
    nbytes: int
    start: float
    arrival: float
    sender_free: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "sender": self.sender,
            "receiver": self.receiver,
            "chunk": self.chunk,
            "nbytes": self.nbytes,
            "start": self.start,
            "arrival": self.arrival,
        }


@dataclass(frozen=True)
class Prediction:
    """The simulator's answer, JSON-serialisable via :meth:`to_dict`.

    Attributes
    ----------
    makespan : float
        Seconds from the start until the last receive completes (the last member holds its
        data): the latency of a broadcast as Banikazemi et al. Sec. 7.1.2 define it.
    arrival : dict
        For every participant, when it holds everything it receives (0 for a source).
    throughput : float or None
        Steady-state bytes per second: message bytes over the total busy time of the
        bottleneck resource (a port or a link).  None when no resource is ever busy or the
        message is empty.
    transfers : list of Transfer
        Every message, in start order.
    """

    algorithm: str
    collective: str
    model: Any
    nbytes: int
    makespan: float
    arrival: dict[str, float]
    throughput: float | None
    transfers: list[Transfer] = field(repr=False)

    def sends(self) -> list[tuple[str, str]]:
        """``(sender, receiver)`` pairs ordered by the start of their first message.

        A sender's pairs appear in the order it issues them.
        """
        seen: dict[tuple[str, str], None] = {}
        for t in self.transfers:
            seen.setdefault((t.sender, t.receiver))
        return list(seen)

    def to_dict(self, transfers: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "algorithm": self.algorithm,
            "collective": self.collective,
            "model": self.model,
            "nbytes": self.nbytes,
            "predicted_time": self.makespan,
            "throughput": self.throughput,
            "sends": [list(p) for p in self.sends()],
            "arrival": dict(self.arrival),
        }
        if transfers:
            out["transfers"] = [t.to_dict() for t in self.transfers]
        return out


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
    O(M log M) for M = number of messages; see the module docstring for the rules.

    Examples
    --------
    Banikazemi et al. (1998), Fig. 1(a): MPICH's binomial tree takes 700 µs.

    >>> from hetcoll import load_platform, plan
    >>> p = load_platform("fig1")
    >>> round(simulate(p, plan(p, "1", method="binomial")).makespan * 1e6, 6)
    700.0
    """
    check_delivery(schedule, platform)  # a bcast that misses nodes has no time to predict
    cost_model = get_model(model) if model is not None else platform.model
    bound = cost_model.bind(platform)
    program = schedule.program()
    transfers, done = simulate_program(bound, program)  # names unknown nodes first
    arrival = {}
    for rank, ops in program.ops.items():
        times = [done[rank][i] for i, op in enumerate(ops) if op.kind != "send"]
        arrival[rank] = max(times, default=0.0)
    makespan = max(arrival.values(), default=0.0)
    return Prediction(
        algorithm=schedule.algorithm,
        collective=schedule.collective,
        model=cost_model.to_spec(),
        nbytes=schedule.nbytes,
        makespan=makespan,
        arrival=arrival,
        throughput=_throughput(bound, program, schedule.nbytes * len(schedule.buffers)),
        transfers=transfers,
    )


def simulate_program(
    bound: BoundModel, program: Program
) -> tuple[list[Transfer], dict[str, list[float]]]:
    """Run ``program`` under a bound model: the transfers in start order and each op's
    completion time (``done[rank][i]``).  Raises :class:`ScheduleError` on a deadlock."""
    platform = bound.platform
    ranks = list(program.ops)
    ridx = {r: platform.index(r) for r in ranks}
    matches = program.matches()
    chunks = program.chunks

    dependents: dict[str, list[list[int]]] = {r: [[] for _ in program.ops[r]] for r in ranks}
    waiting: dict[str, list[int]] = {}
    ready_at: dict[str, list[float]] = {}
    for r in ranks:
        ops = program.ops[r]
        waiting[r] = [len(op.deps) for op in ops]
        ready_at[r] = [0.0] * len(ops)
        for i, op in enumerate(ops):
            for d in op.deps:
                dependents[r][d].append(i)
    done: dict[str, list[float]] = {r: [math.nan] * len(program.ops[r]) for r in ranks}
    posted: dict[tuple[str, int], float] = {}  # receive -> time it was posted
    send_free = dict.fromkeys(ranks, 0.0)
    recv_free = send_free if bound.unidirectional else dict.fromkeys(ranks, 0.0)
    link_free: dict[int, float] = {}
    heap: list[tuple[float, int, int, str]] = []

    def start_time(r: str, i: int) -> float:
        op = program.ops[r][i]
        nbytes = chunks[op.chunk].nbytes
        u, v = ridx[r], ridx[op.peer]
        recv_r, recv_i = matches[(r, i)]
        t = max(ready_at[r][i], posted[(recv_r, recv_i)], send_free[r])
        rb = bound.recv_busy(u, v, nbytes)
        if rb > 0:
            t = max(t, recv_free[op.peer] - bound.delay(u, v, nbytes) + rb)
        for link in bound.path(u, v):
            t = max(t, link_free.get(link, 0.0))
        return t

    def consider_send(r: str, i: int) -> None:
        recv = matches[(r, i)]
        if waiting[r][i] == 0 and recv in posted:
            heapq.heappush(heap, (start_time(r, i), ridx[r], i, r))

    def enable(r: str, i: int) -> None:
        op = program.ops[r][i]
        if op.kind == "send":
            consider_send(r, i)
        else:
            posted[(r, i)] = ready_at[r][i]
            consider_send(*matches[(r, i)])

    def complete(r: str, i: int, t: float) -> None:
        done[r][i] = t
        for j in dependents[r][i]:
            ready_at[r][j] = max(ready_at[r][j], t)
            waiting[r][j] -= 1
            if waiting[r][j] == 0:
                enable(r, j)

    for r in ranks:
        for i in range(len(program.ops[r])):
            if waiting[r][i] == 0 and program.ops[r][i].kind != "send":
                enable(r, i)
    for r in ranks:
        for i, op in enumerate(program.ops[r]):
            if waiting[r][i] == 0 and op.kind == "send":
                consider_send(r, i)

    transfers: list[Transfer] = []
    started: set[tuple[str, int]] = set()
    while heap:
        key, _, i, r = heapq.heappop(heap)
        if (r, i) in started:
            continue
        t = start_time(r, i)
        if t > key:
            heapq.heappush(heap, (t, ridx[r], i, r))
            continue
        started.add((r, i))
        op = program.ops[r][i]
        nbytes = chunks[op.chunk].nbytes
        u, v = ridx[r], ridx[op.peer]
        busy = bound.send_busy(u, v, nbytes)
        arrival = t + bound.delay(u, v, nbytes)
        send_free[r] = max(send_free[r], t + busy)
        if bound.recv_busy(u, v, nbytes) > 0:
            recv_free[op.peer] = max(recv_free[op.peer], arrival)
        for link in bound.path(u, v):
            link_free[link] = arrival
        transfers.append(Transfer(r, op.peer, op.chunk, nbytes, t, arrival, t + busy))
        complete(r, i, t + busy)
        complete(*matches[(r, i)], arrival)

    for r in ranks:
        for i, t in enumerate(done[r]):
            if math.isnan(t):
                op = program.ops[r][i]
                raise ScheduleError(
                    f"schedule deadlocks: rank {r!r} op {i} ({op.kind} chunk {op.chunk} with "
                    f"{op.peer!r}) never completes"
                )
    return transfers, done


def _throughput(bound: BoundModel, program: Program, total_bytes: int) -> float | None:
    if total_bytes == 0:
        return None
    busy: dict[Any, float] = {}
    for r, ops in program.ops.items():
        u = bound.platform.index(r)
        for op in ops:
            if op.kind != "send":
                continue
            v = bound.platform.index(op.peer)
            n = program.chunks[op.chunk].nbytes
            busy[("send", r)] = busy.get(("send", r), 0.0) + bound.send_busy(u, v, n)
            rb = bound.recv_busy(u, v, n)
            if rb > 0:
                key = ("send", op.peer) if bound.unidirectional else ("recv", op.peer)
                busy[key] = busy.get(key, 0.0) + rb
            for link in bound.path(u, v):
                busy[("link", link)] = busy.get(("link", link), 0.0) + bound.delay(u, v, n)
    bottleneck = max(busy.values(), default=0.0)
    return total_bytes / bottleneck if bottleneck > 0 else None
