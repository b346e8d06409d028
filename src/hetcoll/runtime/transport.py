"""The engine's MPI transport: one rank's messages of one call, with non-blocking MPI.

Chunk ``c`` travels with tag ``CONTROL_TAGS + c``; tags below :data:`CONTROL_TAGS` are
control messages.  Sends and receives match by ``(sender, receiver, chunk)`` in program
order, which MPI's non-overtaking rule keeps.

**Headers.**  Unless the caller trusts every rank (``check="never"`` without emulation),
each message carries a 40-byte header: the call's *token* (the wrapper's call number and a
digest of the schedule, sizes, datatype and operator every rank planned), under emulation
the stamp (the transfer's modelled start and the real time it was issued), and the payload's
size.  A chunk of at most :data:`PACK` bytes shares one message with its header (copied
behind it); a larger one is sent in place, its header in a message just before it with the
same tag (non-overtaking keeps them in order).

**Bare segments** (:class:`Bare`; native timing, headers on).  A chunk larger than
:data:`PACK` goes without a header of its own: the sender sends one *call header* per call
and receiver (tag :data:`CALL_TAG`, before its first such chunk to it), then the chunks
bare, straight from and into the user's buffer, each on a tag of its own call's *epoch*
(:meth:`Bare.tag`: the call number modulo :attr:`Bare.epochs`, so a bare chunk of another
call never matches this call's receive).  A bare chunk that arrived counts only once its
sender's call header has been checked.  Call headers go in order on one tag, so they carry
the rules above (a leftover dropped, a later call's kept, another schedule a mismatch).  A
bare chunk of an abandoned call that nobody received (sent with ``Issend``: its send
completes only once it is received) is *drained*: its sender sends the receiver a drain
notice (tag :data:`DRAIN_TAG`), and the receiver, at the start of its next call that moves
bare chunks, receives it into scratch memory, long before its epoch comes back (and before
any later message of that tag: non-overtaking).  Emulation keeps a header per message (each
carries its stamp).

A receiver checks the token.  A message of another schedule raises
:class:`~hetcoll.errors.MismatchError`; so does one that does not fit its receive (another
size: its first bytes, the header, are read anyway).  A message of an earlier call this
rank abandoned after a mismatch is a leftover: dropped, and the receive posted again.  A
message of a *later* call means the peer has left this call (it abandoned it, or disagrees
on it): this rank abandons it too, and keeps the message for the call it belongs to.
"""

from __future__ import annotations

import struct
import time

from mpi4py import MPI

from ..errors import MismatchError
from .inflight import Inflight

__all__ = [
    "CALL_TAG",
    "CONTROL_TAGS",
    "CTS_TAG",
    "DRAIN_TAG",
    "HEADER",
    "PACK",
    "Bare",
    "MPITransport",
    "data_tag",
    "release",
]

#: Tags below this are reserved for control messages (acks, probes, clock sync, notices).
CONTROL_TAGS = 32
#: bytes of a header: call number, schedule digest, modelled start, issue time, payload size
#: (int64 each)
HEADER = 40
#: chunks up to this size share one message with their header
PACK = 16 * 1024
#: the tag of clear-to-send messages (a control tag)
CTS_TAG = 11
#: the tag of call headers (one per call and receiver of bare chunks; a control tag)
CALL_TAG = 17
#: the tag of drain notices (a bare chunk of an abandoned call nobody received; control)
DRAIN_TAG = 19
#: the key of a kept call header in ``early`` (where chunks are keyed ``(peer, chunk)``)
CALL_KEY = -1
_EMPTY: list = []
_HDR = struct.Struct("<5q")
_CTS = struct.Struct("<4q")  # call number, chunk, posted, earliest start
_DRAIN = struct.Struct("<3q")  # call number, tag, size
BARE = b"bare"  # marks a bare receive in MPITransport.recvs


