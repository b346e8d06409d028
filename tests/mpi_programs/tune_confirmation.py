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
    if plan.get("mpich") is None:
        return 1.0
    return 0.5 if WORLD.rank == 0 else 2.0


def main() -> None:
    tune._single_calls = _seconds
    tune._timed = lambda comm, one, plan, calls: 1e-3 * calls
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
