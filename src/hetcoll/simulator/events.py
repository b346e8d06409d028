"""The event loop: any program, any contention (:class:`Simulation`), by the rules of
:mod:`hetcoll.simulator`; exclusive link bookings in :mod:`~hetcoll.simulator.links`, shared
bandwidth by :class:`~hetcoll.simulator.fairshare.FairShares`."""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from ..errors import ScheduleError
from ..models import BoundModel
from ..program import Program, SendQueue
from .costs import bottleneck_throughput, distinct_costs
from .fairshare import FairShares
from .links import RouteBooks, first_overlap, insert_booking, start_for
from .results import BLOCKERS, TransferTable

__all__ = ["SHORT_ROUTE", "Exceeded", "Simulation"]

# ports and bandwidth first, then flows begin, then waiting transfers try again, and last
# idle ports choose their next send.
_FLOW_END, _FLOW_BEGIN, _ATTEMPT, _DECIDE = 0, 1, 2, 3
_INF = math.inf
SHORT_ROUTE = 64  # links
#: a run given ``above`` stops when its lower bound exceeds ``above`` by more than this
#: (relative: the bound's and the run's rounding, about 1e-12 of the time, must never stop
#: a run that would end within ``above``)
MARGIN = 1e-9
#: shared contention: the run's lower bound is taken after every this many rate updates
BOUND_EVERY = 128


class Exceeded(Exception):
    """:meth:`Simulation.run` given ``above``: the run is proved to end after ``above``;
    ``bound``, the time it ends at the earliest."""

    def __init__(self, bound: float) -> None:
        super().__init__(f"the run ends at {bound!r} s or later")
        self.bound = bound


