"""A persistent ``Bcast`` of one message per tree edge (runtime/direct.py): its starts run
as MPI's own point-to-point requests on the program's buffer, bit-identical to mpi4py's
``Bcast`` over many starts with the buffer refilled between them (every root, three
planners, 1 byte to 100 000 bytes, a strided datatype), ``Startall`` of several and
``Waitall`` with a point-to-point pair and MPI's own ``Bcast_init``, blocking and
nonblocking calls between a start and its wait, ``Free`` (also while active), and a root
that never starts (the others time out, nothing left posted); 1..4 ranks.

Before, these starts ran the engine's fast path (a ``PersistentRequest``, a plan compiled
for the engine): the program's checks of the path fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "persistent_direct.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_one_message_tree_bcast_init_runs_on_point_to_point_requests(n):
    assert run_checks(PROGRAM, n, timeout=300).stderr == ""
