"""``hetcoll tune``: on the job's own ranks, measure MPI's own collective and hetcoll's
candidate plans side by side, and say per size which to run (the MPI side of the command).

For each collective and size, rank 0 plans the candidates (:func:`hetcoll.compare.compare`:
the ``count`` fastest distinct schedules the simulator finds, a broadcast's slice sizes
included, and the fastest unsliced one when those are all sliced) and every rank measures
them and MPI's own, **paired**: in each of ``rounds`` rounds every candidate runs once, in
an order that rotates from round to round, right after the others, so that a busy host
slows them alike.  One measurement is a loop of calls (as many as take about ``loop``
seconds of MPI's own) between two barriers, the time of the slowest rank divided by the
calls.  A candidate's *speed-up* in a round is MPI's
time over its own; it **wins** when its speed-up exceeds 1 in at least :data:`WIN_SHARE` of
the rounds, and the winner is the one with the largest median speed-up (none: "use MPI").

Natively, MPI's own is the communicator's collective (``MPI_Bcast``, ...); under
emulation it is MPICH's algorithm for the call run through the same engine and emulation
(:mod:`hetcoll.mpich`), the only fair baseline there.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from mpi4py import MPI

from ..hetcomm import HetComm
from ..platform import Platform

__all__ = ["WIN_SHARE", "measure_calls", "pick", "tune_job"]

#: a plan wins when it is faster than MPI's own in at least this share of the paired rounds
WIN_SHARE = 0.8
COLLECTIVES = ("bcast", "allreduce", "allgather", "barrier")


def tune_job(
    platform: Platform | None,
    *,
    collectives: tuple[str, ...],
    sizes: tuple[int, ...],
    rounds: int = 5,
    count: int = 3,
    loop: float = 0.02,
    emulate: bool = False,
    time_scale: float = 1.0,
    timeout: float = 60.0,
    probe_sizes: tuple[int, ...] | None = None,
    comm: MPI.Comm | None = None,
) -> dict[str, Any] | None:
    """Measure (collective); the result on rank 0, None elsewhere.  Without ``platform``
    the ranks are probed first (``probe_sizes``) and the plans made for what it found."""
    comm = comm or MPI.COMM_WORLD
    probed = None
    if platform is None:
        platform, probed = _probe(comm, probe_sizes, timeout)
    rows = []
    with HetComm(
        comm, platform, "mpi", emulate=emulate, time_scale=time_scale, timeout=timeout
    ) as hc:
        for collective in collectives:
            for nbytes in (0,) if collective == "barrier" else sizes:
                plans = comm.bcast(
                    _plans(hc, collective, nbytes, count) if comm.rank == 0 else None
                )
                rows.append(measure_calls(hc, collective, nbytes, plans, rounds, loop))
    if comm.rank != 0:
        return None
    return {
        "ranks": comm.size,
        "emulated": emulate,
        "platform": platform.name,
        "rounds": rounds,
        "rows": rows,
        "probed": probed,
    }


def _probe(comm: MPI.Comm, sizes, timeout: float) -> tuple[Platform, dict[str, Any]]:
    from ..platform import nodes_from_costs
    from ..runtime.probe import DEFAULT_SIZES, probe

    placeholder = Platform(nodes_from_costs([0.0] * comm.size), name="placeholder")
    with HetComm(comm, placeholder, "flat", timeout=timeout) as hc:
        res = probe(hc, sizes=sizes or DEFAULT_SIZES, name=f"probed {comm.size} ranks")
    return res.platform, {"seconds": res.seconds, "classes": res.fit["classes"]}


def _plans(hc: HetComm, collective: str, nbytes: int, count: int) -> list[dict[str, Any]]:
    """The ``count`` fastest distinct candidate schedules (rank 0; planned as HetComm
    plans them) and, when all of them are sliced, the fastest unsliced one; MPI's own
    predicted time first."""
    from ..choice import mpi_time
    from ..compare import compare, slice_choices

    p = hc.platform
    nodes = list(hc.nodes)
    members = None if nodes == list(p.ids) else nodes
    if collective == "bcast":
        found = compare(
            p, "bcast", root=nodes[0], members=members, nbytes=nbytes, slices=slice_choices(nbytes)
        )
    else:
        found = compare(
            p,
            collective,
            members=members,
            nbytes=nbytes,
            op="sum" if collective == "allreduce" else None,
        )
    seen, out = set(), []
    for c in found.ranked:
        doc = c.schedule.to_dict()
        shape = str({k: v for k, v in doc.items() if k not in ("algorithm", "params", "model")})
        if shape in seen:
            continue
        seen.add(shape)
        out.append(
            {
                "algorithm": c.algorithm,
                "segment_size": c.segment_size,
                "predicted": c.predicted_time * hc.time_scale,
            }
        )
        if len(out) == count:
            break
    if all(c["segment_size"] is not None for c in out):
        # the fastest unsliced plan too: slicing is where the model errs most (on one host a
        # pipelined 50 MiB broadcast predicted fastest measured slower than an unsliced tree)
        whole = next((c for c in found.ranked if c.segment_size is None), None)
        if whole is not None:
            out.append(
                {
                    "algorithm": whole.algorithm,
                    "segment_size": None,
                    "predicted": whole.predicted_time * hc.time_scale,
                }
            )
    count_ = nbytes // 8 if collective == "allreduce" else None
    t_mpi = mpi_time(
        p,
        collective,
        nbytes,
        nodes,
        root=nodes[0] if collective == "bcast" else None,
        count=count_,
        op="sum",
    )
    return [{"algorithm": "mpi", "segment_size": None, "predicted": t_mpi * hc.time_scale}, *out]


def _call(hc: HetComm, collective: str, nbytes: int):
    """A function making one call of ``collective`` with a plan's name and slice size."""
    if collective == "bcast":
        buf = np.zeros(nbytes, dtype=np.uint8)
        if hc.rank == 0:
            buf[:] = np.arange(nbytes) % 251
        return lambda algo, seg: hc.Bcast(buf, 0, algo=algo, segment_size=seg)
    if collective == "allreduce":
        send = np.full(max(nbytes // 8, 1), hc.rank + 1.0)
        recv = np.empty_like(send)
        return lambda algo, seg: hc.Allreduce(send, recv, op=MPI.SUM, algo=algo)
    if collective == "allgather":
        send = np.full(nbytes, hc.rank % 251, dtype=np.uint8)
        recv = np.empty(nbytes * hc.size, dtype=np.uint8)
        return lambda algo, seg: hc.Allgather(send, recv, algo=algo)
    return lambda algo, seg: hc.barrier(algo=algo)


def measure_calls(
    hc: HetComm,
    collective: str,
    nbytes: int,
    plans: list[dict[str, Any]],
    rounds: int,
    loop: float,
) -> dict[str, Any]:
    """Paired rounds of every plan (``plans[0]`` is MPI's own), collective; one row."""
    one = _call(hc, collective, nbytes)
    base = hc.base
    for p in plans:  # warm up: plans, first touches
        one(p["algorithm"], p["segment_size"])
    calls = max(1, min(1000, math.ceil(loop / max(_timed(base, one, plans[0], 1), 1e-7))))
    calls = int(base.allreduce(calls, op=MPI.MAX))
    times: list[list[float]] = [[] for _ in plans]
    for r in range(rounds):
        order = [(k + r) % len(plans) for k in range(len(plans))]
        for k in order:
            times[k].append(_timed(base, one, plans[k], calls) / calls)
    mpi = np.array(times[0])
    out = []
    for p, t in zip(plans, times, strict=True):
        speedup = mpi / np.array(t)
        out.append(
            {
                **p,
                "times": t,
                "median": float(np.median(t)),
                "speedup": [float(x) for x in speedup],
                "speedup_median": float(np.median(speedup)),
            }
        )
    return {
        "collective": collective,
        "nbytes": nbytes,
        "calls": calls,
        "plans": out,
        "winner": pick(out),
    }


def _timed(comm: MPI.Comm, one, plan: dict[str, Any], calls: int) -> float:
    """Seconds of ``calls`` calls, on the slowest rank (barriers around)."""
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        one(plan["algorithm"], plan["segment_size"])
    mine = time.perf_counter() - t0
    return float(comm.allreduce(mine, op=MPI.MAX))


def pick(plans: list[dict[str, Any]]) -> dict[str, Any]:
    """The winner of a row (module doc): a plan faster than MPI in at least
    :data:`WIN_SHARE` of the rounds with the largest median speed-up, else MPI's own.

    Examples
    --------
    >>> mpi = {"algorithm": "mpi", "segment_size": None, "speedup": [1, 1, 1]}
    >>> fnf = {"algorithm": "fnf", "segment_size": None, "speedup": [1.2, 1.1, 0.9]}
    >>> pick([mpi, fnf])["algorithm"]
    'mpi'
    >>> pick([mpi, {**fnf, "speedup": [1.2, 1.1, 1.05]}])["algorithm"]
    'fnf'
    """
    best = plans[0]
    for p in plans[1:]:
        s = np.asarray(p["speedup"], dtype=float)
        if np.mean(s > 1.0) >= WIN_SHARE and (
            best is plans[0] or np.median(s) > np.median(best["speedup"])
        ):
            best = p
    return {"algorithm": best["algorithm"], "segment_size": best["segment_size"]}
