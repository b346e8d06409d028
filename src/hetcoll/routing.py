"""Routing on a platform: which links a message crosses, its end-to-end latency and bandwidth.

A platform with a full pairwise matrix has no shared links: every ordered pair is its own
route, with the matrix's latency and bandwidth.  A platform with sparse ``links`` routes every
message along its **lowest-latency path**; the route's bandwidth is the smallest bandwidth on
it (the bottleneck) and the route occupies one *directed-link resource* per link it crosses:
resource ``2k`` is link ``k`` (in the platform's ``links`` order) from its ``u`` to its ``v``,
``2k + 1`` the other direction, so the two directions never contend.

Ties between paths of equal latency are broken by a rule every MPI rank applies identically
(they all derive the same routes, hence the same schedules):

1. lowest total latency, summed from the source in floating point;
2. then the fewest links;
3. then, walking back from the destination, the predecessor nearest to the source (lowest
   latency from the source), then the one with the lowest node index.

This is the order in which a Dijkstra search from the source that pops nodes by
``(latency, links, index)`` settles them: the first settled node to offer the best
``(latency, links)`` is the predecessor.  Latencies are computed with
:func:`scipy.sparse.csgraph.dijkstra` (whose distances do not depend on how it breaks ties),
and the rule is then applied exactly: a source whose every node has a single
latency-minimal incoming link needs nothing more; a source with ties is resolved with a hop
count on its latency-minimal links.

Nothing is stored per path: a route is read on demand from its source's *predecessor row*
(for each node, the resource by which the route from the source enters it).  Rows are
computed for the sources that are asked for and kept; the full ``N x N`` latency and
bandwidth matrices are built (in batches of sources) only when a planner reads them.

Complexity: one source costs O(E + N log N) (Dijkstra) plus O(E) vectorised work; all
pairs O(N (E + N log N)) time and O(N^2) memory (latency, bandwidth: 8 bytes each;
predecessors: 4 bytes); a route of ``h`` links is read in O(h).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["Routes"]

# Sources per batch when building all-pairs matrices: bounds the k x E temporaries.
_BATCH_ELEMENTS = 1 << 21


class Routes:
    """All-pairs routing of a platform: end-to-end latency and bandwidth, and paths.

    ``latency[u, v]`` and ``bandwidth[u, v]`` (node indices; read-only ``N x N`` arrays)
    are the route's total latency (s) and bottleneck bandwidth (bytes/s); the diagonal is
    0 and ``inf``.  :meth:`path` gives the route's directed-link resources (empty on a
    pairwise-matrix platform, whose pairs share nothing).  See the module docstring for
    the routing rule.

    Build with :meth:`from_matrices` or :meth:`from_links` (``Platform.routes`` does).
    """

    def __init__(self) -> None:  # use the constructors below
        self.n = 0
        self._lat: np.ndarray | None = None  # full matrices, once built
        self._bw: np.ndarray | None = None
        self._pred: np.ndarray | None = None
        self._graph: _LinkGraph | None = None
        # rows computed for some sources only: source -> row of _row_lat / _row_pred
        self._row_of: dict[int, int] = {}
        self._row_lat = np.empty((0, 0))
        self._row_pred = np.empty((0, 0), dtype=np.int32)
        self._pair_memo: dict[tuple[int, int], tuple[float, float]] = {}

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_matrices(cls, latency: np.ndarray, bandwidth: np.ndarray | None) -> Routes:
        """Routes of a pairwise-matrix platform (no shared links)."""
        r = cls()
        r.n = latency.shape[0]
        r._lat = latency
        if bandwidth is None:
            bandwidth = np.full((r.n, r.n), np.inf)
            bandwidth.setflags(write=False)
        r._bw = bandwidth
        return r

    @classmethod
    def from_links(
        cls,
        n: int,
        u: Sequence[int],
        v: Sequence[int],
        latency: Sequence[float],
        bandwidth: Sequence[float],
    ) -> Routes:
        """Routes over undirected links ``k = (u[k], v[k])`` (a connected graph)."""
        r = cls()
        r.n = n
        r._graph = _LinkGraph(n, u, v, latency, bandwidth)
        r._row_lat = np.empty((0, n))
        r._row_pred = np.empty((0, n), dtype=np.int32)
        return r

    # -- matrices -------------------------------------------------------------------------------

    @property
    def has_links(self) -> bool:
        """True when routes cross shared links (resources), False for a matrix platform."""
        return self._graph is not None

    @property
    def latency(self) -> np.ndarray:
        """``N x N`` end-to-end latency (seconds), read-only."""
        if self._lat is None:
            self._build_matrices()
        return self._lat  # type: ignore[return-value]

    @property
    def bandwidth(self) -> np.ndarray:
        """``N x N`` bottleneck bandwidth (bytes/s; ``inf`` on the diagonal), read-only."""
        if self._bw is None:
            g = self._graph
            assert g is not None
            if self._pred is None:
                self._build_matrices()
            bw = np.empty((self.n, self.n))
            for lo in range(0, self.n, g.batch):
                rows = np.arange(lo, min(self.n, lo + g.batch))
                bw[rows] = g.bottleneck(rows, self._pred[rows])  # type: ignore[index]
            bw.setflags(write=False)
            self._bw = bw
        return self._bw

    def _build_matrices(self) -> None:
        g = self._graph
        assert g is not None
        lat = np.empty((self.n, self.n))
        pred = np.empty((self.n, self.n), dtype=np.int32)
        for lo in range(0, self.n, g.batch):
            rows = np.arange(lo, min(self.n, lo + g.batch))
            lat[rows], pred[rows] = g.solve(rows)
        lat.setflags(write=False)
        pred.setflags(write=False)
        self._lat, self._pred = lat, pred
        self._row_of = {}  # the matrices hold every row from now on
        self._row_lat = self._row_pred = None  # type: ignore[assignment]

    # -- rows and paths -------------------------------------------------------------------------

    def prepare(self, sources: Sequence[int]) -> None:
        """Compute the rows of ``sources`` not known yet (all rows, as the full matrices,
        when more than half the nodes would then be known)."""
        if self._graph is None or self._pred is not None:
            return
        todo = sorted({int(s) for s in sources} - set(self._row_of))
        if not todo:
            return
        if 2 * (len(todo) + len(self._row_of)) > self.n:
            self._build_matrices()
            return
        g = self._graph
        first = len(self._row_of)
        need = first + len(todo)
        if need > len(self._row_lat):  # grow geometrically: rows may come one at a time
            size = min(self.n, max(need, 2 * len(self._row_lat), 8))
            lat = np.empty((size, self.n))
            pred = np.empty((size, self.n), dtype=np.int32)
            lat[:first], pred[:first] = self._row_lat[:first], self._row_pred[:first]
            self._row_lat, self._row_pred = lat, pred
        for lo in range(0, len(todo), g.batch):
            rows = todo[lo : lo + g.batch]
            at = first + lo
            self._row_lat[at : at + len(rows)], self._row_pred[at : at + len(rows)] = g.solve(
                np.array(rows)
            )
        self._row_of.update({s: first + k for k, s in enumerate(todo)})

    def _rows(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(latency rows, predecessor rows, row index of each source)."""
        self.prepare(np.unique(sources).tolist())
        if self._pred is not None:
            return self._lat, self._pred, sources  # type: ignore[return-value]
        row = np.array([self._row_of[s] for s in sources.tolist()], dtype=np.int64)
        return self._row_lat, self._row_pred, row

    def path(self, u: int, v: int) -> tuple[int, ...]:
        """Directed-link resources of the route from ``u`` to ``v``, in order."""
        return tuple(self.pairs([u], [v])[2].tolist())

    def pair(self, u: int, v: int) -> tuple[float, float]:
        """``(latency, bandwidth)`` of the route from ``u`` to ``v`` (memoised; computes
        ``u``'s row, not the matrices)."""
        key = (u, v)
        got = self._pair_memo.get(key)
        if got is None:
            if self._graph is None or self._bw is not None:
                got = (float(self.latency[u, v]), float(self.bandwidth[u, v]))
            else:
                lat, bw, _, _ = self.pairs([u], [v])
                got = (float(lat[0]), float(bw[0]))
            self._pair_memo[key] = got
        return got

    def pairs(
        self, u: Sequence[int] | np.ndarray, v: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Latency, bandwidth and routes of the pairs ``(u[i], v[i])``, vectorised.

        Returns ``(latency, bandwidth, resources, offsets)``: the route of pair ``i`` is
        ``resources[offsets[i]:offsets[i + 1]]``, in order from ``u[i]``.  Only the rows of
        the sources in ``u`` are computed; O(total route length) besides.
        """
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        total = len(u)
        g = self._graph
        if g is None:
            return (
                np.asarray(self._lat[u, v], dtype=float),  # type: ignore[index]
                np.asarray(self._bw[u, v], dtype=float),  # type: ignore[index]
                np.empty(0, dtype=np.int64),
                np.zeros(total + 1, dtype=np.int64),
            )
        lat_rows, pred_rows, row = self._rows(u)
        lat = np.asarray(lat_rows[row, v], dtype=float)
        # walk every route back from its destination at once, one link per step
        steps: list[tuple[np.ndarray, np.ndarray]] = []
        cur = v.copy()
        active = np.flatnonzero(cur != u)
        while len(active):
            res = pred_rows[row[active], cur[active]].astype(np.int64)
            steps.append((active, res))
            cur[active] = g.tail[res]
            active = active[cur[active] != u[active]]
        hops = np.zeros(total, dtype=np.int64)
        for idx, _ in steps:
            hops[idx] += 1
        offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(hops, out=offsets[1:])
        resources = np.empty(offsets[-1], dtype=np.int64)
        for k, (idx, res) in enumerate(steps):  # step k: the k-th link from the destination
            resources[offsets[idx + 1] - 1 - k] = res
        bw = np.full(total, np.inf)
        nonempty = hops > 0
        if nonempty.any():
            bw[nonempty] = np.minimum.reduceat(
                g.link_bandwidth[resources // 2], offsets[:-1][nonempty]
            )
        return lat, bw, resources, offsets

    @property
    def resource_bandwidth(self) -> np.ndarray:
        """Bandwidth (bytes/s) of each directed-link resource (empty without links)."""
        if self._graph is None:
            return np.empty(0)
        return np.repeat(self._graph.link_bandwidth, 2)

    def resource_ends(self, resource: int) -> tuple[int, int]:
        """``(from, to)`` node indices of a directed-link resource."""
        g = self._graph
        if g is None:
            raise ValueError("a matrix platform has no link resources")
        return int(g.tail[resource]), int(g.head[resource])


class _LinkGraph:
    """The directed edges of an undirected link list, and the per-source computations."""

    def __init__(self, n, u, v, latency, bandwidth) -> None:
        from scipy.sparse import csr_array

        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        lat = np.asarray(latency, dtype=float)
        self.n = n
        self.link_bandwidth = np.asarray(bandwidth, dtype=float)
        m = len(u)
        # directed edge 2k: u[k] -> v[k]; 2k + 1: v[k] -> u[k]
        self.tail = np.empty(2 * m, dtype=np.int64)
        self.head = np.empty(2 * m, dtype=np.int64)
        self.tail[0::2], self.tail[1::2] = u, v
        self.head[0::2], self.head[1::2] = v, u
        weight = np.repeat(lat, 2)
        # edges sorted by head, then tail: incoming edges of each node are contiguous
        order = np.lexsort((self.tail, self.head))
        self.e_tail = self.tail[order]
        self.e_head = self.head[order]
        self.e_weight = weight[order]
        self.e_res = order.astype(np.int64)
        self.has_zero = bool((lat == 0).any())
        # explicit zeros stay edges in a sparse graph (zero-latency links)
        self.csr = csr_array((weight, (self.tail, self.head)), shape=(n, n))
        self.batch = max(1, min(n, _BATCH_ELEMENTS // max(1, 2 * m)))

    def solve(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latency rows and predecessor-resource rows (-1 at the source) of ``sources``."""
        from scipy.sparse.csgraph import dijkstra

        k, n = len(sources), self.n
        pred = np.full((k, n), -1, dtype=np.int32)
        if n == 1 or len(self.e_res) == 0:
            return np.zeros((k, n)), pred
        dist = dijkstra(self.csr, directed=True, indices=sources)
        # tight edges: those on some lowest-latency path (exact floating-point equality, the
        # sum Dijkstra itself forms); an edge into the source is never a predecessor (only
        # a zero-latency edge can be tight there)
        tight = (dist[:, self.e_tail] + self.e_weight) == dist[:, self.e_head]
        if self.has_zero:
            tight &= self.e_head[None, :] != sources[:, None]
        # every other node has a tight incoming edge: exactly n - 1 of them, no tie
        ties = tight.sum(axis=1) != n - 1
        if ties.any():
            unique = np.flatnonzero(~ties)
            rows, cols = np.nonzero(tight[unique])
            pred[unique[rows], self.e_head[cols]] = self.e_res[cols]
            for i in np.flatnonzero(ties).tolist():
                pred[i] = self._resolve(int(sources[i]), dist[i], tight[i])
        else:
            rows, cols = np.nonzero(tight)
            pred[rows, self.e_head[cols]] = self.e_res[cols]
        return dist, pred

    def _resolve(self, s: int, dist: np.ndarray, tight: np.ndarray) -> np.ndarray:
        """Predecessors of one source with ties: fewest links, then nearest, lowest index."""
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import shortest_path

        idx = np.flatnonzero(tight)
        a, b = self.e_tail[idx], self.e_head[idx]
        sub = csr_array((np.ones(len(idx)), (a, b)), shape=(self.n, self.n))
        hops = shortest_path(sub, directed=True, unweighted=True, indices=s)
        keep = hops[a] + 1 == hops[b]
        a, b, res = a[keep], b[keep], self.e_res[idx[keep]]
        order = np.lexsort((a, dist[a], b))  # by destination, then (latency from s, index)
        a, b, res = a[order], b[order], res[order]
        first = np.ones(len(b), dtype=bool)
        first[1:] = b[1:] != b[:-1]
        row = np.full(self.n, -1, dtype=np.int32)
        row[b[first]] = res[first]
        return row

    def bottleneck(self, sources: np.ndarray, pred: np.ndarray) -> np.ndarray:
        """Smallest link bandwidth on each route of ``sources`` (``inf`` at the source).

        Pointer doubling on the predecessor rows: after round ``r`` each node holds the
        minimum over the last ``2**r`` links of its route and points ``2**r`` links up.
        """
        k, n = pred.shape
        base = (np.arange(k) * n)[:, None]
        at_source = pred < 0
        res = np.where(at_source, 0, pred)
        up = np.where(at_source, sources[:, None], self.tail[res]) + base
        bw = np.where(at_source, math.inf, self.link_bandwidth[res // 2]).ravel()
        up = up.ravel()
        while True:
            nxt = up[up]
            if np.array_equal(nxt, up):
                break
            np.minimum(bw, bw[up], out=bw)
            up = nxt
        return bw.reshape(k, n)
