"""The planner ``site_exchange``: an allreduce among the hosts of a multi-site platform as
a one-hop exchange of partial sums (``exchange`` flows, :class:`hetcoll.patterns.Flow`).

``sites`` and ``site_pairs`` reduce every byte at one owner: a share's partial sum crosses
the WAN to its owner, then its result crosses back, one after the other (two WAN
latencies and the vector twice through each direction's stream, half as partial sums,
half as results).  Here each share has an owner in every site: the member at place ``i``
of the largest site (the first of equals; places as
:func:`~hetcoll.planners.sites.site_groups` orders a site's members) and its counterpart,
the member at place ``i mod k`` of each other site of ``k`` members
(:func:`~hetcoll.planners.sitepairs.pair_tree`'s tree).  Each site reduces its partial sum
of the share up a heap of ``fanout`` children per member to its owner, the owners send
their partial sums to each other at once and each adds the others' (every owner the
same partials in one order: the same bits), and each owner broadcasts the result down
the same heap.  Each direction's WAN carries the vector once, as partial sums, with one
latency: on two 4-host stars joined by a 1 ms, 5 Gbit/s WAN the 1 MiB allreduce takes
1.52x the members' bound where ``site_pairs`` takes 1.90x
(``hetcoll reproduce allreduce-star``).  The shares are one per place of the largest site
(near-equal, multiples of ``align``): a host that owned two shares would pay a WAN
latency per share on its one port.

Or (``crossers=1``) each site's leader alone owns the whole vector, in segments, down a
chain of its site's members: under ``hockney`` a WAN message holds its sender's port for
the WAN's whole time, so where every place crosses at once the local reduction and
broadcast wait for the WAN; with the leaders alone crossing, the other members reduce
and pass on the next segments meanwhile.  The leaders' WAN starts once the first segment
is reduced down the chain and the last result reaches the chain's end a segment after the
WAN, so the segments ramp (:func:`ramp`): doubling from a quarter or an eighth of the best
one size up to it or 1.5 times it, down to a sixteenth or an eighth at the end (on the
same platform 1.50x the bound at 64 MiB and 1.37x at 256 MiB, against 1.54x and 1.43x in
segments of one size; every place crossing takes 1.75x and 1.72x and ``sites`` 1.63x and
1.51x).

The search: for each choice of crossers (every place, the leaders) and fanout
(:data:`~hetcoll.planners.sites.FANOUTS`) the flows whole, then in segments halving from
half the largest share's (:func:`~hetcoll.planners.sites.segment_cuts`), until two
halvings in a row gain nothing (:func:`~hetcoll.planners.sites.halvings`), then for the
leaders the ramps of :data:`RAMPS` around their best one size, each simulated, the fastest
kept (the first of equals).

Complexity: ``O(N)`` tree edges per share, one simulation per choice of crossers, fanout
and segment size tried.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Annotated, Any

from ..platform import Platform
from ..schedule import Flow, Schedule, transfer_budget
from ._registry import Option, register
from ._shared import keep_prediction
from .rings import _blocks
from .sitepairs import pair_tree
from .sites import FANOUTS, halvings, operands, segment_cuts

__all__ = ["exchange_flows", "ramp", "site_exchange"]


def exchange_flows(
    groups: list[list[str]],
    nbytes: int,
    align: int,
    fanout: int,
    seg: int | None,
    crossers: int | None = None,
    cuts: tuple[int, ...] = (),
) -> list[Flow]:
    """The exchange flows of an allreduce of ``nbytes`` among ``groups`` (the members by
    site, :func:`~hetcoll.planners.sites.site_groups`): one share per place of the largest
    site (``crossers``: per place of the first ``crossers`` only), rooted there (module
    docstring), in segments of ``seg`` bytes (None: whole), or of the sizes ``cuts``
    (:func:`ramp`; one share only: ``crossers=1``)."""
    big = max(groups, key=len)
    places = big if crossers is None else big[: max(1, int(crossers))]
    flows, at = [], 0
    for m, share in zip(places, _blocks(int(nbytes), len(places), align), strict=True):
        tree = pair_tree(groups, m, fanout)
        peers = tree.children[m][: len(groups) - 1]
        if cuts and len(places) == 1:
            flows.append(Flow(tree, share, at, 0, max(cuts), kind="exchange", peers=peers,
                              cuts=cuts))  # fmt: skip
            break
        cut = seg if seg and share > seg else None
        flows.append(Flow(tree, share, at, 0, cut, kind="exchange", peers=peers))
        at += share
    return flows


def ramp(nbytes: int, first: int, mid: int, last: int, align: int = 1) -> tuple[int, ...]:
    """Segment sizes of an ``nbytes`` vector: doubling from ``first`` while below ``mid``,
    then ``k`` near-equal segments of about ``mid``, then doubling down to ``last`` at the end,
    each a multiple of ``align`` (but the middle's last, the rest).  The leaders' WAN starts once
    the first segment is reduced down its site's chain and the last result reaches the
    chain's end a segment's time after the WAN: small ends shorten both, large middles
    pay few WAN latencies.  Empty where the ends leave nothing between them.

    >>> ramp(100, 10, 40, 20)
    (10, 20, 50, 20)
    """

    def up(size: int) -> list[int]:
        out, size = [], max(size // align * align, align)
        while size < mid:
            out.append(size)
            size *= 2
        return out

    head, tail = up(first), up(last)[::-1]
    rest = nbytes - sum(head) - sum(tail)
    if rest <= 0 or mid <= 0:
        return ()
    k = max(1, round(rest / mid))
    share = -(-rest // k)
    step = -(-share // align) * align
    body = [step] * (k - 1) + [rest - step * (k - 1)]
    return tuple(head + body + tail) if body[-1] > 0 else ()


#: a ramp's middle segments, first and last as fractions of the best one size of the
#: leaders (``(mid, first, last)`` numerators over 16): on ``hetcoll reproduce
#: allreduce-star``'s two sites 24/16, 4/16 and 1/16..2/16 gain 3-4 % at 64-256 MiB
RAMPS = tuple(itertools.product((16, 24), (2, 4), (1, 2)))


@register(
    "site_exchange",
    collectives=("allreduce",),
    paper="Karonis et al. 2000 (MPICH-G2: the WAN crossed once per byte); every site's "
    "partial sums swapped in one hop (ours)",
    complexity="O(N^2) tree edges, one simulation per segment size tried",
    summary="multi-site hosts: each site reduces every share locally, the sites' owners swap "
    "their partial sums over the WAN at once and broadcast locally (allreduce)",
    options=("align", "fanout", "crossers"),
    kind="forest",
    pipelined=True,
    own_slices=True,
)
def site_exchange(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allreduce",
    sizes: Any = None,
    align: Annotated[int, Option(most=1 << 20)] = 1,
    fanout: Annotated[int, Option(most=1 << 16)] | None = None,
    crossers: Annotated[int, Option(most=1 << 16)] | None = None,
) -> Schedule:
    """Plan an allreduce of an ``nbytes`` vector among ``members`` of a multi-site
    platform as an exchange of the sites' partial sums (module docstring).

    Parameters
    ----------
    root
        Ignored (every site has an owner of every share).
    members
        The hosts taking part (default: every node with a ``site``), in at least two
        sites; the other nodes route.
    segment_size
        Bytes per segment of every flow; default chosen by simulation (module docstring).
    align
        Shares and segments are multiples of this many bytes (the vector's element).
    fanout
        Children per member in a site's heaps (1: chains); default chosen by simulation
        among :data:`~hetcoll.planners.sites.FANOUTS`.
    crossers
        The owners' places (the members of a site that cross the WAN): every place of the
        largest site, or 1 (each site's leader, in segments); default chosen by
        simulation among both (module docstring).

    Returns
    -------
    Schedule
        Exchange flows over the members; ``params``: the number of ``trees``, the
        ``segment_size`` (None: whole), the ``fanout``, the ``crossers`` (None: every
        place), the simulated ``estimate``.

    Examples
    --------
    >>> from hetcoll.generators import multisite_platform, star_platform
    >>> a = star_platform(2, ("10Gbps",))
    >>> p = multisite_platform({"a": a, "b": a}, [("a", "b", "1ms", "1Gbps")])
    >>> s = site_exchange(p, nbytes=1 << 20, segment_size=1 << 18)
    >>> s.flows[1].tree.children, s.flows[1].peers  # a/1 and b/1 swap their sums
    ({'a/1': ('b/1', 'a/0'), 'b/1': ('b/0',)}, ('b/1',))
    """
    from ..models import get_model
    from ..simulator import simulate

    align, nbytes = max(int(align), 1), int(nbytes)
    _, groups, _, _ = operands(
        platform, "site_exchange", collective, nbytes, members, sizes, align, ("allreduce",)
    )

    def make(flows: list[Flow], estimate: float, seg: int | None, fan: int, cross) -> Schedule:
        params = {"trees": len(flows), "segment_size": seg, "fanout": fan,
                  "crossers": cross, "estimate": estimate}  # fmt: skip
        return Schedule("allreduce", "site_exchange", nbytes, tuple(flows), params)

    fans = FANOUTS if fanout is None else (int(fanout),)
    big = len(max(groups, key=len))
    if crossers is not None and int(crossers) < big:
        counts: tuple[int | None, ...] = (max(int(crossers), 1),)
    else:
        counts = (None,) if crossers is not None or big == 1 else (None, 1)
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    budget = transfer_budget(bound.contention) // 4
    best = None
    for cross, fan in itertools.product(counts, fans):
        if segment_size:
            cuts: list[int | None] = [max(int(segment_size) // align * align, align)]
        else:
            cuts = segment_cuts(_blocks(nbytes, cross or big, align), align)

        def attempt(seg: int | None, flows: list[Flow], mine: float, fan=fan, cross=cross) -> float:
            nonlocal best
            run = simulate(platform, make(flows, 0.0, seg, fan, cross), model)
            if best is None or run.makespan < best[0]:
                best = (run.makespan, flows, seg, fan, cross, run)
            return run.makespan

        def build(seg: int | None, fan=fan, cross=cross) -> list[Flow]:
            return exchange_flows(groups, nbytes, align, fan, seg, cross)

        _, good = halvings(cuts, build, attempt, None if segment_size else budget)
        if cross is None or good is None or segment_size:
            continue
        for m, a, z in RAMPS:  # the leaders' one share: small first and last segments
            sizes = ramp(nbytes, good * a // 16, good * m // 16, good * z // 16, align)
            if len(sizes) < 2:
                continue
            flows = exchange_flows(groups, nbytes, align, fan, max(sizes), cross, sizes)
            if sum(f.transfers for f in flows) > budget:
                continue
            run = simulate(platform, make(flows, 0.0, max(sizes), fan, cross), model)
            if run.makespan < best[0]:
                best = (run.makespan, flows, max(sizes), fan, cross, run)
    time, flows, seg, fan, cross, run = best
    sched = make(flows, time, seg, fan, cross)
    keep_prediction(platform, sched, model, run)
    return sched
