"""MPI side of ``benchmarks/mpi/bench_training.py``: a training-like loop, plain mpi4py
against the default ``HetComm``, paired rounds.

``mpiexec -n K python -m mpi4py training.py MODE PLATFORM WEIGHTS GRADS STEPS ROUNDS SCALE
ALGO TUNING SEPARATE MEASURED OUT`` (SCALE: the emulation's ``time_scale``; ALGO:
HetComm's ``algo``, ``auto`` its default; TUNING: a tuning file HetComm follows, or ``-``;
SEPARATE ``1``: an untimed barrier between the calls, ``step``; MEASURED: ``-`` or a tuning file
whose ``message_cost`` a third variant, ``measured``, charges: the same HetComm with that
file's measured cost per message and none of its rules, beside ``hetcomm``'s constant)

MODE ``native``: the baseline is ``MPI.COMM_WORLD`` itself; ``HetComm`` plans on PLATFORM,
or on what a probe of these ranks finds (PLATFORM ``probe``, the probe's default sizes).
MODE ``emulated``: both run under emulation of PLATFORM; the baseline is MPI's own
algorithm emulated (``HetComm(..., "mpi", emulate=True)``: MPICH's algorithm for each call
through the same engine), never the un-emulated ``MPI.COMM_WORLD``.

One step: ``Bcast`` of WEIGHTS bytes from rank 0, ``Allreduce`` (sum) of GRADS bytes, and
the small calls (``allreduce`` of a float, ``Bcast`` of 8 bytes, ``Barrier``).  A round runs
STEPS steps of each variant, the order alternating from round to round; each call's time is
the slowest rank's (times summed over the steps).  Every result is checked after the
timed part of each round.  Rank 0 writes the JSON document.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm, load_platform
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.probe import DEFAULT_SIZES, probe

WORLD = MPI.COMM_WORLD
CALLS = ("Bcast", "Allreduce", "small")
#: and the step's own time on each rank (the sum of its calls, barriers of ``separate``
#: excluded): its maximum over ranks is what a step costs the program
KEYS = (*CALLS, "step")


def step(comm, weights, grads, out, small, scalar, separate=False) -> dict[str, float]:
    """One step on ``comm`` (mpi4py's or a HetComm); seconds per call category.
    ``separate``: an untimed barrier after the ``Bcast`` and the ``Allreduce``, so that a
    call's time holds no wait for ranks the previous call left late."""
    t0 = time.perf_counter()
    comm.Bcast(weights, root=0)
    t1 = time.perf_counter()
    if separate:
        WORLD.Barrier()
    a1 = time.perf_counter()
    comm.Allreduce(grads, out, op=MPI.SUM)
    t2 = time.perf_counter()
    if separate:
        WORLD.Barrier()
    a2 = time.perf_counter()
    scalar[0] = comm.allreduce(float(WORLD.rank), op=MPI.SUM)
    comm.Bcast(small, root=0)
    comm.Barrier()
    t3 = time.perf_counter()
    out = {"Bcast": t1 - t0, "Allreduce": t2 - a1, "small": t3 - a2}
    return {**out, "step": sum(out.values())}


def main(
    mode, platform_arg, weights_b, grads_b, steps, rounds, scale, algo, tuning, sep, measured,
    out_path,
):  # fmt: skip
    weights_b, grads_b, steps, rounds = map(int, (weights_b, grads_b, steps, rounds))
    scale = float(scale)
    load = os.getloadavg()
    probed = None
    if platform_arg == "probe":
        placeholder = Platform(nodes_from_costs([0.0] * WORLD.size), name="placeholder")
        with HetComm(WORLD, placeholder, "flat", timeout=120) as hc:
            res = probe(hc, sizes=DEFAULT_SIZES, name=f"probed {WORLD.size} ranks")
        platform = res.platform
        probed = {
            "classes": res.fit["classes"],
            "seconds": res.seconds,
            "t_ini": platform.t_ini.tolist(),
            "t_byte": platform.t_byte.tolist(),
        }
    else:
        platform = load_platform(platform_arg)
    emulate = mode == "emulated"
    tuning = None if tuning == "-" else tuning
    het = HetComm(
        WORLD, platform, algo, emulate=emulate, time_scale=scale, timeout=300, tuning=tuning
    )
    base = WORLD
    if emulate:
        base = HetComm(WORLD, platform, "mpi", emulate=True, time_scale=scale, timeout=300)
    variants = {"baseline": base, "hetcomm": het}
    cost = None
    if measured != "-":  # the measured cost per message alone, not the file's rules
        with open(measured) as fh:
            doc = {**json.load(fh), "rules": {}, "measurements": []}
        cost = doc["message_cost"]
        variants["measured"] = HetComm(
            WORLD, platform, algo, emulate=emulate, time_scale=scale, timeout=300, tuning=doc
        )
    weights = np.zeros(weights_b // 4, dtype=np.float32)
    want_w = (np.arange(len(weights)) % 101).astype(np.float32)
    grads = np.full(grads_b // 4, WORLD.rank + 1.0, dtype=np.float32)
    want_g = np.full(len(grads), WORLD.size * (WORLD.size + 1) / 2, dtype=np.float32)
    out = np.empty_like(grads)
    small, scalar = np.zeros(1, dtype=np.int64), [0.0]

    def run(name: str) -> tuple[dict[str, float], bool]:
        comm = variants[name]
        weights[:] = want_w if WORLD.rank == 0 else 0.0
        small[0] = 7 if WORLD.rank == 0 else 0
        WORLD.Barrier()
        total = dict.fromkeys(KEYS, 0.0)
        for _ in range(steps):
            for k, v in step(comm, weights, grads, out, small, scalar, sep == "1").items():
                total[k] += v
        ok = (
            np.array_equal(weights, want_w)
            and np.array_equal(out, want_g)
            and small[0] == 7
            and scalar[0] == WORLD.size * (WORLD.size - 1) / 2
        )
        slowest = np.empty(len(KEYS))
        WORLD.Allreduce(np.array([total[k] for k in KEYS]), slowest, op=MPI.MAX)
        return dict(zip(KEYS, map(float, slowest), strict=True)), bool(ok)

    for name in variants:  # warm up: plans, choices, first touches
        run(name)
    times = {name: [] for name in variants}
    ok = True
    for r in range(rounds):
        for name in list(variants) if r % 2 == 0 else list(variants)[::-1]:
            t, good = run(name)
            times[name].append(t)
            ok &= good
    choices, measured_choices = {}, {}
    for call, args in (
        ("Bcast", ("bcast", weights.nbytes)),
        ("Allreduce", ("allreduce", grads.nbytes)),
        ("allreduce(float)", ("allgather", 256)),
        ("Bcast(8 B)", ("bcast", 8)),
        ("Barrier", ("barrier", 0)),
    ):
        count = len(grads) if args[0] == "allreduce" else None
        choices[call] = het.choice(args[0], args[1], count=count).to_dict()
        if "measured" in variants:
            measured_choices[call] = variants["measured"].choice(*args, count=count).to_dict()
    every_ok = WORLD.allreduce(int(ok), op=MPI.MIN)
    het.close()
    if emulate:
        base.close()
    if "measured" in variants:
        variants["measured"].close()
    if WORLD.rank == 0:
        doc = {
            "mode": mode,
            "algo": algo,
            "tuning": tuning,
            "separate": sep == "1",
            "ranks": WORLD.size,
            "platform": platform.name,
            "weights": weights_b,
            "grads": grads_b,
            "steps": steps,
            "rounds": rounds,
            "times": times,
            "choices": choices,
            "measured_choices": measured_choices,
            "message_cost": cost,
            "ok": bool(every_ok),
            "probed": probed,
            "load": [load, os.getloadavg()],
        }
        with open(out_path, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
