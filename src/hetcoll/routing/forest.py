"""The forest: the core and the trees that hang off it.

Peeling nodes of degree one again and again leaves the graph's *core* (its 2-core); the
peeled nodes form trees, each hanging off one core node, its *attachment* (a tree
platform keeps one node, a centre, as its core).  A route between two nodes of one tree
stays in it; any other route climbs from its source to the source's attachment, crosses
the core, and descends the destination's tree.  Paths in the trees are unique, so
Dijkstra and the tie rule only ever run on the core.  Latencies are still the
floating-point sums from the source along the route, link after link, as a Dijkstra over
the whole graph forms them: a source in a tree enters the core with its climb's latency
as the core search's starting value.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .core import Core, certified
from .graph import LinkGraph
from .rows import CoreRows


class Forest:
    """The core and the trees hanging off it (see the module's docstring); ``core`` the
    :class:`.Core`, ``search`` its rows (:class:`.CoreRows`).

    For every node outside the core: ``parent`` (the next node towards the core), ``up``
    (the resource from it to its parent; ``up ^ 1`` is the way down), ``depth`` (links to
    the core) and ``attach`` (its tree's core node); core nodes have depth 0 and are their
    own attachment.  Each tree's nodes are numbered in preorder (``first``): the subtree of
    ``x`` is ``first[x] <= first[y] < first[x] + size[x]``.
    """

    def __init__(self, g: LinkGraph) -> None:
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
        self.core = Core(g, core)
        self.search = CoreRows(self.core, g.work)
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
        self.batch = max(1, g.tuning.tree_elements // max(1, n))
        self.graph = g
        self.hangs = np.zeros(n, dtype=bool)  # core nodes that trees hang off
        # each resource's tail in core-local order and its latency, one more entry at the
        # end that a -1 (a row's start) reads harmlessly (:func:`.batches.along_runs`)
        self.tail_local = np.append(self.core.local[g.tail], 0)
        self.weight_end = np.append(g.weight, 0.0)
        self.hangs[self.attach[pendant]] = True

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
        (:func:`certified`), and is searched on its own otherwise.
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
        step = max(1, self.graph.tuning.tree_elements // core.c)
        for lo in range(0, len(heads), step):
            at = slice(lo, min(len(heads), lo + step))
            dist, rows[at], _, low[at] = self.search.rows(start[at], zero[at], ask[at], None)
            top[at] = dist.max(axis=1)
        row_of = inv.copy()
        offset = self.climb(sources)
        own = np.flatnonzero(in_tree & ~certified(low[inv], top[inv] + core.w_max, offset, core.c))
        self.graph.work.shared += int(np.count_nonzero(in_tree)) - len(own)
        if len(own):  # a near tie: search from the source's own starting latency
            extra = np.empty((len(own), core.c), dtype=np.int32)
            for lo in range(0, len(own), step):
                at = own[lo : lo + step]
                none = np.zeros(len(at), dtype=bool)
                extra[lo : lo + len(at)] = self.search.rows(
                    core.local[attach[at]], offset[at], none, None
                )[1]
            row_of[own] = len(heads) + np.arange(len(own))
            rows = np.concatenate([rows, extra])
        return rows, row_of, heads
