"""Routes read link by link: without the matrices (from kept core rows) or from them.

Nothing is stored per path.  A route is walked from its destination back to where it
turns, and its latency summed from its source link after link (:func:`fold_into`): the
sum a search from the source forms, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import grown
from .forest import Forest
from .graph import LinkGraph


class KeptRows:
    """Core predecessor rows (global resources, core-local order, -1 at the start) kept
    for routes, some sources at a time: ``rows[row_of[s]]`` is source ``s``'s (sources
    sharing a row point to the same one); ``count`` rows are in use, the rest of
    ``rows`` is room to grow into."""

    def __init__(self) -> None:
        self.row_of: dict[int, int] = {}
        self.rows = np.empty((0, 0), dtype=np.int32)
        self.count = 0

    def prepare(self, forest: Forest, sources: Sequence[int]) -> None:
        """Compute the rows of the ``sources`` not known yet (:meth:`.Forest.core_rows`)."""
        todo = sorted({int(s) for s in sources} - set(self.row_of))
        if not todo:
            return
        rows, row_of, heads = forest.core_rows(np.array(todo, dtype=np.int64))
        first, need = self.count, self.count + len(rows)
        if need > len(self.rows):  # grow geometrically: rows may come a few at a time
            size = max(need, 2 * len(self.rows), 8)
            self.rows = grown(self.rows, size, first, rows.shape[1])
        self.rows[first:need] = rows
        self.count = need
        # an attachment's row is its own route's row (a core node, searched from 0)
        for a, j in zip(heads.tolist(), range(len(heads)), strict=True):
            self.row_of.setdefault(a, first + j)
        for x, j in zip(todo, row_of.tolist(), strict=True):
            self.row_of[x] = first + j

    def replace(self, rows: np.ndarray, count: int, row_of: Sequence[int]) -> None:
        """Keep ``rows`` (``count`` in use), source ``s``'s being ``row_of[s]``."""
        self.rows, self.count = rows, count
        self.row_of = dict(enumerate(row_of))


def walk(
    forest: Forest, kept: KeptRows, u: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes of the pairs ``(u[i], v[i])`` without the matrices, on a forest whose core
    has two nodes or more: ``(latency, resources, offsets)`` as :meth:`.Routes.pairs`
    returns them.

    A route climbs from ``u`` towards the core and descends to ``v``: within one tree,
    up to the nodes' lowest common ancestor and down; otherwise up to ``u``'s
    attachment, across the core by ``u``'s core row (computed on demand, see
    :meth:`KeptRows.prepare`), down from ``v``'s attachment.  Each distinct source climbs once
    (its pairs share the climb and its latencies); then all pairs walk at once, one
    link per step, up from ``v`` to where the route turns, and along the core; the
    latency continues from the climb's, link after link.  O(total route length).
    """
    f = forest
    g = f.graph
    total = len(u)
    au, av = f.attach[u], f.attach[v]
    cross = np.flatnonzero(au != av)
    kept.prepare(f, np.unique(u[cross]).tolist())
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
    rows = kept.rows
    row = np.array([kept.row_of[s] for s in u[cross].tolist()], dtype=np.int64)
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
    long_climb = g.tuning.long_climb
    short = (n_up > 0) & (n_up < long_climb)
    pair = np.repeat(np.flatnonzero(short), n_up[short])
    k = np.arange(len(pair)) - np.repeat(np.cumsum(n_up[short]) - n_up[short], n_up[short])
    resources[offsets[pair] + k] = climb_res[climb_at[which[pair]] + k]
    for i in np.flatnonzero(n_up >= long_climb).tolist():  # copied whole
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
    fold_into(lat, g.weight, resources, offsets[:-1] + n_up, offsets[1:])
    return lat, resources, offsets


def walk_matrix(
    g: LinkGraph, pred: np.ndarray, u: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Routes of the pairs ``(u[i], v[i])`` from the ``N x N`` predecessor matrix
    ``pred`` (each node's incoming resource on the route from the row's source, -1 at
    the source): ``(resources, offsets)``, each route walked back from its destination.
    O(total route length)."""
    total = len(u)
    # walk every route back from its destination at once, one link per step; a walk
    # reads its source's predecessor row through one flat index (row * n + node)
    flat_pred = pred.reshape(-1)
    hops = np.zeros(total, dtype=np.int64)
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    idx = np.flatnonzero(v != u)
    base = u[idx] * g.n
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
    return resources, offsets


def bottlenecks(g: LinkGraph, resources: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The least bandwidth on each route ``resources[offsets[i]:offsets[i + 1]]``
    (``inf`` for an empty one)."""
    bw = np.full(len(offsets) - 1, np.inf)
    nonempty = offsets[1:] > offsets[:-1]
    if nonempty.any():
        bw[nonempty] = np.minimum.reduceat(g.resource_bw[resources], offsets[:-1][nonempty])
    return bw


def fold_into(
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
