"""The rooted collectives on the engine: ``Reduce``/``reduce``, ``Gather``/``gather``,
``Scatter``/``scatter``, and :attr:`RootedCollectives.last_call`.

Each call plans a tree schedule of its collective (:class:`~hetcoll.schedule.Schedule`
with ``reduce``, ``gather`` or ``scatter`` flows; once per distinct call, cached) with the
wrapper's ``rooted_algo`` (or the call's ``algo``) and runs it with a handler that says
where each chunk's bytes are:

- a **reduce** (:class:`TreeReduce`): the rank's state is a copy of its contribution (the
  span of its datatype, holes included); a child's partial result is received into scratch
  memory and combined into the state with ``op.Reduce_local(message, state)``, in the
  order the program lists the children (the engine completes a rank's combines in program
  order, whatever order the messages arrive in: floating-point results are the same on
  every run of one schedule); the root's state is the result.  A non-commutative operator
  gathers every contribution to the root over the same planner's gather tree and reduces
  them there in rank order, ``x0 op (x1 op (... op x[n-1]))``, MPI's order;
- a **gather** or **scatter** (:class:`Blocks`): the blocks live in the tree's preorder
  block buffer (:func:`hetcoll.lowering.block_layout`): a rank keeps only its subtree's
  range, every message is received where it belongs (no copy), and the root packs or
  unpacks the blocks from or into the user's buffer in rank order.

Objects (``reduce``, ``gather``, ``scatter``) are pickled (protocol 5): ``gather`` and
``reduce`` first gather every pickle's length over a hypercube allgather (so that every
rank knows the sizes its subtree sends), then the pickles over the gather tree;
``scatter`` broadcasts the lengths from the root, then scatters the pickles.
"""

from __future__ import annotations

import functools
import inspect
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError
from ..lowering import block_layout
from ..program import Program
from .buffers import Message, check_op, in_place, message, op_name
from .collectives import Collectives, _quick_size
from .rank_ops import DataHandler, Label
from .subcomms import settle

__all__ = [
    "MPICH",
    "PASSED",
    "Blocks",
    "CallRecord",
    "RootedCollectives",
    "TreeAllgather",
    "TreeReduce",
    "bind_mpi",
]

#: mpi4py collective methods hetcoll does not plan: they pass to MPI (and set
#: ``last_call`` to None); the names hetcoll plans are defined by its classes instead.
_BASES = (
    "Allgather",
    "Allgatherv",
    "Allreduce",
    "Alltoall",
    "Alltoallv",
    "Alltoallw",
    "Barrier",
    "Bcast",
    "Exscan",
    "Gather",
    "Gatherv",
    "Reduce",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Scatter",
    "Scatterv",
    "Neighbor_allgather",
    "Neighbor_allgatherv",
    "Neighbor_alltoall",
    "Neighbor_alltoallv",
    "Neighbor_alltoallw",
)
_OBJECTS = (
    "allgather",
    "allreduce",
    "alltoall",
    "barrier",
    "bcast",
    "exscan",
    "gather",
    "reduce",
    "scan",
    "scatter",
    "ibarrier",
    "neighbor_allgather",
    "neighbor_alltoall",
)
PASSED = tuple(
    name
    for name in (
        *(f"{b}{s}" for b in _BASES for s in ("", "_init")),
        *(f"I{b[0].lower()}{b[1:]}" for b in _BASES),  # mpi4py's spelling: Iallgatherv
        *_OBJECTS,
    )
    if hasattr(MPI.Intracomm, name)
)


@dataclass(frozen=True)
class CallRecord:
    """What a wrapper's last call ran: ``collective`` (mpi4py's method name, e.g.
    ``"Reduce"``), ``algorithm`` (the planner's name) and ``root`` (None without one)."""

    collective: str
    algorithm: str
    root: int | None = None


