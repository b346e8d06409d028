"""MPI test program: a persistent ``Bcast`` of one message per tree edge runs as MPI's own
point-to-point requests (runtime/direct.py).  ``mpiexec -n K python persistent_direct.py``.

Every case compares the bytes with mpi4py's own ``Bcast`` on ``COMM_WORLD``, the buffer
refilled between starts, and checks that the start ran on the point-to-point requests (a
``DirectRequest``; the engine compiled nothing for it; ``last_call`` and the wrapper's call
count as for any planned call):

- ``binomial``, ``fnf`` and ``chain`` on a flat and an uneven platform, every root, 1 byte,
  1000 bytes, 100 000 bytes (past the engine's small messages: the sends one at a time)
  and a strided datatype (the holes left alone), 12 starts each: ``Start`` + ``Wait``,
  ``Startall`` + ``Wait``, ``Start`` + ``Test`` in a loop, ``Startall`` + ``Waitall``;
- ``Startall`` of three of them (other roots, other buffers) and ``Waitall`` together with
  a point-to-point pair and MPI's own ``Bcast_init`` on ``COMM_WORLD``, then waited one by
  one in another order on odd ranks; a planned blocking ``Bcast`` and an ``Ibcast`` between
  a start and its wait;
- ``Free``: a freed request is ``MPI.REQUEST_NULL`` and no longer looked for; one freed
  while active still runs (before the next blocking call); ``close()`` agrees;
- a root that never starts: every other rank's ``Wait`` raises
  :class:`~hetcoll.errors.CollectiveTimeoutError` within the timeout (none is left posted).

Rank 0 prints one JSON line: ``{"ranks": K, "failures": [...]}``.
"""

from __future__ import annotations

import time
import zlib

import numpy as np
from _report import check, report
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.errors import CollectiveTimeoutError
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
STARTS = 12


def platforms() -> dict[str, Platform]:
    flat = Platform(nodes_from_costs([1e-6] * n), name="flat")
    uneven = Platform(nodes_from_costs([1e-6 * (1 + 3 * (r % 3)) for r in range(n)]), name="uneven")
    return {"flat": flat, "uneven": uneven}


def refill(buf: np.ndarray, root: int, seed: int) -> np.ndarray:
    """New data at the root (a sentinel elsewhere); mpi4py's result."""
    rng = np.random.default_rng(seed)
    want = rng.integers(0, 1 << 30, buf.shape).astype(buf.dtype)
    WORLD.Bcast(want, root)  # every rank the root's bytes (all ranks draw alike anyway)
    buf[...] = want if me == root else 0xEE
    return want


def direct(hc: HetComm, req, what: str) -> None:
    """The start ran on MPI's point-to-point requests: a DirectRequest, nothing compiled
    for the engine (before: a PersistentRequest run by the engine's fast path)."""
    check(n == 1 or type(req).__name__ == "DirectRequest", f"{what}: {type(req).__name__}")
    check(n == 1 or not hc._fast, f"{what}: the engine compiled {len(hc._fast)} plans")


def complete(req, k: int) -> None:
    if k % 4 == 0:
        req.Start()
        req.Wait()
    elif k % 4 == 1:
        MPI.Prequest.Startall([req])
        req.Wait()
    elif k % 4 == 2:
        req.Start()
        while not req.Test():
            pass
    else:
        MPI.Prequest.Startall([req])
        MPI.Request.Waitall([req])


def many_starts(algo: str, name: str, platform: Platform) -> None:
    hc = HetComm(WORLD, platform, algo, timeout=60, on_timeout="raise")
    calls = 0
    for root in range(n):
        for size in (1, 1000, 100_000):
            buf = np.zeros(size, np.uint8)
            req = hc.Bcast_init(buf, root)
            for k in range(STARTS):
                want = refill(buf, root, zlib.crc32(f"{algo} {name} {root} {size} {k}".encode()))
                complete(req, k)
                calls += 1
                check(buf.tobytes() == want.tobytes(), f"{algo} {name} root {root} {size} B {k}")
            record = hc.last_call
            check(
                n == 1
                or (record.collective, record.algorithm, record.root) == ("Bcast_init", algo, root),
                f"{algo} {name} root {root} {size} B: last_call {record}",
            )
            direct(hc, req, f"{algo} {name} root {root} {size} B")
            req.Free()
            check(req == MPI.REQUEST_NULL, "a freed request is MPI.REQUEST_NULL")
        # a strided datatype: every other int32 travels, the holes keep their values
        vector = MPI.INT32_T.Create_vector(50, 1, 2).Commit()
        strided = np.full(100, -1, np.int32)
        req = hc.Bcast_init([strided, 1, vector], root)
        for k in range(4):
            want = refill(strided[::2], root, 7000 + 10 * root + k)
            strided[1::2] = -1
            complete(req, k)
            calls += 1
            check(strided[::2].tobytes() == want.tobytes(), f"{algo} {name} strided {root} {k}")
            check(bool((strided[1::2] == -1).all()), f"{algo} {name} strided {root}: the holes")
        direct(hc, req, f"{algo} {name} strided root {root}")
        req.Free()
        vector.Free()
    check(n == 1 or hc._seq == calls, f"{algo} {name}: {hc._seq} calls counted, not {calls}")
    check(n == 1 or hc._progress.armed == 0, f"{algo} {name}: requests still looked for")
    hc.close()  # compares every rank's calls: they agree


