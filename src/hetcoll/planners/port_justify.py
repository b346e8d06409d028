"""Forward-backward improvement of a whole message's multi-port list schedule: the same
transfers list scheduled again, backward in time and then forward, each pass in the order
the previous one timed them (justification, as :mod:`.justify` does under one port per
node; Valls, Ballestin & Quintanilla 2005).

Under a port per link (``multi_port``) a transfer over ``u -> v`` keeps ``u``'s send port
busy ``send`` and the link ``T`` from its start (:mod:`.port_schedule`).  Time reversed,
the message's broadcast is a gather whose transfer holds the link ``T - send`` before and
through its port's ``send``: a transfer may start once every transfer that forwards its
slice onward has ended (the reversed precedences), and the port takes, among the ready
transfers, the one whose link is free first, then the one that ended latest in the forward
schedule.  Then forward again, each port taking, among the slices it holds, the one whose
link is free first, then the one that starts first in the backward schedule: the same send
rule as :func:`~hetcoll.planners.port_schedule.multi_port_transfers` (the port held until
that link is free), so the self-timed run of the schedule whose order it is ends exactly
when it does.  The passes take the list schedule's patience (:mod:`.port_slots`); the
forward pass that ends first is kept, the list schedule's when none ends sooner.

Before the forward pass the transfers of each pair of a tree are relabelled to carry its
slices in order (the ``q``-th carries slice ``q``, as the schedule's send order says), as
:func:`~hetcoll.planners.justify.justified` does; a pair's slices then also arrive in
order, so the forward pass keeps that order.

On the Fig. 4 platforms of ``benchmarks/simulated/bench_sizes.py`` (n = 50, 1 024 slices)
the list schedules end at 90.9, 91.1 and 90.9 % of the bound, the kept forward pass at
93.5, 92.0 and 92.1 % (:data:`ROUNDS` of 2; one: 93.1, 92.0 and 91.8 %; the passes with the
other patience too gain at most 0.05 % for twice the CPU).
"""

from __future__ import annotations

import heapq

import numpy as np

from .justify import _arrival
from .pipelined import PlanGraph

__all__ = ["MOST", "ROUNDS", "port_justified"]

#: the most transfers justified (a larger list schedule is kept as it is: the passes cost
#: about 5 us of CPU a transfer each; 1 024 slices at n = 50 are 50 176 transfers)
MOST = 60_000
#: backward-then-forward passes per patience
ROUNDS = 2


def port_justified(
    g: PlanGraph,
    transfers: list[tuple[float, int, int, int, int]],
    span: float,
    patiences: tuple[float, ...] = (0.0,),
    rounds: int = ROUNDS,
    critical: np.ndarray | None = None,
) -> tuple[list[tuple[float, int, int, int, int]], float]:
    """``(transfers, span)`` of the multi-port list schedule ``transfers`` (``(start,
    sender, receiver, tree, slice)`` in start order, as :func:`~hetcoll.planners.
    port_schedule.multi_port_transfers` lists them, the last ending at ``span``) or of the
    forward pass of the module docstring that ends first (ties: the earlier; ``rounds``
    backward-then-forward passes with each of ``patiences``), in the same form;
    ``transfers`` as they are when there are more than :data:`MOST`.  With ``critical``
    (per edge), both passes take the list schedule's critical rule too (a port holds for
    a critical link that frees during the send it would start instead; backward, the
    link's window before its port's), as the list schedule with it did."""
    n = len(transfers)
    if n == 0 or n > MOST or rounds <= 0:
        return transfers, span
    edge = np.full((g.k, g.k), -1, dtype=np.int64)
    edge[g.src, g.dst] = np.arange(len(g.src))
    starts0, sender, receiver, tree, piece = (np.asarray(c) for c in zip(*transfers, strict=True))
    best: tuple[float, tuple | None] = (span, None)
    for patience in patiences:
        u, v, i, q = sender.astype(np.int64), receiver.astype(np.int64), tree, piece
        starts = starts0.astype(float)
        for _ in range(rounds):
            e = edge[u, v]
            send, T = g.send[e], g.T[e]
            before = _arrival(u, v, i, q)  # -1: the root's
            has = before >= 0
            # backward: a transfer waits for every transfer that forwards its slice
            # onward; when it ends, the one that brought the slice may be ready
            back_ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(has, out=back_ptr[1:])
            waits = np.bincount(before[has], minlength=n)
            back, back_span = _passed(
                g,
                u,
                e,
                send,
                T,
                T - send,
                waits,
                back_ptr,
                before[has],
                -(starts + send),
                patience,
                critical,
            )
            # time reversed: the port's [a, a + send) is the broadcast's from
            # back_span - a - send
            u, v, i, q = _relabelled(u, v, i, back_span - back - send)
            e = edge[u, v]
            send, T = g.send[e], g.T[e]
            before = _arrival(u, v, i, q)
            has = before >= 0
            succ = np.flatnonzero(has)[np.argsort(before[has], kind="stable")]
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(before[has], minlength=n), out=ptr[1:])
            rank = np.arange(n, dtype=float)  # listed by the backward schedule's starts
            starts, fwd_span = _passed(
                g,
                u,
                e,
                send,
                T,
                np.zeros(n),
                has.astype(np.int64),
                ptr,
                succ,
                rank,
                patience,
                critical,
            )
            if fwd_span < best[0]:
                best = (fwd_span, (starts, u, v, i, q))
    if best[1] is None:
        return transfers, span
    starts, u, v, i, q = best[1]
    order = np.argsort(starts, kind="stable")
    out = list(
        zip(
            starts[order].tolist(),
            u[order].tolist(),
            v[order].tolist(),
            i[order].tolist(),
            q[order].tolist(),
            strict=True,
        )
    )
    return out, best[0]