class TreeReduce(DataHandler):
    """One rank's chunks of a reduce program (see the module docstring).

    ``contribution``: the rank's bytes (its datatype's span); ``op``, ``count``,
    ``datatype``: what ``op.Reduce_local`` combines (per segment: ``count`` elements of
    the whole vector, the segment's share by bytes).  After the run :attr:`state` is the
    rank's reduction of its subtree (the result at the root).
    """

    def __init__(self, program: Program, node: str, contribution, op, count, datatype, pool):
        self.chunks, self.node, self.op = program.chunks, node, op
        self.datatype = datatype
        self.size = datatype.Get_size() if count else 1
        self.contribution, self.pool = contribution, pool
        self.restart()
        self.whole = int(count)
        self.contiguous = datatype.Get_size() == datatype.Get_extent()[1]

    def restart(self) -> None:
        """The state back to the contribution (read again into the pool's memory), for a
        run of the same call again (a persistent start, inside the call's scratch)."""
        self.state = self.pool.take(len(self.contribution))
        self.state[:] = np.frombuffer(memoryview(self.contribution).cast("B"), dtype=np.uint8)
        self.inbox: dict[int, np.ndarray] = {}

    def _mine(self, chunk: int) -> bool:
        origin = self.chunks[chunk].origin
        return bool(origin) and origin[0] == self.node

    def send_buffer(self, chunk: int) -> memoryview:
        c = self.chunks[chunk]
        return memoryview(self.state)[c.offset : c.offset + c.nbytes]

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        buf = self.pool.take(self.chunks[chunk].nbytes)
        self.inbox[chunk] = buf
        return memoryview(buf)

    def received(self, chunk: int, kind: str) -> None:
        message = self.inbox.pop(chunk)
        c = self.chunks[chunk]
        if self.contiguous:
            count = c.nbytes // self.size
            target = self.state[c.offset : c.offset + c.nbytes]
        else:  # one message, the whole span: the datatype's own layout
            count, target = self.whole, self.state
        if count:
            self.op.Reduce_local([message, count, self.datatype], [target, count, self.datatype])


class TreeAllreduce(TreeReduce):
    """One rank's chunks of an allreduce on a tree of ``members`` ranks: :class:`TreeReduce`
    for the reduce flow, then the broadcast flow's receives bring the root's result (a
    chunk whose origin is every member: a partial result of the reduce never is), written
    into the state in place and forwarded from there.  (Told apart by origin, not by the
    op's kind: an engine's one-receive path names every receive ``recv``.)"""

    def __init__(self, program: Program, node: str, contribution, op, count, datatype, pool):
        super().__init__(program, node, contribution, op, count, datatype, pool)
        self.members = max((len(c.origin) for c in program.chunks), default=0)

    def _result(self, chunk: int) -> bool:
        return len(self.chunks[chunk].origin) == self.members

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        if self._result(chunk):
            return self.send_buffer(chunk)
        return super().recv_buffer(chunk, kind)

    def received(self, chunk: int, kind: str) -> None:
        if not self._result(chunk):
            super().received(chunk, kind)


class Blocks(DataHandler):
    """One rank's chunks of a gather or scatter program: byte ranges of the block buffer
    (preorder layout), of which the rank keeps its subtree's range ``[base, base + len)``
    in ``buffer``."""

    def __init__(self, program: Program, buffer: np.ndarray, base: int) -> None:
        self.chunks, self.buffer, self.base = program.chunks, buffer, base

    def send_buffer(self, chunk: int) -> memoryview:
        c = self.chunks[chunk]
        at = c.offset - self.base
        return memoryview(self.buffer)[at : at + c.nbytes]

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        return self.send_buffer(chunk)


class TreeAllgather(Blocks):
    """One rank's chunks of an allgather on a tree: :class:`Blocks` for the gather flow
    (the rank's subtree range of the preorder block buffer), then the broadcast flow's
    segments (the program's last ``segments`` chunks: the root's whole block buffer) in
    ``out``, a buffer of every block kept apart from the gather's, so that no receive the
    broadcast posts overlaps one of the gather or a send of it (the root's gather buffer
    is ``out`` itself: what it broadcasts is what it gathered)."""

    def __init__(self, program: Program, buffer, base: int, out, segments: int) -> None:
        super().__init__(program, buffer, base)
        self.out, self.first = out, len(program.chunks) - segments

    def send_buffer(self, chunk: int) -> memoryview:
        if chunk < self.first:
            return super().send_buffer(chunk)
        c = self.chunks[chunk]
        return memoryview(self.out)[c.offset : c.offset + c.nbytes]


#: a rooted call's ``algo`` that runs MPICH's own algorithm through the engine (what
#: ``auto`` leaves to MPI under emulation: the emulated MPI baseline)
MPICH = "mpich"


