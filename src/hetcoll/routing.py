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

Searches run on the graph's *core* (see :class:`_LinkGraph`); paths in the trees hanging off
it are unique.  A search from a core node outside the core's chains runs on the smaller
*kernel* (the core with its chains contracted, :class:`_Kernel`); its tree is only a
guess: the latencies are summed along it link after link and the row is taken when no
link is negative and none but the tree's is tight (:meth:`_Core._kernel_rows`), and
searched on the core otherwise.  A source in a tree enters the core at its *attachment*
with its climb's latency, and its core choices are usually those of the attachment
itself: they are shared when the attachment's row has a *slack* (the least
``fl(dist[u] + w) - dist[v]`` over links outside its tree) large enough to prove that
starting from the climb's latency changes no choice and creates no tie
(:func:`_certified`, a floating-point error bound); the source is searched on its own
otherwise.  Latencies are never taken from another source: they are summed from the
source along its route.

Nothing is stored per path.  Without the matrices, :meth:`Routes.pairs` walks each route
(climb, the core by its source's *core predecessor row*, descent) and sums its latencies
link after link; core rows are computed for the sources asked for and kept.  The full
``N x N`` latency, bandwidth and predecessor matrices are built (in batches of sources:
the core's sources searched, then the sources in trees along their attachments' certified
trees) only when a planner reads them; routes are then read from the predecessor rows.
A model's pairwise cost matrix (:meth:`Routes.cost_matrix`: ``base[u] + latency + nbytes /
bandwidth``, the hockney send and delay matrices) does not need them: the first one is
written from the same batches of rows, and every source's core row is kept for the routes.
On a tree (a core of one node) it is written for every source at once, by slices
(:meth:`_Forest.tree_costs`), and routes are read as runs of heavy paths
(:meth:`_Forest.tree_routes`): the same sums, from the source link after link.

Complexity: one search costs O(E + N log N) (Dijkstra on the core) plus O(E) vectorised
work; all pairs O(C (E + N log N) + N^2) time for C core nodes (when every tree source is
certified) and O(N^2) memory (latency, bandwidth: 8 bytes each; predecessors: 4 bytes); a
route of ``h`` links is read and summed in O(h).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

__all__ = ["Routes"]

# Climbs at least this long are copied into routes slice by slice rather than vectorised.
_LONG_CLIMB = 64
# Sources per batch when building all-pairs matrices: bounds the k x E temporaries.
_BATCH_ELEMENTS = 1 << 19
# Starts per core search batch: bounds its k x E temporaries (32 MB each at most).  Large
# on purpose: numpy backs arrays of 4 MiB and more with fresh huge pages and smaller ones
# above 128 KiB with fresh mappings, so many small batches touch far more new memory (each
# new page costs the kernel a fault and its zeroing: on the random 5000-node platform,
# 1 << 19 elements touched 1.3 GB over the cost matrix, 1 << 22 0.7 GB).
_CORE_ELEMENTS = 1 << 22
# Rows x edges per block of the tie test (:meth:`_Core.predecessors`): 2 MB temporaries,
# in the cache's reach and below numpy's 4 MiB for huge pages.
_EDGE_ROWS_ELEMENTS = 1 << 18
# Core row entries kept to derive the rows of chain nodes from (:class:`_EndRows`; 7 to
# 20 bytes each): 4M entries, 28 to 80 MB at most.
_END_ELEMENTS = 1 << 22
# Searches from kernel nodes run on the kernel (:class:`_Kernel`) when it has at most this
# share of the core's nodes (Dijkstra's cost is about proportional to the graph's size).
_KERNEL_SHARE = 0.75
# Pairs of kernel nodes up to which a table gives each pair's link (2 or 4 bytes a pair).
_KERNEL_TABLE = 1 << 22
# Rows per block when summing along kept rows' trees and in the bottlenecks' pointer
# doubling (cache-sized temporaries).
_ALONG_ROWS = 64
# (column, core node) entries per group of runs summed along their attachments' trees
# (:meth:`_Forest._along`): temporaries of 2 MB, memory reused group after group.
_ALONG_ELEMENTS = 1 << 18
# Row entries per block of a descent level (:meth:`_Forest._rows_t`): 1 MB temporaries
# (a whole level's were 5 MB of fresh memory per batch on the random 5000-node platform).
_DESCENT_ELEMENTS = 1 << 17
# Rows per block when adding the cost matrix's terms (cache-sized temporaries).
_COST_ROWS = 512
# Sources per batch when filling the trees (node-major rows of 20 bytes per element).
_TREE_ELEMENTS = 1 << 21
# Links per chunk when copying tree routes' runs (bounds the index temporaries).
_RUN_CHUNK = 1 << 20


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
        # core predecessor rows computed for some sources only: source -> row of _core
        self._core_of: dict[int, int] = {}
        self._core = np.empty((0, 0), dtype=np.int32)
        self._core_count = 0
        self._pair_memo: dict[tuple[int, int], tuple[float, float]] = {}
        self._last_pairs: tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]] | None = None
        self._streamed = False  # cost_matrix computed its rows without keeping the matrices

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
            self._build_matrices()
        return self._bw  # type: ignore[return-value]

    def _build_matrices(self) -> None:
        g = self._graph
        assert g is not None
        lat, pred, bw = g.solve(np.arange(self.n))
        for a in (lat, pred, bw):
            a.setflags(write=False)
        self._lat, self._pred, self._bw = lat, pred, bw
        self._core_of = {}  # the matrices hold every route from now on
        self._core = np.empty((0, 0), dtype=np.int32)

    def cost_matrix(self, base: np.ndarray, nbytes: int) -> np.ndarray:
        """``base[u] + latency[u, v] + nbytes / bandwidth[u, v]`` for every pair, summed in
        that order (``nbytes / bandwidth`` left out when ``nbytes`` is 0), 0 on the
        diagonal: a model's pairwise cost matrix (``N x N``, a new array).

        On a link platform whose matrices are not built, the first call does not build
        them: it writes each batch of rows (:meth:`_Forest.batches`) straight into the
        result and keeps every source's core predecessor row for :meth:`pairs` (the
        latency and bandwidth matrices are 400 MB for 5000 nodes and their transposes as
        much time as the costs); a later call builds them.
        """
        n = self.n
        if self._graph is not None and self._lat is None and not self._streamed:
            self._streamed = True
            with _small_pages():
                return self._stream_costs(np.asarray(base, dtype=float), nbytes)
        lat = self.latency
        bw = self.bandwidth if nbytes else None  # 0 / beta is 0: no bandwidth needed
        m = np.empty((n, n))
        for lo in range(0, n, _COST_ROWS):
            hi = min(n, lo + _COST_ROWS)
            np.add(base[lo:hi, None], lat[lo:hi], out=m[lo:hi])
            if bw is not None:
                m[lo:hi] += nbytes / bw[lo:hi]
        np.fill_diagonal(m, 0.0)
        return m

    def _stream_costs(self, base: np.ndarray, nbytes: int) -> np.ndarray:
        """:meth:`cost_matrix` from the rows batch by batch (the same operations on the
        same values: ``fl(fl(base + lat) + fl(nbytes / bw))``), keeping the core rows."""
        g = self._graph
        assert g is not None
        f = g.forest
        n = self.n
        if f.core.c == 1:  # a tree: every source at once, and no core row to keep
            m = f.tree_costs(base, nbytes)
            self._core, self._core_count = np.full((n, 1), -1, dtype=np.int32), n
            self._core_of = {s: s for s in range(n)}
            return m
        m = np.empty((n, n))
        sources = np.arange(n)
        heads = f.heads(sources)
        # the core rows, kept once each: a source in a tree whose row is its attachment's
        # (certified, :meth:`_Forest._along`) shares that row; rows are written from the
        # start of ``core``, its unused end never touched (no page faults)
        core = np.empty((n, f.core.c), dtype=np.int32)
        row_of = np.empty(n, dtype=np.int64)
        count = 0
        for at, (lt, _, bt, rows) in f.batches(sources, preds=False, heads=heads):
            lt += base[at]  # lt[x, i] is from source at[i]
            if nbytes:
                np.divide(nbytes, bt, out=bt)
                lt += bt
            _transpose_into(m, lt, at)
            own = _rows_of(~heads.shared[at])  # (all of a batch of core sources: a view)
            kept = rows[own]
            core[count : count + len(kept)] = kept
            row_of[at[own]] = np.arange(count, count + len(kept))
            count += len(kept)
        np.fill_diagonal(m, 0.0)
        shared = np.flatnonzero(heads.shared)
        row_of[shared] = row_of[f.attach[shared]]  # (an attachment is a core source)
        # a tree source's row starts at its attachment (the climb's last link is not on
        # the core), as :meth:`_Forest.core_rows` gives it
        core[row_of, f.core.local[f.attach]] = -1
        self._core, self._core_count = core, count
        self._core_of = dict(zip(range(n), row_of.tolist(), strict=True))
        return m

    # -- rows and paths -------------------------------------------------------------------------

    def prepare(self, sources: Sequence[int]) -> None:
        """Compute the core predecessor rows of the routes from ``sources`` not known yet
        (nothing once the full matrices are built, or on a matrix platform)."""
        if self._graph is None or self._pred is not None:
            return
        todo = sorted({int(s) for s in sources} - set(self._core_of))
        if not todo:
            return
        rows, row_of, heads = self._graph.forest.core_rows(np.array(todo, dtype=np.int64))
        first, need = self._core_count, self._core_count + len(rows)
        if need > len(self._core):  # grow geometrically: rows may come a few at a time
            size = max(need, 2 * len(self._core), 8)
            self._core = _grown(self._core, size, first, rows.shape[1])
        self._core[first:need] = rows
        self._core_count = need
        # an attachment's row is its own route's row (a core node, searched from 0)
        for a, j in zip(heads.tolist(), range(len(heads)), strict=True):
            self._core_of.setdefault(a, first + j)
        for x, j in zip(todo, row_of.tolist(), strict=True):
            self._core_of[x] = first + j

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
        ``resources[offsets[i]:offsets[i + 1]]``, in order from ``u[i]``.  Without the
        matrices, only the core rows of the sources in ``u`` whose routes cross the core are
        computed, and each latency is summed along its route (the sum a search from ``u[i]``
        forms); O(total route length) besides.
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
        last = self._last_pairs
        if last is not None and np.array_equal(last[0], u) and np.array_equal(last[1], v):
            return last[2]  # the simulator asks twice when its tree shortcut does not apply
        if self._pred is not None:
            got = self._pairs_from_matrices(u, v)
        else:
            lat, resources, offsets = self._walk(u, v)
            bw = np.full(total, np.inf)
            nonempty = offsets[1:] > offsets[:-1]
            if nonempty.any():
                bw[nonempty] = np.minimum.reduceat(g.resource_bw[resources], offsets[:-1][nonempty])
            got = (lat, bw, resources, offsets)
        for a in got:
            a.setflags(write=False)
        self._last_pairs = (u.copy(), v.copy(), got)
        return got

    def _walk(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Routes of the pairs ``(u[i], v[i])`` without the matrices: ``(latency,
        resources, offsets)`` as :meth:`pairs` returns them.

        A route climbs from ``u`` towards the core and descends to ``v``: within one tree,
        up to the nodes' lowest common ancestor and down; otherwise up to ``u``'s
        attachment, across the core by ``u``'s core row (computed on demand, see
        :meth:`prepare`), down from ``v``'s attachment.  Each distinct source climbs once
        (its pairs share the climb and its latencies); then all pairs walk at once, one
        link per step, up from ``v`` to where the route turns, and along the core; the
        latency continues from the climb's, link after link.  O(total route length).
        """
        g = self._graph
        assert g is not None
        f = g.forest
        total = len(u)
        if f.core.c == 1:  # a tree: every route is a climb and a descent, no core row
            resources, offsets = f.tree_routes(u, v)
            lat = np.zeros(total)
            _fold_into(lat, g.weight, resources, offsets[:-1], offsets[1:])
            return lat, resources, offsets
        au, av = f.attach[u], f.attach[v]
        cross = np.flatnonzero(au != av)
        self.prepare(np.unique(u[cross]).tolist())
        depth = f.depth
        # each distinct source's climb: its links and the latency after each, in order
        src, which = np.unique(u, return_inverse=True)
        climb_len = depth[src]
        climb_at = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(climb_len, out=climb_at[1:])
        climb_res = np.empty(climb_at[-1], dtype=np.int64)
        climb_lat = np.empty(climb_at[-1])
        x = src.copy()
        reach = np.zeros(len(src))
        act = np.flatnonzero(climb_len > 0)
        step = 0
        while len(act):
            at = climb_at[act] + step
            climb_res[at] = f.up[x[act]]
            reach[act] = reach[act] + f.latency[x[act]]
            climb_lat[at] = reach[act]
            x[act] = f.parent[x[act]]
            step += 1
            act = act[climb_len[act] > step]
        # from v up to where the route turns: u's lowest ancestor-or-self above v (same
        # tree: preorder intervals tell ancestors), or v's attachment (another tree)
        same = au == av
        y = v.copy()
        first_u = f.first[u]
        down_steps: list[tuple[np.ndarray, np.ndarray]] = []
        n_down = np.zeros(total, dtype=np.int64)

        def turned(i: np.ndarray) -> np.ndarray:
            yi = y[i]
            above = (f.first[yi] <= first_u[i]) & (first_u[i] < f.last[yi])
            return np.where(same[i], above, depth[yi] == 0)

        act = np.flatnonzero(~turned(np.arange(total)))
        while len(act):
            down_steps.append((act, f.up[y[act]] ^ 1))
            n_down[act] += 1
            y[act] = f.parent[y[act]]
            act = act[~turned(act)]
        n_up = depth[u] - np.where(same, depth[y], 0)
        # across the core, walked back from v's attachment by u's core row
        core_steps: list[tuple[np.ndarray, np.ndarray]] = []
        n_core = np.zeros(total, dtype=np.int64)
        local = f.core.local
        rows = self._core
        row = np.array([self._core_of[s] for s in u[cross].tolist()], dtype=np.int64)
        idx, home, node = cross, au[cross], av[cross]
        while len(idx):
            res = rows[row, local[node]].astype(np.int64)
            core_steps.append((idx, res))
            n_core[idx] += 1
            node = g.tail[res]
            walking = node != home
            idx, home, node, row = idx[walking], home[walking], node[walking], row[walking]
        offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(n_up + n_core + n_down, out=offsets[1:])
        resources = np.empty(offsets[-1], dtype=np.int64)
        # the climbs' links: the first n_up of the source's climb
        short = (n_up > 0) & (n_up < _LONG_CLIMB)
        pair = np.repeat(np.flatnonzero(short), n_up[short])
        k = np.arange(len(pair)) - np.repeat(np.cumsum(n_up[short]) - n_up[short], n_up[short])
        resources[offsets[pair] + k] = climb_res[climb_at[which[pair]] + k]
        for i in np.flatnonzero(n_up >= _LONG_CLIMB).tolist():  # copied whole
            a, m = int(climb_at[which[i]]), int(n_up[i])
            resources[offsets[i] : offsets[i] + m] = climb_res[a : a + m]
        lat = np.zeros(total)
        climbed = np.flatnonzero(n_up > 0)
        lat[climbed] = climb_lat[climb_at[which[climbed]] + n_up[climbed] - 1]
        end = offsets[:-1] + n_up + n_core - 1
        for k, (i, res) in enumerate(core_steps):  # the k-th core link from v's attachment
            resources[end[i] - k] = res
        for k, (i, res) in enumerate(down_steps):  # the k-th link up from v
            resources[offsets[i + 1] - 1 - k] = res
        _fold_into(lat, g.weight, resources, offsets[:-1] + n_up, offsets[1:])
        return lat, resources, offsets

    def _pairs_from_matrices(
        self, u: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`pairs` once the matrices are built: each route walked back from its
        destination by its source's predecessor row."""
        g = self._graph
        assert g is not None
        total = len(u)
        lat = np.asarray(self._lat[u, v], dtype=float)  # type: ignore[index]
        # walk every route back from its destination at once, one link per step; a walk
        # reads its source's predecessor row through one flat index (row * n + node)
        flat_pred = self._pred.reshape(-1)  # type: ignore[union-attr]
        hops = np.zeros(total, dtype=np.int64)
        steps: list[tuple[np.ndarray, np.ndarray]] = []
        idx = np.flatnonzero(v != u)
        base = u[idx] * self.n
        src = u[idx]
        at = base + v[idx]
        while len(idx):
            res = flat_pred[at]
            steps.append((idx, res))
            node = g.tail[res]
            arrived = node == src
            if arrived.any():
                hops[idx[arrived]] = len(steps)
                walking = ~arrived
                idx, base, src, node = idx[walking], base[walking], src[walking], node[walking]
            at = base + node
        offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(hops, out=offsets[1:])
        resources = np.empty(offsets[-1], dtype=np.int64)
        last = offsets[1:] - 1  # where each route's last link goes
        for k, (idx, res) in enumerate(steps):  # step k: the k-th link from the destination
            resources[last[idx] - k] = res
        bw = np.full(total, np.inf)
        nonempty = hops > 0
        if nonempty.any():
            bw[nonempty] = np.minimum.reduceat(g.resource_bw[resources], offsets[:-1][nonempty])
        return lat, bw, resources, offsets

    @property
    def resource_bandwidth(self) -> np.ndarray:
        """Bandwidth (bytes/s) of each directed-link resource (empty without links)."""
        if self._graph is None:
            return np.empty(0)
        return self._graph.resource_bw.copy()

    def resource_ends(self, resource: int) -> tuple[int, int]:
        """``(from, to)`` node indices of a directed-link resource."""
        g = self._graph
        if g is None:
            raise ValueError("a matrix platform has no link resources")
        return int(g.tail[resource]), int(g.head[resource])


