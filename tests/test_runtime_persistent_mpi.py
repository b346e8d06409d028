"""Persistent planned collectives (runtime/persistent.py): ``Bcast_init``,
``Allreduce_init``, ``Allgather_init`` and ``Barrier_init`` of a ``HetComm`` return
``MPI.Prequest`` objects whose starts run hetcoll's schedule, bit-identical to mpi4py's own
collectives, 1..8 ranks: ``Start``/``Wait``, MPI's own ``Prequest.Startall`` and
``Request.Waitall`` (with point-to-point requests) and ``Testall``, ``Free``, and starts
mixed with nonblocking and blocking calls in the order made.

Before, these calls were MPI's own (unplanned): the program's checks that hetcoll ran each
start fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "persistent.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_persistent_collectives_are_planned_and_start_many_times(n):
    assert run_checks(PROGRAM, n, timeout=240).stderr == ""
