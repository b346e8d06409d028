"""The rooted collectives' nonblocking and persistent forms (runtime/nonblocking.py,
runtime/persistent.py): ``Ireduce``, ``Igather``, ``Iscatter``, ``Reduce_init``,
``Gather_init``, ``Scatter_init`` of a ``HetComm`` whose rooted collectives are planned run
hetcoll's schedule, bit-identical to mpi4py's own collectives, mixed with other requests in
``Waitall``/``Waitany``/``Testall``, 1..8 ranks; ``last_call`` names the nonblocking or
persistent call once it has completed; what is not planned stays MPI's own.

Before, these calls were MPI's own (unplanned): the program's checks that hetcoll ran each
call and of ``last_call`` fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "rooted_nonblocking.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_rooted_nonblocking_and_persistent_calls_are_planned(n):
    assert run_checks(PROGRAM, n, timeout=300).stderr == ""
