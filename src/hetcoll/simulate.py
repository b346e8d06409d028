"""The simulator: the one place that turns a schedule into the times a user sees.

:func:`simulate` lowers a :class:`~hetcoll.schedule.Schedule` to its per-rank program and runs
it under a cost model as a discrete-event simulation, with the rules the engine follows
(``DEVELOPING.md``, "one rule shared by the simulator and the engine"):

- a send is *startable* at ``t`` when its dependencies have completed by ``t`` and its
  matching receive is posted by ``t`` (rendezvous);
- **send order**: a rank has one send port.  When it is free at ``F`` the rank takes, among
  its sends startable at ``F``, the *first in program order*; if none is, the first to
  become startable (ties: program order).  The taken send owns the port: the transfer
  starts at ``S = max(F, receiver's receive port free, route links free)``, the sender
  waits holding its port (a later send never overtakes it), and the port is busy until
  ``S + send_busy``;
- the receiver's receive port (for models that have one; a single port per node for
  unidirectional one-port models) is busy for the ``recv_busy`` that ends at the arrival,
  and the receive completes at the arrival ``S + delay``;
- resources are granted in start-time order; at equal times a transfer that has waited
  longer (taken its port earlier) goes first, then the lower node index.

**Link contention** is the model's (``BoundModel.contention``):

- ``"exclusive"``: a transfer holds every directed link of its route from its start to its
  arrival, latency included (circuit/wormhole switching); a transfer that needs a held link
  waits for it, holding its sender's port;
- ``"shared"``: flow level, as SimGrid's CM02: node costs and latency occupy no link, then
  the bytes flow at a rate given by max-min fair sharing of each directed link's bandwidth
  among the flows crossing it at that moment (progressive filling, recomputed whenever a
  flow starts or ends); sender and receiver ports are busy until the arrival.

Every :class:`Transfer` says what held back its start (``blocked_by``: the transfer that
completed its last dependency or held the port or link it waited for; ``blocked_on``: which).

Complexity: a program of M operations costs O(M log M) time plus the total length of the
routes its transfers cross (each link of a route is looked at twice), and O(M + N) memory
besides the routes; costs and routes are computed once per distinct (sender, receiver,
size) with numpy.  When some route is longer than 64 links, exclusive bookings are kept
per transfer instead of per link (:class:`_RouteBooks`): placing a transfer costs
O(P + B (W + log B)) numpy work for a route of P links spanning W 64-link words and B
transfers in progress, however many bookings it waits behind.  Under ``"shared"``
contention every flow start or end also recomputes the max-min fair rates of the flows in
progress (O(F P) per round for F flows of P links), and a port released by a flow lets
every transfer waiting for it try again.  Concurrent collectives (several flows, several
buffers) share every node's ports.
"""

from __future__ import annotations

import gc
import heapq
import math
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from .errors import ScheduleError
from .models import BoundModel, TransferCosts, get_model
from .platform import Platform
from .schedule import Program, Schedule, check_delivery

__all__ = ["Transfer", "Prediction", "simulate", "simulate_program", "BLOCKERS"]

#: What can hold back a transfer's start, in the order they are reported when several do.
BLOCKERS = ("dependency", "posted", "send_port", "recv_port", "link")


@dataclass(frozen=True)
class Transfer:
    """One simulated message: who, which chunk, when it started, arrived, freed the sender.

    ``blocked_by`` is the index (in :attr:`Prediction.transfers`) of the transfer that set
    this one's start, and ``blocked_on`` what it waited for: ``"dependency"`` (the data: the
    transfer that completed the send's last dependency), ``"posted"`` (the receiver posting
    its receive: the transfer that completed that receive's last dependency),
    ``"send_port"`` (the sender's port, held by its previous send, or by a receive on a
    unidirectional port), ``"recv_port"`` (the receiver's port) or ``"link"`` (the directed
    link ``blocked_link = (from, to)``, held under exclusive contention).  Both are None
    when nothing held it back (it started at 0, or its dependencies were met at the start).
    """

    sender: str
    receiver: str
    chunk: int
    nbytes: int
    start: float
    arrival: float
    sender_free: float
    blocked_by: int | None = None
    blocked_on: str | None = None
    blocked_link: tuple[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "sender": self.sender,
            "receiver": self.receiver,
            "chunk": self.chunk,
            "nbytes": self.nbytes,
            "start": self.start,
            "arrival": self.arrival,
            "blocked_by": self.blocked_by,
            "blocked_on": self.blocked_on,
        }
        if self.blocked_link is not None:
            out["blocked_link"] = list(self.blocked_link)
        return out


