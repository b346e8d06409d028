"""``HetComm``: hetcoll's collectives on an mpi4py communicator.

>>> from mpi4py import MPI                                     # doctest: +SKIP
>>> with HetComm(MPI.COMM_WORLD, "testbed16", algo="fnf") as hc:  # doctest: +SKIP
...     data = hc.bcast(data, root=0)
...     hc.Bcast(array, root=3, segment_size=64 * 1024)
...     hc.Allreduce(MPI.IN_PLACE, array, op=MPI.MAX)   # over a hypercube (cube_algo)
...     hc.barrier()

Trees (``Bcast``, multicasts) come from the planner ``algo``; ``Allreduce``/``allreduce``,
``Allgather``/``allgather`` and ``barrier`` run Figueira & Reddi's hypercube of the planner
``cube_algo`` (:mod:`hetcoll.runtime.reduce`).

Every rank plans the same schedule from the same platform (planners are deterministic) and
checks that it did: the first time a schedule is planned, the ranks compare a digest of it
with a non-blocking allgather, and a mismatch raises :class:`~hetcoll.errors.MismatchError`
on every rank instead of a deadlock.  Then each rank executes its part of the schedule's
:class:`~hetcoll.schedule.Program` (:mod:`hetcoll.runtime.executor`).
"""

from __future__ import annotations

import contextlib
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
from ..schedule import HYPERCUBE_COLLECTIVES, Program, Schedule
from .emulation import Emulator, clock_offsets, set_timer_slack
from .executor import ByteRanges, DataHandler, RankPlan, Trace, execute, rank_plan
from .reduce import (
    BarrierHandler,
    BufferPool,
    CubeHandler,
    GatherHandler,
    ReduceHandler,
    sized_program,
)

__all__ = ["HetComm", "as_bytes", "op_name", "typed_buffer"]

_CACHE_LIMIT = 64
_TAG_START = 5  # a control tag (below executor.CONTROL_TAGS)
_DIGEST = 16
#: bytes of each pickled object that ride in the first allgather of :meth:`HetComm.allgather`
INLINE = 248


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


def typed_buffer(buf: Any, writable: bool, where: str) -> tuple[memoryview, int, MPI.Datatype]:
    """``(bytes, count, datatype)`` of an mpi4py buffer spec, for a reduction.

    The datatype is the spec's (an ``MPI.Datatype`` or a type code such as ``"i"``), else
    the one mpi4py infers from the buffer's format (``MPI.Datatype.fromcode``); the count
    is the spec's, else as many whole elements as the buffer holds.
    """
    datatype = None
    count = None
    if isinstance(buf, list | tuple):
        if len(buf) == 2:
            datatype = buf[1]
        elif len(buf) == 3:
            count, datatype = buf[1], buf[2]
    view = as_bytes(buf, writable, where)
    if datatype is None:
        base = buf[0] if isinstance(buf, list | tuple) else buf
        fmt = memoryview(base).format
        code = fmt.lstrip("@=")
        if code[:1] == ("<" if sys.byteorder == "little" else ">"):
            code = code[1:]
        try:
            datatype = MPI.Datatype.fromcode(code)
        except (ValueError, KeyError):
            raise HetcollError(
                f"{where}: cannot map the buffer's format {fmt!r} to an MPI datatype; give "
                "[buf, MPI.TYPE]"
            ) from None
    elif not isinstance(datatype, MPI.Datatype):
        try:
            datatype = MPI.Datatype.fromcode(str(datatype))
        except (ValueError, KeyError):
            raise HetcollError(f"{where}: unknown datatype {datatype!r}") from None
    extent = datatype.Get_extent()[1]
    if count is None:
        if extent <= 0 or len(view) % extent:
            raise HetcollError(
                f"{where}: {len(view)} bytes are not a whole number of elements of {extent} bytes"
            )
        count = len(view) // extent
    return view, int(count), datatype


#: mpi4py's predefined reduction operators and their names in a schedule
_OPS = (
    ("sum", MPI.SUM),
    ("prod", MPI.PROD),
    ("max", MPI.MAX),
    ("min", MPI.MIN),
    ("land", MPI.LAND),
    ("lor", MPI.LOR),
    ("lxor", MPI.LXOR),
    ("band", MPI.BAND),
    ("bor", MPI.BOR),
    ("bxor", MPI.BXOR),
    ("maxloc", MPI.MAXLOC),
    ("minloc", MPI.MINLOC),
)


