"""MPI test program run by ``python -m hetcoll.launch``: a plain mpi4py script.

``mpiexec -n 4 python -m hetcoll.launch --platform P --algo binomial launched.py OUT MODE``.
It uses ``MPI.COMM_WORLD`` as any mpi4py program does and records what it sees in
``OUT.<rank>`` (JSON); with ``MODE`` ``raise`` rank 1 raises instead (the job must end,
not hang).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out, mode = sys.argv[1], sys.argv[2]
if mode == "raise" and rank == 1:
    raise RuntimeError("rank 1 fails")
checks = {
    "type": type(comm).__name__,
    "intracomm": isinstance(comm, MPI.Intracomm),
    "argv": sys.argv[1:],
}
want = (np.arange(5000) % 251).astype(np.uint8)
buf = want.copy() if rank == 1 else np.zeros(5000, np.uint8)
comm.Bcast(buf, root=1)
checks["Bcast"] = bool((buf == want).all())
checks["algorithm"] = getattr(getattr(comm, "last_schedule", None), "algorithm", None)
total = np.zeros(2, dtype=np.float64)
comm.Allreduce(np.full(2, rank + 0.5), total)
checks["Allreduce"] = bool(np.allclose(total, size * size / 2))
checks["bcast"] = comm.bcast({"from": 0} if rank == 0 else None, root=0) == {"from": 0}
checks["gather"] = comm.gather(rank, root=0) == (list(range(size)) if rank == 0 else None)
sub = comm.Split(rank % 2, rank)
checks["Split"] = type(sub).__name__
part = np.full(3, sub.rank, dtype=np.int64) if sub.rank == 0 else np.full(3, -1, np.int64)
sub.Bcast(part, root=0)
checks["sub Bcast"] = bool((part == 0).all())
sub.Free()
with open(f"{out}.{rank}", "w") as fh:
    json.dump(checks, fh)
