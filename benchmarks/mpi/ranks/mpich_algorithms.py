"""MPI side of ``benchmarks/mpi/bench_mpich_algorithms.py``: plain mpi4py ``Allreduce`` and
``Allgather`` under whatever algorithm MPICH's control variables force for this launch,
and (``HETCOMM`` ``1``) the default ``HetComm`` beside them, paired call by call, given
the tuning file ``hetcoll tune --candidates 0 --mpich-algorithms`` would write for these
ranks (measured first, in this job: MPICH's own selection against each of its algorithms
forced through its control variable for the call, :func:`hetcoll.jobs.tune.tune_job`).

``mpiexec -n K python -m mpi4py mpich_algorithms.py SIZES REPEAT HETCOMM OUT`` (SIZES:
result sizes ``M`` in bytes, comma-separated: an allreduce's vector of ``M / 8`` int64, an
allgather's ``M / K`` bytes per rank, at least one; REPEAT: timed calls per size and
variant, after one untimed warm-up call).

A call's time is the slowest rank's (barrier, call, ``MPI.Wtime``; the maximum over the
ranks); per size and variant the median of REPEAT calls.  With HetComm the two variants
alternate call by call (plain first on even calls).  Every result is checked; rank 0
writes the JSON document: ``{"ranks", "sizes", "times": {collective: {variant: [seconds
per size]}}, "choices": {collective: [what HetComm ran per size]}, "tuning": its rules,
"ok", "load"}``.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD


def _calls(comm, m: int):
    """``(collective, call, check)`` for both collectives at result size ``m`` on ``comm``
    (mpi4py's or a HetComm): each call runs once, each check says its result was right."""
    size, rank = WORLD.size, WORLD.rank
    vec = np.full(max(m // 8, 1), rank + 1, dtype=np.int64)
    total = np.empty_like(vec)
    want = size * (size + 1) // 2
    block = np.full(max(m // size, 1), rank % 251, dtype=np.uint8)
    gathered = np.empty(len(block) * size, dtype=np.uint8)
    expect = np.repeat(np.arange(size, dtype=np.uint8) % 251, len(block))
    return (
        (
            "allreduce",
            lambda: comm.Allreduce(vec, total, op=MPI.SUM),
            lambda: bool((total == want).all()),
        ),
        (
            "allgather",
            lambda: comm.Allgather(block, gathered),
            lambda: bool(np.array_equal(gathered, expect)),
        ),
    )


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


def _timed(call) -> float:
    WORLD.Barrier()
    t = MPI.Wtime()
    call()
    return WORLD.allreduce(MPI.Wtime() - t, op=MPI.MAX)


def main(sizes_arg: str, repeat: str, hetcomm: str, out_path: str) -> None:
    sizes = [int(s) for s in sizes_arg.split(",")]
    repeat = int(repeat)
    load = os.getloadavg()
    variants = {"mpi": WORLD}
    het = tuning = None
    if hetcomm == "1":
        from hetcoll import HetComm
        from hetcoll.platform import Platform, nodes_from_costs

        # a flat platform: every rank alike (5 us + 1 ns/B); natively on one host the
        # default HetComm decides what runs (docs/runtime.md), which is what is measured
        flat = Platform(nodes_from_costs([5e-6] * WORLD.size, 1e-9), name="flat")
        tuning = _tuning(flat, sizes)
        het = HetComm(WORLD, flat, tuning=tuning, timeout=300)
        variants["hetcomm"] = het
    times = {c: {v: [] for v in variants} for c in ("allreduce", "allgather")}
    choices = {c: [] for c in times}
    ok = True
    for m in sizes:
        per = {name: _calls(comm, m) for name, comm in variants.items()}
        for k, collective in enumerate(times):
            samples = {name: [] for name in variants}
            for name in variants:  # warm-up: plans, choices, first touches
                per[name][k][1]()
            for r in range(repeat):
                order = list(variants) if r % 2 == 0 else list(variants)[::-1]
                for name in order:
                    samples[name].append(_timed(per[name][k][1]))
                    ok &= per[name][k][2]()
            for name in variants:
                times[collective][name].append(float(np.median(samples[name])))
            if het is not None:
                count = max(m // 8, 1) if collective == "allreduce" else None
                nbytes = 8 * count if count else max(m // WORLD.size, 1)
                choices[collective].append(het.choice(collective, nbytes, count=count).to_dict())
    every_ok = WORLD.allreduce(int(ok), op=MPI.MIN)
    if het is not None:
        het.close()
    if WORLD.rank == 0:
        doc = {
            "ranks": WORLD.size,
            "sizes": sizes,
            "repeat": repeat,
            "times": times,
            "choices": choices,
            "tuning": None if tuning is None else tuning["rules"],
            "ok": bool(every_ok),
            "load": [load, os.getloadavg()],
        }
        with open(out_path, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
