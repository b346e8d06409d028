"""List schedules of a whole message over packed trees: which node sends which slice to
which child when, in time (not one period repeated), so that each tree's start-up and drain
overlap the others'.

Tree ``i`` of a packing carries ``share[i]`` of the message's slices; its ``q``-th slice comes
at ``(q + 1/2) / share[i]`` of the message's nominal order.  Under one port per node
(:func:`message_transfers`) a node sends when its send port and the child's receive port
are free; under a port per link (:mod:`.port_schedule`) when its send port and the link are.
:mod:`.multitree` turns the transfers into a timetable schedule and keeps it when it is
simulated faster than the periodic timetables or a single tree.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..patterns import OrderedSend
from .pipelined import PlanGraph

__all__ = ["listed_order", "message_transfers", "send_order", "tree_children"]


def tree_children(
    g: PlanGraph, trees: list[np.ndarray]
) -> tuple[list[dict[int, list[int]]], list[dict[int, list[tuple[float, int, int]]]]]:
    """Per tree, each node's children in the tree's edge order; per node, an empty queue
    of the slices it holds for each of its children (any tree): what the message's list
    schedules (:func:`message_transfers`, :mod:`.port_schedule`'s) start from."""
    kids: list[dict[int, list[int]]] = [{} for _ in trees]
    waiting: list[dict[int, list[tuple[float, int, int]]]] = [{} for _ in range(g.k)]
    for i, tree in enumerate(trees):
        for e in tree.tolist():
            u, v = int(g.src[e]), int(g.dst[e])
            kids[i].setdefault(u, []).append(v)
            waiting[u].setdefault(v, [])
    return kids, waiting


def message_transfers(
    g: PlanGraph, trees: list[np.ndarray], share: list[int]
) -> tuple[list[tuple[float, int, int, int, int]], float]:
    """The message's transfers ``(start, sender, receiver, tree, slice)``, list scheduled
    in time (not one period repeated), in the order they start, and when the last ends.

    At every instant a port frees or a slice arrives, each free node that holds a slice
    for a child whose receive port is free sends one (the nodes with the most work left
    first, each the slice that comes first in the message's nominal order, tree ``i``'s
    ``q``-th at ``(q + 1/2) / share[i]`` of it, to that slice's child).  A node forwards a
    slice as soon as it holds it and both ports are free, so the start-up and the drain
    take a few transfers per hop, where a periodic timetable makes a slice wait for its
    pair's turn in the period (on a Fig. 4 platform, n = 30, density 0.12, seed 0, 1 024
    slices: 17.0 s for a bound of 16.7 s, the best period's 17.6 s).  Its ports never
    overlap and each transfer starts once its slice has arrived: a feasible timetable,
    whose self-timed run (two ports per node) ends when it does.  After each instant no
    free node holds a slice for a free child, so only the nodes freed at an instant,
    those with a slice for a receiver freed at it and those that received at it are
    looked at.  O(X (log X + d)) for X transfers, d the largest degree."""
    k = g.k
    T = {(int(g.src[e]), int(g.dst[e])): float(g.T[e]) for e in range(len(g.src))}
    kids, waiting = tree_children(g, trees)
    work = [0.0] * k
    senders: list[set[int]] = [set() for _ in range(k)]
    for i, children in enumerate(kids):
        for u, vs in children.items():
            for v in vs:
                work[u] += share[i] * T[(u, v)]
                senders[v].add(u)
            vs.sort()
    # each slice by its rank in the nominal order: a heap of ints orders as one of
    # (place, tree, slice) tuples, every slice's key distinct
    keys = sorted(((q + 0.5) / s, i, q) for i, s in enumerate(share) for q in range(s))
    tree_of = [i for _p, i, _q in keys]
    slice_of = [q for _p, _i, q in keys]
    never = len(keys)  # after every rank
    # per node, (child, its heap, the transfer's seconds) in the queues' order; per tree
    # and node, the heaps of its children in that tree (None: a leaf)
    outs = [[(w, heap, T[(u, w)]) for w, heap in waiting[u].items()] for u in range(k)]
    forward: list[list[list[list[int]] | None]] = [
        [[waiting[v][w] for w in children[v]] if v in children else None for v in range(k)]
        for children in kids
    ]
    root = g.root
    for r in range(never):
        for heap in forward[tree_of[r]][root] or ():
            heap.append(r)  # ascending: already a heap
    heappush, heappop = heapq.heappush, heapq.heappop
    free_s = [0.0] * k
    free_r = [0.0] * k
    # (end, receiver, rank) of the transfers under way: the next to end first
    ends: list[tuple[float, int, int]] = []
    transfers: list[tuple[float, int, int, int, int]] = []
    span = 0.0
    t = 0.0
    # the nodes that may send at an instant: the senders to the receivers freed at it (the
    # senders freed among them) and the receivers that forward what they received
    check: set[int] | tuple[int, ...] = {root}
    parents = [tuple(sorted(x)) for x in senders]
    around = [tuple(sorted(x | {v})) for v, x in enumerate(senders)]
    while True:
        ready = []  # (-work left, node, its pick): the free nodes with a slice for a free child
        for u in check:
            if free_s[u] <= t:
                best = never  # _pick, inline: most instants look at few nodes
                for out in outs[u]:
                    w, heap, _d = out
                    if heap and heap[0] < best and free_r[w] <= t:
                        best, pick = heap[0], out
                if best < never:
                    ready.append((-work[u], u, pick))
        if len(ready) > 1:
            ready.sort()  # the nodes are distinct: never compares the picks
        for _w, u, pick in ready:
            if free_r[pick[0]] > t:  # an earlier sender took that child: the next best
                pick = _pick(outs[u], free_r, t, never)
                if pick is None:
                    continue
            v, heap, d = pick
            r = heappop(heap)
            transfers.append((t, u, v, tree_of[r], slice_of[r]))
            free_s[u] = free_r[v] = end = t + d
            work[u] -= d
            heappush(ends, (end, v, r))
        if not ends:
            break
        t, v, r = heappop(ends)
        span = t
        if not ends or ends[0][0] != t:  # most instants: one transfer ends, its nodes listed once
            heaps = forward[tree_of[r]][v]
            if heaps:  # v forwards the slice to its children in that tree
                for heap in heaps:
                    heappush(heap, r)
                check = around[v]
            else:
                check = parents[v]
            continue
        done = [(v, r)]
        while ends and ends[0][0] == t:
            done.append(heappop(ends)[1:])
        check = set()
        for v, r in done:
            check.update(senders[v])  # (the sender among them)
            heaps = forward[tree_of[r]][v]
            if heaps:
                for heap in heaps:
                    heappush(heap, r)
                check.add(v)
    return transfers, span


def _pick(outs, free_r: list[float], t: float, never: int):
    """The ``(child, heap, seconds)`` of ``outs`` whose heap's first slice comes first
    among the children free at ``t`` (ties: the first listed), None when none is.  The
    children free only become fewer during an instant and only the node pops its heaps,
    so a pick whose child is still free stays the pick."""
    best, pick = never, None
    for out in outs:
        heap = out[1]
        if heap and heap[0] < best and free_r[out[0]] <= t:
            best, pick = heap[0], out
    return pick


def listed_order(
    transfers: list[tuple[float, int, int, int, int]],
) -> dict[int, list[tuple[int, int, int, int]]]:
    """Each node's sends of a whole message listed in time (:func:`message_transfers`'s
    ``(start, sender, receiver, tree, slice)`` in start order), ``(tree, child, 0,
    slot)`` in that order, ``slot`` the transfer's rank: the listing :func:`send_order`
    takes (a pair of a tree carries its slices in order, so the slice is implicit).  Made
    only for the list schedule a planner keeps: 10^5 entries at 2 048 slices of 50 nodes.
    O(X)."""
    order: dict[int, list[tuple[int, int, int, int]]] = {}
    for slot, (_t, u, v, i, _q) in enumerate(transfers):
        order.setdefault(u, []).append((i, v, 0, slot))
    return order


def send_order(
    local_order: dict[int, list[tuple[int, int, int, int | None]]],
    flow_of: dict[int, int],
    name: list[str],
    timed: bool,
) -> dict[str, tuple[OrderedSend, ...]]:
    """A timetable's listing (per plan-graph node, ``(tree, child, lag, slot)``) as the
    schedule's send order: flow ``flow_of[tree]`` (entries of trees without a flow left
    out, and nodes left without entries), node ids ``name``, the slots only when
    ``timed``.  An entry without a slot is the same immutable value every time its flow,
    child and lag come again, so it is made once (a multi-port message at n = 50 lists
    490 000 sends of a few hundred distinct values)."""
    made: dict[tuple[int, int, int], OrderedSend] = {}
    order = {}
    for u, seq in local_order.items():
        sends = []
        for i, v, lag, slot in seq:
            if i not in flow_of:
                continue
            if timed and slot is not None:
                sends.append(OrderedSend(flow_of[i], name[v], lag, slot))
                continue
            send = made.get((i, v, lag))
            if send is None:
                send = made[(i, v, lag)] = OrderedSend(flow_of[i], name[v], lag)
            sends.append(send)
        if sends:
            order[name[u]] = tuple(sends)
    return order
