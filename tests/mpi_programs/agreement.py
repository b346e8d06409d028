"""MPI test program: ``check="always"`` in the situations the fault tests do not cover.
``mpiexec -n K python -m mpi4py agreement.py MODE OUT`` (each rank writes its events, JSON,
to ``OUT.<rank>``).

Modes (rank 1 is the odd one out in the second call; the first and third calls agree):

- ``size``: ``Bcast`` from root 2, rank 1 with another size;
- ``dtype``: ``Allreduce`` (every rank sends before it receives), rank 1 in float64 where
  the others use int64 of the same byte count;
- ``emulated``: ``Bcast`` under emulation, rank 1 with another root;
- ``members``: a ``multicast`` to ranks 0 and 2, rank 1 (not a member, no op of its own)
  names other members;
- ``segments``: an 8 KiB ``Bcast`` in 1 KiB segments, rank 1 with 2 KiB segments;
- ``large``: a 1 MiB ``Bcast`` in 256 KiB segments (chunks over 16 KiB: the bare-segment
  loop, the round first), rank 1 with 128 KiB segments; the third call is 1 MiB in 256 KiB
  segments too;
- ``last``: a 1-byte ``Bcast`` from root 0 (the native fast path: the round runs in the
  call's own loop), the last rank with 2 bytes;
- ``deadlock``: the last rank never makes the second call (it sleeps); the others must time
  out (``timeout=2``, ``on_timeout="raise"``), print the error (copied to
  ``OUT.<rank>.err``, see ``_stderr.py``) and end the job with ``hc.abort(5)``.
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


def agreed_bcast(
    events: list, hc: HetComm, name: str, nbytes: int, root: int, segment_size=None
) -> None:
    buf = np.arange(nbytes, dtype=np.uint8) if me == root else np.zeros(nbytes, np.uint8)
    attempt(events, name, lambda: hc.Bcast(buf, root, segment_size=segment_size))
    events.append([f"{name} data", bool((buf == np.arange(nbytes, dtype=np.uint8)).all())])


def second(events: list, hc: HetComm, mode: str) -> None:
    odd = me == 1
    if mode == "size":
        buf = np.zeros(60 if odd else 100, np.uint8)
        attempt(events, "call2", lambda: hc.Bcast(buf, 2))
    elif mode == "dtype":
        kind = np.float64 if odd else np.int64
        send, out = np.ones(4, dtype=kind), np.zeros(4, dtype=kind)
        attempt(events, "call2", lambda: hc.Allreduce(send, out))
    elif mode == "emulated":
        buf = np.zeros(100, np.uint8)
        attempt(events, "call2", lambda: hc.Bcast(buf, 1 if odd else 0))
    elif mode == "members":
        buf = np.zeros(100, np.uint8) if me in (0, 2) else None
        members = [0, 3] if odd else [0, 2]
        attempt(events, "call2", lambda: hc.multicast(buf, 0, members))
    elif mode == "segments":
        buf = np.zeros(8192, np.uint8)
        seg = 2048 if odd else 1024
        attempt(events, "call2", lambda: hc.Bcast(buf, 0, segment_size=seg))
    elif mode == "large":
        buf = np.zeros(1 << 20, np.uint8)
        seg = (128 if odd else 256) << 10
        attempt(events, "call2", lambda: hc.Bcast(buf, 0, segment_size=seg))
    elif mode == "last":
        buf = np.zeros(2 if me == n - 1 else 1, np.uint8)
        attempt(events, "call2", lambda: hc.Bcast(buf, 0))


def deadlock() -> None:
    p = Platform(nodes_from_costs([20e-6] * n), model="tini")
    hc = HetComm(WORLD, p, "binomial", timeout=2, check="always", on_timeout="raise")
    buf = np.zeros(1, dtype=np.uint8)
    hc.Bcast(buf, 0)
    if me == n - 1:
        time.sleep(30)  # never takes part in the second broadcast
    try:
        hc.Bcast(buf, 0)
    except CollectiveTimeoutError as exc:
        print(f"rank {me} caught CollectiveTimeoutError: {exc}", file=sys.stderr, flush=True)
        hc.abort(5)


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "deadlock":
        copy_stderr(out, me)
        deadlock()
        return
    p = Platform(nodes_from_costs([20e-6 * (1 + r % 3) for r in range(n)]), model="tini")
    events: list = []
    emulate = mode == "emulated"
    with HetComm(WORLD, p, "binomial", timeout=20, check="always", emulate=emulate) as hc:
        agreed_bcast(events, hc, "call1", 100, 0)
        trace = hc.last_trace
        events.append(["trace", trace is not None and len(trace.done) == len(trace.issued)])
        second(events, hc, mode)
        if mode == "large":
            agreed_bcast(events, hc, "call3", 1 << 20, n - 1, segment_size=256 << 10)
        else:
            agreed_bcast(events, hc, "call3", 50, n - 1)
        attempt(events, "close", hc.close)
    write_events(out, events)


if __name__ == "__main__":
    main()