def op_name(op: Any) -> str:
    """The schedule's name of an mpi4py reduction operator (``"user"`` for ``Op.Create``)."""
    if isinstance(op, MPI.Op):
        for name, known in _OPS:
            if op == known:
                return name
        if op != MPI.OP_NULL and not op.is_predefined:
            return "user"
    raise HetcollError(
        f"op: expected an MPI reduction operator (MPI.SUM, ..., MPI.Op.Create(...)), got {op!r}"
    )


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
        The planner of the rooted collectives (``Bcast``, multicasts; ``hetcoll planners``).
    cube_algo : str, optional
        The hypercube planner of ``Allreduce``/``allreduce``, ``Allgather``/``allgather``
        and ``Barrier``/``barrier`` (``blind``, ``dim2_cube``, ``tsts_cube``, ``eff_cube``,
        ``eff_cube_ls``).  Default: ``algo`` when it names a hypercube planner, else
        ``eff_cube``.
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
        cube_algo: str | None = None,
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
        self.cube_algo = cube_algo
        self.emulate = bool(emulate)
        self.model = model
        self.segment_size = segment_size
        self.timeout = timeout  # these are checked in _setup (_check_settings)
        self.check = check
        self.on_timeout = on_timeout
        self.options = {} if options is None else options
        self.time_scale = time_scale
        self.spin = os.environ.get("HETCOLL_SPIN", 20e-6) if spin is None else spin
        self.poll = os.environ.get("HETCOLL_POLL", 20e-6) if poll is None else poll
        self.last_trace: Trace | None = None
        self.last_schedule: Schedule | None = None
        self._cache: dict[Any, tuple[Schedule, RankPlan, Program]] = {}
        self._broken: str | None = None
        self._start_at: int | None = None  # see start_together()
        self._pool = BufferPool()  # scratch memory of the hypercube collectives
        self._pool_depth = 0
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
            _check_settings(self)
            self.cube_algo = _cube_planner(self.cube_algo, default=self.algo)
            p = load_platform(platform)
            spec = {
                "platform": p.to_dict(),
                "algo": self.algo,
                "cube_algo": self.cube_algo,
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
            f"cube_algo={self.cube_algo!r}, emulate={self.emulate})"
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
        collective: str = "bcast",
        op: Any = None,
    ) -> Schedule:
        """The schedule this wrapper runs for a call (planned once, then cached).

        ``collective="allreduce"`` (with ``op``, default ``MPI.SUM``), ``"allgather"`` or
        ``"barrier"``: the hypercube schedule of ``Allreduce``/``Allgather``/``Barrier`` with
        ``nbytes`` per rank (``root``, ``members`` and ``segment_size`` do not apply; a
        non-commutative ``op`` runs an allgather, see :meth:`Allreduce`).
        """
        if collective in HYPERCUBE_COLLECTIVES:
            run, name = _cube_call(collective, op)
            return self._planned_cube(run, nbytes, name, algo, "schedule")[0]
        if collective not in ("bcast", "multicast", "multi_multicast"):
            raise HetcollError(f"collective: unknown {collective!r}")
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

        def build() -> Schedule:
            if groups is not None:
                node_groups = [
                    (
                        self._node(r, "root"),
                        None if m is None else [self._node(x, "members") for x in m],
                    )
                    for r, m in groups
                ]
                return plan_multiple(
                    self.platform,
                    node_groups,
                    method=algo,
                    model=self.model,
                    nbytes=nbytes,
                    segment_size=segment_size,
                    options=self.options,
                )
            ids = None if members is None else [self._node(m, "members") for m in members]
            return plan(
                self.platform,
                self._node(root, "root"),
                ids,
                method=algo,
                model=self.model,
                nbytes=nbytes,
                segment_size=segment_size,
                options=self.options,
            )

        sched, plan_, program = self._cached(key, build, what)
        return sched, plan_, program.chunks

    def _planned_cube(
        self, collective: str, nbytes: int, op: str | None, algo: str | None, what: str
    ) -> tuple[Schedule, RankPlan, Program]:
        """The hypercube schedule of ``collective`` over every rank (cached, agreed)."""
        from ..planners import get_planner, plan_hypercube

        algo = self.cube_algo if algo is None else _cube_planner(algo)
        key = ("cube", collective, algo, nbytes, op)

        def build() -> Schedule:
            accepted = set(get_planner(algo).options)
            return plan_hypercube(
                self.platform,
                collective,
                None if self.nodes == self.platform.ids else list(self.nodes),
                method=algo,
                model=self.model,
                nbytes=nbytes,
                op=op,
                options={k: v for k, v in self.options.items() if k in accepted},
            )

        return self._cached(key, build, what)

    def _cached(self, key, build, what) -> tuple[Schedule, RankPlan, Program]:
        hit = self._cache.get(key)
        if hit is None:
            sched = build()
            program = sched.program()
            hit = (sched, rank_plan(program, self.node, self.rank_of), program)
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

    # -- hypercube collectives (Figueira & Reddi) -----------------------------------------------

    def _cube(self, collective, nbytes, op, algo, what, handler_for) -> CubeHandler:
        """Run the hypercube ``collective``; ``handler_for(program)`` makes the handler."""
        sched, plan, program = self._planned_cube(collective, nbytes, op, algo, what)
        self.last_schedule = sched
        handler = handler_for(program)
        self._execute(plan, handler, what)
        return handler

    @contextlib.contextmanager
    def _scratch(self):
        """The scratch memory of one call: back to the pool when the call returns (nothing
        reads it any more), forgotten after an error (messages may still arrive into it)."""
        self._pool_depth += 1
        ok = False
        try:
            yield
            ok = True
        finally:
            self._pool_depth -= 1
            if self._pool_depth == 0:
                self._pool.release() if ok else self._pool.drop()

    def _gather_blocks(self, block: memoryview, algo, what) -> list[memoryview]:
        """Every rank's ``block`` (same size everywhere), in rank order."""
        n = len(block)
        sizes = dict.fromkeys(self.nodes, n)
        handler = self._cube(
            "allgather",
            n,
            None,
            algo,
            what,
            lambda program: GatherHandler(program, self.node, block, sizes, self._pool),
        )
        got = handler.blocks()
        return [got[node] for node in self.nodes]

    def _gather_sized(self, block: memoryview, sizes: dict[str, int], algo, what):
        """Every rank's ``block`` of ``sizes[node]`` bytes (known to every rank), in rank order.

        The allgather's program with each state's size the sum of its blocks."""
        sched, _, program = self._planned_cube("allgather", max(sizes.values()), None, algo, what)
        self.last_schedule = sched
        program = sized_program(program, sizes)
        handler = GatherHandler(program, self.node, block, sizes, self._pool)
        self._execute(rank_plan(program, self.node, self.rank_of), handler, what)
        got = handler.blocks()
        return [got[node] for node in self.nodes]

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, *, algo=None) -> None:
        """Combine every rank's ``sendbuf`` with ``op`` into every rank's ``recvbuf`` over the
        hypercube of :attr:`cube_algo` (mpi4py's ``Comm.Allreduce``).

        Buffer specs ``buf``, ``[buf, type]``, ``[buf, count, type]`` (the datatype is
        inferred from the buffer's format as mpi4py does), ``sendbuf=MPI.IN_PLACE``; ``op`` a
        predefined operator or ``MPI.Op.Create(func, commute)``, applied with
        ``op.Reduce_local`` on the typed data.  A commutative ``op`` runs the hypercube
        reduction (each exchange combines the two states); a non-commutative one gathers
        every contribution over the same hypercube (an allgather) and reduces them in rank
        order on every rank, ``x0 op (x1 op (... op x[n-1]))``, the order MPI prescribes, so
        results equal MPI's for any associative ``op``.  ``algo`` overrides the planner.
        """
        recv, count, datatype = typed_buffer(recvbuf, True, "Allreduce recvbuf")
        name = op_name(op)
        if sendbuf is MPI.IN_PLACE:
            send = recv
        else:
            send, scount, stype = typed_buffer(sendbuf, False, "Allreduce sendbuf")
            if stype != datatype or scount != count:
                raise HetcollError(
                    f"Allreduce: sendbuf has {scount} elements of {_type_name(stype)} but "
                    f"recvbuf {count} of {_type_name(datatype)}; they must match"
                )
        if self.size == 1:
            if send is not recv:
                recv[:] = send
            return
        what = f"Allreduce({len(recv)} B, {name}, {algo or self.cube_algo})"
        spec = (count, datatype)
        with self._scratch():
            if not op.is_commutative:
                blocks = self._gather_blocks(send, algo, what)
                acc = self._pool.take(len(recv))
                acc[:] = blocks[-1]
                for block in reversed(blocks[:-1]):
                    op.Reduce_local([block, *spec], [acc, *spec])  # acc = block op acc
                recv[:] = acc
                return
            handler = self._cube(
                "allreduce",
                len(recv),
                name,
                algo,
                what,
                lambda program: ReduceHandler(
                    program, self.node, send, op, count, datatype, self._pool
                ),
            )
            recv[:] = memoryview(handler.state).cast("B")

    def allreduce(self, obj: Any, op: Any = MPI.SUM, *, algo=None) -> Any:
        """Combine every rank's Python object with ``op`` (mpi4py's ``Comm.allreduce``).

        Objects are gathered over the hypercube (:meth:`allgather`) and reduced in rank
        order on every rank, ``op(...op(op(x0, x1), x2)..., x[n-1])``, as mpi4py applies an
        operator to objects (``MPI.SUM`` is ``+``, so lists and tuples concatenate in rank
        order; ``MPI.Op.Create`` functions are called as ``func(a, b, None)``; any callable
        works).  Results equal mpi4py's for any associative ``op``.
        """
        if self.size == 1:
            return obj
        items = self.allgather(obj, algo=algo)
        result = items[0]
        for item in items[1:]:
            result = op(result, item)
        return result

    def Allgather(self, sendbuf: Any, recvbuf: Any, *, algo=None) -> None:
        """Every rank's ``sendbuf`` into every rank's ``recvbuf``, in rank order, over the
        hypercube of :attr:`cube_algo` (mpi4py's ``Comm.Allgather``; ``MPI.IN_PLACE``:
        each rank's block is already at its place in ``recvbuf``).

        Only bytes move: ``recvbuf`` holds ``size`` blocks of ``sendbuf``'s size (a
        ``[buf, count, type]`` spec counts the elements of one block, as in MPI).
        """
        recv = _gather_recv(recvbuf, self.size)
        if sendbuf is MPI.IN_PLACE:
            if len(recv) % self.size:
                raise HetcollError(
                    f"Allgather recvbuf: {len(recv)} bytes are not {self.size} equal blocks"
                )
            n = len(recv) // self.size
            send = recv[self.rank * n : (self.rank + 1) * n]
        else:
            send = as_bytes(sendbuf, False, "Allgather sendbuf")
            n = len(send)
            if len(recv) < self.size * n:
                raise HetcollError(
                    f"Allgather recvbuf: {len(recv)} bytes cannot hold {self.size} blocks of {n}"
                )
        if self.size == 1:
            recv[:n] = send
            return
        what = f"Allgather({n} B, {algo or self.cube_algo})"
        with self._scratch():
            blocks = self._gather_blocks(send, algo, what)
            for r, block in enumerate(blocks):
                recv[r * n : (r + 1) * n] = block

    def allgather(self, obj: Any, *, algo=None) -> list[Any]:
        """Every rank's Python object, as a list in rank order (mpi4py's ``Comm.allgather``).

        Pickled (protocol 5).  The hypercube allgather moves a fixed block per rank: an
        8-byte length and the first :data:`INLINE` bytes of the pickle; only when some
        pickle is longer, a second allgather moves the rest of each (its blocks sized
        from those lengths).  Small objects thus cost one hypercube allgather.
        """
        if self.size == 1:
            return [obj]
        payload = pickle.dumps(obj, protocol=5)
        head = np.zeros(8 + INLINE, dtype=np.uint8)
        head[:8] = np.frombuffer(len(payload).to_bytes(8, "little"), dtype=np.uint8)
        first = min(len(payload), INLINE)
        head[8 : 8 + first] = np.frombuffer(payload, dtype=np.uint8, count=first)
        what = f"allgather(object, {algo or self.cube_algo})"
        with self._scratch():
            heads = self._gather_blocks(memoryview(head), algo, what)
            lengths = [int.from_bytes(h[:8], "little") for h in heads]
            tails: list[Any] = [b""] * self.size
            if max(lengths) > INLINE:
                sizes = {v: max(n - INLINE, 0) for v, n in zip(self.nodes, lengths, strict=True)}
                tails = self._gather_sized(memoryview(payload)[first:], sizes, algo, what)
            return [
                pickle.loads(bytes(h[8 : 8 + min(n, INLINE)]) + bytes(t))
                for h, n, t in zip(heads, lengths, tails, strict=True)
            ]

    def barrier(self, *, algo=None) -> None:
        """Synchronise every rank over the hypercube of :attr:`cube_algo` (empty messages,
        Figueira & Reddi Sec. 5.2): no rank returns before every rank has called it."""
        if self.size == 1:
            return
        what = f"barrier({algo or self.cube_algo})"
        self._cube("barrier", 0, None, algo, what, lambda p: BarrierHandler(p, self.node))

    Barrier = barrier

    # -- helpers for measurement ----------------------------------------------------------------

    def _sync(self) -> None:
        """MPI's own barrier (``Ibarrier``), honouring the timeout: for measurement code
        (:meth:`barrier` is the hypercube barrier)."""
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
            self._sync()
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
        *,
        collective: str = "bcast",
        op: Any = None,
    ) -> float:
        """The simulator's time (seconds, times ``time_scale``) of this wrapper's ``Bcast``,
        or of its hypercube ``collective`` (``"allreduce"``, ``"allgather"``, ``"barrier"``;
        ``nbytes`` per rank) as :meth:`schedule` gives it."""
        from ..simulate import simulate

        sched = self.schedule(
            root, None, nbytes, segment_size, algo=algo, collective=collective, op=op
        )
        return simulate(self.platform, sched, self.model).makespan * self.time_scale


