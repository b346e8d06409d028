"""Max-min fair sharing of link bandwidth among flows (shared contention)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FairShares", "max_min_flat", "max_min_rates"]


def max_min_rates(paths: list[np.ndarray], caps: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows over shared links (progressive filling).

    Flow ``i`` crosses the resources ``paths[i]`` and may not exceed ``caps[i]``; resource
    ``l`` carries at most ``capacity[l]`` in total.  Every round raises the rates of the
    flows not yet fixed equally until a resource is full (or a flow reaches its cap); the
    flows through it are fixed at that rate.  Bertsekas & Gallager, *Data Networks*,
    Sec. 6.5.2.  O(rounds x total path length), at most one round per flow.

    >>> paths = [np.array([0]), np.array([0]), np.array([1])]
    >>> max_min_rates(paths, np.full(3, np.inf), np.array([10.0, 4.0])).tolist()
    [5.0, 5.0, 4.0]
    """
    lens = np.array([len(p) for p in paths], dtype=np.int64)
    flow_of = np.repeat(np.arange(len(paths)), lens)
    crossed = np.concatenate(paths).astype(np.int64) if len(flow_of) else flow_of
    return max_min_flat(flow_of, crossed, caps, capacity)


def max_min_flat(
    flow_of: np.ndarray,
    crossed: np.ndarray,
    caps: np.ndarray,
    capacity: np.ndarray,
    width: int = 0,
) -> np.ndarray:
    """:func:`max_min_rates` of flows given by their incidence: flow ``flow_of[j]``
    crosses resource ``crossed[j]`` (``caps``: one per flow).  ``width``: every flow
    crosses that many resources and ``flow_of`` is ``repeat(arange(len(caps)), width)``
    (the rounds then take each flow's tightest share column by column, the same
    minimum).  The event loop's form (its paths stored once per distinct transfer)."""
    caps = np.asarray(caps, dtype=float)
    f = len(caps)
    rate = np.zeros(f)
    left = np.asarray(capacity, dtype=float).copy()
    columns = [crossed[j::width] for j in range(width)] if width else []
    free = np.ones(f, dtype=bool)  # the flows not yet fixed
    while free.any():
        live = free[flow_of]
        count = np.bincount(crossed[live], minlength=len(left))
        share = left / np.maximum(count, 1)
        share[count == 0] = np.inf
        best = caps.copy()
        if columns:
            for column in columns:
                np.minimum(best, share[column], out=best)
        else:
            np.minimum.at(best, flow_of[live], share[crossed[live]])
        level = best[free].min()
        if level == np.inf:
            rate[free] = np.inf
            break
        now_fixed = free & (best <= level)
        rate[now_fixed] = level
        free &= ~now_fixed
        np.subtract.at(left, crossed[now_fixed[flow_of]], level)
        np.maximum(left, 0.0, out=left)
    return rate


_INF = math.inf
_NEVER = math.nan  # the rate of a class never fixed: unequal to any level
_FREE = 1 << 62  # a class's round while it is not fixed


