"""Nonblocking collectives of a wrapper: ``Ibcast``, ``Iallreduce``, ... run the planned
schedule on a helper thread and return a real MPI request.

``hc.Ibcast(buf, root)`` queues the blocking call (``Bcast``: planned, cached, checked as
always) for the wrapper's *progress thread* and returns a :class:`CollectiveRequest`, an
``MPI.Grequest`` (a generalized request, so a real MPI handle) that the thread completes
when the call has run.  So the request mixes with any other in ``Request.Waitall``,
``Testall``, ``Waitany``, ..., and ``Wait``/``Test`` on it behave as mpi4py's.

Why a thread and not progress on every hetcoll call and test: an MPI request that
``MPI.Request.Waitall`` waits for must complete without any Python of hetcoll being called
(``Waitall`` is MPI's own loop), and a program overlapping communication with computation
calls nothing while it computes.  mpi4py initializes MPI at ``MPI_THREAD_MULTIPLE``, so the
thread may run the schedule's sends and receives while the program's thread runs its own
MPI calls.  Under a lower thread level the nonblocking calls pass through to MPI (unplanned).
A call the wrapper gives to MPI's own collective (its ``choice``: ``auto`` natively on one
host, a tuning rule) is MPI's own nonblocking call, started on the program's thread: the
progress thread never calls the user's communicator.

Who runs a call: whoever waits for it first.  ``Wait`` on the request (the Python method)
runs the calls started up to it on the program's own thread (after the one the thread may
be running: it waits on a lock, not spinning in MPI's wait); the thread runs a call the
program does not wait for at once, ``_GRACE`` (200 us) after it was made (a persistent
start: once two of its looks have found it, ``patience`` apart: 50 us, doubling up to
``_LONGEST_NAP``, 2 ms, while the program's thread runs its starts itself), and
never waits for the program's thread running calls (it looks again later), so it does not
take the next call the program is about to wait for.  Handing
every call to the thread costs a wake-up of the thread and a contest for the GIL with the
program's thread, which waits in MPI meanwhile: several times the call itself on a loaded
host (``benchmarks/mpi/bench_nonblocking.py``, docs/runtime.md).  A program that computes
meanwhile or waits with MPI's own ``Waitall`` gets the thread.

Order: one wrapper's calls run one at a time, in the order the program started them, so
several outstanding calls run in the same order on every rank (MPI's rule for collectives
on one communicator).  Every start sends a zero-byte message to the rank itself on a private
``COMM_SELF`` (:class:`Progress`); messages never overtake each other, so nonblocking calls
and persistent starts (even those MPI's own ``Prequest.Startall`` made) are found in the
order made.  A blocking call of the wrapper (``Bcast``, ``close``, ...) made while calls
are started first runs them (MPI orders blocking and nonblocking collectives of one
communicator alike); those methods are redirected per object on its first nonblocking call,
so a program that never makes one pays nothing.

Errors: an error of a queued call (a :class:`~hetcoll.errors.MismatchError`, bad arguments)
is raised by ``Wait``/``Test`` on its request; a request completed by ``Waitall`` and
friends carries ``MPI.ERR_OTHER`` in its status, and the error is raised by the wrapper's next
call (never lost).
"""

from __future__ import annotations

import collections
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from ..errors import HetcollError
from .buffers import message
from .collectives import Collectives, _quick_size
from .rooted import _rememberable
from .subcomms import planned_class

__all__ = ["NONBLOCKING", "CollectiveRequest", "Nonblocking"]

#: each nonblocking collective and the blocking one it runs (when this class plans it and,
#: for a planner that chooses between plans and MPI, its choice is known here: _CHOSEN)
NONBLOCKING = {
    "Ibcast": "Bcast",
    "Iallreduce": "Allreduce",
    "Iallgather": "Allgather",
    "Ibarrier": "Barrier",
    "Ireduce": "Reduce",
    "Igather": "Gather",
    "Iscatter": "Scatter",
    "Ireduce_scatter_block": "Reduce_scatter_block",
}
#: the rooted collectives: planned when the wrapper's ``rooted_algo`` is not ``"mpi"``
_ROOTED = ("Reduce", "Gather", "Scatter", "Reduce_scatter_block")
_SIGNATURES: dict[Any, inspect.Signature] = {}  # a rooted method's, for _rooted_choice
#: the wrapper's methods that use its private communicator: they wait for queued calls
_ORDERED = (
    *NONBLOCKING.values(),
    "Gatherv",
    "Scatterv",
    "Allgatherv",
    "Reduce_scatter",
    "bcast",
    "allreduce",
    "allgather",
    "barrier",
    "reduce",
    "gather",
    "scatter",
    "multicast",
    "multicasts",
    "run",
    "schedule",
)