class Simulation:
    """The state of one run: ops flattened to global ids ``g`` (rank by rank, program order),
    distinct transfer costs ``c`` (one per (sender, receiver, size))."""

    def __init__(self, bound: BoundModel, program: Program) -> None:
        self.bound = bound
        self.program = program
        platform = bound.platform
        ranks = list(program.ops)
        self.ranks = ranks
        self.node = platform.indices(ranks)  # names unknown nodes first
        rank_of = {r: k for k, r in enumerate(ranks)}
        self.rank_of = rank_of
        base, total = [], 0
        for r in ranks:
            base.append(total)
            total += len(program.ops[r])
        self.base, self.total = base, total
        chunk_bytes = [c.nbytes for c in program.chunks]
        flat = [op for r in ranks for op in program.ops[r]]  # global id g: flat[g]
        owner = [k for k, r in enumerate(ranks) for _ in program.ops[r]]
        is_send = [op.kind == "send" for op in flat]
        chunk = [op.chunk for op in flat]
        sends = [g for g, x in enumerate(is_send) if x]
        recvs = [g for g, x in enumerate(is_send) if not x]
        try:
            peer = [rank_of[op.peer] for op in flat]  # the other rank
            match = self._match(sends, recvs, owner, peer, chunk)
            nbytes = [chunk_bytes[chunk[g]] for g in sends]
        except (KeyError, IndexError):
            program.matches()  # raises the ScheduleError that names the culprit
            raise
        # dependents in CSR form: those of g are dep_list[dep_start[g]:dep_start[g + 1]]
        waiting = [len(op.deps) for op in flat]
        dep_start = [0] * (total + 1)
        with_deps = [(g, base[owner[g]], flat[g].deps) for g, n in enumerate(waiting) if n]
        for _, b, deps in with_deps:
            for d in deps:
                dep_start[b + d + 1] += 1
        for g in range(total):
            dep_start[g + 1] += dep_start[g]
        fill = dep_start[:-1]
        dep_list = [0] * dep_start[total]
        for g, b, deps in with_deps:
            for d in deps:
                at = b + d
                dep_list[fill[at]] = g
                fill[at] += 1
        self.is_send, self.owner, self.waiting, self.match = is_send, owner, waiting, match
        # combining (rule 5 of hetcoll.program): each rank's recv_reduce ops, in program
        # order, and what each costs its rank to combine
        self.chain: list[list[int]] = [[] for _ in ranks]
        self.combine = [0.0] * total
        node_of = self.node
        for g, op in enumerate(flat):
            if op.kind == "recv_reduce":
                k = owner[g]
                self.chain[k].append(g)
                if program.reduces:
                    nb = chunk_bytes[op.chunk]
                    self.combine[g] = bound.combine(node_of[k], nb)
        self.peer, self.chunk = peer, chunk
        self.dep_start, self.dep_list = dep_start, dep_list
        self.cost = [0] * total  # for sends: index of its distinct cost
        self._costs(sends, nbytes)

    def _match(self, sends, recvs, owner, peer, chunk) -> list[int]:
        """Each op's partner: sends and receives pair up by (sender, receiver, chunk) in
        program order (:meth:`Program.matches`); KeyError when one has no partner."""
        outgoing: dict[tuple[int, int, int], list[int]] = {}
        for s in sends:
            key = (owner[s], peer[s], chunk[s])
            q = outgoing.get(key)
            if q is None:
                outgoing[key] = [s]
            else:
                q.append(s)
        for q in outgoing.values():
            q.reverse()  # pop() takes the first in program order
        match = [0] * self.total
        for g in recvs:
            s = outgoing[(peer[g], owner[g], chunk[g])].pop()
            match[g] = s
            match[s] = g
        if any(outgoing.values()):
            raise KeyError("a send is never received")
        return match

    def _costs(self, sends: list[int], nbytes: list[int]) -> None:
        """One vectorised model call per distinct (sender node, receiver node, size)."""
        node = np.array(self.node, dtype=np.int64)
        n_send = len(sends)
        u = node[np.array([self.owner[g] for g in sends], dtype=np.int64)] if n_send else node[:0]
        v = node[np.array([self.peer[g] for g in sends], dtype=np.int64)] if n_send else node[:0]
        uniq, inverse, costs = distinct_costs(self.bound, u, v, np.array(nbytes, dtype=np.int64))
        self.c_u, self.c_v = uniq[:, 0], uniq[:, 1]
        self.c_bytes = uniq[:, 2].tolist()
        self.c_send = np.asarray(costs.send_busy, dtype=float).tolist()
        self.c_delay = np.asarray(costs.delay, dtype=float).tolist()
        self.c_recv = np.asarray(costs.recv_busy, dtype=float).tolist()
        hold_offset, hold = costs.window()  # exclusive: a route is held from start + offset
        self.c_hold_offset, self.c_hold = hold_offset.tolist(), hold.tolist()
        self.resources, self.offsets = costs.resources, costs.offsets
        off = costs.offsets.tolist()
        # a route longer than SHORT_ROUTE links: every route is an array and exclusive
        # bookings go through numpy (RouteBooks: a line of thousands of nodes must not cost
        # Python work per link); else routes are tuples (quicker than numpy on a few links)
        self.long_routes = bool(len(off) > 1 and np.diff(costs.offsets).max() > SHORT_ROUTE)
        self.c_path = [
            None
            if off[c + 1] == off[c]
            else costs.resources[off[c] : off[c + 1]]
            if self.long_routes
            else tuple(costs.resources[off[c] : off[c + 1]].tolist())
            for c in range(len(uniq))
        ]
        self.shared = self.bound.contention == "shared"
        self.c_lead = None if costs.lead is None else np.asarray(costs.lead, float).tolist()
        self.c_cap = None if costs.cap is None else np.asarray(costs.cap, float).tolist()
        for s, g in enumerate(sends):
            self.cost[g] = int(inverse[s])
        self.n_resources = int(costs.resources.max()) + 1 if len(costs.resources) else 0

    # -- the run ----------------------------------------------------------------------------

    def run(self, above: float | None = None) -> None:
        """Process events in time order until none is left (see :mod:`hetcoll.simulator`).

        ``above`` (shared contention): raise :class:`Exceeded` as soon as the run is proved
        to end later than ``above`` (:meth:`_Flows.bound`), so that a search stops a
        candidate that cannot beat the fastest one simulated; elsewhere ignored."""
        total, n_ranks = self.total, len(self.ranks)
        heappush, heappop = heapq.heappush, heapq.heappop
        is_send, owner, peer, match, cost = (
            self.is_send,
            self.owner,
            self.peer,
            self.match,
            self.cost,
        )
        waiting, dep_start, dep_list = self.waiting, self.dep_start, self.dep_list
        is_rr = [bool(c) for c in self._rr_flags()]
        node = self.node
        c_send, c_delay, c_recv, c_path = self.c_send, self.c_delay, self.c_recv, self.c_path
        c_hold_offset, c_hold = self.c_hold_offset, self.c_hold
        shared = self.shared
        concurrent = shared and self.bound.concurrent_sends
        ready = [0.0] * total  # latest dependency completion so far
        ready_by = [-1] * total  # the transfer that set it
        posted = [_INF] * total  # receives: when posted (inf: not yet)
        posted_by = [-1] * total
        enabled = [False] * total  # sends: dependencies done
        done = [math.nan] * total
        queues = [SendQueue() for _ in range(n_ranks)]  # each rank's send port's choice
        port_free = [0.0] * n_ranks
        port_by = [-1] * n_ranks
        if self.bound.unidirectional:
            recv_free, recv_by = port_free, port_by
        else:
            recv_free, recv_by = [0.0] * n_ranks, [-1] * n_ranks
        busy = [False] * n_ranks  # a send holds the port (waiting or, shared, in flight)
        decide_at = [_INF] * n_ranks
        unidirectional = self.bound.unidirectional
        # exclusive: the bookings (start, end, transfer) of each rank's receive port (its
        # only port when unidirectional) and of each link: disjoint intervals, by start
        port_book: list[list[tuple[float, float, int]]] = [[] for _ in range(n_ranks)]
        link_book: list[list[tuple[float, float, int]]] = [[] for _ in range(self.n_resources)]
        link_last = [0.0] * self.n_resources  # when each link's last booking ends
        # shared: sends waiting for a rank's port (held by a flow whose end is not known)
        waiters: dict[int, list[tuple[float, int, int]]] = {}
        taken_at = [0.0] * total  # shared: when the port took each send
        chain, combine = self.chain, self.combine
        chain_at = [0] * n_ranks  # the next recv_reduce of each rank to combine
        combine_free = [0.0] * n_ranks  # when each rank's last combine ended
        came = [math.nan] * total  # recv_reduce: when its data arrived
        came_by = [-1] * total
        records: list[list[Any]] = []  # [g, start, arrival, sender free, by, on, link]
        events: list[tuple] = []
        route_books = RouteBooks(self.n_resources) if self.long_routes and not shared else None

        def enable(g: int) -> None:
            """All of ``g``'s dependencies have completed (``ready[g]`` is final)."""
            if is_send[g]:
                enabled[g] = True
                if posted[match[g]] < _INF:
                    known(g)
            else:
                posted[g] = ready[g]
                posted_by[g] = ready_by[g]
                s = match[g]
                if enabled[s]:
                    known(s)

        def known(g: int) -> None:
            """Send ``g``'s startable time is known: queue it on its rank."""
            r = ready[g]
            p = posted[match[g]]
            st = r if r >= p else p
            k = owner[g]
            queues[k].add(st, g)
            if not busy[k]:
                pf = port_free[k]
                t = pf if pf > st else st
                if t < decide_at[k]:
                    decide_at[k] = t
                    heappush(events, (t, _DECIDE, node[k], k))

        def wake(k: int, t: float) -> None:
            """Rank ``k`` chooses a send at ``t``, or when its port is free."""
            pf = port_free[k]
            if pf > t:
                t = pf
            if t < decide_at[k]:
                decide_at[k] = t
                heappush(events, (t, _DECIDE, node[k], k))

        def decide(k: int, now: float) -> None:
            if busy[k] or decide_at[k] != now:
                return  # stale: the port was taken, or a nearer decision was scheduled
            decide_at[k] = _INF
            queue = queues[k]
            if port_free[k] > now:  # a receive took a unidirectional port meanwhile
                if (queue.pending or queue.due) and port_free[k] < _INF:
                    wake(k, now)
                return
            g = queue.take(now)  # the first startable send in program order
            if g is None:
                if queue.pending:
                    wake(k, queue.pending[0][0])
                return
            busy[k] = True
            if shared:
                taken_at[g] = now
                attempt(g, now)
            else:
                commit(g, now)

        def attempt(g: int, now: float) -> None:
            """Shared contention: start send ``g`` now if its receiver's port (and, on a
            unidirectional port, its own) is free, else wait in line for the port."""
            k, v = owner[g], peer[g]
            if port_free[k] == _INF:  # a flow into k holds its unidirectional port
                waiters.setdefault(k, []).append((taken_at[g], node[k], g))
            elif c_recv[cost[g]] > 0 and recv_free[v] == _INF:
                waiters.setdefault(v, []).append((taken_at[g], node[k], g))
            else:
                commit(g, now)

        def blocker(g: int, start: float) -> tuple[int, str | None, int]:
            """What set ``start`` when no booking did: (transfer, kind, -1), the first of
            dependency, posted, send port (and, shared, receive port) that equals it."""
            if start <= 0:
                return -1, None, -1
            if ready[g] == start:
                return ready_by[g], "dependency", -1
            m = match[g]
            if posted[m] == start:
                return posted_by[m], "posted", -1
            k, c, v = owner[g], cost[g], peer[g]
            if port_free[k] == start:  # the port's last holder, unchanged since it took g
                return port_by[k], "send_port", -1
            if shared and c_recv[c] > 0 and recv_free[v] == start:
                return recv_by[v], "recv_port", -1
            return -1, None, -1

        def commit(g: int, start: float) -> None:
            """Start send ``g``, taken by its port at ``start``.  Exclusive contention places
            it once, now, at the earliest time its resources are free (first come, first
            served; a gap before a later booking is used if the transfer fits in it);
            shared contention starts the flow now."""
            k, c, v = owner[g], cost[g], peer[g]
            idx = len(records)
            if shared:
                by, on, res = blocker(g, start)
                if c_recv[c] > 0:
                    recv_free[v] = _INF
                    recv_by[v] = idx
                heappush(events, (start + c_lead[c], _FLOW_BEGIN, idx))  # type: ignore[index]
                if concurrent:  # the port is busy send_busy, the flow goes on without it
                    free = start + c_send[c]
                    records.append([g, start, math.nan, free, by, on, res])
                    if free >= port_free[k]:
                        port_free[k] = free
                        port_by[k] = idx
                    busy[k] = False
                    if queues[k].pending or queues[k].due:
                        wake(k, free)
                    return
                port_free[k] = _INF
                port_by[k] = idx
                records.append([g, start, math.nan, math.nan, by, on, res])
                return
            # exclusive: the earliest time from which the receiver's port (and, on a
            # unidirectional port, the sender's own) and every link are free for as long
            # as the transfer needs them, given the transfers placed before
            d, rb, sb = c_delay[c], c_recv[c], c_send[c]
            ports = []  # (rank, offset from the start, length, what)
            if unidirectional and sb > 0:
                ports.append((k, 0.0, sb, "send_port"))
            if rb > 0:
                ports.append((v, d - rb, rb, "recv_port"))
            path = c_path[c]  # a tuple, or an array with route_books
            ho, hl = c_hold_offset[c], c_hold[c]  # the route is held [start + ho, + hl)
            if hl <= 0:
                path = None
            route = None
            if path is not None and route_books is not None:
                route = route_books.route(c, path)
            now = start
            by, on, res = -1, None, -1
            links_free = -_INF  # route_books: the route is known to be free from here
            moved = True
            while moved:
                moved = False
                for r, off, length, what in ports:
                    hit = first_overlap(port_book[r], start + off, length, now)
                    if hit is not None:
                        start = start_for(hit[1], off)
                        by, on, res = hit[2], what, -1
                        moved = True
                if route is not None:
                    if start != links_free:  # the earliest start on every link, at once
                        free, hit = route_books.earliest(route, start + ho, hl)  # type: ignore[union-attr]
                        if hit is not None:
                            start = start_for(free, ho)
                            by, on, res = hit[0], "link", hit[1]
                            moved = True
                        if start + ho == free:  # else rounding moved it: ask again
                            links_free = start
                elif path is not None and max(map(link_last.__getitem__, path)) > start + ho:
                    for link in path:
                        if link_last[link] <= start + ho:
                            continue  # free from the window's start on
                        hit = first_overlap(link_book[link], start + ho, hl, now)
                        if hit is not None:
                            start = start_for(hit[1], ho)
                            by, on, res = hit[2], "link", link
                            moved = True
            if by < 0:
                by, on, res = blocker(g, start)
            send_done = start + sb
            arrival = start + d
            if send_done >= port_free[k]:
                port_free[k] = send_done
                port_by[k] = idx
            for r, off, length, _ in ports:
                insert_booking(port_book[r], (start + off, start + off + length, idx), now)
            if route is not None:
                route_books.book(route, start + ho, start + ho + hl, idx, now)  # type: ignore[union-attr]
            elif path is not None:
                held = start + ho
                booking = (held, held + hl, idx)
                if max(map(link_last.__getitem__, path)) <= now:  # the links are idle
                    for link in path:
                        link_book[link] = [booking]
                        link_last[link] = held + hl
                else:
                    for link in path:
                        if link_last[link] <= held:  # after every booking: append
                            book = link_book[link]
                            if link_last[link] <= now:
                                book.clear()
                            book.append(booking)
                            link_last[link] = held + hl
                        else:
                            insert_booking(link_book[link], booking, now)
            records.append([g, start, arrival, send_done, by, on, res])
            busy[k] = False
            complete(g, send_done, idx)
            received(match[g], arrival, idx)
            if queues[k].pending or queues[k].due:
                wake(k, send_done)

        def finish_flow(idx: int, now: float) -> None:
            """Shared contention: transfer ``idx``'s bytes are all in at ``now``."""
            rec = records[idx]
            g = rec[0]
            k, c, v = owner[g], cost[g], peer[g]
            rec[2] = now
            if not concurrent:  # else the port was freed send_busy after the start
                rec[3] = now
                port_free[k] = now
                port_by[k] = idx
                busy[k] = False
            if c_recv[c] > 0:
                recv_free[v] = now
                recv_by[v] = idx
            for rank in (k, v):  # who waited for these ports tries now, first asked first
                for _, _, w in waiters.pop(rank, ()):
                    heappush(events, (now, _ATTEMPT, taken_at[w], node[owner[w]], w))
            complete(g, now, idx)
            received(match[g], now, idx)
            for rank in (k, v):
                if not busy[rank] and (queues[rank].pending or queues[rank].due):
                    wake(rank, now)

        def received(g: int, t: float, by: int) -> None:
            """Receive ``g``'s data arrived at ``t`` (brought by transfer ``by``): a recv
            completes; a recv_reduce is combined in its rank's program order (rule 5)."""
            if not is_rr[g]:
                complete(g, t, by)
                return
            came[g], came_by[g] = t, by
            k = owner[g]
            mine = chain[k]
            while chain_at[k] < len(mine):
                h = mine[chain_at[k]]
                a = came[h]
                if a != a:  # nan: not here yet; the ones after it wait
                    return
                end = (a if a > combine_free[k] else combine_free[k]) + combine[h]
                combine_free[k] = end
                chain_at[k] += 1
                complete(h, end, came_by[h])

        def complete(g: int, t: float, by: int) -> None:
            done[g] = t
            for p in range(dep_start[g], dep_start[g + 1]):
                j = dep_list[p]
                if t > ready[j] or ready_by[j] < 0:
                    if t > ready[j]:
                        ready[j] = t
                    ready_by[j] = by
                waiting[j] -= 1
                if waiting[j] == 0:
                    enable(j)

        c_lead = self.c_lead
        flows = _Flows(self, records, events, finish_flow) if shared else None
        if flows is not None and above is not None:
            flows.watch(above)
        for g in range(total):
            if waiting[g] == 0:
                enable(g)
        while events:
            ev = heappop(events)
            kind = ev[1]
            if kind == _DECIDE:
                decide(ev[3], ev[0])
            elif kind == _ATTEMPT:
                attempt(ev[4], ev[0])
            elif kind == _FLOW_BEGIN:
                flows.begin(ev[2], ev[0])  # type: ignore[union-attr]
            else:
                flows.end(ev[2], ev[3], ev[0])  # type: ignore[union-attr]
        self.done, self.records = done, records
        self._check_complete()

    def _rr_flags(self) -> list[bool]:
        flags = [False] * self.total
        for mine in self.chain:
            for g in mine:
                flags[g] = True
        return flags

    def _check_complete(self) -> None:
        if not np.isnan(np.array(self.done, dtype=float)).any():
            return
        for k, r in enumerate(self.ranks):
            ops = self.program.ops[r]
            b = self.base[k]
            for i in range(len(ops)):
                if math.isnan(self.done[b + i]):
                    op = ops[i]
                    raise ScheduleError(
                        f"schedule deadlocks: rank {r!r} op {i} ({op.kind} chunk {op.chunk} "
                        f"with {op.peer!r}) never completes"
                    )

    # -- results ----------------------------------------------------------------------------

    def arrivals(self) -> dict[str, float]:
        """For every rank, when its last receive completed (0 without one)."""
        last = [0.0] * len(self.ranks)
        done, owner = self.done, self.owner
        for g, x in enumerate(self.is_send):
            if not x and done[g] > last[owner[g]]:
                last[owner[g]] = done[g]
        return dict(zip(self.ranks, last, strict=True))

    def done_of(self, rank: str) -> list[float]:
        """Completion time of each of ``rank``'s ops, in program order."""
        b = self.base[self.rank_of[rank]]
        return self.done[b : b + len(self.program.ops[rank])]

    def transfers(self) -> TransferTable:
        """The transfers in start order (ties: the order their ports took them)."""
        owner, peer, chunk, cost, c_bytes = (
            self.owner,
            self.peer,
            self.chunk,
            self.cost,
            self.c_bytes,
        )
        records = self.records
        order = sorted(range(len(records)), key=lambda i: records[i][1])
        position = [0] * len(records)
        for pos, i in enumerate(order):
            position[i] = pos
        name = self.bound.resource_name
        code = {w: k for k, w in enumerate(BLOCKERS)}
        rows = [records[i] for i in order]
        gs = [r[0] for r in rows]
        by = [position[r[4]] if r[4] >= 0 else -1 for r in rows]
        return TransferTable(
            self.ranks,
            [owner[g] for g in gs],
            [peer[g] for g in gs],
            [chunk[g] for g in gs],
            [c_bytes[cost[g]] for g in gs],
            [r[1] for r in rows],
            [r[2] for r in rows],
            [r[3] for r in rows],
            by,
            [code[r[5]] if b >= 0 else -1 for r, b in zip(rows, by, strict=True)],
            [
                name(r[6]) if b >= 0 and r[6] >= 0 and self.n_resources else None
                for r, b in zip(rows, by, strict=True)
            ],
        )

    def throughput(self, total_bytes: int) -> float | None:
        """Message bytes over the busy time of the busiest resource: a send port (its
        sends' ``send_busy``), a receive port (``recv_busy``) or a link (exclusive: the
        transfers' link windows; shared: their bytes over the link's bandwidth)."""
        if total_bytes == 0:
            return None
        n_costs = len(self.c_send)
        sends = [g for g in range(self.total) if self.is_send[g]]
        cost = np.array([self.cost[g] for g in sends], dtype=np.int64)
        owner = np.array([self.owner[g] for g in sends], dtype=np.int64)
        peer = np.array([self.peer[g] for g in sends], dtype=np.int64)
        links = []
        if self.n_resources:
            uses = np.bincount(cost, minlength=n_costs).astype(float)  # sends per cost
            lengths = np.diff(self.offsets)
            if self.shared:
                per_link = np.repeat(uses * np.array(self.c_bytes, dtype=float), lengths)
                per_link /= self.bound.capacity()[self.resources]
            else:
                per_link = np.repeat(uses * np.array(self.c_hold), lengths)
            links.append(np.bincount(self.resources, per_link, minlength=self.n_resources))
        return bottleneck_throughput(
            total_bytes,
            len(self.ranks),
            owner,
            peer,
            np.array(self.c_send)[cost],
            np.array(self.c_recv)[cost],
            self.bound.unidirectional,
            links,
        )