class FairShares:
    """The max-min fair rates of a changing multiset of flows, recomputed incrementally and
    bit for bit those :func:`max_min_flat` gives the same flows from scratch.

    Flows are grouped in *classes* (the same resources, the same cap: the rounds fix them
    together, at the same level); :meth:`add` and :meth:`remove` change a class's number of
    flows and :meth:`solve` brings the rates up to date, returning the classes whose rate
    it changed.  Each solve keeps its rounds (level, and each resource's capacity left, free
    flows and share at the round's start).  A change touches only its class's resources:
    a round of the last solve is replayed unchanged as long as no touched resource is its
    bottleneck, before or after the change (its share, the capacity left over the changed
    count, stays above the level) and no changed class's cap reaches the level; the rounds
    before the first that fails give the same levels, fix the same classes and subtract
    the same amounts (from a touched resource too: the same fixed classes cross it), so
    the solve resumes at that round from its state, the counts changed (in the rounds that
    stand too, for the next change's test).  Every round does
    what :func:`max_min_flat`'s does, in the same floating-point operations: the share is
    the capacity left over the free flows' count, the level the least share or cap, every
    flow of a class through a resource at that share (or of cap at most it) is fixed, and
    each fixed flow subtracts the level once from each resource it crosses (repeated
    subtractions, as ``numpy.subtract.at`` does), the capacity left then clamped at 0."""

    def __init__(self, paths: list[tuple[int, ...]], caps: list[float], capacity) -> None:
        self.paths = paths  # each class's resources
        self.caps = caps
        self.capacity = [float(x) for x in capacity]
        n_res, n_cls = len(self.capacity), len(paths)
        self.mult = [0] * n_cls  # flows of each class in progress
        self.count = [0] * n_res  # flows crossing each resource (a flow per crossing)
        self.through: list[dict[int, None]] = [{} for _ in range(n_res)]  # classes in use
        self.active: dict[int, None] = {}  # the classes with flows
        self.capped: dict[int, None] = {}  # those of a finite cap
        self.rate = [_NEVER] * n_cls  # each class's rate at the last solve (nan: none yet)
        self.fixed_at = [_FREE] * n_cls  # the round of the last solve that fixed it
        # the last solve's rounds: (level, left, count, share, classes fixed), states at
        # the round's start
        self.rounds: list[tuple[float, list[float], list[int], list[float], list[int]]] = []
        self.delta: dict[int, int] = {}  # resource -> change of count since the last solve
        self.changed: dict[int, None] = {}  # classes whose count changed since
        # the state after the last solve's last round
        self.final = (self.capacity.copy(), self.count.copy(), [_INF] * n_res)

    def add(self, k: int) -> None:
        """One more flow of class ``k``."""
        self._change(k, 1)

    def remove(self, k: int) -> None:
        """One flow of class ``k`` less."""
        self._change(k, -1)

    def _change(self, k: int, d: int) -> None:
        m = self.mult[k] + d
        self.mult[k] = m
        if m == 0:
            del self.active[k]
            self.capped.pop(k, None)
            for r in self.paths[k]:
                self.through[r].pop(k, None)
        elif m == 1 and d > 0:
            self.active[k] = None
            self.fixed_at[k] = _FREE
            if self.caps[k] < _INF:
                self.capped[k] = None
            for r in self.paths[k]:
                self.through[r][k] = None
        delta = self.delta
        for r in self.paths[k]:
            self.count[r] += d
            delta[r] = delta.get(r, 0) + d
        self.changed[k] = None

    def _resume_at(self) -> int:
        """The first round of the last solve the changes since alter."""
        delta, caps = self.delta, self.caps
        touched = list(delta.items())  # every resource of a changed class
        least_cap = min((caps[k] for k in self.changed), default=_INF)
        for i, (level, left, count, share, _) in enumerate(self.rounds):
            if least_cap <= level:
                return i
            for r, d in touched:
                if share[r] <= level:
                    return i
                c = count[r] + d
                if c and left[r] / c <= level:
                    return i
        return len(self.rounds)

    def solve(self) -> list[int]:
        """Bring the rates up to date: the classes whose rate changed (``rate`` holds their
        new rates; the others keep theirs, bit for bit).  Only those: a change fixes again
        every class of the rounds after the first it alters, most of them at the level
        they had, and the event loop looks up only the rates returned."""
        if not self.changed:
            return []
        start = self._resume_at() if self.rounds else 0
        rounds, fixed_at = self.rounds, self.fixed_at
        touched = [(r, d) for r, d in self.delta.items() if d]
        for _, left, count, share, _ in rounds[:start]:  # the rounds that stand, changed
            for r, d in touched:
                c = count[r] + d
                count[r] = c
                share[r] = left[r] / c if c else _INF
        if start < len(rounds):
            _, left, count, share, _ = rounds[start]
            left, count, share = left.copy(), count.copy(), share.copy()
            for _, _, _, _, ks in rounds[start:]:
                for k in ks:
                    fixed_at[k] = _FREE
            del rounds[start:]
            for r, d in self.delta.items():
                c = count[r] + d
                count[r] = c
                share[r] = left[r] / c if c else _INF
        else:  # every round stands: the changed classes are fixed after them
            left, count, share = (x.copy() for x in self.final)
            for r, d in self.delta.items():
                c = count[r] + d
                count[r] = c
                share[r] = left[r] / c if c else _INF
        self.delta = {}
        self.changed = {}
        # the classes fixed before the start are unchanged (a changed one fails its round)
        n_free = len(self.active) - sum(len(x[4]) for x in rounds)
        out: list[int] = []
        paths, mult, caps, capped, through, rate = (
            self.paths,
            self.mult,
            self.caps,
            self.capped,
            self.through,
            self.rate,
        )
        j = start
        while n_free:
            level = min(share, default=_INF)
            for k in capped:
                if fixed_at[k] == _FREE and caps[k] < level:
                    level = caps[k]
            fixed: list[int] = []
            if level == _INF:
                fixed = [k for k in self.active if fixed_at[k] == _FREE]
            else:
                r = -1
                while True:
                    try:
                        r = share.index(level, r + 1)
                    except ValueError:
                        break
                    for k in through[r]:
                        if fixed_at[k] == _FREE:
                            fixed_at[k] = j
                            fixed.append(k)
                for k in capped:
                    if fixed_at[k] == _FREE and caps[k] <= level:
                        fixed_at[k] = j
                        fixed.append(k)
            rounds.append((level, left.copy(), count.copy(), share.copy(), fixed))
            hits: dict[int, int] = {}
            # a class's rate changes where it differs (nan, a class never fixed, differs
            # from every level); at a level of 0 every class fixed counts, the zeros' signs
            # apart (0.0 == -0.0)
            same = level if level != 0.0 else _NEVER
            for k in fixed:
                fixed_at[k] = j
                if rate[k] != same:
                    rate[k] = level
                    out.append(k)
                m = mult[k]
                for r in paths[k]:
                    hits[r] = hits.get(r, 0) + m
            n_free -= len(fixed)
            if level == _INF:
                break
            for r, h in hits.items():
                x = left[r]
                for _ in range(h):
                    x -= level
                if not (x > 0.0 or x != x):  # numpy.maximum(x, 0.0)
                    x = 0.0
                left[r] = x
                c = count[r] - h
                count[r] = c
                share[r] = x / c if c else _INF
            j += 1
        self.final = (left, count, share)
        return out
