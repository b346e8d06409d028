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

Complexity: a program of M operations costs O(M log M) plus the length of the routes the
transfers cross (each link of a route is looked at when the transfer starts), in O(M + N)
memory besides the routes; costs and routes are computed once per distinct (sender, receiver,
size) with numpy.  A transfer that waits for a link is re-examined each time another
transfer takes that link first.  Under ``"shared"`` contention every flow start or end
recomputes the max-min fair rates of the flows in progress, O(F P) per round for F flows
of P links.  Concurrent collectives (several flows, several buffers) share every node's
ports.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ScheduleError
from .models import BoundModel, TransferCosts, get_model
from .platform import Platform
from .schedule import Program, Schedule

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
        Steady-state bytes per second: message bytes over the total busy time of the
        bottleneck resource (a port or a link).  None when no resource is ever busy or the
        message is empty.
    transfers : list of Transfer
        Every message, in start order.
    """

    algorithm: str
    collective: str
    model: Any
    nbytes: int
    makespan: float
    arrival: dict[str, float]
    throughput: float | None
    transfers: list[Transfer] = field(repr=False)

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
        send) or deadlocks.
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
    cost_model = get_model(model) if model is not None else platform.model
    bound = cost_model.bind(platform)
    program = schedule.program()
    sim = _Simulation(bound, program)  # names unknown nodes first
    sim.run()
    transfers = sim.transfers()
    arrival = {}
    for rank, ops in program.ops.items():
        times = [t for op, t in zip(ops, sim.done_of(rank), strict=True) if op.kind != "send"]
        arrival[rank] = max(times, default=0.0)
    makespan = max(arrival.values(), default=0.0)
    return Prediction(
        algorithm=schedule.algorithm,
        collective=schedule.collective,
        model=cost_model.to_spec(),
        nbytes=schedule.nbytes,
        makespan=makespan,
        arrival=arrival,
        throughput=sim.throughput(schedule.nbytes * len(schedule.buffers)),
        transfers=transfers,
    )


def simulate_program(
    bound: BoundModel, program: Program
) -> tuple[list[Transfer], dict[str, list[float]]]:
    """Run ``program`` under a bound model: the transfers in start order and each op's
    completion time (``done[rank][i]``).  Raises :class:`ScheduleError` on a deadlock."""
    sim = _Simulation(bound, program)
    sim.run()
    return sim.transfers(), {rank: sim.done_of(rank) for rank in program.ops}


# Event kinds, in the order they are handled at equal times: a flow that ends frees its
# ports and bandwidth first, then flows begin, then waiting transfers try again, and last
# idle ports choose their next send.
_FLOW_END, _FLOW_BEGIN, _ATTEMPT, _DECIDE = 0, 1, 2, 3
_INF = math.inf


class _Simulation:
    """The state of one run: ops flattened to global ids ``g`` (rank by rank, program order),
    distinct transfer costs ``c`` (one per (sender, receiver, size))."""

    def __init__(self, bound: BoundModel, program: Program) -> None:
        self.bound = bound
        self.program = program
        platform = bound.platform
        ranks = list(program.ops)
        self.ranks = ranks
        self.node = [platform.index(r) for r in ranks]  # names unknown nodes first
        rank_of = {r: k for k, r in enumerate(ranks)}
        self.rank_of = rank_of
        matches = program.matches()

        base, total = [], 0
        for r in ranks:
            base.append(total)
            total += len(program.ops[r])
        self.base = base
        self.total = total
        is_send = [False] * total
        owner = [0] * total
        waiting = [0] * total
        dep_count = [0] * (total + 1)
        match = [0] * total
        sends: list[int] = []
        chunk_bytes = [c.nbytes for c in program.chunks]
        nbytes: list[int] = []
        peer_rank: list[int] = []
        for k, r in enumerate(ranks):
            b = base[k]
            for i, op in enumerate(program.ops[r]):
                g = b + i
                owner[g] = k
                waiting[g] = len(op.deps)
                for d in op.deps:
                    dep_count[b + d] += 1
                mr, mi = matches[(r, i)]
                match[g] = base[rank_of[mr]] + mi
                if op.kind == "send":
                    is_send[g] = True
                    sends.append(g)
                    nbytes.append(chunk_bytes[op.chunk])
                    peer_rank.append(rank_of[op.peer])
        # dependents in CSR form: dependents of g are dep_list[dep_start[g]:dep_start[g + 1]]
        dep_start = [0] * (total + 1)
        acc = 0
        for g in range(total):
            dep_start[g] = acc
            acc += dep_count[g]
        dep_start[total] = acc
        fill = dep_start[:-1].copy()
        dep_list = [0] * acc
        for k, r in enumerate(ranks):
            b = base[k]
            for i, op in enumerate(program.ops[r]):
                for d in op.deps:
                    dep_list[fill[b + d]] = b + i
                    fill[b + d] += 1
        self.is_send, self.owner, self.waiting, self.match = is_send, owner, waiting, match
        self.dep_start, self.dep_list = dep_start, dep_list
        self.peer = [0] * total  # for sends: the receiving rank
        self.cost = [0] * total  # for sends: index of its distinct cost
        for s, g in enumerate(sends):
            self.peer[g] = peer_rank[s]
        self._costs(sends, nbytes, peer_rank)

    def _costs(self, sends: list[int], nbytes: list[int], peer_rank: list[int]) -> None:
        """One vectorised model call per distinct (sender node, receiver node, size)."""
        node = np.array(self.node, dtype=np.int64)
        n_send = len(sends)
        u = node[np.array([self.owner[g] for g in sends], dtype=np.int64)] if n_send else node[:0]
        v = node[np.array(peer_rank, dtype=np.int64)] if n_send else node[:0]
        size = np.array(nbytes, dtype=np.int64)
        if n_send:
            keys = np.stack([u, v, size], axis=1)
            uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
        else:
            uniq, inverse = np.empty((0, 3), dtype=np.int64), np.empty(0, dtype=np.int64)
        costs: TransferCosts = self.bound.costs(uniq[:, 0], uniq[:, 1], uniq[:, 2])
        self.c_u, self.c_v = uniq[:, 0], uniq[:, 1]
        self.c_bytes = uniq[:, 2].tolist()
        self.c_send = np.asarray(costs.send_busy, dtype=float).tolist()
        self.c_delay = np.asarray(costs.delay, dtype=float).tolist()
        self.c_recv = np.asarray(costs.recv_busy, dtype=float).tolist()
        self.resources = costs.resources
        off = costs.offsets.tolist()
        self.c_path = [
            costs.resources[off[c] : off[c + 1]] if off[c + 1] > off[c] else None
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
        total, n_ranks = self.total, len(self.ranks)
        self.ready = [0.0] * total  # latest dependency completion so far
        self.ready_by = [-1] * total  # the transfer that set it
        self.posted = [_INF] * total  # receives: when posted (inf: not yet)
        self.posted_by = [-1] * total
        self.enabled = [False] * total  # sends: dependencies done
        self.done = [math.nan] * total
        self.pending: list[list[tuple[float, int]]] = [[] for _ in range(n_ranks)]
        self.startable: list[list[int]] = [[] for _ in range(n_ranks)]
        self.port_free = [0.0] * n_ranks
        self.port_by = [-1] * n_ranks
        if self.bound.unidirectional:
            self.recv_free, self.recv_by = self.port_free, self.port_by
        else:
            self.recv_free, self.recv_by = [0.0] * n_ranks, [-1] * n_ranks
        self.busy = [False] * n_ranks  # a send holds the port (waiting or, shared, in flight)
        self.decide_at = [_INF] * n_ranks
        self.link_free = np.zeros(self.n_resources)
        self.link_by = np.full(self.n_resources, -1, dtype=np.int64)
        self.waiters: dict[int, list[int]] = {}  # shared: attempts waiting for a rank's port
        self.taken_at = [0.0] * total  # sends: when the port took it
        self.taken_port = [(0.0, -1)] * total  # sends: (port free, holder) when taken
        # transfer records: [g, start, arrival, sender_free, blocked_by, on, link]
        self.records: list[list[Any]] = []
        self.events: list[tuple] = []
        self.flows = _Flows(self) if self.shared else None

        for g in range(total):
            if self.waiting[g] == 0:
                self._enable(g)
        events = self.events
        pop = heapq.heappop
        decide, attempt = self._decide, self._attempt
        while events:
            ev = pop(events)
            kind = ev[1]
            if kind == _DECIDE:
                decide(ev[3], ev[0])
            elif kind == _ATTEMPT:
                attempt(ev[4], ev[0])
            elif kind == _FLOW_BEGIN:
                self.flows.begin(ev[2], ev[0])  # type: ignore[union-attr]
            else:
                self.flows.end(ev[2], ev[3], ev[0])  # type: ignore[union-attr]
        self._check_complete()

    def _enable(self, g: int) -> None:
        """All of ``g``'s dependencies have completed (``ready[g]`` is final)."""
        if self.is_send[g]:
            self.enabled[g] = True
            if self.posted[self.match[g]] < _INF:
                self._known(g)
        else:
            self.posted[g] = self.ready[g]
            self.posted_by[g] = self.ready_by[g]
            s = self.match[g]
            if self.enabled[s]:
                self._known(s)

    def _known(self, g: int) -> None:
        """Send ``g``'s startable time is known: queue it on its rank."""
        st = max(self.ready[g], self.posted[self.match[g]])
        k = self.owner[g]
        heapq.heappush(self.pending[k], (st, g))
        if not self.busy[k]:
            self._wake(k, st)

    def _wake(self, k: int, t: float) -> None:
        """Make rank ``k`` choose a send at ``t`` (or when its port is free) if it has one."""
        t = max(t, self.port_free[k])
        if t < self.decide_at[k]:
            self.decide_at[k] = t
            heapq.heappush(self.events, (t, _DECIDE, self.node[k], k))

    def _decide(self, k: int, now: float) -> None:
        if self.busy[k] or self.decide_at[k] != now:
            return  # stale: the port was taken, or a nearer decision was scheduled
        self.decide_at[k] = _INF
        pend, ready = self.pending[k], self.startable[k]
        if self.port_free[k] > now:  # a receive took a unidirectional port meanwhile
            if (pend or ready) and self.port_free[k] < _INF:
                self._wake(k, now)
            return
        while pend and pend[0][0] <= now:
            heapq.heappush(ready, heapq.heappop(pend)[1])
        if not ready:
            if pend:
                self._wake(k, pend[0][0])
            return
        g = heapq.heappop(ready)  # the first startable send in program order
        self.busy[k] = True
        self.taken_at[g] = now
        self.taken_port[g] = (self.port_free[k], self.port_by[k])
        self._attempt(g, now)

    def _attempt(self, g: int, now: float) -> None:
        """Start send ``g`` now if the receiver's port and the links are free, else retry
        when they may be."""
        k, c = self.owner[g], self.cost[g]
        v = self.peer[g]
        t = now
        pf = self.port_free[k]
        if pf > t:
            t = pf
        rb = self.c_recv[c]
        if rb > 0:
            x = self.recv_free[v]
            if x == _INF:
                t = _INF
            else:
                x = x - self.c_delay[c] + rb
                if x > t:
                    t = x
        path = self.c_path[c]
        if path is not None and not self.shared:
            x = float(self.link_free[path].max())
            if x > t:
                t = x
        if t == _INF:  # shared: a port is held by a flow whose end is not known yet
            holder = k if pf == _INF else v
            self.waiters.setdefault(holder, []).append(g)
            return
        if t > now:
            heapq.heappush(self.events, (t, _ATTEMPT, self.taken_at[g], self.node[k], g))
            return
        self._commit(g, now)

    def _blocker(self, g: int, start: float) -> tuple[int, str | None, int]:
        """Which constraint set ``start``: (transfer, kind, link resource or -1)."""
        m = self.match[g]
        k, c = self.owner[g], self.cost[g]
        if start <= 0:
            return -1, None, -1
        if self.ready[g] == start:
            return self.ready_by[g], "dependency", -1
        if self.posted[m] == start:
            return self.posted_by[m], "posted", -1
        pf, pby = self.taken_port[g]
        if self.port_free[k] > pf:
            pf, pby = self.port_free[k], self.port_by[k]
        if pf == start:
            return pby, "send_port", -1
        rb = self.c_recv[c]
        v = self.peer[g]
        if rb > 0 and self.recv_free[v] - self.c_delay[c] + rb == start:
            return self.recv_by[v], "recv_port", -1
        path = self.c_path[c]
        if path is not None and not self.shared:
            vals = self.link_free[path]
            j = int(vals.argmax())
            if vals[j] == start:
                res = int(path[j])
                return int(self.link_by[res]), "link", res
        return -1, None, -1

    def _commit(self, g: int, start: float) -> None:
        k, c = self.owner[g], self.cost[g]
        v = self.peer[g]
        idx = len(self.records)
        by, on, res = self._blocker(g, start)
        if by < 0:
            on, res = None, -1
        self.busy[k] = True
        if self.shared:
            self.port_free[k] = _INF
            self.port_by[k] = idx
            if self.c_recv[c] > 0:
                self.recv_free[v] = _INF
                self.recv_by[v] = idx
            self.records.append([g, start, math.nan, math.nan, by, on, res])
            self.flows.commit(idx, g, start)  # type: ignore[union-attr]
            return
        send_done = start + self.c_send[c]
        arrival = start + self.c_delay[c]
        if send_done >= self.port_free[k]:
            self.port_free[k] = send_done
            self.port_by[k] = idx
        if self.c_recv[c] > 0 and arrival >= self.recv_free[v]:
            self.recv_free[v] = arrival
            self.recv_by[v] = idx
        path = self.c_path[c]
        if path is not None:
            self.link_free[path] = arrival
            self.link_by[path] = idx
        self.records.append([g, start, arrival, send_done, by, on, res])
        self.busy[k] = False
        self._complete(g, send_done, idx)
        self._complete(self.match[g], arrival, idx)
        if self.pending[k] or self.startable[k]:
            self._wake(k, send_done)

    def _finish_flow(self, idx: int, now: float) -> None:
        """Shared contention: transfer ``idx``'s bytes are all in at ``now``."""
        rec = self.records[idx]
        g = rec[0]
        k, c, v = self.owner[g], self.cost[g], self.peer[g]
        rec[2] = rec[3] = now
        self.port_free[k] = now
        self.port_by[k] = idx
        if self.c_recv[c] > 0:
            self.recv_free[v] = now
            self.recv_by[v] = idx
        self.busy[k] = False
        for rank in (k, v):
            for w in self.waiters.pop(rank, ()):
                heapq.heappush(self.events, (now, _ATTEMPT, self.taken_at[w], self.node[rank], w))
        self._complete(g, now, idx)
        self._complete(self.match[g], now, idx)
        for rank in (k, v):
            if not self.busy[rank] and (self.pending[rank] or self.startable[rank]):
                self._wake(rank, now)

    def _complete(self, g: int, t: float, by: int) -> None:
        self.done[g] = t
        ready, ready_by, waiting = self.ready, self.ready_by, self.waiting
        dep_list = self.dep_list
        for p in range(self.dep_start[g], self.dep_start[g + 1]):
            j = dep_list[p]
            if t > ready[j] or ready_by[j] < 0:
                ready[j] = max(ready[j], t)
                ready_by[j] = by
            waiting[j] -= 1
            if waiting[j] == 0:
                self._enable(j)

    def _check_complete(self) -> None:
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

    def done_of(self, rank: str) -> list[float]:
        """Completion time of each of ``rank``'s ops, in program order."""
        b = self.base[self.rank_of[rank]]
        return self.done[b : b + len(self.program.ops[rank])]

    def transfers(self) -> list[Transfer]:
        ranks, owner, peer = self.ranks, self.owner, self.peer
        out = []
        ids = self.bound.platform.ids
        routes = self.bound.platform.routes if self.n_resources else None
        for g, start, arrival, free, by, on, res in self.records:
            c = self.cost[g]
            link = None
            if res >= 0 and routes is not None:
                a, b = routes.resource_ends(res)
                link = (ids[a], ids[b])
            out.append(
                Transfer(
                    ranks[owner[g]],
                    ranks[peer[g]],
                    self._chunk(g),
                    self.c_bytes[c],
                    start,
                    arrival,
                    free,
                    by if by >= 0 else None,
                    on,
                    link,
                )
            )
        return out

    def _chunk(self, g: int) -> int:
        k = self.owner[g]
        return self.program.ops[self.ranks[k]][g - self.base[k]].chunk

    def throughput(self, total_bytes: int) -> float | None:
        """Message bytes over the busy time of the busiest resource: a send port (its
        sends' ``send_busy``), a receive port (``recv_busy``) or a link (exclusive: the
        transfers' ``delay``; shared: their bytes over the link's bandwidth)."""
        if total_bytes == 0:
            return None
        n_ranks, n_costs = len(self.ranks), len(self.c_send)
        sends = [g for g in range(self.total) if self.is_send[g]]
        cost = np.array([self.cost[g] for g in sends], dtype=np.int64)
        owner = np.array([self.owner[g] for g in sends], dtype=np.int64)
        peer = np.array([self.peer[g] for g in sends], dtype=np.int64)
        c_recv = np.array(self.c_recv)
        send = np.bincount(owner, np.array(self.c_send)[cost], minlength=n_ranks)
        recv_load = np.bincount(peer, c_recv[cost], minlength=n_ranks)
        if self.bound.unidirectional:
            send, recv = send + recv_load, np.zeros(0)
        else:
            recv = recv_load
        loads = [send, recv]
        if self.n_resources:
            uses = np.bincount(cost, minlength=n_costs).tolist()  # sends per cost
            cap = self.bound.capacity()
            link = np.zeros(self.n_resources)
            for c in range(n_costs):
                path = self.c_path[c]
                if path is not None and uses[c]:
                    w = self.c_bytes[c] / cap[path] if self.shared else self.c_delay[c]
                    link[path] += uses[c] * w
            loads.append(link)
        bottleneck = max(float(x.max(initial=0.0)) for x in loads)
        return total_bytes / bottleneck if bottleneck > 0 else None


