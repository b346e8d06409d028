"""MPI test program: the KnobWarnings a HetComm gives at construction and per call.

``mpiexec -n K python -m mpi4py knobs.py OUT``: each case builds a HetComm (and makes a
call), recording on every rank the KnobWarning messages raised; rank 0 writes one JSON
object ``{case: [per-rank lists of messages]}`` plus ``ranks_on_host`` and ``cores``.
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm, KnobWarning
from hetcoll.knobs import usable_cores
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.tuning import Tuning

WORLD = MPI.COMM_WORLD
N = WORLD.size
FLAT = Platform(nodes_from_costs([0.0] * N), name="flat")
#: a millisecond per message: 64 segments of a 256 KiB broadcast cost 64 messages
SLOW_START = Platform(nodes_from_costs([1e-3] * N, [1e-12] * N), name="slow start")
ROWS = [
    {
        "collective": "bcast",
        "nbytes": 1 << 20,
        "plans": [
            {"algorithm": "mpi", "segment_size": None, "speedup_median": 1.0},
            {"algorithm": "fnf", "segment_size": None, "speedup_median": 1.2},
            {"algorithm": "fnf", "segment_size": 4096, "knob": True, "speedup_median": 0.3},
            {"algorithm": "fnf", "segment_size": None, "spin": 5e-3, "knob": True,
             "speedup_median": 0.6},
        ],
    }
]  # fmt: skip


def said(make) -> list[str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in got if issubclass(w.category, KnobWarning)]


def build(*args, call=None, **kwargs):
    def make():
        with HetComm(WORLD, *args, **kwargs) as hc:
            if call is not None:
                call(hc)

    return make


def two_bcasts(hc) -> None:
    buf = np.arange(1 << 15, dtype=np.float64)  # 256 KiB
    for _ in range(2):
        hc.Bcast(buf, root=0, segment_size=4096, algo="chain")


def main(out: str) -> None:
    tuning = Tuning(N, {}, measurements=ROWS)
    cases = {
        "no knobs": build(FLAT, "mpi"),
        "spin": build(FLAT, "mpi", spin=1e-3),
        "spin measured slower": build(FLAT, "mpi", spin=5e-3, tuning=tuning),
        "segment measured slower": build(FLAT, "mpi", segment_size=4096, tuning=tuning),
        "emulated segments": build(SLOW_START, "chain", emulate=True, call=two_bcasts),
    }
    got = {name: WORLD.gather(said(make), 0) for name, make in cases.items()}
    per_host = WORLD.gather(MPI.Get_processor_name(), 0)
    if WORLD.rank == 0:
        got["ranks_on_host"] = per_host.count(MPI.Get_processor_name())
        got["cores"] = usable_cores()
        with open(out, "w") as fh:
            json.dump(got, fh)


if __name__ == "__main__":
    main(sys.argv[1])