class RaisesOnCompletion:
    """Mixed into a request class before its MPI base: ``Wait`` first runs the started calls
    up to this one on the waiting thread (:meth:`Progress.help`), and ``Wait`` and ``Test``
    raise the call's error (``error``; ``progress`` is told it was reported) once the
    request completes."""

    error: BaseException | None = None
    finished = False  # a nonblocking call's: it has run

    def Wait(self, status: MPI.Status | None = None) -> bool:
        self.progress.help(self._mine())
        super().Wait(status)
        self._raise()
        return True

    def Test(self, status: MPI.Status | None = None) -> bool:
        done = super().Test(status)
        if done:
            self._raise()
        else:  # the program is looking for it: the thread runs it without a grace
            self.progress.soon(0.0)
        return done

    def _mine(self) -> Any:
        return self

    def _raise(self) -> None:
        error, self.error = self.error, None
        if error is not None:
            self.progress.reported(error)
            raise error


class CollectiveRequest(RaisesOnCompletion, MPI.Grequest):
    """The request of a nonblocking planned collective (an ``MPI.Grequest``).

    ``Wait``/``Test`` raise the call's error, if it failed; its status has no source, tag
    or elements (``MPI.UNDEFINED``), as a collective's."""


class Progress:
    """One wrapper's started calls, run one at a time in the order started (see the module
    docstring): by its thread, or by the program's thread while it waits for one.

    Every start sends a message of zero bytes to this rank itself on a private duplicate of
    ``COMM_SELF`` (``comm``): tag 0 for a queued nonblocking call (``calls``, in order), the
    request's own tag for a persistent one (``records``: :mod:`.persistent`, whose starts
    are ``Ssend`` requests MPI's ``Startall`` posts without Python).  Messages from one
    rank to another on one communicator never overtake each other, so ``Iprobe`` finds the
    starts in the order they were made, whichever way they were made.  Whoever holds
    ``runner`` runs them: the thread, or a program's thread in ``Wait`` (:meth:`help`) or
    before a blocking call of the wrapper (:meth:`drain`).
    """

    def __init__(self, name: str) -> None:
        self.comm = MPI.COMM_SELF.Dup()
        self.calls: collections.deque = collections.deque()  # queued nonblocking calls
        self.records: dict[int, dict] = {}  # tag -> a live persistent request's record
        self.pending = 0  # nonblocking calls queued and not finished
        self.unreported: list[BaseException] = []  # errors no Wait/Test raised yet
        self.armed = 0  # live persistent requests: the thread looks now and then (Startall)
        # guards the counters, ``due`` and ``stopping`` (``guard``: its lock, entered without
        # a Python frame where a call is waited for)
        self.guard = threading.RLock()
        self.cond = threading.Condition(self.guard)
        self.runner = threading.Lock()  # held while started calls are looked for and run
        self.holder: int | None = None  # the thread that holds it (a call it runs may make
        # another call of the wrapper, which must not wait for the runner: see _after_queued)
        self.due: float | None = None  # when the thread looks next (None: when told)
        self.seen: tuple | None = None  # the persistent start the thread saw last (a tag and
        # its run count), which it runs when it sees it again (see run_started)
        self.later: float | None = None  # when a start the thread left to the program is due
        # how long a persistent start found by the thread is left to the program's thread:
        # doubling while the program's thread runs them itself (its Wait), back to _NAP once
        # the thread had to run one (a program waiting in MPI's Waitall)
        self.patience = _NAP
        self.hurry = False  # a Test asked: the thread runs what it finds, young or not
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()
        self.ident = self.thread.ident

    # -- starting ------------------------------------------------------------------------------

    def submit(
        self, call: Callable[..., Any], args: tuple, kwargs: dict, name: str
    ) -> CollectiveRequest:
        """Queue a nonblocking call (``name``: its mpi4py name); its request (completed once
        the call has run)."""
        state: dict[str, Any] = {"error": None}
        greq = MPI.Grequest.Start(_query, args=(state,))
        req = CollectiveRequest(greq)
        req.progress = self
        with self.cond:
            self.pending += 1
        self.calls.append((call, args, kwargs, greq, req, state, name, time.monotonic()))
        self.comm.Isend([_EMPTY, 0, MPI.BYTE], 0, 0).Free()  # after the append: see run_started
        self.soon()
        return req

    def soon(self, grace: float | None = None) -> None:
        """Have the thread look within ``grace`` seconds (default :data:`_GRACE`: a program
        that waits at once runs the call itself, on its own thread, before the thread looks)."""
        due = time.monotonic() + (_GRACE if grace is None else grace)
        with self.cond:
            if grace == 0.0:  # a Test: the program is not about to run it itself
                self.hurry = True
            if self.due is None or due < self.due:
                self.due = due
                self.cond.notify()

    # -- running -------------------------------------------------------------------------------

    def run_started(self, until: Any = None, patient: bool = False) -> bool:
        """Run the calls started so far, in the order started (the caller holds ``runner``);
        stop after ``until`` (a request, or a persistent request's record) if given.
        Whether any ran.

        ``patient`` (the thread's look): leave a start the program may still wait for to
        the program's own thread, and stop there (``later``: when to look again): a
        nonblocking call made less than :data:`_GRACE` ago, a persistent start not seen
        by the previous look (MPI's ``Startall`` posts it without telling anyone, so its
        age is unknown; a ``Start`` + ``Wait`` runs it long before the next look).  The
        thread taking a call the program is about to wait for costs the program's thread a
        spin in MPI's wait while the thread runs it, both contending for the GIL."""
        comm, status, ran = self.comm, MPI.Status(), False
        self.later = None
        while comm.Iprobe(0, MPI.ANY_TAG, status):
            tag = status.Get_tag()
            if patient and self._young(tag):
                break
            if tag == 0:
                comm.Recv([_EMPTY, 0, MPI.BYTE], 0, 0)
                call, args, kwargs, greq, req, state, name, _ = self.calls.popleft()
                state["error"] = req.error = self.run(call, args, kwargs, name)
                req.finished = True
                greq.Complete()
                with self.cond:
                    self.pending -= 1
                mine = req
            else:
                mine = record = self.records[tag]
                start = record["start"]  # made in the *_init call, or None: the method
                if start is not None:
                    error = self.run(start, (), {}, record["name"])
                else:
                    call = record["call"]()  # a weak method: the thread keeps no wrapper
                    args, how, name = record["args"], record["how"], record["name"]
                    error = None if call is None else self.run(call, args, how, name)
                record["error"] = error
                record["runs"] = record.get("runs", 0) + 1
                if patient:  # left to the program, which did not run it: look often again
                    self.patience, self.seen = _NAP, None
                with self.cond:  # Free() may be looking at the request
                    comm.Recv([record["memory"], 0, MPI.BYTE], 0, tag)  # completes the start
                    if record.get("retire"):  # freed by the program while active
                        self.retire(record)
            ran = True
            if until is not None and mine is until:
                break
        return ran

    def _young(self, tag: int) -> bool:
        """Whether the start found first (``tag``) is left to the program for now (a
        patient look; sets ``later``)."""
        now = time.monotonic()
        if tag == 0:
            made = self.calls[0][-1]
            if now < made + _GRACE:
                self.later = made + _GRACE
                return True
            return False
        seen = (tag, self.records[tag].get("runs", 0))
        if seen != self.seen:
            if self.seen is not None:  # the start left to the program before: it ran it
                self.patience = min(2 * self.patience, _LONGEST_NAP)
            self.seen, self.later = seen, now + self.patience
            return True
        return False

    def run(
        self, call: Callable[..., Any], args: tuple, kwargs: dict, name: str
    ) -> BaseException | None:
        """Run one call (a wrapper's blocking method; ``name``: the call the program made,
        what the wrapper's ``last_call`` then says); its error (kept for the next call if
        no Wait/Test raises it)."""
        try:
            call(*args, **kwargs)
        except BaseException as exc:  # raised where the program waits for it
            with self.cond:
                self.unreported.append(exc)
            return exc
        named = getattr(getattr(call, "__self__", None), "_ran_as", None)  # a start of a
        # persistent request made in advance (a function) says what ran itself
        if named is not None:
            named(name)
        return None

    def help(self, mine: Any) -> None:
        """From a program's thread that waits for ``mine``: run the started calls up to it
        here; when the thread is in one, wait for it first (on a lock: the program's thread
        spinning in MPI's wait meanwhile would take the thread's core and the GIL), then run
        the rest up to ``mine`` unless the thread ran that too."""
        me = threading.get_ident()
        if me == self.ident or me == self.holder:  # from a call being run: it comes first
            return
        self.runner.acquire()  # the thread may be in a call started before: wait for it
        self.holder = me
        try:
            if not _finished(mine):  # else the thread ran it: the calls after it are not ours
                self.run_started(until=mine)
        finally:
            self.holder = None
            self.runner.release()

    def drain(self) -> None:
        """Run (or wait for) every call started so far; raise the first error nobody was
        told of.  Before a blocking call of the wrapper, which comes after them."""
        with self.runner:
            self.holder = threading.get_ident()
            try:
                self.run_started()
            finally:
                self.holder = None
        with self.cond:
            error = self.unreported.pop(0) if self.unreported else None
        if error is not None:
            raise error

    def busy(self) -> bool:
        """Whether a blocking call must drain first (calls queued, persistent requests that
        may have been started, or an error to raise)."""
        return bool(self.pending or self.armed or self.unreported)

    def _loop(self) -> None:
        nap = _NAP
        while True:
            with self.cond:
                while not self.stopping:
                    now = time.monotonic()
                    if self.due is not None and self.due <= now:
                        break
                    self.cond.wait(None if self.due is None else self.due - now)
                self.due = None
                stopping = self.stopping
                hurry, self.hurry = self.hurry, False
            # a program's thread running started calls (in Wait, before a blocking call):
            # look again later rather than wait for it and take the next call it makes
            if not self.runner.acquire(blocking=stopping):
                with self.cond:
                    self.hurry = self.hurry or hurry
                    if (self.pending or self.armed) and self.due is None:
                        wait = _GRACE if self.pending else max(nap, self.patience)
                        self.due = time.monotonic() + wait
                continue
            self.holder = self.ident
            try:
                ran = self.run_started(patient=not (stopping or hurry))
                later = self.later
            finally:
                self.holder = None
                self.runner.release()
            if stopping:
                return
            with self.cond:  # while persistent requests live, look now and then (Startall)
                nap = _NAP if ran or later else min(2 * nap, _LONGEST_NAP)
                if later is not None:
                    self.due = later if self.due is None else min(self.due, later)
                elif self.armed and self.due is None:
                    self.due = time.monotonic() + nap

    def reported(self, error: BaseException) -> None:
        with self.cond:
            if error in self.unreported:
                self.unreported.remove(error)

    def retire(self, record: dict) -> None:
        """A persistent request the program freed: no longer looked for (under ``cond``)."""
        for tag, r in list(self.records.items()):
            if r is record:
                del self.records[tag]
                self.armed -= 1
                if r.get("direct") is not None:  # its point-to-point requests (direct.py)
                    r["direct"].free()

    def stop(self, timeout: float) -> bool:
        """End the thread once the started calls have run (within ``timeout``); whether it
        ended (then ``comm`` may be freed)."""
        with self.cond:
            self.stopping = True
            self.cond.notify()
        if threading.get_ident() == self.ident:  # collected on its own thread: it ends next
            return False
        self.thread.join(timeout)
        return not self.thread.is_alive()


