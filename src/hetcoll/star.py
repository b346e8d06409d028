"""A star platform: every node's full-duplex NIC into one non-blocking switch (model
``nic``, :mod:`hetcoll.models.nic`).

A node's ``bandwidth`` (bytes/s) and ``latency`` (seconds) are its NIC's; a star gives one
to every node and no links, matrices or switches: its pairwise latency ``latency(u) +
latency(v)`` and bandwidth ``min(bandwidth(u), bandwidth(v))`` follow (:func:`star_matrices`),
so that every model that reads a latency matrix runs on it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import PlatformError

if TYPE_CHECKING:
    from .platform import Node

__all__ = ["NIC_FIELDS", "check_star", "check_star_document", "star_matrices"]

#: a star node's NIC fields in a platform file
NIC_FIELDS = ("bandwidth", "latency")


def check_star(
    nodes: Sequence[Node], links: bool, switches: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """The matrices of a star (:func:`star_matrices`), or None when no node has a NIC
    ``bandwidth``; :class:`PlatformError` for a node latency without NICs, a node without
    its NIC among nodes with one, or links or switches beside the NICs."""
    with_nic = [i for i, n in enumerate(nodes) if n.bandwidth is not None]
    if not with_nic:
        latent = next((i for i, n in enumerate(nodes) if n.latency), None)
        if latent is not None:
            raise PlatformError(
                f"nodes[{latent}].latency: a node latency belongs to a star: give every "
                "node a NIC 'bandwidth' too"
            )
        return None
    missing = next((i for i, n in enumerate(nodes) if n.bandwidth is None), None)
    if missing is not None:
        raise PlatformError(
            f"nodes[{missing}].bandwidth: missing: a star needs every node's NIC "
            f"bandwidth (nodes[{with_nic[0]}] has one)"
        )
    if links or switches:
        raise PlatformError(
            "a star (nodes with a NIC 'bandwidth') has no 'links' or 'switches': "
            "give one or the other"
        )
    return star_matrices(nodes)


def check_star_document(data: Mapping[str, Any], raw_nodes: Sequence[Any]) -> None:
    """A platform file whose nodes have a NIC ``bandwidth`` gives no links or matrices."""
    star = next(
        (i for i, raw in enumerate(raw_nodes) if isinstance(raw, Mapping) and "bandwidth" in raw),
        None,
    )
    for key in ("links", "latency", "bandwidth"):
        if star is not None and key in data:
            raise PlatformError(
                f"{key}: nodes[{star}] has a NIC 'bandwidth', so the platform is a star "
                f"(its pairs follow from the NICs): give the nodes' NICs or '{key}', not both"
            )


def star_matrices(nodes: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]:
    """A star's pairwise ``latency(u) + latency(v)`` (zero diagonal) and
    ``min(bandwidth(u), bandwidth(v))`` (infinite diagonal), read-only.  O(N^2)."""
    lat = np.array([n.latency for n in nodes], dtype=float)
    bw = np.array([n.bandwidth for n in nodes], dtype=float)
    latency = lat[:, None] + lat[None, :]
    np.fill_diagonal(latency, 0.0)
    bandwidth = np.minimum(bw[:, None], bw[None, :])
    np.fill_diagonal(bandwidth, np.inf)
    for m in (latency, bandwidth):
        m.setflags(write=False)
    return latency, bandwidth


def same_off_diagonal(given: Any, derived: np.ndarray) -> bool:
    """Whether a matrix passed in equals a star's ``derived`` one off the diagonal."""
    try:
        matrix = np.array(given, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return False
    if matrix.shape != derived.shape:
        return False
    off = ~np.eye(len(derived), dtype=bool)
    return bool(np.array_equal(matrix[off], derived[off]))
