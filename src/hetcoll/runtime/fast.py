"""The native fast path: a rank's plan of small messages, run with persistent requests.

:class:`~.executor.Executor` is the engine's reference: an object with the simulator's
steps, any timing, any transport.  For the commonest call — native timing, every message
at most :data:`~.transport.PACK` bytes, headers on — :class:`FastRun` runs the same rules
(deps, one send port taking the first ready send in program order, receives posted when
their deps completed) in one loop over local state, with a persistent request and memory
per op made once per schedule: a call then costs a few microseconds of Python instead of
tens, which is what a 1-byte broadcast and every segment of a pipelined one pay.  The
wire format is the transport's (header, then the chunk), so a rank on the fast path and
one on the general path talk to each other; what is rare goes through the transport's own
code: a header of another call or schedule (leftovers of an abandoned call dropped, a
message of a later call kept, anything else :class:`~hetcoll.errors.MismatchError`), a
message that does not fit, abandoning after an error.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from mpi4py import MPI

from ..errors import CollectiveTimeoutError
from .plan import KIND_NAMES, SEND, DataHandler, RankPlan, Trace, timeout_message
from .transport import _HDR, HEADER, PACK, MPITransport, data_tag

__all__ = ["FastRun"]

_NS = 1_000_000_000


class FastRun:
    """One rank's part of a schedule, compiled for the native fast path (see the module
    docstring); ``None`` from :meth:`compile` when a message is too large for it."""

    def __init__(self, comm: MPI.Comm, plan: RankPlan) -> None:
        self.plan = plan
        self.mems: list[bytearray] = []
        self.views: list[memoryview] = []
        self.reqs: list[MPI.Prequest] = []
        ops = zip(plan.kinds, plan.peers, plan.chunks, plan.nbytes, strict=True)
        for kind, peer, chunk, n in ops:
            mem = bytearray(HEADER + n)
            init = comm.Send_init if kind == SEND else comm.Recv_init
            self.mems.append(mem)
            self.views.append(memoryview(mem))
            self.reqs.append(init(mem, peer, data_tag(chunk)))

    @classmethod
    def compile(cls, comm: MPI.Comm, plan: RankPlan) -> FastRun | None:
        return cls(comm, plan) if all(n <= PACK for n in plan.nbytes) else None

    def free(self, keep: set[int] = frozenset()) -> None:
        """Free the requests (except those in ``keep``, by id: still in flight)."""
        for req in self.reqs:
            if id(req) not in keep:
                req.Free()
        self.reqs = []
        transport = getattr(self, "transport", None)
        if transport is not None:
            transport.wire.free(keep)

    def run(
        self,
        handler: DataHandler,
        transport: MPITransport,
        deadline_s: float,
        spin: float,
        poll: float,
        on_timeout: Callable[[str], None] | None,
        what,
    ) -> Trace:
        """Run the plan; ``transport`` (this call's, empty) keeps the bookkeeping the rare
        paths need (abandon after an error, drop, keep)."""
        plan, mems, views, reqs = self.plan, self.mems, self.views, self.reqs
        kinds, peers, chunks, dependents = plan.kinds, plan.peers, plan.chunks, plan.dependents
        seq, digest = transport.token
        n = len(kinds)
        now = time.monotonic_ns()
        trace = Trace(now, [0] * n, [0] * n, [0] * n, [0] * n)
        done_at, issued, observed = trace.done, trace.issued, trace.observed
        waiting = list(plan.ndeps)
        due: list[int] = []  # enabled sends, program order
        active, owner = transport.reqs, transport.owners  # shared: transport.abandon()
        opened, parts, recvs = transport.open, transport.parts, transport.recvs
        remaining, port = n, -1

        def enable(i: int) -> None:
            if kinds[i] == SEND:
                heapq.heappush(due, i)
                return
            buf = handler.recv_buffer(chunks[i], KIND_NAMES[kinds[i]])
            recvs[i] = (peers[i], chunks[i], buf, views[i], mems[i])
            start(i)

        def start(i: int) -> None:
            reqs[i].Start()
            active.append(reqs[i])
            owner.append(i)
            opened.append(True)
            parts[i] = 1
            issued[i] = time.monotonic_ns()

        for i in plan.roots:
            enable(i)
        deadline = now + int(deadline_s * _NS)
        idle_since = now
        while remaining:
            if port < 0 and due:
                port = i = heapq.heappop(due)
                data = handler.send_buffer(chunks[i])
                _HDR.pack_into(mems[i], 0, seq, digest, 0, 0, len(data))
                views[i][HEADER:] = data
                start(i)
                trace.started[i] = issued[i]
            got = transport.poll()
            if not got:
                now = time.monotonic_ns()
                if now - idle_since <= spin * _NS:
                    time.sleep(0)  # let a peer sharing the core run
                    continue
                if now > deadline:
                    message = timeout_message(
                        plan, what, deadline_s, parts.__contains__, waiting, port, n - remaining
                    )
                    if on_timeout is not None:
                        on_timeout(message)
                    raise CollectiveTimeoutError(message)
                transport.idle(poll)
                continue
            t = time.monotonic_ns()
            idle_since = t
            for i, _, _ in got:
                if kinds[i] == SEND:
                    port = -1
                else:
                    handler.received(chunks[i], KIND_NAMES[kinds[i]])
                done_at[i] = observed[i] = t
                remaining -= 1
                for j in dependents[i]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        enable(j)
        trace.received = max(
            (observed[i] for i in range(n) if kinds[i] != SEND), default=trace.entry
        )
        return trace
