"""``check="always"``: every rank knows that every rank made the same call before it returns.

Each rank sends ``(call number, digest)`` to rank 0 as the call begins (24 bytes, on a
control tag); rank 0 gathers them before its own part of the call.  When they are all
equal, it sends each rank the verdict (the same 24 bytes) and every rank returns only
once it has it; when they differ, rank 0 raises :class:`~hetcoll.errors.MismatchError` and
tells every rank (:mod:`.notices`), which raises too, wherever it waits: for the verdict,
or for data that will not come.  Meanwhile the data go as with the default check (each
message carries the call's digest: a receiver accepts only data of the call it made), so
the check costs one round of tiny messages through rank 0 overlapped with the call — two
message latencies for a rank that would otherwise wait for nothing — instead of a
separate all-to-all round (the former hypercube allreduce: ``log2 n`` exchanges of every
rank).  Under emulation the whole round comes before the call (unemulated), so that the
call's modelled times stay its own.

The round does not depend on the call, so ranks that disagree on it (another root, another
size) still meet in it.  Its messages never outlive their call: rank 0 decides only once
every digest is in, sends verdicts only when all agree, and a verdict of an earlier call
(which a rank abandoned before it came) is recognised by its call number and dropped.
Rank 0 handles ``n - 1`` messages each way: fine for the tens of ranks of one platform.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mpi4py import MPI

from ..errors import MismatchError

__all__ = ["AGREE_TAG", "VERDICT_TAG", "Agreement"]

#: control tags (below transport.CONTROL_TAGS) of the digests and of the verdicts
AGREE_TAG, VERDICT_TAG = 13, 15


class Agreement:
    """The agreement round of one wrapper: persistent requests for its messages, made once.

    ``wait(requests, what, seq)`` is the wrapper's wait (timeout, notices: it raises
    :class:`MismatchError` once rank 0 reported the call); ``notices`` the wrapper's.
    A call does :meth:`begin`, its own part, then :meth:`end`.
    """

    def __init__(self, comm: MPI.Comm, wait: Callable[..., None], notices) -> None:
        self.comm, self.wait, self.notices = comm, wait, notices
        self.rank, size = comm.rank, comm.size
        self.mine = np.zeros(3, dtype=np.int64)  # call number, digest, 1
        self.got = np.zeros((size, 3), dtype=np.int64)  # rank 0: every rank's; others: verdict
        reqs = []
        if self.rank == 0:
            self.recvs = [
                comm.Recv_init([self.got[r], MPI.INT64_T], r, AGREE_TAG) for r in range(1, size)
            ]
            self.sends = [
                comm.Send_init([self.mine, MPI.INT64_T], r, VERDICT_TAG) for r in range(1, size)
            ]
            reqs = self.recvs + self.sends
        else:
            self.recvs = [comm.Recv_init([self.got[0], MPI.INT64_T], 0, VERDICT_TAG)]
            self.sends = [comm.Send_init([self.mine, MPI.INT64_T], 0, AGREE_TAG)]
        self.reqs = reqs or self.recvs + self.sends

    def begin(self, seq: int, digest: int, what) -> None:
        """Call ``seq`` (``digest``) begins: send the digest (rank 0: gather and judge)."""
        mine = self.mine
        mine[0], mine[1], mine[2] = seq, digest, 1
        try:
            if self.rank:
                MPI.Prequest.Startall(self.reqs)
                return
            MPI.Prequest.Startall(self.recvs)
            self.wait(self.recvs, f"the agreement check of {what} (every rank's digest)", seq)
            odd = [r for r in range(1, len(self.got)) if tuple(self.got[r, :2]) != (seq, digest)]
            if odd:
                raise MismatchError(
                    f"rank 0: {what}: the ranks planned different schedules (the agreement "
                    f"check found another call on rank(s) {', '.join(map(str, odd))}): every "
                    "rank must call the same collective with the same root, members, size, "
                    "segment size, datatype and operator"
                )
            MPI.Prequest.Startall(self.sends)
        except MismatchError:
            self.abandon(seq, digest)
            raise

    def end(self, seq: int, digest: int, what) -> None:
        """Wait for the verdict of call ``seq`` (rank 0: for its verdicts to leave)."""
        try:
            while True:
                self.wait(self.reqs, f"the agreement check of {what} (the verdict of rank 0)", seq)
                if self.rank == 0 or self.got[0, 0] >= seq:
                    return
                self.recvs[0].Start()  # a verdict of a call this rank abandoned: dropped
        except MismatchError:
            self.abandon(seq, digest)
            raise

    def abandon(self, seq: int, digest: int) -> None:
        """A :class:`MismatchError` in the round: mark the call abandoned (rank 0 found it:
        it tells every rank; the waits of :meth:`cleanup` then raise no more), clean up."""
        self.notices.abandon(seq, digest, [])
        self.cleanup(seq)

    def cleanup(self, seq: int) -> None:
        """After an error in call ``seq``: cancel the verdict that will not come, complete
        the digest sent and (rank 0) receive every digest of the call — every rank sends
        one as the call begins, so none is left over for the next call — and keep verdicts
        still in flight apart (their receiver abandoned the call)."""
        what = f"call {seq} of this wrapper, abandoned"
        if self.rank:
            if not self.recvs[0].Test():
                self.recvs[0].Cancel()
                self.recvs[0].Wait()
            self.wait(self.sends, f"the digest of {what}", seq)
            return
        self.wait(self.recvs, f"the digests of {what}", seq)
        pending = [req for req in self.sends if not req.Test()]
        if pending:  # rare: freed by the notices once they complete
            self.notices.flying.extend((req, self.mine) for req in pending)
            self.mine = self.mine.copy()
            size = self.comm.size
            self.sends = [
                self.comm.Send_init([self.mine, MPI.INT64_T], r, VERDICT_TAG)
                for r in range(1, size)
            ]
            self.reqs = self.recvs + self.sends

    def free(self) -> None:
        for req in self.reqs:
            req.Free()
