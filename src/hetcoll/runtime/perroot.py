"""Per-root schedules on the engine: ``Allgather``, ``Reduce_scatter(_block)`` and
``Allreduce`` over every member's block moving on trees of its own (:mod:`hetcoll.perroot`,
the form of the bandwidth-optimal packings of Zhao et al. 2024, planner ``forest``).

The planner lays the blocks out in member order (:meth:`~hetcoll.schedule.Schedule.
block_offsets`): each rank's block goes to its node's place in one work buffer and comes
back from there, so a communicator whose ranks are the platform's nodes in another order
moves the same bytes.  Reductions run on byte ranges of the work buffer whose bounds are
multiples of the datatype's extent (the planner's ``align``): a receive of a partial
result goes to scratch memory and is combined into its range with ``op.Reduce_local``,
commutative operators only (each block is combined in its tree's order, not rank order).
Every rank ends with the bits its block's owner computed: float results are the same on
every rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError
from ..program import Program
from .rank_ops import ByteRanges
from .reduce import BufferPool, RangeReduceHandler
from .rooted import MPICH, RootedCollectives

__all__ = ["PerRootCollectives", "PerRootReduce"]


class PerRootReduce(RangeReduceHandler):
    """:class:`~.reduce.RangeReduceHandler` for a per-root reduce-scatter or allreduce: a
    received chunk combining every member (an owner's result, broadcast back) is written
    into its range, any other (a subtree's partial result) is combined into it.  Told apart
    by origin, not by the op's kind: an engine's one-receive path names every receive
    ``recv``.

    With ``node`` (the rank's node), the *swaps* of an exchange flow
    (:class:`hetcoll.patterns.Flow`): a partial result the rank sends to a peer that sends
    it one of the same range.  The rank sends a copy of its range taken before anything is
    added to it (its own partial may still be in flight while the peers' arrive), keeps
    the peers' partials apart until all have come, then writes their combination, with its
    own, in the order of their origins (sorted member ids): every owner combines the same
    partials in the same order, so a float result has the same bits on every rank."""

    def __init__(
        self,
        program: Program,
        work: np.ndarray,
        op: MPI.Op,
        datatype: MPI.Datatype,
        itemsize: int,
        members: int,
        pool: BufferPool | None = None,
        node: str | None = None,
    ) -> None:
        super().__init__(program, work, op, datatype, itemsize, pool)
        self.members = members
        self._out: dict[int, tuple[int, int]] = {}  # a swapped partial sent -> its range
        self._in: dict[int, tuple[int, int]] = {}  # a peer's swapped partial -> its range
        self._own: dict[tuple[int, int], int] = {}  # a range -> the rank's partial's chunk
        self._expect: dict[tuple[int, int], int] = {}  # a range -> the peers' partials
        if node is not None:
            self._swaps(program.ops.get(node, ()))
        self._copies: dict[tuple[int, int], np.ndarray] = {}
        self._parts: dict[tuple[int, int], list[tuple[tuple[str, ...], np.ndarray]]] = {}

    def _swaps(self, ops) -> None:
        """Find the rank's swaps among its ``ops`` (class docstring)."""
        sent: dict[tuple[int, int, str], int] = {}
        for o in ops:
            c = self.chunks[o.chunk]
            if o.kind == "send" and len(c.origin) != self.members:
                sent[(c.offset, c.nbytes, o.peer)] = o.chunk
        for o in ops:
            c = self.chunks[o.chunk]
            mine = sent.get((c.offset, c.nbytes, o.peer))
            if o.kind == "send" or mine is None or len(c.origin) == self.members:
                continue
            key = (c.offset, c.nbytes)
            self._in[o.chunk] = self._out[mine] = key
            self._own[key] = mine
            self._expect[key] = self._expect.get(key, 0) + 1

    def _result(self, chunk: int) -> bool:
        return len(self.chunks[chunk].origin) == self.members

    def _copy(self, key: tuple[int, int]) -> np.ndarray:
        """The rank's partial of range ``key`` as it stands before the peers' are added."""
        got = self._copies.get(key)
        if got is None:
            lo, n = key
            got = self.pool.take(n) if self.pool is not None else np.empty(n, dtype=np.uint8)
            got[:] = self.work[lo : lo + n]
            self._copies[key] = got
        return got

    def send_buffer(self, chunk: int) -> memoryview:
        key = self._out.get(chunk)
        if key is None:
            return super().send_buffer(chunk)
        return memoryview(self._copy(key))

    def recv_buffer(self, chunk: int, kind: str) -> memoryview:
        if chunk in self._in:
            return super().recv_buffer(chunk, "recv_reduce")
        return super().recv_buffer(chunk, "recv" if self._result(chunk) else "recv_reduce")

    def received(self, chunk: int, kind: str) -> None:
        key = self._in.get(chunk)
        if key is None:
            super().received(chunk, "recv" if self._result(chunk) else "recv_reduce")
            return
        parts = self._parts.setdefault(key, [])
        parts.append((self.chunks[chunk].origin, self._inbox.pop(chunk)))
        if len(parts) < self._expect[key]:
            return
        mine = self._copy(key)  # taken before the range changes: a send may still read it
        parts.append((self.chunks[self._own[key]].origin, mine))
        parts.sort(key=lambda part: part[0])
        lo, n = key
        target = self.work[lo : lo + n]
        target[:] = parts[0][1]
        count = n // self.itemsize
        for _, message in parts[1:]:  # target = message op target, in origin order
            self.op.Reduce_local([message, count, self.datatype], [target, count, self.datatype])


class PerRootCollectives(RootedCollectives):
    """:class:`~.rooted.RootedCollectives` with the per-root runs of ``Allgather``,
    ``Allreduce`` and ``Reduce_scatter(_block)`` (module docstring), for a planner that the
    injected planner's ``plans_per_root`` names (the engine knows no planner)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._per_root_names: dict[str, bool] = {}  # planner -> whether it plans per root
        super().__init__(*args, **kwargs)

    def _per_root_planner(self, algo: str | None) -> bool:
        if algo in (None, "auto", "mpi", MPICH):
            return False
        known = self._per_root_names.get(algo)
        if known is None:
            asks = getattr(self.planner, "plans_per_root", None)
            known = self._per_root_names[algo] = asks is not None and bool(asks(algo))
        return known

    def _default_per_root(self) -> str | None:
        """The wrapper's per-root planner (its ``cube_algo`` when it names one), else None."""
        algo = getattr(self.planner, "cube_algo", None)
        return algo if self._per_root_planner(algo) else None

    def _planned_per_root(self, collective, nbytes, sizes, align, algo, extra=""):
        """The per-root schedule of a call (cached), its plan, program and digest:
        ``nbytes`` each member's block (an allreduce's vector), ``sizes`` the blocks by
        rank (or None), ``align`` the bytes every share and segment is a multiple of."""
        request = ("per-root", collective, nbytes, sizes, align, algo)

        def build():
            call = {
                "collective": collective,
                "nbytes": nbytes,
                "sizes": None if sizes is None else dict(zip(self.nodes, sizes, strict=True)),
                "align": align,
                "algo": algo,
                "members": self._everyone(),
            }
            sched = self._planner().per_root(self.platform, call)
            if sched.collective != collective or sched.hypercube is not None:
                raise HetcollError(f"{algo}: planned a {sched.collective}, not a {collective}")
            relayed = next((p for f in sched.flows for p in f.relays), None)
            if relayed is not None:  # a relay would combine or keep bytes not its own
                raise HetcollError(
                    f"{algo}: its schedule relays a block through {', '.join(relayed[1:-1])} "
                    f"(no link from {relayed[0]} to {relayed[-1]}), which the engine does not "
                    "run; use forest on this platform"
                )
            return sched

        # one plan for calls that differ only in ``extra`` (the operator, the signature of
        # elements of the same extent)
        return self._cached((*request, extra), lambda: self._scheduled(request, build), extra)

    def _per_root_allgather(self, block, algo: str, what, extra="") -> list[memoryview]:
        """Every rank's ``block`` (the same size on every rank), in rank order."""
        n = len(block)
        if n == 0:  # nothing moves (every rank's block has the same size)
            self._record("Allgather", None, algo)
            return [memoryview(b"")] * self.size
        sched, plan, program, digest = self._planned_per_root("allgather", n, None, 1, algo, extra)
        self.last_schedule = sched
        at = sched.block_offsets()
        out = self._pool.take(n * self.size)
        me = at[self.node]
        out[me : me + n] = np.frombuffer(memoryview(block).cast("B"), np.uint8)
        handler = ByteRanges(program.chunks, {0: memoryview(out)})
        self._execute(plan, handler, what, digest)
        self._record("Allgather", None, algo)
        return [memoryview(out)[at[v] : at[v] + n] for v in self.nodes]

    def _per_root_allreduce(self, state, op, spec, algo: str, what, extra) -> memoryview:
        """Every rank's ``state`` (a datatype's span) combined with the commutative ``op``
        on every rank: each owner's share reduced over its trees, then broadcast back (the
        result's span, in the call's scratch memory)."""
        count, datatype = spec
        extent = datatype.Get_extent()[1]
        whole = count * extent  # every element's full extent: ranges cut at elements
        if whole == 0:  # nothing moves (every rank gives the same count)
            self._record("Allreduce", None, algo)
            return memoryview(state)
        sched, plan, program, digest = self._planned_per_root(
            "allreduce", whole, None, max(extent, 1), algo, extra
        )
        self.last_schedule = sched
        work = self._pool.take(max(whole, len(state)))
        work[: len(state)] = np.frombuffer(memoryview(state).cast("B"), np.uint8)
        work[len(state) :] = 0
        handler = PerRootReduce(
            program, work[:whole], op, datatype, extent, self.size, self._pool, self.node
        )
        self._execute(plan, handler, what, digest)
        self._record("Allreduce", None, algo)
        return memoryview(work)[: len(state)]

    def _per_root_reduce_scatter(self, blocks, op, datatype, counts, algo, what, extra):
        """Every rank's ``blocks`` (rank ``r``'s block of the vector: ``counts[r]``
        elements, its span) combined with the commutative ``op``; this rank's block of the
        result, each element's full extent (in the call's scratch memory)."""
        extent = datatype.Get_extent()[1]
        sizes = tuple(c * extent for c in counts)
        if not any(sizes):  # nothing moves (every rank knows the counts)
            return memoryview(b"")
        sched, plan, program, digest = self._planned_per_root(
            "reduce_scatter", 0, sizes, max(extent, 1), algo, extra
        )
        self.last_schedule = sched
        at = sched.block_offsets()
        work = self._pool.take(sum(sizes))
        work[:] = 0
        for v, mine, size in zip(self.nodes, blocks, sizes, strict=True):
            got = np.frombuffer(memoryview(mine).cast("B"), np.uint8)[:size]
            work[at[v] : at[v] + len(got)] = got
        handler = PerRootReduce(program, work, op, datatype, extent, self.size, self._pool)
        self._execute(plan, handler, what, digest)
        me = at[self.node]
        return memoryview(work)[me : me + sizes[self.rank]]
