"""Time on a :class:`~.comm.ScheduleComm`: its clock, and collectives that start together.

Under emulation every rank reads one shared clock (one host's ``CLOCK_MONOTONIC``, or
rank 0's across hosts: :mod:`.emulation`); measurement code starts a collective at an
agreed instant with :meth:`Clocks.start_together` and times it with :meth:`Clocks.now`.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

__all__ = ["Clocks"]

_TAG_START = 5  # a control tag (below transport.CONTROL_TAGS)


class Clocks:
    """Mixed into :class:`~.comm.ScheduleComm` (uses its ``comm``, ``_wait``, ``emulator``,
    ``shift_ns``, ``shared_clock``, ``rank`` and ``size``)."""

    _start_at: int | None = None

    def _sync(self) -> None:
        """MPI's own barrier (``Ibarrier``), honouring the timeout: for measurement code."""
        self._wait(self.comm.Ibarrier(), "barrier")

    def now(self) -> int:
        """The clock collectives are timed with (ns; shared by all ranks under emulation)."""
        if self.emulator is not None:
            return self.emulator.now()
        return time.monotonic_ns() + self.shift_ns

    def start_together(self, settle: float = 2e-3, root: int = 0) -> int:
        """Agree on a start time ``settle`` seconds from now (on ``root``'s clock) and make the
        next collective of this wrapper begin then on every rank (its receives are posted
        before).  Needs a shared clock (:attr:`shared_clock`); falls back to a barrier.
        Returns the start time (ns on :meth:`now`'s clock)."""
        if not self.shared_clock:
            self._sync()
            return self.now()
        # Point to point from the root rather than a broadcast: each rank needs only its own
        # look at the network to learn the time, not a chain of ranks that are asleep.
        t = np.array([self.now() + int(settle * 1e9)], dtype=np.int64)
        if self.rank == root:
            reqs = [
                self.comm.Isend([t, MPI.INT64_T], r, _TAG_START)
                for r in range(self.size)
                if r != root
            ]
            self._wait(_All(reqs), "sending the start time")
        else:
            self._wait(self.comm.Irecv([t, MPI.INT64_T], root, _TAG_START), "the start time")
        self._start_at = int(t[0])
        return self._start_at


class _All:
    """``Test()`` of several requests at once (for :meth:`ScheduleComm._wait`)."""

    def __init__(self, reqs: list[MPI.Request]) -> None:
        self.reqs = reqs

    def Test(self) -> bool:
        return MPI.Request.Testall(self.reqs)
