"""The core's chains, the kept rows of their ends, and inner nodes' rows derived from them.

Most nodes of a sparse core sit inside *chains*: runs of nodes of two links between two
*ends* (:class:`Chains`).  A route from an inner node either stays on its chain or leaves
it by one of its two ends, so its row is the least of three candidates: the sums along
the chain, and the ends' own rows continued from the chain's latency to each end.
:func:`derive` builds that row from the ends' rows, kept for it (:class:`EndRows`), and
proves it is the search's (or leaves the node to a search).
"""

from __future__ import annotations

import numpy as np

from .arrays import grown, rows_of
from .core import Core, certified


class Chains:
    """The core's chains: maximal runs of *inner* nodes (two links, to two distinct
    neighbours) between two distinct *ends* (other core nodes).

    A route from an inner node either stays on its chain or leaves it through one of the
    ends, so its row can be derived from the ends' rows (:func:`derive`).  Chains are
    stored end to end in flat arrays, each from its end ``a`` to its end ``b``: ``node[p]``
    (core-local) at position ``p``; ``ahead[p]`` is the core edge from ``node[p]`` to
    ``node[p + 1]``, ``back[p]`` the one from ``node[p + 1]`` to ``node[p]`` (-1 at a
    chain's last position).  For an inner node ``x``: ``at[x]`` is its position (-1 for any
    other node, and for runs of inner nodes that close a cycle or whose two ends are one
    node: those are searched), ``end_a[x]`` / ``end_b[x]`` the positions of its chain's ends.
    ``is_end[x]``: ``x`` is the end of a chain.  O(c) to build.
    """

    def __init__(self, core: Core) -> None:
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


