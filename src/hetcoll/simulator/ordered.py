"""The send-order shortcut: a schedule whose every node sends in a given order
(``Schedule.order`` without slots, or one tree, segment by segment) under a port per link
(``multi_port``: links in parallel, no receive port), bit for bit the event loop's
prediction, without lowering it to ops (:func:`simulate_ordered`)."""

from __future__ import annotations

import numpy as np

from ..models import BoundModel
from ..patterns import OrderedSend
from ..schedule import Schedule
from .costs import distinct_costs
from .results import BLOCKERS
from .timetable import _previous, _results, _sorted_by, _transfers

__all__ = ["simulate_ordered"]

_DEPENDENCY, _PORT, _LINK = (BLOCKERS.index(w) for w in ("dependency", "send_port", "link"))


def simulate_ordered(bound: BoundModel, schedule: Schedule, total_bytes: int):
    """A send order's run without the event loop.

    Returns ``(transfers, arrival, throughput)`` as the event loop
    (:class:`~hetcoll.simulator.events.Simulation`) would, bit for bit, or None when the
    shortcut does not apply (then the caller runs the event loop).

    Model
    -----
    A send order (:attr:`Schedule.order` whose entries carry no slot, lowered by
    :func:`hetcoll.lowering.flows_program`) posts every receive at the start and lists
    each node's sends; so does a single tree without one
    (:func:`hetcoll.lowering.tree_program`: segment by segment, each node's children in
    the tree's order).  Under a model with exclusive links, no receive port
    (``recv_busy == 0``), each link's window the whole transfer and each link crossed by
    the transfers of one sender and receiver only (``multi_port``: a transfer holds the
    one link it crosses), nothing couples two senders but the data they forward.  So
    when each node sends in its listed order, by the send rule of
    :mod:`hetcoll.simulator` its port takes the next send at
    ``F = max(the previous send's port release, the arrival of the data it forwards)``,
    the transfer starts at ``S = max(F, the link's release by the previous transfer on
    it)``, frees the port at ``S + send_busy`` and arrives at ``S + delay`` — the same
    floats as the event loop's.  The starts are computed node by node, each node going
    as far as the data it has received allows.

    The event loop takes the listed order only when no later send becomes startable
    first: when the next send's data arrives after the port's release, it must arrive no
    later than that of every send listed after it (ties: the listed one).  That is
    checked after the run, and the shortcut returns None where it fails, as it does for a
    zero cost, a relayed edge, a node without a listing, or a deadlock (the event loop
    names its culprit).

    Where the schedule carries its planner's starts (:attr:`Schedule.listed_starts
    <hetcoll.schedule.Schedule>`, for its own ``order``) and they solve the run's
    equations exactly, they are the run, with no Python step per transfer.

    ``blocked_by`` is the event loop's: the link's previous transfer when it held the
    start back, else the data's arrival or the port's release that set it; transfers
    listed as the event loop commits them (by start, then the time the port took them,
    then the sender's platform index).

    Complexity
    ----------
    O(M log M) for M transfers (sorts in numpy), a few Python steps per transfer, no
    :class:`~hetcoll.program.Op` objects.  Memory O(M + N).
    """
    if (
        not (schedule.order or len(schedule.flows) == 1)
        or schedule.timetable
        or schedule.hypercube is not None
        or schedule.rooted
        or schedule.per_root
        or bound.unidirectional
        or bound.contention != "exclusive"
        or any(f.relays for f in schedule.flows)
    ):
        return None
    order, hint = schedule.order, schedule.listed_starts
    if not order:  # one tree: segment by segment, each node's children in the tree's order
        hint = None  # (a hint is for the schedule's own order)
        tree = schedule.flows[0].tree
        kids = tree.children
        order = {u: tuple(OrderedSend(0, c) for c in kids[u]) for u in tree.nodes if kids.get(u)}
    plan = _transfers(schedule, order)
    if plan is None:
        return None
    ranks, u, v, chunk, nbytes, key_period, key_slot, data = plan
    node = np.array(bound.platform.indices(ranks), dtype=np.int64)
    uniq, inverse, costs = distinct_costs(bound, node[u], node[v], nbytes)
    send_busy = np.asarray(costs.send_busy, dtype=float)
    delay = np.asarray(costs.delay, dtype=float)
    recv_busy = np.asarray(costs.recv_busy, dtype=float)
    hold_offset, hold = costs.window()
    lengths = np.diff(costs.offsets)
    if (
        not np.all(send_busy > 0)
        or not np.all(delay > 0)
        or np.any(recv_busy != 0)
        or np.any(lengths > 1)
        or np.any((lengths == 1) & ((hold_offset != 0) | (hold <= 0)))
    ):
        return None
    # each link's one user: a distinct (sender, receiver) pair, the cost's row
    link = np.full(len(lengths), -1, dtype=np.int64)
    link[lengths == 1] = costs.resources
    # (asked of the distinct transfers, each a row of the costs: every row has some)
    pair = uniq[:, 0] * len(bound.platform) + uniq[:, 1]
    users = np.unique(np.stack([link[link >= 0], pair[link >= 0]]), axis=1)
    used = link[inverse] >= 0
    if len(np.unique(users[0])) != users.shape[1]:
        return None  # two pairs share a link: their bookings interleave
    by_send = _sorted_by(u, key_period, key_slot)  # each node's sends in program order
    prev_send = _previous(by_send, u)
    by_link = _sorted_by(np.where(link[inverse] >= 0, link[inverse], -1), u, key_period, key_slot)
    prev_link = np.where(used, _previous(by_link, link[inverse]), -1)
    c_send = send_busy[inverse]
    c_delay = delay[inverse]
    c_hold = np.where(used, hold[inverse], 0.0)
    run = _run(ranks, u, by_send, data, prev_link, c_send, c_delay, c_hold, order, hint)
    if run is None:
        return None
    taken, start_a = run
    free_a = start_a + c_send
    arrival_a = start_a + c_delay
    ready = np.where(data >= 0, arrival_a[np.maximum(data, 0)], 0.0)
    released = np.where(prev_send >= 0, free_a[np.maximum(prev_send, 0)], 0.0)
    if not _listed_order_kept(ready, released, by_send, u):
        return None
    by, on, at = _blockers(start_a, taken, ready, released, data, prev_send, prev_link)
    transfers, arrival, throughput = _results(
        bound, ranks, node, u, v, chunk, nbytes, start_a, arrival_a, free_a, by, on,
        by_send, c_send, recv_busy[inverse], total_bytes,
        commit=taken, links=(costs, inverse, at, link[inverse]),
    )  # fmt: skip
    return transfers, arrival, throughput


