"""``HetComm``: hetcoll's collectives on an mpi4py communicator.

>>> from mpi4py import MPI                                     # doctest: +SKIP
>>> with HetComm(MPI.COMM_WORLD, "testbed16", algo="fnf") as hc:  # doctest: +SKIP
...     data = hc.bcast(data, root=0)
...     hc.Bcast(array, root=3, segment_size=64 * 1024)

Every rank plans the same schedule from the same platform (planners are deterministic) and
checks that it did: the first time a schedule is planned, the ranks compare a digest of it
with a non-blocking allgather, and a mismatch raises :class:`~hetcoll.errors.MismatchError`
on every rank instead of a deadlock.  Then each rank executes its part of the schedule's
:class:`~hetcoll.schedule.Program` (:mod:`hetcoll.runtime.executor`).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import CollectiveTimeoutError, HetcollError, MismatchError, PlatformError
from ..platform import Platform, load_platform
from ..schedule import Program, Schedule
from .emulation import Emulator, clock_offsets, set_timer_slack
from .executor import ByteRanges, DataHandler, RankPlan, Trace, execute, rank_plan

__all__ = ["HetComm", "as_bytes"]

_CACHE_LIMIT = 64
_TAG_START = 5  # a control tag (below executor.CONTROL_TAGS)
_DIGEST = 16


def as_bytes(buf: Any, writable: bool, where: str) -> memoryview:
    """A flat byte view of an mpi4py buffer spec: ``buf``, ``[buf, type]``, ``[buf, n, type]``.

    No datatype semantics: only the bytes (``count * extent`` of them when a count is given).
    """
    count = datatype = None
    if isinstance(buf, list | tuple):
        if len(buf) == 2:
            buf, datatype = buf
        elif len(buf) == 3:
            buf, count, datatype = buf
        else:
            raise HetcollError(f"{where}: a buffer spec is buf, [buf, type] or [buf, count, type]")
    try:
        view = memoryview(buf)
    except TypeError:
        raise HetcollError(
            f"{where}: expected a buffer (bytearray, NumPy array, ...), got {type(buf).__name__}"
        ) from None
    if not view.contiguous:
        raise HetcollError(f"{where}: the buffer must be contiguous")
    view = view.cast("B") if view.ndim != 1 or view.format != "B" else view
    if writable and view.readonly:
        raise HetcollError(f"{where}: the receive buffer is read-only")
    if count is not None:
        extent = datatype.Get_extent()[1] if isinstance(datatype, MPI.Datatype) else 1
        nbytes = int(count) * extent
        if nbytes > len(view):
            raise HetcollError(
                f"{where}: count {count} needs {nbytes} bytes, buffer has {len(view)}"
            )
        view = view[:nbytes]
    return view


class HetComm:
    """A communicator wrapper running hetcoll schedules.

    Parameters
    ----------
    comm : MPI.Comm
        The user's communicator; hetcoll works on a private ``comm.Dup()`` (freed by
        :meth:`close`, or at the end of a ``with`` block).
    platform : Platform or str
        The platform (or a file / built-in name).  By default rank ``r`` is platform node
        ``r``; ``nodes`` gives another mapping (one node id per rank).
    algo : str
        The planner (``hetcoll planners``).
    emulate : bool
        Impose the platform's costs on this machine (:mod:`hetcoll.runtime.emulation`).
    model : optional
        Cost model to plan and emulate with (default: the platform's).
    segment_size : int, optional
        Default segment size of :meth:`Bcast` (pipelining); None: one message.
    timeout : float
        Seconds each collective may take.  On expiry the error names the rank, the op and
        what it waited for; with ``on_timeout="abort"`` (default) the message goes to stderr
        and the job is aborted (nothing hangs), with ``"raise"``
        :class:`~hetcoll.errors.CollectiveTimeoutError` is raised (the wrapper is then
        unusable: messages may be in flight).
    check : {"first", "always", "never"}
        When ranks compare schedule digests: the first time each schedule is planned, on
        every call, or never.
    options : mapping, optional
        Planner options.
    time_scale : float
        Emulation only: multiply every modelled cost.
    clock : {"auto", "shared", "sync"}
        Emulation only: how ranks agree on time.  ``auto``: the shared monotonic clock on one
        host, offsets estimated by ping-pong across hosts (``sync`` forces the estimate).
    spin, poll : float, optional
        Without emulation, how an idle rank waits: it polls (yielding the CPU) for ``spin``
        seconds, then sleeps ``poll`` seconds between looks.  Defaults suit an
        oversubscribed host (``HETCOLL_SPIN``/``HETCOLL_POLL`` override them); on dedicated
        cores a long ``spin`` is fastest.
    """

    def __init__(
        self,
        comm: MPI.Comm,
        platform: Platform | str,
        algo: str = "fnf",
        *,
        emulate: bool = False,
        model: Any = None,
        segment_size: int | None = None,
        timeout: float = 60.0,
        nodes: Sequence[str] | None = None,
        check: str = "first",
        on_timeout: str = "abort",
        options: dict[str, Any] | None = None,
        time_scale: float = 1.0,
        clock: str = "auto",
        spin: float | None = None,
        poll: float | None = None,
    ) -> None:
        if check not in ("first", "always", "never"):
            raise HetcollError(f"check: expected 'first', 'always' or 'never', got {check!r}")
        if on_timeout not in ("abort", "raise"):
            raise HetcollError(f"on_timeout: expected 'abort' or 'raise', got {on_timeout!r}")
        if clock not in ("auto", "shared", "sync"):
            raise HetcollError(f"clock: expected 'auto', 'shared' or 'sync', got {clock!r}")
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.rank, self.comm.size
        self.algo = algo
        self.emulate = bool(emulate)
        self.model = model
        self.segment_size = segment_size
        self.timeout = float(timeout)
        self.check = check
        self.on_timeout = on_timeout
        self.options = dict(options or {})
        self.time_scale = float(time_scale)
        self.spin = float(os.environ.get("HETCOLL_SPIN", 20e-6) if spin is None else spin)
        self.poll = float(os.environ.get("HETCOLL_POLL", 20e-6) if poll is None else poll)
        self.last_trace: Trace | None = None
        self.last_schedule: Schedule | None = None
        self._cache: dict[Any, tuple[Schedule, RankPlan, tuple]] = {}
        self._broken: str | None = None
        self._start_at: int | None = None  # see start_together()
        set_timer_slack()
        try:
            self._setup(platform, nodes, clock)
        except BaseException:
            self.comm.Free()
            raise

    # -- set-up -------------------------------------------------------------------------------

    def _setup(self, platform, nodes, clock) -> None:
        error = None
        try:
            p = load_platform(platform)
            spec = {
                "platform": p.to_dict(),
                "algo": self.algo,
                "model": None if self.model is None else str(self.model),
                "emulate": self.emulate,
                "segment_size": self.segment_size,
                "options": self.options,
                "time_scale": self.time_scale,
                "nodes": None if nodes is None else list(nodes),
            }
            digest = _digest(json.dumps(spec, sort_keys=True, default=str))
        except HetcollError as exc:
            error, digest = exc, b"\0" * _DIGEST
        # Everyone takes part in the comparison, even a rank that failed to load its platform,
        # so that no rank is left waiting.
        digests = self._allgather_digest(digest, "the platform agreement check")
        bad = [r for r, d in enumerate(digests) if d == b"\0" * _DIGEST]
        if error is not None:
            if len(bad) == self.size:
                raise error  # the same bad input everywhere
            raise MismatchError(f"rank {self.rank}: {error}")
        if bad:
            raise MismatchError(f"rank {bad[0]} could not load its platform; see its error")
        if len(set(digests)) > 1:
            groups: dict[bytes, list[int]] = {}
            for r, d in enumerate(digests):
                groups.setdefault(d, []).append(r)
            desc = "; ".join(f"rank(s) {_ranges(rs)}: {d.hex()[:8]}" for d, rs in groups.items())
            raise MismatchError(
                "ranks were given different platforms or settings (platform, algo, model, "
                f"emulate, segment size): {desc}; every rank must use the same platform file "
                "and options"
            )
        ids = list(p.ids) if nodes is None else [str(x) for x in nodes]
        if len(ids) != self.size:
            what = "the platform has" if nodes is None else "nodes= lists"
            raise PlatformError(
                f"{what} {len(ids)} nodes but the communicator has {self.size} ranks: run "
                f"`mpiexec -n {len(ids)}` or give a platform of {self.size} nodes"
            )
        for node in ids:
            p.index(node)
        if len(set(ids)) != len(ids):
            raise PlatformError("nodes: a platform node is given to two ranks")
        self.platform = p
        self.nodes = tuple(ids)
        self.node = ids[self.rank]
        self.rank_of = {node: r for r, node in enumerate(ids)}
        self.emulator = None
        self.one_host = self._one_host()
        #: True when every rank reads the same clock (one host, or synchronised for emulation)
        self.shared_clock = self.one_host or self.emulate
        if self.emulate:
            offset = 0
            if clock == "sync" or (clock == "auto" and not self.one_host):
                offset = clock_offsets(self.comm)
            self.clock_offset_ns = offset
            self.emulator = Emulator(
                p,
                [p.index(x) for x in ids],
                self.model,
                offset_ns=offset,
                time_scale=self.time_scale,
            )

    def _one_host(self) -> bool:
        names = self.comm.allgather(MPI.Get_processor_name())
        return len(set(names)) == 1

    def _allgather_digest(self, digest: bytes, what: str) -> list[bytes]:
        send = np.frombuffer(digest, dtype=np.uint8).copy()
        recv = np.zeros(self.size * _DIGEST, dtype=np.uint8)
        req = self.comm.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE])
        self._wait(req, what)
        return [recv[k * _DIGEST : (k + 1) * _DIGEST].tobytes() for k in range(self.size)]

    def _wait(
        self, req: MPI.Request, what: str, timeout: float | None = None, nap: float = 200e-6
    ) -> None:
        """Wait for ``req`` until the timeout, sleeping ``nap`` seconds between tests.

        Sleeping leaves the CPU to the other ranks of an oversubscribed host: a test costs
        ~7 µs, so 15 ranks looking every 30 µs would take more than one core of two."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        looks = 0
        while not req.Test():
            if time.monotonic() > deadline:
                self._timed_out(
                    f"rank {self.rank}: {what} timed out after {timeout:g} s "
                    "(does every rank call it?)"
                )
            looks += 1
            time.sleep(min(nap, 20e-6) if looks < 50 else nap)  # quick looks first

    def _timed_out(self, message: str) -> None:
        self._broken = message
        if self.on_timeout == "abort":
            _abort(message)
        raise CollectiveTimeoutError(message)

    # -- context ------------------------------------------------------------------------------

    def close(self) -> None:
        """Free the private communicator (idempotent)."""
        if self.comm != MPI.COMM_NULL:
            self.comm.Free()

    def __enter__(self) -> HetComm:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._broken is None:
            self.close()

    def __repr__(self) -> str:
        return (
            f"HetComm(rank={self.rank}/{self.size}, node={self.node!r}, algo={self.algo!r}, "
            f"emulate={self.emulate})"
        )

    # -- planning -----------------------------------------------------------------------------

    def _node(self, rank: int, what: str) -> str:
        if isinstance(rank, bool) or not isinstance(rank, int | np.integer):
            raise HetcollError(f"{what}: expected a rank (int), got {rank!r}")
        if not 0 <= rank < self.size:
            raise HetcollError(f"{what}: rank {rank} is not in 0..{self.size - 1}")
        return self.nodes[int(rank)]

    def schedule(
        self,
        root: int = 0,
        members: Sequence[int] | None = None,
        nbytes: int = 0,
        segment_size: int | None = None,
        *,
        groups: Sequence[tuple[int, Sequence[int] | None]] | None = None,
        algo: str | None = None,
    ) -> Schedule:
        """The schedule this wrapper runs for a call (planned once, then cached)."""
        return self._planned(root, members, nbytes, segment_size, groups, algo, "schedule")[0]

    def _planned(self, root, members, nbytes, segment_size, groups, algo, what):
        from ..planners import plan, plan_multiple

        algo = algo or self.algo
        key = (
            algo,
            root,
            None if members is None else tuple(members),
            nbytes,
            segment_size,
            None if groups is None else tuple((r, tuple(m or ())) for r, m in groups),
        )
        hit = self._cache.get(key)
        if hit is None:
            if groups is not None:
                node_groups = [
                    (
                        self._node(r, "root"),
                        None if m is None else [self._node(x, "members") for x in m],
                    )
                    for r, m in groups
                ]
                sched = plan_multiple(
                    self.platform,
                    node_groups,
                    method=algo,
                    model=self.model,
                    nbytes=nbytes,
                    segment_size=segment_size,
                    options=self.options,
                )
            else:
                ids = None if members is None else [self._node(m, "members") for m in members]
                sched = plan(
                    self.platform,
                    self._node(root, "root"),
                    ids,
                    method=algo,
                    model=self.model,
                    nbytes=nbytes,
                    segment_size=segment_size,
                    options=self.options,
                )
            program = sched.program()
            hit = (sched, rank_plan(program, self.node, self.rank_of), program.chunks)
            if self.check == "first":
                self._agree(sched, what)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = hit
        if self.check == "always":
            self._agree(hit[0], what)
        return hit

    def _agree(self, sched: Schedule, what: str) -> None:
        mine = _digest(sched.to_json(indent=None))
        digests = self._allgather_digest(mine, f"the schedule agreement check of {what}")
        if len(set(digests)) > 1:
            others = [r for r, d in enumerate(digests) if d != digests[0]]
            raise MismatchError(
                f"{what}: ranks planned different schedules (rank 0 and rank {others[0]} "
                "disagree): every rank must call the same collective with the same root, "
                "members, size and segment size"
            )

    # -- running ------------------------------------------------------------------------------

    def run(
        self, schedule: Schedule | Program, handler: DataHandler, what: str = "collective"
    ) -> Trace:
        """Execute a schedule or program (the same on every rank) with ``handler`` moving
        this rank's bytes: the extension point for collectives with their own handler."""
        program = schedule.program() if isinstance(schedule, Schedule) else schedule
        plan = rank_plan(program, self.node, self.rank_of)
        return self._execute(plan, handler, what)

    def _execute(self, plan: RankPlan, handler: DataHandler, what: str) -> Trace:
        if self._broken is not None:
            raise HetcollError(f"this HetComm is unusable after an earlier error: {self._broken}")
        start_at, self._start_at = self._start_at, None
        try:
            trace = execute(
                self.comm,
                plan,
                handler,
                emulator=self.emulator,
                timeout=self.timeout,
                what=what,
                on_timeout=_abort if self.on_timeout == "abort" else None,
                start_at=start_at,
                spin=self.spin,
                poll=self.poll,
            )
        except CollectiveTimeoutError as exc:
            self._broken = str(exc)
            raise
        self.last_trace = trace
        return trace

    def _tree(self, views, root, members, nbytes, segment_size, groups, what, algo=None) -> None:
        sched, plan, chunks = self._planned(root, members, nbytes, segment_size, groups, algo, what)
        self.last_schedule = sched
        if len(plan):
            self._execute(plan, ByteRanges(chunks, views), what)

    def Bcast(
        self,
        buf: Any,
        root: int = 0,
        *,
        segment_size: int | None = None,
        algo: str | None = None,
    ) -> None:
        """Broadcast the bytes of ``buf`` from ``root`` (mpi4py's ``Comm.Bcast``).

        ``segment_size`` pipelines the message (default: the wrapper's); ``algo`` overrides
        the wrapper's planner for this call.
        """
        if self.size == 1:
            return
        seg = self.segment_size if segment_size is None else segment_size
        view = as_bytes(buf, self.rank != root, "Bcast buf")
        what = f"Bcast(root={root}, {len(view)} B, {algo or self.algo})"
        self._tree({0: view}, root, None, len(view), seg, None, what, algo)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """Broadcast a Python object (pickled; a length header goes first, as ``pkl5`` does)."""
        if self.size == 1:
            return obj
        header = np.zeros(1, dtype=np.int64)
        payload = None
        if self.rank == root:
            payload = pickle.dumps(obj, protocol=5)
            header[0] = len(payload)
        self.Bcast(header, root)
        if self.rank != root:
            payload = bytearray(int(header[0]))
        self.Bcast(payload, root)
        return obj if self.rank == root else pickle.loads(payload)

    def multicast(
        self,
        buf: Any,
        root: int,
        members: Sequence[int],
        *,
        segment_size: int | None = None,
    ) -> None:
        """Send the bytes of ``buf`` from ``root`` to ``members`` (ranks; the root is added).

        Every rank calls it (planning is collective-free but the agreement check is not);
        ranks that are not members return at once after that and may pass ``buf=None``.
        """
        if self.size == 1:
            return
        members = sorted({int(m) for m in members} | {int(root)})
        seg = self.segment_size if segment_size is None else segment_size
        view = None
        if self.rank in members:
            view = as_bytes(buf, self.rank != root, "multicast buf")
        nbytes = self._agreed_size(view, root, "multicast")
        what = f"multicast(root={root}, {len(members)} members, {nbytes} B, {self.algo})"
        self._tree({0: view}, root, members, nbytes, seg, None, what)

    Multicast = multicast

    def multicasts(
        self,
        groups: Sequence[tuple[Any, int, Sequence[int] | None]],
        *,
        segment_size: int | None = None,
    ) -> None:
        """Several multicasts at once: ``groups`` lists ``(buf, root, members)`` (members None:
        every rank), the same on every rank except ``buf`` (None where not a member).

        Each group is planned on its own and they run concurrently, sharing each rank's port
        (Banikazemi et al. 1998, multiple multicast).  Every buffer must have the same size.
        """
        if self.size == 1:
            return
        seg = self.segment_size if segment_size is None else segment_size
        views: dict[int, memoryview | None] = {}
        plan_groups = []
        sizes = set()
        for b, (buf, root, members) in enumerate(groups):
            mem = None if members is None else sorted({int(m) for m in members} | {int(root)})
            plan_groups.append((int(root), mem))
            if mem is None or self.rank in mem:
                views[b] = as_bytes(buf, self.rank != root, f"multicasts group {b} buf")
                sizes.add(len(views[b]))
        if len(sizes) > 1:
            raise HetcollError(f"multicasts: every buffer must have the same size, got {sizes}")
        nbytes = sizes.pop() if sizes else -1
        if not groups:
            raise HetcollError("multicasts: no groups given")
        nbytes = self._agreed_size(None if nbytes < 0 else nbytes, plan_groups[0][0], "multicasts")
        what = f"multicasts({len(groups)} groups, {nbytes} B, {self.algo})"
        self._tree(views, None, None, nbytes, seg, plan_groups, what)

    def _agreed_size(self, view, root, what) -> int:
        # Non-members may not know the size; take the largest any rank knows (the root's).
        n = -1 if view is None else view if isinstance(view, int) else len(view)
        send = np.array([n], dtype=np.int64)
        recv = np.zeros(1, dtype=np.int64)
        req = self.comm.Iallreduce([send, MPI.INT64_T], [recv, MPI.INT64_T], op=MPI.MAX)
        self._wait(req, f"the size agreement of {what}")
        return int(recv[0])

    # -- helpers for measurement ----------------------------------------------------------------

    def barrier(self) -> None:
        """A barrier that honours the timeout."""
        self._wait(self.comm.Ibarrier(), "barrier")

    def now(self) -> int:
        """The clock collectives are timed with (ns; shared by all ranks under emulation)."""
        return self.emulator.now() if self.emulator is not None else time.monotonic_ns()

    def start_together(self, settle: float = 2e-3, root: int = 0) -> int:
        """Agree on a start time ``settle`` seconds from now (on ``root``'s clock) and make the
        next collective of this wrapper begin then on every rank (its receives are posted
        before).  Needs a shared clock (:attr:`shared_clock`); falls back to a barrier.
        Returns the start time (ns on :meth:`now`'s clock)."""
        if not self.shared_clock:
            self.barrier()
            return self.now()
        # Point to point from the root rather than a broadcast: each rank needs only its own
        # look at the network to learn the time, not a chain of ranks that are asleep.
        t = np.array([self.now() + int(settle * 1e9)], dtype=np.int64)
        if self.rank == root:
            reqs = [
                self.comm.Isend([t, MPI.INT64_T], r, _TAG_START)
                for r in range(self.size)
                if r != root
            ]
            self._wait(_all(reqs), "sending the start time")
        else:
            self._wait(self.comm.Irecv([t, MPI.INT64_T], root, _TAG_START), "the start time")
        self._start_at = int(t[0])
        return self._start_at

    def predict(
        self,
        root: int = 0,
        nbytes: int = 0,
        segment_size: int | None = None,
        algo: str | None = None,
    ) -> float:
        """The simulator's time (seconds, times ``time_scale``) of this wrapper's ``Bcast``."""
        from ..simulate import simulate

        sched = self.schedule(root, None, nbytes, segment_size, algo=algo)
        return simulate(self.platform, sched, self.model).makespan * self.time_scale


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=_DIGEST).digest()


def _ranges(ranks: list[int]) -> str:
    out, start, prev = [], ranks[0], ranks[0]
    for r in [*ranks[1:], None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ",".join(out)


def _abort(message: str) -> None:
    sys.stderr.write(f"hetcoll: error: {message}\n")
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(3)


class _all:
    """``Test()`` of several requests at once (for :meth:`HetComm._wait`)."""

    def __init__(self, reqs: list[MPI.Request]) -> None:
        self.reqs = reqs

    def Test(self) -> bool:
        return MPI.Request.Testall(self.reqs)
