"""Fastest-Node-First (Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 6, Fig. 3)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..platform import Platform
from ..schedule import Schedule
from ._common import Request, prepare, tree_schedule
from ._registry import register

__all__ = ["fnf"]


@register(
    "fnf",
    collectives=("bcast", "multicast"),
    paper="Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 6, Fig. 3",
    complexity="O(N log N) sender-only models, O(N^2) pairwise models",
    summary="greedy: the fastest node not yet reached gets the earliest possible send",
)
def fnf(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """FNF: add members fastest first, each from the sender that can deliver it earliest.

    Receivers are taken in ascending order of sending cost (Lemma 2: a node is never slower
    than its children); each is sent to by the node ``k`` minimising ``R_k + t_k`` where
    ``R_k`` is when ``k`` can next send (Lemma 1).  Ties go to the sender that joined the tree
    first, as in Fig. 3's ``Senders`` list.  Under pairwise models (``postal``, ``hockney``)
    the sender minimises ``R_k + delay(k, receiver)`` and receivers are ordered by their mean
    send cost.  O(N log N) under ``tini`` with a heap of senders; O(N^2) otherwise.

    Examples
    --------
    Fig. 1(c): the optimum, 400 µs.

    >>> from hetcoll import load_platform, simulate
    >>> p = load_platform("fig1")
    >>> round(simulate(p, fnf(p, "1")).makespan * 1e6, 6)
    400.0
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    cost = req.node_cost()
    others = np.array(req.others(), dtype=np.intp)
    order = others[np.argsort(cost[others], kind="stable")].tolist()  # ties: by rank
    edges = (
        _fnf_sender_only(req, order, cost) if req.bound.sender_only else _fnf_pairwise(req, order)
    )
    # edges come out in global time order, hence in each sender's send order
    return tree_schedule(req, "fnf", edges)


def _fnf_sender_only(req: Request, order: list[int], cost: np.ndarray) -> list[tuple[int, int]]:
    cost = cost.tolist()
    heap = [(cost[req.root], 0, req.root)]  # (time its next send ends, join order, node)
    senders = []
    replace, push = heapq.heapreplace, heapq.heappush  # hot loop: N = 100 000 in ~0.1 s
    for joined, receiver in enumerate(order, start=1):
        end, seq, sender = heap[0]
        replace(heap, (end + cost[sender], seq, sender))
        push(heap, (end + cost[receiver], joined, receiver))
        senders.append(sender)
    return list(zip(senders, order, strict=True))


def _fnf_pairwise(req: Request, order: list[int]) -> list[tuple[int, int]]:
    m = req.message_size()
    delay = np.asarray(req.bound.delay_matrix(m))
    busy = np.asarray(req.bound.send_matrix(m))
    senders = np.empty(len(order) + 1, dtype=np.intp)
    senders[0] = req.root
    free = np.zeros(len(order) + 1)  # when each sender (in join order) can start its next send
    edges = []
    for k, receiver in enumerate(order, start=1):
        active = senders[:k]
        arrival = free[:k] + delay[active, receiver]
        j = int(np.argmin(arrival))  # first minimum: the earliest-joined sender wins ties
        sender = int(active[j])
        edges.append((sender, receiver))
        senders[k] = receiver
        free[k] = arrival[j]
        free[j] += busy[sender, receiver]
    return edges
