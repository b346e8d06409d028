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

from .pipelined import PlanGraph

__all__ = ["hold", "message_transfers", "queue_at_root", "tree_children"]


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


def queue_at_root(root: int, kids, waiting, share: list[int]) -> None:
    """Queue every slice at the root for its child in its tree, tree ``i``'s ``q``-th at
    ``(q + 1/2) / share[i]`` of the message's nominal order (a heap per child)."""
    for i, s in enumerate(share):
        for v in kids[i].get(root, ()):
            waiting[root][v] += [((q + 0.5) / s, i, q) for q in range(s)]
    for heap in waiting[root].values():
        heapq.heapify(heap)


def hold(v: int, i: int, q: int, kids, waiting, share: list[int]) -> bool:
    """``v`` holds tree ``i``'s ``q``-th slice: queue it for ``v``'s children in that tree
    at its place in the message's nominal order (the step of the one-port list schedule
    when a transfer ends); whether ``v`` has any."""
    forward = kids[i].get(v)
    if not forward:
        return False
    key = ((q + 0.5) / share[i], i, q)
    for w in forward:
        heapq.heappush(waiting[v][w], key)
    return True


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
    root = g.root
    queue_at_root(root, kids, waiting, share)
    heappush, heappop = heapq.heappush, heapq.heappop
    free_s = [0.0] * k
    free_r = [0.0] * k
    ends: list[tuple[float, int, int, int, int]] = []  # (end, sender, receiver, tree, slice)
    transfers: list[tuple[float, int, int, int, int]] = []
    span = 0.0
    t = 0.0
    check = {root}  # the nodes that may send at this instant
    while True:
        ready = [u for u in check if free_s[u] <= t]
        for u in sorted(ready, key=lambda u: (-work[u], u)) if len(ready) > 1 else ready:
            best, v = None, -1
            for w, heap in waiting[u].items():
                if heap and free_r[w] <= t and (best is None or heap[0] < best):
                    best, v = heap[0], w
            if v < 0:
                continue
            _key, i, q = heappop(waiting[u][v])
            d = T[(u, v)]
            transfers.append((t, u, v, i, q))
            free_s[u] = free_r[v] = t + d
            work[u] -= d
            heappush(ends, (t + d, u, v, i, q))
        if not ends:
            break
        t = span = ends[0][0]
        check.clear()
        while ends and ends[0][0] <= t:
            _end, u, v, i, q = heappop(ends)
            check.add(u)
            check.update(senders[v])
            if hold(v, i, q, kids, waiting, share):
                check.add(v)
    return transfers, span
