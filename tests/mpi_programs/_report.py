"""For the MPI test programs that end in one line on rank 0's stdout: the checks and the report.

A program calls :func:`check` (or :func:`same`) on every rank; a failed check is kept as a
line naming its rank, never raised, so that no rank leaves the program's collectives early.
At the end :func:`report` waits for every rank, gathers the lines to rank 0, and rank 0 prints
one JSON line, ``{"ranks": K, "failures": [...]}`` (rank 0's lines first, then rank 1's, ...),
which the test compares with ``{"ranks": K, "failures": []}``.
"""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    """Keep ``rank R: what`` when ``ok`` is false."""
    if not ok:
        failures.append(f"rank {WORLD.rank}: {what}")


def same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Check that ``a`` and ``b`` have one dtype and the same bytes."""
    check(a.dtype == b.dtype and a.tobytes() == b.tobytes(), what)


def report() -> None:
    """Every rank's failed checks to rank 0, which prints them as one JSON line."""
    WORLD.Barrier()
    everyone = WORLD.gather(failures, 0)
    if WORLD.rank == 0:
        print(json.dumps({"ranks": WORLD.size, "failures": [f for fs in everyone for f in fs]}))
