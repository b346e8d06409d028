"""A call's requests in flight, and which of them a look tests: linear in the call's size.

A rank's loop asks MPI, turn after turn, which of its requests completed.  Asking about
every request in flight (``Testsome`` over all of them) costs time in proportion to how
many there are, and a pipelined broadcast of ``M`` segments posts all its ``M`` receives
at once: each turn then costs ``O(M)`` and the call ``O(M^2)``.  So a look tests, when
more than :data:`ALL` requests are in flight:

- every *urgent* request (sends, call headers: a rank has few at a time);
- per peer, its :data:`HEAD` oldest receives still in flight, in the order they were
  posted: messages from one peer arrive in the order it sends them, and a pipeline's
  receives are posted in that order, so the next completion is almost always there;
- when those gave nothing, the next :data:`WIDE` receives of a rotating sweep over all of
  them, so a receive completed out of that order (another schedule's send order) is seen
  within ``n / WIDE`` idle looks, and nothing is left unlooked at for ever.

Each look costs ``O(peers * HEAD + WIDE)``, each request is added, found and dropped a
bounded number of times (dead entries leave the queues when they reach a head or the
sweep), so a call costs ``O(M)`` (``benchmarks/mpi/bench_runtime.py --only segments``
prints the time per segment from 1 024 to 16 384 segments).  With at most :data:`ALL`
requests in flight a look tests all of them.
"""

from __future__ import annotations

from collections import deque
from itertools import islice

from mpi4py import MPI

__all__ = ["ALL", "HEAD", "WIDE", "Inflight"]

#: up to this many requests in flight, a look tests them all
ALL = 32
#: receives tested per peer and look (the oldest in flight)
HEAD = 4
#: receives a look of the rotating sweep tests
WIDE = 32

_testsome = MPI.Request.Testsome


class Inflight:
    """The requests of one rank's call in flight, by op (see the module docstring).

    ``live`` maps each op in flight to its request (the rare paths read it: abandoning a
    call, a truncated message, a timeout); :meth:`add` starts tracking one (``peer``:
    a receive from that rank, None: an urgent request, tested on every look), :meth:`test`
    returns the ops whose requests completed (and forgets them), :meth:`drop` forgets one.
    ``testsome`` is MPI's ``Request.Testsome`` (the native loops pass their host's).
    """

    __slots__ = ("live", "queues", "sweep", "testsome", "urgent")

    def __init__(self, testsome=None) -> None:
        self.testsome = _testsome if testsome is None else testsome
        self.live: dict[int, MPI.Request] = {}
        self.urgent: list[int] = []
        self.queues: dict[int, deque[int]] = {}  # peer -> its receives, posting order
        self.sweep: deque[int] = deque()  # every receive, rotating

    def add(self, op: int, req: MPI.Request, peer: int | None = None) -> None:
        self.live[op] = req
        if peer is None:
            self.urgent.append(op)
            return
        queue = self.queues.get(peer)
        if queue is None:
            queue = self.queues[peer] = deque()
        queue.append(op)
        self.sweep.append(op)

    def peers(self) -> list[int]:
        """The peers this rank may still wait for (some of their receives may be over)."""
        return [p for p, queue in self.queues.items() if queue]

    def drop(self, op: int) -> None:
        self.live.pop(op, None)

    def __bool__(self) -> bool:
        return bool(self.live)

    def __len__(self) -> int:
        return len(self.live)

    def test(self) -> list[int]:
        """The ops whose requests completed (forgotten here); raises what ``Testsome``
        raises (a truncated message: the caller asks each request of :attr:`live`)."""
        live, testsome = self.live, self.testsome
        if len(live) <= ALL:
            ops = list(live)
            got = testsome(list(live.values()))
            if not got:
                return []
            if len(got) == len(ops):
                live.clear()
                self.urgent.clear()
                return ops
        else:
            ops = self._heads()
            got = testsome([live[op] for op in ops])
            if not got:
                ops = self._sweep(set(ops))
                got = testsome([live[op] for op in ops]) if ops else None
                if not got:
                    return []
        done = [ops[k] for k in got]
        for op in done:
            del live[op]
        return done

    def _heads(self) -> list[int]:
        """The urgent ops and each peer's oldest receives in flight."""
        live = self.live
        urgent = self.urgent
        if urgent:
            urgent[:] = [op for op in urgent if op in live]
        ops = list(urgent)
        for queue in self.queues.values():
            while queue and queue[0] not in live:
                queue.popleft()
            if queue:
                ops.extend(islice((op for op in queue if op in live), HEAD))
        if len(ops) != len(set(ops)):  # an op restarted (a dropped leftover) is queued twice
            ops = list(dict.fromkeys(ops))
        return ops

    def _sweep(self, seen: set[int]) -> list[int]:
        """The next receives of the rotating sweep (not in ``seen``); completed ones it
        meets leave it."""
        live, sweep = self.live, self.sweep
        ops: list[int] = []
        for _ in range(min(len(sweep), 2 * WIDE)):
            op = sweep.popleft()
            if op not in live:
                continue
            sweep.append(op)
            if op not in seen:
                seen.add(op)
                ops.append(op)
                if len(ops) == WIDE:
                    break
        return ops
