"""Transfer costs asked of the model once per distinct (sender, receiver, size), and the
throughput of a run from its bottleneck resource: shared by the event loop and the one-tree
shortcut, so both give the same floating-point values."""

from __future__ import annotations

import numpy as np

from ..models import BoundModel, TransferCosts

__all__ = ["bottleneck_throughput", "distinct_costs"]


def distinct_costs(
    bound: BoundModel, u: np.ndarray, v: np.ndarray, size: np.ndarray
) -> tuple[np.ndarray, np.ndarray, TransferCosts]:
    """The costs of transfers ``(u[i], v[i], size[i])`` (node indices, bytes), asked of the
    model once per distinct triple, in the triples' sorted order: ``(uniq, inverse, costs)``
    where ``uniq`` holds the distinct triples (rows), ``costs`` their costs and
    ``inverse[i]`` the row of transfer ``i``.  Whoever asks about the same set of triples
    gets the same floating-point values."""
    sizes, size_idx = np.unique(size, return_inverse=True)
    n_nodes = len(bound.platform)
    key = (u * n_nodes + v) * max(1, len(sizes)) + size_idx.reshape(-1)
    first, inverse = np.unique(key, return_index=True, return_inverse=True)[1:]
    uniq = np.stack([u[first], v[first], size[first]], axis=1).reshape(-1, 3)
    costs = bound.costs(uniq[:, 0], uniq[:, 1], uniq[:, 2])
    return uniq, inverse.reshape(-1), costs


def bottleneck_throughput(
    total_bytes: int,
    n_ranks: int,
    owner: np.ndarray,
    peer: np.ndarray,
    send_busy: np.ndarray,
    recv_busy: np.ndarray,
    unidirectional: bool,
    link_loads: list[np.ndarray],
) -> float | None:
    """``total_bytes`` over the busy time of the busiest resource, given every send's
    ``owner`` and ``peer`` (rank indices), ``send_busy`` and ``recv_busy``, listed rank by
    rank in program order (each port's load is summed in that order), and the loads of the
    links."""
    if total_bytes == 0:
        return None
    send = np.bincount(owner, send_busy, minlength=n_ranks)
    recv_load = np.bincount(peer, recv_busy, minlength=n_ranks)
    if unidirectional:
        send, recv = send + recv_load, np.zeros(0)
    else:
        recv = recv_load
    bottleneck = max(float(x.max(initial=0.0)) for x in [send, recv, *link_loads])
    return total_bytes / bottleneck if bottleneck > 0 else None
