"""MPI test program: a reduce-scatter in the reversed timetable of
``hetcoll.planners.forestreverse`` (each rank issuing its sends in one order, combining in
slot order) run by the engine, against numpy's sums.

``mpiexec -n K python forest_reverse.py OUT``: on a random bandwidth-only link graph of K
nodes, ``forest``'s reduce-scatter flows timetabled backwards, int64 vectors bit for bit,
float64 vectors within rounding of MPI's own sum; rank 0 writes one JSON record per case
to OUT.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
from _report import Recorder
from mpi4py import MPI

from hetcoll import HetComm, plan
from hetcoll.generators import capacitated_graph_platform
from hetcoll.planners.forestreverse import reversed_play_out
from hetcoll.runtime.reduce import RangeReduceHandler

WORLD = MPI.COMM_WORLD


def main(out: str) -> None:
    n, me = WORLD.size, WORLD.rank
    rec = Recorder(out)
    p = capacitated_graph_platform(n, 0.5, seed=4)
    with HetComm(WORLD, p, timeout=60) as hc:
        for elements, segment in ((1, 8), (37, 16), (1000, 800)):
            s = plan(p, None, method="forest", collective="reduce_scatter",
                     nbytes=8 * elements, segment_size=segment, options={"align": 8})  # fmt: skip
            r = replace(s, order=reversed_play_out(p, s.flows).order)
            if elements == 37:  # the case this program is for: sends out of slot order
                falls = any(
                    [e.slot for e in v] != sorted(e.slot for e in v) for v in r.order.values()
                )
                rec.case("a rank issues its sends out of slot order", falls)
            offsets = r.block_offsets()
            lo = offsets[p.ids[me]] // 8
            for dtype, mpitype in ((np.int64, MPI.INT64_T), (np.float64, MPI.DOUBLE)):
                rng = np.random.default_rng(100 * elements + me)
                vec = rng.integers(-(2**40), 2**40, elements * n)
                vec = vec.astype(dtype) * (1.0 + 2.0**-30 if dtype is np.float64 else 1)
                work = np.frombuffer(vec.tobytes(), np.uint8).copy()
                hc.run(r, RangeReduceHandler(r.program(), work, MPI.SUM, mpitype, 8))
                total = np.zeros_like(vec)
                WORLD.Allreduce(vec, total, MPI.SUM)
                got = np.frombuffer(work.tobytes(), dtype)[lo : lo + elements]
                want = total[lo : lo + elements]
                ok = (
                    got.tobytes() == want.tobytes() if dtype is np.int64 else np.allclose(got, want)
                )
                rec.case(f"reversed elements={elements} {dtype.__name__}", ok)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1])
