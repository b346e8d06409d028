"""How long the progress thread (runtime/nonblocking.py) leaves a persistent start it finds
to the program's thread: 50 us at first, doubling while the program's thread runs its
starts itself (its ``Wait``), up to 2 ms, and back to 50 us once the thread had to run one
(a program waiting in MPI's own ``Waitall``).

Before, every start found was left for 50 us: a thread that woke every 50 us while the
program ran ``Start`` + ``Wait`` back to back, contending for the GIL with it (the second
assertion fails)."""

from __future__ import annotations

import time

from mpi4py import MPI

from hetcoll.runtime import nonblocking
from hetcoll.runtime.nonblocking import Progress


def test_the_thread_leaves_starts_longer_to_a_program_that_runs_them_itself():
    progress = Progress("test progress")  # no live request: its thread sleeps until told
    memory = bytearray(1)
    tag, ran = 3, []
    req = progress.comm.Ssend_init([memory, 0, MPI.BYTE], 0, tag)
    record = {"start": lambda: ran.append(1), "name": "Bcast_init", "memory": memory}
    record.update(error=None, runs=0, request=lambda: req)
    progress.records[tag] = record
    try:
        for _ in range(8):  # the program's Wait runs each start the thread left to it
            req.Start()
            with progress.runner:
                before = time.monotonic()
                assert not progress.run_started(patient=True)  # a new start: left
                after, later = time.monotonic(), progress.later
                assert before + nonblocking._NAP <= later
                assert progress.run_started(until=record)  # the program's thread runs it
            req.Wait()
        assert later >= before + nonblocking._LONGEST_NAP  # left 2 ms by now
        assert later <= after + nonblocking._LONGEST_NAP
        req.Start()  # a start nobody waits for in Python (MPI's Waitall)
        with progress.runner:
            assert not progress.run_started(patient=True)  # found once: left
            assert progress.run_started(patient=True)  # found again: the thread runs it
        req.Wait()
        req.Start()
        with progress.runner:
            before = time.monotonic()
            assert not progress.run_started(patient=True)  # the next one: left 50 us again
            assert (
                before + nonblocking._NAP <= progress.later <= time.monotonic() + nonblocking._NAP
            )
            assert progress.run_started(until=record)
        req.Wait()
        assert len(ran) == 10 and record["runs"] == 10
    finally:
        assert progress.stop(5.0)
        req.Free()
        progress.comm.Free()
