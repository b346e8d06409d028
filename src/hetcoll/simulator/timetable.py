"""The timetable shortcut: a multi-tree timetable (``Schedule.timetable``) under two ports per
node without links, bit for bit the event loop's prediction, without lowering it to ops
(:func:`simulate_timetable`)."""

from __future__ import annotations

import numpy as np

from ..models import BoundModel
from ..schedule import Schedule
from .costs import bottleneck_throughput, distinct_costs
from .results import BLOCKERS, TransferTable

__all__ = ["simulate_timetable"]

_DEPENDENCY, _POSTED = BLOCKERS.index("dependency"), BLOCKERS.index("posted")


def simulate_timetable(
    bound: BoundModel, schedule: Schedule, total_bytes: int
) -> tuple[TransferTable, dict[str, float], float | None] | None:
    """A timetable's run without the event loop.

    Returns ``(transfers, arrival, throughput)`` as the event loop
    (:class:`~hetcoll.simulator.events.Simulation`) would, bit for bit, or None when the
    shortcut does not apply (then the caller runs the event loop).

    Model
    -----
    A timetable (:attr:`Schedule.timetable`, lowered by
    :func:`hetcoll.lowering.flows_program`) chains every node's sends one after the other
    in the order of their keys ``(period, slot)``, and its receives likewise, each
    receive posted when the previous one has completed.  Under a model with a send and a
    receive port per node (not unidirectional), no link on any route and a receive port
    busy only within the transfer (``0 <= delay - recv_busy``), a node's receive port only
    ever serves its receives, which follow one another, so no port or link ever holds a
    transfer back: by the send rule of :mod:`hetcoll.simulator` each send starts when it is
    startable, at ``max(the previous send's port release, the arrival of the data it
    forwards, the arrival of the receiver's previous receive)``, ends its port at
    ``start + send_busy`` and arrives at ``start + delay`` — the same sums of the same
    floats as the event loop.  The transfers are computed in the order of their keys
    across all nodes, which is an order of their dependencies for a timetable whose
    transfers of a slice follow each other in time (``multi_tree``'s); another order
    (a predecessor not yet computed) or a zero cost returns None.

    ``blocked_by`` is the event loop's: the dependency or posting that set the start,
    ties to the first completed (transfers complete in the order of ``(start, sender's
    platform index)``, the order the event loop commits them in).

    Complexity
    ----------
    O(M log M) for M transfers (sorts in numpy), a few Python steps per transfer, no
    :class:`~hetcoll.program.Op` objects.  Memory O(M + N).
    """
    if (
        not schedule.timetable
        or schedule.hypercube is not None
        or schedule.rooted
        or schedule.per_root
        or bound.unidirectional
        or bound.contention != "exclusive"
        or any(f.relays for f in schedule.flows)
    ):
        return None
    plan = _transfers(schedule)
    if plan is None:
        return None
    ranks, u, v, chunk, nbytes, key_period, key_slot, data = plan
    n_x = len(u)
    if not n_x:
        return None
    node = np.array(bound.platform.indices(ranks), dtype=np.int64)
    _, inverse, costs = distinct_costs(bound, node[u], node[v], nbytes)
    send_busy = np.asarray(costs.send_busy, dtype=float)
    delay = np.asarray(costs.delay, dtype=float)
    recv_busy = np.asarray(costs.recv_busy, dtype=float)
    if (
        len(costs.resources)
        or not np.all(send_busy > 0)
        or not np.all(delay > 0)
        or not np.all((recv_busy >= 0) & (delay - recv_busy >= 0))
    ):
        return None
    index = np.arange(n_x, dtype=np.int64)
    # each node's sends (and receives) in key order, ties in the lowering's list order
    by_send = _sorted_by(u, key_period, key_slot)
    by_recv = _sorted_by(v, key_period, key_slot)
    prev_send = _previous(by_send, u)
    prev_recv = _previous(by_recv, v)
    order = _sorted_by(key_period, key_slot)
    position = np.empty(n_x, dtype=np.int64)
    position[order] = index
    if (
        np.any(position[prev_send] >= position, where=prev_send >= 0)
        or np.any(position[prev_recv] >= position, where=prev_recv >= 0)
        or np.any(position[data] >= position, where=data >= 0)
    ):
        return None  # the keys do not order the dependencies
    c_send = send_busy[inverse]
    c_delay = delay[inverse]
    # -1 (none) reads the sentinel at index n_x: released and arrived at 0
    start_a = _run(order, prev_send, data, prev_recv, c_send, c_delay, n_x)
    free_a = start_a + c_send
    arrival_a = start_a + c_delay
    by, on = _blockers(start_a, free_a, arrival_a, prev_send, data, prev_recv, node[u])
    return _results(
        bound, ranks, node, u, v, chunk, nbytes, start_a, arrival_a, free_a, by, on,
        by_send, c_send, recv_busy[inverse], total_bytes,
    )  # fmt: skip


