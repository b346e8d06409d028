"""The lone ``Start`` + ``Wait`` of a persistent ``Bcast`` of one message per tree edge
(runtime/direct.py), 2 and 4 ranks (mpi_programs/persistent_direct_lone.py): traced, it
runs three frames of hetcoll (``DirectRequest.Start``, ``DirectRequest.Wait``,
``DirectBcast.start``), no lock but the runner, no clock, no thread identity, and receives
its own message with one persistent receive reused by every start (no ``Recv``); the bytes,
``last_call`` and the call count as for any planned call; and the ways around it
(``Startall``, a second live request, a runner held by another thread, a broken wrapper)
deliver the same bytes.

Before, the wait ran ``_run_alone``, the start's closure and ``DirectBcast.run`` (six
frames, the thread's identity, the guard's lock, the clock) and a ``Recv`` per start."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_checks

PROGRAM = Path(__file__).with_name("mpi_programs") / "persistent_direct_lone.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [2, 4])
def test_a_lone_direct_start_and_wait_runs_three_frames_of_hetcoll(n):
    assert run_checks(PROGRAM, n, timeout=300).stderr == ""
