"""The core rows the forest asks for, each by the cheapest way that is exact.

A row (latencies, predecessors by the tie rule, bottlenecks, slack of one start) is, in
order of preference: read from the kept rows of chain ends (:class:`~.chains.EndRows`),
derived from its chain's ends' rows (:func:`~.chains.derive`), found on the kernel and
checked (:meth:`~.kernel.Kernel.rows`), or searched on the core (:meth:`.Core.search`).
Every way gives the search's row bit for bit; a shortcut that cannot prove it falls back
to the next.
"""

from __future__ import annotations

import numpy as np

from .arrays import rows_of
from .chains import Chains, EndRows, derive
from .core import Core
from .kernel import Kernel
from .tuning import Work


class CoreRows:
    """Rows of searches on ``core``, by :meth:`rows`: on the benchmark's random
    5000-node platform 1159 searches (on the kernel) instead of 2721 (on the core).

    ``batch``: starts per batch of searches (``Tuning.core_elements``); ``chains``,
    ``kernel`` (None when it would not make searches smaller) and ``kept`` (the kept
    rows of chain ends) are made on first use."""

    def __init__(self, core: Core, work: Work) -> None:
        self.core = core
        self.work = work
        c, edges, n = core.c, len(core.e_tail), len(core.local)
        self.batch = max(1, core.tuning.core_elements // max(1, edges + c)) if c > 1 else n
        self._chains: Chains | None = None
        self._kernel: Kernel | bool | None = None
        self._kept: EndRows | None = None

    @property
    def chains(self) -> Chains:
        """The core's chains."""
        if self._chains is None:
            self._chains = Chains(self.core)
        return self._chains

    @property
    def kernel(self) -> Kernel | None:
        """The core with its chains contracted, when that makes the searches smaller (at
        most ``Tuning.kernel_share`` of the core's nodes); None otherwise."""
        if self._kernel is None:
            c = self.core.c
            chains = self.chains if c >= 3 else None
            small = chains is not None and chains.count > 0
            if small:
                inner = int(np.count_nonzero(chains.at >= 0))
                small = c - inner <= self.core.tuning.kernel_share * c
            self._kernel = Kernel(self.core, chains) if small else False
        return self._kernel or None

    @property
    def kept(self) -> EndRows:
        """The kept rows of chain ends."""
        if self._kept is None:
            self._kept = EndRows(self.core)
        return self._kept

    def rows(
        self, start: np.ndarray, offset: np.ndarray, ask: np.ndarray, base: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """The rows of searches from core nodes ``start[i]`` (local) whose latency is
        ``offset[i]``: ``(dist, resources, bandwidth, slack)``, ``k x c`` but ``slack``:
        :meth:`.Core.search`'s latencies and slack (where ``ask[i]``, else ``inf``), the
        predecessors as global resources (:meth:`.Core.resources`) and the bottlenecks
        counting ``base[i]`` (:meth:`.Core.bottleneck`; none when ``base`` is None).

        The same rows as searching each start, with fewer searches: a start from latency 0
        at an inner node of a chain (:class:`Chains`) has its row derived from its
        chain's two ends' rows when that provably gives the search's row (:func:`derive`;
        it is searched otherwise), and the rows of chain ends searched from latency 0 are
        kept (:class:`EndRows`) for later calls.  Ends are searched for a derivation only
        when that does not add searches (at most one per derived row).  When every core
        node is asked for, only the nodes outside chains are searched.
        """
        core = self.core
        k, c = len(start), core.c
        dist = np.empty((k, c))
        res = np.empty((k, c), dtype=np.int32)  # as the kept rows and the callers keep them
        bw = None if base is None else np.empty((k, c))
        low = np.full(k, np.inf)
        base_ = np.full(k, np.inf) if base is None else base
        out = (dist, res, bw, low)
        if c < 3:
            self._searched(start, offset, ask, base_, np.arange(k), out, keep=False)
            return out
        chains, kept = self.chains, self.kept
        zero = offset == 0
        slot = np.where(zero, kept.slot[start], -1)
        hit = np.flatnonzero(slot >= 0)
        if len(hit):
            self._from_kept(slot[hit], ask[hit], base_[hit], hit, out)
        todo = np.ones(k, dtype=bool)
        todo[hit] = False
        to_derive = todo & zero & (chains.at[start] >= 0)
        plain = np.flatnonzero(todo & ~to_derive)
        # chain ends to search for the derivations: those neither kept nor searched anyway
        own = np.unique(start[plain[zero[plain] & chains.is_end[start[plain]]]])
        keep_own = own[: kept.room()]
        d = start[to_derive]
        need = np.unique(chains.node[np.concatenate([chains.end_a[d], chains.end_b[d]])])
        need = need[kept.slot[need] < 0]
        extra = np.setdiff1d(need, keep_own)
        if len(extra) > min(len(d), kept.room() - len(keep_own)):
            # searching them would cost more than it saves: derive only from what is there
            there = np.zeros(c, dtype=bool)
            there[kept.slot >= 0] = True
            there[keep_own] = True
            ok = there[chains.node[chains.end_a[d]]] & there[chains.node[chains.end_b[d]]]
            plain = np.union1d(plain, np.flatnonzero(to_derive)[~ok])
            to_derive[np.flatnonzero(to_derive)[~ok]] = False
            extra = extra[:0]
        self._searched(start, offset, ask, base_, plain, out, keep=True, extra=extra)
        d = np.flatnonzero(to_derive)
        ends = np.concatenate([chains.end_a[start[d]], chains.end_b[start[d]]])
        there = (kept.slot[chains.node[ends]] >= 0).reshape(2, len(d)).all(axis=0)
        failed = d[~there]
        d = d[there]
        if len(d):
            ok = derive(core, chains, kept, start[d], ask[d], base_[d], d, out)
            self.work.derived += int(np.count_nonzero(ok))
            failed = np.concatenate([failed, d[~ok]])
        self._searched(start, offset, ask, base_, failed, out, keep=False)
        return out

    def _searched(self, start, offset, ask, base, rows, out, keep: bool, extra=None) -> None:
        """Search the starts ``rows`` into ``out`` (as :meth:`rows` returns them); with
        ``keep``, keep the rows of chain ends searched from latency 0, and search and keep
        the chain ends ``extra`` too."""
        core = self.core
        dist, res, bw, low = out
        nodes, offs, asked = start[rows], offset[rows], ask[rows]
        kept = self.kept if keep else None
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
            d, edge, sl, b, links = self.found(
                s, o, asked[at] | store, bw is not None or store.any(), store.any()
            )
            if store.any():
                store &= links.max(axis=1) < 1 << 16
            r = core.resources(edge)
            mine = rows_of(at < m)  # (a slice when whole: no copies)
            i = rows[at[mine]]
            dist[i] = d[mine]
            res[i] = r[mine]
            if bw is not None:
                bw[i] = np.minimum(b[mine], base[i][:, None])
            low[i] = np.where(asked[at[mine]], sl[mine], np.inf)
            if store.any():
                j = rows_of(store)
                kept.add(s[j], d[j], edge[j], b[j], sl[j], links[j], core.w_max)

    def found(
        self, start: np.ndarray, offset: np.ndarray, slack: np.ndarray, bw: bool, depth: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """:meth:`.Core.search` and :meth:`.Core.bottleneck` (from ``inf``) of the starts:
        ``(dist, pred, slack, bandwidth, links)``, the bottlenecks only with ``bw`` or
        ``depth``, the links only with ``depth``.  Each start counts as a search
        (``Work.searched``).

        Starts from latency 0 at kernel nodes (:class:`.Kernel`) are searched on the
        kernel and their rows verified (:meth:`.Kernel.rows`); the others, and those that
        fail the verification, by :meth:`.Core.search`.
        """
        core = self.core
        self.work.searched += len(start)
        k, c = len(start), core.c
        kern = self.kernel
        fast = np.zeros(k, dtype=bool) if kern is None else (offset == 0) & kern.on[start]
        if fast.all():  # (no copies)
            d, edge, sl, b, links, ok = kern.rows(start, slack)
            slow = np.flatnonzero(~ok)
        else:
            d, edge = np.empty((k, c)), np.empty((k, c), dtype=np.int64)
            sl = np.empty(k)
            b = np.empty((k, c)) if bw or depth else None
            links = np.empty((k, c), dtype=np.int32) if depth else None
            f = np.flatnonzero(fast)
            ok = np.zeros(k, dtype=bool)
            if len(f):
                got = kern.rows(start[f], slack[f])
                ok[f] = got[5]
                g = f[got[5]]
                h = rows_of(got[5])
                d[g], edge[g], sl[g] = got[0][h], got[1][h], got[2][h]
                if b is not None:
                    b[g] = got[3][h]
                if links is not None:
                    links[g] = got[4][h]
            slow = np.flatnonzero(~ok)
        if len(slow):
            s = start[slow]
            d[slow], e, sl[slow] = core.search(s, offset[slow], slack[slow])
            edge[slow] = e
            if depth:
                b[slow], links[slow] = core.bottleneck(s, e, np.full(len(s), np.inf), depth=True)
            elif bw:
                b[slow] = core.bottleneck(s, e, np.full(len(s), np.inf))
        return d, edge, sl, (b if bw or depth else None), (links if depth else None)

    def _from_kept(self, slot, ask, base, rows, out) -> None:
        """Kept rows ``slot`` into the rows ``rows`` of ``out``."""
        dist, res, bw, low = out
        kept = self.kept
        dist[rows] = kept.latencies(slot, np.zeros(len(slot)))  # the search's sums
        res[rows] = np.take(self.core.res_of, kept.edge[slot])
        if bw is not None:
            bw[rows] = np.minimum(kept.bandwidths(slot), base[:, None])
        low[rows] = np.where(ask, kept.slack[slot], np.inf)
