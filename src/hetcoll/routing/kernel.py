"""The kernel: the core with its chains contracted, where most searches run.

A search from a core node outside the chains runs on the kernel (fewer nodes: on the
benchmark's random 5000-node platform 1159 instead of 2721), but the kernel's latencies
are not the sums formed link after link, so only its shortest-path tree is taken, and
checked: :meth:`Kernel.rows`.
"""

from __future__ import annotations

import numpy as np

from .arrays import counted
from .chains import Chains
from .core import Core


class Kernel:
    """The core with its chains (:class:`Chains`) contracted: the *kernel nodes* (every
    core node not inside a chain) and, between them, the core's links and one link per
    chain and direction, of the chain's latencies' sum (the least of parallel ones).

    Searches on it are cheaper (on the random 5000-node platform 1159 nodes instead of
    2721) but their latencies are not the sums formed link after link:
    :meth:`rows` only takes their tree, and checks it.

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

    def __init__(self, core: Core, ch: Chains) -> None:
        from scipy.sparse import csr_array

        self.core = core
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
        if nk * nk <= core.tuning.kernel_table:
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

    def rows(
        self, start: np.ndarray, slack: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Rows of searches from latency 0 at kernel nodes ``start`` (local), found on the
        kernel: ``(dist, pred, slack, bandwidth, links, ok)`` as :meth:`.CoreRows.found` gives
        them, exact where ``ok`` (the other rows are to be searched).

        SciPy's Dijkstra on the kernel (chains contracted to one link each, of their
        latencies' sum: a close but not exact latency) gives a shortest-path tree of the
        kernel; each chain's inner nodes hang off its end nearer by those latencies (all
        of them off one end when the other end is reached through the chain).  Then the
        latencies are summed along that tree from the start, link after link
        (:meth:`.Core.sums`, with the bottlenecks; the links by pointer doubling on the kernel's
        tree, :func:`counted`), and the row is
        taken when no core link ``u -> v`` is *negative*, ``fl(dist[u] + w) < dist[v]``,
        and none but the tree's is tight (:meth:`.Core.checked`): then the tie rule has no tie
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

        kern, core = self, self.core
        k, c, nk = len(start), core.c, kern.nk
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
        depth = counted(up, kern.links[j], core.tuning.along_rows)
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
        dist, bw = core.sums(pred, links)
        ok, sl = core.checked(dist, slack)
        return dist, pred, sl, bw, links, ok
