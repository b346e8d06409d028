"""MPI side of ``benchmarks/mpi/bench_forced_dispatch.py``: per collective and size, the
same MPICH algorithm forced three ways, paired in one job.

``mpiexec -n K python forced_dispatch.py SIZES CALLS ROUNDS OUT`` (SIZES: result sizes
``M`` in bytes, comma-separated: an allreduce's vector of ``M / 8`` int64, an allgather's
``M / K`` bytes per rank; CALLS: back-to-back calls per measurement; ROUNDS: paired rounds).

The variants: ``plain``, mpi4py's method wrapped in the stores that force the algorithm
(:meth:`hetcoll.runtime.mpich_cvars.Algorithms.forcing`: what the tune measures and the
benchmark of MPICH's algorithms forces); ``hetcomm``, the ``HetComm`` given a tuning file
that forces that algorithm at that size (its one-step method, its class's,
:mod:`hetcoll.runtime.forced`); ``class``, the class's method of the same ``HetComm``
(``planned_class(hc).Allreduce(hc, ...)``: the look-up of a call given to MPI, then the forcing
wrapper).  The tuning file has four rules per collective, so a call's rule is looked up
among several.  A measurement is CALLS calls back to back between barriers, the slowest
rank's seconds per call; each round runs every variant once, the order rotated and
reversed every other round (:func:`hetcoll.jobs.tune.rotation`).  Every result is
checked.  Then the Python work alone, the same way (each rank's least of
:data:`DISPATCH_LOOPS` loops of :data:`DISPATCH_CALLS` calls, no barrier, the slowest
rank's): each variant with a C
function that does nothing in place of mpi4py's method, so that what the ranks' scheduling
does to the collective is out of the figure.  Rank 0 writes ``{"ranks", "sizes", "calls",
"rounds", "algorithms": {collective: name}, "times": {collective: {variant: [[seconds per
call per round] per size]}}, "dispatch": the same for the Python work alone, "ok"}``.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll.jobs.tune import rotation
from hetcoll.runtime.mpich_cvars import algorithms, why_not
from hetcoll.runtime.subcomms import planned_class

WORLD = MPI.COMM_WORLD
VARIANTS = ("plain", "hetcomm", "class")
#: a C function of two or three arguments that does nothing: mpi4py's method's stand-in
#: where the Python work alone is timed (``dispatch``), the least of this many loops ...
NOOP = slice
DISPATCH_LOOPS = 5
#: ... of this many calls
DISPATCH_CALLS = 4000
#: the algorithm forced per collective (every MPICH has them, for any number of ranks)
FORCED = {"allreduce": "recursive_doubling", "allgather": "ring"}


def tuning_rules(sizes: list[int], ranks: int) -> dict[str, list[dict]]:
    """Rules forcing ``FORCED``'s algorithm at every measured size, between rules that
    force another or none, so that the look-up bisects several.

    >>> [(r["from_bytes"], r.get("mpich")) for r in tuning_rules([8, 9], 2)["allreduce"]]
    [(0, None), (8, 'recursive_doubling'), (9, 'recursive_doubling'), (10, None)]
    """
    out = {}
    for collective, name in FORCED.items():
        per = sorted({m if collective == "allreduce" else max(m // ranks, 1) for m in sizes})
        rules = [{"from_bytes": 0, "algorithm": "mpi"}]
        for m in per:
            if m == rules[-1]["from_bytes"]:
                rules.pop()
            rules.append({"from_bytes": m, "algorithm": "mpi", "mpich": name})
            rules.append({"from_bytes": m + 1, "algorithm": "mpi"})
        out[collective] = rules
    return out


def _variants(hc, found, m: int):
    """Per collective, the variants' calls at result size ``m``, their output buffer and
    the result expected in it."""
    size, rank = WORLD.size, WORLD.rank
    vec = np.full(max(m // 8, 1), rank + 1, dtype=np.int64)
    total = np.empty_like(vec)
    block = np.full(max(m // size, 1), rank % 251, dtype=np.uint8)
    gathered = np.empty(len(block) * size, dtype=np.uint8)
    want = {
        "allreduce": np.full_like(vec, size * (size + 1) // 2),
        "allgather": np.repeat(np.arange(size, dtype=np.uint8) % 251, len(block)),
    }
    out = {"allreduce": total, "allgather": gathered}
    plain_ar = found.forcing("allreduce", FORCED["allreduce"], WORLD.Allreduce)
    plain_ag = found.forcing("allgather", FORCED["allgather"], WORLD.Allgather)
    het_ar, het_ag = hc.Allreduce, hc.Allgather
    cls_ar, cls_ag = planned_class(hc).Allreduce, planned_class(hc).Allgather
    SUM = MPI.SUM
    runs = {
        "allreduce": {
            "plain": lambda: plain_ar(vec, total, SUM),
            "hetcomm": lambda: het_ar(vec, total, SUM),
            "class": lambda: cls_ar(hc, vec, total, SUM),
        },
        "allgather": {
            "plain": lambda: plain_ag(block, gathered),
            "hetcomm": lambda: het_ag(block, gathered),
            "class": lambda: cls_ag(hc, block, gathered),
        },
    }
    args = {"allreduce": (vec, total, SUM), "allgather": (block, gathered)}
    return runs, out, want, args


def _python_alone(run) -> float:
    """Seconds per call of ``run`` on the slowest rank: each rank's least of
    :data:`DISPATCH_LOOPS` loops of :data:`DISPATCH_CALLS` calls (the loop the host
    disturbed least, as ``timeit`` takes it)."""
    least = float("inf")
    for _ in range(DISPATCH_LOOPS):
        t = time.perf_counter()
        for _ in range(DISPATCH_CALLS):
            run()
        least = min(least, time.perf_counter() - t)
    return WORLD.allreduce(least / DISPATCH_CALLS, op=MPI.MAX)


def _dispatch_only(hc, found, collective: str, args: tuple):
    """The variants' Python work alone: each with :data:`NOOP` in place of mpi4py's
    method (the ``HetComm``'s one-step method given tables made from the same rules, the
    class's look-up given the forcing wrapper of the stand-in); and the ``HetComm``'s
    tables and the class's look-up table as they were, to put back (:func:`_put_back`)."""
    from hetcoll.runtime import forced

    name = collective.capitalize()
    plain = found.forcing(collective, FORCED[collective], NOOP)
    saved = {k: getattr(hc, k) for k in ("_forced_rules", forced.SEEN[collective])}
    for key, value in forced.tables(hc, (name,), NOOP).items():
        setattr(hc, key, value)
    passing = dict(hc._passing)
    for key, (choice, _) in passing.items():
        if key[0] == collective and choice.mpich:
            hc._passing[key] = (choice, found.forcing(collective, choice.mpich, NOOP))
    one = getattr(hc, name)
    cls = getattr(planned_class(hc), name)
    alone = {
        "plain": lambda: plain(*args),
        "hetcomm": lambda: one(*args),
        "class": lambda: cls(hc, *args),
    }
    return alone, (saved, passing)


def _put_back(hc, saved) -> None:
    """The ``HetComm``'s tables and class look-up table as :func:`_dispatch_only` found
    them."""
    tables, passing = saved
    for key, value in tables.items():
        setattr(hc, key, value)
    hc._passing.clear()
    hc._passing.update(passing)


def main(sizes_arg: str, calls_arg: str, rounds_arg: str, out_path: str) -> None:
    from hetcoll import HetComm
    from hetcoll.platform import Platform, nodes_from_costs

    sizes = [int(s) for s in sizes_arg.split(",")]
    calls, rounds = int(calls_arg), int(rounds_arg)
    found = algorithms()
    if not WORLD.allreduce(found is not None, op=MPI.LAND):
        raise SystemExit(f"MPICH's algorithms cannot be forced here: {why_not()}")
    size = WORLD.size
    flat = Platform(nodes_from_costs([5e-6] * size, 1e-9), name="flat")
    rules = tuning_rules(sizes, size)
    tuning = {"format": "hetcoll-tuning", "version": 1, "ranks": size, "rules": rules}
    hc = HetComm(WORLD, flat, tuning=tuning, timeout=300)
    times = {c: {v: [] for v in VARIANTS} for c in FORCED}
    dispatch = {c: {v: [] for v in VARIANTS} for c in FORCED}
    ok = True
    for m in sizes:
        runs, out, want, runs_args = _variants(hc, found, m)
        for collective, variants in runs.items():
            for v in VARIANTS:  # warm-up and check
                out[collective].fill(0)
                variants[v]()
                ok &= bool(np.array_equal(out[collective], want[collective]))
                ok &= hc.last_choice.mpich == FORCED[collective] or v == "plain"
            per = {v: [] for v in VARIANTS}
            for r in range(rounds):
                for k in rotation(len(VARIANTS), r):
                    v = VARIANTS[k]
                    run = variants[v]
                    WORLD.Barrier()
                    t = MPI.Wtime()
                    for _ in range(calls):
                        run()
                    mine = (MPI.Wtime() - t) / calls
                    per[v].append(WORLD.allreduce(mine, op=MPI.MAX))
            ok &= bool(np.array_equal(out[collective], want[collective]))
            for v in VARIANTS:
                times[collective][v].append(per[v])
            alone, saved = _dispatch_only(hc, found, collective, runs_args[collective])
            per = {v: [] for v in VARIANTS}
            for r in range(rounds):
                for k in rotation(len(VARIANTS), r):
                    per[VARIANTS[k]].append(_python_alone(alone[VARIANTS[k]]))
            _put_back(hc, saved)
            for v in VARIANTS:
                dispatch[collective][v].append(per[v])
    every_ok = WORLD.allreduce(int(ok), op=MPI.MIN)
    hc.close()
    if WORLD.rank == 0:
        doc = {
            "ranks": size,
            "sizes": sizes,
            "calls": calls,
            "rounds": rounds,
            "algorithms": FORCED,
            "tuning": rules,
            "times": times,
            "dispatch": dispatch,
            "ok": bool(every_ok),
        }
        with open(out_path, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
