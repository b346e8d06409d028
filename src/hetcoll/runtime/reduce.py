"""Data handlers of the hypercube collectives: allreduce, allgather and barrier.

A hypercube schedule (:attr:`hetcoll.schedule.Schedule.hypercube`) lowers to a program
whose chunks are *states*: ``Chunk.origin`` lists the members whose contributions a state
combines, in cube order (a subcube's state is its lower half's followed by its upper
half's; a partner is followed by its extra).  The executor runs that program unchanged;
the handlers here say what the bytes of each state are (``DEVELOPING.md``, Schedule and
Program):

- a send ships ``held[chunk]``;
- a ``recv`` stores the message as ``held[chunk]``;
- a ``recv_reduce`` of ``chunk`` computes ``held[result] = combine(held[latest], message)``
  into a buffer no send in flight reads (the message's own scratch buffer, or a new one),
  and ``result`` becomes the rank's latest state.

Each rank receives each state at most once, so the received chunk names its
``recv_reduce``: the handler maps it to the op's ``result`` (no executor change needed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import ScheduleError
from ..program import Program
from .executor import DataHandler

__all__ = [
    "BarrierHandler",
    "BufferPool",
    "CubeHandler",
    "GatherHandler",
    "RangeReduceHandler",
    "ReduceHandler",
    "sized_program",
]

_EMPTY = np.zeros(0, dtype=np.uint8)


class BufferPool:
    """Scratch memory reused from call to call.

    New memory costs a page fault per page the first time it is written: receiving 1 MiB
    into a fresh buffer costs about 0.5 ms of faults (256 pages), more than reducing it.
    :meth:`take` hands out a buffer of the size asked (a free one if there is one);
    :meth:`release` makes every buffer handed out since free again (call it once nothing
    reads them: no send in flight, results copied out); :meth:`drop` forgets them instead
    (after an error, when messages may still arrive into them).  At most ``limit`` bytes
    are kept free.
    """

    def __init__(self, limit: int = 64 << 20) -> None:
        self.limit = limit
        self.free: dict[int, list[np.ndarray]] = {}
        self.used: list[np.ndarray] = []

    def take(self, nbytes: int) -> np.ndarray:
        stack = self.free.get(nbytes)
        buf = stack.pop() if stack else np.empty(nbytes, dtype=np.uint8)
        self.used.append(buf)
        return buf

    def release(self) -> None:
        for buf in self.used:
            self.free.setdefault(len(buf), []).append(buf)
        recent = {len(b) for b in self.used}
        self.used = []
        if self.nbytes() > self.limit:  # keep the sizes of the last call only, if they fit
            self.free = {n: bufs for n, bufs in self.free.items() if n in recent}
            if self.nbytes() > self.limit:
                self.free = {}

    def drop(self) -> None:
        self.used = []

    def nbytes(self) -> int:
        """Bytes kept free."""
        return sum(n * len(bufs) for n, bufs in self.free.items())


class CubeHandler(DataHandler):
    """Chunks of a lowered hypercube program, kept by id for one rank and one call.

    Subclasses give :meth:`_scratch` (memory to receive a state into) and :meth:`_combine`.
    After the run, :attr:`state` is the rank's final state and :attr:`origin` the members
    it combines, in cube order.
    """

    def __init__(
        self, program: Program, node: str, contribution: Any, pool: BufferPool | None = None
    ) -> None:
        self.chunks = program.chunks
        self.pool = pool
        self.node = node
        self.result_of: dict[int, int] = {}
        for op in program.ops.get(node, ()):
            if op.kind == "recv_reduce":
                if op.chunk in self.result_of or op.result is None:
                    raise ScheduleError(
                        f"node {node!r}: a hypercube program receives each state once and "
                        f"names its result; chunk {op.chunk} breaks that"
                    )
                self.result_of[op.chunk] = op.result
        (own,) = program.initial[node]
        self._own, self._contribution = own, contribution
        self.restart()

    def restart(self) -> None:
        """Back to the contribution alone, as made: the handler runs its call again (a
        persistent start; the contribution is read again, the scratch memory taken anew)."""
        self.held: dict[int, Any] = {self._own: self._contribution}
        self.latest = self._own
        self._inbox: dict[int, np.ndarray] = {}

    # -- DataHandler ----------------------------------------------------------------------------

    def send_buffer(self, chunk: int) -> memoryview:
        return memoryview(self.held[chunk]).cast("B")

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        buf = self._scratch(chunk)
        self._inbox[chunk] = buf
        return memoryview(buf)

    def received(self, chunk: int, kind: str) -> None:
        message = self._inbox.pop(chunk)
        if kind == "recv":
            self.held[chunk] = message
            self.latest = chunk
            return
        result = self.result_of[chunk]
        self.held[result] = self._combine(self.latest, chunk, message, result)
        self.latest = result

    # -- for subclasses -------------------------------------------------------------------------

    def _scratch(self, chunk: int) -> np.ndarray:
        return self._new(self.chunks[chunk].nbytes)

    def _new(self, nbytes: int) -> np.ndarray:
        """A buffer no one else uses during the call (from the pool, if there is one)."""
        if self.pool is None:
            return np.empty(nbytes, dtype=np.uint8)
        return self.pool.take(nbytes)

    def _combine(self, have: int, got: int, message: np.ndarray, result: int) -> Any:
        raise NotImplementedError

    def _lower_first(self, have: int, result: int) -> bool:
        """Whether the rank's state ``have`` comes first in ``result`` (cube order)."""
        mine = self.chunks[have].origin
        return self.chunks[result].origin[: len(mine)] == mine

    # -- after the run --------------------------------------------------------------------------

    @property
    def state(self) -> Any:
        return self.held[self.latest]

    @property
    def origin(self) -> tuple[str, ...]:
        return self.chunks[self.latest].origin


