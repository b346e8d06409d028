"""Persistent collectives of a wrapper: ``Bcast_init``, ``Allreduce_init``, ... return a
real MPI persistent request whose ``Start`` runs the planned schedule on the progress thread.

A persistent collective is a call made once and started many times.  Its request must work
with MPI's own ``MPI.Prequest.Startall`` and ``Request.Waitall``, which call no Python of
hetcoll, so it cannot be a generalized request (MPI cannot start one).  It is a persistent
*synchronous send to this rank itself* (``Ssend_init``, zero bytes, on the progress's
private duplicate of ``COMM_SELF``, a tag per request): starting it (``Start``,
``Startall``) posts the send, and a synchronous send completes only when its receive is
posted.  Whoever runs the started calls (:class:`.nonblocking.Progress`: the program's
thread in ``Wait``, else the progress thread) sees the started sends with ``Iprobe`` - in
the order they were started, with the nonblocking calls, since messages between two ranks
on one communicator never overtake each other - runs each one's blocking collective, and
only then receives its send, which completes the request.  So ``Wait``, ``Test``,
``Waitall`` with other requests, ``Startall`` and ``Free`` are MPI's own.  A start that
no ``Wait`` runs at once is found by the thread's next look (every 50 us - 2 ms while
persistent requests live, doubling while it finds none or the program runs the starts).

A start of ``Bcast_init`` on a buffer whose bytes are its own (not packed per call), of
``Allreduce_init`` run as a hypercube reduction of a commutative operator into a contiguous
``recvbuf``, of ``Allgather_init`` over a hypercube from a contiguous block, of
``Reduce_init`` and ``Reduce_scatter_block_init`` as tree reductions of a commutative
operator (the latter then a scatter, or over per-root trees), of ``Gather_init``,
``Scatter_init`` over their trees and of ``Barrier_init`` runs what was made in the
``*_init`` call: the engine's run of the planned schedule on the buffers typed once (a
handler back to the rank's contribution, read again from the program's buffer, its result
copied out), without the blocking method's parsing and lookups.
A ``Bcast_init`` whose program is one message per tree edge (a single tree, unsegmented),
natively and without ``check="always"``, goes further (:mod:`.direct`, a
:class:`DirectRequest`): its messages are MPI persistent point-to-point requests made in
the ``*_init`` call on the user's buffer (a receive from the parent, a send to each
child), which its ``Start`` starts before the start's own message (the receive; the root's
sends), and a start's run only waits for the receive and starts the sends: no engine,
copy or header per start.
And when the request is the wrapper's only live persistent one and no nonblocking call is
queued, its start is the only message that can be waiting, so ``Wait`` runs it at once
without ``Iprobe`` and only receives its send (several live requests, queued calls: the
order is looked for as above).

What is planned: ``Bcast_init``, ``Allreduce_init``, ``Allgather_init``, ``Barrier_init``
(the calls whose choice :mod:`.nonblocking` can ask for); ``Reduce_init``, ``Gather_init``,
``Scatter_init``, ``Reduce_scatter_block_init`` of a ``HetComm``, a call its planner gives
to MPI, and every one under a thread level below ``MPI_THREAD_MULTIPLE``, are MPI's own.
The schedule is planned in the ``*_init`` call (a collective call in MPI-4): the blocking
call runs there up to the engine's run, which is replaced by one that only returns the
call's digest, so the plan and the rank plan are cached as the blocking call's are; then
every rank's digest is compared (one allgather, unless ``check="never"``), so ranks that
make different calls raise there, on every rank.  A start plans and agrees nothing more
(with ``check="always"`` it still takes part in the per-call round, which also keeps any
rank from leaving the call before every rank has entered it).
"""

from __future__ import annotations

