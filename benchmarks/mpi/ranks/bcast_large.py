"""MPI side of bench_bcast_large.py (started by it through ``hetcoll.jobs.run_program``).

``ranks/bcast_large.py probe SIZES OUT``: hetcoll's probe (``hetcoll.runtime.probe``: every
pair ping-pongs through the engine, the least round trip of each series kept) at the given
message sizes (comma-separated bytes); rank 0 writes the round trips.

``ranks/bcast_large.py measure SPEC OUT``: for each size of the spec, native ``comm.Bcast``
and each hetcoll variant (a platform, a planner, a slice size) side by side: one call of
each per round, the order reversed every other round, the ranks' buffers reset before each
call (non-roots zeroed) and compared byte for byte with the root's data after it.  Latency
of one call = the last rank's return minus the root's start on the host's shared monotonic
clock.  Rank 0 writes every sample and whether every rank had the right bytes each time.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.probe import probe

world = MPI.COMM_WORLD
me = world.rank
TIMEOUT = 600.0


def timed(call) -> float:
    """Seconds from the root's start to the last rank's return (shared clock, one host)."""
    world.Barrier()
    t0 = time.monotonic_ns()
    call()
    t1 = time.monotonic_ns()
    return (world.allreduce(t1, op=MPI.MAX) - world.bcast(t0, 0)) / 1e9


def run_probe(sizes: list[int]) -> dict:
    flat = Platform(nodes_from_costs([1e-6] * world.size), name="flat")
    with HetComm(world, flat, "chain", timeout=TIMEOUT) as hc:
        res = probe(hc, sizes=sizes)
    return {
        "sizes": list(res.sizes),
        "rtt": res.rtt.tolist(),
        "reliable": bool(res.reliability.get("reliable")),
        "seconds": res.seconds,
    }


def measure_size(nbytes: int, variants: list[dict], comms: dict, rounds: int) -> dict:
    """Samples (seconds) per variant, and whether every call left the right bytes."""
    data = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    buf = data.copy() if me == 0 else np.zeros(nbytes, dtype=np.uint8)
    calls = {"native": lambda: world.Bcast(buf, 0)}
    for v in variants:
        hc = comms[v["platform"], v["algo"]]
        calls[v["name"]] = lambda hc=hc, seg=v["segment_size"]: hc.Bcast(buf, 0, segment_size=seg)
    samples: dict[str, list[float]] = {k: [] for k in calls}
    correct = True
    names = list(calls)
    for r in range(rounds + 1):  # round 0 warms up (plans, pages) and is not kept
        for name in names if r % 2 else names[::-1]:
            if me:
                buf.fill(0)
            t = timed(calls[name])
            correct &= bool(np.array_equal(buf, data))
            if r:
                samples[name].append(t)
    return {"samples": samples, "correct": bool(world.allreduce(correct, op=MPI.LAND))}


def run_measure(spec: dict) -> dict:
    platforms = {k: Platform.from_dict(v) for k, v in spec["platforms"].items()}
    out = {"ranks": world.size, "sizes": {}}
    comms = {}
    for per_size in spec["sizes"]:
        for v in per_size["variants"]:
            key = v["platform"], v["algo"]
            if key not in comms:
                # multi_tree as the driver chose it: its timetable (the driver's MULTI_TREE)
                opts = {"slices_per_period": 16} if key[1] == "multi_tree" else None
                comms[key] = HetComm(
                    world, platforms[key[0]], key[1], options=opts, timeout=TIMEOUT
                )
        out["sizes"][str(per_size["nbytes"])] = measure_size(
            per_size["nbytes"], per_size["variants"], comms, spec["rounds"]
        )
    for hc in comms.values():
        hc.close()
    return out


def main() -> None:
    mode, arg, path = sys.argv[1:4]
    if mode == "probe":
        out = run_probe([int(s) for s in arg.split(",")])
    else:
        with open(arg) as fh:
            out = run_measure(json.load(fh))
    if me == 0:
        with open(path, "w") as fh:
            json.dump(out, fh)


main()