def _or_mpi(method):
    """Run mpi4py's own method of the same name instead when the call's ``algo`` (else the
    planner's ``rooted_algo``) is ``"mpi"``: the call passes to MPI, ``last_call`` None.
    A ``rooted_algo`` of ``"auto"`` (and no ``algo``) chooses per call
    (:meth:`RootedCollectives._rooted_choice`)."""
    name = method.__name__
    native = getattr(MPI.Intracomm, name)
    signature = inspect.signature(method)
    params = list(signature.parameters)
    at = params.index("root") - 1 if "root" in params else None  # its place in args
    op_at = params.index("op") - 1 if "op" in params else None
    remembered = name in ("Reduce", "Gather", "Scatter")  # choices auto may give to MPI

    @functools.wraps(method)
    def call(self, *args: Any, algo: str | None = None, **kwargs: Any) -> Any:
        chosen = algo or getattr(self.planner, "rooted_algo", None)
        root = None
        if at is not None:  # a root out of range: MPI's own error (MPI.ERR_ROOT), as mpi4py
            root = kwargs.get("root", args[at] if len(args) > at else 0)
            if isinstance(root, int | np.integer) and not 0 <= root < self.size:
                chosen = "mpi"
        if chosen == "auto" and algo is None and not remembered:
            chosen = "mpi"  # no model weighs it (_rooted_choice), decided without a call
        if chosen == "auto" and algo is None:
            # A repeated call auto gave to MPI is looked up by what decided it (root,
            # operator, the buffers' types and sizes), inline: no Python call before MPI's.
            key = None
            if remembered and len(args) >= 2:
                op = (
                    kwargs.get("op", args[op_at] if len(args) > op_at else MPI.SUM)
                    if op_at
                    else None
                )
                s, r = args[0], args[1]
                key = (name, root, id(op), type(s), getattr(s, "nbytes", None),
                       getattr(s, "itemsize", None), type(r), getattr(r, "nbytes", None),
                       getattr(r, "itemsize", None))  # fmt: skip
                hit = self._passing.get(key)
                if hit is not None:
                    self.last_choice = hit
                    self._last, self._passed_at = None, self._seq
                    return native(self, *args, **kwargs)
            algo = chosen = self._rooted_choice(name, signature, args, kwargs)
            if chosen == "mpi" and key is not None and _rememberable(args[0], args[1], op):
                self._passing[key] = self.last_choice
        if chosen == "mpi":
            self._last, self._passed_at = None, self._seq
            return native(self, *args, **kwargs)
        seq = self._seq
        try:
            return method(self, *args, algo=algo, **kwargs)
        except HetcollError as exc:  # refused here: every rank raises (comm.py)
            self._refused(exc, seq)
            raise

    return call


def _rememberable(sendbuf: Any, recvbuf: Any, op: Any) -> bool:
    """Whether a rooted call's choice may be remembered by its buffers' types and sizes: each
    buffer plain (an array, a memoryview: its ``nbytes`` is its size), ``IN_PLACE`` or None,
    and the operator predefined (alive all the program: its ``id`` is never another's)."""
    plain = all(in_place(b) or _quick_size(b) is not None for b in (sendbuf, recvbuf))
    return plain and (op is None or (isinstance(op, MPI.Op) and bool(op.is_predefined)))


