"""The v-variants and reduce-scatter on the engine: ``Gatherv``, ``Scatterv``,
``Allgatherv``, ``Reduce_scatter_block`` and ``Reduce_scatter``.

- ``Gatherv`` and ``Scatterv`` run the gather or scatter tree of the wrapper's
  ``rooted_algo`` (:mod:`.rooted`) with a block per rank of its own size.  Only the root
  knows the counts (MPI's rule), but every rank of a tree must know the sizes of the
  blocks its subtree moves, so the root first broadcasts the byte size of each rank's
  block (``size`` 8-byte integers, with the wrapper's ``Bcast``).  A rank whose own count
  disagrees with the root's sends or receives nothing wrong: its call's digest differs,
  so the call raises :class:`~hetcoll.errors.MismatchError` (on every rank with
  ``check="always"``).
- ``Allgatherv`` runs the hypercube allgather of ``cube_algo`` with each rank's block of
  its own size (every rank knows the counts), chosen as ``Allgather`` is (under ``auto``
  it may be MPI's own).
- ``allgather`` of objects: a fixed block per rank chosen as an ``Allgather`` of it is,
  then, for long pickles, the rest chosen as an ``Allgatherv`` of those lengths is.
- ``Reduce_scatter_block`` and ``Reduce_scatter`` reduce the whole vector to rank 0 over
  the reduce tree (a non-commutative operator: gathered and combined there in rank order,
  as ``Reduce`` does) and scatter its blocks over the scatter tree of the same planner;
  every rank knows the counts, so no sizes travel first.  (The schedule IR's
  ``reduce_scatter`` is the same composition, planned as one schedule.)

Buffer specs are read by mpi4py's rules for vector messages (its ``message_vector``):
``[buf, counts, displs, type]``, ``[buf, (counts, displs), type]``, ``[buf, counts,
type]``, ``[buf, (counts, displs)]``, ``[buf, counts]``, ``[buf, type]`` and ``buf``;
counts may be one integer (every block), displacements one integer (a stride) or absent
(blocks one after the other); without counts the buffer's elements are split into
``size`` blocks, the first ones one element longer.  Displacements count extents of the
datatype, whose type map is honoured (packed and unpacked as :mod:`.buffers` does).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError
from .buffers import (
    Message,
    _contiguous,
    _datatype,
    _infer,
    check_op,
    in_place,
    message,
    op_name,
    raw,
)
from .collectives import INLINE, _plain_key
from .notices import refusing
from .perroot import PerRootCollectives
from .rank_ops import Label
from .rooted import _or_mpi, _write

__all__ = ["Vector", "VectorCollectives", "vector"]


@dataclass(frozen=True)
class Vector:
    """A parsed vector buffer spec: ``counts[r]`` elements of ``datatype`` at
    ``displs[r]`` extents into ``buffer`` for each block ``r``."""

    buffer: memoryview
    counts: tuple[int, ...]
    displs: tuple[int, ...]
    datatype: MPI.Datatype
    where: str

    def block(self, r: int) -> Message:
        """Block ``r`` as a :class:`~.buffers.Message`."""
        extent = self.datatype.Get_extent()[1]
        n = self.counts[r]
        view = self.buffer[self.displs[r] * extent :] if n else self.buffer[:0]
        return Message(
            view,
            n,
            self.datatype,
            n * self.datatype.Get_size(),
            _contiguous(self.datatype),
            self.where,
        )


def vector(spec: Any, blocks: int, *, writable: bool, where: str) -> Vector:
    """Parse a vector buffer spec of ``blocks`` blocks as mpi4py's ``message_vector``
    (see the module docstring).  :class:`~hetcoll.errors.HetcollError` naming ``where``
    for what mpi4py rejects and for a block outside the buffer."""
    buf, counts, displs, datatype = spec, None, None, None
    if isinstance(spec, list | tuple):
        if len(spec) == 2:
            buf, counts = spec
            if isinstance(counts, MPI.Datatype | str):
                counts, datatype = None, counts
            elif isinstance(counts, tuple):
                counts, displs = counts
        elif len(spec) == 3:
            buf, counts, datatype = spec
            if isinstance(counts, tuple):
                counts, displs = counts
        elif len(spec) == 4:
            buf, counts, displs, datatype = spec
        else:
            raise HetcollError(f"{where}: a vector buffer spec has 2 to 4 items")
    if buf is None or buf is MPI.BOTTOM:
        raise HetcollError(f"{where}: MPI.BOTTOM (absolute addresses) is not supported")
    view = raw(buf, writable, where)
    datatype = _infer(buf, where) if datatype is None else _datatype(datatype, where)
    extent = datatype.Get_extent()[1]
    if counts is None:
        if len(view) and (extent <= 0 or len(view) % extent):
            raise HetcollError(
                f"{where}: {len(view)} bytes are not a whole number of elements of {extent} bytes"
            )
        total = len(view) // extent if len(view) else 0
        counts = [total // blocks + (total % blocks > i) for i in range(blocks)]
    elif isinstance(counts, int | np.integer):
        counts = [int(counts)] * blocks
    counts = _ints(counts, blocks, where, "counts")
    if displs is None:
        displs = [sum(counts[:i]) for i in range(blocks)]
    elif isinstance(displs, int | np.integer):
        displs = [int(displs) * i for i in range(blocks)]
    displs = _ints(displs, blocks, where, "displacements")
    true_lb, true_extent = datatype.Get_true_extent()
    for r, (n, d) in enumerate(zip(counts, displs, strict=True)):
        if n < 0:
            raise HetcollError(f"{where}: negative count {n} for block {r}")
        if n and (d < 0 or d * extent + true_lb < 0):
            raise HetcollError(f"{where}: displacement {d} of block {r} out of bounds")
        if n and d * extent + true_lb + (n - 1) * extent + true_extent > len(view):
            raise HetcollError(
                f"{where}: block {r} ({n} elements at displacement {d}) ends past the "
                f"buffer's {len(view)} bytes"
            )
    return Vector(view, tuple(counts), tuple(displs), datatype, where)


def _ints(values: Any, blocks: int, where: str, what: str) -> list[int]:
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        raise HetcollError(f"{where}: {what} must be integers, got {values!r}") from None
    if len(out) != blocks:
        raise HetcollError(f"{where}: {len(out)} {what} for {blocks} ranks")
    return out


class VectorCollectives(PerRootCollectives):
    """:class:`~.rooted.RootedCollectives` with the v-variants and reduce-scatter (see
    the module docstring)."""

    def _root_sizes(self, sizes: list[int] | None, root: int) -> tuple[int, ...]:
        """The root's block sizes (bytes per rank), broadcast to every rank."""
        out = np.zeros(self.size, dtype=np.int64)
        if sizes is not None:
            out[:] = sizes
        self.Bcast(out, root)
        return tuple(int(x) for x in out)

    # -- Gatherv ------------------------------------------------------------------------------

    @_or_mpi
    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0, *, algo=None) -> None:
        """Every rank's ``sendbuf`` into its block of ``recvbuf`` at ``root`` (mpi4py's
        ``Comm.Gatherv``: counts and displacements per rank, a vector buffer spec); IN_PLACE
        (or None) at the root: its block is already in place."""
        root = self._check_root(root, "Gatherv")
        at_root = self.rank == root
        outs = None
        if at_root:
            vec = vector(recvbuf, self.size, writable=True, where="Gatherv recvbuf")
            outs = [vec.block(r) for r in range(self.size)]
            if in_place(sendbuf):
                mine = outs[root].pack()
            else:
                mine = message(sendbuf, writable=False, where="Gatherv sendbuf").pack()
                if len(mine) != outs[root].nbytes:
                    raise HetcollError(
                        f"Gatherv: the root's {len(mine)}-byte sendbuf into its "
                        f"{outs[root].nbytes}-byte block of recvbuf"
                    )
        else:
            mine = message(sendbuf, writable=False, where="Gatherv sendbuf").pack()
        if self.size == 1:
            if not in_place(sendbuf):
                outs[0].place(mine)
            self._record("Gatherv", root, "none")
            return
        sizes = self._root_sizes([o.nbytes for o in outs] if at_root else None, root)
        mine, extra = _fitted(mine, sizes[self.rank], "Gatherv")
        label = Label("Gatherv(root={}, {} B, {})", root, sum(sizes), algo or self._rooted_label())
        with self._scratch():
            buf, offset, _ = self._blocks("gather", root, mine, sizes, algo, label, extra)
            if at_root:
                for r, node in enumerate(self.nodes):
                    if r != root or not in_place(sendbuf):
                        outs[r].place(buf[offset[node] : offset[node] + sizes[r]])
        self._record("Gatherv", root)

    # -- Scatterv -----------------------------------------------------------------------------

    @_or_mpi
    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0, *, algo=None) -> None:
        """``root``'s blocks of ``sendbuf`` to every rank's ``recvbuf`` (mpi4py's
        ``Comm.Scatterv``: counts and displacements per rank); IN_PLACE (or None) as
        ``recvbuf`` at the root keeps its block where it is."""
        root = self._check_root(root, "Scatterv")
        at_root = self.rank == root
        recv = None
        if not (at_root and in_place(recvbuf)):
            recv = message(recvbuf, writable=True, where="Scatterv recvbuf")
        keep = sizes = None
        if at_root:
            vec = vector(sendbuf, self.size, writable=False, where="Scatterv sendbuf")
            parts = [vec.block(r) for r in range(self.size)]
            sizes = [p.nbytes for p in parts]
            if recv is not None and recv.nbytes != sizes[root]:
                raise HetcollError(
                    f"Scatterv: the root's {sizes[root]}-byte block into a {recv.nbytes}-byte "
                    "recvbuf"
                )
            keep = _concat(p.pack() for p in parts)
        if self.size == 1:
            if recv is not None:
                recv.unpack(keep[: sizes[0]])
            self._record("Scatterv", root, "none")
            return
        sizes = self._root_sizes(sizes, root)
        want = sizes[self.rank] if recv is None else recv.nbytes
        extra = _agreed("Scatterv", want, sizes[self.rank])
        label = Label("Scatterv(root={}, {} B, {})", root, sum(sizes), algo or self._rooted_label())
        with self._scratch():
            buf, _, _ = self._blocks("scatter", root, b"", sizes, algo, label, extra, keep)
            _check_fit(want, sizes[self.rank], "Scatterv recvbuf")
            if recv is not None:
                recv.unpack(memoryview(buf)[: sizes[self.rank]])
        self._record("Scatterv", root)

    # -- Allgatherv ---------------------------------------------------------------------------

    def Allgatherv(self, sendbuf: Any, recvbuf: Any, *, algo=None) -> None:
        """Every rank's ``sendbuf`` into its block of every rank's ``recvbuf`` (mpi4py's
        ``Comm.Allgatherv``: counts and displacements per rank) over the hypercube of
        ``cube_algo`` (or the gather and broadcast trees of a tree planner, as
        ``Allgather``), each rank's block of its own size; IN_PLACE (or None): each rank's
        block is already in place.  Chosen as ``Allgather`` is (``auto``: MPI's own unless
        a plan is predicted faster; a repeated call of plain buffers given to MPI is looked
        up before they are parsed)."""
        if algo is None:  # a repeated call MPI keeps, as without hetcoll (see Bcast)
            if sendbuf is None or sendbuf is MPI.IN_PLACE:
                send = "in place"
            else:
                send = getattr(sendbuf, "nbytes", None)
            hit = self._passing.get(("allgatherv", send, getattr(recvbuf, "nbytes", None)))
            if hit is not None:
                self.last_choice, call = hit
                self._last_trace = self._fast_trace = self.last_schedule = None
                self._last, self._passed_at = None, self._seq
                call(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf)
                return
        self._allgatherv_buffers(sendbuf, recvbuf, algo)

    @refusing
    def _allgatherv_buffers(self, sendbuf: Any, recvbuf: Any, algo) -> None:
        """:meth:`Allgatherv` past its lookup of a repeated call given to MPI."""
        vec = vector(recvbuf, self.size, writable=True, where="Allgatherv recvbuf")
        outs = [vec.block(r) for r in range(self.size)]
        if in_place(sendbuf):
            send = outs[self.rank].pack()
        else:
            send = message(sendbuf, writable=False, where="Allgatherv sendbuf").pack()
            if len(send) != outs[self.rank].nbytes:
                raise HetcollError(
                    f"Allgatherv: a {len(send)}-byte sendbuf into this rank's "
                    f"{outs[self.rank].nbytes}-byte block of recvbuf"
                )
        if self.size == 1:
            if not in_place(sendbuf):
                outs[0].place(send)
            self._record("Allgatherv", None, "none")
            return
        sizes = [o.nbytes for o in outs]
        choice = self._choose("allgather", max(sizes), algo=algo)
        key = _plain_key("allgatherv", sendbuf, recvbuf, algo)
        if self._passed(key, choice, self.base.Allgatherv):
            self._last, self._passed_at = None, self._seq
            self.base.Allgatherv(MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf)
            return
        cube = None if choice.algorithm == "mpi" else choice.algorithm  # emulated: a plan
        what = f"Allgatherv({sum(sizes)} B, {cube or self._label(algo, cube=True)})"
        with self._scratch():
            blocks = self._gather_sized(send, dict(zip(self.nodes, sizes, strict=True)), cube, what)
            for r, (out, block) in enumerate(zip(outs, blocks, strict=True)):
                if r != self.rank or not in_place(sendbuf):
                    out.place(block)
        self._record("Allgatherv", 0 if self._tree_planner(cube) else None)  # a tree's root

    def allgather(self, obj: Any, *, algo=None) -> list[Any]:
        """Every rank's Python object, as a list in rank order (mpi4py's ``Comm.allgather``).

        Pickled (protocol 5).  A fixed block per rank travels first, chosen and run as an
        ``Allgather`` of that block is (``auto``: MPI's own ``allgather`` of the objects
        unless a plan, tree or hypercube, is predicted faster): an 8-byte length and the
        first :data:`INLINE` bytes of the pickle; only when some pickle is longer, the rest
        of each follows as an ``Allgatherv`` of those lengths (chosen as one is).  Small
        objects thus cost one allgather.  ``last_call`` names the first one's plan.
        """
        if algo is None:  # a repeated call MPI keeps, as without hetcoll (see Bcast)
            hit = self._passing.get("objects")
            if hit is not None:
                self.last_choice, _ = hit
                self._last_trace = self._fast_trace = self.last_schedule = None
                self._last, self._passed_at = None, self._seq
                return self.base.allgather(obj)
        if self.size == 1:
            return [obj]
        choice = self._choose("allgather", 8 + INLINE, algo=algo)
        if self._passed("objects" if algo is None else None, choice):
            self._last, self._passed_at = None, self._seq
            return self.base.allgather(obj)
        payload = pickle.dumps(obj, protocol=5)
        head = np.zeros(8 + INLINE, dtype=np.uint8)
        head[:8] = np.frombuffer(len(payload).to_bytes(8, "little"), dtype=np.uint8)
        first = min(len(payload), INLINE)
        head[8 : 8 + first] = np.frombuffer(payload, dtype=np.uint8, count=first)
        what = f"allgather(object, {choice.algorithm or self._label(algo, cube=True)})"
        with self._scratch():
            heads = self._allgathered(memoryview(head), choice.algorithm, what)
            ran = self.last_call
            lengths = [int.from_bytes(h[:8], "little") for h in heads]
            tails: list[Any] = [b""] * self.size
            if max(lengths) > INLINE:
                tails = self._tails(memoryview(payload)[first:], lengths, algo, what)
            got = [
                pickle.loads(bytes(h[8 : 8 + min(n, INLINE)]) + bytes(t))
                for h, n, t in zip(heads, lengths, tails, strict=True)
            ]
        if ran is not None:
            self._record("allgather", ran.root, ran.algorithm)
        return got

    def _tails(self, tail, lengths: list[int], algo, what) -> list[Any]:
        """The rest of every rank's pickle past :data:`INLINE` bytes (``lengths``: each
        pickle's), in rank order: what ``Allgatherv`` of these blocks would run."""
        sizes = [max(n - INLINE, 0) for n in lengths]
        choice = self._choose("allgather", max(sizes), algo=algo)
        if self._passed(None, choice):  # MPI's own, natively
            displs = np.cumsum([0, *sizes[:-1]]).tolist()
            out = self._pool.take(sum(sizes))
            self.base.Allgatherv([tail, MPI.BYTE], [out, (sizes, displs), MPI.BYTE])
            return [memoryview(out)[d : d + n] for d, n in zip(displs, sizes, strict=True)]
        cube = None if choice.algorithm == "mpi" else choice.algorithm  # emulated: a plan
        return self._gather_sized(tail, dict(zip(self.nodes, sizes, strict=True)), cube, what)

    # -- Reduce_scatter -----------------------------------------------------------------------

    @_or_mpi
    def Reduce_scatter_block(
        self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, *, algo=None
    ) -> None:
        """Combine every rank's ``sendbuf`` (``size`` blocks of ``recvbuf``'s count) with
        ``op`` and leave block ``r`` of the result in rank ``r``'s ``recvbuf`` (mpi4py's
        ``Comm.Reduce_scatter_block``): a reduce to rank 0, then a scatter.  IN_PLACE (or
        None): the input is ``recvbuf`` (``size`` blocks), the result its first block."""
        send, recv, per = self._scattered_parts(sendbuf, recvbuf)
        self._reduce_scatter(send, recv, [per] * self.size, op, algo, "Reduce_scatter_block")

    def _scattered_parts(self, sendbuf: Any, recvbuf: Any) -> tuple[Message, Message, int]:
        """A ``Reduce_scatter_block``'s input, this rank's output and the elements per block."""
        where = "Reduce_scatter_block"
        if in_place(sendbuf):
            send = message(recvbuf, writable=True, where=f"{where} recvbuf", blocks=self.size)
            per = send.count // self.size
            return send, _first(send, per), per
        recv = message(recvbuf, writable=True, where=f"{where} recvbuf")
        send = message(sendbuf, writable=False, where=f"{where} sendbuf", blocks=self.size)
        per = send.count // self.size
        if per != recv.count or _sig(send) != _sig(recv):
            raise HetcollError(
                f"{where}: sendbuf has {self.size} blocks of {per} elements but recvbuf "
                f"{recv.count} (or other types); they must match"
            )
        return send, recv, per

    @_or_mpi
    def Reduce_scatter(
        self,
        sendbuf: Any,
        recvbuf: Any,
        recvcounts: Any = None,
        op: MPI.Op = MPI.SUM,
        *,
        algo=None,
    ) -> None:
        """Combine every rank's ``sendbuf`` with ``op`` and leave ``recvcounts[r]``
        elements of the result (those after the first ``r`` blocks) in rank ``r``'s
        ``recvbuf`` (mpi4py's ``Comm.Reduce_scatter``; ``recvcounts`` None: every rank's
        ``recvbuf`` count, gathered as mpi4py does): a reduce to rank 0, then a scatter.
        IN_PLACE (or None, ``recvcounts`` required): the input is ``recvbuf``, the result
        its first ``recvcounts[rank]`` elements."""
        where = "Reduce_scatter"
        recv = message(recvbuf, writable=True, where=f"{where} recvbuf")
        if in_place(sendbuf):
            if recvcounts is None:
                raise HetcollError(f"{where}: with IN_PLACE, recvcounts must be given")
            counts = _ints(recvcounts, self.size, where, "recvcounts")
            if recv.count != sum(counts):
                raise HetcollError(
                    f"{where}: recvbuf has {recv.count} elements, sum(recvcounts) is {sum(counts)}"
                )
            send, recv = recv, _first(recv, counts[self.rank])
        else:
            send = message(sendbuf, writable=False, where=f"{where} sendbuf")
            if recvcounts is None:
                counts = [int(c) for c in self.base.allgather(recv.count)]
            else:
                counts = _ints(recvcounts, self.size, where, "recvcounts")
            if send.count != sum(counts) or recv.count != counts[self.rank]:
                raise HetcollError(
                    f"{where}: sendbuf has {send.count} elements and recvbuf {recv.count}; "
                    f"recvcounts {counts} need {sum(counts)} and {counts[self.rank]}"
                )
            if _sig(send) != _sig(recv):
                raise HetcollError(f"{where}: sendbuf and recvbuf have other datatypes")
        self._reduce_scatter(send, recv, counts, op, algo, where)

    def _reduce_scatter(self, send: Message, recv: Message, counts, op, algo, name) -> None:
        """``send`` of every rank reduced with ``op`` to rank 0, then ``counts[r]``
        elements to rank ``r``'s ``recv``."""
        check_op(op, send, name)
        if self.size == 1:
            if recv.buffer is not send.buffer or recv.count != send.count:
                recv.unpack(_first(send, counts[0]).pack())
            self._record(name, None, "none")
            return
        dt = send.datatype
        size = dt.Get_size()
        sizes = tuple(c * size for c in counts)
        extra = _reduce_scatter_key(send, op, counts)
        per_root = algo if algo is not None else self._default_per_root()
        if self._per_root_planner(per_root):
            if op.is_commutative:
                label = Label("{}({} B, {})", name, send.nbytes, per_root)
                with self._scratch():
                    result = self._per_root_reduce_scatter(
                        _spans(send, counts), op, dt, counts, per_root, label, extra
                    )
                    _write(recv, result)
                self._record(name, None, per_root)
                return
            algo = None  # combined in rank order at rank 0, on the rooted trees
        label = Label("{}({} B, {})", name, send.nbytes, algo or self._rooted_label())
        # Both halves planned (cached) before either runs: a persistent call's *_init,
        # which stops at the first run, plans the whole call (its starts plan nothing).
        # The scatter's digest follows from the reduce's (the same counts, types and
        # operator), so the *_init's agreement on the reduce covers it.
        self._planned_rooted("scatter", 0, 0, sizes, algo, extra)
        with self._scratch():
            result = self._reduced(send, op, 0, algo, label, extra)
            keep = None
            if result is not None:
                whole = Message(result, send.count, dt, send.nbytes, send.contiguous, name)
                keep = np.frombuffer(whole.pack(), np.uint8)
            buf, _, _ = self._blocks("scatter", 0, b"", sizes, algo, label, extra, keep)
            recv.unpack(memoryview(buf)[: sizes[self.rank]])
        self._record(name, None)


