"""Multiple multicast planned jointly: FNF over all trees at once, on shared send ports."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Flow, OrderedSend, Schedule, Tree
from ._common import prepare
from ._registry import register

__all__ = ["fnf_joint"]


@register(
    "fnf_joint",
    collectives=("multi_multicast",),
    paper="hetcoll: Fastest-Node-First (Banikazemi et al. 1998, Sec. 6, Fig. 3) planned "
    "jointly for multiple multicast (Sec. 6.2 plans one tree per multicast)",
    complexity="O(E (H + log G)) for E sends, H senders per tree, G multicasts",
    summary="one FNF over every multicast at once: each send goes where it ends earliest, "
    "given what the other trees already ask of each sender",
    kind="joint",
)
def fnf_joint(
    platform: Platform,
    groups: Sequence[tuple[str, Iterable[str] | None]],
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Several multicasts at once, planned together so they share the fast nodes fairly.

    Banikazemi et al. (1998, Sec. 6.2) build one FNF tree per multicast; run together, every
    tree then relays through the same fastest nodes, whose send ports become the bottleneck
    (with 64 sources on 64 nodes independent FNF trees can be slower than binomial trees).
    Here one greedy covers all multicasts: each multicast offers its next receiver (fastest
    first, as FNF), the send that would deliver it earliest — from any node already holding
    that multicast's message, no earlier than that node's send port is free of the sends
    already planned for *any* multicast — is taken first, and the sender's port is then
    busy for it.  Each sender's sends across trees are recorded in the schedule's ``order``,
    so the simulator and the runtime issue them as planned.  With one group it is FNF.

    Model: sender-only costs (``tini``) or pairwise ones (delay and send-busy matrices).
    Complexity: O(E (H + log G)) for E sends in all, H holders per multicast, G multicasts
    (a heap of the multicasts' next deliveries, re-keyed lazily as ports fill up).

    Examples
    --------
    >>> from hetcoll import load_platform, simulate
    >>> p = load_platform("fig1")
    >>> s = fnf_joint(p, [("1", ["2", "3", "4"]), ("6", ["5", "7", "8"])])
    >>> round(simulate(p, s).makespan * 1e6, 6)
    300.0
    """
    if not groups:
        raise PlannerError("multiple multicast: no groups given")
    reqs = [
        prepare(platform, root, members, model, nbytes, segment_size) for root, members in groups
    ]
    req = reqs[0]
    m = req.message_size()
    cost = req.node_cost()
    delay = np.asarray(req.bound.delay_matrix(m))
    busy = np.asarray(req.bound.send_matrix(m))
    port = np.zeros(len(platform))  # when each node's send port is next free
    holders = [[r.root] for r in reqs]  # who holds each multicast's message, in join order
    held = [{r.root: 0.0} for r in reqs]  # ... and since when
    todo = [sorted(r.others(), key=lambda k: (float(cost[k]), k)) for r in reqs]
    done = [0] * len(reqs)
    edges: list[list[tuple[int, int]]] = [[] for _ in reqs]
    order: dict[int, list[tuple[int, int]]] = {}

    def best(g: int) -> tuple[float, float, int]:
        """(delivery, start, sender) of multicast g's next receiver."""
        hs = np.array(holders[g])
        receiver = todo[g][done[g]]
        start = np.maximum(port[hs], [held[g][h] for h in hs])
        arrival = start + delay[hs, receiver]
        j = int(np.argmin(arrival))  # the first holder to join wins ties
        return float(arrival[j]), float(start[j]), int(hs[j])

    heap = [(best(g)[0], g) for g in range(len(reqs)) if todo[g]]
    heapq.heapify(heap)
    while heap:
        key, g = heapq.heappop(heap)
        arrival, start, sender = best(g)
        if arrival > key:  # a port it counted on filled up meanwhile: re-queue
            heapq.heappush(heap, (arrival, g))
            continue
        receiver = todo[g][done[g]]
        done[g] += 1
        edges[g].append((sender, receiver))
        order.setdefault(sender, []).append((g, receiver))
        port[sender] = start + busy[sender, receiver]
        held[g][receiver] = arrival
        holders[g].append(receiver)
        if done[g] < len(todo[g]):
            heapq.heappush(heap, (best(g)[0], g))
    ids = platform.ids
    flows = tuple(
        Flow(
            Tree.from_edges(ids[r.root], ((ids[a], ids[b]) for a, b in e)),
            r.nbytes,
            buffer=g,
            segment_size=r.segment_size,
        )
        for g, (r, e) in enumerate(zip(reqs, edges, strict=True))
    )
    send_order = {
        ids[k]: tuple(OrderedSend(g, ids[c]) for g, c in pairs) for k, pairs in order.items()
    }
    return Schedule(
        "multi_multicast", "fnf_joint", req.nbytes, flows, {}, req.model.to_spec(), order=send_order
    )
