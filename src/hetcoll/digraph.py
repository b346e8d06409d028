"""The directed graph of a platform's links, for the models and planners of pipelined
broadcasts (Beaumont, Marchal & Robert 2004, Sec. 2).

An edge ``u -> v`` exists only where a link says so: an undirected link is two edges with
the same costs, a ``"directed": true`` link one.  A matrix platform is a complete digraph.
Edge ``e`` occupies its link ``T_e(L) = latency_e + L / bandwidth_e`` for a message of ``L``
bytes (Sec. 2.1); the sender and receiver busy times ``send_e(L)``, ``recv_e(L)`` are given
per link or not at all (NaN).

Everything here is deterministic (ties by hop count, then node index), so every MPI rank
derives the same trees and relay paths.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .errors import PlannerError

if TYPE_CHECKING:
    from .platform import Platform

__all__ = ["PlatformGraph", "reachable_from"]


#: how many message sizes' all-pairs times a :class:`PlatformGraph` keeps (``auto`` asks
#: for each slice size's a dozen times, one planner after another)
DISTANCES = 4


@dataclass(frozen=True, eq=False)
class PlatformGraph:
    """Edges ``e = 0 .. E-1`` from ``src[e]`` to ``dst[e]`` (node indices) and their costs.

    ``latency`` (s) and ``inv_bw`` (s/B, 0 for an infinite bandwidth) give ``T_e(L)``;
    ``send_lat``/``send_inv`` and ``recv_lat``/``recv_inv`` the optional sender and receiver
    busy times (NaN where a link does not give them).
    """

    n: int
    src: np.ndarray
    dst: np.ndarray
    latency: np.ndarray
    inv_bw: np.ndarray
    send_lat: np.ndarray
    send_inv: np.ndarray
    recv_lat: np.ndarray
    recv_inv: np.ndarray
    _index: dict[tuple[int, int], int] = field(init=False, repr=False)
    _paths: dict[tuple[int, float], list[int]] = field(init=False, repr=False)
    _distances: dict[float, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("src", "dst", "latency", "inv_bw", "send_lat", "send_inv", "recv_lat"):
            getattr(self, name).setflags(write=False)
        self.recv_inv.setflags(write=False)
        index = {
            (int(a), int(b)): e
            for e, (a, b) in enumerate(zip(self.src.tolist(), self.dst.tolist(), strict=True))
        }
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_paths", {})
        object.__setattr__(self, "_distances", {})

    @classmethod
    def from_platform(cls, platform: Platform) -> PlatformGraph:
        """The digraph of ``platform``'s links (or its matrices; every pair without them)."""
        n = len(platform)
        rows: list[tuple[int, int, float, float, tuple[float, ...]]] = []
        nan4 = (math.nan,) * 4
        if platform.links:
            for lk in platform.links:
                a, b = platform.index(lk.u), platform.index(lk.v)
                busy = tuple(
                    math.nan if x is None else x
                    for x in (
                        lk.send_latency,
                        lk.send_bandwidth,
                        lk.recv_latency,
                        lk.recv_bandwidth,
                    )
                )
                rows.append((a, b, lk.latency, lk.bandwidth, busy))
                if not lk.directed:
                    rows.append((b, a, lk.latency, lk.bandwidth, busy))
        else:
            lat = platform.latency if platform.latency is not None else np.zeros((n, n))
            bw = platform.routes.bandwidth if platform.latency is not None else None
            for a in range(n):
                for b in range(n):
                    if a != b:
                        beta = math.inf if bw is None else float(bw[a, b])
                        rows.append((a, b, float(lat[a, b]), beta, nan4))
        src = np.array([r[0] for r in rows], dtype=np.int64)
        dst = np.array([r[1] for r in rows], dtype=np.int64)
        latency = np.array([r[2] for r in rows], dtype=float)
        inv_bw = np.array([0.0 if math.isinf(r[3]) else 1.0 / r[3] for r in rows], dtype=float)
        busy = np.array([r[4] for r in rows], dtype=float).reshape(len(rows), 4)
        with np.errstate(divide="ignore"):
            send_inv = np.where(np.isnan(busy[:, 1]), np.nan, 1.0 / busy[:, 1])
            recv_inv = np.where(np.isnan(busy[:, 3]), np.nan, 1.0 / busy[:, 3])
        return cls(
            n, src, dst, latency, inv_bw, busy[:, 0].copy(), send_inv, busy[:, 2].copy(), recv_inv
        )

    # -- lookup -------------------------------------------------------------------------------

    @property
    def m(self) -> int:
        """Number of edges."""
        return len(self.src)

    def edge(self, u: int, v: int) -> int | None:
        """The edge ``u -> v``, or None when there is none."""
        return self._index.get((u, v))

    def times(self, nbytes: float) -> np.ndarray:
        """``T_e(L)`` of every edge for a message of ``nbytes`` bytes (seconds)."""
        return self.latency + nbytes * self.inv_bw

    def out_edges(self) -> list[np.ndarray]:
        """For each node, its outgoing edges (in edge order)."""
        return _group(self.src, self.n)

    def in_edges(self) -> list[np.ndarray]:
        """For each node, its incoming edges (in edge order)."""
        return _group(self.dst, self.n)

    # -- reachability and paths ---------------------------------------------------------------

    def reachable(self, root: int) -> np.ndarray:
        """Boolean mask of the nodes reachable from ``root`` along directed edges."""
        return reachable_from(self.n, self.src, self.dst, root)

    def check_reachable(self, root: int, ids: Sequence[str], members=None) -> None:
        """:class:`PlannerError` naming the first node (of ``members``, default all) that
        cannot be reached from ``root`` along the directed links."""
        seen = self.reachable(root)
        wanted = range(self.n) if members is None else members
        missing = next((v for v in wanted if not seen[v]), None)
        if missing is not None:
            raise PlannerError(
                f"node {ids[missing]!r} is unreachable from root {ids[root]!r} in the directed "
                "graph of links (add a link towards it)"
            )

    def shortest_path(self, u: int, v: int, nbytes: float) -> tuple[int, ...]:
        """Nodes of the store-and-forward shortest path ``u .. v`` for ``nbytes``-byte messages
        (sum of ``T_e``), ties to the fewest hops, then the lowest predecessor index.
        :class:`PlannerError` when there is none."""
        pred = self._predecessors(u, float(nbytes))
        if u != v and pred[v] < 0:
            raise PlannerError(f"no directed path from rank {u} to rank {v}")
        path = [v]
        while path[-1] != u:
            path.append(pred[path[-1]])
        return tuple(reversed(path))

    def _predecessors(self, s: int, nbytes: float) -> list[int]:
        # without latency every T_e is nbytes * inv_bw: message sizes a power of two apart
        # multiply every time by it, exactly, and keep every sum's comparison, so they share
        # their paths (auto's slice sizes of a power-of-two message)
        key = (s, math.frexp(nbytes)[0] if not self.latency.any() else nbytes)
        if key not in self._paths:
            self._paths[key] = _dijkstra(self, s, self.times(nbytes))
        return self._paths[key]

    def distances(self, nbytes: float) -> np.ndarray:
        """All-pairs store-and-forward times (``inf`` where there is no path), N x N."""
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        key = float(nbytes)
        kept = self._distances.get(key)
        if kept is None:
            # csgraph drops explicit zeros: a zero-time edge gets the smallest positive time
            w = np.maximum(self.times(nbytes), np.finfo(float).tiny)
            g = csr_matrix((w, (self.src, self.dst)), shape=(self.n, self.n))
            kept = dijkstra(g, directed=True)
            if len(self._distances) >= DISTANCES:  # the sizes asked for last
                del self._distances[next(iter(self._distances))]
            self._distances[key] = kept
        return kept.copy()


