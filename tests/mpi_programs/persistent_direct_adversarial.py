"""MPI test program: adversarial uses of a persistent ``Bcast`` of one message per tree edge
(runtime/direct.py, a ``DirectRequest``).  ``mpiexec -n K python
persistent_direct_adversarial.py`` (``MPI4PY_RC_THREAD_LEVEL=serialized``: only the check
that a thread level below ``MPI_THREAD_MULTIPLE`` gets MPI's own request).

Every case compares the bytes with what the root holds, bit for bit, over several starts
with the buffer refilled between them, and checks that every rank took the same path:

- several requests (other roots, sizes on both sides of the engine's small messages)
  started back to back before any wait, completed by ``Wait`` in reversed order on odd
  ranks, ``Waitany``, ``Testsome``, ``Test`` loops, ``Testall`` + ``Waitall``;
- ``Waitany`` and ``Testsome`` over a direct request, an engine-run ``Allreduce_init``,
  MPI's own ``Bcast_init`` and a point-to-point pair;
- the requests started in different orders on different ranks (MPICH's own
  ``Bcast_init`` completes these): each start's data must be its own root's - a message
  of one request taken by another's receive would deliver another root's bytes;
- ``Free`` of a request never started and of a completed one, a request collected without
  ``Free``: the others go on; after the wrapper's ``close()`` (or its collection) a start
  raises instead of returning without data; a live request keeps no wrapper alive (with
  the default ``on_timeout="abort"`` too);
- a zero-count buffer; a struct datatype with padding, a resized type (holes between
  elements), a vector of count > 1 and a spec with a displacement (the holes keep their
  values);
- ``check="always"``, emulation and a sliced broadcast: the engine's request on every rank;
- wrappers on ``Split`` sub-communicators whose ranks are ordered otherwise than
  ``COMM_WORLD``'s.

Rank 0 prints one JSON line: ``{"ranks": K, "failures": [...]}``.
"""

from __future__ import annotations

import contextlib
import gc
import weakref

import numpy as np
from _report import check, report
from mpi4py import MPI
from mpi4py.util import dtlib

from hetcoll import HetComm, Platform
from hetcoll.errors import CollectiveTimeoutError, MismatchError
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size


def platform(size: int, uneven: bool = False) -> Platform:
    costs = [1e-6 * (1 + 3 * (r % 3)) if uneven else 1e-6 for r in range(size)]
    return Platform(nodes_from_costs(costs), name="uneven" if uneven else "flat")


def wrapper(comm: MPI.Comm, algo: str, uneven: bool = False, timeout: float = 60) -> HetComm:
    return HetComm(comm, platform(comm.size, uneven), algo, timeout=timeout, on_timeout="raise")


def refill(comm: MPI.Comm, buf: np.ndarray, root: int, seed: int) -> np.ndarray:
    """New data at the root (a sentinel elsewhere); what every rank must get."""
    want = np.random.default_rng(seed).integers(0, 1 << 30, buf.shape).astype(buf.dtype)
    buf[...] = want if comm.rank == root else 0xEE
    return want


def same_path(comm: MPI.Comm, reqs: list, what: str, direct: bool = True) -> None:
    """Every rank made the same kind of request (else a start would deadlock)."""
    names = [type(r).__name__ for r in reqs]
    every = comm.allgather(names)
    check(all(e == names for e in every), f"{what}: the ranks took other paths: {every}")
    if direct and comm.size > 1:
        check(all(k == "DirectRequest" for k in names), f"{what}: {names}")