class _Flows:
    """Shared contention: flows in progress and their max-min fair rates."""

    def __init__(self, sim: _Simulation) -> None:
        self.sim = sim
        self.capacity = sim.bound.capacity()
        self.active: dict[int, None] = {}  # transfer index -> None, in start order
        self.remaining: dict[int, float] = {}
        self.rate: dict[int, float] = {}
        self.since: dict[int, float] = {}
        self.version: dict[int, int] = {}

    def commit(self, idx: int, g: int, start: float) -> None:
        c = self.sim.cost[g]
        begin = start + self.sim.c_lead[c]  # type: ignore[index]
        heapq.heappush(self.sim.events, (begin, _FLOW_BEGIN, idx))

    def begin(self, idx: int, now: float) -> None:
        g = self.sim.records[idx][0]
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
        self.sim._finish_flow(idx, now)
        self._reshare(now)

    def _reshare(self, now: float) -> None:
        flows = list(self.active)
        if not flows:
            return
        sim = self.sim
        paths, caps = [], []
        for idx in flows:
            c = sim.cost[sim.records[idx][0]]
            path = sim.c_path[c]
            paths.append(path if path is not None else np.empty(0, dtype=np.int64))
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
            heapq.heappush(sim.events, (finish, _FLOW_END, idx, self.version[idx]))


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