def _reduce_scatter_key(send: Message, op: MPI.Op, counts) -> str:
    """What a reduce-scatter's plans are cached by besides their sizes (the signature, the
    operator, the counts)."""
    return f"{_sig(send)}/{op_name(op)}/{counts}"


def _first(m: Message, count: int) -> Message:
    """The first ``count`` elements of ``m``."""
    return Message(
        m.buffer, count, m.datatype, count * m.datatype.Get_size(), m.contiguous, m.where
    )


def _spans(m: Message, counts) -> list[memoryview]:
    """The span of each block of ``m`` (``counts[r]`` elements after the first ``r``
    blocks), holes included."""
    extent = m.datatype.Get_extent()[1]
    size = m.datatype.Get_size()
    out, at = [], 0
    for c in counts:
        block = Message(m.buffer[at * extent :], c, m.datatype, c * size, m.contiguous, m.where)
        out.append(block.span())
        at += c
    return out


def _sig(m: Message) -> str:
    """The type signature of one element (counts are checked apart)."""
    from .buffers import signature

    return signature(m.datatype, 1)


def _concat(parts) -> np.ndarray:
    return np.concatenate([np.frombuffer(p, np.uint8) for p in parts] or [np.zeros(0, np.uint8)])


def _agreed(name: str, have: int, want: int) -> str:
    """The call's digest text: another one when this rank's block (``have`` bytes) is not
    the root's size for it (``want``), so that the ranks' digests disagree and the call
    raises :class:`~hetcoll.errors.MismatchError` instead of moving a wrong block."""
    return name if have == want else f"{name}/{have} B, not {want} B"


def _fitted(mine: Any, want: int, name: str) -> tuple[Any, str]:
    """``mine`` cut or zero-padded to ``want`` bytes (what the tree's block buffer holds)
    and the call's digest text (:func:`_agreed`)."""
    if len(mine) == want:
        return mine, name
    fixed = np.zeros(want, np.uint8)
    n = min(want, len(mine))
    fixed[:n] = np.frombuffer(mine, np.uint8)[:n]
    return memoryview(fixed), _agreed(name, len(mine), want)


def _check_fit(have: int, want: int, where: str) -> None:
    if have != want:
        raise HetcollError(f"{where}: a {want}-byte block into a {have}-byte buffer")
