"""Broadcast latency measured as Banikazemi, Moorthy & Panda (ICPP 1998), Sec. 7.1.2, do.

For an ``N``-rank system, ``N - 1`` broadcasts are performed; after the ``k``-th one,
recipient ``k`` sends an acknowledgement back to the root, which times the interval from
starting the broadcast to receiving that ack.  The broadcast latency is the largest of those
times less half the round trip between the root and that recipient; the experiment is
repeated and the minimum kept.

Two details of this implementation:

- half the round trip is subtracted per recipient before taking the maximum (the paper
  subtracts the one of the recipient with the largest reading; the two agree when the round
  trips are equal, and per recipient is right when they are not);
- the ack and the round-trip ping-pongs are plain MPI messages, never emulated.  Under
  emulation the paper's subtraction would otherwise be biased: the emulated way back from a
  slow recipient costs *its* ``t_ini``, while half the emulated round trip averages the
  root's and the recipient's.

The latency ends when the last recipient *has the data* (the paper: "complete when all the
other nodes have received the broadcast message"), not when its call returns: a forwarding
recipient can still be busy sending (under the postal model's overhead and gap, longer than
its children take to receive).  So each recipient sends with its ack how long after its
receipt it acked, and the root subtracts that too.

The ack reading has one blind spot: the root reads an ack only once its own broadcast call
has returned, and under the postal model's gap the root can still be sending after the last
recipient has the data.  With a clock shared by all ranks (one host, or emulation with
synchronised clocks) the acks also carry each recipient's receipt time, which measures the
latency directly: ``measured_time`` is then that (``clock_time``), and the ack method's value
is kept as ``ack_time``; across hosts without a shared clock ``measured_time`` is the ack
method's.

A barrier (non-blocking, with the timeout) precedes every broadcast, then the root sends
every rank a start time ``settle`` seconds ahead (:meth:`ScheduleComm.start_together`), so that
every recipient is waiting when the root starts.  With a clock shared by all ranks (one
host, or emulation with synchronised clocks) the ack also carries the time the recipient
had the data, the direct estimate (``clock_time``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError
from .comm import ScheduleComm
from .emulation import sleep_until
from .subcomms import planned_class

__all__ = ["CubeMeasurement", "Measurement", "measure_bcast", "measure_cube", "round_trips"]

TAG_ACK, TAG_PING = 3, 4
_NS = 1e9


@dataclass
class Measurement:
    """Broadcast latency (seconds), the same on every rank.

    ``late``: how far the ranks fell behind on a busy host in the repetition the latency
    comes from (the most any rank reported: :attr:`Trace.late` of its calls, or how late it
    woke for an agreed start); a measured time above the prediction by no more than that is
    explained by the host, not by the schedule.
    """

    method: str
    nbytes: int
    root: int
    repeat: int
    measured_time: float | None = None
    ack_time: float | None = None
    clock_time: float | None = None
    per_repeat: list[float] = field(default_factory=list)
    rtt: dict[int, float] = field(default_factory=dict)
    late: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "nbytes": self.nbytes,
            "root": self.root,
            "repeat": self.repeat,
            "measured_time": self.measured_time,
            "ack_time": self.ack_time,
            "clock_time": self.clock_time,
            "per_repeat": self.per_repeat,
            "late": self.late,
        }


def round_trips(hc: ScheduleComm, root: int, repeat: int = 10) -> dict[int, float]:
    """Minimum round trip (seconds) of an 8-byte ping-pong between ``root`` and every rank."""
    buf = np.zeros(1, dtype=np.int64)
    out: dict[int, float] = {}
    for r in range(hc.size):
        if r == root:
            continue
        best = None
        for _ in range(repeat):
            if hc.rank == root:
                t0 = time.monotonic_ns()
                hc._wait(hc.comm.Isend([buf, MPI.INT64_T], r, TAG_PING), f"ping to rank {r}")
                hc._wait(
                    hc.comm.Irecv([buf, MPI.INT64_T], r, TAG_PING), f"pong from {r}", nap=30e-6
                )
                rtt = time.monotonic_ns() - t0
                best = rtt if best is None else min(best, rtt)
            elif hc.rank == r:
                hc._wait(
                    hc.comm.Irecv([buf, MPI.INT64_T], root, TAG_PING), "ping from root", nap=30e-6
                )
                hc._wait(hc.comm.Isend([buf, MPI.INT64_T], root, TAG_PING), "pong to root")
        if hc.rank == root:
            out[r] = best / _NS
    return out


def measure_bcast(
    hc: ScheduleComm,
    root: int = 0,
    nbytes: int = 0,
    repeat: int = 10,
    *,
    algo: str | None = None,
    native: bool = False,
    segment_size: int | None = None,
    rtt: dict[int, float] | None = None,
    settle: float = 2e-3,
) -> Measurement:
    """Latency of a broadcast of ``nbytes`` from ``root`` (Sec. 7.1.2); collective.

    ``native=True`` measures ``MPI_Bcast`` of the wrapper's communicator instead (never
    emulated), ``algo`` another planner through the same runtime.  ``rtt`` reuses round
    trips measured before.  Each broadcast starts at a time agreed ``settle`` seconds
    ahead (:meth:`ScheduleComm.start_together`), so every recipient is waiting when the root
    starts, however late an oversubscribed host wakes it.
    """
    me = hc.rank
    buf = np.zeros(nbytes, dtype=np.uint8)
    if me == root:
        buf[:] = np.arange(nbytes) % 251
    ack = np.zeros(2, dtype=np.int64)
    if rtt is None:
        rtt = round_trips(hc, root)

    def once() -> int:
        """One broadcast; how late this rank fell behind (ns)."""
        if native:
            woke = _wait_for_start(hc)
            hc.comm.Bcast([buf, MPI.BYTE], root)
            return woke
        # the planning class's method: a wrapper that gives every call to MPI has
        # mpi4py's own, which takes no algo= (hetcoll.runtime.rooted.bind_mpi)
        planned_class(hc).Bcast(hc, buf, root, segment_size=segment_size, algo=algo)
        return _late(hc)

    once()  # warm up: plans, checks agreement, first-touch of the buffers
    per_repeat: list[float] = []
    clock: list[float] = []
    late = np.zeros(repeat, dtype=np.int64)
    for k in range(repeat):
        readings, stamps = {}, {}
        t0s = {}
        for r in range(hc.size):
            if r == root:
                continue
            hc._sync()  # everyone is done with the previous broadcast
            t0 = hc.start_together(settle)
            late[k] = max(late[k], once())
            if me == r:
                # when this rank had the data, and how long it then kept busy (forwarding)
                # before it could ack: the paper's latency ends at the receipt
                now = hc.now()
                got = now if native else hc.last_trace.received
                ack[:] = (got, now - got)
                hc._wait(hc.comm.Isend([ack, MPI.INT64_T], root, TAG_ACK), "ack to root")
            elif me == root:
                hc._wait(
                    hc.comm.Irecv([ack, MPI.INT64_T], r, TAG_ACK), f"ack from rank {r}", nap=30e-6
                )
                readings[r] = (hc.now() - t0 - int(ack[1])) / _NS
                stamps[r] = (int(ack[0]) - t0) / _NS
                t0s[r] = t0
        if me == root:
            per_repeat.append(max(readings[r] - rtt[r] / 2 for r in readings))
            clock.append(max(stamps.values()))
    m = Measurement("native" if native else (algo or hc.algo), nbytes, root, repeat)
    late = _most_late(hc, late)
    if me == root:
        m.per_repeat = per_repeat
        m.ack_time = min(per_repeat)
        m.clock_time = min(clock) if hc.shared_clock else None
        m.measured_time = m.clock_time if m.clock_time is not None else m.ack_time
        kept = clock if m.clock_time is not None else per_repeat
        m.late = float(late[int(np.argmin(kept))]) / _NS if repeat else 0.0
        m.rtt = rtt
    # only the root read the acks: every rank gets the result (rank 0 reports it)
    m.measured_time, m.ack_time, m.clock_time, m.per_repeat, m.late = hc.comm.bcast(
        (m.measured_time, m.ack_time, m.clock_time, m.per_repeat, m.late), root=root
    )
    return m


def _late(hc: ScheduleComm) -> int:
    """How far this rank fell behind the model in its last collective (ns): what its
    executor reported (``Trace.late``: a release that waited for data that really came
    later, a late start) plus the most it saw an op complete after its completion time
    (``observed - done``: a busy host woke it late; the measurement reads real times)."""
    trace = hc.last_trace
    if trace is None:
        return 0
    behind = int(getattr(trace, "late", 0) or 0)
    seen, done = getattr(trace, "observed", ()), getattr(trace, "done", ())
    lag = max((s - d for s, d in zip(seen, done, strict=False)), default=0)
    return behind + max(int(lag), 0)


def _wait_for_start(hc: ScheduleComm) -> int:
    """Before a native call: wait for the agreed start (:meth:`ScheduleComm.start_together`)
    that hetcoll's own collectives wait for themselves; how late this rank woke (ns)."""
    start, hc._start_at = hc._start_at, None
    if start is None:
        return 0
    sleep_until(start, hc.now())
    return max(hc.now() - start, 0)


