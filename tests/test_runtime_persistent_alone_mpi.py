"""A lone planned persistent collective (runtime/persistent.py): with one live persistent
request and no nonblocking call queued, ``Wait`` runs the start made in the ``*_init`` call
without looking for the order of the started calls (no ``Iprobe`` from the program's
thread), bit-identical to mpi4py's ``Bcast`` and ``Reduce`` (every root), ``Allreduce``
and ``Allgather`` (new data at every start, in place too), and to mpi4py's own
``Gather_init``, ``Scatter_init`` (every root, IN_PLACE at the root, a strided block) and
``Reduce_scatter_block_init`` (in place too) started on the same buffers; ``Barrier_init``
likewise; 1..5 and 8 ranks.  The cases around it (a queued ``Ibcast``, two live requests, a
blocking call, MPI's ``Waitall``, a non-contiguous datatype to broadcast, a
non-commutative operator) still run in the order made.

Before, every ``Wait`` looked for the order first, and a start of every form but
``Bcast_init`` ran the blocking method (a look per start, 3 per request): the program's
count of looks fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "persistent_alone.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_a_lone_persistent_bcast_runs_without_looking_for_the_order(n):
    assert run_checks(PROGRAM, n, timeout=240).stderr == ""
