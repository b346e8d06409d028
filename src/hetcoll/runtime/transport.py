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

A receiver checks the token.  A message of another schedule raises
:class:`~hetcoll.errors.MismatchError`; so does one that does not fit its receive (another
size: its first bytes, the header, are read anyway).  A message of an earlier call this
rank abandoned after a mismatch is a leftover: dropped, and the receive posted again.  A
message of a *later* call means the peer has left this call (it abandoned it, or disagrees
on it): this rank abandons it too, and keeps the message for the call it belongs to.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from ..errors import MismatchError

__all__ = ["CONTROL_TAGS", "HEADER", "PACK", "MPITransport", "data_tag"]

#: Tags below this are reserved for control messages (acks, probes, clock sync, notices).
CONTROL_TAGS = 32
#: bytes of a header: call number, schedule digest, modelled start, issue time, payload size
#: (int64 each)
HEADER = 40
#: chunks up to this size share one message with their header
PACK = 16 * 1024
_EMPTY: list = []


def data_tag(chunk: int) -> int:
    """The tag of chunk ``chunk``'s messages."""
    return CONTROL_TAGS + chunk


class MPITransport:
    """Isend/Irecv/Testsome for one rank and one call (see the module docstring).

    ``token`` is ``(call number, digest)`` or None (no header unless ``stamps``);
    ``stale`` the call numbers this rank abandoned (their leftovers are dropped).
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
    ) -> None:
        self.comm = comm
        self.notices = notices  # heard while waiting (see notices.py)
        self.seq = seq
        self.token = token
        self.headers = token is not None or stamps
        self.stale = stale
        self.what = what
        self.reqs: list[MPI.Request] = []
        self.owners: list[int] = []  # op of each request
        self.parts: dict[int, int] = {}  # requests outstanding per op
        self.recvs: dict[int, tuple] = {}  # op -> (peer, chunk, buf, scratch, header)
        self.keep: dict[int, tuple] = {}  # op -> memory a send in flight reads
        self.dropped = 0  # leftovers dropped by the last poll
        # messages of later calls that arrived early, kept across calls: (peer, chunk) ->
        # [(call, digest, start, issue, payload)]
        self.early = {} if early is None else early
        self.instant: list[tuple[int, int, int]] = []  # receives served from ``early``
        self.failed: MismatchError | None = None

    # -- starting transfers -----------------------------------------------------------------------

    def recv(self, i: int, peer: int, chunk: int, buf: memoryview) -> None:
        tag = data_tag(chunk)
        n = len(buf)
        if self.early and self._early(i, peer, chunk, buf):
            return
        if not self.headers:
            self._add(i, self.comm.Irecv([buf, MPI.BYTE], peer, tag))
            self.recvs[i] = (peer, chunk, buf, None, None)
        elif n <= PACK:
            scratch = np.empty(HEADER + n, dtype=np.uint8)
            self._add(i, self.comm.Irecv([scratch, MPI.BYTE], peer, tag))
            self.recvs[i] = (peer, chunk, buf, scratch, scratch[:HEADER].view(np.int64))
        else:
            header = np.empty(HEADER // 8, dtype=np.int64)
            self._add(i, self.comm.Irecv([header, MPI.INT64_T], peer, tag))
            self._add(i, self.comm.Irecv([buf, MPI.BYTE], peer, tag))
            self.recvs[i] = (peer, chunk, buf, None, header)

    def send(self, i: int, peer: int, chunk: int, buf: memoryview, start: int, sent: int) -> None:
        tag = data_tag(chunk)
        if not self.headers:
            self._add(i, self.comm.Isend([buf, MPI.BYTE], peer, tag))
            return
        seq, digest = self.token or (0, 0)
        n = len(buf)
        if n <= PACK:
            scratch = np.empty(HEADER + n, dtype=np.uint8)
            scratch[:HEADER].view(np.int64)[:] = (seq, digest, start, sent, n)
            scratch[HEADER:] = buf
            self.keep[i] = scratch
            self._add(i, self.comm.Isend([scratch, MPI.BYTE], peer, tag))
        else:
            header = np.array((seq, digest, start, sent, n), dtype=np.int64)
            self.keep[i] = header
            self._add(i, self.comm.Isend([header, MPI.INT64_T], peer, tag))
            self._add(i, self.comm.Isend([buf, MPI.BYTE], peer, tag))

    def _early(self, i: int, peer: int, chunk: int, buf: memoryview) -> bool:
        """Take receive ``i`` from a message of this call that arrived during the previous
        one (which this rank then abandoned: see :meth:`_finish`)."""
        queue = self.early.get((peer, chunk))
        if not queue or queue[0][0] != self.token[0]:
            return False
        seq, digest, start, sent, payload = queue.pop(0)
        if not queue:
            del self.early[(peer, chunk)]
        if digest != self.token[1] or len(payload) != len(buf):
            self.failed = self._mismatch(self._describe(peer, seq, digest))
        else:
            buf[:] = payload
        self.instant.append((i, start, sent))
        return True

    def _add(self, i: int, req: MPI.Request) -> None:
        self.reqs.append(req)
        self.owners.append(i)
        self.parts[i] = self.parts.get(i, 0) + 1

    # -- completion -------------------------------------------------------------------------------

    def poll(self) -> list[tuple[int, int, int]]:
        """Ops whose transfers completed: ``(op, stamp start, stamp issue)``."""
        if self.instant:
            if self.failed is not None:
                raise self.failed
            done, self.instant = self.instant, []
            return done
        reqs = self.reqs
        if not reqs:
            return _EMPTY
        error = None
        try:
            got = MPI.Request.Testsome(reqs)
        except MPI.Exception as exc:
            # A message larger than its receive (truncated: its first bytes, the header, are
            # there).  Completed requests are now null; a leftover of an abandoned call
            # explains it, anything else is a disagreement on the size.
            error = exc.Get_error_string().splitlines()[0]
            got = [k for k, r in enumerate(reqs) if r == MPI.REQUEST_NULL]
        if not got:
            return _EMPTY
        owners, parts = self.owners, self.parts
        finished = set(got)
        done: list[tuple[int, int, int]] = []
        self.dropped = 0
        failed = None
        for k in got:
            i = owners[k]
            parts[i] -= 1
            if parts[i] == 0:
                del parts[i]
                try:
                    self._finish(i, done)
                except MismatchError as exc:  # look at every completion (keep early ones)
                    failed = failed or exc
        self.reqs = [r for k, r in enumerate(reqs) if k not in finished] + self.reqs[len(reqs) :]
        self.owners = [o for k, o in enumerate(owners) if k not in finished] + self.owners[
            len(owners) :
        ]
        if failed is not None:
            raise failed
        if error is not None and not self.dropped:
            raise self._mismatch(f"a message did not fit its receive (another size; {error})")
        return done

    def _finish(self, i: int, done: list) -> None:
        recv = self.recvs.pop(i, None)
        if recv is None:  # a send
            self.keep.pop(i, None)
            done.append((i, 0, 0))
            return
        peer, chunk, buf, scratch, header = recv
        if header is None:
            done.append((i, 0, 0))
            return
        seq, digest = int(header[0]), int(header[1])
        if self.token is not None and (seq, digest) != self.token:
            mine = self.token[0]
            if seq in self.stale and seq < mine:
                self.dropped += 1
                self.recv(i, peer, chunk, buf)  # a leftover of an abandoned call: drop it
                return
            if seq > mine:
                # The peer is in a later call: it abandoned (or disagreed on) this one, so
                # this rank abandons it too; the message belongs to that later call.
                entry = self._entry(header, scratch, buf)
                self.early.setdefault((peer, chunk), []).append(entry)
            raise self._mismatch(self._describe(peer, seq, digest))
        if scratch is not None:
            buf[:] = scratch[HEADER:]
        done.append((i, int(header[2]), int(header[3])))

    def _describe(self, peer: int, seq: int, digest: int) -> str:
        mine = self.token[0]
        if seq == mine:
            return f"rank {peer} planned another schedule for this call (call {seq})"
        return f"rank {peer} sent data of its call {seq} while this rank is in its call {mine}"

    def _mismatch(self, detail: str) -> MismatchError:
        return MismatchError(
            f"rank {self.comm.rank}: {self.what}: the ranks planned different schedules: "
            f"{detail}; every rank must call the same "
            "collectives in the same order with the same root, members, size, segment size, "
            "datatype and operator"
        )

    # -- idling and abandoning --------------------------------------------------------------------

    def idle(self, seconds: float) -> None:
        if self.notices is not None:
            self.notices.check(self.seq, self.what)
        time.sleep(seconds)

    def abandon(self) -> list[tuple[MPI.Request, object]]:
        """Cancel the pending receives (after an error) and return the pending sends, to be
        tested later (with the memory they read).  A receive that completed meanwhile may
        hold a message of the peer's next call: it is kept for that call."""
        sends = []
        status = MPI.Status()
        for req, i in zip(self.reqs, self.owners, strict=True):
            if req == MPI.REQUEST_NULL:  # completed before the error
                continue
            if i not in self.recvs:
                sends.append((req, self.keep.get(i)))
                continue
            req.Cancel()
            req.Wait(status)
            if not status.Is_cancelled():
                self.parts[i] -= 1
                if self.parts[i] == 0:
                    self._salvage(i)
        self.reqs, self.owners = [], []
        return sends

    def _salvage(self, i: int) -> None:
        peer, chunk, buf, scratch, header = self.recvs.pop(i)
        if header is None or self.token is None or int(header[0]) <= self.token[0]:
            return
        entry = self._entry(header, scratch, buf)
        self.early.setdefault((peer, chunk), []).append(entry)

    @staticmethod
    def _entry(header, scratch, buf) -> tuple:
        """A message of a later call, kept: its header fields and payload."""
        n = min(int(header[4]), len(buf))  # a longer one was cut: the size check will fail
        data = bytes(scratch[HEADER : HEADER + n] if scratch is not None else buf[:n])
        return (int(header[0]), int(header[1]), int(header[2]), int(header[3]), data)
