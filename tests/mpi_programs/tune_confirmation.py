"""MPI test program: ``hetcoll tune``'s confirmation of MPICH's algorithms agrees on every
rank even where the ranks' times differ (``jobs/confirmation.py``: each look's decision is
rank 0's).  ``mpiexec -n K python -m mpi4py tune_confirmation.py``: measurements replaced
by synthetic seconds, ring faster than MPI's own on rank 0 and slower on the others, in
the first rounds and after; every rank must end with rank 0's rule (ring) after as many
rounds as rank 0."""

from __future__ import annotations

from types import SimpleNamespace

from _report import check, report
from mpi4py import MPI

from hetcoll.jobs import tune

WORLD = MPI.COMM_WORLD


def _seconds(comm, one, plan, calls) -> float:
    """A loop's seconds: 1 ms a call of MPI's own; ring 0.5 ms on rank 0, 2 ms elsewhere."""
    if plan.get("mpich") is None:
        return 1e-3 * calls
    return (0.5e-3 if WORLD.rank == 0 else 2e-3) * calls


def main() -> None:
    tune._timed = _seconds
    tune._call = lambda hc, collective, nbytes, plain=False: lambda a, s: None
    tune._forced_calls = lambda collective, plans, call: {"ring": lambda: None}
    mpi = {"algorithm": "mpi", "segment_size": None}
    hc = SimpleNamespace(base=WORLD, emulate=False)
    row = tune.measure_calls(hc, "allreduce", 8, [mpi, {**mpi, "mpich": "ring"}], 5, 0.02)
    mine = (row["winner"].get("mpich"), row.get("confirm_rounds"))
    check(WORLD.allgather(mine) == [("ring", 10)] * WORLD.size, f"rule and rounds {mine}")
    report()


if __name__ == "__main__":
    main()