def _type_name(datatype: MPI.Datatype) -> str:
    return datatype.Get_name() or f"a datatype of {datatype.Get_size()} bytes"


def _cube_call(collective: str, op: Any) -> tuple[str, str | None]:
    """What a hypercube call runs: ``(collective, operator name)``; an allreduce with a
    non-commutative operator runs an allgather (see :meth:`HetComm.Allreduce`)."""
    if collective != "allreduce":
        return collective, None
    op = MPI.SUM if op is None else op
    if isinstance(op, str):
        return collective, op
    name = op_name(op)
    return (collective, name) if op.is_commutative else ("allgather", None)


def _gather_recv(recvbuf: Any, size: int) -> memoryview:
    """The bytes of an allgather's receive spec: ``[buf, count, type]`` counts one block."""
    if isinstance(recvbuf, list | tuple) and len(recvbuf) == 3:
        buf, count, datatype = recvbuf
        view = as_bytes([buf, datatype], True, "Allgather recvbuf")
        extent = datatype.Get_extent()[1] if isinstance(datatype, MPI.Datatype) else 1
        need = int(count) * extent * size
        if need > len(view):
            raise HetcollError(
                f"Allgather recvbuf: {size} blocks of {count} elements need {need} bytes, "
                f"buffer has {len(view)}"
            )
        return view[:need]
    return as_bytes(recvbuf, True, "Allgather recvbuf")


