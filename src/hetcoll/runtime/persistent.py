"""Persistent collectives of a wrapper: ``Bcast_init``, ``Allreduce_init``, ... return a
real MPI persistent request whose ``Start`` runs the planned schedule on the progress thread.

A persistent collective is a call made once and started many times.  Its request must work
with MPI's own ``MPI.Prequest.Startall`` and ``Request.Waitall``, which call no Python of
hetcoll, so it cannot be a generalized request (MPI cannot start one).  It is a persistent
*synchronous send to this rank itself* (``Ssend_init``, zero bytes, on a private duplicate of
``COMM_SELF``, a tag per request): starting it (``Start``, ``Startall``) posts the send, and
a synchronous send completes only when its receive is posted.  The wrapper's progress thread
(:mod:`.nonblocking`) sees the started sends with ``Iprobe`` - in the order they were
started, since messages between two ranks on one communicator never overtake each other -
runs each one's blocking collective, and only then receives its send, which completes the
request.  So ``Wait``, ``Test``, ``Waitall`` with other requests, ``Startall`` and ``Free``
are MPI's own.  ``Start`` on the request wakes the thread at once; a request started by
``MPI.Prequest.Startall`` is found by the thread's next look (it looks before each queued
call, before each blocking call of the wrapper, and every 50 us - 2 ms while idle).

What is planned: ``Bcast_init``, ``Allreduce_init``, ``Allgather_init``, ``Barrier_init``
(the calls whose choice :mod:`.nonblocking` can ask for); ``Reduce_init``, ``Gather_init``,
``Scatter_init``, ``Reduce_scatter_block_init`` of a ``HetComm``, a call its planner gives
to MPI, and every one under a thread level below ``MPI_THREAD_MULTIPLE``, are MPI's own.
The schedule is planned at the first start and cached (the blocking call's cache), not in
the ``*_init`` call.
"""

from __future__ import annotations

import weakref
from typing import Any

from mpi4py import MPI

from .nonblocking import NONBLOCKING, Nonblocking, RaisesOnCompletion, _threaded

__all__ = ["PERSISTENT", "Persistent", "PersistentRequest"]

#: each persistent collective and the blocking one it runs (when this class plans it)
PERSISTENT = {f"{blocking}_init": blocking for blocking in NONBLOCKING.values()}


class PersistentRequest(RaisesOnCompletion, MPI.Prequest):
    """The request of a persistent planned collective (an ``MPI.Prequest``: see the module
    docstring).  ``Wait``/``Test`` raise the last start's error, if it failed."""

    record: dict

    def Start(self) -> None:
        super().Start()
        self.record["progress"].wake()

    def Free(self) -> None:
        record = self.record
        if self == MPI.REQUEST_NULL:  # freed when its wrapper was released
            return
        with record["progress"].idle:  # the thread may be completing it
            active = not self.Get_status()
            super().Free()
            if record.pop("live", False):
                if active:  # MPI lets a program free an active request: the call still runs
                    record["retire"] = True  # and the thread retires it then
                else:
                    record["owner"]._retire(record)

    @property
    def error(self) -> BaseException | None:
        return self.record.get("error")

    @error.setter
    def error(self, value: BaseException | None) -> None:
        self.record["error"] = value

    @property
    def progress(self):
        return self.record["progress"]


class Persistent(Nonblocking):
    """:class:`~.nonblocking.Nonblocking` with persistent forms of its planned collectives
    (see the module docstring)."""

    _self_comm: MPI.Comm | None = None

    def _persistent(self, name: str, args: tuple) -> MPI.Prequest:
        blocking = PERSISTENT[name]
        how = self._how(blocking, args) if _threaded() and self._planned_here(blocking) else None
        if how is None:  # MPI's own (chosen for this call, or not planned here)
            return getattr(MPI.Intracomm, name)(self, *args)
        progress = self._progress or self._start_progress()
        if self._self_comm is None:
            self._self_comm = MPI.COMM_SELF.Dup()
            self._records: dict[int, dict] = {}
            self._next_tag = 0
            progress.look = weakref.WeakMethod(self._look)  # the thread keeps no wrapper
        self._next_tag = tag = self._next_tag % MPI.COMM_SELF.Get_attr(MPI.TAG_UB) + 1
        memory = bytearray(1)
        record = {
            "call": getattr(type(self), blocking).__get__(self),
            "args": args,
            "how": how,
            "memory": memory,
            "progress": progress,
            "owner": self,
            "live": True,
        }
        self._records[tag] = record
        progress.armed += 1
        progress.wake()  # an idle thread sleeping until a call comes: it looks from now on
        req = PersistentRequest(self._self_comm.Ssend_init([memory, 0, MPI.BYTE], 0, tag))
        req.record = record
        record["request"] = weakref.ref(req)
        return req

    def _look(self) -> bool:
        """Run the persistent calls started since the last look, in the order started,
        then complete their requests; whether there was any (on the progress thread)."""
        comm, status, found = self._self_comm, MPI.Status(), False
        while comm.Iprobe(0, MPI.ANY_TAG, status):
            tag = status.Get_tag()
            record = self._records[tag]
            record["error"] = self._progress.run(record["call"], record["args"], record["how"])
            with self._progress.idle:
                comm.Recv([record["memory"], 0, MPI.BYTE], 0, tag)
                if record.get("retire"):  # freed by the program while active
                    self._retire(record)
            found = True
        return found

    def _retire(self, record: dict) -> None:
        """A request the program freed: its calls are no longer looked for (under the
        progress thread's lock)."""
        for tag, r in list(self._records.items()):
            if r is record:
                del self._records[tag]
                self._progress.armed -= 1

    def _release(self, keep: bool | None = None) -> None:
        """Also free the persistent requests the program did not (inactive ones: nothing
        hetcoll made may outlive its wrapper) and the private ``COMM_SELF``."""
        comm = self._self_comm
        super()._release(keep)  # the progress thread ends first
        if comm is None:
            return
        self._self_comm = None
        for record in self._records.values():
            req = record["request"]()
            if req is not None and req != MPI.REQUEST_NULL and req.Get_status():  # inactive
                MPI.Prequest.Free(req)
        self._records = {}
        comm.Free()

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
