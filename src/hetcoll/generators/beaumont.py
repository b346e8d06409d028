"""Platform graphs of Beaumont, Marchal & Robert (2004), Sec. 5.1: random graphs (Table 2)
and TIERS-like hierarchical networks (Calvert, Doar & Zegura 1997).

Both give ``one_port`` platforms whose undirected links have a bandwidth drawn from
N(100, 20) MB/s (floored at 10 MB/s so that none is absurd) and no latency, so a slice of
``L`` bytes occupies a link ``T_uv = L / bandwidth``; every node gets a per-byte sending
cost ``t_byte = 0.8 / max_w bandwidth_uw`` so that, under ``multi_port``, ``send_u = 0.80
min_w T_uw`` (Table 2).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..platform import Link, Node, Platform
from ..rng import as_rng
from ..units import check_quantity

__all__ = ["random_graph_platform", "tiers_platform"]

MEAN_BW = 100e6
SD_BW = 20e6
MIN_BW = 10e6
SEND_FRACTION = 0.8


def random_graph_platform(
    n: int,
    density: float,
    seed: int | np.random.Generator | None = None,
    *,
    model: str = "one_port",
) -> Platform:
    """A random platform as in Table 2: ``n`` nodes, each pair linked with probability
    ``density``.

    At the paper's densities (0.04-0.20) a G(n, p) graph is rarely connected; the
    components are then joined by one random link each (between a random node of the first
    component and a random node of each other one), so the density grows by at most
    ``(c - 1) / (n (n - 1) / 2)`` for ``c`` components.

    Examples
    --------
    >>> p = random_graph_platform(10, 0.2, seed=1)
    >>> len(p), p.model.name, all(lk.latency == 0 for lk in p.links)
    (10, 'one_port', True)
    """
    n = int(check_quantity(n, "count", "n", positive=True))
    density = float(check_quantity(density, "factor", "density"))
    rng = as_rng(seed)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < density]
    pairs += _joins(n, pairs, rng)
    return _platform(n, sorted(pairs), rng, model, f"random n={n} p={density}")


def _joins(n: int, pairs: list[tuple[int, int]], rng: np.random.Generator) -> list[tuple[int, int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for v in range(n):
        groups.setdefault(find(v), []).append(v)
    comps = sorted(groups.values())
    extra = []
    for comp in comps[1:]:
        a = int(rng.choice(comps[0]))
        b = int(rng.choice(comp))
        extra.append((min(a, b), max(a, b)))
    return extra


def _platform(
    n: int, pairs: list[tuple[int, int]], rng: np.random.Generator, model: str, name: str
) -> Platform:
    bw = np.maximum(rng.normal(MEAN_BW, SD_BW, size=len(pairs)), MIN_BW)
    best = np.zeros(n)
    for (a, b), x in zip(pairs, bw, strict=True):
        best[a] = max(best[a], x)
        best[b] = max(best[b], x)
    nodes = tuple(
        Node(str(i), t_byte=SEND_FRACTION / best[i] if best[i] else 0.0) for i in range(n)
    )
    links = tuple(Link(str(a), str(b), 0.0, float(x)) for (a, b), x in zip(pairs, bw, strict=True))
    return Platform(nodes, links, model=model, name=name)


def tiers_platform(
    n: int,
    seed: int | np.random.Generator | None = None,
    *,
    model: str = "one_port",
) -> Platform:
    """A TIERS-like three-level network of ``n`` nodes (Calvert, Doar & Zegura 1997).

    A WAN of ``max(2, n // 10)`` nodes, MANs of about five nodes each (``max(1, n // 15)``
    of them), and LANs (stars of up to five nodes) with the rest.  Nodes are placed at
    random in the unit square; each level is a Euclidean minimum spanning tree plus
    redundancy links (every WAN and MAN node to its nearest non-neighbour of its level);
    each MAN is attached to its two nearest WAN nodes, each LAN's centre to the two nearest
    MAN nodes, and a LAN's hosts are a star around its centre plus a chain (LAN
    redundancy: with a bare star every host has one way in and every tree is the same).
    Densities come out between 0.05 and 0.15 for 30 to 65 nodes, as in the paper's
    Table 3 platforms.  Bandwidths are drawn as for random graphs.
    """
    n = int(check_quantity(n, "count", "n", positive=True))
    rng = as_rng(seed)
    xy = rng.random((n, 2))
    wan = list(range(min(n, max(2, n // 10))))
    rest = list(range(len(wan), n))
    mans_count = max(1, n // 15)
    man_nodes = rest[: min(len(rest), 5 * mans_count)]
    lan_nodes = rest[len(man_nodes) :]
    mans = [man_nodes[i::mans_count] for i in range(mans_count) if man_nodes[i::mans_count]]
    pairs: set[tuple[int, int]] = set()

    def link(a: int, b: int) -> None:
        if a != b:
            pairs.add((min(a, b), max(a, b)))

    def level(nodes: list[int], redundancy: bool) -> None:
        for a, b in _mst(xy, nodes):
            link(a, b)
        if redundancy and len(nodes) > 2:
            for a in nodes:
                near = sorted(
                    (b for b in nodes if b != a and (min(a, b), max(a, b)) not in pairs),
                    key=lambda b: float(np.hypot(*(xy[a] - xy[b]))),
                )
                if near:
                    link(a, near[0])

    def nearest(a: int, among: list[int]) -> list[int]:
        return sorted(among, key=lambda b: (float(np.hypot(*(xy[a] - xy[b]))), b))

    level(wan, True)
    for man in mans:
        level(man, True)
        for w in nearest(man[0], wan)[:2]:
            link(man[0], w)
    tops = [v for man in mans for v in man] or wan
    for start in range(0, len(lan_nodes), 5):
        lan = lan_nodes[start : start + 5]
        centre = lan[0]
        for v in lan[1:]:
            link(centre, v)
        for a, b in itertools.pairwise(lan[1:]):  # LAN redundancy: a chain of hosts
            link(a, b)
        for m in nearest(centre, tops)[:2]:
            link(centre, m)
    return _platform(n, sorted(pairs), rng, model, f"tiers n={n}")


def _mst(xy: np.ndarray, nodes: list[int]) -> list[tuple[int, int]]:
    """Prim's Euclidean minimum spanning tree of ``nodes``."""
    if len(nodes) < 2:
        return []
    inside = [nodes[0]]
    out = []
    left = set(nodes[1:])
    while left:
        a, b = min(
            ((a, b) for a in inside for b in left),
            key=lambda ab: (float(np.hypot(*(xy[ab[0]] - xy[ab[1]]))), ab),
        )
        out.append((a, b))
        inside.append(b)
        left.remove(b)
    return out