@dataclass(frozen=True)
class Prediction:
    """The simulator's answer, JSON-serialisable via :meth:`to_dict`.

    Attributes
    ----------
    makespan : float
        Seconds from the start until the last receive completes (the last member holds its
        data): the latency of a broadcast as Banikazemi et al. Sec. 7.1.2 define it.
    arrival : dict
        For every participant, when it holds everything it receives (0 for a source).
    throughput : float or None
        Steady-state bytes per second.  For a pipelined schedule (every receiver gets its
        data in several messages), the rate this run achieved: the slowest receiver's bytes
        over time between holding a quarter and three quarters of its data
        (:func:`hetcoll.pipeline.measure`; for one pipelined tree, exactly Beaumont et
        al.'s closed form).  Otherwise message bytes over the total busy time of the
        bottleneck resource (a port or a link).  None when no resource is ever busy or the
        message is empty.
    transfers : list of Transfer
        Every message, in start order.
    slices_per_second : float or None
        A pipelined schedule's ``throughput`` in segments (slices) per second.
    """

    algorithm: str
    collective: str
    model: Any
    nbytes: int
    makespan: float
    arrival: dict[str, float]
    throughput: float | None
    transfers: list[Transfer] = field(repr=False)
    slices_per_second: float | None = None

    def sends(self) -> list[tuple[str, str]]:
        """``(sender, receiver)`` pairs ordered by the start of their first message.

        A sender's pairs appear in the order it issues them: a rank starts its sends in
        program order, one at a time.
        """
        seen: dict[tuple[str, str], None] = {}
        for t in self.transfers:
            seen.setdefault((t.sender, t.receiver))
        return list(seen)

    def to_dict(self, transfers: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "algorithm": self.algorithm,
            "collective": self.collective,
            "model": self.model,
            "nbytes": self.nbytes,
            "predicted_time": self.makespan,
            "throughput": self.throughput,
            "slices_per_second": self.slices_per_second,
            "sends": [list(p) for p in self.sends()],
            "arrival": dict(self.arrival),
        }
        if transfers:
            out["transfers"] = [t.to_dict() for t in self.transfers]
        return out


def simulate(
    platform: Platform,
    schedule: Schedule,
    model: Any = None,
) -> Prediction:
    """Predict the time of ``schedule`` on ``platform`` under ``model``.

    Parameters
    ----------
    platform : Platform
    schedule : Schedule
    model : str, mapping or CostModel, optional
        Defaults to the platform's model.

    Returns
    -------
    Prediction

    Raises
    ------
    ScheduleError
        If the schedule is invalid (a node sends data it does not hold, a receive with no
        send), deadlocks, or is a bcast that does not reach every node of ``platform``.
    UnknownNodeError
        If the schedule names a node the platform does not have.

    Notes
    -----
    O(M log M) for M = number of messages, plus the length of their routes; see the module
    docstring for the rules.

    Examples
    --------
    Banikazemi et al. (1998), Fig. 1(a): MPICH's binomial tree takes 700 µs.

    >>> from hetcoll import load_platform, plan
    >>> p = load_platform("fig1")
    >>> round(simulate(p, plan(p, "1", method="binomial")).makespan * 1e6, 6)
    700.0
    """
    return _predict(platform, schedule, model)


def _predict(platform: Platform, schedule: Schedule, model: Any, fast: bool = True) -> Prediction:
    """:func:`simulate`; ``fast=False`` never takes the one-tree shortcut
    (:func:`_simulate_tree`), so that tests can compare the two."""
    check_delivery(schedule, platform)  # a bcast that misses nodes has no time to predict
    cost_model = get_model(model) if model is not None else platform.model
    bound = cost_model.bind(platform)
    total_bytes = schedule.nbytes * len(schedule.buffers)
    program = None
    with _gc_paused():
        quick = _simulate_tree(bound, schedule, total_bytes) if fast else None
        if quick is None:
            program = schedule.program()
            sim = _Simulation(bound, program)  # names unknown nodes first
            sim.run()
            transfers = sim.transfers()
            arrival = sim.arrivals()
            throughput = sim.throughput(total_bytes)
        else:
            transfers, arrival, throughput = quick
    makespan = max(arrival.values(), default=0.0)
    steady = None
    if schedule.nbytes and any(f.chunks > 1 for f in schedule.flows):
        from .pipeline import measure

        slice_size = next((f.segment_size for f in schedule.flows if f.segment_size), None)
        # the shortcut's transfers equal the event loop's, so the program they ran is this one
        steady = measure(program or schedule.program(), transfers, slice_size)
        throughput = steady.bytes_per_second or throughput
    return Prediction(
        algorithm=schedule.algorithm,
        collective=schedule.collective,
        model=cost_model.to_spec(),
        nbytes=schedule.nbytes,
        makespan=makespan,
        arrival=arrival,
        throughput=throughput,
        transfers=transfers,
        slices_per_second=steady.slices_per_second if steady else None,
    )


