"""Exact minimum-latency broadcast and multicast trees under the ``tini`` model
(Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 5), by dynamic programming over cost classes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._common import prepare, tree_schedule
from ._registry import register

__all__ = ["optimal", "optimal_time", "DEFAULT_MAX_PAIRS"]

#: Default cap on the (multiset, sub-multiset) pairs the dynamic programme evaluates: 24
#: members in 8 classes of 3 (the worst case of that size) need 1.3e8, about a second.
DEFAULT_MAX_PAIRS = 200_000_000

#: Pairs handled per numpy batch: bounds the working memory to a few hundred MB.
_BLOCK_PAIRS = 1 << 21


@register(
    "optimal",
    collectives=("bcast", "multicast"),
    paper="Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 5 (recurrence) and Lemma 2",
    complexity="O(prod_k (n_k+1)(n_k+2)/2) for n_k members of cost class k (3^N if all differ)",
    summary="exact minimum-latency tree by dynamic programming over cost classes",
    models=("tini",),
    exact_models=("tini",),
    options=("max_pairs",),
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
    max_pairs: int = DEFAULT_MAX_PAIRS,
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
    - every level ``|A|`` is evaluated at once with numpy (gather, maximum,
      ``np.minimum.reduceat``); the tree is then rebuilt top-down, recomputing the choice only
      for the states on the solution.

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
        Refuse instances needing more than this many (multiset, sub-multiset) evaluations
        (time and memory grow with it; the default allows 24 members in 8 classes).

    Returns
    -------
    Schedule
        The ordered tree: each sender's children in the order it sends to them.  Its
        simulated latency is the optimum.

    Raises
    ------
    PlannerError
        Under a model whose costs are not the sender's alone, for a segmented message, or
        for an instance beyond ``max_pairs``.

    Notes
    -----
    With ``n_k`` non-source members in class ``k`` (``K`` classes, cheapest first) the
    programme has ``prod_k (n_k + 1)`` states and evaluates
    ``P_0 + P_s + sum_{k >= 1} P_k`` (state, sub-state) pairs, where
    ``P_k = prod_{l >= k} (n_l + 1)(n_l + 2) / 2`` (the cheapest class's table, the
    source's unless it is in the cheapest class, the others' tables), about 10 ns each;
    memory is ``O(K prod_k (n_k + 1))`` floats plus a bounded working set.  24 members in 8
    classes of 3 (the worst case of that size) make 1.3e8 pairs, about a second; when all
    ``N`` costs differ this is ``O(3^N)``, 17 members within the default ``max_pairs``.
    Lemma 2 was checked against the lemma-free recurrence on random instances
    (``tests/test_optimal.py``).

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
    dp = _ClassDP(float(cost[req.root]), [float(cost[m]) for m in others], max_pairs=max_pairs)
    edges = dp.edges(req.root, others)
    return tree_schedule(req, "optimal", edges)


def optimal_time(
    root_cost: float, other_costs: Sequence[float], *, max_pairs: int = DEFAULT_MAX_PAIRS
) -> float:
    """The optimal latency (seconds) for a source of cost ``root_cost`` and the others' costs.

    The value of :func:`optimal`'s dynamic programme without building a schedule (for
    experiments that only need the number).

    >>> optimal_time(100e-6, [100e-6] + [300e-6] * 6) * 1e6
    400.0
    """
    return _ClassDP(float(root_cost), [float(c) for c in other_costs], max_pairs=max_pairs).value


class _ClassDP:
    """The dynamic programme over count vectors of cost classes (see :func:`optimal`).

    Classes are sorted by cost, cheapest first; the cheapest has the largest mixed-radix
    stride, so the states of class ``k``'s table under Lemma 2 (no member of a cheaper class)
    are exactly the indices below ``size[k]``.  ``lemma2=False`` drops Lemma 2 (every table
    over every state, the subtree root of ``D`` any class of ``D``): for checking it.
    """

    def __init__(
        self,
        root_cost: float,
        other_costs: Sequence[float],
        *,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        lemma2: bool = True,
    ) -> None:
        if isinstance(max_pairs, bool) or not isinstance(max_pairs, int | np.integer):
            raise PlannerError(f"max_pairs: must be a whole number, got {max_pairs!r}")
        costs = np.asarray(other_costs, dtype=float)
        every = np.append(costs, root_cost)
        if not np.all(np.isfinite(every) & (every >= 0)):
            raise PlannerError(f"planner 'optimal': costs must be finite and >= 0, got {every}")
        values, self.member_class, counts = np.unique(
            costs, return_inverse=True, return_counts=True
        )
        self.values = values
        self.counts = counts
        self.lemma2 = lemma2
        tables, self.root_table = _table_specs(values, root_cost, lemma2)
        self.work = _work(counts, tables)
        if self.work > max_pairs:
            raise PlannerError(
                f"planner 'optimal': {len(costs) + 1} participants in {len(values)} cost "
                f"classes need {self.work:.3g} (multiset, sub-multiset) evaluations, more than "
                f"max_pairs={max_pairs:.3g}; use 'fnf' (near-optimal) or raise max_pairs"
            )
        self.table_cost = np.array([c for c, _ in tables], dtype=float)
        self.table_lo = [lo for _, lo in tables]  # table t covers classes >= table_lo[t]
        # stride[k] = prod_{l > k} (n_l + 1); size[k] = prod_{l >= k} (n_l + 1) (no overflow:
        # the states are fewer than the pairs, which max_pairs bounds)
        size = np.ones(len(values) + 1, dtype=np.int64)
        for j in range(len(values) - 1, -1, -1):
            size[j] = size[j + 1] * (counts[j] + 1)
        self.stride = size[1:]
        self.size = size  # size[k]: states with no member of a class below k
        self.n_states = int(size[0])
        self._solve()

    @staticmethod
    def work_for(root_cost: float, other_costs: Sequence[float], lemma2: bool = True) -> int:
        """The (multiset, sub-multiset) evaluations the programme would make, without it."""
        values, counts = np.unique(np.asarray(other_costs, dtype=float), return_counts=True)
        return _work(counts, _table_specs(values, float(root_cost), lemma2)[0])

    # -- forward pass ---------------------------------------------------------------------

    def _solve(self) -> None:
        n_states = self.n_states
        index = np.arange(n_states, dtype=np.int64)
        digits = (index[:, None] // self.stride) % (self.counts + 1)  # (states, classes)
        self.digits = digits
        level = digits.sum(axis=1)
        order = np.argsort(level, kind="stable")
        bounds = np.searchsorted(level[order], np.arange(level.max() + 2))
        n_tables = len(self.table_cost)
        self.L = np.full((n_tables, n_states), np.inf)
        self.L[:, 0] = 0.0
        self.S = np.full(n_states, np.inf)  # S[0] = inf makes the empty D never chosen
        limit = np.array([self.size[lo] for lo in self.table_lo], dtype=np.int64)
        for s in range(1, len(bounds) - 1):
            states = order[bounds[s] : bounds[s + 1]]
            self.S[states] = self._subtree_best(states)
            per_state = np.prod(digits[states] + 1, axis=1)
            for lo, hi in _blocks(per_state, _BLOCK_PAIRS):
                block = states[lo:hi]
                rows, sub = _sub_multisets(digits[block], self.stride)
                offsets = np.zeros(len(block), dtype=np.int64)
                np.cumsum(per_state[lo : hi - 1], out=offsets[1:])
                rest = block[rows] - sub
                s_sub = self.S[sub]
                vals = np.empty(len(sub))
                for t in range(n_tables):
                    n_a = int(np.searchsorted(block, limit[t]))
                    if n_a == 0:
                        continue
                    n_p = len(sub) if n_a == len(block) else int(offsets[n_a])
                    v = vals[:n_p]
                    np.take(self.L[t], rest[:n_p], out=v)
                    np.maximum(v, s_sub[:n_p], out=v)
                    self.L[t, block[:n_a]] = self.table_cost[t] + np.minimum.reduceat(
                        v, offsets[:n_a]
                    )
        self.value = float(self.L[self.root_table, n_states - 1])

    def _subtree_candidates(self, states: np.ndarray) -> np.ndarray:
        """``L(k, A - e_k)`` per state ``A`` and class ``k`` (inf where ``A`` has no ``k``)."""
        d = self.digits[states]
        present = d > 0
        below = np.where(present, states[:, None] - self.stride, 0)
        cand = self.L[np.arange(len(self.values)), below]
        return np.where(present, cand, np.inf)

    def _subtree_best(self, states: np.ndarray) -> np.ndarray:
        if self.lemma2:  # the subtree root is from the cheapest class present
            k = np.argmax(self.digits[states] > 0, axis=1)
            return self.L[k, states - self.stride[k]]
        return self._subtree_candidates(states).min(axis=1)

    def _subtree_root(self, state: int) -> int:
        if self.lemma2:
            return int(np.argmax(self.digits[state] > 0))
        return int(np.argmin(self._subtree_candidates(np.array([state]))[0]))

    # -- reconstruction -------------------------------------------------------------------

    def edges(self, root: int, others: Sequence[int]) -> list[tuple[int, int]]:
        """The optimal tree as ``(parent, child)`` node pairs in each parent's send order.

        ``others[i]`` is the node whose cost was ``other_costs[i]``.  The tree is first built
        on abstract nodes (class, receive time), then the members of each class are dealt out
        in rank order to its abstract nodes in order of receive time.
        """
        # abstract node: (class or -1 for the source, receive time); edges between their ids
        klass = [-1]
        recv = [0.0]
        abstract_edges = []
        stack = [(0, self.root_table, self.n_states - 1)]
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
        """The sub-multiset ``D`` attaining ``L[table, state]``: recomputed with the forward
        pass's arithmetic; among ties the last in index order, the one with most of the
        cheapest classes (so fast nodes are reached first, as in FNF)."""
        _, sub = _sub_multisets(self.digits[[state]], self.stride)
        vals = np.maximum(self.L[table, state - sub], self.S[sub])
        return int(sub[len(sub) - 1 - int(np.argmin(vals[::-1]))])


def _table_specs(
    values: np.ndarray, root_cost: float, lemma2: bool
) -> tuple[list[tuple[float, int]], int]:
    """``(cost, lowest class covered)`` per table, one per class then (unless a class table
    serves) the source's, and the source's table number."""
    specs = [(float(v), j if lemma2 else 0) for j, v in enumerate(values)]
    for j, (c, lo) in enumerate(specs):
        if c == root_cost and lo == 0:
            return specs, j
    return [*specs, (root_cost, 0)], len(specs)


def _work(counts: np.ndarray, tables: list[tuple[float, int]]) -> int:
    """Pairs ``D <= A`` over the states of each table: ``prod_k (n_k+1)(n_k+2)/2`` per table
    over the classes it covers (Python integers: no overflow on hopeless instances)."""
    pairs = [(int(n) + 1) * (int(n) + 2) // 2 for n in counts]
    return sum(math.prod(pairs[lo:]) for _, lo in tables)


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
    """Every ``D <= A`` for each row ``A`` of ``digits``: ``(row of A, index of D)``.

    Grouped by row in order, and within a row in mixed-radix index order of ``D`` (the empty
    ``D``, index 0, first): the cartesian product of ``range(a_k + 1)``, built one class at a
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
