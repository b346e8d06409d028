"""The core: the graph left once the trees are peeled off, and one exact search on it.

Node numbers here are core-local (``Core.nodes[i]`` is the platform node of core node
``i``); an *edge* is a directed core link, numbered in order of head, then tail, so that
the incoming edges of a node are contiguous.  What a search gives, per start:

- ``dist``: latencies from the start, each summed link after link from the start's own
  latency (:meth:`Core.search`: SciPy's Dijkstra, whose distances do not depend on how
  it breaks ties);
- ``pred``: each node's predecessor edge by the tie rule (:meth:`Core.predecessors`);
- the bottleneck bandwidth and link count of each route (:meth:`Core.bottleneck`);
- the row's *slack*, the least ``fl(dist[u] + w) - dist[v]`` over edges outside its
  tree: how far the row is from a tie, which :func:`certified` turns into a proof that
  the same tree is the search's from another starting latency.

:meth:`Core.sums` and :meth:`Core.checked` do the converse: sum latencies along a guessed
tree and tell whether they are a search's (used by the kernel and the chains).
"""

from __future__ import annotations

import itertools

import numpy as np

from .arrays import least_positive, rows_of
from .graph import LinkGraph


class Core:
    """The core's directed edges in core-local node numbers, and Dijkstra on it.

    ``e_tail``, ``e_head``, ``e_weight`` (latency), ``e_bw`` (bandwidth) and ``e_res``
    (the platform's directed-link resource) per edge; ``e_first[x]`` is ``x``'s first
    incoming edge; ``local[node]`` a platform node's core number (-1 off the core);
    ``w_max`` the largest link latency.  O(E log E) to build.
    """

    def __init__(self, g: LinkGraph, nodes: np.ndarray) -> None:
        tuning = self.tuning = g.tuning
        self.nodes = nodes
        c = self.c = len(nodes)
        local = np.full(g.n, -1, dtype=np.int64)
        local[nodes] = np.arange(c)
        self.local = local
        keep = np.flatnonzero((local[g.tail] >= 0) & (local[g.head] >= 0))
        tail, head = local[g.tail[keep]], local[g.head[keep]]
        # edges sorted by head, then tail: incoming edges of each node are contiguous
        order = np.lexsort((tail, head))
        self.e_tail, self.e_head = tail[order], head[order]
        self.e_weight = g.weight[keep][order]
        self.e_res = keep[order]  # the global resource (directed edge) of each core edge
        self.e_bw = g.link_bandwidth[self.e_res // 2]
        self.e_index = np.arange(len(keep), dtype=np.int64)
        # each edge's resource, and -1 (a row's start) at the end (:meth:`resources`)
        self.res_of = np.append(self.e_res, -1).astype(np.int32)
        # each edge's place among its head's incoming edges, in the smallest type
        # that holds them (:meth:`predecessors` sums these over runs)
        place = self.e_index - np.searchsorted(self.e_head, self.e_head)
        self._place = place.astype(tuning.rank_dtype(int(place.max(initial=0)) + 1) or np.int64)
        # each node's first incoming edge (every core node has two or more)
        self.e_first = np.searchsorted(self.e_head, np.arange(c))
        self._up_shift = self.e_tail - self.e_head  # from an edge's head to its tail
        self.w_max = float(self.e_weight.max()) if len(keep) else 0.0
        # rows per block of the tie test and the slack (:meth:`predecessors`,
        # :meth:`least_slack`, :meth:`checked`)
        self.edge_rows = max(1, tuning.edge_rows_elements // max(1, len(keep)))
        self._csr = None

    @property
    def csr(self):
        """The core as a scipy sparse matrix, built on first use: a pure tree (one core
        node) never searches, and then never imports scipy (0.2-0.3 s)."""
        if self._csr is None:
            from scipy.sparse import csr_array

            c = self.c  # explicit zeros stay edges in a sparse graph (zero-latency links)
            self._csr = csr_array((self.e_weight, (self.e_tail, self.e_head)), shape=(c, c))
        return self._csr

    def search(
        self, start: np.ndarray, offset: np.ndarray, slack: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        """Dijkstra from core node ``start[i]`` (local) whose latency is ``offset[i]``:
        ``(dist, pred)``, ``k x c``; ``pred`` a core edge index, -1 at the start.  With
        ``slack`` (booleans, one per start), also each row's smallest slack (see
        :meth:`predecessors`), ``inf`` where not asked.

        A start with a non-zero offset is searched from a virtual node linked to it by one
        link of latency ``offset``: every sum is then formed from the offset, exactly as a
        search from the source in the tree would form it.
        """
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import dijkstra

        k, c = len(start), self.c
        if c == 1:
            dist = offset.reshape(k, 1).astype(float)
            pred = np.full((k, 1), -1, dtype=np.int64)
            return (dist, pred) if slack is None else (dist, pred, np.full(k, np.inf))
        plain = offset == 0
        dist = np.empty((k, c))
        at = np.flatnonzero(plain)
        if len(at) == k:  # (no copy)
            dist = dijkstra(self.csr, directed=True, indices=start)
        elif len(at):
            dist[at] = dijkstra(self.csr, directed=True, indices=start[at])
        at = np.flatnonzero(~plain)
        if len(at):  # one virtual node per source, c + j -> start[j]
            extra = len(at)
            tail = np.concatenate([self.e_tail, c + np.arange(extra)])
            head = np.concatenate([self.e_head, start[at]])
            weight = np.concatenate([self.e_weight, offset[at]])
            graph = csr_array((weight, (tail, head)), shape=(c + extra, c + extra))
            dist[at] = dijkstra(graph, directed=True, indices=c + np.arange(extra))[:, :c]
        if slack is None:
            return dist, self.predecessors(start, dist)
        return (dist, *self.predecessors(start, dist, slack))

    def predecessors(
        self, start: np.ndarray, dist: np.ndarray, slack: np.ndarray | None = None
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The tie rule on ``dist`` rows: the one tight incoming edge of each node, or
        (rows with ties) fewest links, then nearest predecessor, then lowest index.

        With ``slack`` (booleans, one per row), also each asked row's smallest *slack*
        ``fl(dist[u] + w) - dist[v]`` over the edges ``u -> v`` that are not
        predecessors (``v`` not the start): 0 for a row with ties, ``inf`` where not
        asked.  A large slack certifies the row's tree for other starting latencies
        (:func:`certified`).
        """
        k, c = dist.shape
        pred = np.full((k, c), -1, dtype=np.int64)
        # tight edges: those on some lowest-latency path (exact floating-point equality, the
        # sum Dijkstra itself forms); an edge into the start is never a predecessor (only a
        # zero-latency edge, or one too small to change the sum, can be tight there).
        # z = fl(fl(dist[u] + w) - dist[v]) is never negative (Dijkstra relaxed every edge)
        # and is 0 exactly when the edge is tight (a difference of finite doubles is 0 only
        # between equal ones)
        # (by blocks of rows: k x E temporaries of at most ``edge_rows_elements`` entries)
        low = np.full(k, np.inf)
        for lo in range(0, k, self.edge_rows):
            at = slice(lo, min(k, lo + self.edge_rows))
            asked = None if slack is None else slack[at]
            self._predecessors_block(start[at], dist[at], asked, pred[at], low[at])
        return pred if slack is None else (pred, low)

    def edge_slack(self, dist: np.ndarray) -> np.ndarray:
        """``fl(fl(dist[u] + w) - dist[v])`` for every row and core edge ``u -> v``."""
        z = np.take(dist, self.e_tail, axis=1)  # (much faster than dist[:, e_tail])
        z += self.e_weight
        z -= np.take(dist, self.e_head, axis=1)
        return z

    def _predecessors_block(self, start, dist, slack, pred, low) -> None:
        """:meth:`predecessors` of a block of rows, into ``pred`` and ``low``."""
        c = dist.shape[1]
        z = self.edge_slack(dist)
        tight = z == 0
        tight &= self.e_head[None, :] != start[:, None]
        # every other node has a tight incoming edge: exactly c - 1 of them, no tie
        ties = np.count_nonzero(tight, axis=1) != c - 1
        unique = np.flatnonzero(~ties)
        if len(unique):
            # then each node but the start has exactly one, among its incoming edges (a
            # run: edges are sorted by head): the run's sum of tight edge indices is it
            # (summed as small integers: a temporary of one or two bytes an entry)
            into = rows_of(~ties)
            place = np.multiply(tight[into], self._place, dtype=self._place.dtype)
            pred[into] = np.add.reduceat(place, self.e_first, axis=1, dtype=self._place.dtype)
            pred[into] += self.e_first
            pred[unique, start[unique]] = -1
        for i in np.flatnonzero(ties).tolist():
            pred[i] = self._resolve(int(start[i]), dist[i], tight[i])
        if slack is None:
            return
        asked = np.flatnonzero(slack & ~ties)
        if len(asked):  # without ties, z is 0 on the predecessors and into the start only
            low[asked] = least_positive(z[rows_of(slack & ~ties)])
        low[ties & slack] = 0.0

    def _resolve(self, s: int, dist: np.ndarray, tight: np.ndarray) -> np.ndarray:
        """Predecessors of one start with ties: fewest links, then nearest, lowest index."""
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import shortest_path

        idx = np.flatnonzero(tight)
        a, b = self.e_tail[idx], self.e_head[idx]
        sub = csr_array((np.ones(len(idx)), (a, b)), shape=(self.c, self.c))
        hops = shortest_path(sub, directed=True, unweighted=True, indices=s)
        keep = hops[a] + 1 == hops[b]
        a, b, edge = a[keep], b[keep], idx[keep]
        order = np.lexsort((a, dist[a], b))  # by destination, then (latency from s, index)
        a, b, edge = a[order], b[order], edge[order]
        first = np.ones(len(b), dtype=bool)
        first[1:] = b[1:] != b[:-1]
        row = np.full(self.c, -1, dtype=np.int64)
        row[b[first]] = edge[first]
        return row

    def resources(self, edge: np.ndarray) -> np.ndarray:
        """The global resource of each core edge index (-1 stays -1)."""
        if self.c == 1:
            return edge
        return np.take(self.res_of, edge)  # (-1 reads the table's last entry, -1)

    def bottleneck(
        self, start: np.ndarray, pred: np.ndarray, base: np.ndarray, depth: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Smallest link bandwidth on each route (``base[i]`` at the start, and every route
        of row ``i`` also counts ``base[i]``: the bandwidth of the climb before it); with
        ``depth``, also each route's number of links.

        Pointer doubling on the predecessor rows: after round ``r`` each node holds the
        minimum over the last ``2**r`` links of its route and points ``2**r`` links up;
        by blocks of rows whose pointers stay in the cache.
        """
        k, c = pred.shape
        if c == 1:
            bw = base.reshape(k, 1).astype(float)
            return (bw, np.zeros((k, 1), dtype=np.int64)) if depth else bw
        bw = np.empty((k, c))
        links = np.empty((k, c), dtype=np.int32) if depth else None
        step = self.tuning.along_rows
        for lo in range(0, k, step):
            at = slice(lo, min(k, lo + step))
            got = self._bottleneck_block(start[at], pred[at], base[at], depth)
            if links is not None:
                bw[at], links[at] = got
            else:
                bw[at] = got
        return (bw, links) if links is not None else bw

    def _bottleneck_block(
        self, start: np.ndarray, pred: np.ndarray, base: np.ndarray, depth: bool
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """:meth:`bottleneck` of a block of rows."""
        k, c = pred.shape
        offset = (np.arange(k) * c)[:, None]
        at_start = pred < 0
        edge = np.where(at_start, 0, pred)
        up = (np.where(at_start, start[:, None], self.e_tail[edge]) + offset).ravel()
        bw = np.where(at_start, base[:, None], self.e_bw[edge]).ravel()
        links = (~at_start).astype(np.int64).ravel() if depth else None
        while True:
            nxt = up[up]
            if np.array_equal(nxt, up):
                break
            np.minimum(bw, bw[up], out=bw)
            if links is not None:  # links from each node to where it points
                links += links[up]
            up = nxt
        np.minimum(bw, bw[up], out=bw)  # the start's base
        if links is not None:
            return bw.reshape(k, c), links.reshape(k, c)
        return bw.reshape(k, c)

    def checked(self, dist: np.ndarray, slack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which rows of latencies summed along trees (:meth:`.Kernel.rows`) are a
        search's without ties: ``(ok, slack)``, ``ok[i]`` when exactly ``c - 1`` links
        have ``fl(dist[u] + w) - dist[v] <= 0`` (the trees' own, tight: then none is
        negative and no other is tight), and the slack of the asked rows as
        :meth:`predecessors` forms it (``inf`` elsewhere).  A tight link into the start
        (only with links of latency 0) rejects a row the tie rule would take: it is then
        searched.

        Both from the bit patterns less 1, as :func:`least_positive`: ``+0.0`` becomes
        the largest pattern and a negative double's (its sign bit set) stays above every
        positive one's, so one count and one minimum tell both.  By blocks of rows."""
        k, c = dist.shape
        ok = np.empty(k, dtype=bool)
        low = np.full(k, np.inf)
        top = np.uint64((1 << 63) - 1)  # +0.0 less 1 wraps above it, negatives are at it or above
        for lo in range(0, k, self.edge_rows):
            at = slice(lo, min(k, lo + self.edge_rows))
            u = self.edge_slack(dist[at]).view(np.uint64)
            u -= np.uint64(1)
            ok[at] = np.count_nonzero(u >= top, axis=1) == c - 1
            asked = slack[at] & ok[at]
            if asked.any():  # (ok rows have positive entries: c - 1 links of 2c or more)
                least = u[asked].min(axis=1)
                least += np.uint64(1)
                low[at][asked] = least.view(np.float64)
        return ok, low

    def sums(self, pred: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latencies and bottlenecks along the trees of the predecessor rows ``pred``
        (core edges, -1 at the start) from 0 and ``inf`` at the start, the latencies
        summed link after link; ``depth`` the links from the start.
        Level by level (:meth:`level_sums`), both at once."""
        k, c = pred.shape
        out = np.empty((k, c))
        bw = np.empty((k, c))
        flat_all, bw_all = out.reshape(-1), bw.reshape(-1)
        kind = np.uint16 if c <= 1 << 16 else np.int64  # (depth < c: a radix sort)
        step = self.tuning.along_rows
        for lo in range(0, k, step):
            m = min(k, lo + step) - lo
            self.level_sums(
                flat_all[lo * c : (lo + m) * c],
                np.zeros(m),
                pred[lo : lo + m].reshape(-1),
                depth[lo : lo + m].reshape(-1).astype(kind),
                bw_all[lo * c : (lo + m) * c],
            )
        return out, bw

    def level_sums(
        self,
        flat: np.ndarray,
        start: np.ndarray,
        edge: np.ndarray,
        depth: np.ndarray,
        flat_bw: np.ndarray | None = None,
    ) -> None:
        """Sums along the trees of a block of ``m = len(start)`` rows (flattened: ``edge``
        each node's predecessor core edge, ``depth`` its links from its row's start),
        level by level, every row at once: a start gets ``start[i]`` (and ``inf`` in
        ``flat_bw``), every other node its parent's entry plus its link's latency (and the
        least of its parent's bottleneck and its link's bandwidth).

        The entries sorted by depth (a radix sort on 16 bits) are the flat positions of
        the nodes level after level, starts first (one per row, in row order)."""
        m = len(start)
        order = np.argsort(depth, kind="stable")
        ends = np.cumsum(np.bincount(depth)).tolist()
        flat[order[:m]] = start
        into = order[m:]
        edge = edge[into]
        src = into + self._up_shift[edge]  # the parent, in the same row
        weight = self.e_weight[edge]
        link_bw = None
        if flat_bw is not None:
            flat_bw[order[:m]] = np.inf
            link_bw = self.e_bw[edge]
        for a, b in itertools.pairwise(ends):
            i, j = a - m, b - m
            flat[into[i:j]] = flat[src[i:j]] + weight[i:j]
            if link_bw is not None:
                flat_bw[into[i:j]] = np.minimum(flat_bw[src[i:j]], link_bw[i:j])

    def least_slack(self, dist: np.ndarray) -> np.ndarray:
        """Each row's least non-zero ``fl(fl(dist[u] + w) - dist[v])`` over the core's
        edges ``u -> v`` (rows of latencies without ties, as :meth:`predecessors` forms
        the slack), by blocks of rows."""
        low = np.empty(len(dist))
        for lo in range(0, len(dist), self.edge_rows):
            at = slice(lo, lo + self.edge_rows)
            low[at] = least_positive(self.edge_slack(dist[at]))
        return low


def certified(slack: np.ndarray, top: np.ndarray, offset: np.ndarray, c: int) -> np.ndarray:
    """Whether a core row searched from latency 0, whose smallest slack is ``slack`` and
    whose latencies plus the largest link latency are at most ``top``, has the same
    predecessors when searched from latency ``offset`` (a source's climb), on a core of
    ``c`` nodes.

    Why: let ``R`` be the exact (real) sums along the row's tree and ``g`` the relative
    error bound of a floating-point sum of up to ``c + 2`` non-negative terms,
    ``g = (c + 2) u / (1 - (c + 2) u)`` with ``u = 2**-53``.  The row's latencies are
    within ``g R`` of ``R``, so every edge ``x -> y`` outside the tree has a real slack
    ``R[x] + w - R[y]`` of at least ``slack - 4 g top``: the tree is the unique real
    shortest-path tree.  From ``offset``, a latency is within ``g (offset + R)`` of
    ``offset + R``, so an edge outside the tree stays strictly above its head's latency
    (never tight: no tie, and the same tight predecessor everywhere) when
    ``slack > 8 g (offset + top)``.  Sums, not bounds, give the latencies themselves:
    routes are summed from their source (:meth:`.Routes.pairs`).
    """
    unit = float(np.finfo(float).eps) / 2
    g = (c + 2) * unit / (1 - (c + 2) * unit)
    return slack > 8 * g * (offset + top)
