"""MPI test program: a rank receives a peer's message of a LATER call while still in the
current one.  ``mpiexec -n 3 python -m mpi4py later_call.py MODE OUT`` (each rank writes its
events, JSON, to ``OUT.<rank>``).

Call 2 is a chain broadcast ``0 -> 1 -> 2`` where rank 1 disagrees (another size): rank 1
raises on rank 0's message and never sends its part to rank 2.  Call 3 is a flat broadcast
from rank 1, which sends to rank 2 as soon as it begins.  Rank 2 enters call 2 only once that
message is waiting for it (it probes the wrapper's private communicator for it first), so the
first message its call-2 receive matches is rank 1's call 3: the engine must keep it for
call 3 (``transport.refused``/``MPITransport._finish`` with a later call number), raise
:class:`~hetcoll.errors.MismatchError` in call 2, and deliver it, bit for bit, in call 3.
Call 4 agrees again.

Call 3's message (60 bytes) fits call 2's receive (100 bytes).  Modes: ``fast`` (rank 2 on
the native fast path, ``fast.FastRun``), ``executor`` (rank 2 on the executor,
``HETCOLL_FAST=0``: ``transport.MPITransport``), ``cut`` (the fast path, call 3 of 300 bytes:
MPI cuts the message to call 2's receive, so its data are lost: rank 2 must raise in call 3
rather than deliver a part of them).
"""

from __future__ import annotations

import os
import sys

MODE, OUT = sys.argv[1], sys.argv[2]
if MODE == "executor":
    os.environ["HETCOLL_FAST"] = "0"  # read when the wrapper is made

import numpy as np  # noqa: E402
from _report import attempt, write_events  # noqa: E402
from mpi4py import MPI  # noqa: E402

from hetcoll import HetComm, Platform  # noqa: E402
from hetcoll.errors import MismatchError  # noqa: E402
from hetcoll.platform import nodes_from_costs  # noqa: E402
from hetcoll.runtime.transport import data_tag  # noqa: E402

WORLD = MPI.COMM_WORLD
me = WORLD.rank
THIRD = 300 if MODE == "cut" else 60  # call 3's size
PATTERN = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8)


def bcast(events: list, hc: HetComm, call: str, nbytes: int, root: int, algo: str) -> None:
    """One broadcast of ``PATTERN[:nbytes]`` (a sentinel-filled buffer off the root)."""
    buf = PATTERN[:nbytes].copy() if me == root else np.full(nbytes, 0xEE, np.uint8)
    try:
        hc.Bcast(buf, root, algo=algo)
        events.append([call, "ok"])
    except MismatchError as exc:
        events.append([call, "MismatchError", str(exc)])
    events.append([f"{call} data", bool(np.array_equal(buf, PATTERN[:nbytes]))])


def main() -> None:
    assert WORLD.size == 3
    p = Platform(nodes_from_costs([20e-6] * 3), model="tini")
    events: list = []
    hc = HetComm(WORLD, p, "binomial", timeout=10)
    bcast(events, hc, "call1", 100, 0, "chain")
    # the premise: in call 2 rank 2 hears from rank 1 only, in call 3 rank 1 sends to it
    chain = hc._planned(0, None, 100, None, None, "chain")[2].ops[hc.nodes[2]]
    flat = hc._planned(1, None, THIRD, None, None, "flat")[2].ops[hc.nodes[1]]
    premise = [(op.kind, op.peer) for op in chain] == [("recv", hc.nodes[1])] and any(
        op.kind == "send" and op.peer == hc.nodes[2] for op in flat
    )
    events.append(["premise", premise])
    if me == 2:  # rank 1's call-3 message is there before this rank's call 2 begins
        hc.comm.Probe(1, data_tag(0))
    bcast(events, hc, "call2", 200 if me == 1 else 100, 0, "chain")
    bcast(events, hc, "call3", THIRD, 1, "flat")
    bcast(events, hc, "call4", 50, 2, "chain")
    attempt(events, "close", hc.close)
    write_events(OUT, events)


if __name__ == "__main__":
    main()
