"""MPI test program: ``mpiexec -n K python -m mpi4py switch_bcast.py OUT``: every switch planner's
broadcast on an 8-workstation switch platform, with and without emulation; every rank
checks the bytes it received; rank 0 writes one JSON record per case."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.generators import switch_platform

WORLD = MPI.COMM_WORLD
me, nranks = WORLD.rank, WORLD.size
PLANNERS = ("labs", "two_vbbs", "switch_aware", "binomial_like", "postorder_doubling", "fnf")


def pattern(nbytes: int, seed: int) -> np.ndarray:
    return ((np.arange(nbytes, dtype=np.int64) * 31 + seed * 7 + 3) % 251).astype(np.uint8)


def main(out: str) -> None:
    p = switch_platform(nranks, density=2, types=8, seed=5)
    records = []
    for emulate in (False, True):
        for k, algo in enumerate(PLANNERS):
            comm = HetComm(WORLD, p, algo, emulate=emulate, timeout=60)
            for root in (0, nranks - 1):
                for nbytes in (0, 1, 2048):
                    want = pattern(nbytes, k + root)
                    buf = want.copy() if me == root else np.zeros(nbytes, dtype=np.uint8)
                    comm.Bcast(buf, root)
                    ok = bool(np.array_equal(buf, want))
                    got = hashlib.blake2b(buf.tobytes(), digest_size=8).hexdigest()
                    verdicts = WORLD.gather((ok, got), 0)
                    if me == 0:
                        records.append(
                            {
                                "algo": algo,
                                "emulate": emulate,
                                "root": root,
                                "nbytes": nbytes,
                                "ok": all(v[0] for v in verdicts),
                                "bad": [r for r, v in enumerate(verdicts) if not v[0]],
                            }
                        )
    if me == 0:
        with open(out, "w") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