class RootedCollectives(Collectives):
    """:class:`~.collectives.Collectives` with the rooted family (see the module
    docstring) and :attr:`last_call`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._last: tuple[str, int | None, str, int] | None = None  # (..., call number)
        self._passed_at = 0  # the engine's call count at the last passed-through call
        self._tree_names: dict[str, bool] = {}  # planner -> whether it plans trees
        super().__init__(*args, **kwargs)

    # -- what ran -------------------------------------------------------------------------------

    @property
    def last_call(self) -> CallRecord | None:
        """The last collective call: a :class:`CallRecord` when hetcoll planned it, None when
        it passed to MPI (or before any call).  The calls of this module name themselves;
        the others (``Bcast``, ``Allreduce``, ...) are named after their schedule; a
        nonblocking or persistent call (``Ireduce``, ``Bcast_init``, ...) is named so once
        it has run (a persistent call passed to MPI: None from its ``*_init`` on)."""
        seq = self._seq
        if self._last is not None and self._last[3] == seq:
            name, root, algorithm, _ = self._last
            return CallRecord(name, algorithm, root)
        sched = self.last_schedule
        if sched is None or self._passed_at == seq:
            return None
        root = None
        if sched.hypercube is None:
            root = self.rank_of.get(sched.root)
        return CallRecord(_NAMES.get(sched.collective, sched.collective), sched.algorithm, root)

    def _passed_to_mpi(self) -> None:
        self._last, self._passed_at = None, self._seq

    def _ran_as(self, name: str) -> None:
        """The call just run was the program's ``name`` (``Ibcast``, ``Reduce_init``, ...:
        a nonblocking or persistent call run by :mod:`.nonblocking`)."""
        record = self.last_call
        if record is not None:
            self._last = (name, record.root, record.algorithm, self._seq)

    def _record(self, name: str, root: int | None = None, algorithm: str | None = None) -> None:
        sched = self.last_schedule
        if algorithm is None:
            algorithm = sched.algorithm if sched is not None else ""
        self._last = (name, root, algorithm, self._seq)

    # -- planning -------------------------------------------------------------------------------

    def _rooted_choice(self, name: str, signature, args, kwargs) -> str:
        """What ``auto`` runs for a rooted call: the planner's ``choose`` for ``Reduce``,
        ``Gather`` and ``Scatter`` of buffers (the size every rank knows alike: a reduce's
        vector, a gather's or scatter's block), ``"mpi"`` for the others (their sizes
        differ per rank or are known at the root only: no model weighs them); a call
        chosen for MPI under emulation runs MPICH's algorithm through the engine
        (:data:`MPICH`)."""
        if name not in ("Reduce", "Gather", "Scatter") or self.size == 1:
            return "mpi"
        if getattr(self.planner, "choose", None) is None:
            return "auto"
        try:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            root = int(a["root"])
            self._node(root, f"{name} root")
            at_root = self.rank == root
            op = a.get("op")
            if name == "Reduce":
                spec = a["recvbuf"] if at_root and in_place(a["sendbuf"]) else a["sendbuf"]
                m = message(spec, writable=False, where=f"{name} sendbuf")
                nbytes, count = m.nbytes, m.count
            elif name == "Gather" and not (at_root and in_place(a["sendbuf"])):
                nbytes = message(a["sendbuf"], writable=False, where="Gather sendbuf").nbytes
            elif name == "Scatter" and not (at_root and in_place(a["recvbuf"])):
                nbytes = message(a["recvbuf"], writable=False, where="Scatter recvbuf").nbytes
            else:  # the root's whole buffer of size blocks
                spec = a["recvbuf"] if name == "Gather" else a["sendbuf"]
                m = message(spec, writable=False, where=name, blocks=self.size)
                nbytes = m.nbytes // self.size
            if name != "Reduce":
                op = count = None
        except (HetcollError, TypeError, KeyError, ValueError):
            return "auto"  # bad arguments: the planned call says what is wrong
        choice = self._choose(name.lower(), nbytes, root=root, op=op, count=count)
        if choice.algorithm != "mpi":
            return choice.algorithm
        return MPICH if self.emulate else "mpi"

    def _planned_rooted(self, collective, root, nbytes, sizes, algo, extra=""):
        """The tree schedule of a rooted call (cached), its plan, program and digest."""
        request = ("rooted", collective, root, nbytes, sizes, algo)

        def plan():
            call = {
                "collective": collective,
                "root": self._node(root, "root"),
                "members": self._everyone(),
                "nbytes": nbytes,
                "sizes": None if sizes is None else dict(zip(self.nodes, sizes, strict=True)),
                "algo": algo,
            }
            return self._planner().rooted(self.platform, call)

        # the tree depends on the sizes, not on the operator or types in ``extra``
        return self._cached((*request, extra), lambda: self._scheduled(request, plan), extra)

    def _blocks(self, collective, root, block, sizes, algo, what, extra="", keep=None):
        """Run a gather (``block``: this rank's bytes) or a scatter (``keep``: the root's
        block buffer in rank order); returns the rank's subtree buffer and the layout."""
        sched, plan, program, digest = self._planned_rooted(
            collective, root, len(block) if sizes is None else 0, sizes, algo, extra
        )
        self.last_schedule = sched
        tree = sched.flows[0].tree
        order, offset, span = block_layout(tree, sched.blocks())
        me = self.node
        buf = self._pool.take(span[me])
        if collective == "gather":
            buf[: sizes_of(sched)[me]] = np.frombuffer(memoryview(block).cast("B"), np.uint8)
        elif keep is not None:  # the root lays the rank-ordered blocks out in preorder
            for src, dst in _preorder_moves(self.nodes, order, offset, sizes_of(sched)):
                buf[dst] = keep[src]
        self._execute(plan, Blocks(program, buf, offset[me]), what, digest)
        return buf, offset, sizes_of(sched)

    def _tree_planner(self, algo: str | None) -> bool:
        if algo in (None, "auto", "mpi", MPICH):
            return False
        known = self._tree_names.get(algo)
        if known is None:  # the planner says (the engine knows no planner)
            trees = getattr(self.planner, "plans_trees", None)
            known = self._tree_names[algo] = trees is not None and bool(trees(algo))
        return known

    def _tree_allreduce(self, state, op, spec, algo: str, what, extra) -> memoryview:
        """Every rank's ``state`` combined with the commutative ``op`` on every rank: the
        reduce to rank 0 then the broadcast of planner ``algo``'s allreduce schedule, one
        engine call (:func:`hetcoll.lowering` chains the two flows: the root's sends wait
        for its last combine).  The result's span, in the call's scratch memory."""
        from ..choice import tree_runs

        sched, plan, program, digest = self._planned_rooted(
            "allreduce", 0, len(state), None, algo, extra
        )
        if not tree_runs(sched):
            raise HetcollError(
                f"Allreduce: planner {algo!r} gives no reduce-then-broadcast tree (one root, "
                "no relays, unsegmented) that the engine runs; use a hypercube planner"
            )
        self.last_schedule = sched
        handler = TreeAllreduce(program, self.node, state, op, *spec, self._pool)
        self._execute(plan, handler, what, digest)
        return memoryview(handler.state)

    def _tree_allgather(self, block, sizes, algo: str, what, extra="") -> list[memoryview]:
        """Every rank's ``block`` (``sizes``: each rank's byte count, rank order; None: the
        same everywhere) on every rank, in rank order: the gather to rank 0 then the
        broadcast of planner ``algo``'s allgather schedule, one engine call (the root's
        sends wait for the receives that bring its blocks).  Views of the call's scratch
        memory."""
        from ..choice import tree_runs

        sched, plan, program, digest = self._planned_rooted(
            "allgather", 0, len(block) if sizes is None else 0, sizes, algo, extra
        )
        if not tree_runs(sched):
            raise HetcollError(
                f"Allgather: planner {algo!r} gives no gather-then-broadcast tree (one root, "
                "no relays) that the engine runs; use a hypercube planner"
            )
        self.last_schedule = sched
        gather, bcast = sched.flows
        have = sched.blocks()
        _, offset, span = block_layout(gather.tree, have)
        me = self.node
        out = self._pool.take(span[gather.tree.root])
        buf = out if me == gather.tree.root else self._pool.take(span[me])
        buf[: have[me]] = np.frombuffer(memoryview(block).cast("B"), np.uint8)
        handler = TreeAllgather(program, buf, offset[me], out, len(bcast.segments()))
        self._execute(plan, handler, what, digest)
        return [memoryview(out)[offset[v] : offset[v] + have[v]] for v in self.nodes]

    def _check_root(self, root: Any, where: str) -> int:
        self._node(root, f"{where} root")
        return int(root)

    # -- Reduce ---------------------------------------------------------------------------------

    @_or_mpi
    def Reduce(
        self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, root: int = 0, *, algo=None
    ) -> None:
        """Combine every rank's ``sendbuf`` with ``op`` into ``recvbuf`` at ``root``
        (mpi4py's ``Comm.Reduce``) over the wrapper's reduce tree: buffer specs, IN_PLACE
        (or None) at the root, any predefined operator or ``MPI.Op.Create``; see the
        module docstring for the order of combination."""
        root = self._check_root(root, "Reduce")
        at_root = self.rank == root
        recv = message(recvbuf, writable=True, where="Reduce recvbuf") if at_root else None
        if at_root and in_place(sendbuf):
            send = recv
        else:
            send = message(sendbuf, writable=False, where="Reduce sendbuf")
        if recv is not None and send.signature() != recv.signature():
            raise HetcollError(
                f"Reduce: sendbuf has {send.count} elements but recvbuf {recv.count} (or other "
                "types); they must match"
            )
        name = op_name(op)
        check_op(op, send, "Reduce")
        if self.size == 1:
            if send is not recv:
                recv.unpack(send.pack())
            self._record("Reduce", root, "none")
            return
        label = Label("Reduce(root={}, {} B, {})", root, send.nbytes, algo or self._rooted_label())
        with self._scratch():
            result = self._reduced(send, op, root, algo, label, f"{send.signature()}/{name}")
            if at_root:
                _write(recv, result)
        self._record("Reduce", root)

    def _reduced(self, send: Message, op, root: int, algo, label, extra) -> memoryview | None:
        """Every rank's ``send`` combined with ``op`` at ``root`` over the reduce tree (a
        non-commutative ``op``: gathered and combined there in rank order): the result's
        span (the datatype's layout, holes included) at the root, None elsewhere.  Call
        inside ``self._scratch()``: the result lives in the call's scratch memory."""
        state = send.span()
        spec = (send.count, send.datatype)
        if not op.is_commutative:
            blocks = self._gathered(bytes(state), root, algo, label, extra)
            if blocks is None:
                return None
            acc = self._pool.take(len(state))
            acc[:] = np.frombuffer(blocks[-1], np.uint8)
            for block in reversed(blocks[:-1]):
                op.Reduce_local([block, *spec], [acc, *spec])
            return memoryview(acc)
        sched, plan, program, digest = self._planned_rooted(
            "reduce", root, len(state), None, algo, extra
        )
        self.last_schedule = sched
        handler = TreeReduce(program, self.node, state, op, *spec, self._pool)
        self._execute(plan, handler, label, digest)
        return memoryview(handler.state) if self.rank == root else None

    @_or_mpi
    def reduce(self, obj: Any, op: Any = MPI.SUM, root: int = 0, *, algo=None) -> Any:
        """Combine every rank's object with ``op`` at ``root`` (mpi4py's ``Comm.reduce``):
        the objects are gathered and reduced there in rank order,
        ``op(...op(op(x0, x1), x2)..., x[n-1])``; None elsewhere."""
        root = self._check_root(root, "reduce")
        if self.size == 1:
            self._record("reduce", root, "none")
            return obj
        items = self._gather_objects(obj, root, algo, "reduce")
        self._record("reduce", root)
        if items is None:
            return None
        result = items[0]
        for item in items[1:]:
            result = op(result, item)
        return result

    # -- Gather ---------------------------------------------------------------------------------

    @_or_mpi
    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0, *, algo=None) -> None:
        """Every rank's ``sendbuf`` into ``recvbuf`` at ``root``, in rank order (mpi4py's
        ``Comm.Gather``): ``recvbuf`` holds ``size`` blocks (``[buf, count, type]`` counts
        one); IN_PLACE (or None) at the root: its block is already in place."""
        root = self._check_root(root, "Gather")
        at_root = self.rank == root
        outs = None
        if at_root:
            recv = message(recvbuf, writable=True, where="Gather recvbuf", blocks=self.size)
            outs = _blocks_of(recv, self.size)
            mine = outs[root].pack() if in_place(sendbuf) else None
        if not at_root or not in_place(sendbuf):
            mine = message(sendbuf, writable=False, where="Gather sendbuf").pack()
        if at_root and len(mine) != outs[0].nbytes:
            raise HetcollError(
                f"Gather: a {len(mine)}-byte block into recvbuf blocks of {outs[0].nbytes}"
            )
        if self.size == 1:
            outs[0].place(mine)
            self._record("Gather", root, "none")
            return
        label = Label("Gather(root={}, {} B, {})", root, len(mine), algo or self._rooted_label())
        with self._scratch():
            buf, offset, _ = self._blocks("gather", root, mine, None, algo, label, "Gather")
            if at_root:
                for r, node in enumerate(self.nodes):
                    outs[r].place(buf[offset[node] : offset[node] + len(mine)])
        self._record("Gather", root)

    @_or_mpi
    def gather(self, obj: Any, root: int = 0, *, algo=None) -> list[Any] | None:
        """Every rank's object, as a list in rank order at ``root`` (mpi4py's
        ``Comm.gather``); None elsewhere."""
        root = self._check_root(root, "gather")
        if self.size == 1:
            self._record("gather", root, "none")
            return [obj]
        items = self._gather_objects(obj, root, algo, "gather")
        self._record("gather", root)
        return items

    def _gathered(self, block: bytes, root: int, algo, label, extra) -> list[memoryview] | None:
        """Every rank's ``block`` (the same size everywhere) at ``root``, in rank order."""
        buf, offset, _ = self._blocks("gather", root, block, None, algo, label, extra)
        if self.rank != root:
            return None
        return [memoryview(buf)[offset[v] : offset[v] + len(block)] for v in self.nodes]

    def _gather_objects(self, obj, root, algo, name) -> list[Any] | None:
        payload = pickle.dumps(obj, protocol=5)
        label = Label("{}(object, root={}, {})", name, root, algo or self._rooted_label())
        with self._scratch():
            head = np.frombuffer(len(payload).to_bytes(8, "little"), np.uint8)
            lengths = [int.from_bytes(h, "little") for h in self._gather_blocks(head, None, label)]
            sched, plan, program, digest = self._planned_rooted(
                "gather", root, 0, tuple(lengths), algo, name
            )
            self.last_schedule = sched
            _, offset, span = block_layout(sched.flows[0].tree, sched.blocks())
            buf = self._pool.take(span[self.node])
            buf[: len(payload)] = np.frombuffer(payload, np.uint8)
            self._execute(plan, Blocks(program, buf, offset[self.node]), label, digest)
            if self.rank != root:
                return None
            return [
                pickle.loads(bytes(buf[offset[v] : offset[v] + n]))
                for v, n in zip(self.nodes, lengths, strict=True)
            ]

    # -- Scatter --------------------------------------------------------------------------------

    @_or_mpi
    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0, *, algo=None) -> None:
        """``root``'s ``sendbuf`` blocks to every rank's ``recvbuf``, in rank order
        (mpi4py's ``Comm.Scatter``): ``sendbuf`` holds ``size`` blocks; IN_PLACE (or None)
        as ``recvbuf`` at the root keeps its block where it is."""
        root = self._check_root(root, "Scatter")
        at_root = self.rank == root
        recv = None
        if not (at_root and in_place(recvbuf)):
            recv = message(recvbuf, writable=True, where="Scatter recvbuf")
        keep = None
        if at_root:
            send = message(sendbuf, writable=False, where="Scatter sendbuf", blocks=self.size)
            parts = _blocks_of(send, self.size)
            block = parts[0].nbytes
            if recv is not None and recv.nbytes != block:
                raise HetcollError(
                    f"Scatter: blocks of {block} bytes into a {recv.nbytes}-byte recvbuf"
                )
            keep = np.concatenate(
                [np.frombuffer(p.pack(), np.uint8) for p in parts] or [np.zeros(0, np.uint8)]
            )
        else:
            block = recv.nbytes
        if self.size == 1:
            if recv is not None:
                recv.unpack(keep[:block])
            self._record("Scatter", root, "none")
            return
        label = Label("Scatter(root={}, {} B, {})", root, block, algo or self._rooted_label())
        with self._scratch():
            buf, offset, _ = self._blocks(
                "scatter", root, bytes(block), None, algo, label, "Scatter", keep
            )
            if recv is not None:
                at = offset[self.node] - offset[self.node]  # own block first in its range
                recv.unpack(memoryview(buf)[at : at + block])
        self._record("Scatter", root)

    @_or_mpi
    def scatter(self, sendobj: Any, root: int = 0, *, algo=None) -> Any:
        """``root``'s ``size`` objects, one per rank in rank order (mpi4py's
        ``Comm.scatter``)."""
        root = self._check_root(root, "scatter")
        if self.rank == root:
            items = list(sendobj) if sendobj is not None else None
            if items is None or len(items) != self.size:
                raise HetcollError(
                    f"scatter: the root must give {self.size} objects, got "
                    f"{None if items is None else len(items)}"
                )
        if self.size == 1:
            self._record("scatter", root, "none")
            return items[0]
        lengths = np.zeros(self.size, dtype=np.int64)
        pickles = []
        if self.rank == root:
            pickles = [pickle.dumps(x, protocol=5) for x in items]
            lengths[:] = [len(p) for p in pickles]
        self.Bcast(lengths, root)
        sizes = tuple(int(n) for n in lengths)
        label = Label("scatter(object, root={}, {})", root, algo or self._rooted_label())
        with self._scratch():
            sched, plan, program, digest = self._planned_rooted(
                "scatter", root, 0, sizes, algo, "scatter"
            )
            self.last_schedule = sched
            order, offset, span = block_layout(sched.flows[0].tree, sched.blocks())
            buf = self._pool.take(span[self.node])
            if self.rank == root:
                by_node = dict(zip(self.nodes, pickles, strict=True))
                for node in order:
                    p = by_node[node]
                    buf[offset[node] : offset[node] + len(p)] = np.frombuffer(p, np.uint8)
            self._execute(plan, Blocks(program, buf, offset[self.node]), label, digest)
            out = pickle.loads(bytes(buf[: sizes[self.rank]]))
        self._record("scatter", root)
        return out

    def _rooted_label(self) -> str:
        return str(getattr(self.planner, "rooted_algo", None) or "planner")


