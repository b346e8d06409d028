"""MPI side of bench_auto_native.py: ``ranks/auto_native.py SIZES ROUNDS OUT``.

Without emulation: per message size (comma-separated bytes), a default ``HetComm``'s
``Bcast`` (``algo="auto"``, no tuning file: what a user's first program runs) against
mpi4py's own ``comm.Bcast`` on the same ranks, side by side: ``ROUNDS`` rounds, each timing
both variants (the order reversed every other round), one warm-up round not kept.  One
sample is ``calls(size)`` broadcasts back to back from rank 0 (many for small messages,
whose single call is below the clock's resolution for practical purposes), from the
root's start to the last rank's return on the host's shared monotonic clock, divided by
the calls.  Every rank checks its bytes against the root's after every sample.  Rank 0
writes the samples, the wrapper's ``last_choice`` and whether every rank had the right
bytes.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs

world = MPI.COMM_WORLD
me = world.rank


def calls(nbytes: int) -> int:
    """Broadcasts per sample: about a few milliseconds of work or at least one call."""
    return max(1, min(1000, (4 << 20) // max(nbytes, 4096)))


def sample(bcast, buf: np.ndarray, k: int) -> float:
    """Seconds per call of ``k`` calls back to back (root's start to the last return)."""
    world.Barrier()
    t0 = time.monotonic_ns()
    for _ in range(k):
        bcast(buf, 0)
    t1 = time.monotonic_ns()
    return (world.allreduce(t1, op=MPI.MAX) - world.bcast(t0, 0)) / 1e9 / k


def main() -> None:
    sizes = [int(s) for s in sys.argv[1].split(",")]
    rounds = int(sys.argv[2])
    flat = Platform(nodes_from_costs([1e-6] * world.size), name="flat")
    hc = HetComm(world, flat)
    variants = {"hetcomm": hc.Bcast, "mpi": world.Bcast}
    out = {"ranks": world.size, "rounds": rounds, "sizes": {}}
    correct = True
    for nbytes in sizes:
        data = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
        buf = data.copy()
        k = calls(nbytes)
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for r in range(rounds + 1):  # round 0 warms up and is not kept
            for name in list(variants)[:: -1 if r % 2 else 1]:
                if me:
                    buf.fill(0)
                t = sample(variants[name], buf, k)
                correct &= bool(np.array_equal(buf, data))
                if r:
                    samples[name].append(t)
        choice = hc.last_choice
        out["sizes"][str(nbytes)] = {
            "calls": k,
            "samples": samples,
            "choice": None if choice is None else choice.to_dict(),
        }
    out["correct"] = bool(world.allreduce(correct, op=MPI.LAND))
    hc.close()
    if me == 0:
        with open(sys.argv[3], "w") as fh:
            json.dump(out, fh)


main()