class ReduceHandler(CubeHandler):
    """Allreduce: a state is ``count`` elements of ``datatype``, combined with
    ``op.Reduce_local`` in cube order (the lower half's state is the left operand).

    ``contribution`` is this rank's bytes (not modified); ``pool`` an optional
    :class:`BufferPool` for the scratch memory.  With the rank's state first,
    the combination is written into the received message's own buffer
    (``Reduce_local(state, message)``); otherwise, for a non-commutative ``op``, into a new
    copy of the state (``Reduce_local(message, copy)``), since a send of the state may still
    be in flight.  A commutative op always takes the first, copy-free, form.
    """

    def __init__(
        self,
        program: Program,
        node: str,
        contribution: Any,
        op: MPI.Op,
        count: int,
        datatype: MPI.Datatype,
        pool: BufferPool | None = None,
    ) -> None:
        super().__init__(program, node, contribution, pool)
        self.op = op
        self.count = int(count)
        self.datatype = datatype
        self.commutative = bool(op.is_commutative)

    def _combine(self, have: int, got: int, message: np.ndarray, result: int) -> Any:
        mine = self.held[have]
        spec = (self.count, self.datatype)
        if self.commutative or self._lower_first(have, result):
            self.op.Reduce_local([mine, *spec], [message, *spec])  # message = mine op message
            return message
        out = self._new(len(message))
        out[:] = np.frombuffer(memoryview(mine).cast("B"), dtype=np.uint8)
        self.op.Reduce_local([message, *spec], [out, *spec])  # out = message op mine
        return out


class GatherHandler(CubeHandler):
    """Allgather: a state is its origin's blocks one after the other (cube order).

    ``sizes`` gives each member's block size in bytes (a program whose chunk sizes are the
    sums of their origin's blocks: :func:`sized_program`); a combination concatenates the
    two states in the result's order.  :meth:`blocks` returns every member's block.
    """

    def __init__(
        self,
        program: Program,
        node: str,
        contribution: Any,
        sizes: Mapping[str, int],
        pool: BufferPool | None = None,
    ) -> None:
        super().__init__(program, node, contribution, pool)
        self.sizes = sizes

    def _combine(self, have: int, got: int, message: np.ndarray, result: int) -> Any:
        mine = np.frombuffer(memoryview(self.held[have]).cast("B"), dtype=np.uint8)
        first, second = (mine, message) if self._lower_first(have, result) else (message, mine)
        out = self._new(len(first) + len(second))
        out[: len(first)] = first
        out[len(first) :] = second
        return out

    def blocks(self) -> dict[str, memoryview]:
        """Each member's block (a view of the final state), by node id."""
        view = memoryview(self.state).cast("B")
        out, at = {}, 0
        for node in self.origin:
            out[node] = view[at : at + self.sizes[node]]
            at += self.sizes[node]
        return out


class BarrierHandler(CubeHandler):
    """Barrier: every message is empty; completing the program is the synchronisation."""

    def __init__(self, program: Program, node: str) -> None:
        super().__init__(program, node, _EMPTY)

    def _scratch(self, chunk: int) -> np.ndarray:
        return _EMPTY

    def _combine(self, have: int, got: int, message: np.ndarray, result: int) -> Any:
        return _EMPTY


class RangeReduceHandler(DataHandler):
    """An allreduce whose chunks are byte ranges of each rank's vector (MPI's own
    reduce-scatter + allgather, :mod:`hetcoll.mpich`): a send ships ``work``'s bytes of the
    chunk, a ``recv`` writes them there, a ``recv_reduce`` receives into scratch memory and
    combines it into them (``Reduce_local(message, work[range])``, commutative ``op``).

    Safe without copies because the program's steps are send-receive pairs that wait for
    the previous step: while a range is combined or written, the only send in flight is
    the same step's, of another range.  ``work`` (uint8) starts as the rank's contribution
    and ends as the result; ``itemsize`` is the extent of one element of ``datatype``.
    """

    def __init__(
        self,
        program: Program,
        work: np.ndarray,
        op: MPI.Op,
        datatype: MPI.Datatype,
        itemsize: int,
        pool: BufferPool | None = None,
    ) -> None:
        self.chunks = program.chunks
        self.work = work
        self.op, self.datatype, self.itemsize = op, datatype, int(itemsize)
        self.pool = pool
        self._inbox: dict[int, np.ndarray] = {}

    def _range(self, chunk: int) -> np.ndarray:
        c = self.chunks[chunk]
        return self.work[c.offset : c.offset + c.nbytes]

    def send_buffer(self, chunk: int) -> memoryview:
        return memoryview(self._range(chunk))

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        if kind == "recv":
            return memoryview(self._range(chunk))
        n = self.chunks[chunk].nbytes
        buf = self.pool.take(n) if self.pool is not None else np.empty(n, dtype=np.uint8)
        self._inbox[chunk] = buf
        return memoryview(buf)

    def received(self, chunk: int, kind: str) -> None:
        if kind == "recv":
            return
        message = self._inbox.pop(chunk)
        target = self._range(chunk)
        count = len(target) // self.itemsize
        self.op.Reduce_local([message, count, self.datatype], [target, count, self.datatype])


def sized_program(program: Program, sizes: Mapping[str, int]) -> Program:
    """``program`` with each state's size the sum of its origin's block ``sizes`` (bytes):
    an allgather of blocks of different sizes (pickled objects)."""
    from dataclasses import replace

    chunks = tuple(replace(c, nbytes=sum(sizes[v] for v in c.origin)) for c in program.chunks)
    return Program(program.ops, chunks, program.initial, program.reduces)
