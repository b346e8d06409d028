"""MPI test program: chunks over PACK on the wire (bare segments, call headers, drains).

``mpiexec -n K python -m mpi4py segments.py MODE OUT``; each rank writes one JSON record
``{"rank", "events"}`` to ``OUT.<rank>``.  The tag epochs are shortened to 4 calls
(``Bare.epochs``) so that a leftover of an abandoned call that was not drained would be
taken as a later call's data within the run.  Modes:

- ``data``: ``Bcast`` for every root, chain and binomial, sizes that are and are not a
  multiple of the segment (a last chunk over and under PACK), sentinel-filled receive
  buffers; with ``mixed`` odd ranks take the executor (``HETCOLL_FAST=0``), even ranks the
  native loop, so both paths talk to each other; a large ``Allreduce`` (a reduction handler);
- ``size``/``root``: a first agreed call, rank 1 differs on the second (size or root),
  then six agreed calls (one reuses the second call's tags) and ``close()``;
- ``looks``: how an idle rank of the native loop looks again (the wrapper's ``spin``): the
  loop's ``Rest`` and its host's sleep (``HetComm.host``) replaced by
  counters, the root entering each call 0.1 s late (the others idle meanwhile), ``spin``
  an hour, zero, then not given (the default); per setting, the counts and the data's
  check; then, on this machine (``hetcoll.runtime.clocks.NATIVE``) with ``spin`` not
  given, whether the loop looks again through the process's ``PACE``, the ranks on the
  host and the usable cores;
- ``timeout``: the last rank skips the second call (``timeout=2``, ``on_timeout="raise"``):
  the others print the error (copied to ``OUT.<rank>.err``, see ``_stderr.py``) and end
  the job with ``hc.abort(5)``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
MODE = sys.argv[1]
if MODE.endswith("mixed") and me % 2:
    os.environ["HETCOLL_FAST"] = "0"  # read when the wrapper is made

from _report import write_events  # noqa: E402
from _stderr import copy_stderr  # noqa: E402

from hetcoll import HetComm  # noqa: E402
from hetcoll.errors import CollectiveTimeoutError, MismatchError  # noqa: E402
from hetcoll.platform import Platform, nodes_from_costs  # noqa: E402
from hetcoll.runtime import transport  # noqa: E402

transport.Bare.epochs = 4  # a tag comes back every 4 calls (16384 normally)
KIB = 1024
SEG = 64 * KIB


def pattern(size: int, root: int, salt: int) -> np.ndarray:
    return ((np.arange(size, dtype=np.int64) * 7 + root * 13 + salt) % 251).astype(np.uint8)


def bcast(hc: HetComm, size: int, root: int, salt: int, seg: int | None = SEG) -> bool:
    """One Bcast; whether this rank holds the root's bytes afterwards."""
    want = pattern(size, root, salt)
    buf = want.copy() if me == root else np.full(size, 0xEE, dtype=np.uint8)
    hc.Bcast(buf, root, segment_size=seg)
    return bool(np.array_equal(buf, want))


def data(events: list) -> None:
    platform = Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]))
    sizes = [16 * KIB + 1, 4 * SEG, 4 * SEG + 100, 3 * SEG + 20 * KIB, 1 << 20]
    for algo in ("chain", "binomial"):
        with HetComm(WORLD, platform, algo, timeout=60) as hc:
            for size in sizes:
                for root in range(n):
                    events.append([f"{algo} {size} root {root}", bcast(hc, size, root, size)])
            for seg in (None, 256 * KIB):  # unsegmented: one large chunk
                events.append([f"{algo} 1 MiB seg {seg}", bcast(hc, 1 << 20, n - 1, 3, seg)])
            x = np.arange(40_000, dtype=np.float64) * (me + 1)
            out = np.zeros_like(x)
            hc.Allreduce(x, out)
            want = x / (me + 1) * (n * (n + 1) // 2)
            events.append([f"{algo} Allreduce", bool(np.array_equal(out, want))])


def later(events: list, what: str) -> None:
    """Call 2 differs on rank 1; calls 3-8 agree (call 6 has call 2's tags)."""
    platform = Platform(nodes_from_costs([1e-6] * n))
    with HetComm(WORLD, platform, "chain", timeout=20) as hc:
        for call in range(1, 9):
            root, size = 0, 1 << 20
            if call == 2 and me == 1:
                root, size = (1, size) if what == "root" else (0, size + 4 * SEG)
            try:
                ok = bcast(hc, size, root, call)
                events.append([f"call{call}", "ok", ok])
            except MismatchError as exc:
                events.append([f"call{call}", "MismatchError", str(exc)])
        try:
            hc.close()
            events.append(["close", "ok", True])
        except MismatchError as exc:
            events.append(["close", "MismatchError", str(exc)])


def looks(events: list) -> None:
    """Idle turns within ``spin`` (when given) of the last completion go through the loop's
    ``Rest``, the others through a zero sleep: counted with ``spin`` an hour, zero, and
    not given."""
    from hetcoll.runtime import segments
    from hetcoll.runtime.clocks import Host

    class Counting:  # stands for the loop's Rest and for its host's sleep
        def __init__(self) -> None:
            self.rests = self.naps = 0

        def __call__(self) -> None:  # the Rest
            self.rests += 1
            os.sched_yield()

        def sleep(self, s: float) -> None:
            self.naps += s == 0
            time.sleep(s)

    platform = Platform(nodes_from_costs([1e-6] * n))
    rest = segments.Rest
    try:
        for spin in (3600.0, 0.0, None):
            with HetComm(WORLD, platform, "chain", timeout=60, spin=spin) as hc:
                count = Counting()
                hc.host = Host(time.monotonic_ns, count.sleep, MPI.Request.Testsome)
                segments.Rest = lambda count=count: count  # before the loop is made
                ok = True
                for call in range(3):
                    if me == 0:
                        time.sleep(0.1)  # the others wait in the loop meanwhile
                    ok &= bcast(hc, 8 * SEG, 0, call)
            events.append([f"spin {spin}", ok, count.rests, count.naps])
    finally:
        segments.Rest = rest
    from hetcoll.knobs import usable_cores

    with HetComm(WORLD, platform, "chain", timeout=60) as hc:
        ok = bcast(hc, 8 * SEG, 0, 0)
        runs = [r for r in hc._fast.values() if isinstance(r, segments.SegmentRun)]
        paced = [r.rest is segments.PACE for r in runs]
        events.append(["pace", ok, paced, hc.ranks_on_host, usable_cores()])


def timeout() -> None:
    platform = Platform(nodes_from_costs([1e-6] * n))
    hc = HetComm(WORLD, platform, "chain", timeout=2, on_timeout="raise")
    bcast(hc, 1 << 20, 0, 1)
    if me == n - 1:
        time.sleep(30)  # never takes part in the second call
    try:
        bcast(hc, 1 << 20, 0, 2)
    except CollectiveTimeoutError as exc:
        print(f"rank {me} caught CollectiveTimeoutError: {exc}", file=sys.stderr, flush=True)
        hc.abort(5)


def main() -> None:
    events: list = []
    if MODE == "timeout":
        copy_stderr(sys.argv[2], me)
        timeout()
    elif MODE.startswith("data"):
        data(events)
    elif MODE == "looks":
        looks(events)
    else:
        later(events, MODE.split("-")[0])
    write_events(sys.argv[2], events)


if __name__ == "__main__":
    main()