def simulate_program(
    bound: BoundModel, program: Program
) -> tuple[list[Transfer], dict[str, list[float]]]:
    """Run ``program`` under a bound model: the transfers in start order and each op's
    completion time (``done[rank][i]``).  Raises :class:`ScheduleError` on a deadlock."""
    with _gc_paused():
        sim = _Simulation(bound, program)
        sim.run()
        transfers = sim.transfers()
    return transfers, {rank: sim.done_of(rank) for rank in program.ops}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a run allocates an object or two per operation,
    and the collections that allocation triggers would scan every one of them again and
    again (half the time of a 100 000-transfer run).  Nothing a run makes needs the cycle
    collector before it ends; reference counting frees the rest as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _distinct_costs(
    bound: BoundModel, u: np.ndarray, v: np.ndarray, size: np.ndarray
) -> tuple[np.ndarray, np.ndarray, TransferCosts]:
    """The costs of transfers ``(u[i], v[i], size[i])`` (node indices, bytes), asked of the
    model once per distinct triple, in the triples' sorted order: ``(uniq, inverse, costs)``
    where ``uniq`` holds the distinct triples (rows), ``costs`` their costs and
    ``inverse[i]`` the row of transfer ``i``.  Whoever asks about the same set of triples
    gets the same floating-point values."""
    sizes, size_idx = np.unique(size, return_inverse=True)
    n_nodes = len(bound.platform)
    key = (u * n_nodes + v) * max(1, len(sizes)) + size_idx.reshape(-1)
    first, inverse = np.unique(key, return_index=True, return_inverse=True)[1:]
    uniq = np.stack([u[first], v[first], size[first]], axis=1).reshape(-1, 3)
    costs = bound.costs(uniq[:, 0], uniq[:, 1], uniq[:, 2])
    return uniq, inverse.reshape(-1), costs


# Event kinds, in the order they are handled at equal times: a flow that ends frees its
# ports and bandwidth first, then flows begin, then waiting transfers try again, and last
# idle ports choose their next send.
_FLOW_END, _FLOW_BEGIN, _ATTEMPT, _DECIDE = 0, 1, 2, 3
_INF = math.inf
_SHORT_ROUTE = 64  # links


