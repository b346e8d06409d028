"""Rows of many sources at once, batch after batch: all-pairs matrices and cost matrices.

A batch holds the rows of a few sources *node-major* (``lt[x, i]``: the latency from the
batch's source ``i`` to node ``x``), so that filling a tree level fills whole rows.  Each
batch is filled in three steps (:func:`rows_t`): the climbs of its sources in trees up to
their attachments; the core, from each source's attachment and climb's latency (searched,
or along the attachment's row when certified: :func:`along`); the descents into every
tree, level by level.  Core sources come first, then the sources in trees grouped by
attachment, so that the sources sharing an attachment's row sit side by side (*runs* of
columns, :func:`along_runs`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from .arrays import block_index, counted, grown, scratch_array, transpose_into
from .core import certified
from .forest import Forest


class Heads:
    """Rows already computed by :func:`batches` that trees hang off (core sources
    with trees): for each node, its row here (-1 if none yet); each row's predecessor
    resources and bottlenecks on the core (in core-local order), its slack and its largest
    latency plus largest link latency (see :func:`certified`); and for each node, whether
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
        :meth:`.CoreRows.rows` gives them, with their ``slack`` and ``top``)."""
        first, need = self.count, self.count + len(sources)
        if need > len(self.pred):  # grow geometrically
            size = max(need, 2 * len(self.pred), 64)
            for name in ("pred", "bw"):
                setattr(self, name, grown(getattr(self, name), size, first, pred.shape[1]))
            for name in ("slack", "top"):
                setattr(self, name, grown(getattr(self, name), size, first))
        self.pred[first:need] = pred
        self.bw[first:need] = bw
        self.slack[first:need], self.top[first:need] = slack, top
        self.row[sources] = np.arange(first, need)
        self.count = need


def all_rows(forest: Forest, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Latency rows, predecessor-resource rows (-1 at the source) and bottleneck-
    bandwidth rows (``inf`` at the source) of ``sources``, source-major ``k x N``.

    Sources on the core go first, each with its own search; a source in a tree then
    shares its attachment's core predecessors and bottlenecks when that row's slack
    certifies them (:func:`certified`), its latencies summed along them from its
    climb's latency, and is searched on its own otherwise.
    """
    k, n = len(sources), forest.n
    lat = np.empty((k, n))
    pred = np.empty((k, n), dtype=np.int32)
    bw = np.empty((k, n))
    tuning = forest.graph.tuning
    for at, (lt, pt, bt, _) in batches(forest, sources):
        for out, t in zip((lat, pred, bw), (lt, pt, bt), strict=True):
            transpose_into(out, t, at, tuning.transpose_block, tuning.transpose_tile)
    return lat, pred, bw


def new_heads(forest: Forest, sources: np.ndarray) -> Heads:
    """An empty :class:`Heads` for :func:`batches` of ``sources``, with room for the
    rows it will keep (the core sources that trees hang off)."""
    hang = np.count_nonzero((forest.depth[sources] == 0) & forest.hangs[sources])
    return Heads(forest.n, int(hang), forest.core.c)


def batches(
    forest: Forest, sources: np.ndarray, preds: bool = True, heads: Heads | None = None
) -> Iterator[tuple[np.ndarray, tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]]]:
    """The rows of ``sources`` batch after batch, node-major: ``(at, (lt, pt, bt,
    core))`` where ``lt[x, i]`` is the latency from ``sources[at[i]]`` to ``x`` and
    ``core[i]`` its core predecessor row (as :func:`rows_t`; ``pt`` is None unless
    ``preds``), in the order :func:`all_rows` computes them (core sources first, then the
    sources in trees by attachment).  The arrays are written again by the next batch
    (fresh memory costs page faults: 40 MB a batch on 5000 nodes).  ``heads`` (from
    :func:`new_heads`, new by default) says afterwards which sources shared their
    attachments' rows (``heads.shared``)."""
    on_core = forest.depth[sources] == 0
    if heads is None:
        heads = new_heads(forest, sources)
    scratch: dict[str, np.ndarray] = {}  # the batches' arrays, written again each batch
    tree = np.flatnonzero(~on_core)
    tree = tree[np.argsort(forest.attach[sources[tree]], kind="stable")]  # by attachment
    for part in (np.flatnonzero(on_core), tree):
        for lo in range(0, len(part), forest.batch):
            at = part[lo : lo + forest.batch]
            yield at, rows_t(forest, sources[at], heads, preds, scratch)


