"""The one-tree shortcut: the common case (one tree, no links, no contention) without the
event loop, bit for bit the event loop's prediction (:func:`simulate_tree`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..models import BoundModel
from ..program import SendQueue
from ..schedule import Schedule
from .costs import bottleneck_throughput, distinct_costs
from .results import BLOCKERS, TransferTable

__all__ = ["simulate_tree"]


def simulate_tree(
    bound: BoundModel, schedule: Schedule, total_bytes: int
) -> tuple[TransferTable, dict[str, float], float | None] | None:
    """The common case without the event loop: one tree, no contention.

    Returns ``(transfers, arrival, throughput)`` as :class:`Simulation` would, bit for bit,
    or None when the shortcut does not apply (then the caller runs the event loop).

    Model
    -----
    It applies to a schedule of one flow without ``order`` (lowered by
    :func:`hetcoll.lowering.tree_program`: a node posts its receives of segments ``0 .. S-1`` at the
    start, then sends segment ``k`` to each child in turn, each send after the receive of
    ``k``) under a model with a send and a receive port per node (not unidirectional), no
    link on any route and no flows (``tini``, ``postal``, and ``hockney`` on a matrix
    platform), whose receive port, if it has one, is busy no longer than the sender's and
    from the start (``recv_busy`` is 0, or ``recv_busy == delay <= send_busy``).  A node's
    receive port then only ever serves its parent, which never overlaps its own
    transfers, and every receive is posted at 0: what a node does depends on nothing but
    when its segments arrive.  So each node's port is run on its own, parents before
    children (breadth first), by the rule of :mod:`hetcoll.simulator`: at ``F`` the first
    send in program order that is ready, else the first to become ready (ties: program
    order), starting at ``max(F, ready)``; ``blocked_by`` as :meth:`Simulation.run` says
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
    :class:`~hetcoll.program.Op` objects; a node whose segments arrive out of order costs
    O(m log m) for its m sends (a heap).  Memory O(M + N).
    """
    if (
        schedule.hypercube is not None
        or schedule.rooted
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
    _, inverse, costs = distinct_costs(bound, np.tile(u, 1 + two), np.tile(v, 1 + two), size)
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
    seg_o = seg[order]
    on_code = {None: -1, **{name: i for i, name in enumerate(BLOCKERS)}}
    on_o = [on_code[t_on[i]] for i in order.tolist()]
    transfers = TransferTable(
        ranks,
        sender[order].tolist(),
        np.array(kid)[edge[order]].tolist(),
        seg_o.tolist(),
        np.array(sizes, dtype=np.int64)[seg_o].tolist(),
        np.array(t_start)[order].tolist(),
        np.array(t_arrival)[order].tolist(),
        np.array(t_free)[order].tolist(),
        by,
        [w if x >= 0 else -1 for x, w in zip(by, on_o, strict=True)],
    )
    # every arrival is > 0 and the root's entries are 0: a rank's last is the maximum
    held = arrive if nseg == 1 else [max(arrive[b : b + nseg]) for b in range(0, n * nseg, nseg)]
    arrival = dict(zip(ranks, held, strict=True))
    # port loads summed in program order (rank by rank, segment by segment, child by child)
    g = np.lexsort((edge, seg, sender))
    cost = np.array(t_cost, dtype=np.int64)[g]
    throughput = bottleneck_throughput(
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
    segments arrive out of order: the send rule (:class:`~hetcoll.program.SendQueue`) with
    each send startable once its segment is in; :func:`simulate_tree`."""
    sends = [(k, j) for k in range(len(ready)) for j in edges]  # program order
    last = len(ready) - 1
    queue = SendQueue()
    for i, (k, _) in enumerate(sends):
        queue.add(ready[k], i)
    out = []
    free = 0.0
    while queue.pending or queue.due:
        i = queue.take(free)
        start = free
        if i is None:
            start, i = queue.first()
        k, j = sends[i]
        out.append((k, j))
        free = start + c_send[final[j] if k == last else regular[j]]
    return out
