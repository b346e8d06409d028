"""MPI test program: hypercube collectives against mpi4py's own.

``mpiexec -n K python -m mpi4py hypercube.py OUT``: for every hypercube planner, on a
pairwise-cost platform (Figueira & Reddi's random link counts, 5-15 ms per pair), every rank
runs ``Allreduce`` (int32/int64, every predefined integer operator, a commutative and a
non-commutative user operator, buffer specs, ``MPI.IN_PLACE``, empty buffers),
``allreduce`` of Python objects, ``Allgather``/``allgather`` and ``barrier`` through
:class:`HetComm`, and the same through mpi4py; then a subset under emulation, and the
modelled (logical) completion times of an emulated barrier and allreduce against the
simulator's.  Rank 0 gathers every rank's verdict per case and writes one JSON record per
case to OUT (JSON lines), so one failing rank never strands the others.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _report import Recorder
from mpi4py import MPI

from hetcoll import HetComm, simulate
from hetcoll.errors import MismatchError
from hetcoll.generators import figueira_platform
from hetcoll.planners import hypercube_planners
from hetcoll.planners.cube_embedding import calc_cost

WORLD = MPI.COMM_WORLD
me, nranks = WORLD.rank, WORLD.size
PREDEFINED = {
    "sum": MPI.SUM,
    "prod": MPI.PROD,
    "max": MPI.MAX,
    "min": MPI.MIN,
    "band": MPI.BAND,
    "bor": MPI.BOR,
    "bxor": MPI.BXOR,
}


def _plus_one(inbuf, inoutbuf, datatype):
    """Commutative and associative: a + b + 1 (element-wise)."""
    dt = np.int32 if datatype == MPI.INT32_T else np.int64
    io = np.frombuffer(inoutbuf, dtype=dt)
    io += np.frombuffer(inbuf, dtype=dt) + 1


def _compose(inbuf, inoutbuf, datatype):
    """Non-commutative and associative: pairs (a, b) are maps x -> a x + b; the result is
    ``in o inout`` (first the right operand, then the left), i.e. ``in op inout``."""
    dt = np.int32 if datatype == MPI.INT32_T else np.int64
    a, io = np.frombuffer(inbuf, dtype=dt), np.frombuffer(inoutbuf, dtype=dt)
    a1, b1 = a[0::2].copy(), a[1::2].copy()
    a2, b2 = io[0::2].copy(), io[1::2].copy()
    io[0::2] = a1 * a2
    io[1::2] = a1 * b2 + b1


PLUS_ONE = MPI.Op.Create(_plus_one, commute=True)
COMPOSE = MPI.Op.Create(_compose, commute=False)


def values(op: str, dtype, count: int, rank: int) -> np.ndarray:
    """Each rank's contribution: distinct per rank and element, no overflow."""
    i = np.arange(count, dtype=np.int64)
    if op == "prod":
        v = np.array([1, 2, -1, 3, 1, -2, 1, 1])[(i + 3 * rank) % 8]
    elif op in ("band", "bor", "bxor"):
        v = ((rank + 1) * 0x2545F491 + i * 0x9E3779B1) & 0x7FFFFFFF
    elif op in ("compose",):
        v = np.where(i % 2 == 0, [1, -1, 2, 1][rank % 4], rank * 3 + i // 2 - 4)
    else:
        v = (rank + 1) * 31 + i * 7 - 50 * (rank % 3)
    return v.astype(dtype)


def check_allreduce(rec: Recorder, hc: HetComm, tag: str) -> None:
    ops = {**PREDEFINED, "plus_one": PLUS_ONE, "compose": COMPOSE}
    for dtype, mtype in ((np.int32, MPI.INT32_T), (np.int64, MPI.INT64_T)):
        for name, op in ops.items():
            count = 10 if name == "compose" else 7  # pairs for compose
            send = values(name, dtype, count, me)
            got = np.full(count, -99, dtype=dtype)
            want = np.zeros(count, dtype=dtype)
            spec = (send, got) if name in PREDEFINED else ([send, mtype], [got, mtype])
            hc.Allreduce(*spec, op=op)
            WORLD.Allreduce([send, mtype], [want, mtype], op=op)
            ok = np.array_equal(got, want)
            rec.case(
                f"{tag} Allreduce {np.dtype(dtype).name} {name}",
                ok,
                "" if ok else f"{got.tolist()} != {want.tolist()}",
            )
    # buffer specs: [buf, count, type] (a prefix), IN_PLACE (commutative and not), empty
    send = values("sum", np.int64, 9, me)
    got = np.full(9, -1, dtype=np.int64)
    want = np.zeros(5, dtype=np.int64)
    hc.Allreduce([send, 5, MPI.INT64_T], [got, 5, MPI.INT64_T], op=MPI.MAX)
    WORLD.Allreduce([send, 5, MPI.INT64_T], [want, MPI.INT64_T], op=MPI.MAX)
    ok = np.array_equal(got[:5], want) and (got[5:] == -1).all()
    rec.case(f"{tag} Allreduce [buf, count, type]", ok, f"{got.tolist()} vs {want.tolist()}")
    for name, op in (("sum", MPI.SUM), ("compose", COMPOSE)):
        buf = values(name, np.int64, 6, me)
        want = np.zeros_like(buf)
        WORLD.Allreduce([buf, MPI.INT64_T], [want, MPI.INT64_T], op=op)
        hc.Allreduce(MPI.IN_PLACE, [buf, MPI.INT64_T], op=op)
        ok = np.array_equal(buf, want)
        rec.case(f"{tag} Allreduce IN_PLACE {name}", ok, f"{buf.tolist()} != {want.tolist()}")
    empty = np.zeros(0, dtype=np.int32)
    hc.Allreduce(empty, np.zeros(0, dtype=np.int32))
    rec.case(f"{tag} Allreduce empty", True)


def check_objects(rec: Recorder, hc: HetComm, tag: str) -> None:
    objects = {
        "int": me * 1000 - 7,
        "tuple": (me, -me, me % 3),
        "list": [me] * (me % 3),
        # pickles longer than the inline block on some ranks: the second allgather runs
        "long list": list(range(me * 40)),
    }
    for kind, obj in objects.items():
        for name, op in (("SUM", MPI.SUM), ("MAX", MPI.MAX)):
            got, want = hc.allreduce(obj, op=op), WORLD.allreduce(obj, op=op)
            ok = got == want and type(got) is type(want)
            rec.case(f"{tag} allreduce {kind} {name}", ok, "" if ok else f"{got!r} != {want!r}")
    got = hc.allreduce(me + 1, op=COMPOSE_PY)
    want = WORLD.allreduce(me + 1, op=COMPOSE_PY)
    rec.case(f"{tag} allreduce int user op", got == want, f"{got!r} != {want!r}")
    for kind, obj in (
        ("small", {"rank": me}),
        ("mixed", "x" * (me * 97)),
        ("none", None),
        ("array", np.arange(me * 30)),
    ):
        got, want = hc.allgather(obj), WORLD.allgather(obj)
        if kind == "array":
            ok = all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
        else:
            ok = got == want
        rec.case(f"{tag} allgather {kind}", ok, "" if ok else f"{got!r} != {want!r}")


def _digits(a, b, datatype=None):
    """A non-commutative associative op on Python ints: decimal concatenation."""
    return int(f"{a}{b}")


COMPOSE_PY = MPI.Op.Create(_digits, commute=False)


def check_allgather(rec: Recorder, hc: HetComm, tag: str) -> None:
    for dtype in (np.int32, np.uint8, np.float64):
        for count in (0, 1, 5):
            send = (np.arange(count) * 10 + me).astype(dtype)
            got = np.full(count * nranks, 77, dtype=dtype)
            want = np.zeros(count * nranks, dtype=dtype)
            hc.Allgather(send, got)
            WORLD.Allgather(send, want)
            ok = np.array_equal(got, want)
            rec.case(f"{tag} Allgather {np.dtype(dtype).name} count={count}", ok)
    buf = np.full(3 * nranks, -1, dtype=np.int32)
    buf[3 * me : 3 * me + 3] = [me, me * 2, me * 3]
    hc.Allgather(MPI.IN_PLACE, [buf, MPI.INT])
    want = np.array([[r, 2 * r, 3 * r] for r in range(nranks)], dtype=np.int32).ravel()
    rec.case(f"{tag} Allgather IN_PLACE", np.array_equal(buf, want), str(buf.tolist()))
    send = np.array([me, -me], dtype=np.int64)
    got = np.zeros(2 * nranks + 3, dtype=np.int64)
    hc.Allgather([send, 2, MPI.INT64_T], [got, 2, MPI.INT64_T])
    want = np.array([[r, -r] for r in range(nranks)], dtype=np.int64).ravel()
    ok = np.array_equal(got[: 2 * nranks], want) and not got[2 * nranks :].any()
    rec.case(f"{tag} Allgather [buf, count, type]", ok, str(got.tolist()))


def check_barrier(rec: Recorder, hc: HetComm, tag: str, late: int) -> None:
    """Rank ``late`` arrives 30 ms after the others: nobody may leave before the last rank
    arrived (on a busy host another rank may arrive later still: the property is the same,
    so the last arrival is whoever's it was; data never depend on timing)."""
    WORLD.Barrier()
    if me == late:
        time.sleep(0.03)
    entry = time.monotonic_ns()  # one host: every rank reads the same clock
    hc.barrier()
    leave = time.monotonic_ns()
    stamps = WORLD.allgather((entry, leave))
    arrived = max(e for e, _ in stamps)
    ok = leave >= arrived
    rec.case(f"{tag} barrier late={late}", ok, f"left {leave}, last arrival {arrived}")


def check_mismatch(rec: Recorder, hc: HetComm, tag: str) -> None:
    """Rank 0 reduces 3 elements, the others 4: every rank raises, nobody hangs, and the
    wrapper still works afterwards."""
    n = 3 if me == 0 else 4
    try:
        hc.Allreduce(np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
        ok, detail = False, "no error"
    except MismatchError as exc:
        ok, detail = "planned different schedules" in str(exc), str(exc)
    out = np.zeros(2, dtype=np.int64)
    hc.Allreduce(np.ones(2, dtype=np.int64), out)
    ok = ok and bool((out == nranks).all())
    rec.case(f"{tag} mismatched sizes raise on every rank", ok, detail)


def check_timing(rec: Recorder, p, hc: HetComm, tag: str, attempts: int = 3) -> None:
    """Under emulation the modelled completion of each rank equals the simulator's arrival,
    and the simulator's makespan is the paper's calc_cost (folds included).

    Modelled times never precede the model; they exceed it only where a busy host made a
    rank late (it woke up after a message's modelled arrival, or after the agreed start),
    which each rank reports (``trace.late``): every attempt's largest error must be
    explained by the sum of the lateness the ranks report (0 on an idle machine, so exact).
    Timing only: the data of these calls are checked apart (``timing data``)."""
    for collective in ("barrier", "allreduce"):
        errors, lateness, early, explained, correct = [], [], 0.0, True, True
        for _ in range(attempts):
            data = np.full(4, me, dtype=np.int64)
            out = np.zeros_like(data)
            start = hc.start_together(20e-3)
            if collective == "barrier":
                hc.barrier()
            else:
                hc.Allreduce(data, out)
                correct = correct and bool((out == sum(range(nranks))).all())
            sched, trace = hc.last_schedule, hc.last_trace
            ops = sched.program().ops.get(hc.node, ())
            recv = [trace.done[i] for i, op in enumerate(ops) if op.kind != "send"]
            logical = (max(recv) - start) / 1e9 if recv else 0.0
            got = WORLD.allgather((hc.node, logical, trace.late / 1e9))
            pred = simulate(p, sched).arrival
            errors.append(max(abs(t - pred[n]) for n, t, _ in got))
            lateness.append(sum(late for *_, late in got))
            early = min(early, min(t - pred[n] for n, t, _ in got))
            explained = explained and errors[-1] <= lateness[-1] + 1e-8
            if errors[-1] < 1e-9:
                break  # exact: nothing more to learn
        makespan = max(pred.values())
        cube = sched.hypercube
        cost = calc_cost(
            np.asarray(p.latency),
            [p.index(x) for x in cube.positions],
            [(p.index(e), p.index(q)) for e, q in cube.folds],
        )
        ok = explained and early > -1e-8 and abs(cost - makespan) < 1e-12
        rec.case(
            f"{tag} timing {collective}",
            ok,
            f"errors {errors} s, lateness {lateness} s, early {early}, makespan {makespan}, "
            f"calc_cost {cost}",
            max_error=min(errors),
            lateness=lateness,
            attempts=len(errors),
            explained=explained,
            early=early,
            makespan=makespan,
            calc_cost=cost,
        )
        if collective == "allreduce":
            rec.case(f"{tag} timing data", correct)


def main() -> None:
    rec = Recorder(sys.argv[1])
    # 5-15 ms per pair: a rank waking up late by less than that leaves the logical times
    # exact, even on a loaded machine (the check compares them to the nanosecond)
    p = figueira_platform(nranks, 3, base_latency=5e-3, seed=nranks)
    for algo in hypercube_planners():
        with HetComm(WORLD, p, cube_algo=algo, timeout=30) as hc:
            assert hc.cube_algo == algo
            check_allreduce(rec, hc, algo)
            check_objects(rec, hc, algo)
            check_allgather(rec, hc, algo)
            for late in sorted({0, nranks - 1}):
                check_barrier(rec, hc, algo, late)
            if nranks > 1:
                rec.case(f"{algo} ran its own plan", hc.last_schedule.algorithm == algo)
                check_mismatch(rec, hc, algo)
        with HetComm(WORLD, p, cube_algo=algo, emulate=True, timeout=30) as hc:
            tag = f"emulated {algo}"
            for name, op in (("sum", MPI.SUM), ("compose", COMPOSE)):
                send = values(name, np.int64, 4, me)
                got, want = np.zeros_like(send), np.zeros_like(send)
                hc.Allreduce([send, MPI.INT64_T], [got, MPI.INT64_T], op=op)
                WORLD.Allreduce([send, MPI.INT64_T], [want, MPI.INT64_T], op=op)
                rec.case(f"{tag} Allreduce int64 {name}", np.array_equal(got, want))
            obj = list(range(me * 40))
            rec.case(f"{tag} allgather objects", hc.allgather(obj) == WORLD.allgather(obj))
            check_barrier(rec, hc, tag, nranks - 1)
            if nranks > 1:
                check_timing(rec, p, hc, tag)
    rec.write()


if __name__ == "__main__":
    main()
