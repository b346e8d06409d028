"""Adversarial uses of a persistent ``Bcast`` of one message per tree edge
(runtime/direct.py), 1..4 ranks (mpi_programs/persistent_direct_adversarial.py): several
requests started back to back and completed by ``Wait`` in another order, ``Waitany``,
``Testsome``, ``Test`` loops; beside an engine-run request, MPI's own and a point-to-point
pair; started in different orders on different ranks (never another request's bytes: its
own tag per request); ``Free`` of a request never started or completed, one collected,
starts after ``close()`` or the wrapper's collection raising; zero counts; struct,
resized, vector and displaced datatypes; ``Split`` sub-communicators; and below
``MPI_THREAD_MULTIPLE``, MPI's own request.  Every start's bytes compared bit for bit,
every rank's path the same.

With one tag for every request on the private communicator, the different start orders
deliver another root's bytes, or fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "persistent_direct_adversarial.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_direct_persistent_bcast_under_adversarial_use(n):
    assert run_checks(PROGRAM, n, timeout=300).stderr == ""


def test_below_thread_multiple_a_bcast_init_is_mpis_own():
    env = {"MPI4PY_RC_THREAD_LEVEL": "serialized"}
    run_checks(PROGRAM, 3, timeout=300, env=env)