def reachable_from(n: int, src: np.ndarray, dst: np.ndarray, root: int) -> np.ndarray:
    """Mask of the nodes reachable from ``root`` over the edges ``src[e] -> dst[e]``."""
    out = _group(np.asarray(src), n)
    seen = np.zeros(n, dtype=bool)
    seen[root] = True
    stack = [root]
    while stack:
        u = stack.pop()
        for v in dst[out[u]].tolist():
            if not seen[v]:
                seen[v] = True
                stack.append(v)
    return seen


def _group(keys: np.ndarray, n: int) -> list[np.ndarray]:
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(n + 1))
    return [order[bounds[i] : bounds[i + 1]] for i in range(n)]


def _dijkstra(graph: PlatformGraph, s: int, weight: np.ndarray) -> list[int]:
    """Predecessors of the shortest paths from ``s`` (-1: unreachable or ``s``), ties to the
    fewest hops, then the lowest predecessor index."""
    n = graph.n
    out = graph.out_edges()
    dist = [math.inf] * n
    hops = [0] * n
    pred = [-1] * n
    done = [False] * n
    dist[s] = 0.0
    heap = [(0.0, 0, -1, s)]
    while heap:
        d, h, _, u = heapq.heappop(heap)
        if done[u]:
            continue
        done[u] = True
        for e in out[u].tolist():
            v = int(graph.dst[e])
            nd = d + float(weight[e])
            if done[v]:
                continue
            better = (nd, h + 1, u) < (dist[v], hops[v], pred[v] if pred[v] >= 0 else n)
            if better:
                dist[v], hops[v], pred[v] = nd, h + 1, u
                heapq.heappush(heap, (nd, h + 1, u, v))
    return pred
