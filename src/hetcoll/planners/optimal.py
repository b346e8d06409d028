"""Exact minimum-latency broadcast and multicast trees under the ``tini`` model
(Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 5), by dynamic programming over cost classes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._common import prepare, tree_schedule
from ._registry import Option, register

__all__ = ["optimal", "optimal_time", "optimal_times", "DEFAULT_MAX_PAIRS", "DEFAULT_MAX_STATES"]

#: Default cap on the (multiset, sub-multiset) evaluations the programme makes: 32 members in
#: 8 classes of 4 (the worst case of that size) make a few 1e7, a second or two.
DEFAULT_MAX_PAIRS = 1_000_000_000

#: Default cap on the programme's table entries (one per table and count vector; about 16
#: bytes each): 32 members in 8 classes of 4 need 2.8e6.
DEFAULT_MAX_STATES = 10_000_000

#: Below this many pairs the full recurrence is as fast as settling entries by the bounds.
_FULL_IS_CHEAP = 2_000_000

#: Pairs handled per numpy batch: bounds the working memory to a few hundred MB.
_BLOCK_PAIRS = 1 << 21


@register(
    "optimal",
    collectives=("bcast", "multicast"),
    paper="Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 5 (recurrence) and Lemma 2",
    complexity=(
        "O(T K prod_k (n_k+1)) for n_k members of cost class k (T tables), plus the "
        "recurrence in full on the few count vectors its lower bounds do not settle "
        "(worst case O(prod_k (n_k+1)(n_k+2)/2); 2^N states if all costs differ)"
    ),
    summary="exact minimum-latency tree by dynamic programming over cost classes",
    models=("tini",),
    exact_models=("tini",),
    options=("max_pairs", "max_states"),
    max_members=24,
    kind="exact",
)
def optimal(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    max_pairs: Annotated[int, Option(least=0)] = DEFAULT_MAX_PAIRS,
    max_states: Annotated[int, Option(least=0)] = DEFAULT_MAX_STATES,
) -> Schedule:
    """The minimum-latency broadcast (or multicast) tree under sender-only costs.

    Under the ``tini`` model a node ``i`` is busy ``c_i = t_ini_i + m t_byte_i`` per send of
    an ``m``-byte message and the receiver may forward it at once.  Banikazemi et al. give the
    recurrence for the latency ``L(i, A)`` of the best tree in which ``i`` (holding the
    message) reaches the set ``A``::

        L(i, A) = min over j in A, B + C = A - {j} of  c_i + max(L(i, B), L(j, C))

    (``i`` first sends to ``j``, then ``j`` covers ``C`` while ``i`` goes on with ``B``),
    which costs O(N^2 4^N).  This implementation solves the same recurrence exactly, faster:

    - nodes of equal cost are interchangeable, so a set ``A`` becomes the vector of its
      counts per cost class, mixed-radix encoded so that ``index(A - D) = index(A) - index(D)``;
    - with ``S(D)`` the best latency of a subtree covering ``D`` including its own root,
      ``L(i, A) = c_i + min over nonempty D <= A of max(L(i, A - D), S(D))``;
    - by Lemma 2 (some optimal tree has every non-source node no slower than its children)
      the root of ``D`` is a node of its cheapest class, and a non-source node of class ``k``
      only covers classes ``>= k``;
    - most count vectors are settled without the minimum over every ``D``: a lower bound
      from smaller or faster vectors (below) equals the best of a few candidate ``D`` taken
      from those vectors' own solutions; the others get the minimum over every ``D``;
    - vectors are taken in batches of equal ``sum_k (k + 1) a_k``, each batch at once with
      numpy; the tree is then rebuilt top-down, recomputing the choice only for the states
      on the solution.

    Among equally fast choices the sender's next subtree is the one with the most members of
    the cheapest classes, and the members of a class are dealt out in rank order by the time
    they receive, so the result is deterministic.

    Parameters
    ----------
    platform, root, members, model, nbytes
        As for every planner (:func:`hetcoll.plan`).  The model must have sender-only costs
        (``tini``).
    segment_size : None
        Must be None: the recurrence is for unsegmented messages.
    max_pairs : int
        Give up after this many (multiset, sub-multiset) evaluations (default 1e9, about a
        minute at worst; 32 members in 8 classes of 4 make a few 1e7).
    max_states : int
        Refuse instances whose tables hold more than this many entries, one per table and
        count vector, about 16 bytes each (default 1e7: 160 MB).

    Returns
    -------
    Schedule
        The ordered tree: each sender's children in the order it sends to them.  Its
        simulated latency is the optimum.

    Raises
    ------
    PlannerError
        Under a model whose costs are not the sender's alone, for a segmented message, for
        an instance beyond ``max_states``, or when ``max_pairs`` evaluations did not suffice.

    Notes
    -----
    With ``n_k`` non-source members in class ``k`` (``K`` classes, cheapest first) the
    programme has ``prod_k (n_k + 1)`` count vectors and ``T <= K + 1`` tables (one per
    class, plus the source's unless it is in the cheapest class).  Two exact lower bounds
    settle most entries ``L(i, A)``, in floating point as well as in real numbers (each
    maps an optimal Lemma-2 tree for ``A`` to one for a smaller vector, node by node no
    slower, and the recurrence's arithmetic is monotone):

    - removing a node of the slowest class present in ``A`` never slows the tree (a leaf of
      that class exists and can go);
    - making a node of ``A`` faster (class ``i`` to ``j < i``) never slows it (relabel the
      nodes on the path to it, each taking its predecessor's class).

    When the largest of those bounds equals ``c_i + max(L(i, A - D), S(D))`` for a candidate
    ``D`` (the neighbours' chosen ``D``, with the moved node in or out of it) that is the
    optimum; otherwise every ``D`` is tried.  32 members in 8 classes of 4 need about 3e7
    evaluations (the full recurrence: 3.5e9); ``benchmarks/simulated/bench_optimal.py`` has the
    table.  When all ``N`` costs differ the programme has ``2^N`` states (19 members within
    the default ``max_states``).  ``tests/test_planners_optimal.py`` checks the tables entry by
    entry against the full recurrence, and Lemma 2 against the lemma-free recurrence.

    References
    ----------
    M. Banikazemi, V. Moorthy, D. K. Panda, "Efficient Collective Communication on
    Heterogeneous Networks of Workstations", ICPP 1998, Sec. 5 (recurrence, Lemmas 1-2).

    Examples
    --------
    Fig. 1: nodes 1 and 6 take 100 µs per send, the six others 300 µs; the optimum is 400 µs.

    >>> from hetcoll import load_platform, simulate
    >>> p = load_platform("fig1")
    >>> s = optimal(p, "1")
    >>> round(simulate(p, s).makespan * 1e6, 6)
    400.0
    >>> s.tree.children
    {'1': ('6', '2', '4', '7'), '6': ('3', '5', '8')}
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    if not req.bound.sender_only:
        raise PlannerError(
            f"planner 'optimal' is exact only under the 'tini' model (sender-only costs), "
            f"not {req.model.name!r}; plan with model='tini' or use 'fnf'"
        )
    if segment_size is not None:
        raise PlannerError(
            f"planner 'optimal' plans unsegmented messages only, got segment_size={segment_size}"
        )
    cost = req.node_cost()
    others = req.others()
    dp = _ClassDP.of(
        float(cost[req.root]),
        [float(cost[m]) for m in others],
        max_pairs=max_pairs,
        max_states=max_states,
    )
    edges = dp.edges(req.root, others)
    return tree_schedule(req, "optimal", edges)


def optimal_time(
    root_cost: float,
    other_costs: Sequence[float],
    *,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    max_states: int = DEFAULT_MAX_STATES,
) -> float:
    """The optimal latency (seconds) for a source of cost ``root_cost`` and the others' costs.

    The value of :func:`optimal`'s dynamic programme without building a schedule (for
    experiments that only need the number).

    >>> optimal_time(100e-6, [100e-6] + [300e-6] * 6) * 1e6
    400.0
    """
    return _ClassDP.of(
        float(root_cost),
        [float(c) for c in other_costs],
        max_pairs=max_pairs,
        max_states=max_states,
    ).value


def optimal_times(
    values: Sequence[float],
    roots: Sequence[int] | np.ndarray,
    counts: Sequence[Sequence[int]] | np.ndarray,
    *,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    max_states: int = DEFAULT_MAX_STATES,
) -> np.ndarray:
    """The optimal latencies of many instances over the same cost classes, at once.

    Instance ``i`` has a source of cost ``values[roots[i]]`` and ``counts[i][k]`` other
    participants of cost ``values[k]``.  One programme over every count vector up to the
    largest instance solves them all; each value equals :func:`optimal_time` of the instance
    bit for bit (the same recurrence with the same arithmetic: a class no instance member
    has changes no candidate).

    Parameters
    ----------
    values : sequence of float
        The distinct cost classes, in seconds.
    roots : sequence of int
        Per instance, the source's class (an index into ``values``).
    counts : array of int, shape (instances, len(values))
        Per instance, how many other participants each class has.

    Returns
    -------
    numpy.ndarray
        The optimal latency of each instance, in seconds.

    Examples
    --------
    Banikazemi et al.'s Fig. 1 (source 100 µs; one other at 100 µs, six at 300 µs) and the
    same with the source at 300 µs:

    >>> times = optimal_times([100e-6, 300e-6], [0, 1], [[1, 6], [2, 5]])
    >>> (times * 1e6).round(6).tolist()
    [400.0, 600.0]
    """
    vals = np.asarray(values, dtype=float)
    _check_costs(vals)
    if vals.ndim != 1 or len(np.unique(vals)) != len(vals):
        raise PlannerError("optimal_times: values must be distinct cost classes")
    order = np.argsort(vals, kind="stable")
    rank_of = np.empty(len(vals), dtype=np.int64)
    rank_of[order] = np.arange(len(vals))
    root_idx = rank_of[np.asarray(roots, dtype=np.int64)]
    cnt = np.asarray(counts, dtype=np.int64).reshape(len(root_idx), len(vals))[:, order]
    if np.any(cnt < 0):
        raise PlannerError("optimal_times: counts must be >= 0")
    if len(root_idx) == 0:
        return np.empty(0)
    sorted_vals = vals[order]
    total = int(cnt.sum(axis=1).max())
    dp = _ClassDP(
        sorted_vals,
        np.full(len(vals), total),
        [float(v) for v in sorted_vals[np.unique(root_idx)]],
        total=total,
        max_pairs=max_pairs,
        max_states=max_states,
        what=f"{len(root_idx)} instances of up to {total + 1} participants",
    )
    out = np.empty(len(root_idx))
    for r in np.unique(root_idx):
        mine = root_idx == r
        out[mine] = dp.latency(float(sorted_vals[r]), cnt[mine])
    return out


def _check_costs(costs: np.ndarray) -> None:
    if not np.all(np.isfinite(costs) & (costs >= 0)):
        raise PlannerError(f"planner 'optimal': costs must be finite and >= 0, got {costs}")


def _check_limit(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise PlannerError(f"{name}: must be a whole number, got {value!r}")
    if value < 0:
        raise PlannerError(f"{name}: must be >= 0, got {value}")
    return int(value)


class _ClassDP:
    """The dynamic programme over count vectors of cost classes (see :func:`optimal`).

    ``values`` are the classes' costs, cheapest first; the cheapest has the largest
    mixed-radix stride, so the vectors with no member of a class below ``k`` (the states of
    class ``k``'s table under Lemma 2) are exactly the codes below ``size[k]``.  The states
    are the count vectors up to ``counts`` (a box: one instance) or, with ``total``, those
    of at most ``total`` members (many instances, :func:`optimal_times`); arrays are indexed
    by the state's position among the sorted codes (its code itself in a box).

    ``lemma2=False`` drops Lemma 2 (every table over every state, the subtree root of ``D``
    any class of ``D``) and ``certify=False`` the lower bounds: every entry then takes the
    minimum over every ``D``, as the recurrence is written (for checking both);
    ``certify=None`` uses the bounds where they save time (the full recurrence needs more
    than :data:`_FULL_IS_CHEAP` pairs), ``True`` always.
    """

    def __init__(
        self,
        values: np.ndarray,
        counts: np.ndarray,
        root_costs: Sequence[float],
        *,
        total: int | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        max_states: int = DEFAULT_MAX_STATES,
        lemma2: bool = True,
        certify: bool | None = None,
        what: str = "",
    ) -> None:
        max_pairs = _check_limit(max_pairs, "max_pairs")
        max_states = _check_limit(max_states, "max_states")
        self.values = np.asarray(values, dtype=float)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.lemma2 = lemma2
        self.max_pairs = max_pairs
        self.what = what
        self.root_costs = [float(c) for c in root_costs]
        tables, self.root_table = _table_specs(self.values, self.root_costs, lemma2)
        self.table_cost = np.array([c for c, _ in tables], dtype=float)
        self.table_lo = np.array([lo for _, lo in tables], dtype=np.int64)
        n_states, cells = _state_counts(self.counts, total, self.table_lo)
        if cells > max_states:
            raise PlannerError(
                f"planner 'optimal': {what} need tables of {cells:.3g} entries (about "
                f"{16 * cells / 1e6:.0f} MB), more than max_states={max_states:.3g}; use 'fnf' "
                "(near-optimal) or raise max_states"
            )
        full = _work(self.counts, tables)
        # the bounds' proofs rely on Lemma-2 trees; below about 2e6 pairs the full recurrence
        # is as fast as the bounds' candidates (both are exact)
        auto = full > _FULL_IS_CHEAP
        self.certify = lemma2 and (auto if certify is None else certify)
        least = cells if self.certify else full
        if least > max_pairs:
            raise PlannerError(
                f"planner 'optimal': {what} need at least {least:.3g} (multiset, "
                f"sub-multiset) evaluations, more than max_pairs={max_pairs:.3g}; use 'fnf' "
                "(near-optimal) or raise max_pairs"
            )
        # stride[k] = prod_{l > k} (n_l + 1); size[k] = prod_{l >= k} (n_l + 1)
        size = np.ones(len(self.values) + 1, dtype=np.int64)
        for j in range(len(self.values) - 1, -1, -1):
            size[j] = size[j + 1] * (self.counts[j] + 1)
        self.stride = size[1:]
        self.size = size
        self.box = total is None
        self.codes = _state_codes(self.counts, self.stride, total)
        self.n_states = n_states
        self.evaluations = 0
        self._solve()

    @classmethod
    def of(cls, root_cost: float, other_costs: Sequence[float], **options: Any) -> _ClassDP:
        """The programme of one instance: a source and the other participants' costs."""
        costs = np.asarray(other_costs, dtype=float)
        _check_costs(np.append(costs, root_cost))
        values, member_class, counts = np.unique(costs, return_inverse=True, return_counts=True)
        what = f"{len(costs) + 1} participants in {len(values)} cost classes"
        dp = cls(values, counts, [root_cost], what=what, **options)
        dp.member_class = member_class
        return dp

    @property
    def value(self) -> float:
        """The optimal latency of the instance (:meth:`of`): every member, from its source."""
        return float(self.L[self.root_table[0], self.n_states - 1])

    def latency(self, root_cost: float, counts: np.ndarray) -> np.ndarray:
        """The optimal latencies from a source of ``root_cost`` to each row of ``counts``."""
        table = self.root_table[self.root_costs.index(root_cost)]
        return self.L[table, self._rank(np.asarray(counts) @ self.stride)]

    @staticmethod
    def work_for(root_cost: float, other_costs: Sequence[float], lemma2: bool = True) -> int:
        """The (multiset, sub-multiset) evaluations of the full recurrence (the worst case)."""
        values, counts = np.unique(np.asarray(other_costs, dtype=float), return_counts=True)
        return _work(counts, _table_specs(values, [float(root_cost)], lemma2)[0])

    def _rank(self, codes: np.ndarray) -> np.ndarray:
        """Array positions of states given by their codes (the code itself in a box)."""
        return codes if self.box else np.searchsorted(self.codes, codes)

    # -- forward pass ---------------------------------------------------------------------

    def _solve(self) -> None:
        n_states, k_count = self.n_states, len(self.values)
        digits = (self.codes[:, None] // self.stride) % (self.counts + 1)  # (states, classes)
        self.digits = digits
        self.L = np.zeros((len(self.table_cost), n_states))  # no class: the source alone
        self.S = np.full(n_states, np.inf)
        if k_count == 0:
            return
        present = digits > 0
        self.first = np.argmax(present, axis=1)  # cheapest class present
        self.last = k_count - 1 - np.argmax(present[:, ::-1], axis=1)  # dearest present
        self.notfull = digits < self.counts
        # batches of states that need none of each other: every dependency (A - D, S(A) from
        # A - e_k, and the bounds' smaller and faster vectors) lowers sum_k (k + 1) a_k;
        # without the bounds, the level sum_k a_k does
        weight = np.arange(1, k_count + 1) if self.certify else np.ones(k_count)
        depth = digits @ weight.astype(np.int64)
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
        n_tables = len(self.table_cost)
        self.L[:, 1:] = np.inf
        # S[0] = inf makes the empty D never chosen
        self.arg = np.zeros((n_tables, n_states), dtype=np.int64)  # chosen D (a code)
        self.limit = self._rank(self.size[self.table_lo])  # table t's states: below limit[t]
        for b in range(1, len(bounds) - 1):
            states = order[bounds[b] : bounds[b + 1]]
            self.S[states] = self._subtree_best(states)
            inside = states[None, :] < self.limit[:, None]  # (table, state) in its domain
            tables, at = np.nonzero(inside)
            cells = states[at]
            if self.certify:
                cells, tables = self._settle(cells, tables)
            self._enumerate(tables, cells)
            if self.evaluations > self.max_pairs:
                raise PlannerError(
                    f"planner 'optimal': {self.what} took more than max_pairs="
                    f"{self.max_pairs:.3g} (multiset, sub-multiset) evaluations; use 'fnf' "
                    "(near-optimal) or raise max_pairs"
                )

    def _settle(self, cells: np.ndarray, tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Settle the entries ``(tables[i], cells[i])`` whose lower bound a candidate meets;
        return the others (still to be minimised over every ``D``)."""
        if len(cells) == 0:
            return cells, tables
        code = self.codes[cells]
        d = self.digits[cells]
        lo = self.table_lo[tables]
        rows = np.arange(len(cells))
        bound = self._entry(tables, code - self.stride[self.last[cells]])
        cands = []
        nearest = np.full(len(cells), -1)  # the dearest class below i with room for one more
        for i in range(len(self.values)):
            has = d[:, i] > 0
            # the vector with one node of class i made faster (class nearest[i])
            up = has & (nearest >= 0)
            j = np.maximum(nearest, 0)
            faster = np.where(up, code - self.stride[i] + self.stride[j], 0)
            bound = np.where(up, np.maximum(bound, self._entry(tables, faster)), bound)
            chosen = self._chosen(tables, faster)
            dj = (chosen // self.stride[j]) % (self.counts[j] + 1)
            cands.append(np.where(up & (dj > 0), chosen - self.stride[j] + self.stride[i], 0))
            cands.append(np.where(up & (dj <= d[rows, j]), chosen, 0))
            # the vector with one node of class i fewer: its D, with the node in D or not
            chosen = self._chosen(tables, np.where(has, code - self.stride[i], 0))
            cands.append(np.where(has, chosen, 0))
            cands.append(np.where(has, chosen + self.stride[i], 0))
            nearest = np.where(self.notfull[cells, i] & (i >= lo), i, nearest)
        cand = np.stack(cands, axis=1)  # invalid candidates are 0: S[0] = inf
        vals = np.maximum(
            self.L[tables[:, None], self._rank(code[:, None] - cand)], self.S[self._rank(cand)]
        )
        self.evaluations += vals.size
        best = np.argmin(vals, axis=1)
        value = self.table_cost[tables] + vals[rows, best]
        self.L[tables, cells] = value
        self.arg[tables, cells] = cand[rows, best]
        open_ = value != bound
        return cells[open_], tables[open_]

    def _entry(self, tables: np.ndarray, codes: np.ndarray) -> np.ndarray:
        return self.L[tables, self._rank(codes)]

    def _chosen(self, tables: np.ndarray, codes: np.ndarray) -> np.ndarray:
        return self.arg[tables, self._rank(codes)]

    def _enumerate(self, tables: np.ndarray, cells: np.ndarray) -> None:
        """Each entry ``L[tables[i], cells[i]]`` by the minimum over every ``D``, with its
        ``D``."""
        per_cell = np.prod(self.digits[cells] + 1, axis=1)
        for lo, hi in _blocks(per_cell, _BLOCK_PAIRS):
            block, table = cells[lo:hi], tables[lo:hi]
            rows, sub = _sub_multisets(self.digits[block], self.stride)
            offsets = np.zeros(len(block), dtype=np.int64)
            np.cumsum(per_cell[lo : hi - 1], out=offsets[1:])
            v = self.L[table[rows], self._rank(self.codes[block][rows] - sub)]
            np.maximum(v, self.S[self._rank(sub)], out=v)
            self.evaluations += len(sub)
            best = np.minimum.reduceat(v, offsets)
            self.L[table, block] = self.table_cost[table] + best
            if self.certify:  # the neighbours' candidates need the chosen D
                at = np.flatnonzero(v == np.repeat(best, per_cell[lo:hi]))
                first = np.unique(rows[at], return_index=True)[1]
                self.arg[table, block] = sub[at[first]]

    def _subtree_candidates(self, states: np.ndarray) -> np.ndarray:
        """``L(k, A - e_k)`` per state ``A`` and class ``k`` (inf where ``A`` has no ``k``)."""
        present = self.digits[states] > 0
        below = np.where(present, self.codes[states][:, None] - self.stride, 0)
        cand = self.L[np.arange(len(self.values)), self._rank(below)]
        return np.where(present, cand, np.inf)

    def _subtree_best(self, states: np.ndarray) -> np.ndarray:
        if self.lemma2:  # the subtree root is from the cheapest class present
            k = self.first[states]
            return self.L[k, self._rank(self.codes[states] - self.stride[k])]
        return self._subtree_candidates(states).min(axis=1)

    def _subtree_root(self, state: int) -> int:
        if self.lemma2:
            return int(self.first[state])
        return int(np.argmin(self._subtree_candidates(np.array([state]))[0]))

    # -- reconstruction -------------------------------------------------------------------

    def edges(self, root: int, others: Sequence[int]) -> list[tuple[int, int]]:
        """The optimal tree as ``(parent, child)`` node pairs in each parent's send order.

        ``others[i]`` is the node whose cost was ``other_costs[i]`` (:meth:`of`).  The tree
        is first built on abstract nodes (class, receive time), then the members of each
        class are dealt out in rank order to its abstract nodes in order of receive time.
        """
        # abstract node: (class or -1 for the source, receive time); edges between their ids
        klass = [-1]
        recv = [0.0]
        abstract_edges = []
        stack = [(0, self.root_table[0], self.n_states - 1)]
        while stack:
            node, table, state = stack.pop()
            t, cost = recv[node], self.table_cost[table]
            pending = []
            while state:
                sub = self._best_split(table, state)
                k = self._subtree_root(sub)
                t += cost
                child = len(klass)
                klass.append(k)
                recv.append(t)
                abstract_edges.append((node, child))
                pending.append((child, k, sub - int(self.stride[k])))
                state -= sub
            stack.extend(reversed(pending))
        by_class: dict[int, list[int]] = {}
        for node, c in zip(others, self.member_class.tolist(), strict=True):
            by_class.setdefault(c, []).append(node)
        for nodes in by_class.values():
            nodes.sort(reverse=True)  # pop() hands out the lowest rank first
        node_of = {0: root}
        for a in sorted(range(1, len(klass)), key=lambda a: (recv[a], a)):
            node_of[a] = by_class[klass[a]].pop()
        return [(node_of[p], node_of[c]) for p, c in abstract_edges]

    def _best_split(self, table: int, state: int) -> int:
        """The sub-multiset ``D`` attaining ``L[table, state]`` (a box's state: its code):
        recomputed with the forward pass's arithmetic; among ties the last in index order,
        the one with most of the cheapest classes (so fast nodes are reached first, as in
        FNF)."""
        _, sub = _sub_multisets(self.digits[[state]], self.stride)
        vals = np.maximum(self.L[table, state - sub], self.S[sub])
        return int(sub[len(sub) - 1 - int(np.argmin(vals[::-1]))])


def _table_specs(
    values: np.ndarray, root_costs: Sequence[float], lemma2: bool
) -> tuple[list[tuple[float, int]], list[int]]:
    """``(cost, lowest class covered)`` per table: one per class, then one per source cost
    that no class table serves; and each source cost's table number."""
    specs = [(float(v), j if lemma2 else 0) for j, v in enumerate(values)]
    roots = []
    for cost in root_costs:
        match = [j for j, (c, lo) in enumerate(specs) if c == cost and lo == 0]
        if not match:
            specs.append((float(cost), 0))
            match = [len(specs) - 1]
        roots.append(match[0])
    return specs, roots


def _work(counts: np.ndarray, tables: list[tuple[float, int]]) -> int:
    """Pairs ``D <= A`` over the states of each table: ``prod_k (n_k+1)(n_k+2)/2`` per table
    over the classes it covers (Python integers: no overflow on hopeless instances)."""
    pairs = [(int(n) + 1) * (int(n) + 2) // 2 for n in counts]
    return sum(math.prod(pairs[lo:]) for _, lo in tables)


def _state_counts(counts: np.ndarray, total: int | None, table_lo: np.ndarray) -> tuple[int, int]:
    """The number of states and of table entries (Python integers, before any allocation):
    count vectors up to ``counts`` (with at most ``total`` members), per table over the
    classes it covers."""
    sizes = [int(n) + 1 for n in counts]
    suffix = []  # suffix[k]: states using only classes >= k
    if total is None:
        for k in range(len(sizes) + 1):
            suffix.append(math.prod(sizes[k:]))
    else:
        for k in range(len(sizes) + 1):
            ways = [1] + [0] * total  # ways[s]: vectors over classes >= k with s members
            for n in sizes[k:]:
                ways = [
                    sum(ways[s - x] for x in range(min(n - 1, s) + 1)) for s in range(total + 1)
                ]
            suffix.append(sum(ways))
    return suffix[0], sum(suffix[int(lo)] for lo in table_lo)


def _state_codes(counts: np.ndarray, stride: np.ndarray, total: int | None) -> np.ndarray:
    """Sorted codes of the states: every vector up to ``counts`` (a box: 0, 1, ...), or
    those with at most ``total`` members."""
    if total is None:
        return np.arange(int(np.prod(counts + 1)), dtype=np.int64)
    codes = np.zeros(1, dtype=np.int64)
    used = np.zeros(1, dtype=np.int64)
    for k, n in enumerate(counts):
        room = np.minimum(n, total - used)  # how many of class k each vector can still take
        each = room + 1
        ramp = np.arange(int(each.sum())) - np.repeat(np.cumsum(each) - each, each)
        codes = np.repeat(codes, each) + ramp * stride[k]
        used = np.repeat(used, each) + ramp
    return np.sort(codes)


def _blocks(per_state: np.ndarray, budget: int) -> Iterable[tuple[int, int]]:
    """Split consecutive states into runs of at most ``budget`` pairs (at least one state)."""
    ends = np.cumsum(per_state)
    lo, done = 0, 0
    n = len(per_state)
    while lo < n:
        hi = int(np.searchsorted(ends, done + budget, side="right"))
        hi = max(hi, lo + 1)
        yield lo, hi
        done = int(ends[hi - 1])
        lo = hi


def _sub_multisets(digits: np.ndarray, stride: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``D <= A`` for each row ``A`` of ``digits``: ``(row of A, code of D)``.

    Grouped by row in order, and within a row in mixed-radix index order of ``D`` (the empty
    ``D``, code 0, first): the cartesian product of ``range(a_k + 1)``, built one class at a
    time with ``np.repeat``.
    """
    n = len(digits)
    sub = np.zeros(n, dtype=np.int64)
    group = np.ones(n, dtype=np.int64)  # elements per row so far
    counts = np.asfortranarray(digits + 1)  # contiguous columns
    for k in range(digits.shape[1]):
        cnt = counts[:, k]
        if np.all(cnt == 1):
            continue
        each = np.repeat(cnt, group)  # the count of class k, per element so far
        starts = np.cumsum(each) - each
        ramp = np.arange(int(starts[-1] + each[-1]), dtype=np.int64) - np.repeat(starts, each)
        sub = np.repeat(sub, each) + ramp * stride[k]
        group *= cnt
    return np.repeat(np.arange(n, dtype=np.int64), group), sub