#: mpi4py's name of the call that runs a schedule of each collective
_NAMES = {
    "bcast": "Bcast",
    "multicast": "multicast",
    "multi_multicast": "multicasts",
    "allreduce": "Allreduce",
    "allgather": "Allgather",
    "barrier": "Barrier",
}


def sizes_of(sched) -> dict[str, int]:
    return sched.blocks()


def _preorder_moves(nodes, order, offset, sizes) -> list[tuple[slice, slice]]:
    """Where a scatter's root puts its blocks: ``(from, to)`` byte slices from the blocks
    in rank order (``nodes``, ``sizes[node]`` bytes each) to the tree's preorder block
    buffer (``order``, ``offset``: :func:`hetcoll.lowering.block_layout`)."""
    starts, at = {}, 0
    for node in nodes:
        starts[node] = at
        at += sizes[node]
    return [
        (slice(starts[v], starts[v] + sizes[v]), slice(offset[v], offset[v] + sizes[v]))
        for v in order
    ]


def _blocks_of(m: Message, n: int) -> list[Message]:
    """The ``n`` blocks of a message of ``n`` blocks (an allgather's or gather's buffer)."""
    per = m.count // n
    extent = m.datatype.Get_extent()[1]
    size = m.datatype.Get_size()
    return [
        Message(m.buffer[r * per * extent :], per, m.datatype, per * size, m.contiguous, m.where)
        for r in range(n)
    ]