def _check_settings(hc: HetComm) -> None:
    """The constructor's settings, each through the one validator, checked inside
    ``_setup`` where every rank's verdict is compared (a rank raising alone before that
    would leave the others waiting)."""
    from ..models import get_model
    from ..planners import get_planner
    from ..units import check_quantity

    try:
        hc.timeout = check_quantity(hc.timeout, "time", "timeout", positive=True)
    except HetcollError:
        hc.timeout = 60.0  # the agreement check that follows still needs a deadline
        raise
    get_planner(hc.algo)
    if hc.model is not None:
        get_model(hc.model)
    if hc.segment_size is not None:
        if isinstance(hc.segment_size, bool) or not isinstance(hc.segment_size, int):
            raise HetcollError(f"segment_size: must be a positive integer, got {hc.segment_size!r}")
        hc.segment_size = check_quantity(hc.segment_size, "size", "segment_size", positive=True)
    hc.time_scale = check_quantity(hc.time_scale, "factor", "time_scale", positive=True)
    hc.spin = check_quantity(hc.spin, "time", "spin")
    hc.poll = check_quantity(hc.poll, "time", "poll")
    if not isinstance(hc.options, dict):
        raise HetcollError(f"options: must be a dict of planner options, got {hc.options!r}")
    hc.options = dict(hc.options)


def _cube_planner(name: str | None, default: str | None = None) -> str:
    """A hypercube planner's name: ``name``, else ``default`` when it names one, else
    ``eff_cube``.  :class:`PlannerError` when ``name`` is not a hypercube planner."""
    from ..errors import PlannerError
    from ..planners import REGISTRY, get_planner, hypercube_planners

    if name is None:
        info = REGISTRY.get(default) if default is not None else None
        return default if info is not None and info.kind == "hypercube" else "eff_cube"
    if get_planner(name).kind != "hypercube":
        raise PlannerError(
            f"cube_algo: {name!r} is not a hypercube planner; choose from: "
            + ", ".join(hypercube_planners())
        )
    return name


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
