"""MPI side of ``benchmarks/mpi/bench_mpich_algorithms.py``: in one job, plain mpi4py
``Allreduce`` and ``Allgather`` under MPICH's own selection (``auto``), under each of its
algorithms forced for the call through its control variables
(:meth:`hetcoll.runtime.mpich_cvars.Algorithms.forcing`), and the default ``HetComm``
given the tuning file ``hetcoll tune --candidates 0 --mpich-algorithms`` would write for
these ranks (measured first, in this job, :func:`hetcoll.jobs.tune.tune_job`).

``mpiexec -n K python -m mpi4py mpich_algorithms.py SIZES REPEAT ROUNDS CONFIRM OUT``
(SIZES: result sizes ``M`` in bytes, comma-separated: an allreduce's vector of ``M / 8``
int64, an allgather's ``M / K`` bytes per rank; REPEAT: the fewest calls in a loop (a loop
lasts about :data:`LOOP` seconds of MPICH's own, :func:`loop_calls`), after one untimed
warm-up call of each variant; ROUNDS: selection rounds; CONFIRM: confirmation rounds).

Per collective and size, first the **selection rounds**: every variant runs in each round,
one after the other, the order rotated by one from round to round and reversed every other
round (no variant always first or always after the same one); the best forced algorithm is
the one of least median time over them (:func:`selected`).  Then the **confirmation
rounds**, fresh ones, the same way but of the :func:`contenders` only: the ``HetComm``, the
same call run plainly (the forced algorithm its tuning file chose, or MPICH's own
selection), the best forced algorithm of the selection rounds and MPICH's own selection.
A variant's time in a round is a program's loop of its calls (:func:`_loop`: a barrier,
then call, check, call, check, ...): the seconds per call its slowest rank spent in the
calls, what a program's loop of calls sees, and what the tune measures
(:func:`hetcoll.jobs.tune.measure_calls`: a loop of calls).  Not single calls each between
barriers: with more ranks than cores they rank the algorithms unlike a loop, whose ranks
start each call as the last one left them (docs/runtime.md).  Every variant
calls on the same buffers.  Every result is checked, read and never written between calls
(the next call's input is written instead, :func:`_calls`); rank 0 writes the JSON document:
``{"ranks", "sizes", "repeat", "calls": {collective: [calls in a loop per size]}, "rounds",
"confirm_rounds", "times": {collective: {variant:
[[seconds per selection round] per size]}}, "confirmed": {collective: [{"best", "same",
"times": {contender: [seconds per confirmation round]}} per size]}, "choices":
{collective: [what HetComm ran per size]}, "tuning": its rules, "tune": {collective: [per
size what the tune measured: its calls per measurement, winner, confirmation, runner-up
and each forced algorithm's speed-ups over MPI's own]}, "ok", "load"}``; the variants are
``auto``, the forced algorithms' names and ``hetcomm``.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
from mpi4py import MPI

from hetcoll.jobs.tune import rotation
from hetcoll.runtime.mpich_cvars import algorithms, why_not

WORLD = MPI.COMM_WORLD
COLLECTIVES = ("allreduce", "allgather")
#: a loop lasts about this many seconds of MPICH's own (the tune's ``loop``) ...
LOOP = 0.02
#: ... in at most this many calls
MOST_CALLS = 1000


def _calls(comms: dict, m: int):
    """``{variant: {collective: (call, check)}}`` at result size ``m``, a variant per
    communicator of ``comms`` (mpi4py's, a HetComm), all on the same buffers: each call
    runs once, each check says its last result was right and writes the next call's input.
    One set of buffers, so that no variant is timed on buffers the others leave colder in
    the caches.

    A check reads the result and never writes the result buffer: between two calls the
    ranks do what a program does, use the result and write the next input, as the tune's
    rounds measure them (:func:`hetcoll.jobs.tune.measure_calls`: nothing written between
    its calls).  Writing the result buffer between calls changes the ranking: on 2 ranks
    at 32 KiB it makes MPICH's own allreduce 9-34 % faster and ``recursive_doubling``
    0.88-1.10 of its time, where it takes 0.80-0.87 otherwise (docs/runtime.md).  A stale
    result is still caught: the input alternates between two values from call to call, so
    a call that left the buffer as it was fails the check (the buffers start at a value no
    call gives).

    A check allocates nothing: it compares each block's least and largest values with the
    one expected (:func:`uniform`), never through a temporary array of the result's size.
    Such a temporary, freed just before the next call, is the block the C allocator hands
    to an algorithm that allocates a buffer of that size in the call (``brucks``): on 2
    ranks at 1 MiB, in a job where MPICH's own allgather took 280-340 µs, it made
    ``brucks`` 0.55-0.78 of MPICH's own, where it takes 1.11-1.45 of it with nothing
    between calls, paired in one job (docs/runtime.md): the benchmark found ``brucks``
    faster for its own check's allocation, which the tune's rounds never make."""
    size, rank = WORLD.size, WORLD.rank
    vec = np.full(max(m // 8, 1), rank + 1, dtype=np.int64)
    total = np.full_like(vec, -1)
    block = np.full(max(m // size, 1), rank % 251, dtype=np.uint8)
    gathered = np.full(len(block) * size, 255, dtype=np.uint8)
    turn = {"allreduce": 0, "allgather": 0}  # which of the two inputs the buffers hold

    def check_sum() -> bool:
        k = turn["allreduce"]
        ok = uniform(total, size * (size + 1) // 2 + size * k)
        turn["allreduce"] = k = 1 - k
        vec.fill(rank + 1 + k)
        return ok

    def check_gather() -> bool:
        k = turn["allgather"]
        rows = gathered.reshape(size, -1)
        ok = all(uniform(rows[r], (r + k) % 251) for r in range(size))
        turn["allgather"] = k = 1 - k
        block.fill((rank + k) % 251)
        return ok

    def calls(comm) -> dict:
        return {
            "allreduce": (lambda: comm.Allreduce(vec, total, op=MPI.SUM), check_sum),
            "allgather": (lambda: comm.Allgather(block, gathered), check_gather),
        }

    return {name: calls(comm) for name, comm in comms.items()}


def uniform(values: np.ndarray, want: int) -> bool:
    """Whether every entry of ``values`` is ``want``, read without allocating anything of
    their size (two reductions; :func:`_calls`).

    >>> uniform(np.full(4, 3, dtype=np.int64), 3), uniform(np.array([3, 2, 3]), 3)
    (True, False)
    """
    return bool(values.min() == want and values.max() == want)


def _tuning(flat, sizes: list[int]):
    """The tuning file of MPICH's algorithms for these sizes, measured on these ranks
    (``hetcoll tune --candidates 0 --mpich-algorithms``: each forced algorithm against
    MPICH's own selection, the never-slower rule)."""
    from hetcoll.jobs.tune import tune_job
    from hetcoll.tuning import Tuning, rules_from

    per = {"allreduce": sizes, "allgather": [max(m // WORLD.size, 1) for m in sizes]}
    rows = []
    for collective, nbytes in per.items():
        found = tune_job(flat, collectives=(collective,), sizes=tuple(nbytes), count=0, mpich=True)
        rows += found["rows"] if found is not None else []
    winners: dict[str, list] = {}
    for row in rows:
        w = row["winner"]
        forced = (w["mpich"],) if w.get("mpich") else ()
        winners.setdefault(row["collective"], []).append(
            (row["nbytes"], w["algorithm"], w["segment_size"], *forced)
        )
    tuning = Tuning(WORLD.size, rules_from(winners), platform=flat.name, measurements=rows)
    return WORLD.bcast(tuning.to_dict() if WORLD.rank == 0 else None)


def _digest(rows: list[dict]) -> dict[str, list[dict]]:
    """Per collective, in the order of the sizes: what the tune measured at each."""
    out: dict[str, list[dict]] = {}
    for row in rows:
        speedup = {p.get("mpich", "auto"): p["speedup"] for p in row["plans"][1:]}
        keep = ("nbytes", "calls", "winner", "first", "confirmed", "runner_up")
        out.setdefault(row["collective"], []).append(
            {**{k: row[k] for k in keep}, "speedup": speedup}
        )
    return out


def _loop(call, check, calls: int) -> tuple[float, bool]:
    """A program's loop of ``calls`` calls, each followed by the check (the program's use of
    the result and its next input), after a barrier: the seconds per call the slowest rank
    spent in the calls, and whether every result was right.  The ranks start each call as
    the last one and the check left them, as in a program's loop, not released together by
    a barrier (module doc); the check's own time is not counted."""
    WORLD.Barrier()
    spent, ok = 0.0, True
    for _ in range(calls):
        t = MPI.Wtime()
        call()
        spent += MPI.Wtime() - t
        ok &= check()
    return WORLD.allreduce(spent, op=MPI.MAX) / calls, ok


def loop_calls(seconds: float, repeat: int, loop: float = LOOP) -> int:
    """The calls in one loop: as many as take about ``loop`` seconds at ``seconds`` a call,
    at least ``repeat`` and at most :data:`MOST_CALLS`.

    >>> loop_calls(1e-3, 5), loop_calls(1.0, 5), loop_calls(1e-9, 5)
    (20, 5, 1000)
    """
    return min(MOST_CALLS, max(repeat, math.ceil(loop / max(seconds, 1e-9))))


def order(variants: list[str], r: int) -> list[str]:
    """Round ``r``'s order: rotated by ``r`` (``r + 1`` and then reversed when ``r`` is
    odd), so that round ``r`` starts with the ``r``-th variant and every other round runs
    them backwards.

    >>> [order(["a", "b", "c"], r) for r in range(3)]
    [['a', 'b', 'c'], ['b', 'a', 'c'], ['c', 'a', 'b']]
    """
    return [variants[k] for k in rotation(len(variants), r)]


def selected(medians: dict[str, float]) -> str:
    """The best forced algorithm of the selection rounds: the lowest of ``medians`` (each
    forced algorithm's median time over those rounds), the first listed on a tie.

    >>> selected({"ring": 2.0, "tree": 1.5, "brucks": 1.5})
    'tree'
    """
    return min(medians, key=medians.__getitem__)


def contenders(same: str | None, best: str) -> list[str]:
    """The confirmation rounds' variants: the HetComm, the same call it makes run plainly
    (``same``: the forced algorithm its tuning file chose, ``auto`` for MPICH's own
    selection; None when it runs no MPI call), the best forced algorithm of the selection
    rounds and MPICH's own selection, each once.

    >>> contenders("ring", "tree"), contenders("auto", "auto"), contenders(None, "ring")
    (['hetcomm', 'ring', 'tree', 'auto'], ['hetcomm', 'auto'], ['hetcomm', 'ring', 'auto'])
    """
    return list(dict.fromkeys(v for v in ("hetcomm", same, best, "auto") if v))


def _rounds(runs: dict, check, names: list[str], rounds: int, calls: int):
    """Paired rounds of the variants ``names`` (:func:`order`): per variant its time per
    round (a loop of ``calls`` calls, :func:`_loop`), and whether every result was right."""
    ok = True
    per: dict[str, list[float]] = {v: [] for v in names}
    for r in range(rounds):
        for v in order(names, r):
            t, good = _loop(runs[v], check, calls)
            ok &= good
            per[v].append(t)
    return per, ok


def main(sizes_arg: str, repeat: str, rounds: str, confirm: str, out_path: str) -> None:
    from hetcoll import HetComm
    from hetcoll.platform import Platform, nodes_from_costs

    sizes = [int(s) for s in sizes_arg.split(",")]
    repeat, rounds_, confirm_ = int(repeat), int(rounds), int(confirm)
    load = os.getloadavg()
    found = algorithms()
    if not WORLD.allreduce(found is not None, op=MPI.LAND):
        raise SystemExit(f"MPICH's algorithms cannot be forced here: {why_not()}")
    # a flat platform: every rank alike (5 us + 1 ns/B); natively on one host the default
    # HetComm decides what runs (docs/runtime.md), which is what is measured
    flat = Platform(nodes_from_costs([5e-6] * WORLD.size, 1e-9), name="flat")
    tuning = _tuning(flat, sizes)
    het = HetComm(WORLD, flat, tuning=tuning, timeout=300)
    names = {c: list(found.names(c)) for c in COLLECTIVES}
    variants = {c: ["auto", *names[c], "hetcomm"] for c in COLLECTIVES}
    times = {c: {v: [] for v in variants[c]} for c in COLLECTIVES}
    confirmed: dict[str, list] = {c: [] for c in COLLECTIVES}
    choices: dict[str, list] = {c: [] for c in COLLECTIVES}
    loops: dict[str, list] = {c: [] for c in COLLECTIVES}
    ok = True
    for m in sizes:
        calls = _calls({"plain": WORLD, "hetcomm": het}, m)
        for collective in COLLECTIVES:
            call, check = calls["plain"][collective]
            runs = {"auto": call, "hetcomm": calls["hetcomm"][collective][0]}
            runs.update({n: found.forcing(collective, n, call) for n in names[collective]})
            for v in variants[collective]:  # warm-up: plans, choices, first touches
                runs[v]()
                ok &= check()
            first, good = _loop(runs["auto"], check, 1)
            n = WORLD.allreduce(loop_calls(first, repeat), op=MPI.MAX)
            loops[collective].append(n)
            ok &= good
            per, good = _rounds(runs, check, variants[collective], rounds_, n)
            ok &= good
            for v, t in per.items():
                times[collective][v].append(t)
            count = max(m // 8, 1) if collective == "allreduce" else None
            nbytes = 8 * count if count else max(m // WORLD.size, 1)
            choice = het.choice(collective, nbytes, count=count).to_dict()
            choices[collective].append(choice)
            # every rank has the same times (the slowest rank's): the same choices
            best = selected({n: float(np.median(per[n])) for n in names[collective]})
            same = None
            if choice["algorithm"] == "mpi":
                same = choice.get("mpich") if choice.get("mpich") in runs else "auto"
            again, good = _rounds(runs, check, contenders(same, best), confirm_, n)
            ok &= good
            confirmed[collective].append({"best": best, "same": same, "times": again})
    every_ok = WORLD.allreduce(int(ok), op=MPI.MIN)
    het.close()
    if WORLD.rank == 0:
        doc = {
            "ranks": WORLD.size,
            "sizes": sizes,
            "repeat": repeat,
            "calls": loops,
            "rounds": rounds_,
            "confirm_rounds": confirm_,
            "times": times,
            "confirmed": confirmed,
            "choices": choices,
            "tuning": tuning["rules"],
            "tune": _digest(tuning["measurements"]),
            "ok": bool(every_ok),
            "load": [load, os.getloadavg()],
        }
        with open(out_path, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