class _Simulation:
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
        uniq, inverse, costs = _distinct_costs(self.bound, u, v, np.array(nbytes, dtype=np.int64))
        self.c_u, self.c_v = uniq[:, 0], uniq[:, 1]
        self.c_bytes = uniq[:, 2].tolist()
        self.c_send = np.asarray(costs.send_busy, dtype=float).tolist()
        self.c_delay = np.asarray(costs.delay, dtype=float).tolist()
        self.c_recv = np.asarray(costs.recv_busy, dtype=float).tolist()
        self.resources, self.offsets = costs.resources, costs.offsets
        off = costs.offsets.tolist()
        # a route longer than _SHORT_ROUTE links: every route is an array and exclusive
        # bookings go through numpy (_RouteBooks: a line of thousands of nodes must not cost
        # Python work per link); else routes are tuples (quicker than numpy on a few links)
        self.long_routes = bool(len(off) > 1 and np.diff(costs.offsets).max() > _SHORT_ROUTE)
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

    def run(self) -> None:
        """Process events in time order until none is left (see the module docstring)."""
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
        node = self.node
        c_send, c_delay, c_recv, c_path = self.c_send, self.c_delay, self.c_recv, self.c_path
        shared = self.shared
        ready = [0.0] * total  # latest dependency completion so far
        ready_by = [-1] * total  # the transfer that set it
        posted = [_INF] * total  # receives: when posted (inf: not yet)
        posted_by = [-1] * total
        enabled = [False] * total  # sends: dependencies done
        done = [math.nan] * total
        pending: list[list[tuple[float, int]]] = [[] for _ in range(n_ranks)]
        startable: list[list[int]] = [[] for _ in range(n_ranks)]
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
        records: list[list[Any]] = []  # [g, start, arrival, sender free, by, on, link]
        events: list[tuple] = []
        route_books = _RouteBooks(self.n_resources) if self.long_routes and not shared else None

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
            heappush(pending[k], (st, g))
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
            pend, queue = pending[k], startable[k]
            if port_free[k] > now:  # a receive took a unidirectional port meanwhile
                if (pend or queue) and port_free[k] < _INF:
                    wake(k, now)
                return
            while pend and pend[0][0] <= now:
                heappush(queue, heappop(pend)[1])
            if not queue:
                if pend:
                    wake(k, pend[0][0])
                return
            g = heappop(queue)  # the first startable send in program order
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
                port_free[k] = _INF
                port_by[k] = idx
                if c_recv[c] > 0:
                    recv_free[v] = _INF
                    recv_by[v] = idx
                records.append([g, start, math.nan, math.nan, by, on, res])
                heappush(events, (start + c_lead[c], _FLOW_BEGIN, idx))  # type: ignore[index]
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
            route = None
            if path is not None and d > 0 and route_books is not None:
                route = route_books.route(c, path)
            now = start
            by, on, res = -1, None, -1
            links_free = -_INF  # route_books: the route is known to be free from here
            moved = True
            while moved:
                moved = False
                for r, off, length, what in ports:
                    hit = _conflict(port_book[r], start + off, length, now)
                    if hit is not None:
                        start = hit[1] - off
                        while start + off < hit[1]:  # rounding: else the same hit forever
                            start = math.nextafter(start, _INF)
                        by, on, res = hit[2], what, -1
                        moved = True
                if route is not None:
                    if start != links_free:  # the earliest start on every link, at once
                        start, hit = route_books.earliest(route, start, d)  # type: ignore[union-attr]
                        links_free = start
                        if hit is not None:
                            by, on, res = hit[0], "link", hit[1]
                            moved = True
                elif path is not None and d > 0 and max(map(link_last.__getitem__, path)) > start:
                    for link in path:
                        if link_last[link] <= start:
                            continue  # free from start on
                        hit = _conflict(link_book[link], start, d, now)
                        if hit is not None:
                            start = hit[1]
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
                _book(port_book[r], (start + off, start + off + length, idx), now)
            if route is not None:
                route_books.book(route, start, arrival, idx, now)  # type: ignore[union-attr]
            elif path is not None and d > 0:
                booking = (start, arrival, idx)
                if max(map(link_last.__getitem__, path)) <= now:  # the links are idle
                    for link in path:
                        link_book[link] = [booking]
                        link_last[link] = arrival
                else:
                    for link in path:
                        if link_last[link] <= start:  # after every booking: append
                            book = link_book[link]
                            if link_last[link] <= now:
                                book.clear()
                            book.append(booking)
                            link_last[link] = arrival
                        else:
                            _book(link_book[link], booking, now)
            records.append([g, start, arrival, send_done, by, on, res])
            busy[k] = False
            complete(g, send_done, idx)
            complete(match[g], arrival, idx)
            if pending[k] or startable[k]:
                wake(k, send_done)

        def finish_flow(idx: int, now: float) -> None:
            """Shared contention: transfer ``idx``'s bytes are all in at ``now``."""
            rec = records[idx]
            g = rec[0]
            k, c, v = owner[g], cost[g], peer[g]
            rec[2] = rec[3] = now
            port_free[k] = now
            port_by[k] = idx
            if c_recv[c] > 0:
                recv_free[v] = now
                recv_by[v] = idx
            busy[k] = False
            for rank in (k, v):  # who waited for these ports tries now, first asked first
                for _, _, w in waiters.pop(rank, ()):
                    heappush(events, (now, _ATTEMPT, taken_at[w], node[owner[w]], w))
            complete(g, now, idx)
            complete(match[g], now, idx)
            for rank in (k, v):
                if not busy[rank] and (pending[rank] or startable[rank]):
                    wake(rank, now)

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

    def transfers(self) -> list[Transfer]:
        """The transfers in start order (ties: the order their ports took them)."""
        ranks, owner, peer = self.ranks, self.owner, self.peer
        records = self.records
        order = sorted(range(len(records)), key=lambda i: records[i][1])
        position = [0] * len(records)
        for pos, i in enumerate(order):
            position[i] = pos
        name = self.bound.resource_name
        out = []
        for i in order:
            g, start, arrival, free, by, on, res = records[i]
            link = name(res) if res >= 0 and self.n_resources else None
            out.append(
                Transfer(
                    ranks[owner[g]],
                    ranks[peer[g]],
                    self.chunk[g],
                    self.c_bytes[self.cost[g]],
                    start,
                    arrival,
                    free,
                    position[by] if by >= 0 else None,
                    on if by >= 0 else None,
                    link if by >= 0 else None,
                )
            )
        return out

    def throughput(self, total_bytes: int) -> float | None:
        """Message bytes over the busy time of the busiest resource: a send port (its
        sends' ``send_busy``), a receive port (``recv_busy``) or a link (exclusive: the
        transfers' ``delay``; shared: their bytes over the link's bandwidth)."""
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
                per_link = np.repeat(uses * np.array(self.c_delay), lengths)
            links.append(np.bincount(self.resources, per_link, minlength=self.n_resources))
        return _throughput(
            total_bytes,
            len(self.ranks),
            owner,
            peer,
            np.array(self.c_send)[cost],
            np.array(self.c_recv)[cost],
            self.bound.unidirectional,
            links,
        )


def _throughput(
    total_bytes: int,
    n_ranks: int,
    owner: np.ndarray,
    peer: np.ndarray,
    send_busy: np.ndarray,
    recv_busy: np.ndarray,
    unidirectional: bool,
    link_loads: list[np.ndarray],
) -> float | None:
    """``total_bytes`` over the busy time of the busiest resource, given every send's
    ``owner`` and ``peer`` (rank indices), ``send_busy`` and ``recv_busy``, listed rank by
    rank in program order (each port's load is summed in that order), and the loads of the
    links."""
    if total_bytes == 0:
        return None
    send = np.bincount(owner, send_busy, minlength=n_ranks)
    recv_load = np.bincount(peer, recv_busy, minlength=n_ranks)
    if unidirectional:
        send, recv = send + recv_load, np.zeros(0)
    else:
        recv = recv_load
    bottleneck = max(float(x.max(initial=0.0)) for x in [send, recv, *link_loads])
    return total_bytes / bottleneck if bottleneck > 0 else None


