"""``Routes``: all-pairs routing of a platform, the package's one public class."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import rows_of, small_pages, transpose_into
from .batches import all_rows, batches, new_heads
from .forest import Forest
from .graph import LinkGraph
from .tree import Tree
from .tuning import DEFAULT, Tuning, Work
from .walks import KeptRows, bottlenecks, fold_into, walk, walk_matrix


class Routes:
    """All-pairs routing of a platform: end-to-end latency and bandwidth, and paths.

    ``latency[u, v]`` and ``bandwidth[u, v]`` (node indices; read-only ``N x N`` arrays)
    are the route's total latency (s) and bottleneck bandwidth (bytes/s); the diagonal is
    0 and ``inf``.  :meth:`path` gives the route's directed-link resources (empty on a
    pairwise-matrix platform, whose pairs share nothing).  The routing rule (lowest
    latency, then fewest links, then the nearest and lowest predecessor) is the package
    docstring's.

    Build with :meth:`from_matrices` or :meth:`from_links` (``Platform.routes`` does).
    Nothing is computed before it is asked for: :meth:`pairs` and :meth:`pair` compute
    the rows of the sources they need, :meth:`cost_matrix` streams its first matrix
    without building the latency and bandwidth matrices, and reading :attr:`latency` or
    :attr:`bandwidth` builds them (``N x N``: 20 bytes per pair with the predecessors).
    """

    def __init__(self) -> None:  # use the constructors below
        self.n = 0
        self._lat: np.ndarray | None = None  # full matrices, once built
        self._bw: np.ndarray | None = None
        self._pred: np.ndarray | None = None
        self._graph: LinkGraph | None = None
        self._forest: Forest | None = None
        self._tree: Tree | None = None
        self._kept = KeptRows()  # core predecessor rows of some sources, until the matrices
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
        tuning: Tuning = DEFAULT,
    ) -> Routes:
        """Routes over undirected links ``k = (u[k], v[k])`` (a connected graph).

        ``tuning`` sizes the search's blocks and batches (:class:`~.tuning.Tuning`); it
        never changes a result."""
        r = cls()
        r.n = n
        r._graph = LinkGraph(n, u, v, latency, bandwidth, tuning)
        return r

    # -- matrices -------------------------------------------------------------------------------

    @property
    def has_links(self) -> bool:
        """True when routes cross shared links (resources), False for a matrix platform."""
        return self._graph is not None

    @property
    def has_matrices(self) -> bool:
        """True once the ``N x N`` latency and bandwidth matrices are held (always on a
        matrix platform; on a link platform once :attr:`latency` or :attr:`bandwidth`
        has been read, or a second :meth:`cost_matrix` asked for)."""
        return self._lat is not None

    @property
    def work(self) -> Work:
        """Counters of what the search did so far (:class:`~.tuning.Work`; all 0 on a
        matrix platform)."""
        return self._graph.work if self._graph is not None else Work()

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

    def _ensure_forest(self) -> Forest:
        """The graph's forest, made on first use."""
        if self._forest is None:
            assert self._graph is not None
            self._forest = Forest(self._graph)
        return self._forest

    def _build_matrices(self) -> None:
        lat, pred, bw = all_rows(self._ensure_forest(), np.arange(self.n))
        for a in (lat, pred, bw):
            a.setflags(write=False)
        self._lat, self._pred, self._bw = lat, pred, bw
        self._kept = KeptRows()  # the matrices hold every route from now on

    def cost_matrix(self, base: np.ndarray, nbytes: int) -> np.ndarray:
        """``base[u] + latency[u, v] + nbytes / bandwidth[u, v]`` for every pair, summed in
        that order (``nbytes / bandwidth`` left out when ``nbytes`` is 0), 0 on the
        diagonal: a model's pairwise cost matrix (``N x N``, a new array).

        On a link platform whose matrices are not built, the first call does not build
        them: it writes each batch of rows (:func:`.batches.batches`) straight into the
        result and keeps every source's core predecessor row for :meth:`pairs` (the
        latency and bandwidth matrices are 400 MB for 5000 nodes and their transposes as
        much time as the costs); a later call builds them.
        """
        n = self.n
        if self._graph is not None and self._lat is None and not self._streamed:
            self._streamed = True
            with small_pages():
                return self._stream_costs(np.asarray(base, dtype=float), nbytes)
        lat = self.latency
        bw = self.bandwidth if nbytes else None  # 0 / beta is 0: no bandwidth needed
        m = np.empty((n, n))
        step = self._graph.tuning.cost_rows if self._graph is not None else DEFAULT.cost_rows
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            np.add(base[lo:hi, None], lat[lo:hi], out=m[lo:hi])
            if bw is not None:
                m[lo:hi] += nbytes / bw[lo:hi]
        np.fill_diagonal(m, 0.0)
        return m

    def _stream_costs(self, base: np.ndarray, nbytes: int) -> np.ndarray:
        """:meth:`cost_matrix` from the rows batch by batch (the same operations on the
        same values: ``fl(fl(base + lat) + fl(nbytes / bw))``), keeping the core rows."""
        f = self._ensure_forest()
        tuning = f.graph.tuning
        n = self.n
        if f.core.c == 1:  # a tree: every source at once, and no core row to keep
            m = self._ensure_tree().costs(base, nbytes)
            self._keep(np.full((n, 1), -1, dtype=np.int32), n, range(n))
            return m
        m = np.empty((n, n))
        sources = np.arange(n)
        heads = new_heads(f, sources)
        # the core rows, kept once each: a source in a tree whose row is its attachment's
        # (certified, :func:`.batches.along`) shares that row; rows are written from the
        # start of ``core``, its unused end never touched (no page faults)
        core = np.empty((n, f.core.c), dtype=np.int32)
        row_of = np.empty(n, dtype=np.int64)
        count = 0
        for at, (lt, _, bt, rows) in batches(f, sources, preds=False, heads=heads):
            lt += base[at]  # lt[x, i] is from source at[i]
            if nbytes:
                np.divide(nbytes, bt, out=bt)
                lt += bt
            transpose_into(m, lt, at, tuning.transpose_block, tuning.transpose_tile)
            own = rows_of(~heads.shared[at])  # (all of a batch of core sources: a view)
            kept = rows[own]
            core[count : count + len(kept)] = kept
            row_of[at[own]] = np.arange(count, count + len(kept))
            count += len(kept)
        np.fill_diagonal(m, 0.0)
        shared = np.flatnonzero(heads.shared)
        row_of[shared] = row_of[f.attach[shared]]  # (an attachment is a core source)
        # a tree source's row starts at its attachment (the climb's last link is not on
        # the core), as :meth:`.Forest.core_rows` gives it
        core[row_of, f.core.local[f.attach]] = -1
        self._keep(core, count, row_of.tolist())
        return m

    def _keep(self, rows: np.ndarray, count: int, row_of: Sequence[int]) -> None:
        self._kept.replace(rows, count, row_of)
        self.work.kept_rows = count

    def _ensure_tree(self) -> Tree:
        """Routes and costs of a tree platform (a core of one node), made on first use."""
        if self._tree is None:
            self._tree = Tree(self._ensure_forest())
        return self._tree

    # -- rows and paths -------------------------------------------------------------------------

    def prepare(self, sources: Sequence[int]) -> None:
        """Compute the core predecessor rows of the routes from ``sources`` not known yet
        (nothing once the full matrices are built, or on a matrix platform)."""
        if self._graph is None or self._pred is not None:
            return
        self._kept.prepare(self._ensure_forest(), sources)
        self.work.kept_rows = self._kept.count

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
            lat = np.asarray(self._lat[u, v], dtype=float)  # type: ignore[index]
            resources, offsets = walk_matrix(g, self._pred, u, v)
        elif self._ensure_forest().core.c == 1:  # a tree: every route a climb and a descent
            resources, offsets = self._ensure_tree().routes(u, v)
            lat = np.zeros(total)
            fold_into(lat, g.weight, resources, offsets[:-1], offsets[1:])
        else:
            lat, resources, offsets = walk(self._ensure_forest(), self._kept, u, v)
            self.work.kept_rows = self._kept.count
        got = (lat, bottlenecks(g, resources, offsets), resources, offsets)
        for a in got:
            a.setflags(write=False)
        self._last_pairs = (u.copy(), v.copy(), got)
        return got

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
