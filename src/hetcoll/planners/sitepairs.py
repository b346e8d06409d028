"""The planner ``site_pairs``: allgather, reduce-scatter and allreduce among the hosts of a
multi-site platform, every host crossing the WAN itself, to its **counterpart** in each
other site, in per-root form (:mod:`hetcoll.perroot`).

Where :mod:`hetcoll.planners.sites` funnels each direction's WAN stream through one or two
senders per site, here the member at place ``i`` of its site (the leader at 0, as
:func:`~hetcoll.planners.sites.site_groups` orders them) is paired with the member at place
``i mod k`` of each other site of ``k`` members, and its tree (one per member) is:

- ``bcast`` (an allgather's block, an allreduce's reduced share): the root sends to its
  counterpart in each other site first (the WAN: the slow part) and to its own site's other
  members in a heap of ``fanout`` children per member; each counterpart sends it on to its
  site's others in a heap;
- ``reduce`` (a reduce-scatter's block, an allreduce's share): the same tree run backwards,
  so each other site reduces its members' parts locally at the root's counterpart, which
  sends that site's partial sum over the WAN to the root, which adds its own site's.

An allreduce is the reduce flows of ``N`` near-equal shares (one per member), then the
bcast flows of the same shares: on two sites each direction's WAN carries half the vector
as partial sums and half as results, the vector once per direction as with
:mod:`~hetcoll.planners.sites`, but from every host at once.  Under a one-port model with
shared links (``hockney``) each WAN message holds its sender's port for the hop's latency
as well as its bytes: with every member crossing, the ``N / 2`` hops of a direction
overlap, one message per member where ``sites``' sender pays a hop per message in turn; but
every port is then held while the WAN delivers at a share of its rate, so the local sends
wait.  That trade wins for whole messages and few segments (on two 4-host stars the
allreduce from 1 to 16 MiB: ``tests/test_planners_sitepairs.py``,
``tests/test_planners_sites.py``) and loses to ``sites``' stream for long pipelines (64
MiB); ``auto`` simulates both and keeps the faster.

The search is ``sites``' (:func:`~hetcoll.planners.sites.halvings`): for each fanout
(:data:`~hetcoll.planners.sites.FANOUTS`) the flows whole, then in segments halving from
half the largest share's (a power of two) down to
:data:`~hetcoll.planners.sites.MIN_SEGMENT`, until two halvings in a row gain nothing, each
simulated in its trees' order and in the timetables of
:mod:`hetcoll.planners.sitesorder` (an allgather's play-out; a reduce-scatter also as that
run backwards; an allreduce also as its broadcast phase's preceded by that run backwards:
here the reduce and bcast trees are the same trees), the fastest kept (the first of
equals); a halving whose :func:`~hetcoll.planners.sites.port_floor` is no less than the
fastest so far is not simulated (it cannot be faster).

Complexity: ``O(N)`` tree edges per member, up to seven simulations per fanout and segment
size tried (four for an allgather): one per distinct timetable, each after the first
stopped once proved slower than the fastest
(:func:`~hetcoll.planners.sites.fastest_run`; the same plans).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any

from ..platform import Platform
from ..schedule import Flow, Schedule, Tree, transfer_budget
from ._registry import Option, register
from ._shared import keep_prediction
from .sites import (
    FANOUTS,
    SITES_OPS,
    _heap,
    fastest_run,
    halvings,
    operands,
    playouts,
    port_floor,
    segment_cuts,
)
from .sitesorder import allreduce_timetable, reversed_timetable, timetable

__all__ = ["pair_tree", "site_pairs"]


def pair_tree(groups: Sequence[Sequence[str]], root: str, fanout: int = 3) -> Tree:
    """Root ``root``'s tree (module docstring): ``root``, at place ``i`` of its site,
    sends to member ``i mod k`` of each other site of ``k`` members first, then to its own
    site's others in a heap of ``fanout`` children per member (member order); each such
    counterpart to its site's others in a heap.  ``groups``: the members by site
    (:func:`~hetcoll.planners.sites.site_groups`).  A ``reduce`` flow reads the edges
    child to parent, combining in the order listed: the other sites' partial sums first."""
    home = next(g for g in groups if root in g)
    i = home.index(root)
    kids: dict[str, list[str]] = {}
    _heap(kids, root, [m for m in home if m != root], fanout)
    far = []
    for g in groups:
        if g is home:
            continue
        mate = g[i % len(g)]
        far.append(mate)
        _heap(kids, mate, [m for m in g if m != mate], fanout)
    kids[root] = far + kids.get(root, [])
    return Tree(root, {p: tuple(c) for p, c in kids.items() if c})