def _run(ranks, u, by_send, data, prev_link, c_send, c_delay, c_hold, order=None, hint=None):
    """``(taken, start)`` of every transfer: when its port took it and when it started,
    each node sending in its listed order as far as the data it holds allows (a node
    waits for a transfer not computed yet, and goes on when it is); None on a deadlock.
    Where a planner's starts for ``order`` (``hint``: :attr:`Schedule.listed_starts
    <hetcoll.schedule.Schedule>`) solve the run's equations exactly (:func:`_witnessed`),
    they are those times, with no Python step per transfer.

    The transfers are renumbered in their senders' listed order first, so that a node's
    run reads its costs and writes its times one after the other (at 490 000 transfers
    half the time of reading them in the lowering's order)."""
    n_x = len(u)
    counts = np.bincount(u, minlength=len(ranks))
    ends = np.cumsum(counts).tolist()
    begins = [e - c for e, c in zip(ends, counts.tolist(), strict=True)]
    position = np.empty(n_x, dtype=np.int64)
    position[by_send] = np.arange(n_x)
    d, pl = data[by_send], prev_link[by_send]
    dat_a = np.where(d >= 0, position[np.maximum(d, 0)], -1)
    plink_a = np.where(pl >= 0, position[np.maximum(pl, 0)], -1)
    cs_a, cd_a, ch_a = (c[by_send] for c in (c_send, c_delay, c_hold))
    guess = _guess(ranks, counts.tolist(), order, hint)
    if guess is not None:
        first = np.zeros(n_x, dtype=bool)
        first[[b for b, e in zip(begins, ends, strict=True) if e > b]] = True
        got = _witnessed(guess, first, dat_a, plink_a, cs_a, cd_a, ch_a)
        if got is not None:
            taken_x, start_x = np.empty(n_x), np.empty(n_x)
            taken_x[by_send], start_x[by_send] = got
            return taken_x, start_x
    dat, plink = dat_a.tolist(), plink_a.tolist()
    cs, cd, ch = cs_a.tolist(), cd_a.tolist(), ch_a.tolist()
    nan = float("nan")
    arrive = [nan] * n_x + [0.0]  # index -1: no data to forward, there from 0
    link_end = [0.0] * (n_x + 1)  # index -1: no link, free from 0
    taken = [0.0] * n_x
    start = [0.0] * n_x
    at = begins[:]  # each node's next send, a position in its listing
    port = [0.0] * len(ranks)
    waiting: list[list[int] | None] = [None] * n_x  # the nodes waiting for its data
    stack = list(range(len(ranks)))
    while stack:
        k = stack.pop()
        i, end, p = at[k], ends[k], port[k]
        while i < end:
            a = arrive[dat[i]]
            if a != a:  # not computed yet: wait for it
                x = dat[i]
                w = waiting[x]
                if w is None:
                    waiting[x] = [k]
                else:
                    w.append(k)
                break
            f = p if p >= a else a
            b = link_end[plink[i]]
            s = b if b > f else f
            taken[i] = f
            start[i] = s
            p = s + cs[i]
            arrive[i] = s + cd[i]
            link_end[i] = s + ch[i]
            w = waiting[i]
            if w is not None:
                stack += w
            i += 1
        at[k], port[k] = i, p
    if at != ends:
        return None
    taken_x, start_x = np.empty(n_x), np.empty(n_x)
    taken_x[by_send] = taken
    start_x[by_send] = start
    return taken_x, start_x