def _simulate_tree(
    bound: BoundModel, schedule: Schedule, total_bytes: int
) -> tuple[list[Transfer], dict[str, float], float | None] | None:
    """The common case without the event loop: one tree, no contention.

    Returns ``(transfers, arrival, throughput)`` as :class:`_Simulation` would, bit for bit,
    or None when the shortcut does not apply (then the caller runs the event loop).

    Model
    -----
    It applies to a schedule of one flow without ``order`` (lowered by
    ``Schedule._tree_program``: a node posts its receives of segments ``0 .. S-1`` at the
    start, then sends segment ``k`` to each child in turn, each send after the receive of
    ``k``) under a model with a send and a receive port per node (not unidirectional), no
    link on any route and no flows (``tini``, ``postal``, and ``hockney`` on a matrix
    platform), whose receive port, if it has one, is busy no longer than the sender's and
    from the start (``recv_busy`` is 0, or ``recv_busy == delay <= send_busy``).  A node's
    receive port then only ever serves its parent, which never overlaps its own
    transfers, and every receive is posted at 0: what a node does depends on nothing but
    when its segments arrive.  So each node's port is run on its own, parents before
    children (breadth first), by the rule of the module docstring: at ``F`` the first
    send in program order that is ready, else the first to become ready (ties: program
    order), starting at ``max(F, ready)``; ``blocked_by`` as :meth:`_Simulation.run` says
    (the transfer that brought the segment, or the port's previous send).

    The event loop starts transfers in time order, and decides at one instant rank by
    rank in platform-index order (its events are keyed ``(time, kind, node)``) as long as
    no transfer arrives at the instant it starts; each rank's sends at one instant are
    taken one after the other.  So when every arrival is later than its start (a zero
    delay, or one lost to rounding, returns None) the transfers' order is that of
    ``(start, sender's platform index, the sender's order)``.

    Complexity
    ----------
    O(M log M) for M transfers (one sort in numpy), a few Python steps per transfer, no
    :class:`~hetcoll.schedule.Op` objects; a node whose segments arrive out of order costs
    O(m log m) for its m sends (a heap).  Memory O(M + N).
    """
    if (
        schedule.hypercube is not None
        or len(schedule.flows) != 1
        or schedule.order
        or schedule.flows[0].relays  # store-and-forward hops: the event loop's ops
        or bound.unidirectional
        or bound.contention != "exclusive"
    ):
        return None
    flow = schedule.flows[0]
    tree = flow.tree
    ranks = tree.nodes
    rank_of = {r: k for k, r in enumerate(ranks)}
    node = np.array(bound.platform.indices(ranks), dtype=np.int64)
    sizes = [n for _, n in flow.segments()]
    nseg = len(sizes)
    children = tree.children  # parents breadth first: a parent's segments arrive first
    kid = [rank_of[c] for cs in children.values() for c in cs]  # edges, parent by parent
    n_edges = len(kid)
    if not n_edges:
        return None
    owner_of = np.repeat([rank_of[p] for p in children], [len(cs) for cs in children.values()])
    u, v = node[owner_of], node[np.array(kid, dtype=np.int64)]
    # the distinct (u, v, size) the event loop would ask the model about: every edge
    # carries segments of sizes[0] and, if it differs, the last one's size
    if len(bound.costs(u[:1], v[:1], np.array(sizes[:1], np.int64)).resources):
        return None  # a route with links (checked below for all): not worth all the routes
    two = sizes[-1] != sizes[0]
    size = np.repeat(np.array([sizes[0], sizes[-1]] if two else [sizes[0]], np.int64), n_edges)
    _, inverse, costs = _distinct_costs(bound, np.tile(u, 1 + two), np.tile(v, 1 + two), size)
    send_busy = np.asarray(costs.send_busy, dtype=float)
    delay = np.asarray(costs.delay, dtype=float)
    recv_busy = np.asarray(costs.recv_busy, dtype=float)
    if len(costs.resources) or not np.all(
        (recv_busy == 0) | ((recv_busy == delay) & (recv_busy <= send_busy))
    ):
        return None
    c_send, c_delay = send_busy.tolist(), delay.tolist()
    regular = inverse[:n_edges].tolist()
    final = inverse[n_edges:].tolist() if two else regular
    last = nseg - 1

    n = len(ranks)
    arrive = [0.0] * (n * nseg)  # arrive[rank * nseg + k]: when the rank holds segment k
    brought = [-1] * (n * nseg)  # ... and the transfer (its id here) that brought it
    # per transfer, by id: parent by parent, each parent's in the order its port takes them
    t_start: list[float] = []
    t_arrival: list[float] = []
    t_free: list[float] = []
    t_by: list[int] = []
    t_on: list[str | None] = []
    t_edge: list[int] = []
    t_seg: list[int] = []
    t_cost: list[int] = []
    first = 0
    for p, cs in children.items():
        base = rank_of[p] * nseg
        edges = range(first, first + len(cs))
        first += len(cs)
        ready = arrive[base : base + nseg]
        if nseg == 1 or all(map(float.__le__, ready, ready[1:])):
            takes: Any = ((k, j) for k in range(nseg) for j in edges)  # program order
        else:
            takes = _port_order(ready, edges, regular, final, c_send)
        free, prev = 0.0, -1
        for k, j in takes:
            r = ready[k]
            c = final[j] if k == last else regular[j]
            start = free if free > r else r
            if start <= 0:
                by, on = -1, None
            elif start == r:
                by, on = brought[base + k], "dependency"
            else:
                by, on = prev, "send_port"
            arrival = start + c_delay[c]
            if arrival <= start:
                return None  # the event loop would start the child's sends at this instant
            free = start + c_send[c]
            prev = len(t_start)
            t_start.append(start)
            t_arrival.append(arrival)
            t_free.append(free)
            t_by.append(by)
            t_on.append(on)
            t_edge.append(j)
            t_seg.append(k)
            t_cost.append(c)
            at = kid[j] * nseg + k
            arrive[at] = arrival
            brought[at] = prev

    edge = np.array(t_edge, dtype=np.int64)
    seg = np.array(t_seg, dtype=np.int64)
    sender = owner_of[edge]
    order = np.lexsort((node[sender], np.array(t_start)))  # stable: ties in port order
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    by = np.array(t_by, dtype=np.int64)
    by = np.where(by >= 0, position[np.maximum(by, 0)], -1)[order].tolist()
    seg_o = seg[order].tolist()
    on_o = [t_on[i] for i in order.tolist()]
    transfers = [
        Transfer(ranks[a], ranks[b], k, sizes[k], s, t, f, x if x >= 0 else None, w, None)
        for a, b, k, s, t, f, x, w in zip(
            sender[order].tolist(),
            np.array(kid)[edge[order]].tolist(),
            seg_o,
            np.array(t_start)[order].tolist(),
            np.array(t_arrival)[order].tolist(),
            np.array(t_free)[order].tolist(),
            by,
            on_o,
            strict=True,
        )
    ]
    # every arrival is > 0 and the root's entries are 0: a rank's last is the maximum
    held = arrive if nseg == 1 else [max(arrive[b : b + nseg]) for b in range(0, n * nseg, nseg)]
    arrival = dict(zip(ranks, held, strict=True))
    # port loads summed in program order (rank by rank, segment by segment, child by child)
    g = np.lexsort((edge, seg, sender))
    cost = np.array(t_cost, dtype=np.int64)[g]
    throughput = _throughput(
        total_bytes,
        n,
        sender[g],
        np.array(kid)[edge[g]],
        send_busy[cost],
        recv_busy[cost],
        False,
        [],
    )
    return transfers, arrival, throughput


