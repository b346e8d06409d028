"""MPI program: grid schedules under postal emulation (Park et al. eq. 2-4).

For every latency planner, two roots and two postal models (eq. 4: no overhead or gap;
eq. 2: overhead, gap and receive overhead), broadcast under emulation and record on rank 0:
whether every rank got the bytes, and the largest difference between each rank's
*modelled* (logical) arrival time in the run and the simulator's prediction.  The logical
times are what the emulation imposes, so they equal the prediction — unless the host fell
behind (a sender woke later than its message was due), which each rank reports as
``trace.late``; the error is then at most that.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm, simulate
from hetcoll.generators import grid_platform

WORLD = MPI.COMM_WORLD
PLANNERS = (
    "flat",
    "binomial",
    "mst",
    "spt",
    "hlot",
    "magpie",
    "mpich-g2",
    "mpich-gx",
    "gap_aware",
    "fnf",
)
MODELS = (
    {"name": "postal"},
    {"name": "postal", "overhead": 1e-3, "gap": 2e-3, "recv_overhead": 0.5e-3},
)


def platform():
    """Three sites of two processes, millisecond latencies (so wake-up jitter is small)."""
    lat = {
        "intra": (2e-3, 3e-3),
        "lan": (4e-3, 6e-3),
        "light": (8e-3, 12e-3),
        "heavy": (10e-3, 40e-3),
    }
    return grid_platform(layout=[[2]] * (WORLD.size // 2), latency=lat, access=0.5e-3, seed=3)


def once(hc: HetComm, p, model, root: int) -> tuple[bool, float, float, float, float]:
    """One broadcast: (bytes ok everywhere, largest |modelled - predicted| arrival, least
    modelled - predicted, makespan, lateness the ranks reported), the same on every rank."""
    expected = np.arange(7, dtype=np.uint8) + root
    buf = expected.copy() if WORLD.rank == root else np.zeros(7, np.uint8)
    start = hc.start_together(20e-3)
    hc.Bcast(buf, root)
    sched, trace = hc.last_schedule, hc.last_trace
    ops = sched.program().ops.get(hc.node, ())
    recv = [trace.done[i] for i, op in enumerate(ops) if op.kind != "send"]
    logical = (max(recv) - start) / 1e9 if recv else 0.0
    got = WORLD.allgather((hc.node, logical, bool((buf == expected).all()), trace.late / 1e9))
    pred = simulate(p, sched, model).arrival
    return (
        all(ok for _, _, ok, _ in got),
        max(abs(t - pred[n]) for n, t, _, _ in got),
        min(t - pred[n] for n, t, _, _ in got),
        max(pred.values()),
        sum(late for *_, late in got),
    )


def main(attempts: int = 3) -> None:
    """Modelled arrivals never precede the prediction; they exceed it only when a rank
    woke up later than a message's modelled arrival (the data was not there yet), which a
    loaded machine can cause and the ranks report: every attempt's error must be explained
    by that lateness.  A case is tried again (up to ``attempts`` times) only to record an
    exact run when there is one; nothing requires it."""
    out = sys.argv[1]
    p = platform()
    records = []
    for model in MODELS:
        for algo in PLANNERS:
            with HetComm(WORLD, p, algo, model=model, emulate=True, timeout=60) as hc:
                for root in (0, WORLD.size - 1):
                    errors, early, ok, explained = [], 0.0, True, True
                    for _ in range(attempts):
                        delivered, error, lowest, makespan, late = once(hc, p, model, root)
                        ok, early = ok and delivered, min(early, lowest)
                        explained = explained and error <= late + 1e-8
                        errors.append(error)
                        if error < 1e-9:
                            break
                    records.append(
                        {
                            "algorithm": algo,
                            "root": root,
                            "model": model,
                            "ok": ok,
                            "max_error": min(errors),
                            "attempts": len(errors),
                            "early": early,
                            "explained": explained,
                            "makespan": makespan,
                        }
                    )
    if WORLD.rank == 0:
        with open(out, "w") as fh:
            json.dump(records, fh)


if __name__ == "__main__":
    main()