class _LinkGraph:
    """The directed edges of an undirected link list, and the per-source computations.

    Routes are computed on the graph's structure: the *core* (its 2-core: what is left once
    nodes of degree one are removed again and again) and the trees that hang off it, each
    from one core node, its *attachment* (a tree platform has one core node, a centre).  A
    route between two nodes of one tree stays in it; any other route climbs from its source
    to the source's attachment, crosses the core, and descends the destination's tree:
    paths in the trees are unique, so Dijkstra (and the tie rule) only ever runs on the
    core.  Latencies are still the floating-point sums from the source along the route,
    link after link, as a Dijkstra over the whole graph forms them: a source in a tree
    enters the core with its climb's latency as the core search's starting value, and the
    trees are filled level by level from each node's parent (``dist[parent] + latency``).
    """

    def __init__(self, n, u, v, latency, bandwidth) -> None:
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
        self.weight = np.repeat(lat, 2)
        self.resource_bw = np.repeat(self.link_bandwidth, 2)
        self.batch = max(1, min(n, _BATCH_ELEMENTS // max(1, n)))
        self._forest: _Forest | None = None

    @property
    def forest(self) -> _Forest:
        if self._forest is None:
            self._forest = _Forest(self)
        return self._forest

    def solve(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Latency rows, predecessor-resource rows (-1 at the source) and bottleneck-
        bandwidth rows (``inf`` at the source) of ``sources``."""
        return self.forest.rows(np.asarray(sources, dtype=np.int64))


class _Core:
    """The core's directed edges in core-local node numbers, and Dijkstra on it.

    :meth:`rows` is what the forest asks for: a search's rows, but the rows of nodes
    inside the core's chains (:class:`_Chains`, most of a sparse core's nodes) derived
    from their chains' ends' rows, kept for that (:class:`_EndRows`): on the benchmark's
    random 5000-node platform, 1159 searches instead of 2721.
    """

    def __init__(self, g: _LinkGraph, nodes: np.ndarray) -> None:
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
        self._res_of = np.append(self.e_res, -1).astype(np.int32)  # for :meth:`resources`
        # each edge's place among its head's incoming edges, in the smallest type
        # that holds them (:meth:`predecessors` sums these over runs)
        place = self.e_index - np.searchsorted(self.e_head, self.e_head)
        self._place = place.astype(_rank_dtype(int(place.max(initial=0)) + 1) or np.int64)
        # each node's first incoming edge (every core node has two or more)
        self.e_first = np.searchsorted(self.e_head, np.arange(c))
        self._up_shift = self.e_tail - self.e_head  # from an edge's head to its tail
        self.w_max = float(self.e_weight.max()) if len(keep) else 0.0
        # rows per block of the tie test and the slack (:meth:`predecessors`, :meth:`_slack`)
        self.edge_rows = max(1, _EDGE_ROWS_ELEMENTS // max(1, len(keep)))
        self._csr = None
        self.batch = max(1, _CORE_ELEMENTS // max(1, len(keep) + c)) if c > 1 else g.n
        self._chains: _Chains | None = None
        self._kernel: _Kernel | bool | None = None
        self._kept = _EndRows(self)

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
        (:func:`_certified`).
        """
        k, c = dist.shape
        pred = np.full((k, c), -1, dtype=np.int64)
        # tight edges: those on some lowest-latency path (exact floating-point equality, the
        # sum Dijkstra itself forms); an edge into the start is never a predecessor (only a
        # zero-latency edge, or one too small to change the sum, can be tight there).
        # z = fl(fl(dist[u] + w) - dist[v]) is never negative (Dijkstra relaxed every edge)
        # and is 0 exactly when the edge is tight (a difference of finite doubles is 0 only
        # between equal ones)
        # (by blocks of rows: k x E temporaries of at most _EDGE_ROWS_ELEMENTS entries)
        low = np.full(k, np.inf)
        for lo in range(0, k, self.edge_rows):
            at = slice(lo, min(k, lo + self.edge_rows))
            asked = None if slack is None else slack[at]
            self._predecessors_block(start[at], dist[at], asked, pred[at], low[at])
        return pred if slack is None else (pred, low)

    def _edge_slack(self, dist: np.ndarray) -> np.ndarray:
        """``fl(fl(dist[u] + w) - dist[v])`` for every row and core edge ``u -> v``."""
        z = np.take(dist, self.e_tail, axis=1)  # (much faster than dist[:, e_tail])
        z += self.e_weight
        z -= np.take(dist, self.e_head, axis=1)
        return z

    def _predecessors_block(self, start, dist, slack, pred, low) -> None:
        """:meth:`predecessors` of a block of rows, into ``pred`` and ``low``."""
        c = dist.shape[1]
        z = self._edge_slack(dist)
        tight = z == 0
        tight &= self.e_head[None, :] != start[:, None]
        # every other node has a tight incoming edge: exactly c - 1 of them, no tie
        ties = np.count_nonzero(tight, axis=1) != c - 1
        unique = np.flatnonzero(~ties)
        if len(unique):
            # then each node but the start has exactly one, among its incoming edges (a
            # run: edges are sorted by head): the run's sum of tight edge indices is it
            # (summed as small integers: a temporary of one or two bytes an entry)
            into = _rows_of(~ties)
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
            low[asked] = _least_positive(z[_rows_of(slack & ~ties)])
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
        return np.take(self._res_of, edge)  # (-1 reads the table's last entry, -1)

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
        for lo in range(0, k, _ALONG_ROWS):
            at = slice(lo, min(k, lo + _ALONG_ROWS))
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

    @property
    def chains(self) -> _Chains:
        if self._chains is None:
            self._chains = _Chains(self)
        return self._chains

    def rows(
        self, start: np.ndarray, offset: np.ndarray, ask: np.ndarray, base: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """The rows of searches from core nodes ``start[i]`` (local) whose latency is
        ``offset[i]``: ``(dist, resources, bandwidth, slack)``, ``k x c`` but ``slack``:
        :meth:`search`'s latencies and slack (where ``ask[i]``, else ``inf``), the
        predecessors as global resources (:meth:`resources`) and the bottlenecks counting
        ``base[i]`` (:meth:`bottleneck`; none when ``base`` is None).

        The same rows as searching each start, with fewer searches: a start from latency 0
        at an inner node of a chain (:class:`_Chains`) has its row derived from its
        chain's two ends' rows when that provably gives the search's row (:meth:`_derive`;
        it is searched otherwise), and the rows of chain ends searched from latency 0 are
        kept (:class:`_EndRows`) for later calls.  Ends are searched for a derivation only
        when that does not add searches (at most one per derived row).  When every core
        node is asked for, only the nodes outside chains are searched.
        """
        k, c = len(start), self.c
        dist = np.empty((k, c))
        res = np.empty((k, c), dtype=np.int32)  # as the kept rows and the callers keep them
        bw = None if base is None else np.empty((k, c))
        low = np.full(k, np.inf)
        base_ = np.full(k, np.inf) if base is None else base
        out = (dist, res, bw, low)
        if c < 3:
            self._searched(start, offset, ask, base_, np.arange(k), out, keep=False)
            return out
        chains, kept = self.chains, self._kept
        zero = offset == 0
        slot = np.where(zero, kept.slot[start], -1)
        hit = np.flatnonzero(slot >= 0)
        if len(hit):
            self._from_kept(slot[hit], ask[hit], base_[hit], hit, out)
        todo = np.ones(k, dtype=bool)
        todo[hit] = False
        derive = todo & zero & (chains.at[start] >= 0)
        plain = np.flatnonzero(todo & ~derive)
        # chain ends to search for the derivations: those neither kept nor searched anyway
        own = np.unique(start[plain[zero[plain] & chains.is_end[start[plain]]]])
        keep_own = own[: kept.room()]
        d = start[derive]
        need = np.unique(chains.node[np.concatenate([chains.end_a[d], chains.end_b[d]])])
        need = need[kept.slot[need] < 0]
        extra = np.setdiff1d(need, keep_own)
        if len(extra) > min(len(d), kept.room() - len(keep_own)):
            # searching them would cost more than it saves: derive only from what is there
            there = np.zeros(c, dtype=bool)
            there[kept.slot >= 0] = True
            there[keep_own] = True
            ok = there[chains.node[chains.end_a[d]]] & there[chains.node[chains.end_b[d]]]
            plain = np.union1d(plain, np.flatnonzero(derive)[~ok])
            derive[np.flatnonzero(derive)[~ok]] = False
            extra = extra[:0]
        self._searched(start, offset, ask, base_, plain, out, keep=True, extra=extra)
        d = np.flatnonzero(derive)
        ends = np.concatenate([chains.end_a[start[d]], chains.end_b[start[d]]])
        there = (kept.slot[chains.node[ends]] >= 0).reshape(2, len(d)).all(axis=0)
        failed = d[~there]
        d = d[there]
        if len(d):
            failed = np.concatenate([failed, d[~self._derive(start[d], ask[d], base_[d], d, out)]])
        self._searched(start, offset, ask, base_, failed, out, keep=False)
        return out

    def _searched(self, start, offset, ask, base, rows, out, keep: bool, extra=None) -> None:
        """Search the starts ``rows`` into ``out`` (as :meth:`rows` returns them); with
        ``keep``, keep the rows of chain ends searched from latency 0, and search and keep
        the chain ends ``extra`` too."""
        dist, res, bw, low = out
        nodes, offs, asked = start[rows], offset[rows], ask[rows]
        kept = self._kept if keep else None
        if kept is not None:
            chains = self.chains
            fresh = (offs == 0) & chains.is_end[nodes]
            fresh &= np.cumsum(fresh) <= kept.room() - len(extra)
            nodes = np.concatenate([nodes, extra])
            offs = np.concatenate([offs, np.zeros(len(extra))])
            asked = np.concatenate([asked, np.ones(len(extra), dtype=bool)])
            fresh = np.concatenate([fresh, np.ones(len(extra), dtype=bool)])
        m = len(rows)
        for lo in range(0, len(nodes), self.batch):
            at = np.arange(lo, min(len(nodes), lo + self.batch))
            s, o = nodes[at], offs[at]
            store = np.zeros(len(at), dtype=bool) if kept is None else fresh[at]
            d, edge, sl, b, links = self._found(
                s, o, asked[at] | store, bw is not None or store.any(), store.any()
            )
            if store.any():
                store &= links.max(axis=1) < 1 << 16
            r = self.resources(edge)
            mine = _rows_of(at < m)  # (a slice when whole: no copies)
            i = rows[at[mine]]
            dist[i] = d[mine]
            res[i] = r[mine]
            if bw is not None:
                bw[i] = np.minimum(b[mine], base[i][:, None])
            low[i] = np.where(asked[at[mine]], sl[mine], np.inf)
            if store.any():
                j = _rows_of(store)
                kept.add(s[j], d[j], edge[j], b[j], sl[j], links[j], self.w_max)

    def _found(
        self, start: np.ndarray, offset: np.ndarray, slack: np.ndarray, bw: bool, depth: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """:meth:`search` and :meth:`bottleneck` (from ``inf``) of the starts: ``(dist,
        pred, slack, bandwidth, links)``, the bottlenecks only with ``bw`` or ``depth``,
        the links only with ``depth``.

        Starts from latency 0 at kernel nodes (:class:`_Kernel`) are searched on the
        kernel and their rows verified (:meth:`_kernel_rows`); the others, and those that
        fail the verification, by :meth:`search`.
        """
        k, c = len(start), self.c
        kern = self.kernel
        fast = np.zeros(k, dtype=bool) if kern is None else (offset == 0) & kern.on[start]
        if fast.all():  # (no copies)
            d, edge, sl, b, links, ok = self._kernel_rows(start, slack)
            slow = np.flatnonzero(~ok)
        else:
            d, edge = np.empty((k, c)), np.empty((k, c), dtype=np.int64)
            sl = np.empty(k)
            b = np.empty((k, c)) if bw or depth else None
            links = np.empty((k, c), dtype=np.int32) if depth else None
            f = np.flatnonzero(fast)
            ok = np.zeros(k, dtype=bool)
            if len(f):
                got = self._kernel_rows(start[f], slack[f])
                ok[f] = got[5]
                g = f[got[5]]
                h = _rows_of(got[5])
                d[g], edge[g], sl[g] = got[0][h], got[1][h], got[2][h]
                if b is not None:
                    b[g] = got[3][h]
                if links is not None:
                    links[g] = got[4][h]
            slow = np.flatnonzero(~ok)
        if len(slow):
            s = start[slow]
            d[slow], e, sl[slow] = self.search(s, offset[slow], slack[slow])
            edge[slow] = e
            if depth:
                b[slow], links[slow] = self.bottleneck(s, e, np.full(len(s), np.inf), depth=True)
            elif bw:
                b[slow] = self.bottleneck(s, e, np.full(len(s), np.inf))
        return d, edge, sl, (b if bw or depth else None), (links if depth else None)

    @property
    def kernel(self) -> _Kernel | None:
        """The core with its chains contracted, when that makes the searches smaller (at
        most ``_KERNEL_SHARE`` of the core's nodes); None otherwise."""
        if self._kernel is None:
            chains = self.chains if self.c >= 3 else None
            small = chains is not None and chains.count > 0
            if small:
                inner = int(np.count_nonzero(chains.at >= 0))
                small = self.c - inner <= _KERNEL_SHARE * self.c
            self._kernel = _Kernel(self) if small else False
        return self._kernel or None

    def _kernel_rows(
        self, start: np.ndarray, slack: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Rows of searches from latency 0 at kernel nodes ``start`` (local), found on the
        kernel: ``(dist, pred, slack, bandwidth, links, ok)`` as :meth:`_found` gives
        them, exact where ``ok`` (the other rows are to be searched).

        SciPy's Dijkstra on the kernel (chains contracted to one link each, of their
        latencies' sum: a close but not exact latency) gives a shortest-path tree of the
        kernel; each chain's inner nodes hang off its end nearer by those latencies (all
        of them off one end when the other end is reached through the chain).  Then the
        latencies are summed along that tree from the start, link after link
        (:meth:`_sums`, with the bottlenecks; the links by pointer doubling on the kernel's
        tree, :func:`_counted`), and the row is
        taken when no core link ``u -> v`` is *negative*, ``fl(dist[u] + w) < dist[v]``,
        and none but the tree's is tight (:meth:`_checked`): then the tie rule has no tie
        to break and its predecessors are the tree's.

        Why that is exact: let ``d`` be the search's latencies (from the start, the least
        over paths of their sums formed link after link; a sum never decreases when a
        link is added).  The tree's sums are sums along paths, so ``d <= dist``; walking
        any route of the search link after link, no negative link means ``dist <= d``
        node after node (``dist[v] <= fl(dist[u] + w) <= fl(d[u] + w) = d[v]``).  Same
        latencies, hence the same tight links (the tree's alone), predecessors and slack
        as the search.  O(k (E_kernel + N_kernel log N_kernel)) for the Dijkstra plus
        O(k E) vectorised (the links' pointer doubling O(k c log depth)).
        """
        from scipy.sparse.csgraph import dijkstra

        kern = self.kernel
        k, c, nk = len(start), self.c, kern.nk
        dk, kp = dijkstra(
            kern.csr, directed=True, indices=kern.kid[start], return_predecessors=True
        )
        root = kp < 0  # the start (the kernel is connected)
        kp[root] = 0
        j = kern.link_of(kp, np.arange(nk))  # (small integers: fresh memory costs)
        del kp
        j[root] = kern.none  # a link of its own: none, from nowhere, nothing on it
        pred = np.empty((k, c), dtype=np.int32)
        pred[:, kern.nodes] = kern.edge[j]
        through = kern.chain[j]  # the chain each kernel node is reached by (-1: none)
        # each kernel node's links from the start: pointer doubling on the kernel's tree
        # (a chain counts its links)
        up = kern.tail[j]
        up[root] = np.nonzero(root)[1]
        depth = _counted(up, kern.links[j])
        del j, up
        # inner nodes: off their chain's end nearer by the kernel's latencies, or all off
        # one end when the other is reached through the chain (a tree either way)
        from_a = dk[:, kern.ia] + kern.cum_a <= dk[:, kern.ib] + kern.cum_b
        from_a |= through[:, kern.ib] == kern.q
        from_a &= through[:, kern.ia] != kern.q
        del through, dk
        pred[:, kern.inner] = np.where(from_a, kern.edge_a, kern.edge_b)
        links = np.empty((k, c), dtype=np.int32)
        links[:, kern.nodes] = depth
        links[:, kern.inner] = np.where(
            from_a, depth[:, kern.ia] + kern.len_a, depth[:, kern.ib] + kern.len_b
        )
        del from_a, depth
        dist, bw = self._sums(pred, links)
        ok, sl = self._checked(dist, slack)
        return dist, pred, sl, bw, links, ok

    def _checked(self, dist: np.ndarray, slack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which rows of latencies summed along trees (:meth:`_kernel_rows`) are a
        search's without ties: ``(ok, slack)``, ``ok[i]`` when exactly ``c - 1`` links
        have ``fl(dist[u] + w) - dist[v] <= 0`` (the trees' own, tight: then none is
        negative and no other is tight), and the slack of the asked rows as
        :meth:`predecessors` forms it (``inf`` elsewhere).  A tight link into the start
        (only with links of latency 0) rejects a row the tie rule would take: it is then
        searched.

        Both from the bit patterns less 1, as :func:`_least_positive`: ``+0.0`` becomes
        the largest pattern and a negative double's (its sign bit set) stays above every
        positive one's, so one count and one minimum tell both.  By blocks of rows."""
        k, c = dist.shape
        ok = np.empty(k, dtype=bool)
        low = np.full(k, np.inf)
        top = np.uint64((1 << 63) - 1)  # +0.0 less 1 wraps above it, negatives are at it or above
        for lo in range(0, k, self.edge_rows):
            at = slice(lo, min(k, lo + self.edge_rows))
            u = self._edge_slack(dist[at]).view(np.uint64)
            u -= np.uint64(1)
            ok[at] = np.count_nonzero(u >= top, axis=1) == c - 1
            asked = slack[at] & ok[at]
            if asked.any():  # (ok rows have positive entries: c - 1 links of 2c or more)
                least = u[asked].min(axis=1)
                least += np.uint64(1)
                low[at][asked] = least.view(np.float64)
        return ok, low

    def _sums(self, pred: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latencies and bottlenecks along the trees of the predecessor rows ``pred``
        (core edges, -1 at the start) from 0 and ``inf`` at the start, the latencies
        summed link after link; ``depth`` the links from the start.
        Level by level (:meth:`_level_sums`), both at once."""
        k, c = pred.shape
        out = np.empty((k, c))
        bw = np.empty((k, c))
        flat_all, bw_all = out.reshape(-1), bw.reshape(-1)
        kind = np.uint16 if c <= 1 << 16 else np.int64  # (depth < c: a radix sort)
        for lo in range(0, k, _ALONG_ROWS):
            m = min(k, lo + _ALONG_ROWS) - lo
            self._level_sums(
                flat_all[lo * c : (lo + m) * c],
                np.zeros(m),
                pred[lo : lo + m].reshape(-1),
                depth[lo : lo + m].reshape(-1).astype(kind),
                bw_all[lo * c : (lo + m) * c],
            )
        return out, bw

    def _level_sums(
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

    def _from_kept(self, slot, ask, base, rows, out) -> None:
        """Kept rows ``slot`` into the rows ``rows`` of ``out``."""
        dist, res, bw, low = out
        kept = self._kept
        dist[rows] = self._along_kept(slot, np.zeros(len(slot)))  # the search's sums
        res[rows] = np.take(self._res_of, kept.edge[slot])
        if bw is not None:
            bw[rows] = np.minimum(kept.bandwidths(slot), base[:, None])
        low[rows] = np.where(ask, kept.slack[slot], np.inf)

    def _derive(self, start, ask, base, rows, out) -> np.ndarray:
        """Rows from latency 0 at inner chain nodes ``start`` (local; their chains' ends
        kept) into the rows ``rows`` of ``out``, derived from the ends' rows; returns which
        rows were derived (the others are left to a search).

        From ``s``, inside its chain ``a .. s .. b``, every route either stays on the
        chain (a *direct* route) or leaves it by ``a`` or by ``b``: the latency to ``t``
        is the least of three candidates, the direct sum along the chain, and the sums
        along ``a``'s (``b``'s) tree from the chain's latency to ``a`` (``b``), as a search
        from ``a`` with that starting latency forms them.  The row is derived when
        (1) both ends' rows are certified for those starting latencies (:func:`_certified`:
        a search from them has the same predecessors, without ties), (2) at every node
        one candidate is strictly the least, and (3) every core link's latency is at
        least ``eps`` times every latency in play (adding a link never leaves a sum
        unchanged).  Then every link into ``t`` other than the winning candidate's last
        link is strictly slack: a link of the same candidate's tree by (1), one from
        another candidate's node by (2) (its sum through the link is at least that
        candidate's latency at ``t``), a link into an end or back towards ``s`` by (3).
        So the search from ``s`` has no tie and exactly these predecessors and latencies.
        """
        chains, kept = self.chains, self._kept
        dist, res, bw, low = out
        k, c = len(start), self.c
        pos = chains.at[start]
        pa, pb = chains.end_a[start], chains.end_b[start]
        left, right = pos - pa, pb - pos  # links to each end
        # direct candidates, summed from s link after link (cumsum adds in order)
        steps = np.arange(int(max(left.max(), right.max())))
        # left: the t-th node towards a is at pos - 1 - t, reached by back[pos - 1 - t]
        pl = pos[:, None] - 1 - steps
        vl = steps < left[:, None]
        pl = np.where(vl, pl, pos[:, None])
        pr = pos[:, None] + 1 + steps
        vr = steps < right[:, None]
        pr = np.where(vr, pr, pos[:, None])
        el = np.where(vl, chains.back[np.where(vl, pl, 0)], -1)
        er = np.where(vr, chains.ahead[np.where(vr, pr - 1, 0)], -1)
        wl = np.where(vl, self.e_weight[el], 0.0).cumsum(axis=1)
        wr = np.where(vr, self.e_weight[er], 0.0).cumsum(axis=1)
        bl = np.minimum.accumulate(np.where(vl, self.e_bw[el], np.inf), axis=1)
        br = np.minimum.accumulate(np.where(vr, self.e_bw[er], np.inf), axis=1)
        ks = np.arange(k)
        alpha, beta = wl[ks, left - 1], wr[ks, right - 1]
        na, nb = chains.node[pa], chains.node[pb]
        sa, sb = kept.slot[na], kept.slot[nb]
        # the ends' trees from the chains' latencies, level by level
        va, vb = self._along_kept(sa, alpha), self._along_kept(sb, beta)
        top = np.maximum(va.max(axis=1), vb.max(axis=1))
        ok = _certified(kept.slack[sa], kept.top[sa], alpha, c)
        ok &= _certified(kept.slack[sb], kept.top[sb], beta, c)
        w_min = float(self.e_weight.min())
        ok &= (w_min > 0) & (w_min >= np.finfo(float).eps * top)
        va[ks, na] = np.inf  # the end itself is a direct candidate
        vb[ks, nb] = np.inf
        # off the chain, the two ends' candidates; on it, the direct one too: it wins
        # when strictly least, else the ends' least must be strict
        tie = va == vb
        from_a = va < vb
        best = np.minimum(va, vb, out=va)  # (va is not read again)
        del va
        kk = ks[:, None]
        nl, nr = chains.node[pl], chains.node[pr]
        wins_l, wins_r = vl & (wl < best[kk, nl]), vr & (wr < best[kk, nr])
        ok &= ~(vl & ~wins_l & ((wl == best[kk, nl]) | tie[kk, nl])).any(axis=1)
        ok &= ~(vr & ~wins_r & ((wr == best[kk, nr]) | tie[kk, nr])).any(axis=1)
        tie[kk, nl] = False
        tie[kk, nr] = False
        tie[ks, start] = False
        ok &= ~tie.any(axis=1)
        best[kk, nl] = np.where(wins_l, wl, best[kk, nl])
        best[kk, nr] = np.where(wins_r, wr, best[kk, nr])
        best[ks, start] = 0.0
        r = kept.edge[sb]  # core edges, the start's kept.none
        np.copyto(r, kept.edge[sa], where=from_a)
        r[kk, nl] = np.where(wins_l, el, r[kk, nl])
        r[kk, nr] = np.where(wins_r, er, r[kk, nr])
        r[ks, start] = kept.none
        # every row is written; those not derived are searched (written again) after
        dist[rows] = best
        res[rows] = np.take(self._res_of, r)  # (kept.none reads the table's last entry, -1)
        if bw is not None:
            b = kept.bandwidths(sb, br[ks, right - 1], sa, bl[ks, left - 1], from_a)
            b[kk, nl] = np.where(wins_l, bl, b[kk, nl])
            b[kk, nr] = np.where(wins_r, br, b[kk, nr])
            b[ks, start] = np.inf
            bw[rows] = np.minimum(b, base[:, None])
        asked = np.flatnonzero(ok & ask)
        if len(asked):  # the slack as :meth:`predecessors` forms it (no ties here)
            low[rows[asked]] = self._slack(best[_rows_of(ok & ask)])
        return ok

    def _slack(self, dist: np.ndarray) -> np.ndarray:
        """Each row's least non-zero ``fl(fl(dist[u] + w) - dist[v])`` over the core's
        edges ``u -> v`` (rows of latencies without ties, as :meth:`predecessors` forms
        the slack), by blocks of rows."""
        low = np.empty(len(dist))
        for lo in range(0, len(dist), self.edge_rows):
            at = slice(lo, lo + self.edge_rows)
            low[at] = _least_positive(self._edge_slack(dist[at]))
        return low

    def _along_kept(self, slot: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """Latencies along kept rows' trees (``k x c``), from latency ``offset[i]`` at the
        start of row ``slot[i]``, summed link after link: level by level, every row of a
        block at once (each node's entry is its parent's plus the link's latency,
        :meth:`_level_sums`).
        """
        kept = self._kept
        k, c = len(slot), self.c
        out = np.empty((k, c))
        flat_all = out.reshape(-1)
        for lo in range(0, k, _ALONG_ROWS):
            part = slot[lo : lo + _ALONG_ROWS]
            m = len(part)
            self._level_sums(
                flat_all[lo * c : (lo + m) * c],
                offset[lo : lo + m],
                kept.edge[part].reshape(-1),
                kept.depth[part].reshape(-1),
            )
        return out


class _Chains:
    """The core's chains: maximal runs of *inner* nodes (two links, to two distinct
    neighbours) between two distinct *ends* (other core nodes).

    A route from an inner node either stays on its chain or leaves it through one of the
    ends, so its row can be derived from the ends' rows (:meth:`_Core.rows`).  Chains are
    stored end to end in flat arrays, each from its end ``a`` to its end ``b``: ``node[p]``
    (core-local) at position ``p``; ``ahead[p]`` is the core edge from ``node[p]`` to
    ``node[p + 1]``, ``back[p]`` the one from ``node[p + 1]`` to ``node[p]`` (-1 at a
    chain's last position).  For an inner node ``x``: ``at[x]`` is its position (-1 for any
    other node, and for runs of inner nodes that close a cycle or whose two ends are one
    node: those are searched), ``end_a[x]`` / ``end_b[x]`` the positions of its chain's ends.
    ``is_end[x]``: ``x`` is the end of a chain.  O(c) to build.
    """

    def __init__(self, core: _Core) -> None:
        c = core.c
        tail, head = core.e_tail, core.e_head
        ptr = np.zeros(c + 1, dtype=np.int64)
        np.cumsum(np.bincount(head, minlength=c), out=ptr[1:])
        inner = np.diff(ptr) == 2
        two = np.flatnonzero(inner)
        # the two incoming edges of a node are sorted by tail: equal tails are parallel links
        inner[two[tail[ptr[two]] == tail[ptr[two] + 1]]] = False
        # an inner node's two neighbours
        first = np.zeros(c, dtype=np.int64)
        second = np.zeros(c, dtype=np.int64)
        first[two], second[two] = tail[ptr[two]], tail[ptr[two] + 1]
        first, second = first.tolist(), second.tolist()
        is_inner = inner.tolist()
        seen = [False] * c
        chains: list[list[int]] = []
        for x in np.flatnonzero(inner).tolist():
            if seen[x]:
                continue
            seen[x] = True
            sides: list[tuple[list[int], int]] = []
            for prev, cur in ((x, first[x]), (x, second[x])):
                run: list[int] = []
                while is_inner[cur] and cur != x:
                    seen[cur] = True
                    run.append(cur)
                    prev, cur = cur, (second[cur] if first[cur] == prev else first[cur])
                sides.append((run, cur))
            (run_a, a), (run_b, b) = sides
            if a in (x, b):  # a cycle of inner nodes, or a loop from one node
                continue
            chains.append([a, *reversed(run_a), x, *run_b, b])
        sizes = np.array([len(ch) for ch in chains], dtype=np.int64)
        self.count = len(chains)
        self.node = np.array([x for ch in chains for x in ch], dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        last = starts + sizes - 1
        self.ahead = np.full(len(self.node), -1, dtype=np.int64)
        self.back = np.full(len(self.node), -1, dtype=np.int64)
        mid = np.ones(len(self.node), dtype=bool)
        mid[last] = False
        p = np.flatnonzero(mid)
        key = head * c + tail  # sorted: edges by head, then tail
        self.ahead[p] = np.searchsorted(key, self.node[p + 1] * c + self.node[p])
        self.back[p] = np.searchsorted(key, self.node[p] * c + self.node[p + 1])
        self.at = np.full(c, -1, dtype=np.int64)
        self.end_a = np.full(c, -1, dtype=np.int64)
        self.end_b = np.full(c, -1, dtype=np.int64)
        chain = np.repeat(np.arange(self.count), sizes)
        inside = np.ones(len(self.node), dtype=bool)
        inside[starts] = False
        inside[last] = False
        q = np.flatnonzero(inside)
        self.at[self.node[q]] = q
        self.end_a[self.node[q]] = starts[chain[q]]
        self.end_b[self.node[q]] = last[chain[q]]
        self.is_end = np.zeros(c, dtype=bool)
        self.is_end[self.node[starts]] = True
        self.is_end[self.node[last]] = True


class _Kernel:
    """The core with its chains (:class:`_Chains`) contracted: the *kernel nodes* (every
    core node not inside a chain) and, between them, the core's links and one link per
    chain and direction, of the chain's latencies' sum (the least of parallel ones).

    Searches on it are cheaper (on the random 5000-node platform 1159 nodes instead of
    2721) but their latencies are not the sums formed link after link:
    :meth:`_Core._kernel_rows` only takes their tree, and checks it.

    ``on[x]``: core node ``x`` is a kernel node, ``kid[x]`` its kernel index (``nodes``
    the inverse); ``csr`` the kernel's links; ``key`` the sorted ``tail * nk + head`` of
    its links (:meth:`link_of`).  Per kernel link, and at index ``none`` for the start:
    its ``tail``, its last core link ``edge`` (into its head), its ``chain`` (-1 for a
    core link) and its count of core ``links``.  Per inner node ``inner[i]``
    (core-local): its chain ``q``, its ends' kernel indices ``ia`` and ``ib``, the
    chain's latencies from them ``cum_a`` and ``cum_b`` (plain sums), its links to them
    ``len_a`` and ``len_b``, and its predecessor links from either end, ``edge_a`` and
    ``edge_b``.  O(c + E) to build, and a table of ``nk**2`` small integers.
    """

    def __init__(self, core: _Core) -> None:
        from scipy.sparse import csr_array

        ch = core.chains
        on = ch.at < 0
        nodes = np.flatnonzero(on)
        nk = self.nk = len(nodes)
        kid = np.full(core.c, -1, dtype=np.int64)
        kid[nodes] = np.arange(nk)
        self.on, self.kid, self.nodes = on, kid, nodes
        last = np.flatnonzero(ch.ahead < 0)  # each chain's last position
        first = np.concatenate(([0], last[:-1] + 1))
        w = np.where(ch.ahead >= 0, core.e_weight[np.maximum(ch.ahead, 0)], 0.0)
        before = np.concatenate(([0.0], np.cumsum(w)[:-1]))  # sums up to each position
        chain = np.repeat(np.arange(ch.count), last - first + 1)
        cum_a = before - before[first][chain]  # from the chain's end a
        total = cum_a[last]
        direct = np.flatnonzero(on[core.e_tail] & on[core.e_head])
        a, b = kid[ch.node[first]], kid[ch.node[last]]
        tail = np.concatenate([kid[core.e_tail[direct]], a, b])
        head = np.concatenate([kid[core.e_head[direct]], b, a])
        weight = np.concatenate([core.e_weight[direct], total, total])
        edge = np.concatenate([direct, ch.ahead[last - 1], ch.back[first]])
        which = np.concatenate([np.full(len(direct), -1), np.arange(ch.count), np.arange(ch.count)])
        # one link per pair of kernel nodes, the least (SciPy would add parallel ones)
        order = np.lexsort((weight, head, tail))
        key = tail[order] * nk + head[order]
        keep = order[np.concatenate(([True], key[1:] != key[:-1]))]
        self.key = tail[keep] * nk + head[keep]
        self.csr = csr_array((weight[keep], (tail[keep], head[keep])), shape=(nk, nk))
        # per kernel link, and one more (``none``: the start's) at the end: its last core
        # link and its chain
        self.none = len(keep)
        self.edge = np.append(edge[keep], -1).astype(np.int32)
        self.chain = np.append(which[keep], -1).astype(np.int32)
        self.tail = np.append(tail[keep], -1).astype(np.int32)
        sizes = last - first  # each chain's links
        count = np.concatenate([np.ones(len(direct), dtype=np.int64), sizes, sizes])
        self.links = np.append(count[keep], 0).astype(np.int32)
        # the link of each pair: a table when small enough, else a search in ``key``
        self._table = None
        if nk * nk <= _KERNEL_TABLE:
            kind = np.int16 if len(keep) < (1 << 15) - 1 else np.int32  # (and ``none``)
            self._table = np.full((nk, nk), -1, dtype=kind)
            self._table[tail[keep], head[keep]] = np.arange(len(keep))
        inner = np.flatnonzero(ch.at[ch.node] >= 0)  # inner positions
        self.inner = ch.node[inner]
        self.q = chain[inner].astype(np.int32)
        self.ia, self.ib = a[self.q], b[self.q]
        self.cum_a = cum_a[inner]
        self.cum_b = total[self.q] - self.cum_a
        self.edge_a = ch.ahead[inner - 1]  # from the node towards a
        self.edge_b = ch.back[inner]  # from the node towards b
        self.len_a = (inner - first[self.q]).astype(np.int32)  # links to each end
        self.len_b = (last[self.q] - inner).astype(np.int32)

    def link_of(self, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
        """The kernel link of each pair ``(tail, head)`` (kernel indices; a link must
        join them), broadcast."""
        if self._table is not None:
            return self._table[tail, head]
        return np.searchsorted(self.key, tail.astype(np.int64) * self.nk + head)


def _rank_dtype(n: int) -> type | None:
    """The smallest unsigned integer type that holds ``n`` ranks (None past 16 bits)."""
    return np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else None


class _EndRows:
    """Core rows searched from latency 0 at chain ends, kept to derive inner nodes' rows
    from (:meth:`_Core.rows`), at most ``_END_ELEMENTS`` entries.

    Per node its slot (-1 if none); per slot the predecessors ``edge`` (core edges, 16-bit
    when they fit, ``none``, the count of core edges, at the start), the ``depth`` of each
    node in the row's tree (links from the start), the bottlenecks (from ``inf`` at the
    start) as ranks in the table ``bws`` of the core's link bandwidths
    (:meth:`bandwidths`), and the slack and top (as :func:`_certified` takes them).  The
    latencies are not kept: summed again along the tree from 0
    (:meth:`_Core._along_kept`) they are the search's, bit for bit (each predecessor link
    is tight: ``fl(dist[parent] + latency) == dist[node]``).

    Compact on purpose: about 5 bytes per entry (7 with 32-bit edges or 16-bit ranks, 20
    at most), so the kept rows of the random 5000-node platform touch 14 MB instead of
    104, and every page a process touches for the first time costs a page fault (a
    quarter to half of that case's CPU time is the kernel's).
    """

    def __init__(self, core: _Core) -> None:
        c = self.c = core.c
        self.core = core
        self.slot = np.full(c, -1, dtype=np.int64)
        self.count = 0
        self.limit = max(0, _END_ELEMENTS // max(1, c))
        self.bws = np.unique(np.append(core.e_bw, np.inf))
        rank = _rank_dtype(len(self.bws))
        self.none = len(core.e_tail)  # the start's edge: core.resources reads it as -1
        self.edge = np.empty((0, c), dtype=np.uint16 if self.none < 1 << 16 else np.int32)
        self.depth = np.empty((0, c), dtype=np.uint16)
        self.bw = np.empty((0, c), dtype=rank if rank is not None else float)
        self.slack = np.empty(0)
        self.top = np.empty(0)

    def room(self) -> int:
        return self.limit - self.count

    def bandwidths(
        self,
        slot: np.ndarray,
        cap: np.ndarray | None = None,
        other: np.ndarray | None = None,
        other_cap: np.ndarray | None = None,
        where: np.ndarray | None = None,
    ) -> np.ndarray:
        """The bottleneck rows of ``slot`` (a new ``k x c`` array); with ``cap``, row
        ``i`` no wider than ``cap[i]``; with ``other`` too, the rows of ``other`` (no wider
        than ``other_cap``) where ``where``.  On ranks when kept as ranks (exact: the
        ranks are in the bandwidths' order, and every cap is a link's bandwidth or inf)."""
        ranks = self.bw.dtype != float
        got = self.bw[slot]
        if cap is not None:
            np.minimum(got, self._ranked(cap) if ranks else cap[:, None], out=got)
        if other is not None:
            alt = self.bw[other]
            np.minimum(alt, self._ranked(other_cap) if ranks else other_cap[:, None], out=alt)
            np.copyto(got, alt, where=where)
        return np.take(self.bws, got) if ranks else got

    def _ranked(self, bw: np.ndarray) -> np.ndarray:
        """The ranks of bandwidths (links' or inf), a column."""
        return np.searchsorted(self.bws, bw).astype(self.bw.dtype)[:, None]

    def add(self, nodes, dist, edge, bw, slack, depth, w_max) -> None:
        """Keep the rows of ``nodes`` (``edge``: predecessor core edges, -1 at the
        start; ``depth``: each
        node's links from the start, below 65536; ``w_max`` the core's largest link
        latency)."""
        first, need = self.count, self.count + len(nodes)
        if need > len(self.edge):  # grow geometrically
            size = min(self.limit, max(need, 2 * len(self.edge), 64))
            for name in ("edge", "depth", "bw", "slack", "top"):
                setattr(self, name, _grown(getattr(self, name), size, first))
        at = slice(first, need)
        self.edge[at] = np.where(edge < 0, self.none, edge)
        self.depth[at] = depth
        if self.bw.dtype == float:
            self.bw[at] = bw
        else:  # exact: every bottleneck is one of the links' bandwidths, or inf
            self.bw[at] = np.searchsorted(self.bws, bw)
        self.slack[at] = slack
        self.top[at] = dist.max(axis=1) + w_max
        self.slot[nodes] = np.arange(first, need)
        self.count = need


class _Forest:
    """The core and the trees hanging off it (see :class:`_LinkGraph`).

    For every node outside the core: ``parent`` (the next node towards the core), ``up``
    (the resource from it to its parent; ``up ^ 1`` is the way down), ``depth`` (links to
    the core) and ``attach`` (its tree's core node); core nodes have depth 0 and are their
    own attachment.  Each tree's nodes are numbered in preorder (``first``): the subtree of
    ``x`` is ``first[x] <= first[y] < first[x] + size[x]``.
    """

    def __init__(self, g: _LinkGraph) -> None:
        from collections import deque

        n = g.n
        self.n = n
        order = np.argsort(g.tail, kind="stable")
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(g.tail, minlength=n), out=starts[1:])
        out_edges = order.tolist()
        starts_l = starts.tolist()
        head = g.head.tolist()
        degree = np.diff(starts).tolist()
        removed = [False] * n
        parent = [-1] * n
        up = [-1] * n
        # peel nodes of degree one, first in first out: on a tree the last one is a centre
        leaves = deque(x for x in range(n) if degree[x] <= 1)
        peeled: list[int] = []
        while leaves:
            x = leaves.popleft()
            removed[x] = True
            peeled.append(x)
            for e in out_edges[starts_l[x] : starts_l[x + 1]]:
                y = head[e]
                if not removed[y]:
                    parent[x], up[x] = y, e
                    degree[y] -= 1
                    if degree[y] == 1:
                        leaves.append(y)
        if len(peeled) == n:  # a tree: its last node is the core
            root = peeled.pop()
            removed[root] = False
        core = np.flatnonzero(~np.array(removed, dtype=bool))
        self.core = _Core(g, core)
        self.parent = np.array(parent, dtype=np.int64)
        self.up = np.array(up, dtype=np.int64)
        depth = [0] * n
        attach = list(range(n))
        size = [1] * n
        for x in peeled:  # children before parents
            size[parent[x]] += size[x]
        first = [0] * n
        cursor = [0] * n
        at = 0
        for a in core.tolist():
            first[a] = at
            cursor[a] = at + 1
            at += size[a]
        for x in reversed(peeled):  # parents before children
            p = parent[x]
            depth[x] = depth[p] + 1
            attach[x] = attach[p]
            first[x] = cursor[p]
            cursor[p] += size[x]
            cursor[x] = first[x] + 1
        self.depth = np.array(depth, dtype=np.int64)
        self.attach = np.array(attach, dtype=np.int64)
        self.first = np.array(first, dtype=np.int64)
        self.last = self.first + np.array(size, dtype=np.int64)  # one past the subtree
        self.latency = np.where(self.up >= 0, g.weight[np.maximum(self.up, 0)], 0.0)
        self.bw = np.where(self.up >= 0, g.link_bandwidth[np.maximum(self.up, 0) // 2], np.inf)
        pendant = np.flatnonzero(self.depth > 0)
        by_depth = pendant[np.argsort(self.depth[pendant], kind="stable")]
        bounds = np.flatnonzero(np.diff(self.depth[by_depth])) + 1
        self.levels = np.split(by_depth, bounds) if len(by_depth) else []
        # each level sorted by parent
        self.by_parent = [x[np.argsort(self.parent[x], kind="stable")] for x in self.levels]
        self.batch = max(1, _TREE_ELEMENTS // max(1, n))
        self.graph = g
        self.hangs = np.zeros(n, dtype=bool)  # core nodes that trees hang off
        # each resource's tail in core-local order and its latency, one more entry at the
        # end that a -1 (a row's start) reads harmlessly (:meth:`_along_runs`)
        self.tail_local = np.append(self.core.local[g.tail], 0)
        self.weight_end = np.append(g.weight, 0.0)
        self.hangs[self.attach[pendant]] = True
        self._paths: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def heavy_paths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The trees' heavy-path decomposition, made once: ``(pos, head, up_at)``.

        Each node's *heavy* child is its child with the largest subtree (ties: the lowest
        index); a heavy path runs from its ``head`` (a core node or a light child) down
        through heavy children, on consecutive positions ``pos``, top first; ``up_at[i]``
        is the link up from the node at position ``i`` (-1 for a core node).  A climb
        crosses O(log N) heavy paths, each a run of positions.  O(N) Python steps.
        """
        if self._paths is None:
            n = self.n
            parent = self.parent.tolist()
            size = (self.last - self.first).tolist()
            heavy, best = [-1] * n, [0] * n
            for x in range(n):
                p = parent[x]
                if p >= 0 and size[x] > best[p]:
                    best[p], heavy[p] = size[x], x
            pos, head = [0] * n, [0] * n
            at = 0
            for h in range(n):
                if parent[h] >= 0 and heavy[parent[h]] == h:
                    continue  # not a head: placed with its path
                x = h
                while x >= 0:
                    pos[x], head[x] = at, h
                    at += 1
                    x = heavy[x]
            pos_a = np.array(pos, dtype=np.int64)
            up_at = np.empty(n, dtype=np.int64)
            up_at[pos_a] = self.up
            self._paths = (pos_a, np.array(head, dtype=np.int64), up_at)
        return self._paths

    def tree_routes(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of the pairs ``(u[i], v[i])`` of one tree (a core of one node), as
        ``(resources, offsets)`` (see :meth:`Routes.pairs`): up from ``u`` to the lowest
        common ancestor ``w``, then down to ``v``, the reverse of ``v``'s climb to ``w``.

        Both climbs are runs of heavy-path positions (:meth:`heavy_paths`): all pairs find
        ``w`` and cut their climbs into runs at once, O(log N) numpy steps, then the runs
        are copied in chunks.  O(total route length + P log N) for P pairs.
        """
        pos, head, up_at = self.heavy_paths()
        parent, depth = self.parent, self.depth
        a, b = u.copy(), v.copy()
        act = np.flatnonzero(head[a] != head[b])
        while len(act):  # the pair's lowest common ancestor: the deeper head moves up
            ha, hb = head[a[act]], head[b[act]]
            lift = depth[ha] >= depth[hb]
            a[act[lift]] = parent[ha[lift]]
            b[act[~lift]] = parent[hb[~lift]]
            act = act[head[a[act]] != head[b[act]]]
        w = np.where(depth[a] <= depth[b], a, b)
        n_up, n_down = depth[u] - depth[w], depth[v] - depth[w]
        offsets = np.zeros(len(u) + 1, dtype=np.int64)
        np.cumsum(n_up + n_down, out=offsets[1:])
        resources = np.empty(offsets[-1], dtype=np.int64)
        if not len(resources):
            return resources, offsets
        # runs of positions: where each goes, its first position, its length and its
        # direction; the climb's in order from the start of u's route, the descent's (v's
        # climb, reversed and flipped down) from the end of the route back
        out, first, length, down = [], [], [], []
        for x, is_down in ((u, False), (v, True)):
            done = np.zeros(len(u), dtype=np.int64)
            idx = np.flatnonzero(x != w)
            cur = x[idx]
            while len(idx):
                h = head[cur]
                whole = h != head[w[idx]]  # the run goes up to its path's head, and on
                top = np.where(whole, pos[h], pos[w[idx]] + 1)
                size = pos[cur] - top + 1
                done[idx] += size
                if is_down:
                    out.append(offsets[idx + 1] - done[idx])
                    first.append(top)
                else:
                    out.append(offsets[idx] + done[idx] - size)
                    first.append(pos[cur])
                length.append(size)
                down.append(np.full(len(idx), is_down))
                keep = np.flatnonzero(whole & (parent[h] != w[idx]))  # more to climb
                idx, cur = idx[keep], parent[h[keep]]
        out_a, first_a, length_a, down_a = (np.concatenate(x) for x in (out, first, length, down))
        step, flip = np.where(down_a, 1, -1), down_a.astype(np.int64)
        ends = np.cumsum(length_a)
        lo = 0
        while lo < len(ends):  # chunks of about _RUN_CHUNK links: bounded temporaries
            base = int(ends[lo] - length_a[lo])
            hi = max(lo + 1, int(np.searchsorted(ends, base + _RUN_CHUNK, "right")))
            run = np.repeat(np.arange(lo, hi), length_a[lo:hi])
            k = np.arange(len(run)) - (ends[run] - length_a[run] - base)
            resources[out_a[run] + k] = up_at[first_a[run] + step[run] * k] ^ flip[run]
            lo = hi
        return resources, offsets

    def climb(self, sources: np.ndarray) -> np.ndarray:
        """Latency from each source up to its attachment, summed from the source link
        after link (0 for a core node)."""
        lat = np.zeros(len(sources))
        cur = sources.copy()
        active = np.flatnonzero(self.depth[cur] > 0)
        while len(active):
            x = cur[active]
            lat[active] = lat[active] + self.latency[x]
            cur[active] = self.parent[x]
            active = active[self.depth[cur[active]] > 0]
        return lat

    def core_rows(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Core predecessor rows (global resources, -1 at the start) of the routes from
        ``sources``: ``(rows, row_of_source, attachments)``, ``rows[j]`` being the row of
        ``attachments[j]`` (a core node) when ``j`` is below ``len(attachments)``.

        A source in a tree enters the core at its attachment with its climb's latency;
        it shares its attachment's row (searched from latency 0) when the slack of that
        row certifies that the climb's latency changes none of its choices
        (:func:`_certified`), and is searched on its own otherwise.
        """
        core = self.core
        attach = self.attach[sources]
        heads, inv = np.unique(attach, return_inverse=True)
        in_tree = self.depth[sources] > 0
        ask = np.zeros(len(heads), dtype=bool)
        ask[inv[in_tree]] = True
        start = core.local[heads]
        rows = np.empty((len(heads), core.c), dtype=np.int32)
        low = np.empty(len(heads))
        top = np.empty(len(heads))
        zero = np.zeros(len(heads))
        step = max(1, _TREE_ELEMENTS // core.c)
        for lo in range(0, len(heads), step):
            at = slice(lo, min(len(heads), lo + step))
            dist, rows[at], _, low[at] = core.rows(start[at], zero[at], ask[at], None)
            top[at] = dist.max(axis=1)
        row_of = inv.copy()
        offset = self.climb(sources)
        own = np.flatnonzero(in_tree & ~_certified(low[inv], top[inv] + core.w_max, offset, core.c))
        if len(own):  # a near tie: search from the source's own starting latency
            extra = np.empty((len(own), core.c), dtype=np.int32)
            for lo in range(0, len(own), step):
                at = own[lo : lo + step]
                none = np.zeros(len(at), dtype=bool)
                extra[lo : lo + len(at)] = core.rows(
                    core.local[attach[at]], offset[at], none, None
                )[1]
            row_of[own] = len(heads) + np.arange(len(own))
            rows = np.concatenate([rows, extra])
        return rows, row_of, heads

    def rows(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Latency, predecessor-resource and bottleneck rows of ``sources`` (see
        :meth:`_LinkGraph.solve`).

        Sources on the core go first, each with its own search; a source in a tree then
        shares its attachment's core predecessors and bottlenecks when that row's slack
        certifies them (:func:`_certified`), its latencies summed along them from its
        climb's latency, and is searched on its own otherwise.
        """
        k, n = len(sources), self.n
        lat = np.empty((k, n))
        pred = np.empty((k, n), dtype=np.int32)
        bw = np.empty((k, n))
        for at, (lt, pt, bt, _) in self.batches(sources):
            for out, t in zip((lat, pred, bw), (lt, pt, bt), strict=True):
                _transpose_into(out, t, at)
        return lat, pred, bw

    def heads(self, sources: np.ndarray) -> _Heads:
        """An empty :class:`_Heads` for :meth:`batches` of ``sources``, with room for the
        rows it will keep (the core sources that trees hang off)."""
        hang = np.count_nonzero((self.depth[sources] == 0) & self.hangs[sources])
        return _Heads(self.n, int(hang), self.core.c)

    def batches(
        self, sources: np.ndarray, preds: bool = True, heads: _Heads | None = None
    ) -> Iterator[tuple[np.ndarray, tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]]]:
        """The rows of ``sources`` batch after batch, node-major: ``(at, (lt, pt, bt,
        core))`` where ``lt[x, i]`` is the latency from ``sources[at[i]]`` to ``x`` and
        ``core[i]`` its core predecessor row (as :meth:`_rows_t`; ``pt`` is None unless
        ``preds``), in the order :meth:`rows` computes them (core sources first, then the
        sources in trees by attachment).  The arrays are written again by the next batch
        (fresh memory costs page faults: 40 MB a batch on 5000 nodes).  ``heads`` (from
        :meth:`heads`, new by default) says afterwards which sources shared their
        attachments' rows (``heads.shared``)."""
        on_core = self.depth[sources] == 0
        if heads is None:
            heads = self.heads(sources)
        scratch: dict[str, np.ndarray] = {}  # the batches' arrays, written again each batch
        tree = np.flatnonzero(~on_core)
        tree = tree[np.argsort(self.attach[sources[tree]], kind="stable")]  # by attachment
        for part in (np.flatnonzero(on_core), tree):
            for lo in range(0, len(part), self.batch):
                at = part[lo : lo + self.batch]
                yield at, self._rows_t(sources[at], heads, preds, scratch)

    def tree_costs(self, base: np.ndarray, nbytes: int) -> np.ndarray:
        """:meth:`Routes.cost_matrix` of a tree (a core of one node): all sources at once.

        The latencies are node-major (``t[x, j]``: from the source in column ``j`` to
        ``x``) with the sources in preorder, so that the sources below ``y`` are the run of
        columns ``first[y]:last[y]`` and every step is a slice.  Children first, each link
        ``y -> parent`` carries the sources below ``y`` one link further up their climb
        (``t[p, below] = t[y, below] + latency[y]``); then parents first, every other
        source reaches ``y`` from ``p`` (``t[y, other] = t[p, other] + latency[y]``): the
        sums :meth:`_rows_t` forms, from the source link after link.  Bottlenecks go the
        same way with ``minimum``, on the ranks of the distinct link bandwidths (small
        integers: the smallest rank is the smallest bandwidth's), and become
        ``nbytes / bandwidth`` by a table of the same divisions.  O(N^2) time, 8 bytes per
        pair besides the result and 1 or 2 per pair for the ranks; O(N) numpy calls.
        """
        n = self.n
        order = np.argsort(self.first)  # the source of each column (order[0]: the core)
        bws = np.unique(self.bw)  # the core's own entry is inf: the top rank, the diagonal's
        kind = _rank_dtype(len(bws)) or np.intp
        rank = np.searchsorted(bws, self.bw).astype(kind)
        t = np.empty((n, n))
        b = np.empty((n, n), dtype=kind)
        own = self.first
        t[np.arange(n), own] = 0.0
        b[np.arange(n), own] = len(bws) - 1
        parent, lat = self.parent.tolist(), self.latency.tolist()
        first, last = own.tolist(), self.last.tolist()
        links = order[1:].tolist()
        for y in reversed(links):  # children before parents: the climbs
            p, lo, hi = parent[y], first[y], last[y]
            np.add(t[y, lo:hi], lat[y], out=t[p, lo:hi])
            np.minimum(b[y, lo:hi], rank[y], out=b[p, lo:hi])
        for y in links:  # parents before children: the descents
            p, lo, hi, w, r = parent[y], first[y], last[y], lat[y], rank[y]
            np.add(t[p, :lo], w, out=t[y, :lo])
            np.add(t[p, hi:], w, out=t[y, hi:])
            np.minimum(b[p, :lo], r, out=b[y, :lo])
            np.minimum(b[p, hi:], r, out=b[y, hi:])
        _costs_in_place(t, base[order], np.divide(nbytes, bws) if nbytes else None, b)
        del b
        _permute_rows(t, own)  # row j is the source in column j: now row s is source s
        np.fill_diagonal(t, 0.0)
        return t

    def _rows_t(
        self,
        sources: np.ndarray,
        heads: _Heads,
        preds: bool = True,
        scratch: dict[str, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
        """Rows of ``sources`` transposed (node-major: ``lt[x, i]`` is the latency from
        ``sources[i]`` to ``x``), so that filling a tree level fills whole rows:
        ``(lt, pt, bt, core)``, ``core[i]`` the core predecessor row of ``sources[i]``
        (source-major, core-local order: -1 at its attachment, as :meth:`core_rows`);
        ``pt`` is None unless ``preds`` (a cost matrix needs no predecessors off the
        core).  The core sources whose trees hang off are recorded in ``heads``.

        First the climbs: every source in a tree walks up to its attachment, all at once
        one link per step, and each node on the way gets the entry of the one below it plus
        the link (the sum from the source, link after link: O(depth) per source);
        then the core from each source's attachment, starting from the climb's latency
        (searched, or along the attachment's certified tree: :meth:`_along`);
        then the descents: level by level from the core, the entries of sources not below
        a node are its parent's plus the link.
        """
        k, n = len(sources), self.n
        core = self.core
        lt = _scratch(scratch, "lt", (n, k), float)
        pt = _scratch(scratch, "pt", (n, k), np.int32) if preds else None
        bt = _scratch(scratch, "bt", (n, k), float)
        cp = _scratch(scratch, "cp", (k, core.c), np.int32)
        cols = np.arange(k)
        lt[sources, cols] = 0.0
        bt[sources, cols] = np.inf
        if pt is not None:
            pt[sources, cols] = -1
        # each source in a tree climbs to its attachment, one link per step, all at once;
        # (on, col): the nodes of each climb below the core and their sources' columns
        cur = sources.copy()
        active = np.flatnonzero(self.depth[cur] > 0)
        on, col = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
        while len(active):
            x = cur[active]
            on.append(x)
            col.append(active)
            p = self.parent[x]
            lt[p, active] = lt[x, active] + self.latency[x]
            if pt is not None:
                pt[p, active] = self.up[x]
            bt[p, active] = np.minimum(bt[x, active], self.bw[x])
            cur[active] = p
            active = active[self.depth[p] > 0]
        attach = self.attach[sources]
        offset, low = lt[attach, cols], bt[attach, cols]
        climbed = None if pt is None else pt[attach, cols]  # the climb's last link
        start = core.local[attach]
        row = heads.row[attach]
        shared = np.flatnonzero(self.depth[sources] > 0)
        shared = shared[row[shared] >= 0]
        ok = _certified(heads.slack[row[shared]], heads.top[row[shared]], offset[shared], core.c)
        shared = shared[ok]
        if len(shared):
            self._along(lt, bt, cp, shared, row[shared], heads, low[shared])
            heads.shared[sources[shared]] = True
        search = np.ones(k, dtype=bool)
        search[shared] = False
        search = np.flatnonzero(search)
        if len(search):
            at = search
            # a core source that trees hang off: its row, for the sources of those trees
            ask = (self.depth[sources[at]] == 0) & self.hangs[sources[at]]
            dist, res, bw, slack = core.rows(start[at], offset[at], ask, low[at])
            into = _block(core.nodes, at)
            lt[into] = dist.T
            bt[into] = bw.T
            cp[at] = res
            if ask.any():
                top = dist.max(axis=1)[ask] + core.w_max  # (no copy of the rows)
                heads.add(sources[at[ask]], res[ask], bw[ask], slack[ask], top)
        if pt is not None:
            pt[_block(core.nodes, cols)] = cp.T
            pt[attach, cols] = climbed
        # the descents write whole rows, then put back the climbs' entries (a source below
        # x reaches x from below): the climbs' nodes by depth, their entries kept aside
        on_a, col_a = np.concatenate(on), np.concatenate(col)
        by_depth = np.argsort(self.depth[on_a], kind="stable")
        on_a, col_a = on_a[by_depth], col_a[by_depth]
        cut = np.searchsorted(self.depth[on_a], np.arange(1, len(self.by_parent) + 2)).tolist()
        kept = [a[on_a, col_a] for a in (lt, bt) + (() if pt is None else (pt,))]
        step = max(1, _DESCENT_ELEMENTS // k)  # rows per block: small temporaries
        for depth, level in enumerate(self.by_parent):
            for lo in range(0, len(level), step):
                x = level[lo : lo + step]
                p = self.parent[x]
                lt[x] = lt[p] + self.latency[x][:, None]
                bt[x] = np.minimum(bt[p], self.bw[x][:, None])
                if pt is not None:
                    pt[x] = (self.up[x] ^ 1)[:, None]
            lo, hi = cut[depth], cut[depth + 1]  # the climbs' entries at this depth
            if hi > lo:
                for a, v in zip((lt, bt, pt), kept, strict=False):
                    a[on_a[lo:hi], col_a[lo:hi]] = v[lo:hi]
        return (lt, pt, bt, cp)

    def _along(
        self,
        lt: np.ndarray,
        bt: np.ndarray,
        cp: np.ndarray,
        cols: np.ndarray,
        rows: np.ndarray,
        heads: _Heads,
        low: np.ndarray,
    ) -> None:
        """Core entries of the columns ``cols`` (increasing; node-major, as in
        :meth:`_rows_t`) from their attachments' rows ``rows`` of ``heads``: the same
        predecessors (into ``cp``, source-major), bottlenecks no wider than the climb's
        ``low``, and latencies summed along the attachment's tree from the climb's latency
        (already in ``lt`` at the attachment), level by level (:meth:`_along_runs`).

        Columns come in *runs*: neighbouring columns of one row (the sources of one tree,
        side by side as :meth:`batches` orders them).  Runs share nothing (each reads and
        writes its own columns only), so they are done a group at a time, each group of
        about :data:`_ALONG_ELEMENTS` (column, core node) entries: the temporaries stay a
        few MB, memory already mapped, instead of tens of MB of fresh pages per batch
        (6 batches took 430 MB of page faults on the random 5000-node platform).
        O(R c) work for R runs plus one gather and one scatter per (column, core node).
        """
        core = self.core
        c = core.c
        step = max(1, _ALONG_ELEMENTS // c)
        for lo in range(0, len(cols), step):  # blocks of columns: bounded temporaries
            at = slice(lo, lo + step)
            cp[cols[at]] = heads.pred[rows[at]]
            bw = heads.bw[rows[at]]
            np.minimum(bw, low[at, None], out=bw)
            bt[_block(core.nodes, cols[at])] = bw.T
        if c == 1:
            return
        cut = np.flatnonzero((rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1] + 1)) + 1
        lead = np.concatenate(([0], cut))  # each run's first entry in cols
        width = np.diff(np.append(lead, len(cols)))
        # groups of whole runs of about step columns each (at least one run)
        ends = np.cumsum(width)
        lo = 0
        while lo < len(lead):
            hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - width[lo] + step, "right")))
            self._along_runs(lt, cols[lead[lo:hi]], rows[lead[lo:hi]], width[lo:hi], heads)
            lo = hi

    def _along_runs(
        self,
        lt: np.ndarray,
        first: np.ndarray,
        rows: np.ndarray,
        width: np.ndarray,
        heads: _Heads,
    ) -> None:
        """The latencies of :meth:`_along` for runs of columns: run ``j`` is the columns
        ``first[j]:first[j] + width[j]`` of ``lt``, along the tree of row ``rows[j]`` of
        ``heads``.

        The trees are walked per run: each (run, core node) pair is an entry, the entries
        sorted by depth (then run, node), and each stands for its run's columns, which sit
        side by side: the entries are expanded to columns by a repeat and a shift, with no
        index of columns per entry.  Each level is one gather and one scatter, parents'
        entries before their children's: the sums from the attachment, link after link.
        """
        k = lt.shape[1]
        res = heads.pred[rows]  # m x c: one row per run, -1 at its start
        c = res.shape[1]
        root = res < 0
        parent = np.where(root, np.arange(c)[None, :], self.tail_local[res])
        depth = _counted(parent, (~root).astype(np.int32)).ravel()  # depth in each tree
        # the entries by depth (radix sort on 16 bits when it fits), then run, then node
        d = depth.astype(np.uint16 if c < 1 << 16 else np.int64)
        order = np.argsort(d, kind="stable")
        ends = np.cumsum(np.bincount(d, minlength=1)).tolist()
        # flat indices in lt of each entry and of its parent's (the run's first column),
        # and the link's latency (a start's entry: never written, level 0)
        node_k = self.core.nodes * k
        at0 = (node_k[None, :] + first[:, None]).ravel()[order]
        src0 = (node_k[parent] + first[:, None]).ravel()[order]
        w0 = self.weight_end[res.ravel()[order]]
        flat = lt.reshape(-1)
        if width.max() > 1:  # each entry stands for its run's columns: expand them
            reps = width[order // c]
            total = np.cumsum(reps)
            shift = total - reps  # where each entry's columns start
            step = np.arange(int(total[-1]))
            at0 = np.repeat(at0 - shift, reps)
            at0 += step
            src0 = np.repeat(src0 - shift, reps)
            src0 += step
            w0 = np.repeat(w0, reps)
            ends = np.append(shift, total[-1])[ends].tolist()  # the levels' bounds there
        for lo, hi in itertools.pairwise(ends):
            flat[at0[lo:hi]] = flat[src0[lo:hi]] + w0[lo:hi]


@contextlib.contextmanager
def _small_pages() -> Iterator[None]:
    """Numpy's advice for transparent huge pages switched off while the block runs (and
    put back as it was, whatever happens): the arrays it allocates get ordinary 4 KiB
    pages.

    Why: numpy advises the kernel to back every array of 4 MiB or more with 2 MiB pages
    (``madvise``), and on a host whose transparent huge pages are ``madvise`` the cost of
    faulting them in is erratic: the same 200 MB took 0.004 to 0.5 s of system time
    from one run to the next on this project's host, and the random 5000-node cost
    matrix 0.24 to 0.90 s in all (its 450 MB of fresh memory: the result, the kept core
    rows, the batches' searches), against a steady 0.28 to 0.32 s with 4 KiB pages (see
    docs/simulator.md, seventh round).  Values are not affected.  The advice is numpy's
    process-wide state: another thread's arrays allocated meanwhile get no advice either
    (a hint only, never a different result).  No-op when numpy has no such switch.
    """
    multiarray = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(multiarray, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        yield
        return
    before = switch(False)
    try:
        yield
    finally:
        switch(before)


def _fold_into(
    lat: np.ndarray, weight: np.ndarray, resources: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> None:
    """Continue each route's latency ``lat[i]`` over the links ``resources[lo[i]:hi[i]]``,
    link after link: the floating-point sum a search from the route's source forms
    (``dist[next] = dist[node] + latency``)."""
    count = hi - lo
    order = np.argsort(-count, kind="stable")  # longest first: step j's routes are a prefix
    still = np.searchsorted(-count[order], -np.arange(1, int(count.max(initial=0)) + 1), "right")
    first = lo[order]
    for j, m in enumerate(still.tolist()):
        i = order[:m]
        lat[i] = lat[i] + weight[resources[first[:m] + j]]


def _counted(up: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Links from the root of each node of trees given per row (``k x m``: ``up`` each
    node's parent, the root its own; ``count`` the links to it, 0 at the root), by pointer
    doubling: after round ``r`` each node holds the count over its last ``2**r`` tree links
    and points ``2**r`` of them up.  By blocks of rows (cache-sized); ``count`` is
    overwritten and returned."""
    k, m = up.shape
    for lo in range(0, k, _ALONG_ROWS):
        rows = min(k, lo + _ALONG_ROWS) - lo
        at = (up[lo : lo + rows] + (np.arange(rows) * m)[:, None]).ravel()
        got = count[lo : lo + rows].reshape(-1)  # (a view: written in place)
        while True:
            nxt = at[at]
            if np.array_equal(nxt, at):
                break
            got += got[at]
            at = nxt
    return count


def _rows_of(mask: np.ndarray) -> slice | np.ndarray:
    """The rows where ``mask`` holds: a slice when it holds everywhere (a view, not a
    copy, when indexing a block of rows)."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def _least_positive(z: np.ndarray) -> np.ndarray:
    """The least non-zero entry of each row of ``z`` (``inf`` for a row of zeros), whose
    entries are non-negative doubles (``+0.0``, finite or ``inf``, no NaN); ``z`` is
    overwritten.

    Why bits: non-negative doubles are ordered as their bit patterns read as unsigned
    integers, and ``+0.0`` is the pattern 0; subtracting 1 sends it to the largest pattern
    and keeps every other order, so one integer minimum skips the zeros (an order of
    magnitude faster than masking them with ``np.where``).
    """
    u = z.view(np.uint64)
    u -= np.uint64(1)
    least = u.min(axis=1)
    least += np.uint64(1)  # a row of zeros wraps back to 0
    out = least.view(np.float64)
    out[least == 0] = np.inf
    return out


def _certified(slack: np.ndarray, top: np.ndarray, offset: np.ndarray, c: int) -> np.ndarray:
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
    routes are summed from their source (:meth:`Routes.pairs`).
    """
    unit = float(np.finfo(float).eps) / 2
    g = (c + 2) * unit / (1 - (c + 2) * unit)
    return slack > 8 * g * (offset + top)


class _Heads:
    """Rows already computed by :meth:`_Forest.rows` that trees hang off (core sources
    with trees): for each node, its row here (-1 if none yet); each row's predecessor
    resources and bottlenecks on the core (in core-local order), its slack and its largest
    latency plus largest link latency (see :func:`_certified`); and for each node, whether
    it is a source in a tree that shared its attachment's row (``shared``)."""

    def __init__(self, n: int, rows: int = 0, width: int = 0) -> None:
        self.row = np.full(n, -1, dtype=np.int64)
        self.shared = np.zeros(n, dtype=bool)
        self.count = 0
        # room for ``rows`` rows of ``width`` (the rows to come, when known: no copies
        # while growing)
        self.pred = np.empty((rows if width else 0, width), dtype=np.int32)
        self.bw = np.empty(self.pred.shape)
        self.slack = np.empty(len(self.pred))
        self.top = np.empty(len(self.pred))

    def add(
        self,
        sources: np.ndarray,
        pred: np.ndarray,
        bw: np.ndarray,
        slack: np.ndarray,
        top: np.ndarray,
    ) -> None:
        """Record the rows of ``sources`` (source-major ``pred`` and ``bw``, ``k x c``, as
        :meth:`_Core.rows` gives them, with their ``slack`` and ``top``)."""
        first, need = self.count, self.count + len(sources)
        if need > len(self.pred):  # grow geometrically
            size = max(need, 2 * len(self.pred), 64)
            for name in ("pred", "bw"):
                setattr(self, name, _grown(getattr(self, name), size, first, pred.shape[1]))
            for name in ("slack", "top"):
                setattr(self, name, _grown(getattr(self, name), size, first))
        self.pred[first:need] = pred
        self.bw[first:need] = bw
        self.slack[first:need], self.top[first:need] = slack, top
        self.row[sources] = np.arange(first, need)
        self.count = need


def _grown(a: np.ndarray, size: int, keep: int, width: int | None = None) -> np.ndarray:
    """A new array of ``size`` rows (of ``width`` entries, else as ``a``'s) and ``a``'s
    dtype, holding ``a``'s first ``keep`` rows: a kept array grown geometrically."""
    shape = (size, *((width,) if width is not None else a.shape[1:]))
    grown = np.empty(shape, dtype=a.dtype)
    if keep:  # (an empty ``a`` may have no columns yet)
        grown[:keep] = a[:keep]
    return grown


def _scratch(
    store: dict[str, np.ndarray] | None, name: str, shape: tuple[int, int], dtype
) -> np.ndarray:
    """A C-contiguous array of ``shape`` on the first elements of ``store[name]`` (made or
    grown as needed), or a new one without a store: the same memory batch after batch."""
    size = shape[0] * shape[1]
    if store is None:
        return np.empty(shape, dtype=dtype)
    if name not in store or len(store[name]) < size:
        store[name] = np.empty(size, dtype=dtype)
    return store[name][:size].reshape(shape)


def _block(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, slice | np.ndarray]:
    """The index of the block ``rows x cols`` (``cols`` increasing): ``a[_block(rows,
    cols)]`` is ``a[rows[:, None], cols]``.  When ``cols`` is a run it is a slice: a plain
    strided copy per row instead of numpy's element-wise fancy indexing on both axes
    (several times faster for the core's ``k x c`` blocks)."""
    if len(cols) and int(cols[-1]) - int(cols[0]) == len(cols) - 1:
        return rows, slice(int(cols[0]), int(cols[-1]) + 1)
    return rows[:, None], cols


def _costs_in_place(
    t: np.ndarray, base: np.ndarray, table: np.ndarray | None, rank: np.ndarray, tile: int = 128
) -> None:
    """``t = (t + base + table[rank]).T`` in place (``t`` square, ``base`` added to each
    row, the table term left out when ``table`` is None), tile by tile: each pair of tiles
    symmetric about the diagonal gets its terms and trades places (no second matrix)."""
    n = len(t)
    for i in range(0, n, tile):
        a = slice(i, i + tile)
        for j in range(i, n, tile):
            b = slice(j, j + tile)
            upper = t[a, b] + base[b]
            if table is not None:
                upper += np.take(table, rank[a, b])
            if j == i:
                t[a, a] = upper.T
                continue
            lower = t[b, a] + base[a]
            if table is not None:
                lower += np.take(table, rank[b, a])
            t[a, b] = lower.T
            t[b, a] = upper.T


def _permute_rows(a: np.ndarray, src: np.ndarray) -> None:
    """``a[:] = a[src]`` in place (``src`` a permutation), one cycle after another: one
    row's copy besides ``a``."""
    src_l = src.tolist()
    done = [False] * len(src_l)
    for start in np.flatnonzero(src != np.arange(len(src_l))).tolist():
        if done[start]:
            continue
        keep = a[start].copy()
        at = start
        while src_l[at] != start:
            a[at] = a[src_l[at]]
            done[at] = True
            at = src_l[at]
        a[at] = keep
        done[at] = True


def _transpose_into(
    out: np.ndarray, a: np.ndarray, rows: np.ndarray, block: int = 256, tile: int = 512
) -> None:
    """``out[rows] = a.T`` by tiles (a plain strided copy misses the cache)."""
    for lo in range(0, a.shape[1], block):
        into = rows[lo : lo + block]
        for x in range(0, a.shape[0], tile):
            out[into, x : x + tile] = a[x : x + tile, lo : lo + block].T
