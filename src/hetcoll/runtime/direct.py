"""A persistent ``Bcast`` whose plan is one tree of one message: MPI's own persistent
point-to-point requests on the program's buffer.

When a broadcast's program is a single message per tree edge (the whole buffer, unsegmented,
one chunk: :func:`tree_edges`), a rank's part of it is at most one receive from its parent
followed by one send per child, in the plan's order.  ``Bcast_init`` then makes those as
MPI persistent requests (``Recv_init`` from the parent, ``Send_init`` to each child) on the
user's own buffer, on a private duplicate of the wrapper's communicator with a tag per
request, so a start moves the data with no copy, no header and none of the engine's
per-call work: a start of the request (its ``Start`` method) starts the receive (the root:
its sends, all of them for a small message, the first otherwise), and the run of the start
(:meth:`DirectBcast.start`, where :mod:`.persistent` runs a start's call: the waiting thread
in ``Wait``, else the progress thread) counts the call as the wrapper counts any, waits for
the receive and starts the sends in order.  A start made by MPI's own
``Prequest.Startall`` is found as any other persistent start and posts its requests when it
runs.

Every rank takes this path or none: whether a program qualifies depends only on the
program (the same on every rank) and on the agreed settings (no emulation: an emulated
call needs the engine's timing; not ``check="always"``: each start would take part in
the per-call round).  A non-contiguous datatype travels as MPI sends it (the receive's
datatype places the bytes), so the per-rank buffer layouts do not matter.  The messages
carry no call number and digest: they are matched by their own communicator and tag,
so nothing of another call can be taken for them, and the ``*_init`` call compared the
ranks' calls once.  Waits keep the engine's rules (``spin``, then naps of ``poll``), and
its timeout: a rank that waits longer than ``timeout`` raises
:class:`~hetcoll.errors.CollectiveTimeoutError` and the wrapper is unusable after it.
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import Any

from mpi4py import MPI

from ..errors import CollectiveTimeoutError, HetcollError
from ..program import Program
from .rank_ops import SEND, RankPlan, timeout_message
from .transport import PACK, release

Startall = MPI.Prequest.Startall

__all__ = ["DirectBcast", "tree_edges"]

_NS = 1_000_000_000


def tree_edges(program: Program) -> bool:
    """Whether ``program`` is a broadcast of one message per tree edge: one chunk (bytes of
    buffer 0), no reduction, and on every rank at most one receive, without deps, and
    sends of that chunk that each depend on it alone (on nothing at the root)."""
    if len(program.chunks) != 1 or program.reduces:
        return False
    chunk = program.chunks[0]
    if chunk.buffer != 0 or chunk.offset != 0 or chunk.origin or chunk.copy_of is not None:
        return False
    for ops in program.ops.values():
        recvs = [i for i, op in enumerate(ops) if op.kind == "recv"]
        if len(recvs) + sum(op.kind == "send" for op in ops) != len(ops) or len(recvs) > 1:
            return False
        if any(op.result is not None for op in ops):
            return False
        want = (recvs[0],) if recvs else ()
        if any(op.deps != (() if op.kind == "recv" else want) for op in ops):
            return False
    return True


class DirectBcast:
    """One rank's requests of a persistent ``Bcast`` on one tree (see the module docstring).

    ``spec``: the program's buffer as MPI takes it; ``plan``: the rank's part of the
    program (peers and the order of its sends); ``owner``: the wrapper (its waits, clock,
    timeout; held weakly); ``digest``, ``sched``, ``choice``: the call's, as the ``*_init``
    call planned it; ``last``: what ``last_call`` says after a start, but its number."""

    def __init__(
        self,
        comm: MPI.Comm,
        tag: int,
        spec: Any,
        plan: RankPlan,
        owner,
        what: str,
        call: tuple[int, Any, Any, tuple],
    ) -> None:
        self.plan, self.what = plan, what
        # one request per op, in the plan's order (a receive comes before the sends that
        # depend on it)
        self.reqs = reqs = [
            (comm.Send_init if kind == SEND else comm.Recv_init)(spec, peer, tag)
            for kind, peer in zip(plan.kinds, plan.peers, strict=True)
        ]
        receives = bool(plan.kinds) and plan.kinds[0] != SEND
        small = all(n <= PACK for n in plan.nbytes)  # sent at once, whatever the order
        if receives:  # a start posts the receive; the run sends once it has arrived
            self.early, self.later = reqs[:1], reqs[1:]
        elif small:  # the root: every send at once (MPI takes each on the spot)
            self.early, self.later = reqs, []
        else:  # one send at a time, in the plan's order (its one send port)
            self.early, self.later = reqs[:1], reqs[1:]
        self.small = small
        # what starts the early requests, and the later ones of a small message (a C
        # call: no frame of hetcoll in the request's Start, no len() in the run)
        early, later = self.early, self.later
        self.post_early = early[0].Start if len(early) == 1 else partial(Startall, early)
        self.post_later = later[0].Start if len(later) == 1 else partial(Startall, later)
        self.posted = False  # the early requests were started by the request's Start
        self.rest, self.host = owner._rest, owner.host
        self.spin_ns, self.poll = int(owner.spin * _NS), owner.poll
        self.timeout = owner.timeout
        self.digest, self.sched, self.choice, self.last = call
        # weak: the progress thread keeps the request's record (and this) while the
        # request lives, and a record keeps no wrapper alive
        self.owner = weakref.ref(owner)
        abort = owner.on_timeout == "abort"
        self.on_timeout = weakref.WeakMethod(owner._timed_out) if abort else None
        self.receive: MPI.Prequest | None = None  # the start's own message's (persistent.py)

    def post(self) -> None:
        """A start: post the requests that need nothing first (the receive, the root's
        sends)."""
        self.post_early()
        self.posted = True

    def start(self) -> None:
        """The run of a start, as the wrapper runs a call (its number, the history
        ``close()`` compares and ``last_call``, as :meth:`.comm.ScheduleComm._execute`
        counts them): the receive waited for, the sends started in order and waited for
        (a start that :meth:`post` did not see, ``Startall``'s: posted here).  One frame:
        the commonest persistent start of all runs nothing else of hetcoll."""
        comm = self.owner()
        if comm is None:  # collected: its close() ran every started call
            return
        if comm._broken is not None:
            self.abandon()
            raise HetcollError(f"this HetComm is unusable after an earlier error: {comm._broken}")
        comm._seq += 1
        comm._history = hash((comm._history, self.digest))  # as _execute: alike on every rank
        comm.last_schedule, comm.last_choice = self.sched, self.choice
        if not self.posted:
            self.post()
        self.posted = False
        deadline = 0  # set by the first wait that does not end at once
        try:
            for req in self.early:
                if not req.Test():
                    deadline = self._wait(req, deadline)
            later = self.later
            if later:
                if self.small:
                    self.post_later()
                    for req in later:
                        if not req.Test():
                            deadline = self._wait(req, deadline)
                else:
                    for req in later:
                        req.Start()
                        if not req.Test():
                            deadline = self._wait(req, deadline)
        except CollectiveTimeoutError as exc:
            comm._broken = str(exc)
            raise
        comm._last = self.last + (comm._seq,)  # noqa: RUF005 (half the cost of (*a, b))

    def _wait(self, req: MPI.Prequest, deadline: int) -> int:
        """Wait for ``req`` as the engine waits: look again at once (yielding) for
        ``spin``, then nap ``poll`` between looks; past ``deadline`` (ns; 0: ``timeout``
        from now, the start's first wait), time out.  The deadline."""
        rest, (clock, sleep, _) = self.rest, self.host
        idle_since = clock()
        if not deadline:
            deadline = idle_since + int(self.timeout * _NS)
        while not req.Test():
            now = clock()
            if now - idle_since <= self.spin_ns:
                rest()
                continue
            if now > deadline:
                self._timeout(req)
            sleep(self.poll)
        return deadline

    def _timeout(self, req: MPI.Prequest) -> None:
        k = self.reqs.index(req)  # its op; the ops before it completed
        n = len(self.plan)
        message = timeout_message(self.plan, self.what, self.timeout, k.__eq__, [0] * n, -1, k)
        self.abandon()
        abort = None if self.on_timeout is None else self.on_timeout()
        if abort is not None:
            abort(message)
        raise CollectiveTimeoutError(message)

    def abandon(self) -> None:
        """After an error: cancel a receive still pending (sends complete on their own)."""
        for req, kind in zip(self.reqs, self.plan.kinds, strict=True):
            if kind != SEND and not req.Get_status():
                req.Cancel()
                req.Wait()

    def free(self) -> None:
        """Free the requests (a pending receive cancelled first: nothing of hetcoll may
        outlive its communicator)."""
        for req, kind in zip(self.reqs, self.plan.kinds, strict=True):
            release(req, kind != SEND)
        self.reqs = []
        receive = self.receive  # inactive (started and completed in one wait); kept
        if receive is not None and receive != MPI.REQUEST_NULL:  # freed: a later start's
            receive.Free()  # wait raises, as MPI does for a freed request
