"""mpi4py's collectives on the engine: ``Bcast``/``bcast``, multicasts, ``Allreduce``/
``allreduce``, ``Allgather``/``allgather``, ``Barrier``/``barrier``.

Each call turns its buffers into bytes (:mod:`.buffers`: buffer specs, derived datatypes
packed and unpacked, ``None`` as ``MPI.IN_PLACE``), asks the injected planner for the
call's schedule (once per distinct call: cached) and runs it (:class:`.comm.ScheduleComm`).
Rooted collectives run a tree schedule, the others a hypercube schedule whose chunks are
states (:mod:`.reduce`).
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
from mpi4py import MPI

from ..choice import Choice
from ..errors import HetcollError, MismatchError
from ..schedule import HYPERCUBE_COLLECTIVES, Schedule
from .buffers import (
    Message,
    check_op,
    in_place,
    message,
    op_name,
    plain_kind,
    plain_signature,
    raw,
)
from .comm import ScheduleComm
from .executor import ByteRanges
from .mpich_cvars import mpich_call
from .notices import refusing
from .rank_ops import Label
from .reduce import (
    BarrierHandler,
    BufferPool,
    GatherHandler,
    RangeReduceHandler,
    ReduceHandler,
    sized_program,
)
from .startup import digest_of
from .subcomms import planned_class

__all__ = ["Collectives", "INLINE"]

#: bytes of each pickled object that ride in the first allgather of ``allgather``
INLINE = 248

_SPECS = (list, tuple)  # buffer specs: [buf, type], [buf, count, type], ...
_PASS = object()  # a call that goes to MPI's own collective
_ALONE = Choice("mpi", source="one rank")  # a one-rank call's natively, whatever the planner
_NOTHING = memoryview(bytearray(0))  # writable: an empty receive writes nothing into it


class _Given:
    """The choice of a planner without ``choose``: the call's ``algo`` (None: its default)."""

    __slots__ = ("algorithm", "segment_size")

    def __init__(self, algorithm: str | None, segment_size: int | None) -> None:
        self.algorithm, self.segment_size = algorithm, segment_size


def _quick_size(buf: Any) -> int | None:
    """A plain buffer's size in bytes (a NumPy array, a memoryview), None otherwise: what a
    call looks up before it parses its buffers."""
    return getattr(buf, "nbytes", None) if not isinstance(buf, _SPECS) else None


def _plain_key(name: str, sendbuf: Any, recvbuf: Any, algo: Any) -> tuple | None:
    """The key an all-to-all call of plain buffers (or ``sendbuf`` in place) given to MPI is
    remembered by (what its quick look-up builds from ``nbytes`` alone), None when it is not
    plain or names its ``algo``."""
    send = "in place" if in_place(sendbuf) else _quick_size(sendbuf)
    recv = _quick_size(recvbuf)
    if algo is not None or send is None or recv is None:
        return None
    return (name, send, recv)