class EndRows:
    """Core rows searched from latency 0 at chain ends, kept to derive inner nodes' rows
    from (:func:`derive`), at most ``Tuning.end_elements`` entries.

    Per node its slot (-1 if none); per slot the predecessors ``edge`` (core edges, 16-bit
    when they fit, ``none``, the count of core edges, at the start), the ``depth`` of each
    node in the row's tree (links from the start), the bottlenecks (from ``inf`` at the
    start) as ranks in the table ``bws`` of the core's link bandwidths
    (:meth:`bandwidths`), and the slack and top (as :func:`certified` takes them).  The
    latencies are not kept: summed again along the tree from 0
    (:meth:`latencies`) they are the search's, bit for bit (each predecessor link
    is tight: ``fl(dist[parent] + latency) == dist[node]``).

    Compact on purpose: about 5 bytes per entry (7 with 32-bit edges or 16-bit ranks, 20
    at most), so the kept rows of the random 5000-node platform touch 14 MB instead of
    104, and every page a process touches for the first time costs a page fault (a
    quarter to half of that case's CPU time is the kernel's).
    """

    def __init__(self, core: Core) -> None:
        c = self.c = core.c
        self.core = core
        self.slot = np.full(c, -1, dtype=np.int64)
        self.count = 0
        self.limit = max(0, core.tuning.end_elements // max(1, c))
        self.bws = np.unique(np.append(core.e_bw, np.inf))
        rank = core.tuning.rank_dtype(len(self.bws))
        self.none = len(core.e_tail)  # the start's edge: core.resources reads it as -1
        self.edge = np.empty((0, c), dtype=np.uint16 if self.none < 1 << 16 else np.int32)
        self.depth = np.empty((0, c), dtype=np.uint16)
        self.bw = np.empty((0, c), dtype=rank if rank is not None else float)
        self.slack = np.empty(0)
        self.top = np.empty(0)

    def room(self) -> int:
        """Rows that can still be kept."""
        return self.limit - self.count

    def latencies(self, slot: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """Latencies along kept rows' trees (``k x c``), from latency ``offset[i]`` at the
        start of row ``slot[i]``, summed link after link: level by level, every row of a
        block at once (each node's entry is its parent's plus the link's latency,
        :meth:`.Core.level_sums`).
        """
        core = self.core
        k, c = len(slot), self.c
        out = np.empty((k, c))
        flat_all = out.reshape(-1)
        step = core.tuning.along_rows
        for lo in range(0, k, step):
            part = slot[lo : lo + step]
            m = len(part)
            core.level_sums(
                flat_all[lo * c : (lo + m) * c],
                offset[lo : lo + m],
                self.edge[part].reshape(-1),
                self.depth[part].reshape(-1),
            )
        return out

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
                setattr(self, name, grown(getattr(self, name), size, first))
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


def derive(
    core: Core,
    chains: Chains,
    kept: EndRows,
    start: np.ndarray,
    ask: np.ndarray,
    base: np.ndarray,
    rows: np.ndarray,
    out: tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray],
) -> np.ndarray:
    """Rows from latency 0 at inner chain nodes ``start`` (local; their chains' ends
    kept) into the rows ``rows`` of ``out`` (``(dist, resources, bandwidth, slack)`` as
    :meth:`.CoreRows.rows` gives them; the slack where ``ask``, the bottlenecks no wider
    than ``base``), derived from the ends' rows; returns which rows were derived (the
    others are left to a search: every row is written, and those are written again).

    From ``s``, inside its chain ``a .. s .. b``, every route either stays on the
    chain (a *direct* route) or leaves it by ``a`` or by ``b``: the latency to ``t``
    is the least of three candidates, the direct sum along the chain, and the sums
    along ``a``'s (``b``'s) tree from the chain's latency to ``a`` (``b``), as a search
    from ``a`` with that starting latency forms them.  The row is derived when
    (1) both ends' rows are certified for those starting latencies (:func:`certified`:
    a search from them has the same predecessors, without ties), (2) at every node
    one candidate is strictly the least, and (3) every core link's latency is at
    least ``eps`` times every latency in play (adding a link never leaves a sum
    unchanged).  Then every link into ``t`` other than the winning candidate's last
    link is strictly slack: a link of the same candidate's tree by (1), one from
    another candidate's node by (2) (its sum through the link is at least that
    candidate's latency at ``t``), a link into an end or back towards ``s`` by (3).
    So the search from ``s`` has no tie and exactly these predecessors and latencies.
    """
    dist, res, bw, low = out
    k, c = len(start), core.c
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
    wl = np.where(vl, core.e_weight[el], 0.0).cumsum(axis=1)
    wr = np.where(vr, core.e_weight[er], 0.0).cumsum(axis=1)
    bl = np.minimum.accumulate(np.where(vl, core.e_bw[el], np.inf), axis=1)
    br = np.minimum.accumulate(np.where(vr, core.e_bw[er], np.inf), axis=1)
    ks = np.arange(k)
    alpha, beta = wl[ks, left - 1], wr[ks, right - 1]
    na, nb = chains.node[pa], chains.node[pb]
    sa, sb = kept.slot[na], kept.slot[nb]
    # the ends' trees from the chains' latencies, level by level
    va, vb = kept.latencies(sa, alpha), kept.latencies(sb, beta)
    top = np.maximum(va.max(axis=1), vb.max(axis=1))
    ok = certified(kept.slack[sa], kept.top[sa], alpha, c)
    ok &= certified(kept.slack[sb], kept.top[sb], beta, c)
    w_min = float(core.e_weight.min())
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
    res[rows] = np.take(core.res_of, r)  # (kept.none reads the table's last entry, -1)
    if bw is not None:
        b = kept.bandwidths(sb, br[ks, right - 1], sa, bl[ks, left - 1], from_a)
        b[kk, nl] = np.where(wins_l, bl, b[kk, nl])
        b[kk, nr] = np.where(wins_r, br, b[kk, nr])
        b[ks, start] = np.inf
        bw[rows] = np.minimum(b, base[:, None])
    asked = np.flatnonzero(ok & ask)
    if len(asked):  # the slack as Core.predecessors forms it (no ties here)
        low[rows[asked]] = core.least_slack(best[rows_of(ok & ask)])
    return ok