import threading
import weakref
from threading import get_ident
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError, MismatchError
from ..lowering import block_layout
from .buffers import Message, in_place, message
from .collectives import _SPECS
from .direct import DirectBcast, tree_edges
from .nonblocking import NONBLOCKING, Nonblocking, RaisesOnCompletion, _threaded
from .perroot import PerRootReduce
from .rank_ops import ByteRanges
from .reduce import GatherHandler, ReduceHandler
from .rooted import Blocks, TreeReduce, _blocks_of, _preorder_moves, _write
from .subcomms import planned_class
from .vectors import _reduce_scatter_key, _spans

__all__ = ["PERSISTENT", "DirectRequest", "Persistent", "PersistentRequest"]

_FAILED, _ROOM = b"failed:", 200  # a rank's error in the agreement of an *_init call
_TAG_UB = 32767  # the largest tag MPI must allow (tag 0 is the nonblocking calls')
_EMPTY = np.zeros(0, np.uint8)


def _nothing() -> None:
    """A start of a collective on one rank (it moves nothing)."""


class _Planned(Exception):
    """Raised instead of running a call that was only to be planned (``digest``: its own)."""

    def __init__(self, digest: int) -> None:
        super().__init__(digest)
        self.digest = digest


#: each persistent collective and the blocking one it runs (when this class plans it)
PERSISTENT = {f"{blocking}_init": blocking for blocking in NONBLOCKING.values()}


class PersistentRequest(RaisesOnCompletion, MPI.Prequest):
    """The request of a persistent planned collective (an ``MPI.Prequest``: see the module
    docstring).  ``Wait``/``Test`` raise the last start's error, if it failed."""

    # ``Start`` is MPI's own: while a persistent request lives the thread looks every
    # 50 us - 2 ms anyway (as for a start made by ``Startall``), so a start tells nobody
    record: dict

    def _mine(self) -> dict:
        return self.record

    def Wait(self, status: MPI.Status | None = None) -> bool:
        record = self.record
        if not self._run_alone(record):
            record["progress"].help(record)
        MPI.Prequest.Wait(self, status)
        if record["error"] is not None:
            self._raise()
        return True

    def _run_alone(self, record: dict) -> bool:
        """Run this start here, without looking for the order of the started calls, when
        it is the only call that can have been started: the wrapper's one live persistent
        request and no nonblocking call queued (then the only message on the progress's
        ``COMM_SELF`` is this request's own).  Whether it ran (or had already run); else
        :meth:`.nonblocking.Progress.help` looks in order.  The commonest wait of all, so
        :meth:`.nonblocking.Progress.run` is inlined (a start made in the ``*_init`` call
        says what ran itself) and the locks are entered without a Python frame."""
        start = record["start"]
        progress = record["progress"]
        if start is None or progress.armed != 1 or progress.pending:
            return False
        me = get_ident()
        if me == progress.ident or me == progress.holder:  # from a call being run
            return False
        runner = progress.runner
        runner.acquire()  # the thread may be running it: wait for it
        try:
            if progress.armed != 1 or progress.pending:  # looked at again under the lock
                return False
            if MPI.Request.Get_status(self):  # not started, or the thread ran it
                return True
            progress.holder = me
            try:
                start()
            except BaseException as exc:  # raised where the program waits for it
                record["error"] = exc
                with progress.guard:
                    progress.unreported.append(exc)
            else:  # an earlier start's error was kept for the wrapper's next call
                record["error"] = None
            record["runs"] += 1
            with progress.guard:  # Free() may be looking at the request
                progress.comm.Recv(record["empty"], 0, record["tag"])
        finally:
            progress.holder = None
            runner.release()
        return True

    def Free(self) -> None:
        record = self.record
        if self == MPI.REQUEST_NULL:  # freed when its wrapper was released
            return
        progress = record["progress"]
        with progress.cond:  # the thread may be completing it
            active = not self.Get_status()
            super().Free()
            if record.pop("live", False):
                if active:  # MPI lets a program free an active request: the call still runs
                    record["retire"] = True  # and is retired then
                else:
                    progress.retire(record)

    @property
    def error(self) -> BaseException | None:
        return self.record.get("error")

    @error.setter
    def error(self, value: BaseException | None) -> None:
        self.record["error"] = value

    @property
    def progress(self):
        return self.record["progress"]


