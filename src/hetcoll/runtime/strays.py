"""Strays: messages sent to a waiting rank that no receive of its call takes.

With ``check="data"`` a disagreement shows where a message of the wrong call or schedule
meets a receive (:mod:`.transport`).  But ranks in different calls may post receives that
the others' messages never match: a rank in a ``multicast`` waits for its partner's
message on one tag while that partner, in a ``Bcast``, sends it another tag, or nothing;
each waits for the other until the timeout.  The messages are there, unmatched, in MPI's
queue of unexpected messages.  So a rank that has waited :attr:`Strays.after` seconds
without progress looks, now and then, at the first unmatched message from each rank it
waits for and from a few others in turn (``Iprobe``); one that its call will never take (a
data tag or call header it does not receive from that rank in this call) it receives
and reads: of this call, it is a disagreement (:class:`~hetcoll.errors.MismatchError`,
which the caller turns into notices for every rank); of a later call, it is kept for that
call (``early``, as the transport keeps one); a leftover of an abandoned call is dropped.

Only natively with headers (every message then says its call); a message this rank's call
will take is left alone, so nothing a correct program sends is ever taken early by
mistake, and a look costs a few ``Iprobe`` after a long wait only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from mpi4py import MPI

from .rank_ops import SEND, RankPlan
from .transport import (
    _HDR,
    CALL_KEY,
    CALL_TAG,
    CONTROL_TAGS,
    HEADER,
    PACK,
    Bare,
    describe,
    mismatch,
)

__all__ = ["Expects", "Strays", "expects_of"]

#: what a rank receives in a call: ``(peer, chunk)`` pairs, and the peers whose chunks come
#: bare (after a call header)
Expects = tuple[frozenset[tuple[int, int]], frozenset[int]]
#: ranks looked at in turn by each look (besides those the rank waits for)
ROUND = 8


def expects_of(plan: RankPlan) -> Expects:
    """What ``plan``'s rank receives: ``(peer, chunk)`` of each receive, and the peers of
    those over :data:`~.transport.PACK` bytes (their call headers are expected too)."""
    recvs = [
        (p, c, n)
        for k, p, c, n in zip(plan.kinds, plan.peers, plan.chunks, plan.nbytes, strict=True)
        if k != SEND
    ]
    return frozenset((p, c) for p, c, _ in recvs), frozenset(p for p, _, n in recvs if n > PACK)


class Strays:
    """One rank's looks at messages no receive takes (see the module docstring), on the
    wrapper's private communicator; ``after``: seconds without progress before looking,
    ``every``: seconds between looks."""

    def __init__(self, comm: MPI.Comm, notices, after: float, every: float = 0.05) -> None:
        self.comm, self.notices = comm, notices
        self.after = int(after * 1e9)
        self.every = int(every * 1e9)
        self.next = 0
        self.cursor = 0
        self.status = MPI.Status()
        self.plan: RankPlan | None = None  # the plan of the last look, and what it receives
        self.expects: Expects = (frozenset(), frozenset())

    @classmethod
    def create(cls, owner) -> Strays | None:
        """The looks of a wrapper (a ``ScheduleComm``), after a quarter of its timeout
        without progress (at most 0.5 s); None under emulation or with ``check="never"``
        (messages without a header do not say their call)."""
        if owner.emulate or owner.check == "never":
            return None
        return cls(owner.comm, owner.notices, min(0.5, owner.timeout / 4))

    def look(self, seq: int, what, plan: RankPlan, waited: Iterable[int]) -> None:
        """While call ``seq`` of ``plan`` has made no progress for :attr:`after` ns (the
        caller says): look at the first unmatched message from the ranks in ``waited`` and
        from the next :data:`ROUND` ranks; raise :class:`~hetcoll.errors.MismatchError` for
        one of this call that it will not take."""
        now = time.monotonic_ns()
        if now < self.next:
            return
        self.next = now + self.every
        if plan is not self.plan:
            self.plan, self.expects = plan, expects_of(plan)
        expects = self.expects
        size, me = self.comm.size, self.comm.rank
        sources = dict.fromkeys(waited)
        for _ in range(min(ROUND, size)):
            sources[self.cursor] = None
            self.cursor = (self.cursor + 1) % size
        for peer in sources:
            if peer != me:
                self._take(peer, seq, what, expects)

    def _take(self, peer: int, seq: int, what, expects: Expects) -> None:
        comm, status = self.comm, self.status
        if not comm.Iprobe(peer, MPI.ANY_TAG, status):
            return
        tag = status.Get_tag()
        chunks, bare = expects
        if tag == CALL_TAG:
            key = (peer, CALL_KEY)
            if peer in bare:
                return
        elif CONTROL_TAGS <= tag < Bare.base:
            key = (peer, tag - CONTROL_TAGS)
            if key in chunks:
                return
        else:
            return  # a control message, or a bare chunk (its call header says its call)
        n = status.Get_count(MPI.BYTE)
        if n < HEADER:
            return
        mem = bytearray(n)
        comm.Recv([mem, MPI.BYTE], peer, tag)
        got, digest, start, sent, size = _HDR.unpack_from(mem)
        payload = bytes(mem[HEADER:])
        if tag != CALL_TAG and n == HEADER and size > PACK:
            # a header sent apart from its chunk: the chunk follows on the same tag (its
            # sender sent both at once)
            chunk = bytearray(size)
            comm.Recv([chunk, MPI.BYTE], peer, tag)
            payload = bytes(chunk)
        if got < seq:  # a leftover of an abandoned call, or a disagreement on an earlier one
            if got not in self.notices.stale:
                self.notices.found_earlier(got)
            return
        if got > seq:  # the peer is ahead: kept for the call it belongs to
            entry = (got, digest, start, sent, payload, 0 if tag == CALL_TAG else size)
            self.notices.early.setdefault(key, []).append(entry)
            return
        detail = describe(peer, got, digest, seq)
        raise mismatch(comm.rank, what, f"{detail}, a message this call never receives")
