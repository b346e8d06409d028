"""MPI test program: ``mpiexec -n K python -m mpi4py collectives.py MODE OUT``.

Batches many cases into one launch.  Every rank checks what it received against the
pattern it expects; rank 0 gathers every rank's verdict and writes one JSON record per case
to OUT (a JSON-lines file), so a failing rank never strands the others in a collective.

Modes: ``delivery`` (every planner x root x size x dtype, objects, multicasts, pipelining,
with and without emulation), ``mismatch`` (rank 1 loads another platform), ``timeout``
(the last rank skips a collective; the job ends in ``MPI_Abort``, stderr is copied to
``OUT.<rank>.err``, see ``_stderr.py``).
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import time

import numpy as np
from _report import Recorder
from _stderr import copy_stderr
from mpi4py import MPI

from hetcoll import HetcollError, HetComm, PlannerError, Platform
from hetcoll.planners import REGISTRY
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, nranks = WORLD.rank, WORLD.size


def platform(scale: float = 1e-6, seed: int = 0) -> Platform:
    """nranks nodes with distinct speeds (fast and slow interleaved so rank order is blind)."""
    rng = np.random.default_rng(seed)
    t_ini = rng.choice([1.0, 2.0, 3.0, 5.0], size=nranks) * scale
    return Platform(nodes_from_costs(t_ini, 1e-9), model="tini", name=f"test{nranks}")


def pattern(nbytes: int, seed: int) -> np.ndarray:
    return ((np.arange(nbytes, dtype=np.int64) * 31 + seed * 7 + 3) % 251).astype(np.uint8)


def digest(data) -> str:
    return hashlib.blake2b(bytes(memoryview(data).cast("B")), digest_size=8).hexdigest()


def tree_planners() -> list[str]:
    return sorted(
        name
        for name, info in REGISTRY.items()
        if "bcast" in info.collectives and (info.max_members is None or info.max_members >= nranks)
    )


def check_bytes(rec: Recorder, hc: HetComm, name: str, root: int, nbytes: int, **kw) -> None:
    expected = pattern(nbytes, root + nbytes)
    buf = expected.copy() if me == root else np.full(nbytes, 0xEE, dtype=np.uint8)
    # the class's method: a wrapper that gives every call to MPI (auto natively on one
    # host) has mpi4py's own Bcast on the instance, which takes no segment_size=
    HetComm.Bcast(hc, buf, root, **kw)
    ok = bool(np.array_equal(buf, expected))
    rec.case(name, ok, "" if ok else f"digest {digest(buf)} != {digest(expected)}")


def delivery(rec: Recorder) -> None:
    p = platform()
    for algo in tree_planners():
        with HetComm(WORLD, p, algo, timeout=30) as hc:
            for root in range(nranks):
                for nbytes in (0, 1, 7, 1000):
                    check_bytes(rec, hc, f"Bcast {algo} root={root} n={nbytes}", root, nbytes)
            # many segments, odd sizes, a segment size that does not divide the message; a
            # planner may refuse segments (optimal is exact for whole messages only): then
            # every rank gets the PlannerError before any message
            try:
                hc.schedule(0, None, 4099, 1024)
                pipelines = True
            except PlannerError:
                pipelines = False
                rec.case(f"Bcast {algo} pipelined refused", True)
            for nbytes, seg in ((4099, 1024), (10_000, 999), (5, 1)) if pipelines else ():
                root = nbytes % nranks
                check_bytes(
                    rec,
                    hc,
                    f"Bcast {algo} pipelined n={nbytes} seg={seg}",
                    root,
                    nbytes,
                    segment_size=seg,
                )
            # NumPy arrays of several dtypes and mpi4py buffer specs
            for dtype in (np.int32, np.float64, np.complex128, np.bool_, np.int8):
                root = nranks - 1
                full = np.arange(101).astype(dtype) * (3 if dtype is not np.bool_ else 1)
                a = full.copy() if me == root else np.zeros_like(full)
                hc.Bcast(a, root)
                rec.case(
                    f"Bcast {algo} dtype={np.dtype(dtype).name}", bool(np.array_equal(a, full))
                )
            full = np.linspace(0, 1, 33)
            a = full.copy() if me == 1 else np.zeros(33)
            hc.Bcast([a, MPI.DOUBLE], 1)
            b = full.copy() if me == 1 else np.zeros(33)
            hc.Bcast([b, 20, MPI.DOUBLE], 1)
            ok = np.array_equal(a, full) and np.array_equal(b[:20], full[:20])
            ok = ok and (me == 1 or not b[20:].any())
            rec.case(f"Bcast {algo} buffer specs", bool(ok))
            # Python objects
            for root, obj in (
                (0, {"a": [1, 2.5, "x"], "b": None}),
                (nranks - 1, list(range(1000))),
                (1 % nranks, b""),
                (2 % nranks, np.arange(7.0)),
            ):
                got = hc.bcast(obj if me == root else None, root)
                ok = pickle.dumps(got) == pickle.dumps(obj)
                rec.case(f"bcast {algo} object root={root} {type(obj).__name__}", ok)
            # multicast: non-members return at once and keep their buffer
            members = [m for m in range(nranks) if m % 2 == 0 or m == nranks - 1]
            for root in (0, nranks - 1):
                expected = pattern(333, root)
                buf = expected.copy() if me == root else np.full(333, 0xEE, dtype=np.uint8)
                hc.multicast(buf if me in members else None, root, members)
                ok = np.array_equal(buf, expected) if me in members else bool((buf == 0xEE).all())
                rec.case(f"multicast {algo} root={root}", bool(ok))
            # several multicasts at once, one buffer each
            groups = [(0, None), (nranks - 1, [1, 2 % nranks]), (1, [0, nranks - 1])]
            bufs, specs = [], []
            for g, (root, mem) in enumerate(groups):
                members_g = set(range(nranks)) if mem is None else set(mem) | {root}
                expected = pattern(257, 100 + g)
                if me == root:
                    b = expected.copy()
                elif me in members_g:
                    b = np.zeros(257, dtype=np.uint8)
                else:
                    b = None
                bufs.append((b, expected, members_g))
                specs.append((b, root, mem))
            hc.multicasts(specs)
            ok = all(b is None or np.array_equal(b, e) for b, e, m in bufs if me in m)
            rec.case(f"multicasts {algo}", bool(ok))
            # every rank planned the same schedule (the agreement check passed; compare too)
            sched = hc.schedule(2 % nranks, None, 4096, 1024 if pipelines else None)
            mine = hashlib.sha256(sched.to_json(indent=None).encode()).hexdigest()
            every = WORLD.allgather(mine)
            rec.case(f"agreement {algo}", len(set(every)) == 1, algorithm=algo)
    # emulation on (tiny costs, so quick): the same bytes arrive
    for algo in ("binomial", "fnf"):
        with HetComm(WORLD, platform(scale=20e-6), algo, emulate=True, timeout=30) as hc:
            for root, nbytes, seg in ((0, 0, None), (3 % nranks, 1, None), (1, 5000, 1024)):
                check_bytes(
                    rec,
                    hc,
                    f"emulated Bcast {algo} root={root} n={nbytes}",
                    root,
                    nbytes,
                    segment_size=seg,
                )
            t0 = time.monotonic()
            hc.Bcast(np.zeros(1, np.uint8), 0)
            elapsed = time.monotonic() - t0
            # The broadcast cannot beat the model: the root sends at least once (t_ini >= 20us)
            rec.case(f"emulated delay {algo}", me != 0 or elapsed >= 20e-6, f"{elapsed}")
    # several multicasts planned jointly (order across trees on shared senders)
    with HetComm(WORLD, platform(), "fnf_joint", timeout=30) as hc:
        for emulate_note, groups in (
            ("", [(0, None), (nranks - 1, [1, 2 % nranks]), (1, [0, nranks - 1])]),
            (" all sources", [(r, None) for r in range(nranks)]),
        ):
            bufs, specs = [], []
            for g, (root, mem) in enumerate(groups):
                members_g = set(range(nranks)) if mem is None else set(mem) | {root}
                expected = pattern(301, 200 + g)
                if me == root:
                    b = expected.copy()
                else:
                    b = np.zeros(301, dtype=np.uint8) if me in members_g else None
                bufs.append((b, expected, members_g))
                specs.append((b, root, mem))
            hc.multicasts(specs)
            ok = all(b is None or np.array_equal(b, e) for b, e, m in bufs if me in m)
            ok = ok and hc.last_schedule.order is not None
            rec.case(f"multicasts fnf_joint{emulate_note}", bool(ok))
    with HetComm(WORLD, platform(), "fnf", timeout=30) as hc:
        obj = hc.bcast({"size": nranks} if me == 0 else None, 0)
        rec.case("context manager", obj == {"size": nranks})
    rec.case("freed", hc.comm == MPI.COMM_NULL)


def mismatch(rec: Recorder) -> None:
    p = platform(seed=1 if me == 1 else 0)
    try:
        HetComm(WORLD, p, "fnf", timeout=20, on_timeout="raise")
    except HetcollError as exc:
        sys.stderr.write(f"hetcoll: error: {exc}\n")  # one write: lines of ranks don't mix
        sys.stderr.flush()
        sys.exit(2)
    print("no error", file=sys.stderr, flush=True)


def timeout(rec: Recorder) -> None:
    hc = HetComm(WORLD, platform(), "binomial", timeout=2.0)
    buf = np.zeros(10, dtype=np.uint8)
    root = nranks - 1
    hc.Bcast(buf, root)  # plans and agrees on every rank
    if me == root:
        time.sleep(8)  # the root never starts the second broadcast
        return
    hc.Bcast(buf, root)
    print("no timeout", file=sys.stderr, flush=True)


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    rec = Recorder(out)
    if mode == "timeout":
        copy_stderr(out, WORLD.rank)
    {"delivery": delivery, "mismatch": mismatch, "timeout": timeout}[mode](rec)
    rec.write()


if __name__ == "__main__":
    main()
