"""MPI test program: wrappers that are never closed.  ``mpiexec -n K python -m mpi4py
lifecycle.py MODE OUT``.

A user's program: it makes a few ``HetComm`` objects and never closes them (no ``with``,
no ``close()``), broadcasts on each (one message, and 1 MiB in 64 KiB segments; on one,
a persistent broadcast never freed and a nonblocking one), drops one
wrapper to the garbage collector, and rank 0 prints one JSON line at the end: nothing else
may appear on stdout or stderr.  Modes:

- ``plain``: as above;
- ``timeout``: also a wrapper with ``on_timeout="raise"`` and a 5 s timeout whose root (rank
  0) skips a ``Bcast``: the others catch :class:`CollectiveTimeoutError` and go on (every
  rank is alive, so the job may end normally); the abandoned call's receives are gone
  (a late message finds none);
- ``finalize``: as ``plain``, then the program calls ``MPI.Finalize()`` itself.

What each rank saw at exit goes to ``OUT.<rank>`` (a file: the output must stay the
program's own): an ``atexit`` handler registered *before* hetcoll is imported runs *after*
hetcoll's (last in, first out) and records whether MPI was finalized by then and how many
wrappers hetcoll still held open.
"""

from __future__ import annotations

import atexit
import gc
import json
import sys
import time

from mpi4py import MPI

MODE, OUT = sys.argv[1], sys.argv[2]
WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
seen: dict = {"rank": me}


def at_exit() -> None:
    from hetcoll.runtime import lifecycle

    seen["finalized at exit"] = MPI.Is_finalized()
    seen["open at exit"] = lifecycle.open_wrappers()
    with open(f"{OUT}.{me}", "w") as fh:
        json.dump(seen, fh)


atexit.register(at_exit)  # before hetcoll's own handler: so it runs after it

import numpy as np  # noqa: E402

from hetcoll import HetComm, Platform  # noqa: E402
from hetcoll.errors import CollectiveTimeoutError  # noqa: E402
from hetcoll.platform import nodes_from_costs  # noqa: E402
from hetcoll.runtime import lifecycle  # noqa: E402
from hetcoll.runtime.transport import data_tag  # noqa: E402


def platform() -> Platform:
    return Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]), model="tini")


def broadcasts(hc: HetComm, root: int) -> int:
    small = np.arange(100, dtype=np.int32) if me == root else np.zeros(100, np.int32)
    hc.Bcast(small, root)
    big = np.full(1 << 20, root + 1, np.uint8) if me == root else np.zeros(1 << 20, np.uint8)
    hc.Bcast(big, root, segment_size=64 * 1024)
    return int(small.sum()) + int(big[-1])


def persistent_and_nonblocking(hc: HetComm) -> int:
    """A persistent broadcast started twice and never freed, and a nonblocking one: the
    wrapper's progress thread and requests must not outlive it either."""
    buf = np.full(10, 7, np.int32) if me == 0 else np.zeros(10, np.int32)
    req = hc.Bcast_init(buf, 0)
    for _ in range(2):
        req.Start()
        req.Wait()
    hc.Ibcast(buf, 0).Wait()
    return int(buf.sum())


def dropped() -> int:
    """A wrapper made and dropped: the garbage collector releases it."""
    hc = HetComm(WORLD, platform(), "binomial")
    return broadcasts(hc, n - 1)


def late_message(hc: HetComm) -> bool:
    """After the timeout, rank 0 sends each rank a message as its broadcast's would have
    been: no receive of the abandoned call may still be posted to take it, so it waits,
    unexpected, where ``Iprobe`` sees it (then received, so nothing is left)."""
    WORLD.Barrier()  # every rank has given up the call
    if me == 0:
        for r in range(1, n):
            hc.comm.Send([bytearray(1), MPI.BYTE], r, data_tag(0))
        return True
    deadline = time.monotonic() + 5
    while not hc.comm.Iprobe(0, data_tag(0)):
        if time.monotonic() > deadline:
            return False  # a receive of the abandoned call took it
        time.sleep(1e-3)
    hc.comm.Recv([bytearray(1), MPI.BYTE], 0, data_tag(0))
    return True


def main() -> None:
    wrappers = [HetComm(WORLD, platform(), algo) for algo in ("binomial", "fnf", "chain")]
    total = sum(broadcasts(hc, r % n) for r, hc in enumerate(wrappers))
    total += persistent_and_nonblocking(wrappers[1])
    before = lifecycle.open_wrappers()
    total += dropped()
    gc.collect()
    seen["open after the collector"] = lifecycle.open_wrappers() - before
    if MODE == "timeout":
        hc = HetComm(WORLD, platform(), "binomial", timeout=5, on_timeout="raise")
        buf = np.zeros(10, dtype=np.uint8)
        caught = 0
        if me != 0 or n == 1:
            try:
                hc.Bcast(buf, 0)
            except CollectiveTimeoutError:
                caught = 1
        seen["caught"] = caught
        total += broadcasts(wrappers[0], 0)  # the other wrappers go on
        seen["late message unexpected"] = late_message(hc)
    WORLD.Barrier()
    if me == 0:
        print(json.dumps({"ranks": n, "total": total}), flush=True)
    if MODE == "finalize":
        MPI.Finalize()


if __name__ == "__main__":
    main()
