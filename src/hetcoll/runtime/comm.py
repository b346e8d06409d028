"""The engine's communicator: run schedules on a private copy of an mpi4py communicator.

:class:`ScheduleComm` receives schedules and runs them; it never plans.  Where a schedule
comes from is injected: a :class:`Planner` turns a call (root, members, size, ...) into a
:class:`~hetcoll.schedule.Schedule` that every rank derives alike, and ``run(schedule,
handler)`` takes one directly.  :class:`hetcoll.HetComm` is this communicator with hetcoll's
planners plugged in (:mod:`hetcoll.hetcomm`); the mpi4py-named collectives are in
:mod:`.collectives`.

What the engine adds around a schedule: a private ``comm.Idup()`` (its tags never meet the
user's messages; created with the timeout), a one-time agreement on the settings, a cache of
planned schedules, the detection of ranks that call different collectives (a digest of the
call rides with the data, :mod:`.transport`, and a rank that finds a disagreement tells the
others: :mod:`.notices`), timeouts on every wait; it is an ``MPI.Intracomm`` on the user's
handle (:mod:`.subcomms`), so what it does not implement (``Alltoall``, ``Scan``,
``Get_rank``, ...) is mpi4py's own, and ``Split``/``Dup`` give wrappers like it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import CollectiveTimeoutError, HetcollError, MismatchError
from ..platform import Platform
from ..program import Program
from ..schedule import Schedule
from .agreement import Agreement
from .clocks import Clocks
from .emulation import EmulatedTiming, Emulator, clock_offsets, clock_shift, set_timer_slack
from .executor import DataHandler, Executor, NativeTiming, RankPlan, Trace, rank_plan
from .fast import FastRun, Rest
from .lifecycle import Lifetime, _register
from .notices import REFUSED, Notices
from .segments import compile_run
from .startup import (
    ENGINE_SLOTS,
    Planner,
    check_choices,
    check_settings,
    digest_of,
    judge,
    place,
    program_digest,
    provisional_timeout,
    settings_digest,
)
from .strays import Strays
from .subcomms import SubComms
from .transport import MPITransport, Wire

__all__ = ["Planner", "ScheduleComm"]  # Planner: see startup.py

_CACHE_LIMIT = 64
_NS = 1_000_000_000


class ScheduleComm(Lifetime, Clocks, SubComms):
    """An mpi4py communicator that runs schedules (parameters: see :class:`hetcoll.HetComm`).

    ``check``: ``"data"`` (default; also spelled ``"first"``) carries a digest of each
    call with its data and detects any disagreement, ``"always"`` also compares digests
    in a dissemination round with every call (every rank then raises in the call itself),
    ``"never"`` trusts the caller.
    """

    __slots__ = ENGINE_SLOTS  # startup.py

    def __init__(
        self,
        comm: MPI.Comm,
        platform: Platform | str,
        planner: Planner | None = None,
        *,
        emulate: bool = False,
        model: Any = None,
        segment_size: int | None = None,
        timeout: float = 60.0,
        nodes: Sequence[str] | None = None,
        check: str = "data",
        on_timeout: str = "abort",
        time_scale: float = 1.0,
        clock: str = "auto",
        spin: float | None = None,
        poll: float | None = None,
    ) -> None:
        check_choices(check=check, on_timeout=on_timeout, clock=clock)
        self.base = comm  # in the dict: a user's subclass's attributes are its (subcomms.py)
        self.planner = planner
        self.emulate, self.model = bool(emulate), model
        # checked in _setup (startup.check_settings), where every rank's verdict is compared:
        # a rank raising alone before that would leave the others waiting; until then the
        # waits use the defaults
        self._given = {
            "timeout": timeout,
            "segment_size": segment_size,
            "time_scale": time_scale,
            "spin": os.environ.get("HETCOLL_SPIN", 20e-6) if spin is None else spin,
            "poll": os.environ.get("HETCOLL_POLL", 20e-6) if poll is None else poll,
            "model": model,
        }
        self.timeout, self.spin, self.poll = provisional_timeout(timeout), 20e-6, 20e-6
        self.spin_given = spin is not None or "HETCOLL_SPIN" in os.environ  # segments.py
        self.segment_size, self.time_scale = None, 1.0
        self.check = "data" if check == "first" else check
        self.on_timeout = on_timeout
        self._last_trace: Trace | None = None
        self._fast_trace: FastRun | None = None  # the last call's, when on the fast path
        self.last_schedule: Schedule | None = None
        self._cache: dict[Any, tuple[Schedule, RankPlan, Program, int]] = {}
        self._schedules: dict[Any, Schedule] = {}  # planned once per request (_scheduled)
        # Bcast's own lookup of a repeated call: a subset of _cache (cleared when it forgets
        # a schedule: the plans it holds must be the cached ones, see _forget)
        self._calls: dict[tuple, tuple] = {}
        self._wires: dict[int, Wire] = {}  # id(plan) -> its reusable memory and requests
        self._fast: dict[int, FastRun | None] = {}  # id(plan) -> fast.py, None: not for it
        self._rest = Rest()  # how an idle rank looks again (fast.py)
        self._fast_ok = os.environ.get("HETCOLL_FAST", "1") != "0"  # 0: the executor always
        self._agreement: Agreement | None = None  # check="always"
        self._broken: str | None = None
        self._start_at: int | None = None  # see start_together()
        self._seq = 0  # calls run on this wrapper
        self._history = 0  # a digest of every call's digest, compared by close()
        if self.emulate:  # modelled times need short sleeps that wake on time; natively,
            set_timer_slack()  # a tiny slack makes every zero sleep a slow context switch
        self.rank, self.size = comm.rank, comm.size
        self.comm = self._dup(comm)
        self.notices = Notices(self.comm)
        try:
            self._setup(platform, nodes, clock)
        except BaseException:
            self.notices.close()
            self.comm.Free()
            self.comm = MPI.COMM_NULL
            raise
        _register(self)  # released before MPI_Finalize if never closed (lifecycle.py)

    # -- set-up -------------------------------------------------------------------------------

    def _dup(self, comm: MPI.Comm) -> MPI.Comm:
        """``comm.Idup()`` within the timeout: a rank that never comes is reported, not
        waited for forever."""
        new, req = comm.Idup()
        self._wait(
            req,
            "creating its private communicator (comm.Idup: does every rank create the wrapper?)",
        )
        return new

    def _setup(self, platform, nodes, clock) -> None:
        self.shift_ns = clock_shift(self.rank)
        given, self._given = self._given, None
        self._native = NativeTiming()  # replaced once the settings are known to be good

        def engine_settings() -> dict:
            for name, value in check_settings(given).items():
                setattr(self, name, value)
            self._native = NativeTiming(self.spin, self.poll)  # stateless: shared by calls
            return {
                "model": None if self.model is None else str(self.model),
                "emulate": self.emulate,
                "segment_size": self.segment_size,
                "time_scale": self.time_scale,
                "check": self.check,
            }

        p, digest, error = settings_digest(platform, self.planner, nodes, engine_settings)
        # Everyone takes part in the comparison, even a rank that failed to load its platform,
        # so that no rank is left waiting.  The host (and an injected clock shift) rides along.
        host = digest_of(f"{MPI.Get_processor_name()}/{self.shift_ns}")
        got = self._allgather(digest + host, "the agreement on the settings")
        judge([d[: len(digest)] for d in got], error, self.rank)
        self.platform, self.nodes = p, place(p, nodes, self.size)
        self.node = self.nodes[self.rank]
        if self.check == "always":  # agreement.py
            self._agreement = Agreement(self.comm, self)
        self.strays = Strays.create(self)  # natively with headers, else None
        self.rank_of = {node: r for r, node in enumerate(self.nodes)}
        #: True when every rank reads the same clock (one host, or synchronised for emulation)
        self.one_host = len({d[len(digest) :] for d in got}) == 1
        #: how many of the communicator's ranks share this rank's host
        self.ranks_on_host = sum(d[len(digest) :] == got[self.rank][len(digest) :] for d in got)
        self.shared_clock = self.one_host or self.emulate
        self.emulator = None
        self.clock_offset_ns = 0
        #: whether calls may take the native fast path (fast.py; a call of messages too
        #: large for it, or a call that starts at an agreed time, takes the executor)
        self._quick = self._fast_ok and not self.emulate and self.check != "never"
        if self.emulate:
            if clock == "sync" or (clock == "auto" and not self.one_host):
                self.clock_offset_ns = clock_offsets(self.comm, self._wait, self.shift_ns)
            self.emulator = Emulator(
                p,
                [p.index(x) for x in self.nodes],
                self.model,
                offset_ns=self.clock_offset_ns + self.shift_ns,
                time_scale=self.time_scale,
            )

    # -- context and pass-through -------------------------------------------------------------

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank}/{self.size}, emulate={self.emulate})"

    # -- schedules ----------------------------------------------------------------------------

    def _node(self, rank: int, what: str) -> str:
        if isinstance(rank, bool) or not isinstance(rank, int | np.integer):
            raise HetcollError(f"{what}: expected a rank (int), got {rank!r}")
        if not 0 <= rank < self.size:
            raise HetcollError(f"{what}: rank {rank} is not in 0..{self.size - 1}")
        return self.nodes[int(rank)]

    def _cached(
        self, key: Any, build: Callable[[], Schedule | Program], extra: str = ""
    ) -> tuple[Schedule | None, RankPlan, Program, int]:
        """``key``'s schedule (None for a program), rank plan, program and digest (+ ``extra``)."""
        hit = self._cache.get(key)
        if hit is None:
            sched = None if isinstance(built := build(), Program) else built  # a program
            program = built if sched is None else sched.program()
            text = sched.to_json(indent=None) if sched else f"program {program_digest(program)}"
            digest = digest_of(text + "|" + extra)
            hit = (
                sched,
                rank_plan(program, self.node, self.rank_of),
                program,
                int.from_bytes(digest[:8], "little") >> 2,  # 62 bits: never overflows negated
            )
            if len(self._cache) >= _CACHE_LIMIT:
                self._calls.clear()
                self._forget(self._cache.pop(next(iter(self._cache)))[1])
            self._cache[key] = hit
        return hit

    def _scheduled(self, request: Any, plan: Callable[[], Schedule]) -> Schedule:
        """The schedule of ``request`` (what the planner is given), planned once: calls
        that differ only in what their digest adds (a datatype's signature, an operator a
        reduce tree does not depend on) share it instead of planning it again.  Planning
        is deterministic, so the schedule is the one a new plan would give."""
        sched = self._schedules.get(request)
        if sched is None:
            if len(self._schedules) >= _CACHE_LIMIT:
                self._schedules.pop(next(iter(self._schedules)))
            sched = self._schedules[request] = plan()
        return sched

    def run(
        self, schedule: Schedule | Program, handler: DataHandler, what: str = "collective"
    ) -> Trace:
        """Execute a schedule or program (the same on every rank) with ``handler`` moving
        this rank's bytes: the extension point for collectives with their own handler."""
        program = schedule.program() if isinstance(schedule, Schedule) else schedule
        plan = rank_plan(program, self.node, self.rank_of)
        try:
            return self._execute(plan, handler, what, program_digest(program))
        finally:
            self._forget(plan)  # a one-off plan

    def _execute(self, plan: RankPlan, handler: DataHandler, what, digest: int):
        """Run a call; its trace, or None on the fast path (:attr:`last_trace` asks it).
        Kept short: a repeated small call spends most of its Python here and in
        :meth:`.fast.FastRun.run`."""
        if self._broken is not None:
            raise HetcollError(f"this HetComm is unusable after an earlier error: {self._broken}")
        self._seq = seq = self._seq + 1
        self._history = hash((self._history, digest))  # ints hash alike on every rank
        notices = self.notices
        fast = None
        if self._quick and self._start_at is None and not notices.early:
            fast = self._fast.get(id(plan), False)
            if fast is False:
                fast = self._fast[id(plan)] = compile_run(self.comm, plan, self)
        if self._agreement is None:
            trace = self._call(fast, plan, handler, what, seq, digest, None)
        else:  # check="always": a round with every call, in the fast path's loop if any
            trace = self._agreement.around(
                self._call,
                (fast, plan, handler, what, seq, digest),
                seq,
                digest,
                what,
                overlap=type(fast) is FastRun,  # SegmentRun: the round first
            )
        if notices.heard or notices.req.Test():  # what raise_earlier looks at
            notices.raise_earlier(seq)
        return trace

    def _refused(self, exc: Exception, seq: int) -> None:
        """A call raised ``exc`` on this rank while its call number was still ``seq``: the
        rank refused it before sending anything (its own arguments are wrong), while the
        other ranks may be in it, waiting for its messages.  So it takes the call's number
        and tells them (:meth:`.notices.Notices.refuse`, or the agreement round of
        ``check="always"``): each raises :class:`~hetcoll.errors.MismatchError` naming this
        rank in the call (or after its next one, if it completed this one without this
        rank) instead of waiting until the timeout.  ``check="never"`` trusts the caller."""
        if (
            self._seq != seq
            or self.size == 1
            or not isinstance(exc, HetcollError)
            or isinstance(exc, MismatchError | CollectiveTimeoutError)
            or self._broken is not None
            or self.comm == MPI.COMM_NULL
            or self.check == "never"
            or "_execute" in self.__dict__  # only planned (a persistent call's *_init):
            # its own agreement tells every rank
        ):
            return
        self._seq = seq = seq + 1
        self._history = hash((self._history, REFUSED))
        if self._agreement is None:
            self.notices.refuse(seq)
        else:
            self._agreement.refuse(seq, f"call {seq} (refused on this rank)")

    def _call(self, fast, plan: RankPlan, handler: DataHandler, what, seq: int, digest: int, agree):
        if fast is None:
            start_at, self._start_at = self._start_at, None
            token = None if self.check == "never" else (seq, digest)
            timing = None if self.emulator is None else EmulatedTiming(self.emulator, plan.me)
            self.last_trace = trace = self._run(plan, handler, what, token, timing, start_at)
            return trace
        self._fast_trace = fast  # last_trace asks it
        try:
            fast.run(handler, seq, digest, what, agree)
        except MismatchError:  # abandon its requests (sends in flight kept apart)
            sends = fast.abandon(self.notices.early, seq)
            fast.free(keep={id(req) for req, _ in sends})
            del self._fast[id(plan)]
            self.notices.abandon(seq, digest, sends, tell=agree is None)  # agree: all know
            raise
        except CollectiveTimeoutError as exc:  # unusable: cancel its receives (lifecycle.py)
            self._broken = str(exc)
            sends = fast.abandon(self.notices.early, seq)
            fast.free(keep={id(req) for req, _ in sends})
            del self._fast[id(plan)]
            self.notices.flying.extend(sends)
            raise
        return None

    def _run(self, plan, handler, what, token, timing=None, start_at=None) -> Trace:
        """One rank's part of ``plan`` with the executor; ``token``: ``(call number,
        digest)`` carried with the data and checked (None: no check); ``timing``: emulated,
        else native."""
        on_timeout = self._timed_out if self.on_timeout == "abort" else None
        notices = self.notices
        transport = MPITransport(
            self.comm,
            token,
            stamps=self.emulate,
            stale=notices.stale,
            what=what,
            notices=notices if token is not None else None,
            seq=self._seq,
            early=notices.early,
            wire=self._wires.get(id(plan)),
            strays=None if self.strays is None else (self.strays, plan),
        )
        self._wires[id(plan)] = transport.wire
        try:
            ex = Executor(plan, handler, transport, timing or self._native, start_at=start_at)
            return ex.run(ex.trace.entry + int(self.timeout * _NS), on_timeout, what)
        except MismatchError:
            sends = transport.abandon()
            del self._wires[id(plan)]  # its requests are freed or in flight
            self.notices.abandon(self._seq, token[1] if token else 0, sends)
            raise
        except CollectiveTimeoutError as exc:  # unusable: cancel its receives (lifecycle.py)
            self._broken = str(exc)
            self.notices.flying.extend(transport.abandon())
            del self._wires[id(plan)]
            raise

    @property
    def last_trace(self) -> Trace | None:
        """What the last call did when (:class:`~.plan.Trace`), None before any call."""
        if self._fast_trace is not None:
            self._last_trace, self._fast_trace = self._fast_trace.trace(), None
        return self._last_trace

    @last_trace.setter
    def last_trace(self, trace: Trace | None) -> None:
        self._last_trace, self._fast_trace = trace, None

    def _forget(self, plan: RankPlan) -> None:
        """Free what was kept for ``plan`` (its memory and persistent requests)."""
        for cache in (self._wires, self._fast):
            kept = cache.pop(id(plan), None)
            if kept:
                kept.free()
