"""Multi-level topologies: which nodes share a host, a cluster, a site, a light-WAN region.

Multi-level collectives (MagPIe, MPICH-G2, MPICH-GX of Park et al. 2004, Sec. 3.3) send once
per group over the slow level and fan out inside each group.  :func:`levels` gives the
groups, nested from fine to coarse::

    host  ⊆  cluster  ⊆  site  ⊆  region  ⊆  everything

* **host** (MPICH-G2's *vendor MPI* level): only from ``host`` labels; without them every
  process is its own host.
* **cluster** (MPICH-G2's *intra-TCP* level, MagPIe's LAN cluster) and **site** (MPICH-G2's
  *LAN* level: everything reachable without crossing a WAN): from the ``cluster`` / ``site``
  labels in the platform file when every node has one, else inferred from the latencies.
* **region**: sites joined by *light-WAN* links (Park et al.'s "relatively stable and
  uniform links"); links between regions are *heavy-WAN*.  Set by a latency threshold
  (``light_wan``, the paper's "explicit parameter in the RSL file") or inferred.

Inference (what the paper does "automatically by using latency information obtained by
NWS").  Latencies are symmetrised pessimistically, ``S = max(W, W^T)``, and grouped by
complete linkage: a group cut at threshold ``t`` has every pair of its members within
``S <= t`` (single linkage would chain: nodes joined through a path of short links, with
some pairs far apart, end up together).  The thresholds worth cutting at are the *gaps* in
the sorted complete-linkage merge heights: a jump by at least ``ratio`` (default 3) from one
height to the next.

* site: threshold ``lan`` (default 1 ms, the LAN/WAN boundary): a site's nodes are all
  within it of each other;
* cluster: the highest gap among the merge heights below ``lan``; with none, clusters are
  the sites;
* region: on the sites (site distance = the largest ``S`` between them), the lowest gap
  among the site merge heights - the jump from the light band to the heavy one: every pair
  of nodes inside a region is within its threshold.  With no gap every site is its own
  region: all WAN links count as heavy and
  MPICH-GX runs HLOT across the sites (never slower than flat under eq. 4, the safe
  default).  A WAN that is *all* light cannot be told from a heavy one without a
  threshold: give ``light_wan``.

Labels win over inference; an inferred level is adjusted to nest with a labelled one
(inferred clusters are split along labelled sites, inferred sites merged to contain
labelled clusters).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ArgumentError
from .platform import Platform
from .units import check_quantities

__all__ = ["Levels", "levels", "merge_heights", "complete_heights", "gaps", "components", "cliques"]

LEVELS = ("host", "cluster", "site", "region")


@dataclass(frozen=True)
class Levels:
    """Nested groups of a platform's nodes.

    Attributes
    ----------
    host, cluster, site, region : tuple of int
        Group number of each node, in rank order, for each level; groups are numbered by
        their lowest rank, from 0.  Each level refines the next.
    source : dict
        Per level: ``"labels"``, ``"inferred"``, ``"threshold"`` (region from ``light_wan``)
        or ``"none"`` (host level without labels).
    thresholds : dict
        The latency cut (seconds) used for each inferred level, None otherwise.
    """

    host: tuple[int, ...]
    cluster: tuple[int, ...]
    site: tuple[int, ...]
    region: tuple[int, ...]
    source: dict[str, str] = field(default_factory=dict)
    thresholds: dict[str, float | None] = field(default_factory=dict)

    def labels(self, level: str) -> tuple[int, ...]:
        if level not in LEVELS:
            raise ArgumentError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
        return getattr(self, level)

    def groups(self, level: str, members: Sequence[int] | None = None) -> list[list[int]]:
        """The groups of ``level`` (node indices in rank order), ordered by lowest rank."""
        lab = self.labels(level)
        idx = range(len(lab)) if members is None else sorted(members)
        out: dict[int, list[int]] = {}
        for i in idx:
            out.setdefault(lab[i], []).append(i)
        return list(out.values())

    def count(self, level: str) -> int:
        return len(set(self.labels(level)))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {lv: list(getattr(self, lv)) for lv in LEVELS}
        out["source"] = dict(self.source)
        out["thresholds"] = dict(self.thresholds)
        return out


# -- building blocks ------------------------------------------------------------------------------


def _symmetric(w: np.ndarray) -> np.ndarray:
    s = np.maximum(w, w.T).astype(float)
    np.fill_diagonal(s, 0.0)
    return s


def _mst_edges(s: np.ndarray) -> list[tuple[float, int, int]]:
    """Prim's minimum spanning tree of the symmetric matrix ``s``: ``(weight, u, v)``."""
    n = len(s)
    if n <= 1:
        return []
    inside = np.zeros(n, dtype=bool)
    inside[0] = True
    best = s[0].copy()
    par = np.zeros(n, dtype=np.intp)
    edges = []
    for _ in range(n - 1):
        cand = np.flatnonzero(~inside)
        j = int(cand[np.argmin(best[cand])])
        edges.append((float(best[j]), int(par[j]), j))
        inside[j] = True
        closer = ~inside & (s[j] < best)
        best[closer] = s[j][closer]
        par[closer] = j
    return edges