def back_to_back(algo: str, uneven: bool) -> None:
    hc = wrapper(WORLD, algo, uneven)
    bufs = [np.zeros(s, np.uint8) for s in (7, 70_000, 1, 30_000)]
    roots = [0, n - 1, n // 2, (n + 1) % n]
    reqs = [hc.Bcast_init(b, r) for b, r in zip(bufs, roots, strict=True)]
    what = f"{algo} {'uneven' if uneven else 'flat'}"
    same_path(WORLD, reqs, what)
    for k in range(10):
        pairs = enumerate(zip(bufs, roots, strict=True))
        wants = [refill(WORLD, b, r, 100 * k + m) for m, (b, r) in pairs]
        mode = k % 5
        if mode == 0:
            for r in reqs:
                r.Start()
            for r in reversed(reqs) if me % 2 else reqs:
                r.Wait()
        elif mode == 1:
            MPI.Prequest.Startall(reqs)
            left = list(reqs)
            while left:
                left.pop(MPI.Request.Waitany(left))
        elif mode == 2:
            for r in reqs:
                r.Start()
            done: set[int] = set()
            while len(done) < len(reqs):
                done.update(MPI.Request.Testsome(reqs) or ())
        elif mode == 3:
            for r in reqs:
                r.Start()
            for r in reqs:
                while not r.Test():
                    pass
        else:
            MPI.Prequest.Startall(reqs)
            MPI.Request.Testall(reqs)
            MPI.Request.Waitall(reqs)
        for m, (b, want) in enumerate(zip(bufs, wants, strict=True)):
            check(b.tobytes() == want.tobytes(), f"{what}: start {k} (mode {mode}) buffer {m}")
    for r in reqs:
        r.Free()
    hc.close()


def mixed() -> None:
    """Waitany and Testsome over a direct request, an engine-run one, MPI's own and a pair."""
    hc = wrapper(WORLD, "fnf", uneven=True)
    buf = np.zeros(5000, np.uint8)
    direct = hc.Bcast_init(buf, n - 1)
    send, recv = np.full(10, me + 1.0), np.zeros(10)
    engine = hc.Allreduce_init(send, recv)
    native_buf = np.zeros(100, np.uint8)
    native = WORLD.Bcast_init(native_buf, 0)
    same_path(WORLD, [direct], "mixed")
    for k in range(8):
        want = refill(WORLD, buf, n - 1, 500 + k)
        want_native = refill(WORLD, native_buf, 0, 600 + k)
        token = np.zeros(1, np.int64)
        pair = [
            WORLD.Irecv(token, (me - 1) % n, 5),
            WORLD.Isend(np.full(1, k, np.int64), (me + 1) % n, 5),
        ]
        MPI.Prequest.Startall([direct, engine, native])
        every = [direct, engine, native, *pair]
        if k % 2:
            while every:
                every.pop(MPI.Request.Waitany(every))
        else:
            done: set[int] = set()
            while len(done) < len(every):
                done.update(MPI.Request.Testsome(every) or ())
        check(buf.tobytes() == want.tobytes(), f"mixed {k}: the direct Bcast")
        check(native_buf.tobytes() == want_native.tobytes(), f"mixed {k}: MPI's Bcast_init")
        check(bool(np.all(recv == n * (n + 1) / 2)), f"mixed {k}: the Allreduce ({recv[0]})")
        check(int(token[0]) == k, f"mixed {k}: the point-to-point pair")
    for r in (direct, engine, native):
        r.Free()
    hc.close()


def other_orders() -> None:
    """One request per root, started in rank order on even ranks and in reverse on odd
    ones: every start delivers its own root's bytes (or, should the runs wait for each
    other, the wrapper times out) - never another request's.  ``close()`` may then say
    the ranks' calls differ (hetcoll's rule: the same order on every rank)."""
    hc = wrapper(WORLD, "binomial", timeout=20)
    bufs = [np.zeros(10, np.uint8) for _ in range(n)]
    reqs = [hc.Bcast_init(bufs[r], r) for r in range(n)]
    same_path(WORLD, reqs, "other orders")
    timed_out = False
    for k in range(4):
        wants = [refill(WORLD, bufs[r], r, 800 + 10 * k + r) for r in range(n)]
        order = list(range(n)) if me % 2 == 0 else list(range(n))[::-1]
        try:
            for r in order:
                reqs[r].Start()
            if k % 2:
                MPI.Request.Waitall(reqs)
            else:
                for r in order:
                    reqs[r].Wait()
        except CollectiveTimeoutError:
            timed_out = True
            break
        for r in range(n):
            check(bufs[r].tobytes() == wants[r].tobytes(), f"other orders {k}: root {r}")
    WORLD.Barrier()
    if timed_out:
        hc._release()  # this rank's part alone: the wrapper is unusable
        return
    for r in reqs:
        r.Free()
    with contextlib.suppress(MismatchError):  # hetcoll's rule: the same order everywhere
        hc.close()


def freed_and_collected() -> None:
    hc = wrapper(WORLD, "binomial")
    never, done, kept = (np.zeros(100, np.uint8) for _ in range(3))
    r_never = hc.Bcast_init(never, 0)
    r_done = hc.Bcast_init(done, n - 1)
    r_kept = hc.Bcast_init(kept, n // 2)
    r_never.Free()
    check(r_never == MPI.REQUEST_NULL, "a freed request is MPI.REQUEST_NULL")
    want = refill(WORLD, done, n - 1, 1)
    r_done.Start()
    r_done.Wait()
    check(done.tobytes() == want.tobytes(), "the request freed once completed")
    r_done.Free()
    collected = np.zeros(10, np.uint8)
    r_collected = hc.Bcast_init(collected, 0)
    want = refill(WORLD, collected, 0, 2)
    r_collected.Start()
    r_collected.Wait()
    check(collected.tobytes() == want.tobytes(), "the request collected later")
    del r_collected
    gc.collect()
    for k in range(4):
        want = refill(WORLD, kept, n // 2, 10 + k)
        r_kept.Start()
        r_kept.Wait()
        check(kept.tobytes() == want.tobytes(), f"the request kept, start {k}")
    hc.close()
    raises_after(r_kept, kept, "after close()")
    r_kept.Free()  # a request the wrapper freed: nothing to do
    # a wrapper collected while its request lives: the request's starts raise too
    buf = np.zeros(50, np.uint8)
    req = wrapper(WORLD, "binomial").Bcast_init(buf, 0)
    gc.collect()
    WORLD.Barrier()
    raises_after(req, buf, "after the wrapper's collection")
    # the same with the default on_timeout ("abort"): the request (the progress thread's
    # record of it) holds no strong reference to its wrapper
    hc = HetComm(WORLD, platform(n), "binomial", timeout=60)
    req = hc.Bcast_init(buf, 0)
    want = refill(WORLD, buf, 0, 4)
    req.Start()
    req.Wait()
    check(buf.tobytes() == want.tobytes(), "on_timeout='abort': the start")
    alive = weakref.ref(hc)
    del hc
    gc.collect()
    check(alive() is None, "on_timeout='abort': a live request keeps its wrapper alive")
    WORLD.Barrier()
    if alive() is None:
        raises_after(req, buf, "after the collection of a wrapper with on_timeout='abort'")
    else:
        alive().close()


def raises_after(req, buf: np.ndarray, what: str) -> None:
    """A start of ``req`` raises (MPI: an invalid request) instead of completing with no
    data moved."""
    refill(WORLD, buf, 0, 3)
    try:
        req.Start()
        req.Wait()
        check(False, f"a start {what} returned")
    except MPI.Exception:
        pass


def zero_count() -> None:
    hc = wrapper(WORLD, "binomial")
    empty, four = np.zeros(0, np.uint8), np.zeros(4, np.uint8)
    reqs = [hc.Bcast_init(empty, 0), hc.Bcast_init([four, 0, MPI.INT], n - 1)]
    same_path(WORLD, reqs, "zero count", direct=False)
    for k in range(3):
        MPI.Prequest.Startall(reqs)
        MPI.Request.Waitall(reqs)
        reqs[k % 2].Start()
        reqs[k % 2].Wait()
    check(four.tobytes() == bytes(4), "zero count: nothing written")
    for r in reqs:
        r.Free()
    hc.close()


def datatypes() -> None:
    hc = wrapper(WORLD, "binomial", uneven=True)
    padded = np.dtype([("a", np.int8), ("b", np.float64), ("c", np.int32)], align=True)
    struct = dtlib.from_numpy_dtype(padded).Commit()
    records = np.zeros(37, padded)
    spaced = MPI.INT32_T.Create_resized(0, 12).Commit()  # one int32 every 12 bytes
    ints = np.full(30, -1, np.int32)
    vector = MPI.INT16_T.Create_vector(3, 2, 5).Commit()  # extent 12 int16
    shorts = np.full(4 * 12 + 10, -1, np.int16)
    inside = np.zeros(shorts.shape, bool)
    for c in range(4):
        for block in range(3):
            inside[c * 12 + block * 5 : c * 12 + block * 5 + 2] = True
    displaced = np.full(64, -1, np.int32)
    reqs = [
        hc.Bcast_init([records, 37, struct], n - 1),
        hc.Bcast_init([ints, 10, spaced], 0),
        hc.Bcast_init([shorts, 4, vector], n // 2),
        hc.Bcast_init([displaced, (20, 8), MPI.INT32_T], 0),
    ]
    same_path(WORLD, reqs, "datatypes")
    for k in range(6):
        rng = np.random.default_rng(k)
        want = np.zeros(37, padded)
        want["a"] = rng.integers(-100, 100, 37)
        want["b"] = rng.random(37)
        want["c"] = rng.integers(0, 1 << 30, 37)
        if me == n - 1:
            records[...] = want
        else:
            records.view(np.uint8)[:] = 0xEE
        want_ints = rng.integers(0, 1 << 30, 10).astype(np.int32)
        ints[:] = -1
        if me == 0:
            ints[::3] = want_ints
        want_shorts = rng.integers(-1000, 1000, shorts.shape).astype(np.int16)
        shorts[:] = -1
        if me == n // 2:
            shorts[inside] = want_shorts[inside]
        want_displaced = rng.integers(0, 1 << 30, 20).astype(np.int32)
        displaced[:] = -1
        if me == 0:
            displaced[8:28] = want_displaced
        if k % 2:
            MPI.Prequest.Startall(reqs)
            MPI.Request.Waitall(reqs)
        else:
            for r in reqs:
                r.Start()
            for r in reqs:
                r.Wait()
        check(
            all(np.array_equal(records[f], want[f]) for f in "abc"),
            f"datatypes {k}: the struct with padding",
        )
        check(
            np.array_equal(ints[::3], want_ints)
            and bool((ints[1::3] == -1).all())
            and bool((ints[2::3] == -1).all()),
            f"datatypes {k}: the resized type",
        )
        check(
            np.array_equal(shorts[inside], want_shorts[inside])
            and bool((shorts[~inside] == -1).all()),
            f"datatypes {k}: the vector",
        )
        check(
            np.array_equal(displaced[8:28], want_displaced)
            and bool((displaced[:8] == -1).all())
            and bool((displaced[28:] == -1).all()),
            f"datatypes {k}: the displacement",
        )
    for r in reqs:
        r.Free()
    for t in (struct, spaced, vector):
        t.Free()
    hc.close()


def sub_communicators() -> None:
    splits = [(me % 2, -me), (0, (me * 3) % n if n in (2, 4) else -me)]
    for color, key in splits:
        sub = WORLD.Split(color, key)
        hc = wrapper(sub, "fnf", uneven=True)
        buf = np.zeros(3000, np.uint8)
        reqs = [hc.Bcast_init(buf, r) for r in range(sub.size)]
        same_path(sub, reqs, f"Split({color}, {key})")
        for k in range(2 * sub.size):
            root = k % sub.size
            want = refill(sub, buf, root, 40 + k)
            reqs[root].Start()
            reqs[root].Wait()
            check(buf.tobytes() == want.tobytes(), f"Split({color}, {key}) root {root}, {k}")
        for r in reqs:
            r.Free()
        hc.close()
        sub.Free()


def engine_paths() -> None:
    """What the direct path must not take, on every rank alike: ``check="always"`` (a
    per-call round), emulation (the engine's timing), a sliced broadcast (several chunks):
    the engine's request, the same bytes."""
    cases = {
        'check="always"': {"check": "always"},
        "emulated": {"emulate": True, "time_scale": 0.01},
        "sliced": {"segment_size": 1000},
    }
    for what, settings in cases.items():
        hc = HetComm(WORLD, platform(n), "binomial", timeout=60, on_timeout="raise", **settings)
        buf = np.zeros(5000, np.uint8)
        req = hc.Bcast_init(buf, n - 1)
        same_path(WORLD, [req], what, direct=False)
        check(n == 1 or type(req).__name__ == "PersistentRequest", f"{what}: {type(req)}")
        for k in range(3):
            want = refill(WORLD, buf, n - 1, 90 + k)
            req.Start()
            req.Wait()
            check(buf.tobytes() == want.tobytes(), f"{what}, start {k}")
        req.Free()
        hc.close()


def below_multiple() -> None:
    """Below MPI_THREAD_MULTIPLE a Bcast_init is MPI's own request."""
    check(MPI.Query_thread() < MPI.THREAD_MULTIPLE, "the thread level")
    hc = wrapper(WORLD, "binomial")
    buf = np.zeros(1000, np.uint8)
    req = hc.Bcast_init(buf, n - 1)
    check(type(req) is MPI.Prequest, f"below THREAD_MULTIPLE: {type(req).__name__}")
    for k in range(3):
        want = refill(WORLD, buf, n - 1, 70 + k)
        req.Start()
        req.Wait()
        check(buf.tobytes() == want.tobytes(), f"below THREAD_MULTIPLE, start {k}")
    req.Free()
    hc.close()


def main() -> None:
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        below_multiple()
    else:
        for algo in ("binomial", "fnf", "chain"):
            for uneven in (False, True):
                back_to_back(algo, uneven)
        mixed()
        other_orders()
        freed_and_collected()
        zero_count()
        engine_paths()
        datatypes()
        sub_communicators()
    report()


if __name__ == "__main__":
    main()