def _most_late(hc: ScheduleComm, late: np.ndarray) -> np.ndarray:
    """Per repetition, the most any rank fell behind (collective)."""
    out = np.empty_like(late)
    hc._wait(hc.comm.Iallreduce(late, out, op=MPI.MAX), "combining lateness")
    return out


@dataclass
class CubeMeasurement:
    """Time (seconds) of a hypercube collective, the same on every rank.

    ``measured_time`` is the least, ``median_time`` the median over ``repeat`` calls of the
    call's duration: every rank starts at an agreed time and the call lasts until the last
    rank returns.  ``loop_time``: ``loop`` calls back to back (each rank starts the next
    as soon as it returns, as a program would), the last return over ``loop``.
    ``per_round``: the least of each round when several rounds were measured in turn
    (:class:`hetcoll.jobs.Run`'s ``rounds``; empty otherwise).
    """

    collective: str
    method: str
    nbytes: int
    repeat: int
    measured_time: float | None = None
    median_time: float | None = None
    loop_time: float | None = None
    loop: int = 0
    per_repeat: list[float] = field(default_factory=list)
    late: float = 0.0
    per_round: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "collective": self.collective,
            "method": self.method,
            "nbytes": self.nbytes,
            "repeat": self.repeat,
            "measured_time": self.measured_time,
            "median_time": self.median_time,
            "loop_time": self.loop_time,
            "loop": self.loop,
            "per_repeat": self.per_repeat,
            "late": self.late,
            "per_round": self.per_round,
        }


