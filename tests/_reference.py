"""Slow, obviously-correct reference solvers for the sender-only (``tini``) broadcast problem.

They share nothing with :mod:`hetcoll.planners.optimal` but the problem statement:

- :func:`subset_optimum` is Banikazemi et al.'s recurrence (ICPP 1998, Sec. 5) memoised over
  bitmasks of *nodes*, without cost classes and without Lemma 2;
- :func:`ordered_trees` enumerates every ordered tree, so that :func:`brute_force_optimum`
  can evaluate each one with the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from functools import cache

from hetcoll.planners._common import prepare, tree_schedule
from hetcoll.simulator import simulate


def subset_optimum(costs: Sequence[float], root: int = 0) -> float:
    """``L(root, all others)`` by ``L(i, A) = min_{j in A, B+C = A-{j}} c_i + max(L(i,B), L(j,C))``.

    O(N^2 4^N): meant for N <= 8.
    """
    n = len(costs)

    @cache
    def latency(i: int, a: int) -> float:
        if a == 0:
            return 0.0
        best = math.inf
        for j in range(n):
            if not a >> j & 1:
                continue
            rest = a & ~(1 << j)
            c = rest
            while True:  # every C subset of rest, B = rest - C
                best = min(best, costs[i] + max(latency(i, rest & ~c), latency(j, c)))
                if c == 0:
                    break
                c = (c - 1) & rest
        return best

    return latency(root, ((1 << n) - 1) & ~(1 << root))


def ordered_trees(sender: int, others: frozenset[int]) -> Iterator[list[tuple[int, int]]]:
    """Every ordered tree rooted at ``sender`` spanning ``others``, as edges in send order.

    ``sender``'s first child ``j`` takes the subtree on ``C``; ``sender`` then serves the rest
    ``B``: each ordered tree arises exactly once.
    """
    if not others:
        yield []
        return
    for j in sorted(others):
        rest = sorted(others - {j})
        for mask in range(1 << len(rest)):
            c = frozenset(x for b, x in enumerate(rest) if mask >> b & 1)
            for first in ordered_trees(j, c):
                for later in ordered_trees(sender, others - {j} - c):
                    yield [(sender, j), *first, *later]


def brute_force_optimum(platform, root: str, members=None, nbytes: int = 0) -> float:
    """The least simulated latency over every ordered tree (N <= 6: 5040 trees at most)."""
    req = prepare(platform, root, members, "tini", nbytes)
    best = math.inf
    for edges in ordered_trees(req.root, frozenset(req.others())):
        schedule = tree_schedule(req, "brute-force", edges)
        best = min(best, simulate(platform, schedule).makespan)
    return best