def _port_order(
    ready: list[float], edges: range, regular: list[int], final: list[int], c_send: list[float]
) -> list[tuple[int, int]]:
    """The ``(segment, edge)`` sends of one node in the order its port takes them, when its
    segments arrive out of order: at ``F`` the first in program order ready by ``F``, else
    the first to become ready (ties: program order); :func:`_simulate_tree`."""
    sends = [(k, j) for k in range(len(ready)) for j in edges]  # program order
    last = len(ready) - 1
    pending = [(ready[k], i) for i, (k, _) in enumerate(sends)]
    heapq.heapify(pending)
    queue: list[int] = []
    out = []
    free = 0.0
    while pending or queue:
        while pending and pending[0][0] <= free:
            heapq.heappush(queue, heapq.heappop(pending)[1])
        if queue:
            i, start = heapq.heappop(queue), free
        else:
            start, i = heapq.heappop(pending)
        k, j = sends[i]
        out.append((k, j))
        free = start + c_send[final[j] if k == last else regular[j]]
    return out


_END = itemgetter(1)


def _conflict(
    book: list[tuple[float, float, int]], a: float, length: float, now: float
) -> tuple[float, float, int] | None:
    """The first booking of ``book`` that overlaps ``[a, a + length)``, or None.  Bookings
    over by ``now`` are dropped first (no later request can overlap them)."""
    if not book or book[-1][1] <= a:
        return None
    if book[0][1] <= now:
        del book[: bisect_right(book, now, key=_END)]
    i = bisect_right(book, a, key=_END)  # the first booking that ends after a
    if i < len(book) and book[i][0] < a + length:
        return book[i]
    return None


def _book(book: list[tuple[float, float, int]], booking: tuple[float, float, int], now: float):
    """Insert ``booking`` (it overlaps none) in start order."""
    if not book or book[-1][0] <= booking[0]:
        if book and book[-1][1] <= now:
            book.clear()
        book.append(booking)
    else:
        book.insert(bisect_right(book, booking[0], key=_START), booking)


