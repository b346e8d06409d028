"""A training-like loop on HetComm: one changed line in an mpi4py program.

Each step broadcasts the model's weights from rank 0, sums every rank's gradient, and makes
the small calls a training loop makes (a loss, a barrier).  ``HetComm``'s default
(``algo="auto"``) decides per call: MPI's own collective, unless hetcoll's plan for the
platform is predicted faster by more than the model's error (or a tuning file measured on
these ranks says otherwise).  Every result is checked against what plain mpi4py computes.

Run (8 ranks, as many as the platform has nodes; ``--emulate`` makes this machine behave
like the platform, without it the collectives run natively):

    .venv/bin/mpiexec -n 8 .venv/bin/python -m mpi4py examples/training_loop.py \\
        --platform examples/net.json --emulate

``--weights 50MiB --grads 8MiB`` is the size of a real model; the defaults are small so
that the example runs in seconds.  Rank 0 prints what ran for each call and the checks.
"""

from __future__ import annotations

import argparse
import contextlib

import numpy as np
from mpi4py import MPI

import hetcoll
from hetcoll.units import check_quantity, format_size


def gradient(rank: int, step: int, n: int) -> np.ndarray:
    """A rank's gradient: integers in float32, so that every summation order is exact."""
    return ((np.arange(n, dtype=np.int64) * (rank + 1) + step) % 7).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="examples/net.json")
    ap.add_argument("--weights", default="1MiB", help="bytes of weights broadcast each step")
    ap.add_argument("--grads", default="256KiB", help="bytes of gradients summed each step")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--emulate", action="store_true", help="impose the platform's costs")
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--tuning", default=None, help="a tuning file written by hetcoll tune")
    ap.add_argument(
        "--plain",
        action="store_true",
        help="use MPI.COMM_WORLD as it is (under python -m hetcoll.launch it is a HetComm)",
    )
    args = ap.parse_args()
    nw = check_quantity(args.weights, "size", "--weights") // 4
    ng = check_quantity(args.grads, "size", "--grads") // 4

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    # the one changed line: a HetComm instead of MPI.COMM_WORLD
    wrapper = (
        contextlib.nullcontext(comm)
        if args.plain
        else hetcoll.HetComm(
            comm,
            args.platform,
            emulate=args.emulate,
            time_scale=args.time_scale,
            tuning=args.tuning,
        )
    )
    with wrapper as hc:
        weights = np.zeros(nw, dtype=np.float32)
        if rank == 0:
            weights[:] = np.arange(nw) % 101
        expect = np.arange(nw, dtype=np.float32) % 101  # what every rank must receive
        ran: dict[str, str] = {}
        ok = True
        for step in range(args.steps):
            hc.Bcast(weights, root=0)
            ran["Bcast of the weights"] = _what(hc, format_size(weights.nbytes))
            ok &= bool(np.array_equal(weights, expect))
            grad = gradient(rank, step, ng)
            hc.Allreduce(MPI.IN_PLACE, grad, op=MPI.SUM)
            ran["Allreduce of the gradients"] = _what(hc, format_size(grad.nbytes))
            total = sum(gradient(r, step, ng) for r in range(size))
            ok &= bool(np.array_equal(grad, total))
            loss = hc.allreduce(float(rank + step), op=MPI.SUM)
            ok &= loss == sum(r + step for r in range(size))
            hc.Barrier()
            ran["Barrier"] = _what(hc, "")
            update = np.float32(0.5) * total.sum() / np.float32(ng)
            expect -= update
            if rank == 0:  # the update, on the root only: the next Bcast sends it
                weights -= update
        every = comm.allreduce(int(ok), op=MPI.MIN)  # every rank's checks, on plain MPI
    if rank == 0:
        for call, what in ran.items():
            print(f"{call}: {what}")
        print(f"{args.steps} steps on {size} ranks: results equal mpi4py's: {bool(every)}")


def _what(hc, size: str) -> str:
    """What ran for the wrapper's last call (its choice), deterministic."""
    head = f"{size}: " if size else ""
    c = getattr(hc, "last_choice", None)
    if c is None:
        return f"{head}plain mpi4py"
    if c.source == "one host":
        return f"{head}MPI's own (every rank on this host, not emulated: no model applies)"
    if c.source != "model":
        return f"{head}{c.algorithm} ({c.source})"
    gain = c.mpi / c.predicted if c.predicted else 1.0
    if c.algorithm == "mpi":
        return f"{head}MPI's own (hetcoll's best plan, {c.plan}, predicted {gain:.2f}x its speed)"
    return f"{head}hetcoll's plan ({c.plan}), predicted {gain:.2f}x MPI's speed"


if __name__ == "__main__":
    main()
