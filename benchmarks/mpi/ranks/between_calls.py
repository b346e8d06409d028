"""MPI side of ``benchmarks/mpi/bench_between_calls.py``: MPICH's own selection and each
algorithm forced, in single calls between barriers, with each of four things done
between two calls, paired in one job.

``mpiexec -n K python between_calls.py COLLECTIVE SIZE CALLS ROUNDS PLACE WAYS STEPS OUT``
(SIZE: the
result size ``M`` in bytes: an allreduce's vector of ``M / 8`` int64, an allgather's
``M / K`` bytes per rank; CALLS: single calls per measurement; ROUNDS: paired rounds;
PLACE: ``in-place`` for calls in place, each step then followed by the rank's contribution
written into the buffer, as a program writes it before such a call, else ``apart``; WAYS:
how the calls are timed, of :data:`WAYS`, comma-separated; STEPS: of :data:`BETWEEN`,
comma-separated).

Between two calls, outside the timed call (:data:`BETWEEN`): ``nothing`` (the tune's
rounds, :func:`hetcoll.jobs.tune.measure_calls`), ``read result`` (the result summed),
``write input`` (the input buffer rewritten), ``write result`` (the result buffer
overwritten, as a check that zeroes it would; ``bench_mpich_algorithms.py``'s reads the
result and writes the input), ``free temporary`` (an array of the result's size allocated,
written and freed, as a check that compares the result through a temporary does: the C
allocator hands its block to an algorithm that allocates one of that size in the next
call).  A measurement (:data:`WAYS`) is ``single``: the median of CALLS single calls, each
between barriers and timed on its slowest rank, with the step after each call; or
``loop``: a loop of CALLS calls after a barrier, the step after each call, the seconds per
call its slowest rank spent in the calls (how the tune, :func:`hetcoll.jobs.tune.measure_calls`,
and ``bench_mpich_algorithms.py`` measure).  A mode is a way and a step; each round runs
every mode, and in it every variant, once, both orders rotated and reversed every other
round (:func:`hetcoll.jobs.tune.rotation`).  Every variant calls on the same buffers; each
variant's result is checked before and after the rounds.  Rank 0 writes ``{"ranks",
"collective", "size", "calls", "rounds", "in_place", "variants", "modes" (the step, or
"way step" with more than the single way), "times": {mode:
{variant: [seconds per round]}}, "ok", "load"}``.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll.jobs.tune import rotation
from hetcoll.runtime.mpich_cvars import algorithms, why_not

WORLD = MPI.COMM_WORLD
#: what the ranks do between two calls
BETWEEN = ("nothing", "read result", "write input", "write result", "free temporary")
#: how a measurement times the calls (module doc)
WAYS = ("single", "loop")


def _buffers(collective: str, m: int, in_place: bool):
    """The call (MPI's own), its input and result buffers, the expected result and what
    writes the rank's contribution before a call (None apart: the input stays)."""
    size, rank = WORLD.size, WORLD.rank
    if collective == "allreduce":
        send = np.full(max(m // 8, 1), rank + 1, dtype=np.int64)
        recv = np.empty_like(send)
        want = np.full_like(send, size * (size + 1) // 2)
        if in_place:
            return (
                WORLD.Allreduce,
                (MPI.IN_PLACE, recv, MPI.SUM),
                send,
                recv,
                want,
                (lambda: np.copyto(recv, send)),
            )
        return WORLD.Allreduce, (send, recv, MPI.SUM), send, recv, want, None
    send = np.full(max(m // size, 1), rank % 251, dtype=np.uint8)
    recv = np.empty(len(send) * size, dtype=np.uint8)
    want = np.repeat(np.arange(size, dtype=np.uint8) % 251, len(send))
    if in_place:
        mine = recv[rank * len(send) : (rank + 1) * len(send)]
        return (
            WORLD.Allgather,
            (MPI.IN_PLACE, recv),
            send,
            recv,
            want,
            (lambda: np.copyto(mine, send)),
        )
    return WORLD.Allgather, (send, recv), send, recv, want, None


def _steps(send: np.ndarray, recv: np.ndarray, contribute=None) -> dict:
    """Each mode's step between two calls (module doc), followed by ``contribute`` (in
    place: the contribution written into the buffer); none changes what a call gives."""
    value = send[0]
    steps = {
        "nothing": None,
        "read result": recv.sum,
        "write input": lambda: send.fill(value),
        "write result": lambda: recv.fill(0),
        "free temporary": lambda: np.ones(recv.size, dtype=np.uint8),
    }
    if contribute is None:
        return steps
    then = {m: f for m, f in steps.items() if f is not None}
    out = {m: (lambda f=f: (f(), contribute())) for m, f in then.items()}
    return {"nothing": contribute, **out}


def _measure(run, step, calls: int) -> float:
    """The median of ``calls`` single calls of ``run`` between barriers, each timed on its
    slowest rank, with ``step`` after each call."""
    mine = np.empty(calls)
    for k in range(calls):
        WORLD.Barrier()
        t0 = time.perf_counter()
        run()
        mine[k] = time.perf_counter() - t0
        if step is not None:
            step()
    slowest = np.empty_like(mine)
    WORLD.Allreduce(mine, slowest, op=MPI.MAX)
    return float(np.median(slowest))


def _loop(run, step, calls: int) -> float:
    """Seconds per call of a loop of ``calls`` calls of ``run`` after a barrier, ``step``
    after each call: the time its slowest rank spent in the calls."""
    WORLD.Barrier()
    spent = 0.0
    for _ in range(calls):
        t0 = time.perf_counter()
        run()
        spent += time.perf_counter() - t0
        if step is not None:
            step()
    return float(WORLD.allreduce(spent, op=MPI.MAX)) / calls


def modes(ways: list[str], steps: list[str]) -> list[tuple[str, str, str]]:
    """The modes measured, ``(name, way, step)``: named by the step alone when the single
    way is the only one.

    >>> modes(["single"], ["nothing"]), modes(["single", "loop"], ["nothing"])[1]
    ([('nothing', 'single', 'nothing')], ('loop nothing', 'loop', 'nothing'))
    """
    plain = ways == ["single"]
    return [(s if plain else f"{w} {s}", w, s) for w in ways for s in steps]


def main(
    collective: str,
    size: str,
    calls: str,
    rounds: str,
    place: str,
    ways: str,
    steps_: str,
    out_path: str,
) -> None:
    m, calls_, rounds_, in_place = int(size), int(calls), int(rounds), place == "in-place"
    measured = modes(ways.split(","), steps_.split(","))
    timing = {"single": _measure, "loop": _loop}
    load = os.getloadavg()
    found = algorithms()
    if not WORLD.allreduce(found is not None, op=MPI.LAND):
        raise SystemExit(f"MPICH's algorithms cannot be forced here: {why_not()}")
    method, args, send, recv, want, contribute = _buffers(collective, m, in_place)
    runs = {"auto": lambda: method(*args)}
    for name in found.names(collective):
        stored = found.forcing(collective, name, method)
        runs[name] = lambda stored=stored: stored(*args)
    variants, steps = list(runs), _steps(send, recv, contribute)
    ok = True
    for v in variants:  # warm-up, and every variant's result checked
        recv.fill(0)
        if contribute is not None:
            contribute()
        runs[v]()
        ok &= bool(np.array_equal(recv, want))
    times = {name: {v: [] for v in variants} for name, _, _ in measured}
    for r in range(rounds_):
        for i in rotation(len(measured), r):
            name, way, step = measured[i]
            for k in rotation(len(variants), r):
                run = runs[variants[k]]
                times[name][variants[k]].append(timing[way](run, steps[step], calls_))
    for v in variants:  # and once more after the rounds
        recv.fill(0)
        if contribute is not None:
            contribute()
        runs[v]()
        ok &= bool(np.array_equal(recv, want))
    every_ok = WORLD.allreduce(int(ok), op=MPI.MIN)
    if WORLD.rank == 0:
        doc = {
            "ranks": WORLD.size,
            "collective": collective,
            "size": m,
            "calls": calls_,
            "rounds": rounds_,
            "in_place": in_place,
            "variants": variants,
            "modes": [name for name, _, _ in measured],
            "times": times,
            "ok": bool(every_ok),
            "load": [load, os.getloadavg()],
        }
        with open(out_path, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