def _run(order, prev_send, data, prev_recv, c_send, c_delay, n_x: int) -> np.ndarray:
    """Each transfer's start, computed in ``order`` (every dependency before): the latest
    of its sender's previous port release, its data's arrival and its receiver's previous
    arrival (the same float operations as the event loop's)."""
    free = [0.0] * (n_x + 1)  # index -1: the sentinel, 0
    arrive = [0.0] * (n_x + 1)
    start = [0.0] * n_x
    o = order.tolist()
    rows = zip(
        o,
        prev_send[order].tolist(),
        data[order].tolist(),
        prev_recv[order].tolist(),
        c_send[order].tolist(),
        c_delay[order].tolist(),
        strict=True,
    )
    for x, ps, dt, pr, cs, cd in rows:
        t = free[ps]
        a = arrive[dt]
        if a > t:
            t = a
        a = arrive[pr]
        if a > t:
            t = a
        start[x] = t
        free[x] = t + cs
        arrive[x] = t + cd
    return np.array(start)


def _blockers(start, free, arrival, prev_send, data, prev_recv, sender_node):
    """What set each start, as the event loop says (``blocked_by``, ``blocked_on``): the
    send's dependencies (the previous send's release, the data's arrival; at equal times
    the first completed, in the event loop's commit order ``(start, sender's platform
    index)``), else the posting of its receive (the receiver's previous arrival); none at
    0."""
    has_s, has_d = prev_send >= 0, data >= 0
    s_t = np.where(has_s, free[prev_send], 0.0)
    d_t = np.where(has_d, arrival[data], 0.0)
    ready = np.maximum(s_t, d_t)
    # the dependency that set ready: the data when it is later, or equal and committed
    # before the previous send (or there is no previous send)
    ps, dt = np.maximum(prev_send, 0), np.maximum(data, 0)
    first = (start[dt] < start[ps]) | (
        (start[dt] == start[ps]) & (sender_node[dt] < sender_node[ps])
    )
    take_data = has_d & (~has_s | (d_t > s_t) | ((d_t == s_t) & first))
    ready_by = np.where(take_data, data, np.where(has_s, prev_send, -1))
    dep = ready == start
    by = np.where(start > 0, np.where(dep, ready_by, prev_recv), -1)
    on = np.where(start > 0, np.where(dep, _DEPENDENCY, _POSTED), -1)
    return by, on


def _sorted_by(*keys: np.ndarray) -> np.ndarray:
    """The indices sorted by ``keys`` (integer arrays, the first the most significant),
    ties in index order: ``np.lexsort((index, *reversed(keys)))``, as one stable sort of
    the keys packed into one integer when they fit (a third of the time at 10^5-10^6
    transfers)."""
    packed = np.zeros(len(keys[0]), dtype=np.int64)
    scale = 1
    for key in reversed(keys):
        low = int(key.min(initial=0))
        width = int(key.max(initial=0)) - low + 1
        if scale * width >= 2**62:  # too wide to pack
            return np.lexsort((np.arange(len(keys[0])), *reversed(keys)))
        packed += (key.astype(np.int64) - low) * scale
        scale *= width
    return np.argsort(packed, kind="stable")


