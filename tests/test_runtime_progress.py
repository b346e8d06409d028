"""How long the progress thread (runtime/nonblocking.py) leaves a persistent start it finds
to the program's thread: 50 us at first, doubling while the program's thread runs its
starts itself (its ``Wait``), up to 2 ms, and back to 50 us once the thread had to run one
(a program waiting in MPI's own ``Waitall``).

Before, every start found was left for 50 us: a thread that woke every 50 us while the
program ran ``Start`` + ``Wait`` back to back, contending for the GIL with it (the second
assertion fails)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.errors import HetcollError
from hetcoll.platform import nodes_from_costs
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


def test_a_lone_start_after_a_failed_one_completed_by_waitall_does_not_raise_its_error():
    """A start that failed and completed in MPI's own ``Waitall`` (its error kept for the
    wrapper's next call) is not raised again by the ``Wait`` of a later start that ran."""
    platform = Platform(nodes_from_costs([1e-6]))
    hc = HetComm(MPI.COMM_SELF, platform, "binomial", timeout=30)
    buf = np.zeros(1, np.uint8)
    req = hc.Bcast_init(buf, 0)
    record = req.record
    fine, boom = record["start"], HetcollError("a start failed")

    def fail() -> None:
        raise boom

    record["start"] = fail
    req.Start()
    MPI.Request.Waitall([req])  # MPI's own: the progress thread runs the start
    assert record["error"] is boom
    record["start"] = fine
    req.Start()
    req.Wait()  # before: raised the failed start's error again
    with pytest.raises(HetcollError, match="a start failed"):
        hc.Bcast(buf, 0)  # the wrapper's next call reports it
    req.Free()
    hc.close()
