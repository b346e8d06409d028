"""Nonblocking planned collectives (runtime/nonblocking.py): ``Ibcast``, ``Iallreduce``,
``Iallgather`` and ``Ibarrier`` of a ``HetComm`` run hetcoll's schedule and return MPI
requests that complete in any order (``Wait``, ``Test``, ``Waitall`` with point-to-point
requests, ``Waitany``), bit-identical to mpi4py's own collectives, 1..8 ranks; a rank
that never calls makes the others' ``Wait`` raise within the timeout, and the program
prints only its own line.

Before, these calls were mpi4py's own (unplanned): the program's checks that hetcoll ran
each call fail, and its last case (a root that never calls) hangs until the job is killed."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "nonblocking.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_nonblocking_collectives_are_planned_and_complete_in_any_order(n):
    assert run_checks(PROGRAM, n, timeout=240).stderr == ""