class DirectRequest(PersistentRequest):
    """The request of a persistent ``Bcast`` on one tree of one message (:mod:`.direct`):
    its ``Start`` also starts the receive (the root: its sends) before the start's own
    message, so the data moves from the start on; the rest is :class:`PersistentRequest`'s,
    but for the commonest wait of all, which runs in one frame here and one of the start's.
    """

    direct: DirectBcast

    def Start(self) -> None:
        direct = self.direct
        direct.post_early()  # first: whoever finds the start finds them posted
        direct.posted = True
        MPI.Prequest.Start(self)

    def Wait(self, status: MPI.Status | None = None) -> bool:
        """A start made by :meth:`Start` and not run yet, when it is the only call that can
        have been started (as :meth:`PersistentRequest._run_alone` decides) and no thread
        runs started calls: run here, its message received by a persistent receive; else
        :meth:`PersistentRequest.Wait`.  ``posted`` says that this start is not run yet
        without asking MPI, and a lock taken without waiting says that no call is being run
        (the progress thread's, or one this thread is in), without asking who runs it.
        The self-message is received outside ``progress.guard``: the guard keeps a ``Free``
        from another thread from deciding while the start completes, and a ``Free``
        concurrent with this ``Wait`` is erroneous in MPI (calls of several threads behave
        as if made in some order, and a freed request may not be waited for)."""
        direct, record = self.direct, self.record
        progress = record["progress"]
        runner = progress.runner
        if not (direct.posted and runner.acquire(False)):
            return PersistentRequest.Wait(self, status)
        try:
            alone = direct.posted and progress.armed == 1 and not progress.pending
            if alone:
                try:
                    direct.start()
                except BaseException as exc:  # raised where the program waits for it
                    record["error"] = exc
                    with progress.guard:
                        progress.unreported.append(exc)
                else:  # an earlier start's error was kept for the wrapper's next call
                    record["error"] = None
                record["runs"] += 1
                receive = direct.receive
                receive.Start()
                receive.Wait()
        finally:
            runner.release()
        if not alone:
            return PersistentRequest.Wait(self, status)
        MPI.Prequest.Wait(self, status)
        if record["error"] is not None:
            self._raise()
        return True