class Bare:
    """The tags of bare chunks and the drain of an abandoned call's leftovers, on one
    communicator (see the module docstring).

    Chunk ``c`` of call ``seq`` travels bare with tag ``base + seq % epochs + epochs * c``
    when it is larger than :data:`PACK` and ``c < chunks``; :meth:`usable` says so, the same
    on both ends.  ``epochs`` (16384) calls pass before a tag comes back.  ``None`` from
    :meth:`create` when the communicator's tags are too few (``MPI_TAG_UB`` under
    ``base + epochs * 64``): then every chunk keeps its header.
    """

    base = 1 << 20
    epochs = 1 << 14

    def __init__(self, comm: MPI.Comm, tag_ub: int) -> None:
        self.comm = comm
        self.chunks = min((tag_ub + 1 - self.base) // self.epochs, 1 << 16)

    @classmethod
    def create(cls, comm: MPI.Comm) -> Bare | None:
        ub = comm.Get_attr(MPI.TAG_UB)
        if ub is None or ub + 1 < cls.base + cls.epochs * 64:
            return None
        return cls(comm, int(ub))

    def usable(self, nbytes: int, chunk: int) -> bool:
        """Whether ``chunk`` of ``nbytes`` bytes travels bare."""
        return nbytes > PACK and chunk < self.chunks

    def tag(self, seq: int, chunk: int) -> int:
        return self.base + seq % self.epochs + self.epochs * chunk

    def begin(self) -> None:
        """At the start of a call (before its receives): drain the leftover each drain
        notice heard names.  The leftover came before its notice (same sender), so the
        receive matches it at once, unless the call it belonged to received it after all
        (the sender looked just before): then nothing matches and it is cancelled."""
        comm, status = self.comm, MPI.Status()
        while comm.Iprobe(MPI.ANY_SOURCE, DRAIN_TAG, status):
            peer, note = status.Get_source(), bytearray(_DRAIN.size)
            comm.Recv([note, MPI.BYTE], peer, DRAIN_TAG)
            _, tag, n = _DRAIN.unpack(note)
            cancelled(comm.Irecv([bytearray(n), MPI.BYTE], peer, tag))

    def leftover(self, peer: int, seq: int, tag: int, nbytes: int) -> tuple:
        """A bare send of abandoned call ``seq`` that was not received: tell ``peer`` to
        drain it; the notice's ``(request, memory)`` (to be completed later)."""
        note = _DRAIN.pack(seq, tag, nbytes)
        return (self.comm.Isend([note, MPI.BYTE], peer, DRAIN_TAG), note)


class Wire:
    """The memory and persistent requests of one rank's part of a schedule, reused from call
    to call (a call's messages are all over when it returns): a header, or a header and a
    small chunk, per op.  Dropped after a call that was abandoned (requests may be in
    flight)."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm = comm
        self.ops: dict[int, tuple[bytearray, memoryview, MPI.Prequest]] = {}
        self.sends: set[int] = set()  # the ops of ``ops`` that send
        #: call headers (bare chunks), by ``(send, peer)``: memory and persistent request
        self.calls: dict[tuple[bool, int], tuple[bytearray, MPI.Prequest]] = {}

    def call(self, send: bool, peer: int) -> tuple[bytearray, MPI.Prequest]:
        """The memory and persistent request of the call header to or from ``peer``."""
        got = self.calls.get((send, peer))
        if got is None:
            mem = bytearray(HEADER)
            init = self.comm.Send_init if send else self.comm.Recv_init
            got = self.calls[(send, peer)] = (mem, init(mem, peer, CALL_TAG))
        return got

    def get(self, i: int, send: bool, peer: int, tag: int, nbytes: int):
        """``(memory, view, persistent request)`` of op ``i``'s header message (with the
        chunk behind it when ``nbytes`` > 0)."""
        got = self.ops.get(i)
        if got is None:
            mem = bytearray(HEADER + nbytes)
            init = self.comm.Send_init if send else self.comm.Recv_init
            got = self.ops[i] = (mem, memoryview(mem), init(mem, peer, tag))
            if send:
                self.sends.add(i)
        return got

    def free(self, keep: set[int] = frozenset()) -> None:
        """Free the requests (except those in ``keep``, by id: still in flight)."""
        for i, (_, _, req) in self.ops.items():
            if id(req) not in keep:
                release(req, i not in self.sends)
        for (send, _), (_, req) in self.calls.items():
            if id(req) not in keep:
                release(req, not send)
        self.ops, self.calls = {}, {}


def data_tag(chunk: int) -> int:
    """The tag of chunk ``chunk``'s messages."""
    return CONTROL_TAGS + chunk


