"""The send order of a multi-port list schedule
(:func:`~hetcoll.planners.port_schedule.multi_port_transfers`): each node sends in the order
its transfers start, every entry a plain send of one flow to one child.

:func:`~hetcoll.planners.message_schedule.send_order` makes the same order from a listing
of ``(tree, child, lag, slot)`` tuples, one Python step per transfer twice over (the
listing, then the order); at n = 50 and 10^4 slices a multi-port list schedule has 490 000
transfers of a few hundred distinct sends, so here the transfers are grouped by sender and
by distinct send in numpy, and each node's order is its entries looked up in one C-level
pass.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from ..patterns import OrderedSend

__all__ = ["listed_send_order"]


def listed_send_order(
    transfers: list[tuple[float, int, int, int, int]],
    flow_of: dict[int, int],
    name: list[str],
    starts: dict[str, np.ndarray] | None = None,
) -> dict[str, tuple[OrderedSend, ...]]:
    """The send order of ``transfers`` (``(start, sender, receiver, tree, slice)`` in the
    order they start, plan-graph nodes): node ``name[u]`` sends ``OrderedSend(flow_of[i],
    name[v])`` for each of its transfers ``(u, v, i)`` in that order (a tree without a
    flow left out, and a node left without sends), the nodes in the order of their first
    transfer; one entry object per distinct send.  What
    :func:`~hetcoll.planners.message_schedule.send_order` makes of the listing
    ``{u: [(i, v, 0, None), ...]}`` of the same transfers, key for key and entry for
    entry."""
    if not transfers:
        return {}
    u, v, tree = (
        np.fromiter(map(itemgetter(c), transfers), dtype=np.int64, count=len(transfers))
        for c in (1, 2, 3)
    )
    width = int(v.max()) + 1
    code = tree * width + v  # small numbers: looked up in a table, not sorted
    present = np.zeros(int(code.max()) + 1, dtype=bool)
    present[code] = True
    sends = np.flatnonzero(present)
    inverse = (np.cumsum(present) - 1)[code]
    entry = [
        OrderedSend(flow_of[i], name[w], 0) if i in flow_of else None
        for i, w in zip((sends // width).tolist(), (sends % width).tolist(), strict=True)
    ]
    kept = np.array([x is not None for x in entry])[inverse]
    by_sender = np.argsort(u, kind="stable")  # each sender's transfers in start order
    counts = np.bincount(u)
    begin = np.cumsum(counts) - counts
    nodes = np.flatnonzero(counts)
    first = by_sender[begin[nodes]]
    at = None
    if starts is not None:
        at = np.fromiter(map(itemgetter(0), transfers), dtype=float, count=len(transfers))
    order: dict[str, tuple[OrderedSend, ...]] = {}
    for x in nodes[np.argsort(first)].tolist():  # by first transfer
        rows = by_sender[begin[x] : begin[x] + counts[x]]
        rows = rows[kept[rows]]
        if len(rows):
            order[name[x]] = tuple(map(entry.__getitem__, inverse[rows].tolist()))
            if at is not None:
                starts[name[x]] = at[rows]
    return order
