"""The routing rule written plainly: a Dijkstra per source, in pure Python.

The oracle the tests compare :class:`~hetcoll.routing.Routes` with, exactly (latencies
bit for bit, every route link for link).  O(N (E + N) log N) Python steps: for tests and
small platforms only.
"""

from __future__ import annotations

import heapq
import math

__all__ = ["dijkstra_routes"]


def dijkstra_routes(
    n: int, edges: list[tuple[int, int, float, float]]
) -> tuple[list[list[float]], list[list[float]], list[list[tuple[int, ...]]]]:
    """All-pairs routes by a plain Dijkstra per source that pops ``(latency, hops, node)``
    and replaces a predecessor only on a strictly better ``(latency, hops)``: hetcoll's
    routing rule written directly.

    ``edges`` are undirected ``(a, b, latency, bandwidth)``; resource ``2k`` is ``a -> b``.
    Returns ``(latency, bandwidth, paths)`` as nested lists: ``paths[s][t]`` the route's
    resources in order from ``s``.
    """
    adj: list[list[tuple[int, float, float, int]]] = [[] for _ in range(n)]
    for k, (a, b, w, bw) in enumerate(edges):
        adj[a].append((b, w, bw, 2 * k))
        adj[b].append((a, w, bw, 2 * k + 1))
    lat = [[0.0] * n for _ in range(n)]
    band = [[math.inf] * n for _ in range(n)]
    paths: list[list[tuple[int, ...]]] = [[()] * n for _ in range(n)]
    for s in range(n):
        dist = [math.inf] * n
        hops = [0] * n
        prev: list = [None] * n
        dist[s] = 0.0
        heap = [(0.0, 0, s)]
        done = [False] * n
        while heap:
            d, h, u = heapq.heappop(heap)
            if done[u]:
                continue
            done[u] = True
            for v, w, b, res in adj[u]:
                nd = d + w
                if nd < dist[v] or (nd == dist[v] and not done[v] and h + 1 < hops[v]):
                    dist[v], hops[v], prev[v] = nd, h + 1, (u, res, b)
                    heapq.heappush(heap, (nd, h + 1, v))
        for t in range(n):
            path, bottleneck, v = [], math.inf, t
            while v != s:
                u, res, b = prev[v]
                path.append(res)
                bottleneck = min(bottleneck, b)
                v = u
            paths[s][t] = tuple(reversed(path))
            lat[s][t] = dist[t]
            band[s][t] = bottleneck
    return lat, band, paths