class Collectives(ScheduleComm):
    """:class:`~.comm.ScheduleComm` with mpi4py's collectives (see :class:`hetcoll.HetComm`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pool = BufferPool()  # scratch memory of the hypercube collectives
        self._pool_depth = 0
        #: what ran for the last call (a planner or ``"mpi"``, and why: hetcoll.choice)
        self.last_choice: Any = None
        self._choices: dict[tuple, Any] = {}  # a call's key -> its choice
        # (collective, size, ...) -> choice, for calls passed to MPI: looked up before a
        # call parses its buffers, so that MPI's own costs what it costs without hetcoll
        self._passing: dict[tuple, Any] = {}
        self._natives: dict[tuple, Any] = {}  # MPI's own algorithm, as a program
        super().__init__(*args, **kwargs)

    # -- planning -----------------------------------------------------------------------------

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
            return self._planned_cube(run, nbytes, name, algo)[0]
        if collective not in ("bcast", "multicast", "multi_multicast"):
            raise HetcollError(f"collective: unknown {collective!r}")
        return self._planned(root, members, nbytes, segment_size, groups, algo)[0]

    def _planned(self, root, members, nbytes, segment_size, groups, algo, extra=""):
        """The tree schedule of a call (cached), its plan, program and digest (``extra``:
        what else every rank must agree on, e.g. the type signature)."""
        key = (
            algo,
            root,
            None if members is None else tuple(members),
            nbytes,
            segment_size,
            None if groups is None else tuple((r, tuple(m or ())) for r, m in groups),
            extra,
        )
        hit = self._cache.get(key)
        if hit is not None:
            return hit

        def build() -> Schedule:
            node_groups = None
            if groups is not None:
                node_groups = [
                    (self._node(r, "root"), self._everyone() if m is None else self._nodes(m))
                    for r, m in groups
                ]
            call = {
                "root": None if root is None else self._node(root, "root"),
                "members": self._everyone() if members is None else self._nodes(members),
                "nbytes": nbytes,
                "segment_size": segment_size,
                "groups": node_groups,
                "algo": algo,
            }
            return self._planner().tree(self.platform, call)

        # one plan for calls that differ only in ``extra`` (the type signature)
        return self._cached(key, lambda: self._scheduled(("tree", *key[:-1]), build), extra)

    def _nodes(self, ranks: Sequence[int]) -> list[str]:
        return [self._node(r, "members") for r in ranks]

    def _everyone(self) -> list[str] | None:
        """Every rank's node, as a planner's members: None when they are the whole
        platform, else the communicator's nodes (``nodes=``, a sub-communicator)."""
        return None if self.nodes == self.platform.ids else list(self.nodes)

    def _planned_cube(self, collective, nbytes, op, algo, extra=""):
        """The hypercube schedule of ``collective`` over every rank (cached)."""
        key = ("cube", collective, algo, nbytes, op, extra)

        def build() -> Schedule:
            call = {
                "collective": collective,
                "nbytes": nbytes,
                "op": op,
                "algo": algo,
                "members": self._everyone(),
            }
            return self._planner().cube(self.platform, call)

        return self._cached(key, lambda: self._scheduled(key[:-1], build), extra)

    def _label(self, algo: str | None, cube: bool = False) -> str:
        """The planner a call uses, for messages."""
        if algo:
            return algo
        default = getattr(self.planner, "cube_algo" if cube else "algo", None)
        return str(default or "planner")

    def _planner(self):
        if self.planner is None:
            raise HetcollError("this communicator has no planner: give schedules to run()")
        return self.planner

    # -- choosing between a plan and MPI's own ----------------------------------------------------

    def choice(
        self,
        collective: str,
        nbytes: int = 0,
        *,
        root: int | None = None,
        algo: str | None = None,
        segment_size: int | None = None,
        op: Any = None,
        count: int | None = None,
    ):
        """What runs for a call (:class:`hetcoll.choice.Choice`: ``"mpi"`` or a planner,
        and why): ``collective`` is ``bcast`` (from ``root``, default 0), ``allreduce``
        (``op`` default ``MPI.SUM``, ``count`` elements, default ``nbytes``), ``allgather``
        or ``barrier``; ``nbytes`` per rank."""
        if collective == "bcast":
            root = 0 if root is None else root
        op = MPI.SUM if op is None and collective == "allreduce" else op
        return self._choose(
            collective,
            nbytes,
            root=root,
            algo=algo,
            segment_size=segment_size,
            op=op,
            count=count,
        )

    def _choose(
        self, collective, nbytes, *, root=None, algo=None, segment_size=None, op=None, count=None
    ):
        """The call's choice (cached), planned by the injected planner's ``choose``; a
        planner without one runs ``algo`` (None: its default)."""
        name = None if op is None else op_name(op)
        commutative = True if op is None else bool(op.is_commutative)
        builtin = True if op is None else bool(op.is_predefined)
        key = (collective, nbytes, root, algo, segment_size, name, commutative, count)
        hit = self._choices.get(key)
        if hit is None:
            choose = getattr(self.planner, "choose", None)
            if choose is None:
                hit = _Given(algo, segment_size)
            else:
                call = {
                    "collective": collective,
                    "nbytes": nbytes,
                    "nodes": self.nodes,
                    "root": None if root is None else self._node(root, "root"),
                    "algo": algo,
                    "segment_size": segment_size,
                    "op": name,
                    "count": count,
                    "builtin": builtin,
                    "commutative": commutative,
                    "emulate": self.emulate,
                    "one_host": self.one_host,
                }
                hit = choose(self.platform, call)
            self._choices[key] = hit
        self.last_choice = hit
        return hit

    def _native_run(self, collective, nbytes, *, root=None, count=None, op=None, extra=""):
        """MPI's own algorithm for a call as a program (:mod:`hetcoll.mpich`, through the
        planner's ``native``): ``(native, schedule or None, plan, program, digest)``."""
        name = None if op is None else op_name(op)
        builtin = True if op is None else bool(op.is_predefined)
        key = ("mpi", collective, nbytes, root, count, name, builtin, extra)
        native = self._natives.get(key)
        if native is None:
            call = {
                "collective": collective,
                "nbytes": nbytes,
                "nodes": self.nodes,
                "root": None if root is None else self._node(root, "root"),
                "count": count,
                "builtin": builtin,
                "op": name,
            }
            native = self._natives[key] = self._planner().native(self.platform, call)
        return (native, *self._cached(key, lambda: native.program, extra))

    def _passed(self, key: Any, choice, call=None) -> bool:
        """Whether a call goes to MPI's own collective as it is (natively, chosen so): then
        remember ``key`` for the quick look-up before parsing buffers, with ``call`` (the
        user's communicator's method) and what the wrapper then says of the last call."""
        if choice.algorithm != "mpi" or self.emulate:
            return False
        self.last_choice = choice  # the call's (_choose's, or a one-rank call's: _ALONE)
        if key is not None:
            self._passing[key] = (choice, call)
        self._last_trace = self._fast_trace = self._last = None
        self.last_schedule = None
        return True

    # -- rooted collectives (trees) -----------------------------------------------------------

    def _tree(self, views, root, members, nbytes, seg, groups, what, extra="") -> None:
        sched, plan, program, digest = self._planned(
            root, members, nbytes, seg, groups, None, extra
        )
        self.last_schedule = sched
        self._execute(plan, ByteRanges(program.chunks, views), what, digest)

    def Bcast(
        self,
        buf: Any,
        root: int = 0,
        *,
        segment_size: int | None = None,
        algo: str | None = None,
    ) -> None:
        """Broadcast ``buf`` from ``root`` (mpi4py's ``Comm.Bcast``): any buffer spec, the
        datatype's type map honoured (a non-contiguous one is packed and unpacked).

        ``segment_size`` pipelines the message (default: the wrapper's); ``algo`` overrides
        the wrapper's planner for this call.  A call the planner's ``choose`` gives to MPI
        goes to the user's communicator as it is (a repeated one is looked up before the
        buffer is parsed); under emulation MPICH's algorithm for it runs through the engine.
        """
        if segment_size is None and algo is None:  # first (a class with __getattr__ reads
            # its attributes slowly): a repeated call MPI keeps, as without hetcoll
            hit = self._passing.get((root, getattr(buf, "nbytes", None)))
            if hit is not None:
                self.last_choice, call = hit
                self._last_trace = self._fast_trace = self.last_schedule = self._last = None
                if call is not None:  # None: one rank, where nothing moves (_bcast)
                    call(buf, root)
                return
        self._bcast(buf, root, segment_size, algo)

    @refusing
    def _bcast(self, buf: Any, root: int, segment_size: int | None, algo: str | None) -> None:
        """:meth:`Bcast` past its lookup of a repeated call given to MPI."""
        if self.size == 1:  # nothing to move: natively MPI's own checks a root and size once
            if segment_size is None and algo is None and not self.emulate:
                self.base.Bcast(buf, root)  # then a repeated call is Bcast's look-up only
                self._passed((root, getattr(buf, "nbytes", None)), _ALONE)
            return
        receiving = self.rank != root
        if isinstance(buf, _SPECS):
            m = message(buf, writable=receiving, where="Bcast buf")
            data = m.data() if m.contiguous else _packed(m, not receiving)
            kind = m.signature() if m.nbytes else ""
        else:  # a plain buffer: its bytes (the common case, kept short)
            m, data = None, raw(buf, receiving, "Bcast buf")
            kind = plain_kind(buf)
        seg = self.segment_size if segment_size is None else segment_size
        # A repeated call (same root, size, segments, planner, element type) costs one
        # lookup here; its handler is made once too, and holds the buffer only during the
        # call.  The type signature is part of the call's digest, so ranks that broadcast
        # float64 against int64 of the same size raise instead of taking the bits.
        key = (root, len(data), seg, algo, kind)
        call = self._calls.get(key)
        if call is None:
            sig = kind if m is not None else plain_signature(kind, len(data))
            call = self._calls[key] = self._bcast_call(buf, root, len(data), seg, algo, sig)
        if call is _PASS:
            self._passed(
                None, self._choose("bcast", len(data), root=root, algo=algo, segment_size=seg)
            )
            self.base.Bcast(buf, root)
            return
        self.last_schedule, plan, handler, digest, what, self.last_choice = call
        buffers = handler.buffers
        buffers[0] = data
        try:
            self._execute(plan, handler, what, digest)
        finally:
            buffers[0] = None
        if m is not None and not m.contiguous and receiving:
            m.unpack(data)

    def _bcast_call(self, buf, root: int, nbytes: int, seg, algo, sig: str):
        """A broadcast's plan, handler, digest and label, or :data:`_PASS` (MPI's own);
        ``sig``: the type signature that goes into the call's digest."""
        choice = self._choose("bcast", nbytes, root=root, algo=algo, segment_size=seg)
        quick = getattr(buf, "nbytes", None) == nbytes and seg == self.segment_size
        key = (root, nbytes) if quick and algo is None else None
        if self._passed(key, choice, self.base.Bcast):
            return _PASS
        if choice.algorithm == "mpi":  # under emulation: MPI's algorithm through the engine
            _, sched, plan, program, digest = self._native_run(
                "bcast", nbytes, root=root, extra=sig
            )
        else:
            sched, plan, program, digest = self._planned(
                root, None, nbytes, choice.segment_size, None, choice.algorithm, extra=sig
            )
        what = Label(
            "Bcast(root={}, {} B, {})", root, nbytes, choice.algorithm or self._label(None)
        )
        handler = ByteRanges(program.chunks, {0: None})
        return (sched, plan, handler, digest, what, choice)

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
        self, buf: Any, root: int, members: Sequence[int], *, segment_size: int | None = None
    ) -> None:
        """Send ``buf`` from ``root`` to ``members`` (ranks; the root is added).

        Every rank calls it (the size is agreed collectively, :meth:`_agreed`); ranks that
        are not members return at once after that and may pass ``buf=None``.  Every member
        must give the same size and type signature (else every rank raises
        :class:`~hetcoll.errors.MismatchError`).
        """
        if self.size == 1:
            return
        members = sorted({int(m) for m in members} | {int(root)})
        self._multicast([(buf, root, members)], segment_size, one=True)

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
        (Banikazemi et al. 1998, multiple multicast).  Every buffer must have the same size,
        and the members of a group the same type signature (:meth:`_agreed`).
        """
        if self.size == 1:
            return
        if not groups:
            raise HetcollError("multicasts: no groups given")
        self._multicast(groups, segment_size, one=False)

    def _multicast(self, groups, segment_size: int | None, one: bool) -> None:
        seg = self.segment_size if segment_size is None else segment_size
        name = "multicast" if one else "multicasts"
        views: dict[int, Any] = {}
        mine: dict[int, tuple[int, str]] = {}
        unpack: list[tuple[Message, Any]] = []
        plan_groups = []
        for b, (buf, root, members) in enumerate(groups):
            mem = None if members is None else sorted({int(m) for m in members} | {int(root)})
            plan_groups.append((int(root), mem))
            if mem is None or self.rank in mem:
                receiving = self.rank != root
                where = "multicast buf" if one else f"multicasts group {b} buf"
                m, views[b], mine[b] = _member(buf, receiving, where)
                if m is not None and not m.contiguous and receiving:
                    unpack.append((m, views[b]))
        nbytes, agreed = self._agreed(mine, plan_groups, seg, name)
        if one:
            root0, mem0 = plan_groups[0]
            what = f"multicast(root={root0}, {len(mem0)} members, {nbytes} B, {self._label(None)})"
            self._tree(views, root0, mem0, nbytes, seg, None, what, extra=agreed)
        else:
            what = f"multicasts({len(groups)} groups, {nbytes} B, {self._label(None)})"
            self._tree(views, None, None, nbytes, seg, plan_groups, what, extra=agreed)
        for m, data in unpack:
            m.unpack(data)

    def _agreed(self, mine, groups, seg, name: str) -> tuple[int, str]:
        """The size of a multicast's buffers, which ranks that are not members do not know:
        ``(nbytes, digest text)`` agreed by every rank, from ``mine`` (group -> this rank's
        ``(nbytes, type signature)`` where it is a member).

        A call of its own (a hypercube allreduce, MAX, of each group's size and signature
        hash and their negatives): every rank learns each group's largest and smallest,
        and raises :class:`~hetcoll.errors.MismatchError` when members disagree or the
        groups' sizes differ.  An engine call rather than MPI's ``Iallreduce``, so that a
        rank that makes another call meanwhile finds it (its digest travels with the
        data) instead of everyone waiting."""
        low = np.iinfo(np.int64).min
        values = np.full(4 * len(groups), low, dtype=np.int64)
        for b, (n, sig) in mine.items():
            h = int.from_bytes(digest_of(sig)[:8], "little") >> 2  # 62 bits, never `low`
            values[4 * b : 4 * b + 4] = (n, -n, h, -h)
        what = f"the size agreement of {name}({len(groups)} group(s))"
        state = memoryview(values).cast("B")
        with self._scratch():
            handler = self._cube(
                "allreduce",
                len(state),
                "max",
                None,
                what,
                lambda program: ReduceHandler(
                    program, self.node, state, MPI.MAX, len(values), MPI.INT64_T, self._pool
                ),
                f"{name} agreement/{groups}/{seg}",
            )
            got = np.frombuffer(handler.state, dtype=np.int64).reshape(-1, 4).copy()
        sizes = {int(n) for n in got[:, 0]}
        bad = [b for b, (n, m, h, k) in enumerate(got) if n != -m or h != -k]
        if bad or len(sizes) > 1:
            b = bad[0] if bad else None
            detail = (
                f"the members of group {b} gave different sizes ({-got[b, 1]}..{got[b, 0]} "
                "bytes) or type signatures"
                if b is not None
                else f"the groups' buffers have different sizes ({sorted(sizes)} bytes)"
            )
            raise MismatchError(
                f"rank {self.rank}: {name}: {detail}; every member must pass a buffer of the "
                "same size and type signature"
            )
        return sizes.pop(), ",".join(f"{n}/{h}" for n, _, h, _ in got)

    # -- hypercube collectives (Figueira & Reddi) -----------------------------------------------

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

    def _cube(self, collective, nbytes, op, algo, what, handler_for, extra=""):
        """Run the hypercube ``collective``; ``handler_for(program)`` makes the handler."""
        sched, plan, program, digest = self._planned_cube(collective, nbytes, op, algo, extra)
        self.last_schedule = sched
        handler = handler_for(program)
        self._execute(plan, handler, what, digest)
        return handler

    def _gather_blocks(self, block, algo, what, extra="", program=None):
        """Every rank's ``block`` (same size everywhere), in rank order (``program``: a
        planned ``(schedule, plan, program, digest)`` to run instead of the hypercube's)."""
        sizes = dict.fromkeys(self.nodes, len(block))

        def handler_for(program):
            return GatherHandler(program, self.node, block, sizes, self._pool)

        if program is not None:
            self.last_schedule, plan, prog, digest = program
            handler = handler_for(prog)
            self._execute(plan, handler, what, digest)
        elif self._tree_planner(algo):  # a gather to rank 0 then a broadcast (rooted.py)
            return self._tree_allgather(block, None, algo, what, extra)
        else:
            handler = self._cube("allgather", len(block), None, algo, what, handler_for, extra)
        got = handler.blocks()
        return [got[node] for node in self.nodes]

    def _gather_sized(self, block, sizes, algo, what):
        """Every rank's ``block`` of ``sizes[node]`` bytes (known to every rank), in rank order.

        The allgather's program with each state's size the sum of its blocks."""
        if self._tree_planner(algo):
            return self._tree_allgather(block, tuple(sizes.values()), algo, what)
        n = max(sizes.values())
        sched, _, program, _ = self._planned_cube("allgather", n, None, algo)
        self.last_schedule = sched
        program = sized_program(program, sizes)
        handler = GatherHandler(program, self.node, block, sizes, self._pool)
        self.run(program, handler, what)
        got = handler.blocks()
        return [got[node] for node in self.nodes]

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, *, algo=None) -> None:
        """Combine every rank's ``sendbuf`` with ``op`` into every rank's ``recvbuf`` over the
        hypercube of the wrapper's ``cube_algo`` (mpi4py's ``Comm.Allreduce``).

        Buffer specs as mpi4py takes them (the datatype inferred from the buffer when not
        given), ``sendbuf=MPI.IN_PLACE`` or ``None``; ``op`` a predefined operator or
        ``MPI.Op.Create(func, commute)``, applied with ``op.Reduce_local`` on the typed data
        (a datatype with holes travels with them and only its type map is written back).  A
        commutative ``op`` runs the hypercube reduction; a non-commutative one gathers every
        contribution over the same hypercube and reduces them in rank order on every rank,
        ``x0 op (x1 op (... op x[n-1]))``, the order MPI prescribes.  Every rank must give
        the same type signature and operator (a digest of both travels with the data).
        ``algo`` overrides the planner.  A call the planner's ``choose`` gives to MPI
        (``auto``'s default for most calls, :mod:`hetcoll.choice`) goes to the user's
        communicator as it is; under emulation MPI's own algorithm runs through the engine
        (recursive doubling or reduce-scatter + allgather, :mod:`hetcoll.mpich`).
        """
        if algo is None:  # a repeated call MPI keeps, as without hetcoll (see Bcast)
            size, item = getattr(recvbuf, "nbytes", None), getattr(recvbuf, "itemsize", 0)
            hit = self._passing.get(("allreduce", size, item, id(op)))  # predefined ops only
            if hit is not None:
                self.last_choice, call = hit
                self._last_trace = self._fast_trace = self.last_schedule = self._last = None
                call(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf, op)
                return
        self._allreduce(sendbuf, recvbuf, op, algo)

    @refusing
    def _allreduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op, algo) -> None:
        """:meth:`Allreduce` past its lookup of a repeated call given to MPI."""
        recv = message(recvbuf, writable=True, where="Allreduce recvbuf")
        name = op_name(op)
        send = recv
        if not in_place(sendbuf):
            send = message(sendbuf, writable=False, where="Allreduce sendbuf")
            if send.signature() != recv.signature():
                raise HetcollError(
                    f"Allreduce: sendbuf has {send.count} elements of "
                    f"{_type_name(send.datatype)} but recvbuf {recv.count} of "
                    f"{_type_name(recv.datatype)}; they must match"
                )
        check_op(op, recv, "Allreduce")
        quick = _quick_size(recvbuf) if op.is_predefined and algo is None else None
        item = getattr(recvbuf, "itemsize", 0)  # and id(op): a live predefined Op's is unique
        key = None if quick is None else ("allreduce", quick, item, id(op))
        if self.size == 1:  # nothing to move: natively MPI's own, remembered as at n > 1
            if algo is None and self._passed(key, _ALONE, self.base.Allreduce):
                self.base.Allreduce(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf, op)
            elif send is not recv:
                recv.unpack(send.pack())
            return
        state = send.span()
        spec = (recv.count, recv.datatype)
        choice = self._choose("allreduce", len(state), algo=algo, op=op, count=recv.count)
        call = mpich_call("allreduce", choice, self.base.Allreduce)  # a tuning file's MPICH
        if self._passed(key, choice, call):
            call(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf, op)
            return
        mpi = choice.algorithm == "mpi"  # under emulation: MPI's algorithm through the engine
        algo = None if mpi else choice.algorithm
        tree = self._tree_planner(algo)  # reduce to rank 0 + broadcast (rooted.py)
        what = f"Allreduce({recv.nbytes} B, {name}, {choice.algorithm or self._label(algo, True)})"
        extra = f"{recv.signature()}/{name}"
        with self._scratch():
            if mpi and op.is_commutative:
                result = self._native_allreduce(state, op, spec, what, extra)
            elif tree and op.is_commutative:
                result = self._tree_allreduce(state, op, spec, algo, what, extra)
            elif self._per_root_planner(algo) and op.is_commutative:
                result = self._per_root_allreduce(state, op, spec, algo, what, extra)
            elif not op.is_commutative:
                blocks = self._gather_blocks(state, None if tree else algo, what, extra)
                acc = self._pool.take(len(state))
                acc[:] = blocks[-1]
                for block in reversed(blocks[:-1]):
                    op.Reduce_local([block, *spec], [acc, *spec])  # acc = block op acc
                result = memoryview(acc)
            else:
                handler = self._cube(
                    "allreduce",
                    len(state),
                    name,
                    algo,
                    what,
                    lambda program: ReduceHandler(program, self.node, state, op, *spec, self._pool),
                    extra,
                )
                result = memoryview(handler.state).cast("B")
            if recv.contiguous:
                recv.data()[:] = result[: recv.nbytes]
            else:
                recv.unpack(recv.over(result).pack())

    def _tree_planner(self, algo: str | None) -> bool:
        """Whether ``algo`` names a tree planner (an allreduce or allgather then runs on its
        trees, in :class:`~.rooted.RootedCollectives`), not a hypercube one."""
        return False

    def _per_root_planner(self, algo: str | None) -> bool:
        """Whether ``algo`` names a planner of per-root schedules (an allgather, allreduce
        or reduce-scatter then runs on them, in :class:`~.perroot.PerRootCollectives`)."""
        return False

    def _tree_allgather(self, block, sizes, algo: str, what, extra="") -> list[Any]:
        raise NotImplementedError  # runs in RootedCollectives (when _tree_planner says so)

    def _native_allreduce(self, state, op, spec, what, extra) -> memoryview:
        """MPI's own algorithm for an allreduce, run by the engine (under emulation)."""
        count, datatype = spec
        native, sched, plan, program, digest = self._native_run(
            "allreduce", len(state), count=count, op=op, extra=extra
        )
        self.last_schedule = sched
        if native.kind == "cube":  # recursive doubling: the hypercube's states
            handler = ReduceHandler(program, self.node, state, op, count, datatype, self._pool)
            self._execute(plan, handler, what, digest)
            return memoryview(handler.state).cast("B")
        work = self._pool.take(len(state))  # reduce-scatter + allgather over byte ranges
        work[:] = np.frombuffer(state, dtype=np.uint8)
        itemsize = len(state) // count
        handler = RangeReduceHandler(program, work, op, datatype, itemsize, self._pool)
        self._execute(plan, handler, what, digest)
        return memoryview(work)

    def allreduce(self, obj: Any, op: Any = MPI.SUM, *, algo=None) -> Any:
        """Combine every rank's Python object with ``op`` (mpi4py's ``Comm.allreduce``).

        Objects are gathered over the hypercube (:meth:`allgather`) and reduced in rank
        order on every rank, ``op(...op(op(x0, x1), x2)..., x[n-1])``, as mpi4py applies an
        operator to objects (``MPI.SUM`` is ``+``, so lists and tuples concatenate in rank
        order; ``MPI.Op.Create`` functions are called as ``func(a, b, None)``; any callable
        works).  Results equal mpi4py's for any associative ``op``.
        """
        if algo is None:  # a repeated call MPI keeps, as without hetcoll (see Bcast)
            hit = self._passing.get("objects")
            if hit is not None:
                self.last_choice, _ = hit
                self._last_trace = self._fast_trace = self.last_schedule = self._last = None
                return self.base.allreduce(obj, op)
        if self.size == 1:
            return obj
        if self._objects_to_mpi(algo):
            return self.base.allreduce(obj, op)
        items = planned_class(self).allgather(self, obj, algo=algo)  # see rooted.bind_mpi
        result = items[0]
        for item in items[1:]:
            result = op(result, item)
        return result

    def Allgather(self, sendbuf: Any, recvbuf: Any, *, algo=None) -> None:
        """Every rank's ``sendbuf`` into every rank's ``recvbuf``, in rank order, over the
        hypercube of the wrapper's ``cube_algo`` (mpi4py's ``Comm.Allgather``), or, for a
        tree planner (the call's ``algo``, or ``auto``'s choice), a gather to rank 0 then a
        broadcast of that planner's allgather schedule.

        ``recvbuf`` holds ``size`` blocks (``[buf, count, type]`` counts one block, as in
        MPI; block ``r`` starts ``r * count`` elements in); ``sendbuf=MPI.IN_PLACE`` or
        ``None``: each rank's block is already at its place in ``recvbuf``.  Datatypes are
        honoured (packed for the trip, unpacked into each block).  A call the planner's
        ``choose`` gives to MPI goes to the user's communicator as it is (a repeated one of
        plain buffers is looked up before they are parsed, as :meth:`Bcast`).
        """
        if algo is None:  # a repeated call MPI keeps, as without hetcoll (see Bcast)
            if sendbuf is None or sendbuf is MPI.IN_PLACE:
                send = "in place"
            else:
                send = getattr(sendbuf, "nbytes", None)
            hit = self._passing.get(("allgather", send, getattr(recvbuf, "nbytes", None)))
            if hit is not None:
                self.last_choice, call = hit
                self._last_trace = self._fast_trace = self.last_schedule = self._last = None
                call(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf)
                return
        self._allgather_buffers(sendbuf, recvbuf, algo)

    @refusing
    def _allgather_buffers(self, sendbuf: Any, recvbuf: Any, algo) -> None:
        """:meth:`Allgather` past its lookup of a repeated call given to MPI."""
        recv, blocks_out, mine = self._allgather_parts(sendbuf, recvbuf)
        send = mine.pack()
        # every rank's block has the same type signature (a digest of it rides with the data)
        sig = mine.signature() if mine.nbytes else ""
        if not in_place(sendbuf) and len(send) > blocks_out[0].nbytes:
            raise HetcollError(
                f"Allgather recvbuf: {recv.nbytes} bytes cannot hold {self.size} blocks "
                f"of {len(send)}"
            )
        if self.size == 1:
            blocks_out[0].place(send)
            return
        choice = self._choose("allgather", mine.nbytes, algo=algo)
        call = mpich_call("allgather", choice, self.base.Allgather)
        if self._passed(_plain_key("allgather", sendbuf, recvbuf, algo), choice, call):
            call(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf)
            return
        what = f"Allgather({len(send)} B, {choice.algorithm or self._label(algo, cube=True)})"
        with self._scratch():
            blocks = self._allgathered(send, choice.algorithm, what, sig)
            for out, block in zip(blocks_out, blocks, strict=True):
                out.place(block)

    def _allgather_parts(self, sendbuf: Any, recvbuf: Any) -> tuple[Message, list, Message]:
        """An ``Allgather``'s ``recvbuf``, its ``size`` blocks and this rank's block to send
        (its own block of ``recvbuf`` under IN_PLACE), whose bytes the choice weighs: for
        :meth:`Allgather` and its nonblocking form alike."""
        recv = message(recvbuf, writable=True, where="Allgather recvbuf", blocks=self.size)
        per = recv.count // self.size
        extent = recv.datatype.Get_extent()[1]
        blocks = [recv.block(r * per * extent, per) for r in range(self.size)]
        if in_place(sendbuf):
            return recv, blocks, blocks[self.rank]
        return recv, blocks, message(sendbuf, writable=False, where="Allgather sendbuf")

    def _allgathered(self, block, algorithm: str | None, what, sig: str = "") -> list[Any]:
        """Every rank's ``block`` (the same size everywhere), in rank order, by a choice's
        ``algorithm``: MPI's own through the engine (``"mpi"``, under emulation), a per-root
        schedule, a tree (a gather to rank 0 then a broadcast) or a hypercube."""
        if algorithm == "mpi":
            return self._native_allgather(block, what, sig)
        if self._per_root_planner(algorithm):
            return self._per_root_allgather(block, algorithm, what, sig)
        return self._gather_blocks(block, algorithm, what, sig)

    def _native_allgather(self, block, what, sig: str = "") -> list[Any]:
        """MPI's own algorithm for an allgather, run by the engine (under emulation); its
        Bruck variant, whose chunks a program cannot place, runs hetcoll's best plan
        (``sig``: the type signature in the call's digest)."""
        native, sched, plan, program, digest = self._native_run("allgather", len(block), extra=sig)
        if native.kind == "cube":
            return self._gather_blocks(
                block, "mpi", what, sig, program=(sched, plan, program, digest)
            )
        if native.kind != "bytes":
            return self._gather_blocks(block, None, what, sig)
        n = len(block)
        out = self._pool.take(n * self.size)
        out[self.rank * n : (self.rank + 1) * n] = np.frombuffer(block, dtype=np.uint8)
        self.last_schedule = sched
        self._execute(plan, ByteRanges(program.chunks, {0: memoryview(out)}), what, digest)
        return [memoryview(out)[r * n : (r + 1) * n] for r in range(self.size)]

    def _objects_to_mpi(self, algo) -> bool:
        """Whether ``allgather``/``allreduce`` of objects go to mpi4py's own (natively, when
        MPI keeps the allgather of their first blocks)."""
        if self.emulate:
            return False
        choice = self._choose("allgather", 8 + INLINE, algo=algo)
        return self._passed("objects" if algo is None else None, choice)

    def barrier(self, *, algo=None) -> None:
        """Synchronise every rank over the hypercube of the wrapper's ``cube_algo`` (empty
        messages, Figueira & Reddi Sec. 5.2): no rank returns before every rank has called it."""
        if algo is None:  # a repeated call MPI keeps, as without hetcoll (see Bcast)
            hit = self._passing.get("barrier")
            if hit is not None:
                self.last_choice, call = hit
                self._last_trace = self._fast_trace = self.last_schedule = self._last = None
                call()
                return
        if self.size == 1:
            return
        choice = self._choose("barrier", 0, algo=algo)
        if self._passed("barrier" if algo is None else None, choice, self.base.Barrier):
            self.base.Barrier()
            return
        what = f"barrier({choice.algorithm or self._label(algo, cube=True)})"
        if choice.algorithm == "mpi":  # under emulation: MPI's dissemination, emulated
            _, self.last_schedule, plan, program, digest = self._native_run("barrier", 0)
            self._execute(plan, ByteRanges(program.chunks, {0: _NOTHING}), what, digest)
            return
        self._cube(
            "barrier", 0, None, choice.algorithm, what, lambda p: BarrierHandler(p, self.node)
        )

    Barrier = barrier