def merge_heights(matrix: Any) -> np.ndarray:
    """Sorted single-linkage merge heights of ``max(W, W^T)`` (its MST weights).  O(N^2)."""
    s = _symmetric(np.asarray(matrix, dtype=float))
    return np.sort(np.array([w for w, _, _ in _mst_edges(s)], dtype=float))


def gaps(heights: Sequence[float], ratio: float = 3.0) -> list[float]:
    """Cut thresholds at the jumps of the sorted ``heights`` by at least ``ratio``.

    A jump from ``a`` to ``b >= ratio * a`` gives the threshold ``sqrt(a b)`` (``b / 2``
    when ``a`` is 0), ascending.
    """
    h = sorted(float(x) for x in heights)
    out = []
    for a, b in itertools.pairwise(h):
        if b > 0 and b >= ratio * a:
            out.append(math.sqrt(a * b) if a > 0 else b / 2)
    return out


def complete_heights(s: np.ndarray) -> np.ndarray:
    """Sorted merge heights of complete linkage on the symmetric matrix ``s``."""
    return np.sort(_linkage(s)[:, 2]) if len(s) > 1 else np.zeros(0)


def cliques(s: np.ndarray, threshold: float) -> tuple[int, ...]:
    """Groups of complete linkage cut at ``threshold``: every pair inside a group has
    ``s <= threshold`` (numbered by lowest rank).  O(N^2) memory, O(N^2 log N) time."""
    n = len(s)
    if n <= 1:
        return tuple(range(n))
    from scipy.cluster.hierarchy import fcluster

    return _canonical(fcluster(_linkage(s), t=threshold, criterion="distance").tolist())


def _linkage(s: np.ndarray) -> np.ndarray:
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    d = np.array(s, dtype=float)
    np.fill_diagonal(d, 0.0)
    return linkage(squareform(d, checks=False), method="complete")


def components(s: np.ndarray, threshold: float) -> tuple[int, ...]:
    """Groups of the graph of pairs with ``s <= threshold`` (numbered by lowest rank)."""
    n = len(s)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for w, u, v in _mst_edges(s):
        if w <= threshold:
            a, b = find(u), find(v)
            parent[max(a, b)] = min(a, b)
    return _canonical([find(i) for i in range(n)])


def _canonical(keys: Sequence[Any]) -> tuple[int, ...]:
    """Renumber group keys 0, 1, ... by first appearance in rank order."""
    ids: dict[Any, int] = {}
    return tuple(ids.setdefault(k, len(ids)) for k in keys)