def _write(recv: Message, result: memoryview) -> None:
    """The reduction's result (the datatype's span) into ``recv``: its type map only."""
    if recv.contiguous:
        recv.data()[:] = result[: recv.nbytes]
        return
    view = Message(result, recv.count, recv.datatype, recv.nbytes, False, recv.where)
    recv.unpack(view.pack())


def _passthrough(name: str):
    method = getattr(MPI.Intracomm, name)

    def call(self, *args, **kwargs):
        self._last, self._passed_at = None, self._seq
        return method(self, *args, **kwargs)

    call.__name__ = name
    call.__doc__ = f"mpi4py's ``{name}``, passed to MPI unchanged (``last_call`` is None)."
    return call


def add_passthroughs(cls: type) -> type:
    """Give ``cls`` a thin method for each MPI collective it does not plan, so that
    :attr:`RootedCollectives.last_call` is None after one (one Python call more than
    MPI's own method)."""
    ours = [k for k in cls.__mro__ if k.__module__.startswith("hetcoll")]
    for name in PASSED:
        if not any(name in vars(k) for k in ours):
            setattr(cls, name, _passthrough(name))
    return cls


def bind_mpi(comm: MPI.Intracomm, keep: tuple[str, ...] = (), forced: tuple[str, ...] = ()) -> None:
    """Make every MPI collective of ``comm`` (:data:`PASSED`) mpi4py's own method: its
    class becomes a variant of its class whose attributes they are, the C-level
    ``MPI.Intracomm`` functions (:func:`~hetcoll.runtime.subcomms.variant`), so a call is
    looked up and made as on a plain communicator, on the same handle, with no Python
    function of hetcoll before it.  It takes mpi4py's arguments only (a per-call ``algo=``
    or ``segment_size=`` is the class's method's:
    ``planned_class(comm).Bcast(comm, ...)``); it leaves ``last_call`` and ``last_choice``
    as they were (the caller sets ``last_choice`` to every call's).  For a wrapper that
    gives every call to MPI anyway (:meth:`hetcoll.hetcomm.Planning.passes_every_call`).
    ``keep``: names not made mpi4py's (those that force a tuning file's MPICH algorithm),
    the planning class's methods but ``forced``, the one-step methods of
    :mod:`hetcoll.runtime.forced` (whose tables the caller sets)."""
    settle(comm, tuple(name for name in PASSED if name not in keep), forced)
