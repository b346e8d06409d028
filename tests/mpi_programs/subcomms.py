"""MPI test program: a HetComm is an MPI.Intracomm, and the communicators made from it are
HetComms on the matching nodes.  ``mpiexec -n 4 python -m mpi4py subcomms.py OUT``.

Platform ``fig1`` (8 heterogeneous nodes, Banikazemi et al. Fig. 1) for 4 ranks: the world
wrapper maps rank ``r`` to node ``2r + 1`` (``nodes=``).  Each rank writes one JSON record
``{"rank", "checks": {name: value}}`` to ``OUT.<rank>``; the test compares them with what
they must be (plans made here with hetcoll's planners, data broadcast from known roots).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm, load_platform, plan
from hetcoll.errors import HetcollError, MismatchError

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
FIG1 = load_platform("fig1")
NODES = [str(2 * r + 1) for r in range(n)]


def bcast_right(hc, root: int, size: int = 1000) -> bool:
    want = (np.arange(size) * (root + 3) % 251).astype(np.uint8)
    buf = want.copy() if hc.rank == root else np.zeros(size, np.uint8)
    hc.Bcast(buf, root)
    return bool((buf == want).all())


def planned_as_expected(hc, root: int) -> bool:
    """The call's schedule is the planner's, for the communicator's nodes only."""
    want = plan(FIG1, hc.nodes[root], list(hc.nodes), method=hc.algo, nbytes=1000)
    return hc.last_schedule.to_json() == want.to_json()


def allreduce_right(hc) -> bool:
    out = np.zeros(3, dtype=np.int64)
    hc.Allreduce(np.full(3, hc.rank + 1, dtype=np.int64), out)
    return bool((out == hc.size * (hc.size + 1) // 2).all())


def describe(hc) -> dict:
    return {
        "type": type(hc).__name__,
        "intracomm": isinstance(hc, MPI.Intracomm),
        "size": hc.size,
        "rank": hc.rank,
        "nodes": list(hc.nodes),
        "algo": hc.algo,
        "cube_algo": hc.cube_algo,
        "timeout": hc.timeout,
        "bcast": [bcast_right(hc, r) for r in range(hc.size)],
        "planned": planned_as_expected(hc, hc.size - 1),
        "allreduce": allreduce_right(hc),
    }


def outcome(run) -> str:
    try:
        run()
        return "ok"
    except HetcollError as exc:
        return f"{type(exc).__name__}: {exc}"


def main() -> None:
    checks: dict = {}
    hc = HetComm(WORLD, FIG1, "fnf", cube_algo="blind", timeout=30, nodes=NODES)
    checks["world"] = describe(hc)
    checks["same handle"] = hc == WORLD and hc.Get_rank() == me
    # not planned: mpi4py's own methods on the user's communicator
    got = hc.gather(me * 10, root=0)
    checks["gather"] = got == [r * 10 for r in range(n)] if me == 0 else got is None
    buf = np.full(4, me, dtype=np.int64)
    req = hc.Ibcast(buf, root=2)  # planned (runtime/nonblocking.py), on the nodes= mapping
    req.Wait()
    checks["Ibcast"] = bool((buf == 2).all())

    sub = hc.Split(me % 2, -me)  # reversed order inside each half
    checks["split"] = describe(sub)
    sub.Free()
    dup = hc.Dup()
    checks["dup"] = describe(dup)
    dup.Free()
    clone = hc.Clone()
    checks["clone"] = describe(clone)
    clone.Free()
    shared = hc.Split_type(MPI.COMM_TYPE_SHARED)
    checks["split_type"] = describe(shared)
    shared.Free()
    group = hc.Get_group().Incl([0, 1, 3])
    made = hc.Create(group)
    checks["create"] = describe(made) if made != MPI.COMM_NULL else "null"
    if made != MPI.COMM_NULL:
        made.Free()
    if me in (0, 1, 3):
        made = hc.Create_group(group, tag=7)
        checks["create_group"] = describe(made)
        made.Free()
    group.Free()
    checks["undefined"] = hc.Split(MPI.UNDEFINED if me == 0 else 1) == MPI.COMM_NULL
    idup, req = hc.Idup()
    req.Wait()
    checks["idup plain"] = type(idup) is MPI.Intracomm
    idup.Free()

    # a plain sub-communicator with nodes= of a part of the platform (3 of 8 nodes)
    plain = WORLD.Split(0 if me < 3 else 1, me)
    if me < 3:
        own = HetComm(plain, FIG1, "fnf", nodes=["2", "5", "7"], timeout=30)
        checks["nodes="] = describe(own)
        own.close()
        # ranks that disagree on nodes=, or give too few: every rank raises
        other = ["2", "5", "7"] if me else ["2", "7", "5"]
        checks["different nodes"] = outcome(lambda: HetComm(plain, FIG1, nodes=other))
        checks["too few nodes"] = outcome(lambda: HetComm(plain, FIG1, nodes=["2", "5"]))
    plain.Free()
    checks["mismatch is MismatchError"] = issubclass(MismatchError, HetcollError)
    hc.close()
    with open(f"{sys.argv[1]}.{me}", "w") as fh:
        json.dump({"rank": me, "checks": checks}, fh)


if __name__ == "__main__":
    main()