def _meet(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The coarsest partition refining both."""
    return _canonical(list(zip(a, b, strict=True)))


def _join(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The finest partition both refine."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a, b, strict=True):
        ra, rb = find(("a", x)), find(("b", y))
        if ra != rb:
            parent[ra] = rb
    return _canonical([find(("a", x)) for x in a])


def _from_labels(platform: Platform, level: str) -> tuple[int, ...] | None:
    labels = platform.labels(level)
    if any(lab is None for lab in labels):
        return None
    return _canonical(labels)


def _latency_matrix(platform: Platform) -> np.ndarray:
    if not platform.has_network:
        n = len(platform)
        return np.zeros((n, n))
    return np.asarray(platform.routes.latency, dtype=float)


# -- the front door -------------------------------------------------------------------------------


def levels(
    platform: Platform,
    *,
    lan: float = 1e-3,
    ratio: float = 3.0,
    light_wan: float | None = None,
    use_labels: bool = True,
    matrix: Any = None,
) -> Levels:
    """The host / cluster / site / region groups of ``platform`` (see the module docstring).

    Parameters
    ----------
    platform : Platform
    lan : float
        LAN/WAN boundary in seconds: sites are the groups of nodes joined by links below it.
    ratio : float
        A jump in the sorted merge heights by this factor is a level boundary.
    light_wan : float, optional
        Sites joined by links up to this latency (seconds) form a light-WAN region; default:
        inferred.
    use_labels : bool
        Read ``cluster``/``site``/``host`` labels when every node has one (default); False
        infers everything from the latencies.
    matrix : array_like, optional
        Latencies to infer from (default: the platform's end-to-end latencies).

    Returns
    -------
    Levels

    Notes
    -----
    O(N^2 log N) (complete linkage of the latency matrix, scipy).

    Examples
    --------
    >>> from hetcoll.generators import grid_platform
    >>> p = grid_platform(sites=3, clusters=2, procs=2, seed=1)
    >>> lv = levels(p, use_labels=False)
    >>> lv.count("cluster"), lv.count("site")
    (6, 3)
    """
    if not ratio > 1:
        raise ArgumentError(f"ratio must be > 1, got {ratio}")
    if not lan > 0:
        raise ArgumentError(f"lan must be > 0, got {lan}")
    if matrix is None:
        w = _latency_matrix(platform)
    else:
        w = check_quantities(matrix, "time", "matrix")
        if w.shape != (len(platform), len(platform)):
            raise ArgumentError(
                f"matrix: must be {len(platform)} x {len(platform)} (one row per node), "
                f"got shape {w.shape}"
            )
    s = _symmetric(w)
    heights = complete_heights(s)
    source: dict[str, str] = {}
    thresholds: dict[str, float | None] = {}

    site = _from_labels(platform, "site") if use_labels else None
    if site is None:
        site = cliques(s, lan)
        source["site"], thresholds["site"] = "inferred", lan
    else:
        source["site"], thresholds["site"] = "labels", None

    cluster = _from_labels(platform, "cluster") if use_labels else None
    if cluster is None:
        below = gaps(heights[heights <= lan], ratio)  # jumps inside the LAN band
        if below:
            cluster = cliques(s, below[-1])
            thresholds["cluster"] = below[-1]
        else:
            cluster = site
            thresholds["cluster"] = None
        source["cluster"] = "inferred"
        cluster = _meet(cluster, site)
    else:
        source["cluster"], thresholds["cluster"] = "labels", None
        if source["site"] == "labels":
            cluster = _meet(cluster, site)
        else:
            site = _join(site, cluster)

    host = _from_labels(platform, "host") if use_labels else None
    if host is None:
        host = tuple(range(len(platform)))
        source["host"] = "none"
    else:
        source["host"] = "labels"
        host = _meet(host, cluster)
    thresholds["host"] = None

    region, source["region"], thresholds["region"] = _regions(s, site, ratio, light_wan)
    return Levels(host, cluster, site, region, source, thresholds)


def _regions(
    s: np.ndarray, site: tuple[int, ...], ratio: float, light_wan: float | None
) -> tuple[tuple[int, ...], str, float | None]:
    k = max(site) + 1 if site else 0
    if k <= 1:
        return site, "inferred", None
    # site-to-site distance: the farthest pair of nodes (complete linkage), so that every
    # pair inside a region is within its threshold
    idx = np.asarray(site)
    d = np.zeros((k, k))
    for a in range(k):
        rows = s[idx == a]
        for b in range(k):
            if a != b:
                d[a, b] = rows[:, idx == b].max()
    if light_wan is not None:
        return _lift(cliques(d, light_wan), site), "threshold", float(light_wan)
    cuts = gaps(complete_heights(d), ratio)
    if cuts:
        return _lift(cliques(d, cuts[0]), site), "inferred", cuts[0]
    return site, "inferred", None


def _lift(per_site: Sequence[int], site: Sequence[int]) -> tuple[int, ...]:
    return _canonical([per_site[g] for g in site])
