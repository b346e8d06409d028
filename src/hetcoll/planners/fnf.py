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
    """Fig. 3 with sender-only costs: receivers in ``order`` take the earliest sending slots.

    A node that joins at ``T`` offers slots ``T + c, T + 2c, ...``; the ``i``-th receiver gets
    the earliest free slot, ties to the sender that joined first.  Done window by window (see
    :func:`_slots_by_window`), or with a heap of senders when costs can be 0 or span too
    many windows.
    """
    positive = cost[cost > 0]
    if len(order) > 64 and len(positive) == len(cost):
        windows = _window_count(cost, len(order) + 1)
        if windows <= 4 * len(order):
            return _slots_by_window(req.root, np.asarray(order), cost)
    return _slots_by_heap(req.root, order, cost)


def _window_count(cost: np.ndarray, n: int) -> float:
    # a broadcast takes at most ceil(log2 n) rounds of the slowest cost; each window is as
    # long as the smallest cost
    return np.ceil(np.log2(max(n, 2))) * float(cost.max()) / float(cost.min()) + 1


def _slots_by_heap(root: int, order: list[int], cost: np.ndarray) -> list[tuple[int, int]]:
    costs = cost.tolist()
    heap = [(costs[root], 0, root)]  # (time its next send ends, join order, node)
    senders = []
    replace, push = heapq.heapreplace, heapq.heappush
    for joined, receiver in enumerate(order, start=1):
        end, seq, sender = heap[0]
        replace(heap, (end + costs[sender], seq, sender))
        push(heap, (end + costs[receiver], joined, receiver))
        senders.append(sender)
    return list(zip(senders, order, strict=True))


def _slots_by_window(root: int, order: np.ndarray, cost: np.ndarray) -> list[tuple[int, int]]:
    """The heap's result, vectorised: in a window ``[t, t + c_min)`` every node already in the
    tree has at most one slot (its cost is at least ``c_min``) and no node joining inside the
    window has one yet (its first slot is at least ``c_min`` after it joins), so the window's
    slots are known in advance and go to the next receivers in (time, join order).  Slot
    times are accumulated exactly as the heap does, so the trees are identical.
    """
    n = len(order) + 1
    members = np.empty(n, dtype=np.intp)  # join order -> node
    members[0] = root
    members[1:] = order
    step = cost[members]  # each member's cost, by join order
    nxt = np.full(n, np.inf)  # each member's next slot (end of its next send)
    nxt[0] = step[0]
    senders = np.empty(n - 1, dtype=np.intp)
    joined, c_min, t = 1, float(step.min()), 0.0
    while joined < n:
        t = max(t, float(nxt[:joined].min()))
        ready = np.flatnonzero(nxt[:joined] < t + c_min)
        ready = ready[np.argsort(nxt[ready], kind="stable")]  # by time, then join order
        take = ready[: n - joined]
        k = len(take)
        new = np.arange(joined, joined + k)
        senders[joined - 1 : joined - 1 + k] = members[take]
        ends = nxt[take]
        nxt[new] = ends + step[new]  # a receiver's first slot: its join time plus its cost
        nxt[take] = ends + step[take]
        joined += k
        t += c_min
    return list(zip(senders.tolist(), order.tolist(), strict=True))


def _fnf_pairwise(req: Request, order: list[int]) -> list[tuple[int, int]]:
    """Fig. 3 under pairwise costs: receiver ``k`` goes to the sender minimising
    ``free + delay[sender, receiver]``, the first minimum in join order.

    The delays to a receiver are one gather from the flat matrix at the senders' row
    offsets (kept in join order), into a buffer: a strided read of column ``receiver``
    without numpy's two-axis indexing.  O(N^2).
    """
    m = req.message_size()
    delay = np.ascontiguousarray(req.bound.delay_matrix(m))
    busy = np.asarray(req.bound.send_matrix(m))
    flat, n = delay.reshape(-1), delay.shape[1]
    senders = np.empty(len(order) + 1, dtype=np.intp)
    senders[0] = req.root
    rows = np.empty(len(order) + 1, dtype=np.intp)  # each sender's row in flat, join order
    rows[0] = req.root * n
    free = np.zeros(len(order) + 1)  # when each sender (in join order) can start its next send
    arrival = np.empty(len(order) + 1)
    at = np.empty(len(order) + 1, dtype=np.intp)
    edges = []
    for k, receiver in enumerate(order, start=1):
        np.add(rows[:k], receiver, out=at[:k])
        times = np.take(flat, at[:k], out=arrival[:k])
        times += free[:k]  # free + delay: the same sum either way round
        j = int(np.argmin(times))  # first minimum: the earliest-joined sender wins ties
        sender = int(senders[j])
        edges.append((sender, receiver))
        senders[k], rows[k] = receiver, receiver * n
        free[k] = times[j]
        free[j] += busy[sender, receiver]
    return edges