#: seconds before the thread runs a start the program may run itself by waiting at once
_GRACE = 200e-6
_NAP, _LONGEST_NAP = 50e-6, 2e-3  # seconds between looks of an idle thread (doubling)
_EMPTY = bytearray(0)


def _query(status: MPI.Status, state: dict) -> None:
    status.Set_source(MPI.UNDEFINED)
    status.Set_tag(MPI.UNDEFINED)
    status.Set_elements(MPI.BYTE, 0)
    status.Set_cancelled(False)
    status.Set_error(MPI.SUCCESS if state["error"] is None else MPI.ERR_OTHER)


def _finished(mine: Any) -> bool:
    """Whether a started call has run (``mine``: a request, or a persistent one's record)."""
    if isinstance(mine, dict):
        req = mine["request"]()
        return req is None or req == MPI.REQUEST_NULL or MPI.Request.Get_status(req)
    return mine.finished


def _threaded() -> bool:
    return MPI.Query_thread() == MPI.THREAD_MULTIPLE


class Nonblocking(Collectives):
    """:class:`~.collectives.Collectives` with nonblocking forms of its planned collectives
    (see the module docstring)."""

    _progress: Progress | None = None
    # what ``last_call`` reads (:class:`.rooted.RootedCollectives`): a call given to MPI
    # sets them, inline in the methods below (a repeated one is one method call)
    _last: Any = None
    _passed_at = 0

    def _planned_here(self, name: str) -> bool:
        """Whether this class plans the blocking collective ``name`` (else it is MPI's)."""
        return getattr(planned_class(self), name, None) is not getattr(MPI.Intracomm, name, None)

    def _how(self, blocking: str, args: tuple) -> dict | None:
        """How the progress thread runs the blocking call ``blocking(*args)``: the keyword
        arguments that name what the wrapper chose for it (its ``algo``, and a broadcast's
        ``segment_size``), so the thread runs that and never reaches the user's
        communicator from its own thread; None when the choice is MPI's own collective
        (natively): then the nonblocking call is MPI's own too."""
        if blocking in _ROOTED:
            return self._rooted_how(blocking, args)
        if not hasattr(self.planner, "choose"):  # the injected planner plans every call
            return {}
        if blocking not in _CHOSEN:  # a choice this module cannot ask for: MPI's own
            return None
        try:
            choice = _CHOSEN[blocking](self, *args)
        except HetcollError:  # bad arguments: the blocking call says so, at Wait
            return {}
        if choice.algorithm == "mpi" and not self.emulate:
            return None
        how = {"algo": choice.algorithm}
        if blocking == "Bcast":
            how["segment_size"] = choice.segment_size
        return how

    def _rooted_how(self, blocking: str, args: tuple) -> dict | None:
        """:meth:`_how` for a rooted collective: its planner's ``rooted_algo``, chosen per
        call under ``auto`` as the blocking call chooses (``_rooted_choice``)."""
        algo = getattr(self.planner, "rooted_algo", None)
        if algo == "mpi":
            return None
        choose = getattr(self, "_rooted_choice", None)
        if algo != "auto" or choose is None:
            return {}
        method = getattr(planned_class(self), blocking)
        signature = _SIGNATURES.get(method)
        if signature is None:  # of the method _or_mpi wraps, as it binds the arguments
            signature = _SIGNATURES[method] = inspect.signature(method.__wrapped__)
        chosen = choose(blocking, signature, args, {})
        if chosen == "mpi":
            return None
        return {} if chosen == "auto" else {"algo": chosen}  # auto: bad arguments, at Wait

    def _nonblocking(self, name: str, args: tuple, kwargs: dict, key=None) -> MPI.Request:
        """Queue the blocking call for the progress thread, or start MPI's own; ``key``:
        what the call's method looks up first next time when this one is MPI's own (None:
        never looked up), so that a repeated call passed to MPI is one method call."""
        blocking = NONBLOCKING[name]
        how = self._how(blocking, args) if _threaded() and self._planned_here(blocking) else None
        if how is None:
            self._passed_to_mpi()
            own = getattr(MPI.Intracomm, name).__get__(self)  # MPI's own, on the user's handle
            if key is not None:
                self._passing[key] = (self.last_choice, own)
            return own(*args, **kwargs)
        kwargs = {**kwargs, **how}
        progress = self._progress
        if progress is None:
            progress = self._start_progress()
        elif progress.unreported and threading.get_ident() != progress.ident:
            progress.drain()
        return progress.submit(
            getattr(planned_class(self), blocking).__get__(self), args, kwargs, name
        )

    def _passed_to_mpi(self) -> None:
        """A call given to MPI's own collective (a subclass notes it: ``last_call``)."""

    def _start_progress(self) -> Progress:
        """The progress thread, and the ordered methods redirected on this object."""
        progress = self._progress = Progress(f"hetcoll progress rank {self.rank}")
        for name in _ORDERED:
            method = getattr(planned_class(self), name, None)
            if method is not None and self._planned_here(name):
                self.__dict__[name] = _after_queued(self, progress, method.__get__(self))
        self.__dict__["close"] = _after_queued(
            self, progress, planned_class(self).close.__get__(self)
        )
        return progress

    def _release(self, keep: bool | None = None) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            if progress.stop(self.timeout):
                self._free_progress(progress)
            else:
                keep = True  # the thread is still in a call: leave its communicators alone
        super()._release(keep)

    def _free_progress(self, progress: Progress) -> None:
        """Free what the progress kept (its thread has ended)."""
        progress.comm.Free()

    # Each method first looks the call up among those passed to MPI (``_passing``: a key
    # read from the buffers' attributes without parsing them, as the blocking calls do), so
    # that a repeated call MPI keeps costs one method call, as without hetcoll.

    def Ibcast(self, buf: Any, root: int = 0) -> MPI.Request:
        """``Bcast`` on the progress thread; the request completes when it has run."""
        hit = self._passing.get(("Ibcast", root, getattr(buf, "nbytes", None)))
        if hit is not None:  # last_call: None (a call given to MPI)
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1](buf, root)
        nbytes = getattr(buf, "nbytes", None)
        key = ("Ibcast", root, nbytes) if _plain(buf, nbytes) else None
        return self._nonblocking("Ibcast", (buf, root), {}, key)

    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM) -> MPI.Request:
        """``Allreduce`` on the progress thread."""
        size, item = getattr(recvbuf, "nbytes", None), getattr(recvbuf, "itemsize", 0)
        key = ("Iallreduce", size, item, id(op))  # id: a live predefined operator's is
        hit = self._passing.get(key)  # never another's
        if hit is not None:  # last_call: None (a call given to MPI)
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1](sendbuf, recvbuf, op)
        plain = _plain(recvbuf, size) and op.is_predefined
        return self._nonblocking("Iallreduce", (sendbuf, recvbuf, op), {}, key if plain else None)

    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> MPI.Request:
        """``Allgather`` on the progress thread."""
        key = ("Iallgather", getattr(sendbuf, "nbytes", None), getattr(recvbuf, "nbytes", None))
        hit = self._passing.get(key)
        if hit is not None:  # last_call: None (a call given to MPI)
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1](sendbuf, recvbuf)
        plain = _plain(sendbuf, key[1]) and _plain(recvbuf, key[2])
        return self._nonblocking("Iallgather", (sendbuf, recvbuf), {}, key if plain else None)

    def Ibarrier(self) -> MPI.Request:
        """``Barrier`` on the progress thread."""
        hit = self._passing.get("Ibarrier")
        if hit is not None:  # last_call: None (a call given to MPI)
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1]()
        return self._nonblocking("Ibarrier", (), {}, "Ibarrier")

    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, root: int = 0):
        """``Reduce`` on the progress thread when planned, else MPI's ``Ireduce``."""
        s, r = sendbuf, recvbuf  # what decides the choice (auto: per call), inline
        key = ("Ireduce", root, id(op), type(s), getattr(s, "nbytes", None),
               getattr(s, "itemsize", None), type(r), getattr(r, "nbytes", None),
               getattr(r, "itemsize", None))  # fmt: skip
        hit = self._passing.get(key)
        if hit is not None:
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1](sendbuf, recvbuf, op, root)
        return self._nonblocking("Ireduce", (sendbuf, recvbuf, op, root), {}, _keep(key, s, r, op))

    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> MPI.Request:
        """``Gather`` on the progress thread when planned, else MPI's ``Igather``."""
        s, r = sendbuf, recvbuf  # what decides the choice (auto: per call), inline
        key = ("Igather", root, type(s), getattr(s, "nbytes", None),
               getattr(s, "itemsize", None), type(r), getattr(r, "nbytes", None),
               getattr(r, "itemsize", None))  # fmt: skip
        hit = self._passing.get(key)
        if hit is not None:
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1](sendbuf, recvbuf, root)
        return self._nonblocking("Igather", (sendbuf, recvbuf, root), {}, _keep(key, s, r, None))

    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> MPI.Request:
        """``Scatter`` on the progress thread when planned, else MPI's ``Iscatter``."""
        s, r = sendbuf, recvbuf  # what decides the choice (auto: per call), inline
        key = ("Iscatter", root, type(s), getattr(s, "nbytes", None),
               getattr(s, "itemsize", None), type(r), getattr(r, "nbytes", None),
               getattr(r, "itemsize", None))  # fmt: skip
        hit = self._passing.get(key)
        if hit is not None:
            self.last_choice, self._last, self._passed_at = hit[0], None, self._seq
            return hit[1](sendbuf, recvbuf, root)
        return self._nonblocking("Iscatter", (sendbuf, recvbuf, root), {}, _keep(key, s, r, None))

    def Ireduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM):
        """``Reduce_scatter_block`` on the progress thread when planned, else MPI's."""
        hit = self._passing.get("Ireduce_scatter_block")
        if hit is not None:
            return hit[1](sendbuf, recvbuf, op)
        key = _fixed("Ireduce_scatter_block")
        return self._nonblocking("Ireduce_scatter_block", (sendbuf, recvbuf, op), {}, key)