def rows_t(
    forest: Forest,
    sources: np.ndarray,
    heads: Heads,
    preds: bool = True,
    scratch: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """Rows of ``sources`` transposed (node-major: ``lt[x, i]`` is the latency from
    ``sources[i]`` to ``x``), so that filling a tree level fills whole rows:
    ``(lt, pt, bt, core)``, ``core[i]`` the core predecessor row of ``sources[i]``
    (source-major, core-local order: -1 at its attachment, as :meth:`.Forest.core_rows`);
    ``pt`` is None unless ``preds`` (a cost matrix needs no predecessors off the
    core).  The core sources whose trees hang off are recorded in ``heads``.

    First the climbs: every source in a tree walks up to its attachment, all at once
    one link per step, and each node on the way gets the entry of the one below it plus
    the link (the sum from the source, link after link: O(depth) per source);
    then the core from each source's attachment, starting from the climb's latency
    (searched, or along the attachment's certified tree: :func:`along`);
    then the descents: level by level from the core, the entries of sources not below
    a node are its parent's plus the link.
    """
    k, n = len(sources), forest.n
    core = forest.core
    lt = scratch_array(scratch, "lt", (n, k), float)
    pt = scratch_array(scratch, "pt", (n, k), np.int32) if preds else None
    bt = scratch_array(scratch, "bt", (n, k), float)
    cp = scratch_array(scratch, "cp", (k, core.c), np.int32)
    cols = np.arange(k)
    lt[sources, cols] = 0.0
    bt[sources, cols] = np.inf
    if pt is not None:
        pt[sources, cols] = -1
    # each source in a tree climbs to its attachment, one link per step, all at once;
    # (on, col): the nodes of each climb below the core and their sources' columns
    cur = sources.copy()
    active = np.flatnonzero(forest.depth[cur] > 0)
    on, col = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
    while len(active):
        x = cur[active]
        on.append(x)
        col.append(active)
        p = forest.parent[x]
        lt[p, active] = lt[x, active] + forest.latency[x]
        if pt is not None:
            pt[p, active] = forest.up[x]
        bt[p, active] = np.minimum(bt[x, active], forest.bw[x])
        cur[active] = p
        active = active[forest.depth[p] > 0]
    attach = forest.attach[sources]
    offset, low = lt[attach, cols], bt[attach, cols]
    climbed = None if pt is None else pt[attach, cols]  # the climb's last link
    start = core.local[attach]
    row = heads.row[attach]
    shared = np.flatnonzero(forest.depth[sources] > 0)
    shared = shared[row[shared] >= 0]
    ok = certified(heads.slack[row[shared]], heads.top[row[shared]], offset[shared], core.c)
    shared = shared[ok]
    forest.graph.work.shared += len(shared)
    if len(shared):
        along(forest, lt, bt, cp, shared, row[shared], heads, low[shared])
        heads.shared[sources[shared]] = True
    search = np.ones(k, dtype=bool)
    search[shared] = False
    search = np.flatnonzero(search)
    if len(search):
        at = search
        # a core source that trees hang off: its row, for the sources of those trees
        ask = (forest.depth[sources[at]] == 0) & forest.hangs[sources[at]]
        dist, res, bw, slack = forest.search.rows(start[at], offset[at], ask, low[at])
        into = block_index(core.nodes, at)
        lt[into] = dist.T
        bt[into] = bw.T
        cp[at] = res
        if ask.any():
            top = dist.max(axis=1)[ask] + core.w_max  # (no copy of the rows)
            heads.add(sources[at[ask]], res[ask], bw[ask], slack[ask], top)
    if pt is not None:
        pt[block_index(core.nodes, cols)] = cp.T
        pt[attach, cols] = climbed
    # the descents write whole rows, then put back the climbs' entries (a source below
    # x reaches x from below): the climbs' nodes by depth, their entries kept aside
    on_a, col_a = np.concatenate(on), np.concatenate(col)
    by_depth = np.argsort(forest.depth[on_a], kind="stable")
    on_a, col_a = on_a[by_depth], col_a[by_depth]
    cut = np.searchsorted(forest.depth[on_a], np.arange(1, len(forest.by_parent) + 2)).tolist()
    kept = [a[on_a, col_a] for a in (lt, bt) + (() if pt is None else (pt,))]
    step = max(1, forest.graph.tuning.descent_elements // k)  # rows per block: small temporaries
    for depth, level in enumerate(forest.by_parent):
        for lo in range(0, len(level), step):
            x = level[lo : lo + step]
            p = forest.parent[x]
            lt[x] = lt[p] + forest.latency[x][:, None]
            bt[x] = np.minimum(bt[p], forest.bw[x][:, None])
            if pt is not None:
                pt[x] = (forest.up[x] ^ 1)[:, None]
        lo, hi = cut[depth], cut[depth + 1]  # the climbs' entries at this depth
        if hi > lo:
            for a, v in zip((lt, bt, pt), kept, strict=False):
                a[on_a[lo:hi], col_a[lo:hi]] = v[lo:hi]
    return (lt, pt, bt, cp)


def along(
    forest: Forest,
    lt: np.ndarray,
    bt: np.ndarray,
    cp: np.ndarray,
    cols: np.ndarray,
    rows: np.ndarray,
    heads: Heads,
    low: np.ndarray,
) -> None:
    """Core entries of the columns ``cols`` (increasing; node-major, as in
    :func:`rows_t`) from their attachments' rows ``rows`` of ``heads``: the same
    predecessors (into ``cp``, source-major), bottlenecks no wider than the climb's
    ``low``, and latencies summed along the attachment's tree from the climb's latency
    (already in ``lt`` at the attachment), level by level (:func:`along_runs`).

    Columns come in *runs*: neighbouring columns of one row (the sources of one tree,
    side by side as :func:`batches` orders them).  Runs share nothing (each reads and
    writes its own columns only), so they are done a group at a time, each group of
    about ``Tuning.along_elements`` (column, core node) entries: the temporaries stay a
    few MB, memory already mapped, instead of tens of MB of fresh pages per batch
    (6 batches would fault in 430 MB on the random 5000-node platform).
    O(R c) work for R runs plus one gather and one scatter per (column, core node).
    """
    core = forest.core
    c = core.c
    step = max(1, forest.graph.tuning.along_elements // c)
    for lo in range(0, len(cols), step):  # blocks of columns: bounded temporaries
        at = slice(lo, lo + step)
        cp[cols[at]] = heads.pred[rows[at]]
        bw = heads.bw[rows[at]]
        np.minimum(bw, low[at, None], out=bw)
        bt[block_index(core.nodes, cols[at])] = bw.T
    if c == 1:
        return
    cut = np.flatnonzero((rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1] + 1)) + 1
    lead = np.concatenate(([0], cut))  # each run's first entry in cols
    width = np.diff(np.append(lead, len(cols)))
    # groups of whole runs of about step columns each (at least one run)
    ends = np.cumsum(width)
    work = forest.graph.work
    work.runs += len(lead)
    lo = 0
    while lo < len(lead):
        hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - width[lo] + step, "right")))
        along_runs(forest, lt, cols[lead[lo:hi]], rows[lead[lo:hi]], width[lo:hi], heads)
        work.run_groups += 1
        lo = hi


def along_runs(
    forest: Forest,
    lt: np.ndarray,
    first: np.ndarray,
    rows: np.ndarray,
    width: np.ndarray,
    heads: Heads,
) -> None:
    """The latencies of :func:`along` for runs of columns: run ``j`` is the columns
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
    parent = np.where(root, np.arange(c)[None, :], forest.tail_local[res])
    # each node's depth in its run's tree
    depth = counted(parent, (~root).astype(np.int32), forest.graph.tuning.along_rows).ravel()
    # the entries by depth (radix sort on 16 bits when it fits), then run, then node
    d = depth.astype(np.uint16 if c < 1 << 16 else np.int64)
    order = np.argsort(d, kind="stable")
    ends = np.cumsum(np.bincount(d, minlength=1)).tolist()
    # flat indices in lt of each entry and of its parent's (the run's first column),
    # and the link's latency (a start's entry: never written, level 0)
    node_k = forest.core.nodes * k
    at0 = (node_k[None, :] + first[:, None]).ravel()[order]
    src0 = (node_k[parent] + first[:, None]).ravel()[order]
    w0 = forest.weight_end[res.ravel()[order]]
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