def _previous(order: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """For each transfer, the one before it in ``order`` with the same ``owner`` (-1)."""
    prev = np.full(len(order), -1, dtype=np.int64)
    same = owner[order[1:]] == owner[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    return prev


def _transfers(schedule: Schedule, order=None):
    """Every transfer of the timetable (or send order: an entry without a slot has its
    position in its node's order, as the lowering keys it), in the order the lowering
    lists a node's sends (flow by flow, node by node, child by child, segment by segment):
    rank indices ``u``, ``v`` (into ``ranks``, the lowering's), chunk ids, bytes, the key
    ``(period, slot)`` and ``data``, the transfer that brought the forwarded segment to
    ``u`` (-1 at the root).  None when some sending node has no listing (its sends would
    not be timetabled).  ``order``: the schedule's when None."""
    order = (schedule.order or {}) if order is None else order
    ranks: list[str] = []
    rank_of: dict[str, int] = {}
    for f in schedule.flows:
        for r in f.tree.nodes:
            if r not in rank_of:
                rank_of[r] = len(ranks)
                ranks.append(r)
    # each flow's listings (slots, lags) per (node, child), in one pass over the order
    nflows = len(schedule.flows)
    by_flow: list[dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]] = [
        {} for _ in range(nflows)
    ]
    for node, sends in order.items():
        for (flow, child), slot_lag in _listings(sends, nflows).items():
            by_flow[flow][(node, child)] = slot_lag
    us, vs, chunks, sizes, periods, slots, datas = [], [], [], [], [], [], []
    n_x, base = 0, 0
    for fi, flow in enumerate(schedule.flows):
        listed = by_flow[fi]
        seg_sizes = np.array([n for _, n in flow.segments()], dtype=np.int64)
        nseg = len(seg_sizes)
        k = np.arange(nseg, dtype=np.int64)
        into: dict[str, int] = {}  # node -> first transfer of its parent edge in this flow
        tree = flow.tree
        for parent in tree.nodes:  # parents before children: into[parent] is known
            for child in tree.children.get(parent, ()):
                places = listed.get((parent, child))
                if not places:
                    return None
                slot, lag = np.array(places[0], np.int64), np.array(places[1], np.int64)
                m = len(slot)
                us.append(np.full(nseg, rank_of[parent], np.int64))
                vs.append(np.full(nseg, rank_of[child], np.int64))
                chunks.append(base + k)
                sizes.append(seg_sizes)
                periods.append(k // m + lag[k % m])
                slots.append(slot[k % m])
                up = into.get(parent)
                datas.append(np.full(nseg, -1, np.int64) if up is None else up + k)
                into[child] = n_x
                n_x += nseg
        base += nseg
    if not us:
        return None
    cat = np.concatenate
    return ranks, cat(us), cat(vs), cat(chunks), cat(sizes), cat(periods), cat(slots), cat(datas)


def _listings(sends, nflows: int) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    """A node's ``sends`` per ``(flow, child)`` (flows ``0 <= flow < nflows`` only): the
    slots (an entry without a slot: its position in ``sends``) and the lags of its
    entries, in their order.  Entries are asked about once per distinct object (a send
    order repeats a few hundred objects 490 000 times at n = 50), and grouped in numpy."""
    ids = list(map(id, sends))
    distinct = dict(zip(ids, sends, strict=True))  # first appearance order
    code_of = {x: j for j, x in enumerate(distinct)}
    code = np.fromiter(map(code_of.__getitem__, ids), dtype=np.int64, count=len(ids))
    pair_of: dict[tuple[int, str], int] = {}
    pair, slot, lag = [], [], []
    for send in distinct.values():
        ok = 0 <= send.flow < nflows
        pair.append(pair_of.setdefault((send.flow, send.child), len(pair_of)) if ok else -1)
        slot.append(-1 if send.slot is None else send.slot)
        lag.append(send.lag)
    p = np.array(pair, dtype=np.int64)[code]
    s = np.array(slot, dtype=np.int64)[code]
    slots = np.where(s < 0, np.arange(len(ids), dtype=np.int64), s)
    lags = np.array(lag, dtype=np.int64)[code]
    by_pair = np.argsort(p, kind="stable")  # each pair's entries in their order
    ends = np.cumsum(np.bincount(p + 1, minlength=len(pair_of) + 1)).tolist()
    out = {}
    for key, j in pair_of.items():
        rows = by_pair[ends[j] : ends[j + 1]]  # (pair -1, left out, sorts first)
        out[key] = (slots[rows], lags[rows])
    return out


def _results(
    bound, ranks, node, u, v, chunk, nbytes, start, arrival, free, by, on,
    by_send, send_busy, recv_busy, total_bytes, commit=None, links=None,
):  # fmt: skip
    """The event loop's outputs: transfers by start, ties in its commit order (``(commit,
    sender's platform index)``, ``commit`` the time each port took its send, the start
    when None), each rank's last arrival, the bottleneck throughput (port loads summed
    rank by rank in program order).  ``links``: ``(costs, inverse, held, link)`` when the
    transfers cross links (their loads count, and a transfer ``held`` by its link names
    it)."""
    st = np.array(start)
    order = np.lexsort((node[u], st) if commit is None else (node[u], commit, st))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    b = np.array(by, dtype=np.int64)
    b = np.where(b >= 0, position[np.maximum(b, 0)], -1)[order]
    transfers = TransferTable(  # (numpy columns: made lists when first read)
        ranks,
        u[order],
        v[order],
        chunk[order],
        nbytes[order],
        st[order],
        np.array(arrival)[order],
        np.array(free)[order],
        b,
        np.array(on, dtype=np.int64)[order],
        None if links is None else _held_links(bound, links, order),
    )
    last = np.zeros(len(ranks))
    np.maximum.at(last, v, np.array(arrival))
    arrival_of = dict(zip(ranks, last.tolist(), strict=True))
    # the event loop lists sends rank by rank (the lowering's rank order), then in the
    # rank's send order
    g = by_send  # sorted by rank first
    throughput = bottleneck_throughput(
        total_bytes, len(ranks), u[g], v[g], send_busy[g], recv_busy[g], False,
        [] if links is None else _link_loads(links[0], links[1]),
    )  # fmt: skip
    return transfers, arrival_of, throughput


def _held_links(bound, links, order) -> list[tuple[str, str] | None]:
    """Each transfer's blocking link (in ``order``): its own where it was held, else None."""
    costs, _inverse, held, link = links
    if not len(costs.resources):
        return [None] * len(order)
    # each link's name asked once: 0 for none, 1 + r for link r
    code = np.where(held[order], link[order] + 1, 0)
    names: list = [None] * (int(code.max()) + 1)
    for r in np.unique(code[code > 0]).tolist():
        names[r] = bound.resource_name(r - 1)
    return list(map(names.__getitem__, code.tolist()))


def _link_loads(costs, inverse) -> list[np.ndarray]:
    """The links' busy times, as the event loop sums them: each distinct transfer's link
    window times its uses, per link."""
    if not len(costs.resources):
        return []
    uses = np.bincount(inverse, minlength=len(costs.send_busy)).astype(float)
    per_link = np.repeat(uses * costs.window()[1], np.diff(costs.offsets))
    n_resources = int(costs.resources.max()) + 1
    return [np.bincount(costs.resources, per_link, minlength=n_resources)]