_START = itemgetter(0)


_Route = tuple[np.ndarray, int, int, np.ndarray]  # _RouteBooks.route


class _RouteBooks:
    """Exclusive link bookings by transfer, for simulations with long routes (a line of
    thousands of nodes): no Python work per link.

    Every transfer booked and not yet over keeps one row: its interval ``[start, end)``,
    its index and the links it holds, as a bit mask (64 links a word) over the range of
    words its route spans.  The links of a route are all free for ``[t, t + d)`` when no
    booked transfer that holds one of them overlaps it (bookings on a link are disjoint:
    this is :func:`_conflict` on every link at once), and the earliest such ``t >= s`` is
    the first gap of length ``d`` in the union of those transfers' intervals, found by
    one sweep in start order (a running maximum of ends) in numpy: O(B (W + log B)) per
    request for B transfers in progress and a route spanning W words, however many
    bookings it waits behind.  Rows of transfers over by ``now`` go when the arrays fill.

    The start found is the one the per-link lists reach by passes of :func:`_conflict`
    over the route until none moves it (each move skips only times at which a booking
    overlaps, and stops at the first free one), so the times are theirs bit for bit.  The
    blocker named may differ when several bookings end at that start: here the transfer
    booked first, on the first link of the route it holds.
    """

    def __init__(self, n_links: int, capacity: int = 256) -> None:
        self.width = max(1, -(-n_links // 64))  # words per mask
        self.last = np.zeros(n_links)  # when each link's last booking ends
        self.n = 0
        self._alloc(capacity)
        self.routes: dict[int, _Route] = {}

    def _alloc(self, capacity: int) -> None:
        self.ids = np.empty(capacity, dtype=np.int64)
        self.start = np.empty(capacity)
        self.end = np.empty(capacity)
        self.lo = np.empty(capacity, dtype=np.int64)  # the words a row's route spans
        self.hi = np.empty(capacity, dtype=np.int64)
        self.mask = np.zeros((capacity, self.width), dtype=np.uint64)

    def route(self, c: int, path: np.ndarray) -> _Route:
        """``(path, lo, hi, bits)`` for cost ``c``'s route, made once: it spans words
        ``lo .. hi - 1`` of a mask and ``bits`` are its links in them."""
        got = self.routes.get(c)
        if got is None:
            lo, hi = int(path.min()) >> 6, (int(path.max()) >> 6) + 1
            held = np.zeros((hi - lo) * 64, dtype=bool)
            held[path - lo * 64] = True
            # bit j of word w is link 64 w + j, whatever the machine's byte order
            bits = np.packbits(held, bitorder="little").view("<u8")
            got = self.routes[c] = (path, lo, hi, bits)
        return got

    def earliest(self, route: _Route, s: float, d: float) -> tuple[float, tuple[int, int] | None]:
        """The earliest ``t >= s`` at which every link of ``route`` is free for
        ``[t, t + d)``, and what held it until then: ``(transfer, link)``, the transfer
        booked first among those ending at ``t`` on the route, on the first link of the
        route it holds; None when ``t == s``."""
        path, lo, hi, bits = route
        if self.last[path].max() <= s:
            return s, None  # every link is free from s on: the common case when not crowded
        n = self.n
        end = self.end[:n]
        live = np.flatnonzero((end > s) & (self.lo[:n] < hi) & (self.hi[:n] > lo))
        common = self.mask[live, lo:hi]
        common &= bits
        # the transfers on the route, in booking order (an OR along the rows: quicker than any)
        live = live[np.bitwise_or.reduce(common, axis=1) != 0]
        begin, end = self.start[live], end[live]
        order = np.argsort(begin, kind="stable")
        t = np.empty(len(live) + 1)  # t[i]: the earliest start after bookings 0 .. i-1
        t[0] = s
        np.maximum(np.maximum.accumulate(end[order]), s, out=t[1:])
        # booking i and all later ones start at t[i] + d or later: [t[i], t[i] + d) is free
        gap = np.flatnonzero(begin[order] >= t[:-1] + d)
        t_free = float(t[gap[0]] if len(gap) else t[-1])
        if t_free == s:
            return s, None
        row = int(live[np.flatnonzero(end == t_free)[0]])
        held = self.mask[row, path >> 6] >> (path & 63).astype(np.uint64)
        first = int(np.argmax(held & np.uint64(1)))
        return t_free, (int(self.ids[row]), int(path[first]))

    def book(
        self,
        route: _Route,
        start: float,
        end: float,
        idx: int,
        now: float,
    ) -> None:
        """Book ``[start, end)`` for transfer ``idx`` on every link of ``route``; rows over
        by ``now`` can go (no later request starts before ``now``)."""
        if self.n == len(self.ids):
            self._compact(now)
        r = self.n
        path, lo, hi, bits = route
        last = self.last[path]
        self.last[path] = np.maximum(last, end, out=last)
        self.ids[r], self.start[r], self.end[r], self.lo[r], self.hi[r] = idx, start, end, lo, hi
        row = self.mask[r]
        row[:] = 0  # a row reused after _compact: no stale bits
        row[lo:hi] = bits
        self.n = r + 1

    def _compact(self, now: float) -> None:
        keep = np.flatnonzero(self.end[: self.n] > now)  # in booking order
        old = (self.ids, self.start, self.end, self.lo, self.hi, self.mask)
        if 2 * len(keep) > len(self.ids):
            self._alloc(2 * len(self.ids))
        k = len(keep)
        for new, was in zip(
            (self.ids, self.start, self.end, self.lo, self.hi, self.mask), old, strict=True
        ):
            new[:k] = was[keep]
        self.n = k


class _Flows:
    """Shared contention: flows in progress and their max-min fair rates."""

    def __init__(self, sim: _Simulation, records: list, events: list, finish) -> None:
        self.sim = sim
        self.records = records
        self.events = events
        self.finish = finish
        self.capacity = sim.bound.capacity()
        self.active: dict[int, None] = {}  # transfer index -> None, in start order
        self.remaining: dict[int, float] = {}
        self.rate: dict[int, float] = {}
        self.since: dict[int, float] = {}
        self.version: dict[int, int] = {}

    def begin(self, idx: int, now: float) -> None:
        g = self.records[idx][0]
        self.remaining[idx] = float(self.sim.c_bytes[self.sim.cost[g]])
        self.rate[idx] = 0.0
        self.since[idx] = now
        self.version[idx] = 0
        self.active[idx] = None
        self._reshare(now)

    def end(self, idx: int, version: int, now: float) -> None:
        if self.version.get(idx) != version or idx not in self.active:
            return  # its rate changed since this end was predicted
        del self.active[idx]
        for d in (self.remaining, self.rate, self.since, self.version):
            del d[idx]
        self.finish(idx, now)
        self._reshare(now)

    def _reshare(self, now: float) -> None:
        flows = list(self.active)
        if not flows:
            return
        sim = self.sim
        paths, caps = [], []
        for idx in flows:
            c = sim.cost[self.records[idx][0]]
            path = sim.c_path[c]
            paths.append(np.asarray(path if path is not None else (), dtype=np.int64))
            caps.append(sim.c_cap[c])  # type: ignore[index]
        rates = max_min_rates(paths, np.array(caps), self.capacity)
        for idx, rate in zip(flows, rates.tolist(), strict=True):
            old = self.rate[idx]
            if rate == old and old > 0:
                continue
            self.remaining[idx] = max(0.0, self.remaining[idx] - old * (now - self.since[idx]))
            self.since[idx] = now
            self.rate[idx] = rate
            self.version[idx] += 1
            rem = self.remaining[idx]
            finish = now if rem == 0 or rate == _INF else now + rem / rate
            heapq.heappush(self.events, (finish, _FLOW_END, idx, self.version[idx]))


def max_min_rates(paths: list[np.ndarray], caps: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows over shared links (progressive filling).

    Flow ``i`` crosses the resources ``paths[i]`` and may not exceed ``caps[i]``; resource
    ``l`` carries at most ``capacity[l]`` in total.  Every round raises the rates of the
    flows not yet fixed equally until a resource is full (or a flow reaches its cap); the
    flows through it are fixed at that rate.  Bertsekas & Gallager, *Data Networks*,
    Sec. 6.5.2.  O(rounds x total path length), at most one round per flow.

    >>> paths = [np.array([0]), np.array([0]), np.array([1])]
    >>> max_min_rates(paths, np.full(3, np.inf), np.array([10.0, 4.0])).tolist()
    [5.0, 5.0, 4.0]
    """
    f = len(paths)
    rate = np.zeros(f)
    lens = np.array([len(p) for p in paths], dtype=np.int64)
    flow_of = np.repeat(np.arange(f), lens)
    if len(flow_of):
        links, local = np.unique(np.concatenate(paths), return_inverse=True)
        left = np.asarray(capacity, dtype=float)[links].copy()
    else:
        links, local, left = np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    fixed = np.zeros(f, dtype=bool)
    caps = np.asarray(caps, dtype=float)
    while not fixed.all():
        live = ~fixed[flow_of]
        count = np.bincount(local[live], minlength=len(links))
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, left / np.maximum(count, 1), np.inf)
        best = caps.copy()
        np.minimum.at(best, flow_of[live], share[local[live]])
        best[fixed] = np.inf
        level = best[~fixed].min()
        if level == np.inf:
            rate[~fixed] = np.inf
            break
        now_fixed = ~fixed & (best <= level)
        rate[now_fixed] = level
        fixed |= now_fixed
        used = now_fixed[flow_of]
        np.subtract.at(left, local[used], level)
        np.maximum(left, 0.0, out=left)
    return rate
