"""Notices: a rank that finds the ranks disagree on a call tells every other rank.

A disagreement (another root, size, datatype or operator on one rank) shows where a message
of the wrong call or schedule arrives (:mod:`.transport`).  The rank that sees it raises
:class:`~hetcoll.errors.MismatchError` and sends every other rank a notice ``(call number,
digest, its rank)``; each rank keeps one receive for notices posted for the wrapper's
lifetime and looks at it whenever it waits.  So a rank still in that call raises too, instead
of waiting for data that will not come; a rank that had finished it (a root that only sent)
raises once its next call has completed (its data are good), or at ``close()``, which also
compares every rank's record of its calls in case no message showed the disagreement.
Leftover messages of an abandoned call are recognised by their call number and dropped.

A rank that refuses a call before it sends anything (its own arguments are wrong:
:meth:`Notices.refuse`) tells the others the same way, so that they raise instead of
waiting for its messages until the timeout.  A rank that had completed the refused call
without that rank hears of it in a later call, or after it: when it hears it while waiting
in a later call, it leaves that call and tells the others that it *left* it (digest
:data:`LEFT`), which is no disagreement on that call: a rank still in it raises (it may be
waiting for this rank), a rank that completed it does not (its data are good).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError, MismatchError

__all__ = ["LEFT", "NOTICE_TAG", "REFUSED", "Notices", "refusing"]

NOTICE_TAG = 9
#: the digest of a notice from a rank that refused the call (see the module docstring)
REFUSED = -2
#: the digest of a notice from a rank that left the call for an earlier call's refusal
LEFT = -3


class Notices:
    """One rank's notices on a private communicator (see the module docstring)."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm = comm
        self.buf = np.zeros(3, dtype=np.int64)
        self.req = comm.Irecv([self.buf, MPI.INT64_T], MPI.ANY_SOURCE, NOTICE_TAG)
        self.stale: set[int] = set()  # calls this rank abandoned
        self.reported: set[int] = set()  # calls this rank raised MismatchError for
        self.heard: dict[int, int] = {}  # call -> the rank that found the disagreement
        self.refused: set[int] = set()  # calls another rank refused (heard so)
        self.left: dict[int, int] = {}  # call -> a rank that left it for an earlier refusal
        self.flying: list[tuple[MPI.Request, object]] = []  # sends in flight and their memory
        self.early: dict = {}  # messages of later calls received early (transport.py)

    def hear(self) -> None:
        """Take every notice that has arrived; let go of sends that completed."""
        while self.req.Test():
            self._take()
        if self.flying:
            keep = []
            for req, mem in self.flying:
                if not req.Test():
                    keep.append((req, mem))
                elif req != MPI.REQUEST_NULL:  # a persistent request, now inactive
                    req.Free()
            self.flying = keep

    def _take(self) -> None:
        """Record the notice just received and listen for the next."""
        seq, digest, rank = (int(x) for x in self.buf)
        if digest == LEFT:
            self.left.setdefault(seq, rank)
        elif seq not in self.heard:
            self.heard[seq] = rank
            if digest == REFUSED:
                self.refused.add(seq)
        self.req = self.comm.Irecv([self.buf, MPI.INT64_T], MPI.ANY_SOURCE, NOTICE_TAG)

    def check(self, seq: int, what: str) -> None:
        """While call ``seq`` waits: raise if another rank found it wrong."""
        self.hear()
        if self.refused:  # this call may wait for a rank that refused it or an earlier one
            early = [s for s in self.refused if s <= seq and s not in self.reported]
            if early:
                s = min(early)
                self.reported.update((*early, seq))
                self.stale.update((*early, seq))
                if s < seq and seq not in self.heard and seq not in self.left:
                    # this call is no disagreement: tell the others that this rank left it
                    self.left[seq] = self.comm.rank
                    self._tell(seq, LEFT)
                raise MismatchError(
                    f"rank {self.comm.rank}: {what}: rank {self.heard[s]} refused call {s}"
                    f"{' (this one)' if s == seq else f', so this call ({seq}) is abandoned'}"
                    ": its arguments are wrong there (its error says how)"
                )
        if seq in self.heard and seq not in self.reported:
            self.reported.add(seq)
            raise MismatchError(
                f"rank {self.comm.rank}: {what}: rank {self.heard[seq]} found that the ranks "
                f"planned different schedules for this call (call {seq}); every rank must "
                "call the same collectives in the same order with the same root, members, "
                "size, segment size, datatype and operator"
            )
        if seq in self.left and seq not in self.reported:
            self.reported.add(seq)
            self.stale.add(seq)
            raise MismatchError(
                f"rank {self.comm.rank}: {what}: rank {self.left[seq]} left this call (call "
                f"{seq}) when it heard that another rank refused an earlier call (that "
                "rank's error says how its arguments were wrong)"
            )

    def raise_earlier(self, seq: int) -> None:
        """After call ``seq`` completed: raise, once, for an earlier call that another rank
        found wrong while this rank had finished it."""
        if self.req.Test():
            self._take()
            self.hear()
        elif not self.heard:  # the common case: nothing heard, ever
            return
        earlier = sorted(s for s in self.heard if s <= seq and s not in self.reported)
        if earlier:
            self.reported.update(earlier)
            self.stale.update(earlier)  # its leftovers are dropped from now on
            s = earlier[0]
            if s in self.refused:
                raise MismatchError(
                    f"rank {self.comm.rank}: rank {self.heard[s]} refused call {s} on this "
                    "wrapper, which this rank completed (it only sent, or received from "
                    "other ranks): its arguments were wrong there (its error says how)"
                )
            raise MismatchError(
                f"rank {self.comm.rank}: rank {self.heard[s]} found that the ranks planned "
                f"different schedules for call {s} on this wrapper, which this rank completed "
                "(it only sent, or received from ranks that agreed with it); every rank must "
                "call the same collectives in the same order"
            )

    def found_earlier(self, seq: int) -> None:
        """A message showed that call ``seq``, which this rank completed, was not the same
        call on every rank: drop its leftovers, tell every other rank, and raise after this
        rank's current call (:meth:`raise_earlier`)."""
        self.stale.add(seq)
        if seq in self.heard:
            return
        self.heard[seq] = self.comm.rank
        self._tell(seq, 0)

    def refuse(self, seq: int) -> None:
        """This rank refused call ``seq`` before sending anything of it: drop its leftovers
        from now on and tell every other rank (each raises in that call, or after its next
        one if it had completed it without this rank)."""
        self.stale.add(seq)
        self.reported.add(seq)
        if seq not in self.heard:
            self.heard[seq] = self.comm.rank
        self._tell(seq, REFUSED)

    def abandon(self, seq: int, digest: int, sends: list, tell: bool = True) -> None:
        """Call ``seq`` failed on this rank with a MismatchError: drop its leftovers from now
        on, keep its sends in flight, and tell the others if this rank found it (``tell``
        False: every rank knows already, ``check="always"``)."""
        self.stale.add(seq)
        self.flying.extend(sends)
        found = seq not in self.heard and seq not in self.left
        self.reported.add(seq)
        if found and tell:
            self._tell(seq, digest)

    def _tell(self, seq: int, digest: int) -> None:
        note = np.array([seq, digest, self.comm.rank], dtype=np.int64)
        for r in range(self.comm.size):
            if r != self.comm.rank:
                self.flying.append((self.comm.Isend([note, MPI.INT64_T], r, NOTICE_TAG), note))

    def final(self, seq: int, history: int, allgather) -> tuple[list[int] | None, bool]:
        """At ``close()``: compare every rank's record of its calls (``seq``, ``history``)
        with one ``allgather``; ``(ranks whose calls differ from rank 0's, if this rank has
        not raised for any yet, else None; whether to keep the communicator)``.

        A communicator on which calls disagreed anywhere may hold messages nobody will
        receive (an eager send completes unreceived), and MPI gives a freed communicator's
        context to a later one, where they would match its receives (a new wrapper's first
        ``Bcast`` can take an abandoned ``Allgather``'s message).  So it is kept, never
        freed, the same on every rank (``MPI_Comm_free`` is collective)."""
        troubled = bool(self.stale or self.heard or self.reported)
        mine = np.array([seq, history, troubled], dtype=np.int64).tobytes()
        every = allgather(mine, "the final agreement check (close)")
        records = [d[:16] for d in every]
        keep = len(set(records)) > 1 or any(np.frombuffer(d, np.int64)[2] for d in every)
        unreported = None
        if len(set(records)) > 1 and not self.reported:
            unreported = [r for r, d in enumerate(records) if d != records[0]]
        return unreported, keep

    def close(self) -> None:
        """Stop listening (the communicator is about to be freed or left)."""
        self.req.Cancel()
        self.req.Wait()
        for req, _ in self.flying:
            if not req.Test() or req != MPI.REQUEST_NULL:
                req.Free()  # an active one completes in the background
        self.flying = []


def refusing(method):
    """``method`` (a planned collective) made to refuse collectively: when it raises
    :class:`~hetcoll.errors.HetcollError` on a rank before that rank sent anything, the
    other ranks raise too instead of waiting (:meth:`.comm.ScheduleComm._refused`)."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        seq = self._seq
        try:
            return method(self, *args, **kwargs)
        except HetcollError as exc:
            self._refused(exc, seq)
            raise

    # named and documented as ``method``, without ``__wrapped__`` (which marks _or_mpi's)
    call.__name__, call.__qualname__, call.__doc__ = (
        method.__name__,
        method.__qualname__,
        method.__doc__,
    )
    return call
