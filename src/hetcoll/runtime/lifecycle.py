"""Nothing of hetcoll outlives its communicator: a wrapper's end, closed or not.

A wrapper (:class:`~.comm.ScheduleComm`) keeps a receive posted for its whole life (its
notices, :mod:`.notices`), persistent requests for its cached schedules, and a private
communicator.  :meth:`Lifetime.close` (or the end of a ``with`` block) compares every
rank's record of its calls, then frees them.  A wrapper the program never closes is
*released* instead — locally, with no message, since ranks may reach that point in any
order: its pending receives are cancelled, its requests and its private communicator freed.
That happens

- when the wrapper is garbage-collected (``__del__``);
- at interpreter exit, for every wrapper still open: a Python ``atexit`` handler, which
  runs before mpi4py finalizes MPI (mpi4py calls ``MPI_Finalize`` from ``Py_AtExit``, at the
  very end of Python's own finalization, when Python callbacks no longer run);
- when the program calls ``MPI.Finalize()`` itself: a ``COMM_SELF`` attribute whose delete
  callback MPI calls first thing in ``MPI_Finalize`` (mpi4py's idiom for work before
  finalization).

Why it matters: a receive left posted at ``MPI_Finalize`` makes MPICH's UCX network
module print ``UCX WARN object ... was not returned to mpool ucp_requests`` on standard
output, once per receive and rank, into the program's own output.
``tests/test_runtime_lifecycle_mpi.py`` runs a program that never closes its wrappers
(also after a caught :class:`~hetcoll.errors.CollectiveTimeoutError`) and checks that its
output is exactly its own.

The registry of open wrappers is the one piece of module state of the engine: ``MPI_Finalize``
is process-wide, so what must happen before it is too.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from typing import Any

from mpi4py import MPI

from ..errors import HetcollError, MismatchError
from .clocks import end_job

__all__ = ["Lifetime", "open_wrappers", "release_all"]

_lock = threading.RLock()  # a collected wrapper's weakref callback may run under it
#: open wrappers, by id, in the order they were made (weak: a collected one releases itself)
_open: dict[int, weakref.ref] = {}
_hooks: list[Any] = []  # [COMM_SELF keyval] once the exit hooks are installed


def open_wrappers() -> int:
    """How many wrappers of this process are open (made and neither closed nor released)."""
    with _lock:
        return sum(1 for ref in _open.values() if ref() is not None)


def release_all() -> None:
    """Release every open wrapper, the newest first (a derived communicator before the
    one it was made from): what runs before ``MPI_Finalize``."""
    with _lock:
        wrappers = [w for ref in reversed(_open.values()) if (w := ref()) is not None]
    for w in wrappers:
        with contextlib.suppress(Exception):  # at exit nothing may escape: release the rest
            w._release()


def _register(wrapper: Any) -> None:
    key = id(wrapper)
    with _lock:
        _open[key] = weakref.ref(wrapper, lambda _, key=key: _forget_id(key))
        if not _hooks:
            _install()


def _forget(wrapper: Any) -> None:
    _forget_id(id(wrapper))


def _forget_id(key: int) -> None:
    with _lock:
        _open.pop(key, None)


def _install() -> None:
    """The exit hooks (once per process): ``atexit``, and a ``COMM_SELF`` attribute."""
    atexit.register(_at_exit)
    keyval = MPI.Comm.Create_keyval(delete_fn=_at_finalize)
    MPI.COMM_SELF.Set_attr(keyval, True)
    _hooks.append(keyval)


def _at_finalize(comm: MPI.Comm, keyval: int, value: Any) -> None:
    release_all()


def _at_exit() -> None:
    """Release what is open, then remove the ``COMM_SELF`` attribute (its callback would
    otherwise be left for ``MPI_Finalize``, which runs when Python callbacks no longer do)."""
    if MPI.Is_finalized():
        return
    release_all()
    if _hooks:
        keyval = _hooks.pop()
        with contextlib.suppress(MPI.Exception):
            MPI.COMM_SELF.Delete_attr(keyval)
            MPI.Comm.Free_keyval(keyval)


class Lifetime:
    """Mixed into :class:`~.comm.ScheduleComm`: how a wrapper ends (uses its ``comm``,
    ``base``, ``notices``, ``_agreement``, ``_wires``, ``_fast``, ``_broken``, ``_seq``,
    ``_history`` and ``_allgather``)."""

    def close(self) -> None:
        """Compare every rank's record of its calls (one collective), then free the private
        communicator (idempotent; kept after a disagreement: :meth:`.notices.Notices.final`).
        :class:`~hetcoll.errors.MismatchError` if ranks made different calls that this rank
        has not reported yet (a root that only sent)."""
        if self.comm == MPI.COMM_NULL:
            return
        unreported, keep = None, False
        if self._broken is None:
            unreported, keep = self.notices.final(self._seq, self._history, self._allgather)
        self._release(keep)
        if unreported:
            raise MismatchError(
                f"rank {self.rank}: ranks 0 and {unreported[0]} made different collective calls "
                "on this wrapper (another root, size, datatype or operator); every rank must "
                "call the same collectives in the same order"
            )

    def _release(self, keep: bool | None = None) -> None:
        """Free what this wrapper holds, on this rank alone (no message): cancel its pending
        receives, free its requests, then its private communicator — unless ``keep`` (by
        default: when this rank saw a disagreement or a timeout, after which messages nobody
        receives may still come, see :meth:`.notices.Notices.final`)."""
        if self.comm == MPI.COMM_NULL:
            return
        if keep is None:
            n = self.notices
            keep = self._broken is not None or bool(n.stale or n.heard or n.reported)
        self.notices.close()
        if self._agreement is not None:
            self._agreement.free()
        for kept in (*self._wires.values(), *self._fast.values()):
            if kept:
                kept.free()
        self._wires, self._fast = {}, {}
        if not keep:
            self.comm.Free()
        self.comm = MPI.COMM_NULL
        _forget(self)

    def __del__(self) -> None:
        # a wrapper collected while open: released here (nothing of it may stay posted)
        with contextlib.suppress(Exception):  # a finalizer cannot raise
            open_ = self.__dict__.get("comm", MPI.COMM_NULL) != MPI.COMM_NULL
            if open_ and not MPI.Is_finalized():
                self._release()

    def Free(self) -> None:
        """Close the wrapper and free the user's communicator (mpi4py's ``Comm.Free``)."""
        self.close()
        self.base.Free()

    def abort(self, errorcode: int = 1) -> None:
        """End the whole job (``MPI_Abort``): what a program that caught
        :class:`~hetcoll.errors.CollectiveTimeoutError` must do when a rank may be stuck in
        the collective (``MPI_Finalize`` would wait for it forever)."""
        end_job(errorcode)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._broken is not None:
            self._release()
            return
        if exc_type is None:
            self.close()
            return
        with contextlib.suppress(HetcollError):  # take part in the final check: no one waits
            self.close()