def _relabelled(u, v, i, starts):
    """The transfers listed by ``starts`` (ties: as listed), each pair of a tree carrying
    its slices in that order: ``(u, v, tree, slice)``."""
    ranked = np.argsort(starts, kind="stable")
    u, v, i = u[ranked], v[ranked], i[ranked]
    group = (u * (int(v.max()) + 1) + v) * (int(i.max()) + 1) + i
    by_group = np.argsort(group, kind="stable")
    sorted_group = group[by_group]
    q = np.empty(len(ranked), dtype=np.int64)
    q[by_group] = np.arange(len(ranked)) - np.searchsorted(sorted_group, sorted_group)
    return u, v, i, q


def _passed(
    g: PlanGraph,
    node,
    link,
    port_time,
    link_time,
    lead,
    waits,
    ptr,
    succ,
    priority,
    patience,
    critical=None,
):
    """Each transfer's port start and when the last ends: transfer ``x`` holds ``node[x]``'s
    port ``[a, a + port_time[x])`` and its link ``[a - lead[x], a - lead[x] +
    link_time[x])``, may start once ``waits[x]`` transfers listing it among their
    successors (``succ[ptr[y]:ptr[y + 1]]``) have ended (their link windows), and a free
    port takes, among its ready transfers, the one whose link is free first (within
    ``patience`` of its port time counts as free), then the lowest ``priority``, and holds
    the port until that link is free; with ``critical`` (per link), when that link is not
    critical, a ready transfer over a critical link whose port start falls within the
    chosen send instead (the earliest).  Event driven as :func:`~hetcoll.planners.
    port_schedule.multi_port_transfers`."""
    n = len(node)
    by_rank = np.argsort(priority, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[by_rank] = np.arange(n)
    of_rank = by_rank.tolist()
    rk = rank.tolist()
    nd, ln = node.tolist(), link.tolist()
    dp, dl, ld = port_time.tolist(), link_time.tolist(), lead.tolist()
    soon_by = (patience * port_time).tolist()
    left = waits.tolist()
    nxt, nptr = succ.tolist(), ptr.tolist()
    heaps: dict[int, list[int]] = {}
    outs: list[list[tuple[list[int], int]]] = [[] for _ in range(g.k)]
    crit = [False] * len(g.T) if critical is None else [bool(c) for c in critical]
    crits: list[list[tuple[list[int], int]]] = [[] for _ in range(g.k)]
    for x in np.unique(link, return_index=True)[1].tolist():
        heaps[ln[x]] = heap = []
        outs[nd[x]].append((heap, ln[x]))
        if crit[ln[x]]:
            crits[nd[x]].append((heap, ln[x]))
    check: set[int] = set()
    for r, x in enumerate(of_rank):
        if not left[x]:
            heaps[ln[x]].append(r)  # ascending: already a heap
            check.add(nd[x])
    heappush, heappop = heapq.heappush, heapq.heappop
    free_p = [0.0] * g.k
    free_l = [0.0] * len(g.T)
    start = [0.0] * n
    instants: list[float] = []  # each once; at each, x when x's link frees, ~x its port
    at: dict[float, list[int]] = {}
    t = span = 0.0
    inf = float("inf")
    while True:
        for w in sorted(check) if len(check) > 1 else check:
            while free_p[w] <= t:
                b_soon, b_rank, b_at, pick, b_e = inf, n, inf, None, -1
                for heap, e in outs[w]:
                    if heap:
                        r = heap[0]
                        x = of_rank[r]
                        a = free_l[e] + ld[x]
                        if a < t:
                            a = t
                        soon = t if a <= t + soon_by[x] else a
                        if soon < b_soon or (soon == b_soon and r < b_rank):
                            b_soon, b_rank, b_at, pick, b_e = soon, r, a, heap, e
                if pick is None:
                    break
                if crits[w] and not crit[b_e]:  # a critical link free during this send
                    ends, wait = b_at + dp[of_rank[pick[0]]], None
                    for heap, e in crits[w]:
                        if heap:
                            a = free_l[e] + ld[of_rank[heap[0]]]
                            if b_at < a < ends:
                                ends, wait = a, heap
                    if wait is not None:
                        pick, b_at = wait, ends
                x = of_rank[heappop(pick)]
                start[x] = b_at
                free_p[w] = done = b_at + dp[x]
                free_l[ln[x]] = end = b_at - ld[x] + dl[x]
                for when, item in ((done, ~x), (end, x)):
                    there = at.get(when)
                    if there is None:
                        at[when] = [item]
                        heappush(instants, when)
                    else:
                        there.append(item)
        if not instants:
            break
        t = span = heappop(instants)
        check = set()
        for x in at.pop(t):
            if x < 0:
                check.add(nd[~x])
                continue
            check.add(nd[x])
            for c in nxt[nptr[x] : nptr[x + 1]]:
                left[c] -= 1
                if not left[c]:
                    heappush(heaps[ln[c]], rk[c])
                    check.add(nd[c])
    return np.asarray(start), span
