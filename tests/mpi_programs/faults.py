"""MPI test program: faults and misuse.  ``mpiexec -n K python -m mpi4py faults.py MODE OUT``.

Modes (each rank writes one JSON line ``{"rank", "events", ...}`` to ``OUT.<rank>``):

- ``dtype``: rank 1 reduces float64, the others int64 of the same byte count;
- ``op``: rank 1 reduces with ``MPI.MAX``, the others with ``MPI.SUM`` (same buffers);
- ``root``/``size``: a first ``Bcast`` agreed by all, then rank 1 calls the second with
  another root (or size), then an agreed third and ``close()``: where each rank learns of
  the disagreement; ``always``: the same as ``root`` with ``check="always"``;
- ``startup``: the last rank creates its ``HetComm`` 6 s after the others (timeout 2 s);
- ``raise``: ``on_timeout="raise"``, the last rank skips a ``Bcast``; the others catch
  :class:`CollectiveTimeoutError` and end the job with ``hc.abort()``, the documented way.

In the last two modes the job ends in ``MPI_Abort``: stderr is copied to ``OUT.<rank>.err``
(see ``_stderr.py``).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _report import attempt, write_events
from _stderr import copy_stderr
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.errors import CollectiveTimeoutError
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size


def platform() -> Platform:
    return Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]), model="tini")


def disagree(events: list, hc: HetComm, on: str) -> None:
    """Rank 1's ``Allreduce`` differs from the others' on ``on``: "dtype" or "op"."""
    kind = np.float64 if me == 1 and on == "dtype" else np.int64
    op = MPI.MAX if me == 1 and on == "op" else MPI.SUM
    send, out = np.ones(4, dtype=kind), np.zeros(4, dtype=kind)
    attempt(events, "Allreduce", lambda: hc.Allreduce(send, out, op=op))
    # the wrapper still works for an agreed call
    ok = np.zeros(2, np.int64)
    attempt(events, "after", lambda: hc.Allreduce(np.ones(2, np.int64), ok))
    events.append(["after data", bool((ok == n).all())])


def later(events: list, hc: HetComm, what: str) -> None:
    buf = np.arange(100, dtype=np.uint8) if me == 0 else np.zeros(100, np.uint8)
    attempt(events, "call1", lambda: hc.Bcast(buf, 0))
    events.append(["call1 data", bool((buf == np.arange(100)).all())])
    root, size = 0, 100
    if me == 1:
        root, size = (1, 100) if what == "root" else (0, 60)
    second = np.arange(size, dtype=np.uint8) + 1 if me == root else np.zeros(size, np.uint8)
    attempt(events, "call2", lambda: hc.Bcast(second, root))
    third = np.arange(50, dtype=np.uint8) + 2 if me == 0 else np.zeros(50, np.uint8)
    if attempt(events, "call3", lambda: hc.Bcast(third, 0)):
        events.append(["call3 data", bool((third == np.arange(50) + 2).all())])
    attempt(events, "close", hc.close)


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    events: list = []
    if mode in ("startup", "raise"):
        copy_stderr(out, me)
    if mode == "startup":
        if me == n - 1:
            time.sleep(6)
        HetComm(WORLD, platform(), "binomial", timeout=2)
        events.append(["created", "ok"])
    elif mode == "raise":
        hc = HetComm(WORLD, platform(), "binomial", timeout=2, on_timeout="raise")
        buf = np.zeros(10, dtype=np.uint8)
        hc.Bcast(buf, n - 1)
        if me == n - 1:
            time.sleep(30)  # never takes part in the second broadcast
        try:
            hc.Bcast(buf, n - 1)
        except CollectiveTimeoutError as exc:
            print(f"rank {me} caught CollectiveTimeoutError: {exc}", file=sys.stderr, flush=True)
            hc.abort(5)  # the documented way out: MPI_Finalize would wait for rank n-1
    else:
        check = "always" if mode == "always" else "data"
        with HetComm(WORLD, platform(), "binomial", timeout=20, check=check) as hc:
            if mode in ("dtype", "op"):
                disagree(events, hc, mode)
            else:
                later(events, hc, "root" if mode == "always" else mode)
    write_events(out, events)


if __name__ == "__main__":
    main()
