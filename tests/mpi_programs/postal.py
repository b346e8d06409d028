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


def main() -> None:
    out = sys.argv[1]
    p = platform()
    records = []
    for model in MODELS:
        for algo in PLANNERS:
            with HetComm(WORLD, p, algo, model=model, emulate=True, timeout=60) as hc:
                for root in (0, WORLD.size - 1):
                    expected = np.arange(7, dtype=np.uint8) + root
                    buf = expected.copy() if WORLD.rank == root else np.zeros(7, np.uint8)
                    start = hc.start_together(20e-3)
                    hc.Bcast(buf, root)
                    sched, trace = hc.last_schedule, hc.last_trace
                    ops = sched.program().ops.get(hc.node, ())
                    recv = [trace.done[i] for i, op in enumerate(ops) if op.kind != "send"]
                    logical = (max(recv) - start) / 1e9 if recv else 0.0
                    ok = bool((buf == expected).all())
                    got = WORLD.gather((hc.node, logical, ok, trace.late / 1e9), 0)
                    if WORLD.rank == 0:
                        pred = simulate(p, sched, model).arrival
                        records.append(
                            {
                                "algorithm": algo,
                                "root": root,
                                "model": model,
                                "ok": all(ok for _, _, ok, _ in got),
                                "max_error": max(abs(t - pred[n]) for n, t, _, _ in got),
                                # how far the host fell behind the model, over all ranks
                                "late": sum(late for *_, late in got),
                                "makespan": max(pred.values()),
                            }
                        )
    if WORLD.rank == 0:
        with open(out, "w") as fh:
            json.dump(records, fh)


if __name__ == "__main__":
    main()