class Persistent(Nonblocking):
    """:class:`~.nonblocking.Nonblocking` with persistent forms of its planned collectives
    (see the module docstring)."""

    def _persistent(self, name: str, args: tuple) -> MPI.Prequest:
        blocking = PERSISTENT[name]
        how = self._how(blocking, args) if _threaded() and self._planned_here(blocking) else None
        if how is None:  # MPI's own (chosen for this call, or not planned here)
            self._passed_to_mpi()
            return getattr(MPI.Intracomm, name)(self, *args)
        progress = self._progress or self._start_progress()
        with progress.runner:  # MPI-4: an *_init is a collective, after those started before
            progress.holder = threading.get_ident()
            try:
                progress.run_started()
                if self.size > 1:  # one rank: nothing to plan (the call moves nothing)
                    self._agree(self._plan_only(blocking, args, how), name)
                # its requests, on a communicator made here (collective: under the runner)
                direct = self._direct(blocking, args, self.__dict__.get("_captured"))
            finally:
                progress.holder = None
                captured = self.__dict__.pop("_captured", None)
        tag = self._next_tag = getattr(self, "_next_tag", 0) % _TAG_UB + 1
        while tag in progress.records:  # a long-lived request keeps its tag
            tag = tag % _TAG_UB + 1
        memory = bytearray(1)
        record = {
            "tag": tag,
            "start": self._prepared(blocking, args, how, name, captured, direct),
            "direct": direct,
            # weak: the records live as long as the thread, which keeps no wrapper
            "call": weakref.WeakMethod(getattr(planned_class(self), blocking).__get__(self)),
            "args": args,
            "how": how,
            "name": name,
            "memory": memory,
            "empty": [memory, 0, MPI.BYTE],  # what receives a start's message
            "progress": progress,
            "live": True,
            "error": None,  # the last start's
            "runs": 0,  # starts run
        }
        kind = PersistentRequest if direct is None else DirectRequest
        req = kind(progress.comm.Ssend_init([memory, 0, MPI.BYTE], 0, tag))
        req.record = record
        if direct is not None:  # what receives the start's message in a lone Wait
            direct.receive = progress.comm.Recv_init([memory, 0, MPI.BYTE], 0, tag)
            req.direct = direct
        record["request"] = weakref.ref(req)
        with progress.cond:
            progress.records[tag] = record
            progress.armed += 1
        progress.soon()  # an idle thread sleeping until a call comes: it looks from now on
        return req

    def _plan_only(self, blocking: str, args: tuple, how: dict) -> bytes:
        """Plan ``blocking(*args)`` as a start will run it (the schedule and its rank plan
        cached) without running it: the call's digest (empty when nothing would run: one
        rank), or ``_FAILED`` + this rank's error."""

        def planned(plan, handler, what, digest):  # the engine's run, replaced: no message
            buffers = dict(handler.buffers) if type(handler) is ByteRanges else None
            self.__dict__["_captured"] = (
                plan,
                handler,
                buffers,
                what,
                digest,
                self.last_schedule,
                self.last_choice,
            )
            raise _Planned(digest)

        self.__dict__["_execute"] = planned  # under the runner: no other call runs meanwhile
        last = self.last_schedule, self.last_choice  # what the program's last call ran
        try:
            getattr(planned_class(self), blocking)(self, *args, **how)
        except _Planned as done:
            return done.digest.to_bytes(8, "little")
        except HetcollError as exc:
            return _FAILED + str(exc).encode()[:_ROOM].ljust(_ROOM)
        finally:
            del self.__dict__["_execute"]
            self.last_schedule, self.last_choice = last
        return b""

    def _direct(self, blocking: str, args: tuple, captured) -> DirectBcast | None:
        """A ``Bcast``'s point-to-point requests (:mod:`.direct`) when its program is one
        message per tree edge, natively and without ``check="always"`` (the same answer
        on every rank: the program and the settings are), else None."""
        if blocking != "Bcast" or captured is None or self.emulate or self.check == "always":
            return None
        plan, what, sched = captured[0], captured[3], captured[5]
        program = next((h[2] for h in self._cache.values() if h[1] is plan), None)
        if not tree_edges(sched.program() if program is None else program):
            return None
        buf, root = args
        spec = message(buf, writable=self.rank != root, where="Bcast_init buf", typed=False)
        comm, tag = self._direct_tag()
        digest, choice = captured[4], captured[6]
        last = ("Bcast_init", self.rank_of.get(sched.root), sched.algorithm)
        call = (digest, sched, choice, last)
        return DirectBcast(comm, tag, spec.mpi(), plan, self, what, call)

    def _direct_tag(self) -> tuple[MPI.Comm, int]:
        """The communicator and tag of a new :class:`.direct.DirectBcast`: the next tag
        (every rank counts the same ``*_init`` calls), on a private duplicate made at the
        first one, a new one once its tags run out."""
        comms = self.__dict__.setdefault("_direct_comms", [])
        tag = self.__dict__.get("_direct_last", 0) + 1
        if not comms or tag > comms[-1].Get_attr(MPI.TAG_UB):
            comms.append(self._dup(self.comm))
            tag = 1
        self._direct_last = tag
        return comms[-1], tag

    def _prepared(self, blocking: str, args: tuple, how: dict, name: str, captured, direct=None):
        """What a start runs, made once here: the engine's run of the schedule planned in
        the ``*_init`` call on the request's fixed buffers (typed once), or ``direct``'s
        point-to-point requests, with what ``last_call`` says after it; None (a start runs
        the blocking call) for what is packed or chosen per call (a non-contiguous datatype
        to send, another path than the one prepared: see the ``_*_run`` methods)."""
        if captured is None:  # one rank: a broadcast or barrier moves nothing
            return _nothing if self.size == 1 and blocking in ("Bcast", "Barrier") else None
        if direct is not None:
            return direct.start
        runs = {
            "Bcast": self._bcast_run,
            "Allreduce": self._allreduce_run,
            "Allgather": self._allgather_run,
            "Reduce": self._reduce_run,
            "Gather": self._gather_run,
            "Scatter": self._scatter_run,
            "Reduce_scatter_block": self._reduce_scatter_run,
            "Barrier": self._barrier_run,
        }
        if blocking not in runs:
            return None
        plan, handler, _, what, digest, sched, choice = captured
        run = runs[blocking](args, captured, how)
        if run is None:
            return None
        root = self.rank_of.get(sched.root) if sched.hypercube is None else None
        if blocking == "Reduce_scatter_block":  # as the blocking call names it: no root
            root = None
        last = (name, root, sched.algorithm)
        mine = weakref.ref(self)  # weak: the records live as long as the thread

        def start() -> None:
            comm = mine()
            if comm is None:  # collected: its close() ran every started call
                return
            comm.last_schedule, comm.last_choice = sched, choice
            run(comm, plan, handler, what, digest)
            comm._last = (*last, comm._seq)  # last_call: this request's call

        return start

    def _bcast_run(self, args: tuple, captured: tuple, how: dict):
        """A ``Bcast`` start's run on the buffer typed in the ``*_init`` call (its bytes its
        own: contiguous), else None."""
        handler, buffers = captured[1], captured[2]
        buf, root = args
        if buffers is None or set(buffers) != {0} or buffers[0] is None:
            return None
        receiving = self.rank != root  # a spec's bytes are its buffer's own if contiguous
        if isinstance(buf, _SPECS) and not message(buf, writable=receiving, where="").contiguous:
            return None
        data, held = buffers[0], handler.buffers

        def run(comm, plan, handler, what, digest) -> None:
            held[0] = data
            try:
                comm._execute(plan, handler, what, digest)
            finally:
                held[0] = None

        return run

    def _allreduce_run(self, args: tuple, captured: tuple, how: dict):
        """An ``Allreduce`` start's run when the call is a hypercube reduction of a
        commutative operator into a contiguous ``recvbuf`` (the blocking call's commonest
        path): the handler made in the ``*_init`` call, back to this rank's contribution
        (a view of ``sendbuf``, read again), run, its result copied into ``recvbuf``;
        else None."""
        handler = captured[1]
        _, recvbuf, op = args
        if type(handler) is not ReduceHandler or not op.is_commutative:
            return None
        recv = message(recvbuf, writable=True, where="Allreduce recvbuf")
        if not recv.contiguous:
            return None
        out = recv.data()

        def run(comm, plan, handler, what, digest) -> None:
            handler.restart()
            with comm._scratch():
                comm._execute(plan, handler, what, digest)
                out[:] = memoryview(handler.state).cast("B")[: len(out)]

        return run

    def _allgather_run(self, args: tuple, captured: tuple, how: dict):
        """An ``Allgather`` start's run when the call gathers over a hypercube (the blocking
        call's path when it is not a tree's or per-root's) from a contiguous block (its bytes
        sent as they are): the handler made in the ``*_init`` call, back to this rank's
        block (read again), run, each rank's block placed into ``recvbuf``; else None."""
        handler = captured[1]
        if type(handler) is not GatherHandler:
            return None
        _, blocks_out, mine = self._allgather_parts(*args)
        if not mine.contiguous:  # packed for the trip at each call
            return None
        nodes = self.nodes

        def run(comm, plan, handler, what, digest) -> None:
            handler.restart()
            with comm._scratch():
                comm._execute(plan, handler, what, digest)
                got = handler.blocks()
                for out, node in zip(blocks_out, nodes, strict=True):
                    out.place(got[node])

        return run

    def _reduce_run(self, args: tuple, captured: tuple, how: dict):
        """A ``Reduce`` start's run when the call is a tree reduction of a commutative
        operator (the blocking call's path for one): the handler made in the ``*_init``
        call, its state read again from this rank's contribution, run, the result written
        into the root's ``recvbuf``; else None."""
        handler = captured[1]
        _, recvbuf, op, root = args
        if type(handler) is not TreeReduce or not op.is_commutative:
            return None
        at_root = self.rank == root
        recv = message(recvbuf, writable=True, where="Reduce recvbuf") if at_root else None

        def run(comm, plan, handler, what, digest) -> None:
            with comm._scratch():
                handler.restart()
                comm._execute(plan, handler, what, digest)
                if recv is not None:
                    _write(recv, memoryview(handler.state))

        return run

    def _gather_run(self, args: tuple, captured: tuple, how: dict):
        """A ``Gather`` start's run over the tree (the blocking call's path): this rank's
        block read again (packed, if its datatype says so) into the tree's block buffer,
        the run, each rank's block placed into the root's ``recvbuf``; else None."""
        handler, sched = captured[1], captured[5]
        if type(handler) is not Blocks:
            return None
        sendbuf, recvbuf, root = args
        outs = None
        if self.rank == root:
            recv = message(recvbuf, writable=True, where="Gather recvbuf", blocks=self.size)
            outs = _blocks_of(recv, self.size)
        if outs is not None and in_place(sendbuf):
            send = outs[root]
        else:
            send = message(sendbuf, writable=False, where="Gather sendbuf")
        _, offset, span = block_layout(sched.flows[0].tree, sched.blocks())
        n, room = send.nbytes, span[self.node]
        places = (
            []
            if outs is None
            else [(out, offset[v]) for out, v in zip(outs, self.nodes, strict=True)]
        )

        def run(comm, plan, handler, what, digest) -> None:
            with comm._scratch():
                buf = handler.buffer = comm._pool.take(room)
                buf[:n] = np.frombuffer(send.pack(), np.uint8)
                comm._execute(plan, handler, what, digest)
                for out, at in places:
                    out.place(buf[at : at + n])

        return run

    def _scatter_run(self, args: tuple, captured: tuple, how: dict):
        """A ``Scatter`` start's run over the tree (the blocking call's path): the root's
        blocks read again (packed, if their datatype says so) into the tree's block buffer
        in preorder, the run, this rank's block unpacked into its ``recvbuf``; else None."""
        handler, sched = captured[1], captured[5]
        if type(handler) is not Blocks:
            return None
        sendbuf, recvbuf, root = args
        at_root = self.rank == root
        recv = None
        if not (at_root and in_place(recvbuf)):
            recv = message(recvbuf, writable=True, where="Scatter recvbuf")
        places = []
        _, offset, span = block_layout(sched.flows[0].tree, sched.blocks())
        if at_root:
            send = message(sendbuf, writable=False, where="Scatter sendbuf", blocks=self.size)
            parts = _blocks_of(send, self.size)
            places = [(part, offset[v]) for part, v in zip(parts, self.nodes, strict=True)]
            n = parts[0].nbytes
        else:
            n = recv.nbytes
        room = span[self.node]

        def run(comm, plan, handler, what, digest) -> None:
            with comm._scratch():
                buf = handler.buffer = comm._pool.take(room)
                for part, at in places:
                    buf[at : at + n] = np.frombuffer(part.pack(), np.uint8)
                comm._execute(plan, handler, what, digest)
                if recv is not None:  # its own block first in its range
                    recv.unpack(memoryview(buf)[:n])

        return run

    def _reduce_scatter_run(self, args: tuple, captured: tuple, how: dict):
        """A ``Reduce_scatter_block`` start's run as a tree reduction of a commutative
        operator to rank 0 then a scatter (the blocking call's path for one unless the
        wrapper's planner plans per root): the reduce's handler made in the ``*_init``
        call, back to this rank's contribution (read again), run; at rank 0 the result laid
        out in the scatter tree's preorder; the scatter (planned in the ``*_init`` call
        too) run; this rank's block unpacked into ``recvbuf``.  Else None."""
        handler = captured[1]
        sendbuf, recvbuf, op = args
        if type(handler) is PerRootReduce:
            return self._per_root_scatter_run(args, captured)
        if type(handler) is not TreeReduce or not op.is_commutative:
            return None
        send, recv, per = self._scattered_parts(sendbuf, recvbuf)
        counts = [per] * self.size
        sizes = tuple(per * send.datatype.Get_size() for _ in counts)
        key = _reduce_scatter_key(send, op, counts)
        scatter, splan, sprogram, sdigest = self._planned_rooted(
            "scatter", 0, 0, sizes, how.get("algo"), key
        )
        order, offset, span = block_layout(scatter.flows[0].tree, scatter.blocks())
        moves = _preorder_moves(self.nodes, order, offset, scatter.blocks())
        blocks = Blocks(sprogram, _EMPTY, offset[self.node])
        room, mine, at_root = span[self.node], sizes[self.rank], self.rank == 0
        dt, count, nbytes, contiguous = send.datatype, send.count, send.nbytes, send.contiguous

        def run(comm, plan, handler, what, digest) -> None:
            with comm._scratch():
                handler.restart()
                comm._execute(plan, handler, what, digest)
                buf = blocks.buffer = comm._pool.take(room)
                if at_root:  # the result (its datatype's span) in signature order
                    whole = Message(memoryview(handler.state), count, dt, nbytes, contiguous, "")
                    keep = np.frombuffer(whole.pack(), np.uint8)
                    for src, dst in moves:
                        buf[dst] = keep[src]
                comm._execute(splan, blocks, what, sdigest)
                recv.unpack(memoryview(buf)[:mine])
                comm.last_schedule = scatter  # as the blocking call leaves it

        return run

    def _per_root_scatter_run(self, args: tuple, captured: tuple):
        """A ``Reduce_scatter_block`` start's run over per-root trees (the blocking call's
        path under a per-root ``cube_algo``, a commutative operator): the handler made in
        the ``*_init`` call on new scratch memory holding this rank's blocks (views of
        ``sendbuf``, read again) where the schedule puts them, run, this rank's block of
        the result written into ``recvbuf``."""
        sched = captured[5]
        send, recv, per = self._scattered_parts(*args[:2])
        counts = [per] * self.size
        extent = send.datatype.Get_extent()[1]
        sizes = [c * extent for c in counts]
        at = sched.block_offsets()
        places = [
            (np.frombuffer(memoryview(block).cast("B"), np.uint8)[:size], at[v])
            for v, block, size in zip(self.nodes, _spans(send, counts), sizes, strict=True)
        ]
        total, me, mine = sum(sizes), at[self.node], sizes[self.rank]

        def run(comm, plan, handler, what, digest) -> None:
            with comm._scratch():
                work = handler.work = comm._pool.take(total)
                work[:] = 0
                for got, to in places:
                    work[to : to + len(got)] = got
                comm._execute(plan, handler, what, digest)
                _write(recv, memoryview(work)[me : me + mine])

        return run

    def _barrier_run(self, args: tuple, captured: tuple, how: dict):
        """A ``Barrier`` start's run: the handler made in the ``*_init`` call (a
        hypercube's, back to its start; MPI's algorithm under emulation moves no bytes)."""
        restart = getattr(captured[1], "restart", _nothing)

        def run(comm, plan, handler, what, digest) -> None:
            restart()
            comm._execute(plan, handler, what, digest)

        return run

    def _agree(self, digest: bytes, name: str) -> None:
        """Compare every rank's digest of the call (one allgather, in the ``*_init`` call,
        never at a start): every rank raises when a rank failed or ranks disagree."""
        if self.check == "never":
            if digest.startswith(_FAILED):
                raise HetcollError(digest[len(_FAILED) :].decode(errors="replace").rstrip())
            return
        got = self._allgather(digest.ljust(len(_FAILED) + _ROOM), f"{name} (the agreement)")
        failed = [r for r, d in enumerate(got) if d.startswith(_FAILED)]
        if failed:
            text = got[failed[0]][len(_FAILED) :].decode(errors="replace").rstrip()
            if failed[0] == self.rank or all(d == got[0] for d in got):
                raise HetcollError(text)
            raise MismatchError(f"rank {self.rank}: {name} failed on rank {failed[0]}: {text}")
        if len(set(got)) > 1:
            other = next(r for r, d in enumerate(got) if d != got[self.rank])
            raise MismatchError(
                f"rank {self.rank}: {name} differs from rank {other}'s (another root, size, "
                "datatype or operator); every rank must make the same call"
            )

    def _free_progress(self, progress) -> None:
        """Also free the persistent requests the program did not (inactive ones: nothing
        hetcoll made may outlive its wrapper)."""
        for record in progress.records.values():
            req = record["request"]()
            if req is not None and req != MPI.REQUEST_NULL and req.Get_status():  # inactive
                MPI.Prequest.Free(req)
            if record.get("direct") is not None:
                record["direct"].free()
        progress.records = {}
        for comm in self.__dict__.pop("_direct_comms", ()):
            if self._broken is None:  # after a timeout a late start's message may still come
                comm.Free()
        super()._free_progress(progress)

    def Bcast_init(self, buf: Any, root: int = 0, info: MPI.Info = MPI.INFO_NULL):
        """A persistent ``Bcast``: each ``Start`` runs the planned schedule."""
        return self._persistent("Bcast_init", (buf, root))

    def Allreduce_init(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, info=MPI.INFO_NULL):
        """A persistent ``Allreduce``."""
        return self._persistent("Allreduce_init", (sendbuf, recvbuf, op))

    def Allgather_init(self, sendbuf: Any, recvbuf: Any, info: MPI.Info = MPI.INFO_NULL):
        """A persistent ``Allgather``."""
        return self._persistent("Allgather_init", (sendbuf, recvbuf))

    def Barrier_init(self, info: MPI.Info = MPI.INFO_NULL):
        """A persistent ``Barrier``."""
        return self._persistent("Barrier_init", ())

    def Reduce_init(self, sendbuf, recvbuf, op=MPI.SUM, root=0, info=MPI.INFO_NULL):
        """A persistent ``Reduce`` when it is planned, else MPI's ``Reduce_init``."""
        return self._persistent("Reduce_init", (sendbuf, recvbuf, op, root))

    def Gather_init(self, sendbuf, recvbuf, root=0, info=MPI.INFO_NULL):
        """A persistent ``Gather`` when it is planned, else MPI's ``Gather_init``."""
        return self._persistent("Gather_init", (sendbuf, recvbuf, root))

    def Scatter_init(self, sendbuf, recvbuf, root=0, info=MPI.INFO_NULL):
        """A persistent ``Scatter`` when it is planned, else MPI's ``Scatter_init``."""
        return self._persistent("Scatter_init", (sendbuf, recvbuf, root))

    def Reduce_scatter_block_init(self, sendbuf, recvbuf, op=MPI.SUM, info=MPI.INFO_NULL):
        """A persistent ``Reduce_scatter_block`` when planned, else MPI's."""
        return self._persistent("Reduce_scatter_block_init", (sendbuf, recvbuf, op))