def _guess(ranks, counts, order, kept) -> np.ndarray | None:
    """The starts ``kept`` (:attr:`Schedule.listed_starts <hetcoll.schedule.Schedule>`)
    gives for ``order``, node by node in ``ranks``' order (each node's in its listed
    order), or None unless every sending node's listed sends are the very tuple kept
    (not a copy: a schedule made with another order refuses the hint it carried over),
    with one start each."""
    if kept is None or order is None:
        return None
    parts = []
    for rank, count in zip(ranks, counts, strict=True):
        if not count:
            continue
        got = kept.get(rank)
        if got is None or got[0] is not order.get(rank) or len(got[1]) != count:
            return None
        parts.append(got[1])
    return np.concatenate(parts).astype(float, copy=False) if parts else None


def _witnessed(start, first, dat, plink, cs, cd, ch):
    """``(taken, start)`` when ``start`` (in listed order) solves :func:`_run`'s equations
    exactly, else None.  Each transfer's ``taken`` is ``max(its port's release by the
    node's previous send (0 for the first), its data's arrival (0 at the root))`` and its
    start ``max(taken, its link's release by the previous transfer on it (0))``, in the
    same float operations as :func:`_run`.  Every transfer must also start after each one
    it depends on (its node's previous send, its data's, its link's previous): then the
    dependencies have no cycle, so the equations have one solution, :func:`_run`'s, and a
    ``start`` that solves them is that run, bit for bit.  O(M) numpy."""
    if not np.all(np.isfinite(start)):
        return None
    release = start + cs
    port = np.empty_like(start)
    port[1:] = release[:-1]
    port[first] = 0.0
    has_data, has_link = dat >= 0, plink >= 0
    ready = np.where(has_data, (start + cd)[dat], 0.0)
    taken = np.maximum(port, ready)
    again = np.maximum(np.where(has_link, (start + ch)[plink], 0.0), taken)
    if not np.array_equal(again, start):
        return None
    later = ~first[1:]  # a send after its node's first: after the one before it
    if (
        np.any(start[1:][later] <= start[:-1][later])
        or np.any(start[dat[has_data]] >= start[has_data])
        or np.any(start[plink[has_link]] >= start[has_link])
    ):
        return None
    return taken, start


def _listed_order_kept(ready, released, by_send, u) -> bool:
    """Whether the event loop's port takes each node's sends in their listed order: a
    send whose data arrives after the port's release (``ready > released``) is taken
    only if no send listed after it becomes startable sooner (ties: the listed one)."""
    r = ready[by_send]
    late = r > released[by_send]
    if not late.any():
        return True
    owner = u[by_send]
    ends = np.cumsum(np.bincount(owner, minlength=int(owner.max()) + 1))
    after = np.full(len(r), np.inf)
    begin = 0
    for end in ends.tolist():  # the least ready time listed after each send, per node
        if end - begin > 1:
            after[begin : end - 1] = np.minimum.accumulate(r[begin + 1 : end][::-1])[::-1]
        begin = end
    return not np.any(late & (r > after))


def _blockers(start, taken, ready, released, data, prev_send, prev_link):
    """What set each start, as the event loop says: the link's previous transfer when it
    was held past the take, else the data's arrival (``dependency``), else the port's
    previous send (``send_port``); none at 0.  ``at``: whether the link was the blocker."""
    at = start > taken
    dep = (ready == start) & (data >= 0)
    port = (released == start) & (prev_send >= 0)
    by = np.where(at, prev_link, np.where(dep, data, np.where(port, prev_send, -1)))
    on = np.where(at, _LINK, np.where(dep, _DEPENDENCY, np.where(port, _PORT, -1)))
    none = (start <= 0) | (by < 0)
    return np.where(none, -1, by), np.where(none, -1, on), at & ~none