class MPITransport:
    """Isend/Irecv/Testsome for one rank and one call (see the module docstring).

    ``token`` is ``(call number, digest)`` or None (no header unless ``stamps``);
    ``stale`` the call numbers this rank abandoned (their leftovers are dropped).  Chunks
    over PACK go bare (:class:`Bare`) natively with headers.
    """

    def __init__(
        self,
        comm: MPI.Comm,
        token: tuple[int, int] | None,
        *,
        stamps: bool = False,
        stale: set[int] | frozenset = frozenset(),
        what: str = "collective",
        notices=None,
        seq: int = 0,
        early: dict | None = None,
        wire: Wire | None = None,
        strays: tuple | None = None,
    ) -> None:
        self.comm = comm
        self.strays = strays  # (Strays, the rank's plan): strays.py, natively with headers
        self.wire = wire or Wire(comm)
        self.notices = notices  # heard while waiting (see notices.py)
        self.seq = seq
        self.token = token
        self.headers = token is not None or stamps
        self.bare = Bare.create(comm) if token is not None and not stamps else None
        self.stale = stale
        self.what = what
        self.early = {} if early is None else early
        self.reset(token, seq)

    def reset(self, token: tuple[int, int] | None, seq: int) -> None:
        """Ready for another call (a transport may serve call after call)."""
        self.token, self.seq = token, seq
        self.moved = time.monotonic_ns()  # the last progress (strays.py)
        # requests not yet accounted for, by entry (inflight.py: a look costs O(1) in
        # the number of them); ``owners[k]``: the op of entry ``k``
        self.flight = Inflight()
        self.owners: list[int] = []
        self.parts: dict[int, int] = {}  # requests outstanding per op
        self.recvs: dict[int, tuple] = {}  # op -> (peer, chunk, buf, scratch, header)
        self.keep: dict[int, tuple] = {}  # op -> memory a send in flight reads
        self.dropped = 0  # leftovers dropped by the last poll
        self.large: set[int] = set()  # ops moving more than PACK bytes, not yet complete
        self.instant: list[tuple[int, int, int]] = []  # receives served from ``early``
        self.failed: MismatchError | None = None
        self.heard: dict[int, bool] = {}  # peer -> its call header checked (bare chunks)
        self.held: dict[int, list[int]] = {}  # peer -> bare receives in, header not checked
        self.announced: set[int] = set()  # peers sent this call's header
        self.bare_sends: dict[int, tuple[MPI.Request, int, int, int]] = {}  # op -> req, ...
        if self.bare is not None:
            self.bare.begin()
        self.settle()  # clear-to-sends of the previous call
        self.awaited: dict[tuple[int, int], list[int]] = {}  # (peer, chunk) -> sends
        self.cts_in: list[tuple[MPI.Request, bytearray, int]] = []  # (request, memory, peer)
        self.cts_out: list[tuple[MPI.Request, bytes]] = []

    # -- starting transfers -----------------------------------------------------------------------

    def recv(self, i: int, peer: int, chunk: int, buf: memoryview) -> None:
        tag = data_tag(chunk)
        n = len(buf)
        if self.bare is not None and self.bare.usable(n, chunk):
            self._recv_bare(i, peer, chunk, buf)
            return
        if self.early and self._early(i, peer, chunk, buf):
            return
        if n > PACK:
            self.large.add(i)
        if not self.headers:
            self._add(i, self.comm.Irecv([buf, MPI.BYTE], peer, tag), peer)
            self.recvs[i] = (peer, chunk, buf, None, None)
            return
        small = n <= PACK
        mem, view, req = self.wire.get(i, False, peer, tag, n if small else 0)
        req.Start()
        self._add(i, req, peer)
        if not small:
            self._add(i, self.comm.Irecv([buf, MPI.BYTE], peer, tag), peer)
        self.recvs[i] = (peer, chunk, buf, view if small else None, mem)

    def _recv_bare(self, i: int, peer: int, chunk: int, buf: memoryview) -> None:
        """Receive ``i`` of a bare chunk; the call header from ``peer`` once per call."""
        self.large.add(i)
        if peer not in self.heard:
            self.heard[peer] = False
            self._recv_call(peer)
        tag = self.bare.tag(self.seq, chunk)
        self._add(i, self.comm.Irecv([buf, MPI.BYTE], peer, tag), peer)
        self.recvs[i] = (peer, chunk, buf, None, BARE)

    def _recv_call(self, peer: int) -> None:
        """Receive ``peer``'s call header (from ``early`` when it came during the previous
        call)."""
        queue = self.early.get((peer, CALL_KEY))
        if queue and queue[0][0] == self.token[0]:
            seq, digest, *_ = queue.pop(0)
            if not queue:
                del self.early[(peer, CALL_KEY)]
            if digest != self.token[1]:
                self.failed = self._mismatch(self._describe(peer, seq, digest))
                self.instant.append((-2 - peer, 0, 0))
            else:
                self.heard[peer] = True
            return
        mem, req = self.wire.call(False, peer)
        req.Start()
        self._add(-2 - peer, req, peer)
        self.recvs[-2 - peer] = (peer, CALL_KEY, None, None, mem)

    def send(self, i: int, peer: int, chunk: int, buf: memoryview, start: int, sent: int) -> None:
        tag = data_tag(chunk)
        if self.bare is not None and self.bare.usable(len(buf), chunk):
            self.large.add(i)
            if peer not in self.announced:
                self.announced.add(peer)
                mem, req = self.wire.call(True, peer)
                _HDR.pack_into(mem, 0, self.token[0], self.token[1], 0, 0, 0)
                req.Start()
                self._add(i, req)
            tag = self.bare.tag(self.seq, chunk)
            req = self.comm.Issend([buf, MPI.BYTE], peer, tag)
            self.bare_sends[i] = (req, peer, tag, len(buf))
            self._add(i, req)
            return
        if len(buf) > PACK:
            self.large.add(i)
        if not self.headers:
            self._add(i, self.comm.Isend([buf, MPI.BYTE], peer, tag))
            return
        seq, digest = self.token or (0, 0)
        n = len(buf)
        small = n <= PACK
        mem, view, req = self.wire.get(i, True, peer, tag, n if small else 0)
        _HDR.pack_into(mem, 0, seq, digest, start, sent, n)
        if small:
            view[HEADER:] = buf
        req.Start()
        self._add(i, req)
        if not small:
            self._add(i, self.comm.Isend([buf, MPI.BYTE], peer, tag))

    def _early(self, i: int, peer: int, chunk: int, buf: memoryview) -> bool:
        """Take receive ``i`` from a message of this call that arrived during the previous
        one (which this rank then abandoned: see :meth:`_finish`)."""
        queue = self.early.get((peer, chunk))
        if not queue or queue[0][0] != self.token[0]:
            return False
        seq, digest, start, sent, payload, n = queue.pop(0)
        if not queue:
            del self.early[(peer, chunk)]
        if digest != self.token[1] or n != len(buf):
            self.failed = self._mismatch(self._describe(peer, seq, digest))
        elif len(payload) < n:  # MPI cut it to the receive of the call it came during
            self.failed = self._mismatch(
                f"rank {peer}'s message of this call (call {seq}) arrived during an earlier "
                f"call, whose smaller receive cut it ({len(payload)} of {n} bytes): its data "
                "are lost"
            )
        else:
            buf[:] = payload
        self.instant.append((i, start, sent))
        return True

    def _add(self, i: int, req: MPI.Request, peer: int | None = None) -> None:
        # ``peer``: a receive from it (tested in posting order), None: a send
        self.flight.add(len(self.owners), req, peer)
        self.owners.append(i)
        self.parts[i] = self.parts.get(i, 0) + 1

    # -- clear-to-send (emulation) ---------------------------------------------------------------

    def expect(self, i: int, peer: int, chunk: int) -> None:
        """Send ``i`` (of ``chunk`` to ``peer``) waits for the receiver's clear-to-send."""
        self.awaited.setdefault((peer, chunk), []).append(i)
        self._await(peer)

    def _await(self, peer: int) -> None:
        mem = bytearray(_CTS.size)
        self.cts_in.append((self.comm.Irecv([mem, MPI.BYTE], peer, CTS_TAG), mem, peer))

    def clear(self, peer: int, chunk: int, posted: int, earliest: int) -> None:
        """Tell ``peer`` that this rank's receive of ``chunk`` was posted at ``posted``."""
        mem = _CTS.pack(self.seq, chunk, posted, earliest)
        self.cts_out.append((self.comm.Isend([mem, MPI.BYTE], peer, CTS_TAG), mem))

    def cleared(self) -> list[tuple[int, int, int]]:
        """Clear-to-sends received: ``(send op, posted, earliest start)``."""
        if self.cts_out:
            self.cts_out = [(r, m) for r, m in self.cts_out if not r.Test()]
        done, waiting = [], []
        for req, mem, peer in self.cts_in:
            if not req.Test():
                waiting.append((req, mem, peer))
                continue
            seq, chunk, posted, earliest = _CTS.unpack(mem)
            queue = self.awaited.get((peer, chunk)) if seq == self.seq else None
            if not queue:  # a leftover of an abandoned call: drop it, look again
                mem2 = bytearray(_CTS.size)
                req2 = self.comm.Irecv([mem2, MPI.BYTE], peer, CTS_TAG)
                waiting.append((req2, mem2, peer))
                continue
            done.append((queue.pop(0), posted, earliest))
        self.cts_in = waiting
        return done

    def settle(self) -> None:
        """Complete the clear-to-sends this rank sent (small: they leave at once)."""
        for req, _ in getattr(self, "cts_out", ()):
            req.Wait()

    # -- completion -------------------------------------------------------------------------------

    def poll(self) -> list[tuple[int, int, int]]:
        """Ops whose transfers completed: ``(op, stamp start, stamp issue)``."""
        if self.instant:
            if self.failed is not None:
                raise self.failed
            done, self.instant = self.instant, []
            return done
        flight = self.flight
        if not flight:
            return _EMPTY
        error = None
        try:
            got = flight.test()
        except MPI.Exception as exc:
            # A message larger than its receive (truncated: its first bytes, the header, are
            # there).  A leftover of an abandoned call explains it, anything else is a
            # disagreement on the size.  Which requests completed: ask each.
            error = exc.Get_error_string().splitlines()[0]
            got = [k for k, r in list(flight.live.items()) if _completed(r)]
            for k in got:
                flight.drop(k)
        if not got:
            return _EMPTY
        self.moved = time.monotonic_ns()
        owners, parts = self.owners, self.parts
        done: list[tuple[int, int, int]] = []
        self.dropped = 0
        failed = None
        for k in got:
            i = owners[k]
            parts[i] -= 1
            if parts[i] == 0:
                del parts[i]
                self.large.discard(i)
                try:
                    self._finish(i, done)
                except MismatchError as exc:  # look at every completion (keep early ones)
                    failed = failed or exc
        if failed is not None:
            raise failed
        if error is not None and not self.dropped:
            raise self._mismatch(f"a message did not fit its receive (another size; {error})")
        return done

    def _finish(self, i: int, done: list) -> None:
        recv = self.recvs.pop(i, None)
        if recv is None:  # a send
            self.keep.pop(i, None)
            self.bare_sends.pop(i, None)
            done.append((i, 0, 0))
            return
        peer, chunk, buf, scratch, header = recv
        if header is None:
            done.append((i, 0, 0))
            return
        if header is BARE:  # counts once the peer's call header is checked
            if self.heard[peer]:
                done.append((i, 0, 0))
            else:
                self.held.setdefault(peer, []).append(i)
            return
        seq, digest, start, sent, _ = _HDR.unpack_from(header)
        if self.token is not None and (seq, digest) != self.token:
            mine = self.token[0]
            if seq in self.stale and seq < mine:
                self.dropped += 1
                if chunk == CALL_KEY:
                    self._recv_call(peer)
                else:
                    self.recv(i, peer, chunk, buf)  # a leftover of an abandoned call: drop it
                return
            if seq > mine:
                # The peer is in a later call: it abandoned (or disagreed on) this one, so
                # this rank abandons it too; the message belongs to that later call.
                entry = kept_entry(header, scratch, buf)
                self.early.setdefault((peer, chunk), []).append(entry)
            raise self._mismatch(self._describe(peer, seq, digest))
        if chunk == CALL_KEY:
            self.heard[peer] = True
            done += [(k, 0, 0) for k in self.held.pop(peer, ())]
            return
        if scratch is not None:
            buf[:] = scratch[HEADER:]
        done.append((i, start, sent))

    def _describe(self, peer: int, seq: int, digest: int) -> str:
        return describe(peer, seq, digest, self.token[0])

    def _mismatch(self, detail: str) -> MismatchError:
        return mismatch(self.comm.rank, self.what, detail)

    # -- idling and abandoning --------------------------------------------------------------------

    def idle(self, seconds: float) -> None:
        if self.notices is not None:
            self.notices.check(self.seq, self.what)
            strays = self.strays
            if strays is not None and time.monotonic_ns() - self.moved > strays[0].after:
                strays[0].look(self.seq, self.what, strays[1], self.flight.peers())
        time.sleep(seconds)

    def abandon(self) -> list[tuple[MPI.Request, object]]:
        """Cancel the pending receives (after an error) and return the pending sends, to be
        tested later (with the memory they read).  A receive that completed meanwhile may
        hold a message of the peer's next call: it is kept for that call."""
        sends = []
        for k, req in self.flight.live.items():
            i = self.owners[k]
            if i not in self.recvs:
                sends.append((req, self.keep.get(i)))
                bare = self.bare_sends.get(i)
                if bare is not None and bare[0] is req:  # nobody received it: drain it
                    sends.append(self.bare.leftover(bare[1], self.seq, bare[2], bare[3]))
                continue
            if cancelled(req):
                continue
            self.parts[i] -= 1
            if self.parts[i] == 0:
                self._salvage(i)
        for req, _, _ in self.cts_in:
            req.Cancel()
            req.Wait()
        sends += self.cts_out
        self.cts_in, self.cts_out = [], []
        self.flight, self.owners = Inflight(), []
        self.wire.free(keep={id(r) for r, _ in sends})
        return sends

    def _salvage(self, i: int) -> None:
        peer, chunk, buf, scratch, header = self.recvs.pop(i)
        if header is None or header is BARE or self.token is None:
            return
        if _HDR.unpack_from(header)[0] <= self.token[0]:
            return
        entry = kept_entry(header, scratch, buf)
        self.early.setdefault((peer, chunk), []).append(entry)