def measure_cube(
    hc: ScheduleComm,
    collective: str = "barrier",
    nbytes: int = 0,
    repeat: int = 10,
    *,
    algo: str | None = None,
    native: bool = False,
    loop: int = 0,
    settle: float = 5e-3,
    warm_up: bool = True,
) -> CubeMeasurement:
    """Time ``hc.barrier()``, ``hc.Allreduce`` (int64 ``MPI.SUM``, or bytes when ``nbytes``
    is not a multiple of 8) or ``hc.Allgather`` of ``nbytes`` per rank; collective.

    Each call starts at a time agreed ``settle`` seconds ahead
    (:meth:`ScheduleComm.start_together`) and lasts until the last rank returns (each rank's
    return time on the shared clock, gathered afterwards): the simulator's makespan.
    Without a shared clock (several hosts, no emulation) the start is a barrier and each
    rank times its own call, an approximation.  ``native=True`` times MPI's own
    ``MPI_Barrier``/``MPI_Allreduce``/``MPI_Allgather`` of the wrapper's communicator
    (never emulated); ``algo`` another hypercube planner; ``loop > 0`` also times that many
    calls back to back.  ``warm_up=False``: no untimed call first (the call was made
    before: planned, its buffers touched).
    """
    if collective not in ("barrier", "allreduce", "allgather"):
        raise HetcollError(f"collective: expected barrier, allreduce or allgather: {collective!r}")
    dtype = np.int64 if nbytes % 8 == 0 else np.uint8
    send = np.full(nbytes // np.dtype(dtype).itemsize, hc.rank + 1, dtype=dtype)
    recv = np.zeros(len(send) * (hc.size if collective == "allgather" else 1), dtype=dtype)
    cls = planned_class(hc)

    def once() -> None:
        if native:
            if collective == "barrier":
                hc.comm.Barrier()
            elif collective == "allreduce":
                hc.comm.Allreduce(send, recv, op=MPI.SUM)
            else:
                hc.comm.Allgather(send, recv)
        elif collective == "barrier":  # the class's methods, as in measure_bcast
            cls.barrier(hc, algo=algo)
        elif collective == "allreduce":
            cls.Allreduce(hc, send, recv, op=MPI.SUM, algo=algo)
        else:
            cls.Allgather(hc, send, recv, algo=algo)

    def timed(calls: int) -> tuple[float, float]:
        """(seconds per call, the most any rank fell behind)."""
        hc._sync()  # everyone is done with the previous call
        t0 = hc.start_together(settle)
        late = 0
        if native or hc.size == 1:  # the executor waits for the start itself
            late = _wait_for_start(hc)
        for _ in range(calls):
            once()
            late = max(late, 0 if native else _late(hc))
        mine = (hc.now() - t0) / _NS
        took, behind = np.max(hc.comm.allgather((mine, late / _NS)), axis=0)
        return float(took) / calls, float(behind)

    if warm_up:  # plans, checks agreement, first-touch of the buffers
        once()
    else:
        recv.fill(0)  # first-touch: no page faults in the timed calls
    runs = [timed(1) for _ in range(repeat)]
    per_repeat = [t for t, _ in runs]
    name = "native" if native else (algo or hc.cube_algo)
    m = CubeMeasurement(collective, name, nbytes, repeat, per_repeat=per_repeat, loop=loop)
    m.measured_time = min(per_repeat)
    m.median_time = float(np.median(per_repeat))
    m.late = runs[int(np.argmin(per_repeat))][1]
    if loop > 0:
        m.loop_time = timed(loop)[0]
    return m
