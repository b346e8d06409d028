"""MPI test program: a broadcast of many segments costs work linear in their number.

``mpiexec -n 4 python -m mpi4py many_segments.py PATH OUT``: a chain ``Bcast`` from rank 0
of ``M`` segments for two ``M``, on the native fast path (1-byte segments), the native
loop of large chunks (17 KiB segments) or the executor (``PATH`` = ``fast``, ``large``,
``executor``: ``HETCOLL_FAST=0``).  The engine's ``Testsome`` (the one its loops look with)
is replaced by a counter of the requests each look asks about; each rank writes
``{"rank", "cases": [[M, looks, requests asked, most in one look, data right], ...]}``
to ``OUT.<rank>``.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

PATH = sys.argv[1]
if PATH == "executor":
    os.environ["HETCOLL_FAST"] = "0"  # read when the wrapper is made

from hetcoll import HetComm  # noqa: E402
from hetcoll.platform import Platform, nodes_from_costs  # noqa: E402
from hetcoll.runtime import inflight  # noqa: E402
from hetcoll.runtime.clocks import NATIVE, Clocks  # noqa: E402

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
count = {"looks": 0, "asked": 0, "most": 0}
_real = MPI.Request.Testsome


def counted(reqs):
    count["looks"] += 1
    count["asked"] += len(reqs)
    count["most"] = max(count["most"], len(reqs))
    return _real(reqs)


inflight._testsome = counted  # the executor's looks
# the native loops look through their host's Testsome
Clocks.host = NATIVE._replace(testsome=counted)


def main() -> None:
    platform = Platform(nodes_from_costs([1e-6] * n), model="tini")
    seg = 17 * 1024 if PATH == "large" else 1
    sizes = (200, 800) if PATH == "large" else (1024, 4096)
    cases = []
    with HetComm(WORLD, platform, "chain", timeout=120) as hc:
        for m in sizes:
            want = (np.arange(m * seg) % 251).astype(np.uint8)
            buf = want.copy() if me == 0 else np.zeros(m * seg, np.uint8)
            hc.Bcast(buf, 0, segment_size=seg)  # planned, compiled (not counted)
            if me:
                buf[:] = 0
            for key in count:
                count[key] = 0
            hc.Bcast(buf, 0, segment_size=seg)
            cases.append(
                [m, count["looks"], count["asked"], count["most"], bool((buf == want).all())]
            )
    with open(f"{sys.argv[2]}.{me}", "w") as fh:
        json.dump({"rank": me, "cases": cases}, fh)


if __name__ == "__main__":
    main()
