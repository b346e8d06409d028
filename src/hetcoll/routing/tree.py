"""A tree platform (a core of one node): its routes and cost matrix without any search.

Every route is a climb to the lowest common ancestor and a descent.  Routes are read as
runs of heavy-path positions (:meth:`Tree.routes`); the cost matrix is written for every
source at once by slices in preorder (:meth:`Tree.costs`).  Latencies are the same sums as
anywhere else: from the source, link after link.
"""

from __future__ import annotations

import numpy as np

from .arrays import costs_in_place, permute_rows
from .forest import Forest


class Tree:
    """The routes of a forest whose core is one node (``forest.core.c == 1``)."""

    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        self.tuning = forest.graph.tuning
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
            f = self.forest
            n = f.n
            parent = f.parent.tolist()
            size = (f.last - f.first).tolist()
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
            up_at[pos_a] = f.up
            self._paths = (pos_a, np.array(head, dtype=np.int64), up_at)
        return self._paths

    def routes(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of the pairs ``(u[i], v[i])`` of one tree (a core of one node), as
        ``(resources, offsets)`` (see :meth:`.Routes.pairs`): up from ``u`` to the lowest
        common ancestor ``w``, then down to ``v``, the reverse of ``v``'s climb to ``w``.

        Both climbs are runs of heavy-path positions (:meth:`heavy_paths`): all pairs find
        ``w`` and cut their climbs into runs at once, O(log N) numpy steps, then the runs
        are copied in chunks.  O(total route length + P log N) for P pairs.
        """
        pos, head, up_at = self.heavy_paths()
        parent, depth = self.forest.parent, self.forest.depth
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
        chunk = self.tuning.run_chunk
        while lo < len(ends):  # chunks of about ``run_chunk`` links: bounded temporaries
            base = int(ends[lo] - length_a[lo])
            hi = max(lo + 1, int(np.searchsorted(ends, base + chunk, "right")))
            run = np.repeat(np.arange(lo, hi), length_a[lo:hi])
            k = np.arange(len(run)) - (ends[run] - length_a[run] - base)
            resources[out_a[run] + k] = up_at[first_a[run] + step[run] * k] ^ flip[run]
            lo = hi
        return resources, offsets

    def costs(self, base: np.ndarray, nbytes: int) -> np.ndarray:
        """:meth:`.Routes.cost_matrix` of a tree (a core of one node): all sources at once.

        The latencies are node-major (``t[x, j]``: from the source in column ``j`` to
        ``x``) with the sources in preorder, so that the sources below ``y`` are the run of
        columns ``first[y]:last[y]`` and every step is a slice.  Children first, each link
        ``y -> parent`` carries the sources below ``y`` one link further up their climb
        (``t[p, below] = t[y, below] + latency[y]``); then parents first, every other
        source reaches ``y`` from ``p`` (``t[y, other] = t[p, other] + latency[y]``): the
        sums :func:`.batches.rows_t` forms, from the source link after link.  Bottlenecks go the
        same way with ``minimum``, on the ranks of the distinct link bandwidths (small
        integers: the smallest rank is the smallest bandwidth's), and become
        ``nbytes / bandwidth`` by a table of the same divisions.  O(N^2) time, 8 bytes per
        pair besides the result and 1 or 2 per pair for the ranks; O(N) numpy calls.
        """
        f = self.forest
        n = f.n
        order = np.argsort(f.first)  # the source of each column (order[0]: the core)
        bws = np.unique(f.bw)  # the core's own entry is inf: the top rank, the diagonal's
        kind = self.tuning.rank_dtype(len(bws)) or np.intp
        rank = np.searchsorted(bws, f.bw).astype(kind)
        t = np.empty((n, n))
        b = np.empty((n, n), dtype=kind)
        own = f.first
        t[np.arange(n), own] = 0.0
        b[np.arange(n), own] = len(bws) - 1
        parent, lat = f.parent.tolist(), f.latency.tolist()
        first, last = own.tolist(), f.last.tolist()
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
        table = np.divide(nbytes, bws) if nbytes else None
        costs_in_place(t, base[order], table, b, self.tuning.cost_tile)
        del b
        permute_rows(t, own)  # row j is the source in column j: now row s is source s
        np.fill_diagonal(t, 0.0)
        return t
