"""MPI test program: a wrapper plans each request once.  Calls that differ only in what
their digest adds (the datatype's signature, a reduce's operator) share the schedule.

``mpiexec -n K python -m mpi4py plan_reuse.py OUT``: on one wrapper, ``Reduce``,
``Allreduce``, ``Bcast``, ``Gather`` and ``Reduce_scatter_block`` of the same byte counts
in several element types and operators; the planner is asked once per distinct request
(counted), every call's schedule is byte for byte the one a new wrapper plans for that
call alone, and the data are mpi4py's.  Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI
from rooted import WORLD, platform

from hetcoll import HetComm

CALLS = [  # (call, dtype, count, op): the same bytes in other types and operators
    ("Reduce", np.int32, 4, "SUM"),
    ("Reduce", np.int64, 2, "MAX"),
    ("Reduce", np.uint8, 16, "BXOR"),
    ("Reduce", np.int32, 8, "SUM"),
    ("Allreduce", np.int32, 4, "SUM"),
    ("Allreduce", np.int64, 2, "SUM"),
    ("Allreduce", np.int32, 4, "MAX"),
    ("Bcast", np.int32, 4, None),
    ("Bcast", np.float32, 4, None),
    ("Gather", np.int16, 4, None),
    ("Gather", np.uint8, 8, None),
    ("Reduce_scatter_block", np.int32, 2, "SUM"),
    ("Reduce_scatter_block", np.int64, 1, "PROD"),
]


def settings() -> dict:
    return {"rooted_algo": "rooted_ls", "cube_algo": "eff_cube", "timeout": 60}


def run(hc, comm, call: str, dtype, count: int, opname: str | None) -> bool:
    """One call on ``hc`` and on mpi4py's ``comm``; whether the data are the same."""
    me, n = comm.rank, comm.size
    op = getattr(MPI, opname) if opname else None
    send = (np.arange(count * (n if call == "Reduce_scatter_block" else 1)) + 3 * me + 1).astype(
        dtype
    )
    if call in ("Reduce", "Allreduce"):
        got, want = np.zeros(count, dtype), np.zeros(count, dtype)
        getattr(comm, call)(*((send, want, op) + ((0,) if call == "Reduce" else ())))
        getattr(hc, call)(*((send, got, op) + ((0,) if call == "Reduce" else ())))
    elif call == "Bcast":
        got = send.copy() if me == 0 else np.zeros(count, dtype)
        want = got.copy()
        comm.Bcast(want, 0)
        hc.Bcast(got, 0)
    elif call == "Gather":
        got, want = np.zeros(count * n, dtype), np.zeros(count * n, dtype)
        comm.Gather(send, want, 0)
        hc.Gather(send, got, 0)
    else:
        got, want = np.zeros(count, dtype), np.zeros(count, dtype)
        comm.Reduce_scatter_block(send, want, op)
        hc.Reduce_scatter_block(send, got, op)
    return got.tobytes() == want.tobytes()


def main() -> None:
    rec = Recorder(sys.argv[1])
    comm, n = WORLD, WORLD.size
    asked: list[str] = []
    with HetComm(comm, platform(n), "binomial", **settings()) as hc:
        for name in ("rooted", "tree", "cube"):
            method = getattr(hc.planning, name)
            setattr(
                hc.planning,
                name,
                lambda p, call, name=name, method=method: asked.append(name) or method(p, call),
            )
        for call, dtype, count, opname in CALLS:
            ok = run(hc, comm, call, dtype, count, opname)
            mine = hc.last_schedule.to_json() if n > 1 else ""  # one rank: nothing planned
            with HetComm(comm, platform(n), "binomial", **settings()) as fresh:
                run(fresh, comm, call, dtype, count, opname)
                alone = fresh.last_schedule.to_json() if n > 1 else ""
            label = f"{call} {np.dtype(dtype).name}x{count} {opname}"
            rec.case(f"{label}: data", ok)
            rec.case(f"{label}: the schedule a new wrapper plans", n == 1 or mine == alone)
    # distinct requests: Reduce of 16 and 32 B, Allreduce of 16 B with SUM and with MAX
    # (a hypercube's schedule names its operator), Bcast of 16 B, Gather of 8 B, and the
    # reduce and scatter of Reduce_scatter_block's 8 B per rank
    want = {"rooted": 5, "cube": 2, "tree": 1} if n > 1 else {}
    got = {k: asked.count(k) for k in ("rooted", "tree", "cube") if asked.count(k)}
    rec.case("planned once per request", got == want, f"{got} != {want}")
    rec.write()


if __name__ == "__main__":
    main()
