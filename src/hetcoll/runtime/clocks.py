"""Time on a :class:`~.comm.ScheduleComm`: waiting with a deadline, its clock, and
collectives that start together.

Under emulation every rank reads one shared clock (one host's ``CLOCK_MONOTONIC``, or
rank 0's across hosts: :mod:`.emulation`); measurement code starts a collective at an
agreed instant with :meth:`Clocks.start_together` and times it with :meth:`Clocks.now`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from mpi4py import MPI

from ..errors import CollectiveTimeoutError

__all__ = ["NATIVE", "Clocks", "Host"]

_TAG_START = 5  # a control tag (below transport.CONTROL_TAGS)
_NS = 1_000_000_000


class Host(NamedTuple):
    """What the native loops (:mod:`.fast`, :mod:`.segments`) ask of the machine they run on:
    its clock (ns), a sleep (seconds) and MPI's ``Testsome`` over a list of requests.
    :data:`NATIVE` is this machine (``ScheduleComm.host``); the tests run the loops on a
    virtual one, whose clock moves only when every rank waits, against the table of the
    send rule."""

    clock: Callable[[], int]
    sleep: Callable[[float], None]
    testsome: Callable[[list], Any]


NATIVE = Host(time.monotonic_ns, time.sleep, MPI.Request.Testsome)


class Clocks:
    """Mixed into :class:`~.comm.ScheduleComm` (uses its ``comm``, ``timeout``,
    ``on_timeout``, ``spin``, ``poll``, ``emulator``, ``shift_ns``, ``shared_clock``,
    ``rank``, ``size``, ``notices`` and ``_rest``)."""

    _start_at: int | None = None
    _broken: str | None = None
    #: the machine the native loops run on: its clock, a sleep, Testsome
    host: Host = NATIVE

    def _allgather(self, data: bytes, what: str, nap: float = 200e-6) -> list[bytes]:
        n = len(data)
        send = np.frombuffer(data, dtype=np.uint8).copy()
        recv = np.zeros(self.size * n, dtype=np.uint8)
        self._wait(self.comm.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE]), what, nap=nap)
        return [recv[k * n : (k + 1) * n].tobytes() for k in range(self.size)]

    def _wait(
        self, req: MPI.Request, what: str, timeout: float | None = None, nap: float = 200e-6
    ) -> None:
        """Wait for ``req`` until the timeout: looks for ``spin`` seconds, then naps of
        ``nap`` seconds (sleeping leaves the CPU to the other ranks of a busy host)."""
        if req.Test():
            return
        timeout = self.timeout if timeout is None else timeout
        now = time.monotonic_ns()
        deadline, spin_until = now + int(timeout * _NS), now + int(self.spin * _NS)
        while not req.Test():
            now = time.monotonic_ns()
            if now > deadline:
                self._timed_out(
                    f"rank {self.rank}: {what} timed out after {timeout:g} s "
                    "(does every rank call it?)"
                )
            if now > spin_until:
                time.sleep(nap)

    def _timed_out(self, message: str) -> None:
        self._broken = message
        if self.on_timeout == "abort":
            end_job(3, message)
        raise CollectiveTimeoutError(message)

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


#: Seconds a rank waits after flushing its last words before ``MPI_Abort``.  The launcher
#: (MPICH's Hydra) forwards a rank's stderr through a pipe and may tear the job down before
#: it has read it: the user would then see an exit code and no reason.  Best effort only.
ABORT_GRACE = 0.25


def end_job(errorcode: int, message: str | None = None) -> None:
    """End the whole job (``MPI_Abort``), after writing ``message`` as one
    ``hetcoll: error:`` line and giving the launcher :data:`ABORT_GRACE` to forward it."""
    if message is not None:
        sys.stderr.write(f"hetcoll: error: {' '.join(message.split())}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(ABORT_GRACE)
    MPI.COMM_WORLD.Abort(errorcode)