def _member(buf: Any, receiving: bool, where: str) -> tuple[Message | None, Any, tuple]:
    """A member's buffer: ``(message or None for a plain buffer, its bytes, (nbytes, type
    signature))``; a non-contiguous one packed where it is sent from."""
    if isinstance(buf, _SPECS):
        m = message(buf, writable=receiving, where=where)
        data = m.data() if m.contiguous else _packed(m, not receiving)
        return m, data, (m.nbytes, m.signature() if m.nbytes else "")
    data = raw(buf, receiving, where)
    return None, data, (len(data), plain_signature(plain_kind(buf), len(data)))


def _packed(m: Message, holds: bool) -> memoryview:
    """Memory for a non-contiguous message's packed bytes: packed now where they are sent
    from (``holds``), to be unpacked after the call elsewhere."""
    return m.pack() if holds else memoryview(np.empty(m.nbytes, dtype=np.uint8))


def _type_name(datatype: MPI.Datatype) -> str:
    return datatype.Get_name() or f"a datatype of {datatype.Get_size()} bytes"


def _cube_call(collective: str, op: Any) -> tuple[str, str | None]:
    """What a hypercube call runs: ``(collective, operator name)``; an allreduce with a
    non-commutative operator runs an allgather (see :meth:`Collectives.Allreduce`)."""
    if collective != "allreduce":
        return collective, None
    op = MPI.SUM if op is None else op
    if isinstance(op, str):
        return collective, op
    name = op_name(op)
    return (collective, name) if op.is_commutative else ("allgather", None)