def _plain(buf: Any, nbytes: Any) -> bool:
    """Whether ``buf`` is a plain buffer (a NumPy array, a memoryview: not a spec) whose
    ``nbytes`` is its size, so that ``nbytes`` may key a call passed to MPI."""
    return nbytes is not None and _quick_size(buf) == nbytes


def _keep(key: tuple, sendbuf: Any, recvbuf: Any, op: Any) -> tuple | None:
    """``key`` when a rooted call passed to MPI may be remembered by it (plain buffers, a
    predefined operator: :func:`.rooted._rememberable`), else None."""
    return key if _rememberable(sendbuf, recvbuf, op) else None


def _fixed(name: str) -> str | None:
    """The key of a nonblocking call whose choice does not depend on its arguments (MPI's
    own whenever this module cannot ask for the blocking call's choice), else None."""
    return name if NONBLOCKING[name] not in _CHOSEN else None


def _bcast_choice(comm: Collectives, buf: Any, root: int = 0):
    m = message(buf, writable=comm.rank != root, where="Ibcast buf", typed=False)
    return comm.choice("bcast", m.nbytes, root=root, segment_size=comm.segment_size)


def _allreduce_choice(comm: Collectives, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM):
    recv = message(recvbuf, writable=True, where="Iallreduce recvbuf")
    return comm.choice("allreduce", recv.nbytes, op=op, count=recv.count)


def _allgather_choice(comm: Collectives, sendbuf: Any, recvbuf: Any):
    _, _, mine = comm._allgather_parts(sendbuf, recvbuf)  # one rank's block, as Allgather
    return comm.choice("allgather", mine.nbytes)


#: what the wrapper chose for a blocking call with these arguments (its ``choice``)
_CHOSEN: dict[str, Callable[..., Any]] = {
    "Bcast": _bcast_choice,
    "Allreduce": _allreduce_choice,
    "Allgather": _allgather_choice,
    "Barrier": lambda comm: comm.choice("barrier", 0),
}


def _after_queued(comm: Nonblocking, progress: Progress, method: Callable) -> Callable:
    """``method`` that first runs (or waits for) the calls started before it (from the
    program's threads; the progress thread runs them itself)."""

    def ordered(*args: Any, **kwargs: Any) -> Any:
        me = threading.get_ident()
        if progress.busy() and me != progress.ident and me != progress.holder:
            progress.drain()  # not from a call being run, which comes before what was started
        return method(*args, **kwargs)

    ordered.__doc__ = method.__doc__
    return ordered