@register(
    "site_pairs",
    collectives=SITES_OPS,
    paper="Karonis et al. 2000 (MPICH-G2: the WAN crossed once per byte); per-root flows "
    "as Zhao et al. 2024; every host its own WAN sender (ours)",
    complexity="O(N^2) tree edges, up to seven simulations per segment size tried",
    summary="multi-site hosts: every host crosses the WAN to its counterpart in each other "
    "site, which fans out locally (allgather, reduce-scatter, allreduce)",
    options=("align", "fanout"),
    kind="forest",
    pipelined=True,
    own_slices=True,
)
def site_pairs(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allgather",
    sizes: Mapping[str, int] | None = None,
    align: Annotated[int, Option(most=1 << 20)] = 1,
    fanout: Annotated[int, Option(most=1 << 16)] | None = None,
) -> Schedule:
    """Plan ``collective`` (``allgather``, ``reduce_scatter`` or ``allreduce``) of
    ``nbytes`` (each member's block; an allreduce's vector) among ``members`` of a
    multi-site platform, every member crossing the WAN to its counterparts (module
    docstring).

    Parameters
    ----------
    root
        Ignored (every member is a root).
    members
        The hosts taking part (default: every node with a ``site``), in at least two
        sites; the other nodes route.
    segment_size
        Bytes per segment of every flow; default chosen by simulation (module docstring).
    sizes
        Each member's block (allgather, reduce-scatter): the v-variants.
    align
        Shares and segments are multiples of this many bytes (an allreduce's element).
    fanout
        Children per member in a site's heaps (1: chains); default chosen by simulation
        among :data:`~hetcoll.planners.sites.FANOUTS`.

    Returns
    -------
    Schedule
        Per-root flows over the members; ``params``: the number of ``trees``, the
        ``segment_size`` (None: whole), the ``fanout``, whether the flows run in a
        ``timetable`` (then ``order``), the simulated ``estimate``.

    Examples
    --------
    >>> from hetcoll.generators import multisite_platform, star_platform
    >>> a = star_platform(2, ("10Gbps",))
    >>> p = multisite_platform({"a": a, "b": a}, [("a", "b", "1ms", "1Gbps")])
    >>> s = site_pairs(p, nbytes=1 << 20, segment_size=1 << 18)
    >>> s.flows[1].tree.children  # a/1 crosses to b/1, its counterpart
    {'a/1': ('b/1', 'a/0'), 'b/1': ('b/0',)}
    """
    from ..models import get_model

    align = max(int(align), 1)
    order, groups, shares, phases = operands(
        platform, "site_pairs", collective, nbytes, members, sizes, align
    )

    def build(seg: int | None, fan: int) -> list[Flow]:
        trees = {m: pair_tree(groups, m, fan) for m in order}
        flows = []
        for kind in phases:
            at = 0
            for m, share in zip(order, shares, strict=True):
                cut = seg if seg and share > seg else None
                flows.append(Flow(trees[m], share, at, 0, cut, kind=kind))
                at += share
        return flows

    def make(flows: Sequence[Flow], estimate: float, seg: int | None, fan: int,
             timed: Any = None) -> Schedule:  # fmt: skip
        params = {"trees": len(flows), "segment_size": seg, "fanout": fan,
                  "estimate": estimate, "timetable": timed is not None}  # fmt: skip
        return Schedule(collective, "site_pairs", max(int(nbytes), 0), tuple(flows), params,
                        order=timed, sizes=sizes)  # fmt: skip

    def variants(flows: list[Flow], seg: int | None, fan: int) -> list[Schedule]:
        """The flows in their trees' order and in the timetables (module docstring)."""
        plain = make(flows, 0.0, seg, fan)
        out = [plain]
        if len(flows) < 2 or not all(f.nbytes for f in flows):
            return out
        for links, lead in playouts(platform):
            out.append(timetable(platform, plain, model, links, lead))
            if collective == "reduce_scatter":
                out.append(reversed_timetable(platform, plain, model, links, lead))
            elif collective == "allreduce":
                out.append(allreduce_timetable(platform, plain, model, links=links, lead=lead))
        return out

    def floor(flows: list[Flow]) -> float:
        """:func:`port_floor` of the flows and of them run the other way (a timetable
        run backwards: the same trees), the least."""
        flip = {"bcast": "reduce", "reduce": "bcast"}
        other = [replace(f, kind=flip[f.kind]) for f in flows]
        return min(port_floor(platform, bound, flows), port_floor(platform, bound, other))

    fans = FANOUTS if fanout is None else (int(fanout),)
    if segment_size:
        seg = max(int(segment_size) // align * align, align)
        tried = []
        for fan in fans:
            out = variants(build(seg, fan), seg, fan)
            k, run = fastest_run(platform, model, out)
            tried.append((run.makespan, out[k], run))
        return _kept(platform, model, *min(tried, key=lambda t: t[0]))  # the first of equals
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    budget = transfer_budget(bound.contention) // 4
    cuts = segment_cuts(shares, align)
    best = None
    for fan in fans:

        def attempt(seg: int | None, flows: list[Flow], mine: float, fan=fan) -> float:
            """The fastest of the variants; untried where :func:`floor` shows no gain."""
            nonlocal best
            if mine < math.inf and floor(flows) >= mine:
                return math.inf
            out = variants(flows, seg, fan)
            k, run = fastest_run(platform, model, out)
            if best is None or run.makespan < best[0]:
                best = (run.makespan, out[k], run)
            return run.makespan

        halvings(cuts, lambda seg, fan=fan: build(seg, fan), attempt, budget)
    return _kept(platform, model, *best)


def _kept(platform: Platform, model: Any, time: float, sched: Schedule, run: Any) -> Schedule:
    """``sched`` with its simulated ``time`` as its ``estimate`` and whether it runs in a
    timetable in its ``params``, its prediction kept for ``auto``."""
    params = {**sched.params, "estimate": time, "timetable": sched.order is not None}
    sched = replace(sched, params=params)
    keep_prediction(platform, sched, model, run)
    return sched
