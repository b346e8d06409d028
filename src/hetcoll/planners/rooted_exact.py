"""Exact minimum-time trees for the rooted family (reduce, gather, scatter, and their
compositions with a broadcast) by dynamic programming over member subsets, under the
models without receive ports or links (``tini``, ``postal``): the oracle of the rooted
planners' benchmark and tests, and a planner for small member sets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._registry import register
from .rooted import ROOTED, EdgeCosts, RootedRequest, prepare_rooted, rooted_schedule

__all__ = ["rooted_exact", "exact_times"]

#: Members beyond which the programme (about N^2 3^N steps) is refused.
MAX_MEMBERS = 10


@register(
    "rooted_exact",
    collectives=ROOTED,
    paper="hetcoll; the recurrence of Banikazemi, Moorthy & Panda, ICPP 1998, Sec. 5, "
    "for trees whose data go up, shrink down, or both",
    complexity="O(N^2 3^N) (each node, set and split once); N <= 10",
    summary="exact minimum-time reduce/gather/scatter trees (and their compositions) by "
    "dynamic programming over member subsets",
    models=("tini", "postal"),
    exact_models=("tini", "postal"),
    max_members=8,
    kind="exact",
)
def rooted_exact(
    platform: Platform,
    root: str | None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "reduce",
    sizes: Mapping[str, int] | None = None,
) -> Schedule:
    """The minimum-time tree(s) of a rooted collective, by exhaustive dynamic programming.

    Under a model with neither receive ports nor links (``tini``, ``postal``), subtrees do
    not interfere, so the best tree is built from the best subtrees.  With ``d(c, u, b)``
    the delay of ``b`` bytes from ``c`` to ``u`` and ``g_u`` the combine cost of ``u``:

    - **up** (reduce: ``b = nbytes``, ``g = nbytes gamma``; gather: ``b`` = the blocks of
      the child's subtree, ``g = 0``): ``F(u, S)``, when ``u`` has combined the members
      ``S`` below it, is ``0`` for an empty ``S`` and otherwise::

          F(u, S) = min over c in S, T <= S - {c} of
                    max(F(c, T) + d(c, u, b(c + T)), F(u, S - c - T)) + g_u

      (``c`` is the child combined last: combining in arrival order is optimal);
    - **down** (broadcast: ``b = nbytes``; scatter: ``b`` = the child's blocks), with ``s``
      the sender's busy time::

          D(u, S) = min over c in S, T <= S - {c} of
                    max(d(u, c, b) + D(c, T), s(u, c, b) + D(u, S - c - T))

      (``c`` is the child sent to first; the second term is 0 when ``S - c - T`` is empty:
      the sender's last busy time delays nobody);
    - an ``allreduce``/``allgather``/``reduce_scatter`` is the up part then the down part
      from the same root (they never overlap); without a given ``root`` every member is
      tried.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size, collective, sizes
        As :func:`hetcoll.plan` takes them.  ``segment_size`` must be None.

    Returns
    -------
    Schedule
        Whose simulated time is the optimum under ``tini`` and ``postal`` (children listed
        in arrival order up, in the recurrence's order down).

    Raises
    ------
    PlannerError
        More than :data:`MAX_MEMBERS` members, or a segmented message.

    Notes
    -----
    ``N`` nodes, ``2^(N-1)`` sets each, every split of every set: ``O(N^2 3^N)`` time and
    ``O(N 2^N)`` memory (8 members: a few 1e4 steps; 10: about 6e5).  Under a model with
    receive ports (``hockney``) or links it is a heuristic: the registry offers it only
    under the two models where it is exact.
    """
    rr = prepare_rooted(platform, collective, root, members, model, nbytes, segment_size, sizes)
    if segment_size:
        raise PlannerError("rooted_exact: plans messages in one piece (no segment_size)")
    m = len(rr.req.members)
    if m > MAX_MEMBERS:
        raise PlannerError(f"rooted_exact: at most {MAX_MEMBERS} members, got {m}")
    best, root_at, up, down = _solve(rr)
    return rooted_schedule(rr, "rooted_exact", root_at, up, down, optimum=best)


def exact_times(rr: RootedRequest) -> dict[int, float]:
    """The optimal time of ``rr``'s collective for each possible root (local index): the
    given one, or every member when the root is free."""
    costs = EdgeCosts(rr, max(rr.req.nbytes, 1))
    roots = [rr.req.members.index(rr.req.root)] if rr.fixed_root else range(len(rr.req.members))
    return {r: _programme(rr, costs, r)[0] for r in roots}


def _solve(rr: RootedRequest):
    costs = EdgeCosts(rr, max(rr.req.nbytes, 1))
    roots = [rr.req.members.index(rr.req.root)] if rr.fixed_root else range(len(rr.req.members))
    found = None
    for r in roots:
        t, up, down = _programme(rr, costs, r)
        if found is None or t < found[0]:
            found = (t, r, up, down)
    return found


def _programme(rr: RootedRequest, costs: EdgeCosts, root: int):
    """The optimum at local root ``root`` and its trees (children lists, listed order)."""
    m = costs.m
    sizes = [rr.sizes[x] for x in rr.req.members]
    everyone = ((1 << m) - 1) & ~(1 << root)
    span_of = {}

    def span(mask: int) -> int:
        got = span_of.get(mask)
        if got is None:
            got = sum(sizes[i] for i in range(m) if mask >> i & 1)
            span_of[mask] = got
        return got

    total, up_tree, down_tree = 0.0, None, None
    if rr.up is not None:
        kind = rr.up
        n = rr.flow_bytes(kind)
        gather = kind == "gather"

        @cache
        def up(u: int, mask: int) -> tuple[float, int, int]:
            """(time, last child, its subtree's other members)."""
            if not mask:
                return 0.0, -1, 0
            g = 0.0 if gather else costs.combine(u, n)
            best = (float("inf"), -1, 0)
            for c in _bits(mask):
                rest = mask & ~(1 << c)
                sub = rest
                while True:  # every T <= rest, the empty set included
                    b = span(sub | 1 << c) if gather else n
                    a = up(c, sub)[0] + costs.delay(c, u, b)
                    f = up(u, rest & ~sub)[0]
                    t = (a if a > f else f) + g
                    if t < best[0]:
                        best = (t, c, sub)
                    if not sub:
                        break
                    sub = (sub - 1) & rest
            return best

        t, up_tree = _rebuild(up, root, everyone, m)
        total += t
    if rr.down is not None:
        n = rr.flow_bytes(rr.down)
        scatter = rr.down == "scatter"

        @cache
        def down(u: int, mask: int) -> tuple[float, int, int]:
            """(time, first child, its subtree's other members)."""
            if not mask:
                return 0.0, -1, 0
            best = (float("inf"), -1, 0)
            for c in _bits(mask):
                rest = mask & ~(1 << c)
                sub = rest
                while True:
                    b = span(sub | 1 << c) if scatter else n
                    x = costs.delay(u, c, b) + down(c, sub)[0]
                    others = rest & ~sub  # u's later children: after this send's busy time
                    y = costs.busy(u, c, b) + down(u, others)[0] if others else 0.0
                    t = x if x > y else y
                    if t < best[0]:
                        best = (t, c, sub)
                    if not sub:
                        break
                    sub = (sub - 1) & rest
            return best

        t, down_tree = _rebuild(down, root, everyone, m, first=True)
        total += t
    return total, up_tree, down_tree


def _rebuild(table, root: int, everyone: int, m: int, first: bool = False):
    """The programme's tree: children lists (local indices) in the order the recurrence
    takes them (up: ``table`` names the last child, so the list is reversed)."""
    children: list[list[int]] = [[] for _ in range(m)]
    stack = [(root, everyone)]
    best = table(root, everyone)[0]
    while stack:
        u, mask = stack.pop()
        kids = []
        while mask:
            _, c, sub = table(u, mask)
            kids.append(c)
            stack.append((c, sub))
            mask &= ~(1 << c) & ~sub
        children[u] = kids if first else kids[::-1]
    return best, children


def _bits(mask: int) -> list[int]:
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out