class _Flows:
    """Shared contention: flows in progress and their max-min fair rates.

    The rates come from :class:`~hetcoll.simulator.fairshare.FairShares`, kept up to date
    as flows start and end (flows of one route and cap form a class: they share a rate),
    bit for bit :func:`~hetcoll.simulator.fairshare.max_min_flat` over the flows in
    progress.  A flow's state lives in arrays indexed by its transfer (its rate, the bytes
    left when the rate was last set, since when, and the finish that rate gives), updated
    for the flows whose rate changes in one numpy pass, with the same arithmetic per flow
    as one at a time.  Only the next flow to end has its event in the heap (pushed again
    whenever the next one changes): its tuple is the one a heap of every flow's end would
    pop first, so the run is the same, bit for bit, without a heap entry per rate change.

    Flows that begin at one instant share one solve: a begin whose next event is another
    flow's begin at the same instant only adds its flow, and the last begin of the instant
    solves (ends come before begins at an instant, so no end falls between them).  Flows
    that end at one instant share one solve too: an end after which another flow in
    progress ends at the same instant, at the rates of the last solve, only removes its
    flow and queues that end, and the last end of the instant solves.  The rates are
    those of the flows in progress, however many solves led to them, and no time passes
    between the begins (or the ends), so each flow's bytes left are the same; a run
    differs from that of a solve per begin and per end only where a flow's rate would
    change at one of them and return to its value at a later one of the same instant: its
    end is not recomputed (``s + b / r`` stands, not ``t + (b - r (t - s)) / r``: the last
    digits), or where a flow due at the instant would be given another rate by a solve in
    between (its bytes left, a rounding's worth, over the new rate: an end after the
    instant by less than its last digit).  On 64 NICs of 100/25/10 Gbit/s, the 1 MiB
    phased butterfly of 13 segments takes 10 290 solves, not 68 544 (one per begin and
    end; 39 058 with the begins alone merged), the same run (``simulate`` of
    ``butterfly_pipelined(star_platform(64, ("100Gbps", "25Gbps", "10Gbps"), "5us"),
    nbytes=1 << 20, align=8, cut="owners", segment_size=5042)``).

    With ``above``, every :data:`BOUND_EVERY` rate updates the run's lower bound
    (:meth:`bound`) is compared with it, and :class:`Exceeded` raised once it is more than
    :data:`MARGIN` over; the rates and times are those of the run without it."""

    def __init__(self, sim: Simulation, records: list, events: list, finish) -> None:
        self.sim = sim
        self.records = records
        self.events = events
        self.finish = finish
        n = max(sim.total, 1)
        self.remaining = np.zeros(n)
        self.rate = np.zeros(n)
        self.since = np.zeros(n)
        self.ends = np.full(n, _INF)
        self.version = np.zeros(n, dtype=np.int64)
        self.of = np.zeros(n, dtype=np.int64)  # each flow's class
        self.at = np.zeros(n, dtype=np.int64)  # each flow's place in ``flows``
        self.flows = np.zeros(n, dtype=np.int64)  # the flows in progress: flows[:n_flows]
        self.n_flows = 0
        self.queued: tuple[int, int] | None = None  # (transfer, version) last pushed
        caps = sim.c_cap if sim.c_cap is not None else [_INF] * len(sim.c_path)
        classes: dict[tuple, int] = {}
        self.class_of = [
            classes.setdefault(
                (
                    tuple(np.asarray(p if p is not None else (), dtype=np.int64).tolist()),
                    float(cap),
                ),
                len(classes),
            )
            for p, cap in zip(sim.c_path, caps, strict=True)
        ]
        keys = list(classes)
        self.shares = FairShares(
            [p for p, _ in keys], [cap for _, cap in keys], sim.bound.capacity()
        )
        self.class_rate = np.zeros(len(keys))
        self.above: float | None = None

    def watch(self, above: float) -> None:
        """Stop the run once it is proved to end after ``above`` (:meth:`bound`), before
        it starts: each resource's capacity and the bytes every transfer of the run moves
        through it, the classes' resources as flat incidence, each class's bytes begun."""
        sim, paths = self.sim, self.shares.paths
        n_cls = len(paths)
        self.capacity = np.asarray(sim.bound.capacity(), dtype=float)
        self.inc_class = np.repeat(np.arange(n_cls), [len(p) for p in paths])
        self.inc_res = np.array([r for p in paths for r in p], dtype=np.int64)
        sends = [sim.cost[g] for g in range(sim.total) if sim.is_send[g]]
        uses = np.bincount(np.array(sends, dtype=np.int64), minlength=len(self.class_of))
        per_cost = uses * np.array(sim.c_bytes, dtype=float)
        per_class = np.bincount(self.class_of, per_cost, minlength=n_cls)
        n_res = len(self.capacity)
        self.total_bytes = np.bincount(self.inc_res, per_class[self.inc_class], minlength=n_res)
        self.begun = [0.0] * n_cls  # each class's bytes of the flows begun
        self.updates = 0
        self.above = above

    def begin(self, idx: int, now: float) -> None:
        c = self.sim.cost[self.records[idx][0]]
        k = self.class_of[c]
        self.of[idx] = k
        self.remaining[idx] = float(self.sim.c_bytes[c])
        self.rate[idx] = 0.0
        self.since[idx] = now
        self.version[idx] = 0
        self.at[idx] = self.n_flows
        self.flows[self.n_flows] = idx
        self.n_flows += 1
        self.shares.add(k)
        if self.above is not None:
            self.begun[k] += self.sim.c_bytes[c]
        if self._begins_next(now):
            self._counted(now)  # another flow begins now: its solve takes this one too
            return
        self._reshare(now)

    def _begins_next(self, now: float) -> bool:
        """Whether the next event with an effect is a flow's begin at ``now`` (the stale
        ends before it, which :meth:`end` would ignore, popped)."""
        events = self.events
        while events and events[0][1] == _FLOW_END:
            _, _, idx, version = events[0]
            if self.rate[idx] >= 0 and int(self.version[idx]) == version:
                return False
            heapq.heappop(events)
        return bool(events) and events[0][0] == now and events[0][1] == _FLOW_BEGIN

    def end(self, idx: int, version: int, now: float) -> None:
        if self.rate[idx] < 0 or int(self.version[idx]) != version:
            return  # over, or its rate changed since this end was predicted
        last = self.n_flows - 1
        moved = int(self.flows[last])
        place = int(self.at[idx])
        self.flows[place] = moved
        self.at[moved] = place
        self.n_flows = last
        self.rate[idx] = -1.0  # over
        self.shares.remove(int(self.of[idx]))
        self.queued = None
        self.finish(idx, now)
        if self._ends_now(now):
            self._counted(now)  # another flow ends now: its solve takes this one too
            return
        self._reshare(now)

    def _ends_now(self, now: float) -> bool:
        """Whether another flow in progress ends at ``now`` at the rates of the last solve:
        if so its end is queued (the first such transfer, as :meth:`_reshare` would)."""
        if not self.n_flows:
            return False
        flows = self.flows[: self.n_flows]
        ends = self.ends[flows]
        if ends.min() != now:
            return False
        idx = int(flows[ends == now].min())
        key = (idx, int(self.version[idx]))
        self.queued = key
        heapq.heappush(self.events, (now, _FLOW_END, idx, key[1]))
        return True

    def _reshare(self, now: float) -> None:
        changed = self.shares.solve()
        if changed:
            rate = self.shares.rate
            self.class_rate[changed] = [rate[k] for k in changed]
        if not self.n_flows:
            return
        flows = self.flows[: self.n_flows]
        rates = self.class_rate[self.of[flows]]
        old = self.rate[flows]
        moved = ~((rates == old) & (old > 0))
        if moved.any():
            got, new, was = flows[moved], rates[moved], old[moved]
            left = np.maximum(0.0, self.remaining[got] - was * (now - self.since[got]))
            self.remaining[got] = left
            self.since[got] = now
            self.rate[got] = new
            self.version[got] += 1
            with np.errstate(divide="ignore", invalid="ignore"):
                self.ends[got] = np.where((left == 0) | (new == _INF), now, now + left / new)
        ends = self.ends[flows]
        first = ends.min()
        idx = int(flows[ends == first].min())
        key = (idx, int(self.version[idx]))
        if key != self.queued:
            self.queued = key
            heapq.heappush(self.events, (float(first), _FLOW_END, idx, key[1]))
        self._counted(now)

    def _counted(self, now: float) -> None:
        """One more rate update: with ``above``, every :data:`BOUND_EVERY` the run's lower
        bound checked."""
        if self.above is not None:
            self.updates += 1
            if self.updates % BOUND_EVERY == 0:
                low = self.bound(now)
                if low > self.above * (1 + MARGIN):
                    raise Exceeded(low)

    def bound(self, now: float) -> float:
        """A lower bound on the run's end, at ``now``: every resource still has to carry
        the bytes of the transfers not begun and those left of the flows in progress,
        at most at its capacity (the flows through it share it), and the run ends no
        sooner than its last flow: ``now + max_r (bytes left through r) / capacity(r)``.
        O(flows in progress + classes' resources)."""
        flows = self.flows[: self.n_flows]
        rate = self.rate[flows]
        with np.errstate(invalid="ignore"):
            left = np.maximum(0.0, self.remaining[flows] - rate * (now - self.since[flows]))
        left[rate == _INF] = 0.0  # a flow of no resource ends as it begins
        n_cls = len(self.begun)
        done = np.array(self.begun) - np.bincount(self.of[flows], left, minlength=n_cls)
        carried = np.bincount(self.inc_res, done[self.inc_class], minlength=len(self.capacity))
        with np.errstate(divide="ignore", invalid="ignore"):
            need = (self.total_bytes - carried) / self.capacity
        need = need[np.isfinite(need)]
        return now + float(need.max()) if len(need) else now
