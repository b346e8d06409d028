"""MPI test program: emulation across hosts, with a known clock offset injected per rank.

``mpiexec -n K python -m mpi4py clocks.py SHIFT OUT``: with ``SHIFT`` = ``yes`` every rank's
clock is off by seconds (``HETCOLL_CLOCK_SHIFT``, as if each rank were on a host of its
own), with ``no`` it is not.  Under emulation the wrapper then synchronises clocks by
ping-pong; rank 0 writes (JSON) what each rank estimated, the modelled arrival times of
broadcasts from every root against the simulator's (with the lateness the ranks report),
and the broadcast latency that ``measure_bcast`` measures next to the prediction.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
SHIFTS = [0.0, 3.5, -2.25, 7.0, -5.5, 1.75, 4.0, -1.0]


def main() -> None:
    shifted, out = sys.argv[1] == "yes", sys.argv[2]
    if shifted:  # before hetcoll reads it
        os.environ["HETCOLL_CLOCK_SHIFT"] = ",".join(str(s) for s in SHIFTS[:n])
    from hetcoll import HetComm, simulate
    from hetcoll.platform import Platform, nodes_from_costs
    from hetcoll.runtime.measure import measure_bcast

    t_ini = np.array([1.0, 2.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0][:n]) * 1e-3
    p = Platform(nodes_from_costs(t_ini, 1e-8), model="tini")
    record: dict = {"shifted": shifted}
    with HetComm(WORLD, p, "fnf", emulate=True, timeout=60) as hc:
        # every rank's shared clock = its own clock + its estimated offset: rank 0's clock
        common = (hc.shift_ns + hc.clock_offset_ns) / 1e9
        record["one_host"] = WORLD.allgather(hc.one_host)
        record["clock_error"] = max(abs(c - SHIFTS[0] * shifted) for c in WORLD.allgather(common))
        arrivals = []
        for root in range(n):
            buf = np.arange(300, dtype=np.uint8) if me == root else np.zeros(300, np.uint8)
            start = hc.start_together(20e-3)
            hc.Bcast(buf, root)
            ops = hc.last_schedule.program().ops.get(hc.node, ())
            recv = [hc.last_trace.done[i] for i, op in enumerate(ops) if op.kind != "send"]
            mine = (hc.node, (max(recv) - start) / 1e9 if recv else 0.0, hc.last_trace.late / 1e9)
            got = WORLD.allgather(mine)
            pred = simulate(p, hc.last_schedule).arrival
            delivered = bool((buf == np.arange(300, dtype=np.uint8)).all())
            arrivals.append(
                {
                    "root": root,
                    "data": WORLD.allreduce(delivered, MPI.LAND),
                    "error": max(abs(t - pred[v]) for v, t, _ in got),
                    "early": min(t - pred[v] for v, t, _ in got),
                    "late": sum(late for *_, late in got),
                }
            )
        record["arrivals"] = arrivals
        m = measure_bcast(hc, 0, 300, repeat=3)
        record["measured"] = m.measured_time
        record["clock_time"] = m.clock_time
        record["predicted"] = hc.predict(0, 300)
    if me == 0:
        with open(out, "w") as fh:
            json.dump(record, fh)


if __name__ == "__main__":
    main()