def kept_entry(header, scratch, buf) -> tuple:
    """A message of a later call, kept: its header fields, payload (``scratch``: the
    header's memory with the chunk behind it, else the chunk is in ``buf``) and the size
    it was sent with (a longer one than ``buf`` was cut: fewer bytes kept than sent)."""
    seq, digest, start, sent, n = _HDR.unpack_from(header)
    if buf is None:  # a call header
        return (seq, digest, start, sent, b"", 0)
    kept = min(n, len(buf))
    data = bytes(scratch[HEADER : HEADER + kept] if scratch is not None else buf[:kept])
    return (seq, digest, start, sent, data, n)


def describe(peer: int, seq: int, digest: int, mine: int) -> str:
    """What a header of call ``seq`` from ``peer`` says, seen in this rank's call ``mine``."""
    if seq == mine:
        return f"rank {peer} planned another schedule for this call (call {seq})"
    return f"rank {peer} sent data of its call {seq} while this rank is in its call {mine}"


def mismatch(rank: int, what, detail: str) -> MismatchError:
    """The error of a call whose ranks disagree (``detail``: what showed it)."""
    return MismatchError(
        f"rank {rank}: {what}: the ranks planned different schedules: {detail}; every rank "
        "must call the same collectives in the same order with the same root, members, size, "
        "segment size, datatype and operator"
    )