def together() -> None:
    """Several started at once with MPI's own requests beside them, and blocking and
    nonblocking calls between a start and its wait."""
    hc = HetComm(WORLD, platforms()["uneven"], "fnf", timeout=60, on_timeout="raise")
    bufs = [np.zeros(s, np.uint8) for s in (1, 3000, 40_000)]
    roots = [0, n - 1, n // 2]
    reqs = [hc.Bcast_init(b, r) for b, r in zip(bufs, roots, strict=True)]
    native_buf = np.zeros(16, np.uint8)
    native = WORLD.Bcast_init(native_buf, n - 1)
    for k in range(6):
        wants = [
            refill(b, r, 9000 + 10 * k + m)
            for m, (b, r) in enumerate(zip(bufs, roots, strict=True))
        ]
        want_native = refill(native_buf, n - 1, 9500 + k)
        token = np.zeros(1, np.int64)
        p2p = [
            WORLD.Irecv(token, (me - 1) % n, 78),
            WORLD.Isend(np.full(1, 1000 * k + me, np.int64), (me + 1) % n, 78),
        ]
        order = reqs[k % 3 :] + reqs[: k % 3]  # every rank the same order
        MPI.Prequest.Startall([*order, native])
        if k % 2 == 0:
            MPI.Request.Waitall([p2p[0], *order, native, p2p[1]])
        else:
            every = [*order, native, *p2p]
            for req in reversed(every) if me % 2 else every:
                req.Wait()
        check(int(token[0]) == 1000 * k + (me - 1) % n, f"together {k}: the point-to-point pair")
        check(native_buf.tobytes() == want_native.tobytes(), f"together {k}: MPI's Bcast_init")
        for m, (b, want) in enumerate(zip(bufs, wants, strict=True)):
            check(b.tobytes() == want.tobytes(), f"together {k}: broadcast {m}")
    # a blocking and a nonblocking planned call between a start and its wait
    c, d = np.zeros(5000, np.uint8), np.zeros(700, np.uint8)
    for k in range(3):
        wa = refill(bufs[1], roots[1], 9700 + k)
        wc, wd = refill(c, 0, 9710 + k), refill(d, n - 1, 9720 + k)
        reqs[1].Start()
        hc.Bcast(c, 0)
        ib = hc.Ibcast(d, n - 1)
        MPI.Request.Waitall([ib, reqs[1]])
        for got, want, what in ((bufs[1], wa, "persistent"), (c, wc, "Bcast"), (d, wd, "Ibcast")):
            check(got.tobytes() == want.tobytes(), f"between {k}: {what}")
    for req in reqs:
        direct_type = n == 1 or type(req).__name__ == "DirectRequest"
        check(direct_type, f"together: {type(req).__name__}")
        req.Free()
    native.Free()
    # one freed while active still runs, before the next blocking call
    buf = np.zeros(333, np.uint8)
    req = hc.Bcast_init(buf, n - 1)
    want = refill(buf, n - 1, 9900)
    req.Start()
    req.Free()
    hc.Barrier()
    check(buf.tobytes() == want.tobytes(), "freed while active")
    check(n == 1 or hc._progress.armed == 0, f"{hc._progress.armed} requests still looked for")
    hc.close()


def root_never_starts() -> None:
    """Rank 0 makes the request but never starts it: every other rank's Wait raises
    CollectiveTimeoutError within the timeout, and its receive is cancelled."""
    if n == 1:
        return
    hc = HetComm(WORLD, platforms()["flat"], "binomial", timeout=2, on_timeout="raise")
    buf = np.zeros(10, np.uint8)
    req = hc.Bcast_init(buf, 0)
    if me != 0:
        t0 = time.monotonic()
        try:
            req.Start()
            req.Wait()
            check(False, "a Wait without the root's start returned")
        except CollectiveTimeoutError as exc:
            took = time.monotonic() - t0
            check(1.5 < took < 30, f"timed out after {took:.1f} s")
            check("Bcast" in str(exc), f"the error names the call: {exc}")
    WORLD.Barrier()
    try:
        req.Free()
    except MPI.Exception as exc:
        check(False, f"Free after the timeout: {exc}")
    hc._release()  # this rank's part alone: the others' wrappers are unusable
    check(req == MPI.REQUEST_NULL, "freed")


def main() -> None:
    for name, platform in platforms().items():
        for algo in ("binomial", "fnf", "chain"):
            many_starts(algo, name, platform)
    together()
    root_never_starts()
    report()


if __name__ == "__main__":
    main()
