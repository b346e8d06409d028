"""MPI test program: ``Allgather`` and ``Allgatherv`` on trees (a gather to rank 0, then a
broadcast of every block).

``mpiexec -n K python -m mpi4py tree_allgather.py OUT``: for tree planners named per call
(``fnf``, ``rooted_ls``, ``binomial``, ``flat``): int64, float64 and uint8 blocks of 0, 1,
7 and 5 000 elements, a derived (strided) datatype, ``IN_PLACE`` spelled ``MPI.IN_PLACE``
and ``None``, ``Allgatherv`` with counts that differ per rank (zero for some) and
displacements out of rank order with gaps (``IN_PLACE`` too), objects (``allgather``,
``allreduce``), bit for bit against mpi4py's own on the same ranks (sentinel-filled
buffers), and ``last_call`` naming the planner; then ``auto`` under emulation of a platform
with one slow rank (at 5 and 8 ranks a tree is predicted fastest for small blocks), where
the plan it chose runs and its data are mpi4py's; ``allgather`` of objects under ``auto``
(tuning files natively, the model under emulation) running what was chosen for its first
block; ``Iallgather`` with IN_PLACE asking the choice what ``Allgather`` asks.  Rank 0
writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _auto import check_auto_emulated, one_slow
from _report import Recorder
from mpi4py import MPI
from rooted import WORLD, platform
from vectors import layout

from hetcoll import HetComm
from hetcoll.planners.hypercube import hypercube_planners
from hetcoll.runtime.collectives import INLINE
from hetcoll.tuning import Rule, Tuning

TREES = ("fnf", "rooted_ls", "binomial", "flat")


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.tobytes() == b.tobytes()


def planned(hc, algo: str, n: int) -> bool:
    last = hc.last_call
    return n == 1 or (last is not None and last.algorithm == algo and last.root == 0)


def check_allgather(rec: Recorder, hc, comm, algo: str) -> None:
    me, n = comm.rank, comm.size
    rng = np.random.default_rng(me)
    for dtype in (np.int64, np.float64, np.uint8):
        for count in (0, 1, 7, 5000):
            send = rng.integers(0, 250, count).astype(dtype)
            got, want = np.full(count * n, 7, dtype), np.full(count * n, 7, dtype)
            comm.Allgather(send, want)
            hc.Allgather(send, got, algo=algo)
            ok = same(got, want) and planned(hc, algo, n)
            rec.case(f"{algo} {dtype.__name__} count={count}", ok, f"{hc.last_call}")
    for spelling in (MPI.IN_PLACE, None):
        buf = np.full(3 * n, -1, np.int32)
        buf[3 * me : 3 * me + 3] = np.arange(3) + 10 * me
        want = np.zeros(3 * n, np.int32)
        comm.Allgather(buf[3 * me : 3 * me + 3].copy(), want)
        hc.Allgather(spelling, buf, algo=algo)
        rec.case(f"{algo} IN_PLACE {spelling}", same(buf, want) and planned(hc, algo, n))
    strided = MPI.INT.Create_vector(2, 1, 2).Commit()  # two ints, one hole between
    send = np.arange(3, dtype=np.int32) + 100 * me
    got, want = np.full(3 * n, -1, np.int32), np.full(3 * n, -1, np.int32)
    comm.Allgather([send, 1, strided], [want, 1, strided])
    hc.Allgather([send, 1, strided], [got, 1, strided], algo=algo)
    strided.Free()
    rec.case(f"{algo} derived datatype", same(got, want), f"{got} {want}")


def check_allgatherv(rec: Recorder, hc, comm, algo: str) -> None:
    me, n = comm.rank, comm.size
    for shift in (0, 1):
        counts, displs, length = layout(n, shift)
        send = np.arange(counts[me], dtype=np.float64) * 3 + me
        want, got = np.full(length, -1.0), np.full(length, -1.0)
        comm.Allgatherv(send, [want, (counts, displs), MPI.DOUBLE])
        hc.Allgatherv(send, [got, (counts, displs), MPI.DOUBLE], algo=algo)
        ok = same(got, want) and planned(hc, algo, n)
        rec.case(f"{algo} Allgatherv shift={shift}", ok, f"{got} {want} {hc.last_call}")
        for spelling in (MPI.IN_PLACE, None):
            buf = np.full(length, -1.0)
            buf[displs[me] : displs[me] + counts[me]] = send
            hc.Allgatherv(spelling, [buf, counts, displs, MPI.DOUBLE], algo=algo)
            rec.case(f"{algo} Allgatherv shift={shift} IN_PLACE {spelling}", same(buf, want))


def check_objects(rec: Recorder, hc, comm, algo: str) -> None:
    me = comm.rank
    for obj in ({"rank": me, "data": list(range(me))}, "x" * (300 * me + 5)):
        got = hc.allgather(obj, algo=algo)
        rec.case(f"{algo} allgather object", got == comm.allgather(obj), f"{got}")
    got = hc.allreduce(me + 1, algo=algo)
    rec.case(f"{algo} allreduce object", got == comm.allreduce(me + 1), f"{got}")


def check_auto_allgather(rec: Recorder, comm) -> None:
    me, n = comm.rank, comm.size

    def run(c, count: int) -> np.ndarray:
        recv = np.zeros(count * n, np.int64)
        c.Allgather(np.arange(count, dtype=np.int64) + 1000 * me, recv)
        return recv

    check_auto_emulated(rec, comm, run)


def check_objects_auto(rec: Recorder, comm) -> None:
    """``allgather`` of objects under ``auto``: its first allgather (an 8-byte length and
    the pickle's first ``INLINE`` bytes per rank) chosen as an ``Allgather`` of that
    block, and run as chosen: a tree or a hypercube (``last_call`` names it, ``allgather``),
    MPI's own (``last_call`` None); the rest of long pickles chosen as an ``Allgatherv``
    (a tuning file plans or passes each size natively; the model under emulation)."""
    me, n = comm.rank, comm.size
    cubes = set(hypercube_planners())
    objs = ({"rank": me, "data": list(range(me))}, "x" * (300 * me + 5))
    tuned = {  # natively: heads (256 B) planned on fnf, tails fnf up to 1 KiB, then MPI's
        "plan": Tuning(n, {"allgather": (Rule(0, "mpi"), Rule(256, "fnf"), Rule(1024, "mpi"))}),
        "mpi": Tuning(n, {"allgather": (Rule(0, "mpi"),)}),
    }
    for label, tuning in tuned.items():
        with HetComm(comm, platform(n), timeout=60, tuning=tuning) as hc:
            for k, obj in enumerate(objs * 2):  # twice: a repeated call chooses alike
                got, last = hc.allgather(obj), hc.last_call
                ok = got == comm.allgather(obj)
                if n > 1 and label == "mpi":
                    ok = ok and last is None
                elif n > 1:
                    ok = ok and last is not None
                    ok = ok and (last.collective, last.algorithm, last.root) == (
                        "allgather",
                        "fnf",
                        0,
                    )
                rec.case(f"auto native {label} allgather object {k}", ok, f"{last}")
    slow = one_slow(n)
    with HetComm(comm, slow, emulate=True, timeout=60) as hc:
        for k, obj in enumerate(objs):
            got, last = hc.allgather(obj), hc.last_call
            ok = got == comm.allgather(obj)
            if n == 1:
                rec.case(f"objects auto emulated allgather {k}", ok)
                continue
            head = hc.choice("allgather", 8 + INLINE)
            kind = (
                "mpi"
                if head.passes
                else "cube"
                if head.algorithm in cubes
                else "per-root"
                if hc.planner.plans_per_root(head.algorithm)
                else "tree"
            )
            if kind != "mpi":
                root = 0 if kind == "tree" else None
                want = ("allgather", head.algorithm, root)
                ok = (
                    ok and last is not None and (last.collective, last.algorithm, last.root) == want
                )
            rec.case(f"objects auto emulated allgather {k}: {kind}", ok, f"{head} {last}")


def check_iallgather_in_place(rec: Recorder, comm) -> None:
    """``Iallgather`` with IN_PLACE asks the choice what the blocking ``Allgather`` asks
    (the bytes of one rank's block), so both forms run the same plan."""
    me, n = comm.rank, comm.size
    slow = one_slow(n)
    with HetComm(comm, slow, emulate=True, timeout=60) as hc:
        asked = []
        choose = hc.planner.choose

        def recording(platform, call):
            if call["collective"] == "allgather":
                asked.append(call["nbytes"])
            return choose(platform, call)

        hc.planner.choose = recording
        ran = []
        for form in ("blocking", "nonblocking"):
            buf = np.full(3 * n, -1, np.int64)
            buf[3 * me : 3 * me + 3] = np.arange(3) + 10 * me
            if form == "blocking":
                hc.Allgather(MPI.IN_PLACE, buf)
            else:
                hc.Iallgather(MPI.IN_PLACE, buf).Wait()
            last = hc.last_call
            ran.append(None if last is None else last.algorithm)
            want = (np.arange(3)[None, :] + 10 * np.arange(n)[:, None]).ravel()
            rec.case(f"Allgather IN_PLACE {form}", same(buf, want), f"{buf}")
        threaded = MPI.Query_thread() == MPI.THREAD_MULTIPLE
        ok = n == 1 or (threaded and set(asked) == {3 * 8} and ran[0] == ran[1])
        rec.case("Iallgather IN_PLACE asks the blocking call's size", ok, f"{asked} {ran}")


def main() -> None:
    rec = Recorder(sys.argv[1])
    with HetComm(WORLD, platform(WORLD.size), "binomial", timeout=60) as hc:
        for algo in TREES:
            check_allgather(rec, hc, WORLD, algo)
            check_allgatherv(rec, hc, WORLD, algo)
            check_objects(rec, hc, WORLD, algo)
    check_auto_allgather(rec, WORLD)
    check_objects_auto(rec, WORLD)
    check_iallgather_in_place(rec, WORLD)
    rec.write()


if __name__ == "__main__":
    main()
