"""``check="always"``: every rank knows that every rank made the same call before it returns.

With every call the ranks run a dissemination round (Hensgen, Finkel & Manber's barrier,
:func:`rounds`): in round ``j`` (``j = 0 .. ceil(log2 n) - 1``) rank ``r`` sends
``(call number, digest, ok)`` (24 bytes, one control tag) to rank ``r + 2**j`` and receives
one from rank ``r - 2**j`` (mod ``n``); ``ok`` turns false at a rank that received another
call's ``(call number, digest)`` or a false ``ok``, and each round sends what the rank knows
after the previous one.  After the last round every rank has heard, through a chain of
rounds, from every other rank, so every ``ok`` is the same: true exactly when every rank
made the same call (``tests/test_runtime_agreement.py`` checks both by brute force).  Each rank
then raises :class:`~hetcoll.errors.MismatchError` in the call itself, or returns.

The round does not depend on the call (not even on who takes part in it), so ranks that
disagree on it still meet there, and no message of it outlives its call: every rank
finishes the round of every call it begins, even one it abandons (a timeout excepted: the
wrapper is then unusable), so the k-th message a rank receives from a peer is always the
peer's k-th call.  A rank sends to ``r + 2**j`` and hears from ``r - 2**j`` for distinct
``j``, so one tag serves every round.

On the native fast path (:mod:`.fast`) the round runs in the same polling loop as the
call's data (each rank's first message leaves as the call begins): ``log2 n`` message
latencies overlapped with the data.  A round through rank 0 would make rank 0 wait for
every digest before its first send, and a separate allreduce would add its latency to the
call's (MPI's own nonblocking ``Iallreduce``, polled the same way, is slower than this
round on one host, as is a round where every rank tells every other directly: radix ``n``
in :func:`rounds`).  While a round is pending, every rank is in the call, so an idle rank
keeps looking again at once (``Rest``) for :data:`ROUND_SPIN`, where a call without a round
naps after 20 µs: a napping rank wakes 60-80 µs later, and the round would wait for it
(``docs/runtime.md`` has the numbers).  On the general path (messages above the fast
path's size, emulation: the call's modelled times stay its own) the round comes first,
unemulated, and a disagreement is found before any data moves.
"""

from __future__ import annotations

import struct
import time

from mpi4py import MPI

from ..errors import CollectiveTimeoutError, MismatchError
from .notices import REFUSED
from .transport import release

__all__ = ["AGREE_TAG", "Agreement"]

#: the control tag (below transport.CONTROL_TAGS) of the round's messages
AGREE_TAG = 13
#: how long (s) an idle rank keeps looking again at once (``Rest``: yields, or zero
#: sleeps on a busy host) while a round is pending, before it naps ``poll`` between looks
ROUND_SPIN = 2e-3
_MSG = struct.Struct("<3q")  # call number, digest, ok
#: the digest of a second round after a disagreement: every rank has cancelled the call's
#: receives before any leaves it (else a peer's next call could land in one, cut to its
#: size: the overlapped fast path posts them before the round is over)
_SETTLED = -1
_NS = 1_000_000_000
_testall = MPI.Request.Testall


def rounds(rank: int, size: int, radix: int) -> list[tuple[list[int], list[int]]]:
    """The dissemination rounds of ``rank`` among ``size`` ranks, ``radix - 1`` peers a
    round: ``(to, from)`` lists, round ``j`` sending to ``rank + m * radix**j`` and hearing
    from ``rank - m * radix**j`` (mod ``size``), ``m = 1 .. radix - 1``."""
    out, step = [], 1
    while step < size:
        offsets = [m * step for m in range(1, radix) if m * step < size]
        out.append(([(rank + d) % size for d in offsets], [(rank - d) % size for d in offsets]))
        step *= radix
    return out