def refused(mem, payload, key: tuple[int, int], seq: int, early: dict, rank: int, what):
    """The :class:`MismatchError` of a message whose header (in ``mem``) is of another call
    or schedule than this rank's call ``seq``; a message of a later call (its sender
    abandoned this one) is first kept in ``early`` under ``key`` (sender, chunk) for that
    call (``payload``: its chunk, None for a call header)."""
    got, digest, *_ = _HDR.unpack_from(mem)
    if got > seq:
        early.setdefault(key, []).append(kept_entry(mem, None, payload))
    return mismatch(rank, what, describe(key[0], got, digest, seq))


def cancelled(req: MPI.Request) -> bool:
    """Cancel a pending receive: True when it was cancelled, False when it completed
    (before, or meanwhile: its message is there)."""
    if _completed(req):
        return False
    status = MPI.Status()
    req.Cancel()
    req.Wait(status)
    return status.Is_cancelled()


def release(req: MPI.Request, receive: bool) -> None:
    """Free a request this rank holds (an active send completes in the background); a
    receive still pending is cancelled first: one left posted outlives its communicator
    (MPICH's UCX module warns about each at ``MPI_Finalize``).  Sends are never cancelled
    (a large one's cancellation waits for its receiver)."""
    try:
        if receive and not req.Get_status():
            req.Cancel()
            req.Wait()
        if req != MPI.REQUEST_NULL:
            req.Free()
    except MPI.Exception:  # a cut message completed it: nothing is pending any more
        if req != MPI.REQUEST_NULL:
            req.Free()


def _completed(req: MPI.Request) -> bool:
    """Whether ``req`` is complete (a truncated receive counts), consuming it."""
    try:
        return req.Test()
    except MPI.Exception:
        return True