class Agreement:
    """The agreement round of one wrapper: persistent requests for its messages, made once.

    A call does :meth:`begin`, then :meth:`poll` until it returns True (in its own polling
    loop, or :meth:`wait`), then :meth:`verdict`, which raises on a disagreement.
    ``owner`` is the wrapper (a ``ScheduleComm``): how its idle ranks wait (``_rest``,
    ``spin``, ``poll``) and end a call that timed out (``_timed_out``).
    """

    def __init__(self, comm: MPI.Comm, owner, radix: int = 2) -> None:
        self.rank, size = comm.rank, comm.size
        self.owner = owner
        self.peers = rounds(self.rank, size, radix)
        self.out = [bytearray(_MSG.size) for _ in self.peers]
        self.got = [[bytearray(_MSG.size) for _ in frm] for _, frm in self.peers]
        self.sends = [
            [comm.Send_init(out, to, AGREE_TAG) for to in tos]
            for out, (tos, _) in zip(self.out, self.peers, strict=True)
        ]
        self.recvs = [
            [comm.Recv_init(mem, f, AGREE_TAG) for mem, f in zip(got, frm, strict=True)]
            for got, (_, frm) in zip(self.got, self.peers, strict=True)
        ]
        self.every_recv = [req for reqs in self.recvs for req in reqs]
        self.every_send = [req for reqs in self.sends for req in reqs]
        self.rounds = len(self.peers)
        self.round = self.rounds  # no round in flight
        self.token = (0, 0)
        self.ok = True
        self.odd = -1  # a round peer seen making another call (for the message)
        self.flying = False  # sends of the round not yet seen complete
        self.pending = False  # a round was begun and is not over
        #: idle time (ns) a rank looks again at once while a round is pending
        self.spin_ns = int(max(owner.spin, ROUND_SPIN) * _NS)

    def begin(self, seq: int, digest: int) -> None:
        """Call ``seq`` (``digest``) begins: post every receive of the round, send the first
        messages."""
        self.token, self.ok, self.odd, self.round = (seq, digest), True, -1, 0
        if not self.rounds:
            return
        for req in self.every_recv:  # one Start each: cheaper than Startall for a few
            req.Start()
        self.pending = True
        self._send(0)

    def _send(self, j: int) -> None:
        """Send round ``j``'s messages (what this rank knows now); asked at once whether MPI
        took them (24 bytes: copied out on the spot), so a round's end rarely waits for
        its sends."""
        _MSG.pack_into(self.out[j], 0, *self.token, self.ok)
        for req in self.sends[j]:
            req.Start()
            if not req.Test():
                self.flying = True

    def poll(self) -> bool:
        """Advance the round as far as the messages allow; True once it is over."""
        while self.round < self.rounds:
            j = self.round
            reqs = self.recvs[j]
            if not (reqs[0].Test() if len(reqs) == 1 else _testall(reqs)):
                return False
            for k, mem in enumerate(self.got[j]):
                seq, digest, ok = _MSG.unpack_from(mem)
                if (seq, digest) != self.token:
                    self.ok, self.odd = False, self.peers[j][1][k]
                elif not ok:
                    self.ok = False
            self.round = j = j + 1
            if j < self.rounds:
                self._send(j)
        if self.flying:  # the sends must be complete before the next call starts them
            for req in self.every_send:  # (Test each: cheaper than Testall on a few requests)
                if not req.Test():
                    return False
            self.flying = False
        self.pending = False
        return True

    def around(self, call, args: tuple, seq: int, digest: int, what, overlap: bool):
        """``call(*args, agreement)`` (call ``seq``, ``digest``) within a round: with
        ``overlap`` the call polls the round in its own loop (``agreement`` is this object),
        else the round comes first (``agreement`` None, once every rank agrees).  Every rank
        finishes the round of every call it begins, whatever happens to the call (a timeout
        excepted)."""
        self.begin(seq, digest)
        try:
            if overlap:
                return call(*args, self)
            self.wait(what)
            self.verdict(what)
            return call(*args, None)
        except MismatchError:
            if self.pending:
                self.wait(what)
            # every rank raises in this call: data of it that come later are leftovers
            self.owner.notices.abandon(seq, digest, [], tell=self.ok)
            if not self.ok:  # every rank knows: none leaves before all cancelled (below)
                self.begin(seq, _SETTLED)
                self.wait(what)
            raise
        except CollectiveTimeoutError:
            raise
        except Exception:  # the others are in the round: finish it
            if self.pending:
                self.wait(what)
            raise

    def refuse(self, seq: int, what) -> None:
        """This rank refuses call ``seq`` (its own arguments are wrong): it takes part in
        the call's round with a digest no call has, so every other rank raises in the call
        (:meth:`verdict`), then in the second round that follows any disagreement."""
        self.begin(seq, REFUSED)
        self.wait(what)
        self.owner.notices.abandon(seq, REFUSED, [], tell=False)
        if not self.ok:
            self.begin(seq, _SETTLED)
            self.wait(what)

    def verdict(self, what) -> None:
        """After the round: raise :class:`MismatchError` unless every rank made this call."""
        if self.ok:
            return
        seen = (
            f"rank {self.odd} made another call or refused this one"
            if self.odd >= 0
            else "another rank made another call or refused this one"
        )
        raise MismatchError(
            f"rank {self.rank}: {what}: the ranks planned different schedules for this call "
            f"(call {self.token[0]}; the agreement check of check='always' found it: {seen}): "
            "every rank must call the same collective with the same root, members, size, "
            "segment size, datatype and operator"
        )

    def wait(self, what) -> None:
        """Finish the round within the wrapper's timeout (no notices: every rank finishes
        it); an idle rank looks again at once (``spin_ns`` since the round last moved),
        then every ``poll``."""
        if self.poll():
            return
        owner = self.owner
        idle_since = time.monotonic_ns()
        deadline = idle_since + int(owner.timeout * _NS)
        step = self.round
        while not self.poll():
            now = time.monotonic_ns()
            if self.round != step:  # it moved: look again at once
                step, idle_since = self.round, now
                continue
            if now - idle_since <= self.spin_ns:
                owner._rest()
                continue
            if now > deadline:
                owner._timed_out(self.timeout_message(what, owner.timeout))
            time.sleep(owner.poll)

    def timeout_message(self, what, timeout: float) -> str:
        """What a call that timed out in the round waited for."""
        if self.round < self.rounds:
            froms = ", ".join(map(str, self.peers[self.round][1]))
            doing = f"for rank {froms} (round {self.round})"
        else:
            doing = "for its messages to leave"
        return (
            f"rank {self.rank}: the agreement check of {what} timed out after {timeout:g} s, "
            f"waiting {doing} (does every rank call the same collective?)"
        )

    def free(self) -> None:
        """Free the round's requests (a receive still pending after a timeout is cancelled)."""
        for req in self.every_send:
            release(req, False)
        for req in self.every_recv:
            release(req, True)
