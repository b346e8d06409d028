"""The planner ``sites``: allgather, reduce-scatter and allreduce among the hosts of a
multi-site platform (sites joined by WAN links, switches routing), as a hierarchical
pipelined plan in per-root form (:mod:`hetcoll.perroot`).

The per-root planners (``ring``, ``bruck``, ...) plan on every node of a platform (``forest``
also among some, the others routing: :mod:`hetcoll.planners.forestmembers`); on a
multi-site platform (:func:`hetcoll.generators.multisite_platform`) the members are the
hosts (nodes with a ``site``) and the switches only route.  This planner builds every
member's trees over the hosts alone, each edge a host-to-host message the network routes,
after the hierarchical scheme of grid collectives (Karonis et al. 2000, "Exploiting
hierarchy in parallel computer networks", MPICH-G2: the WAN crossed once per byte and
direction, the sites' own networks doing the rest) with a pipelined stream per direction
(Kielmann, Bal & Gorlatch 2000, "Bandwidth-efficient collective communication for
clustered wide area systems": the wide-area link the bottleneck, kept busy; both as
surveyed by Park et al. 2004, Sec. 2, refs. 2, 3 and 6):

- each site has a **leader** (its member of the fastest links to its site's others, the
  first of equals) that sends everything the site sends over the WAN, so one send port
  carries each direction's stream and its segments cross one after the other at the
  WAN's full rate, not several sharing it;
- the stream lands on the other site's **receivers** in turn (its members but its
  leader, whose send port the stream fills; the leader alone in a site of one), so no
  receiving port carries it all: the member at place ``i`` of its site (the leader at 0)
  crosses to receiver ``(i + 1) mod k`` of each other site of ``k`` receivers, one tree
  per member and direction (a member's block cut among all the receivers, one flow each,
  would send ``k`` times the messages over the WAN, each holding the leader's port for
  the WAN's latency);
- or **several senders** per site (``senders``, :func:`wan_senders`: its members of the
  slowest links, the others receiving): under a one-port model each WAN message holds its
  sender's port for the WAN's latency as well as its bytes, so one sender leaves the WAN
  idle for a hop between its messages, where two senders' hops overlap the other's bytes
  (chosen by simulation: on two 4-host stars two win for whole blocks, one in segments);
- a ``bcast`` flow of root ``r`` (site ``s``): ``r`` sends its block to the leader of
  ``s`` first and down a tree of ``fanout`` children per member to the other members of
  ``s`` (a leader root to its next member only, which sends it on: the leader's port is
  the WAN's), the leader of ``s`` sends it over the WAN to its receiver in each other
  site, which sends it to that site's leader and down a tree to its other members;
- a ``reduce`` flow of root ``r``: the same shape run backwards, the WAN crossed by the
  other site's leader: each other site's members send their parts up a tree to its
  leader, which sends the site's partial result over the WAN to the receiver in ``s``,
  which adds its own and passes it up to ``r`` with the other members of ``s``;
- an allreduce: the reduce flows of ``N`` near-equal shares of the vector (one per
  member), then the bcast flows of the same shares.

The trees within a site are heaps of ``fanout`` children per member: 3 (a star in a site
of up to four members: one hop behind the WAN) or 1 (chains: every member forwards or
combines each block once, where a star's centre would send or receive it once per member
of a large site), chosen by simulation with the segment size and the senders
(:data:`SENDERS`).  Every flow is cut into
segments of one size: for each fanout the schedule is simulated whole and at up to
:data:`CUTS` halving sizes from half the largest share's (a power of two) down to
:data:`MIN_SEGMENT`, until two halvings in a row gain nothing, and the fastest kept (the
first of equals; :func:`halvings`), so the WAN's latency is paid per segment only where
the pipeline gains more.  A halving whose :func:`port_floor` (the most busy time one
host's send or receive port carries in it: no order of its sends is faster) is no less
than the fastest of its fanout and senders so far is not simulated: it cannot be faster,
so it counts as a halving that gained nothing, and the same plan is chosen with fewer
simulations.  The fastest segmented plan is then simulated with some blocks in half its
segments (``ends``): each site's last member's, and its leader's as well, so the stream
starts and drains in smaller pieces; kept where faster (on two 4-host stars joined by a
1 ms, 5 Gbit/s WAN: the 64 MiB allgather 1.481x the members' bound in one size, 1.450x
so; 256 MiB 1.351x and 1.312x, the 256 MiB reduce-scatter 1.511x and 1.465x, the 64 MiB
allreduce 1.626x and 1.498x).

The WAN cut bounds every plan (:func:`hetcoll.allbounds.members_bound`): on two sites of
``N / 2`` members joined by a link of ``W`` bytes/s an allgather of ``M`` bytes needs
``M / (2 W)`` at least, an allreduce ``M / W``; here a reduce-scatter's or allgather's
stream is that much, an allreduce's both, so the plan reaches the cut up to what the
ports add: under one-port models (``hockney``) a segment holds the leader's send port
for its WAN latency and transfer, the leader also sends its own block once in its site,
and a receiver's port is busy while the WAN delivers to it.

Each candidate is also simulated in the timetable of :mod:`hetcoll.planners.sitesorder`
(the flows played out on the hosts' ports: no sender waits for a busy receiver holding its
port), kept where it is faster (``params["timetable"]``; an allreduce with an empty share
keeps its trees' order); a reduce-scatter also as the allgather's timetable on the
``bcast`` trees run backwards (:func:`~hetcoll.planners.sitesorder.reversed_timetable`:
the same port loads, and on two 4-host stars faster than its own flows' play-out), an
allreduce as its broadcast phase's timetable preceded by that run backwards on the same
trees, or by its own reduce trees' play-out run backwards
(:func:`~hetcoll.planners.sitesorder.allreduce_timetable`; with one sender both phases'
WAN sends of a direction then leave one leader, the broadcast's after the reduction's in
its send order, so none shares the WAN with another: on two 4-host stars the 64 MiB
allreduce takes 1.63x the WAN cut so, 1.68x on the bcast trees).  On a platform of links
each timetable is played out in the three ways of :data:`PLAYOUTS` (on the ports alone,
or with the WAN's bytes, :class:`~hetcoll.planners.sitesorder.RouteCosts`, so that two
senders' WAN messages are staggered rather than sharing the link, each segment by its
place in its flow or the longest way first), each simulated, the fastest kept (on two
4-host stars the 8 MiB allgather 1.794x the members' bound on the ports by place, 1.411x
so).

Complexity: ``O(N)`` tree edges per member, and up to ten simulations and twelve
play-outs (``O(T log T)`` for ``T`` transfers) per fanout and segment size tried (at most
:data:`CUTS` and the whole flows per fanout): one per distinct timetable, each after the
first stopped once proved slower than the fastest (:func:`fastest_run`; the same plans).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree, transfer_budget
from ._registry import Option, register
from ._shared import keep_prediction
from .rings import _blocks
from .sitesorder import allreduce_timetable, as_broadcasts, reversed_timetable, timetable

__all__ = [
    "fastest_run",
    "halvings",
    "playouts",
    "port_floor",
    "site_groups",
    "site_tree",
    "sites",
    "wan_senders",
]

SITES_OPS = ("allgather", "reduce_scatter", "allreduce")
#: the smallest segment the planner tries (bytes)
MIN_SEGMENT = 64 << 10
#: the most segment sizes tried besides whole flows (halving from half the largest flow's)
CUTS = 6
#: the fanouts tried by default: 3 (a star in a site of up to four members) and chains
FANOUTS = (3, 1)
#: the WAN senders per site tried by default (:func:`wan_senders`)
SENDERS = (1, 2)
#: several senders' finer cuts are not tried once a cut takes this many times the fastest
#: plan so far (on two 4-host stars: the same choices at 1, 8 and 64 MiB for the three
#: operations, in less planning time; tests/test_sites_senders.py)
PRUNE = 1.2
#: the play-outs of each timetable on a platform of links, ``(links, lead)``: on the hosts'
#: ports alone or with the WAN's bytes (:class:`~hetcoll.planners.sitesorder.RouteCosts`),
#: each segment by its place in its flow (None) or the longest way to the end first (0;
#: on the ports alone that won one case of 24 on two 4-host stars, not one `auto` keeps)
PLAYOUTS = ((False, None), (True, None), (True, 0.0))


def playouts(platform: Platform) -> tuple[tuple[bool, float | None], ...]:
    """The play-outs a multi-site planner times (:data:`PLAYOUTS`; without links, on the
    ports alone, each segment by its place)."""
    return PLAYOUTS if platform.routes.has_links else ((False, None),)


def fastest_run(platform: Platform, model: Any, schedules: Sequence[Schedule]) -> tuple[int, Any]:
    """The index and the prediction of the fastest of ``schedules`` (the first of equals),
    the answer of simulating every one, bit for bit, in fewer simulations: a schedule
    equal to an earlier one (two play-outs that gave the same timetable) is not simulated
    again; of the others the last is simulated first (the play-outs a multi-site planner
    lists last win most often), then the rest in order, each only as far as it could
    still be as fast as the fastest so far (:func:`~hetcoll.simulator.simulate_within`: a
    run it stops is proved slower, so not the fastest; one that ties is never stopped, and
    the lower index wins).  O(k) simulations and O(k^2) comparisons of ``k`` schedules."""
    from ..simulator import simulate, simulate_within

    fresh = [k for k, s in enumerate(schedules) if s not in schedules[:k]]
    best = (simulate(platform, schedules[fresh[-1]], model), fresh[-1])
    for k in fresh[:-1]:
        run = simulate_within(platform, schedules[k], model, best[0].makespan)
        if run is not None and run.makespan <= best[0].makespan:
            best = (run, k) if run.makespan < best[0].makespan or k < best[1] else best
    return best[1], best[0]


def site_groups(
    platform: Platform, members: Sequence[str], planner: str = "sites"
) -> list[list[str]]:
    """``members`` grouped by their node's ``site``, in member order, each site's leader
    first (its member of the largest summed route bandwidth to the site's others, the
    first of equals) and its other members in member order.  Raises
    :class:`PlannerError` (naming ``planner``) for a member without a site or members in
    fewer than two sites."""
    groups: dict[str, list[str]] = {}
    for m in members:
        site = platform.node(m).site
        if site is None:
            raise PlannerError(
                f"{planner}: member {m!r} has no site (a multi-site platform's hosts)"
            )
        groups.setdefault(site, []).append(m)
    if len(groups) < 2:
        raise PlannerError(f"{planner}: the members must be in at least two sites")
    routes = platform.routes
    out = []
    for group in groups.values():
        idx = [platform.index(m) for m in group]
        reach = [sum(routes.pair(i, j)[1] for j in idx if j != i) for i in idx]
        lead = max(range(len(group)), key=lambda k: (reach[k], -k))
        out.append([group[lead], *(m for k, m in enumerate(group) if k != lead)])
    return out


def _receivers(group: list[str], senders: Sequence[str] = ()) -> list[str]:
    """A site's receivers of the WAN stream: its members but its senders (the leader
    alone by default; a site of one: itself)."""
    out = senders or group[:1]
    return [m for m in group if m not in out] or group[:1]


def wan_senders(platform: Platform, groups: list[list[str]], count: int) -> dict[str, list[str]]:
    """Each site's ``count`` WAN senders, by its leader: ``count`` 1 the leader; more, its
    members of the least summed route bandwidth to the site's others (the last of
    equals), at most all but one (a receiver is left), so the fast members receive the
    WAN and relay it in the site, as the hosts' packing has it."""
    routes = platform.routes
    out = {}
    for g in groups:
        h = max(1, min(count, len(g) - 1))
        if h == 1:
            out[g[0]] = g[:1]
            continue
        idx = [platform.index(m) for m in g]
        reach = [sum(routes.pair(i, j)[1] for j in idx if j != i) for i in idx]
        slow = sorted(range(len(g)), key=lambda k: (reach[k], -k))[:h]
        out[g[0]] = [g[k] for k in sorted(slow)]
    return out


def site_tree(
    groups: list[list[str]],
    root: str,
    kind: str,
    fanout: int = 3,
    senders: Mapping[str, Sequence[str]] | None = None,
) -> Tree:
    """Root ``root``'s tree (module docstring): ``root``, at place ``i`` of its site (the
    leader at 0), crosses to receiver ``(i + 1) mod k`` of each other site of ``k``
    receivers.  ``kind``: ``bcast`` (the WAN crossed by ``root``'s sender to the other
    sites' receivers) or ``reduce`` (by the other sites' leaders to the receiver of
    ``root``'s site; the tree's edges are then read child to parent).  Within a site the
    members hang off in a heap of ``fanout`` children per node (:func:`_heap`), in member
    order, a sender that does not cross the WAN there a leaf beside it, first.

    ``senders`` (``bcast`` only; by each site's leader, :func:`wan_senders`): the members
    that cross the WAN, each site's leader by default; a root among them crosses itself,
    another root's block crosses from its site's sender ``(i - h) mod h`` of ``h``, so
    several WAN streams flow at once, each sender's latency beside the others' bytes."""
    home = next(g for g in groups if root in g)
    j = home.index(root) + 1

    def out(g: list[str]) -> list[str]:
        return list(senders[g[0]]) if senders and kind == "bcast" else g[:1]

    mine = out(home)
    near = root if root in mine else mine[(home.index(root) - len(mine)) % len(mine)]
    kids: dict[str, list[str]] = {}
    rest = [m for m in home if m not in mine and m != root]
    rest += [m for m in mine if m not in (root, near)]  # the other senders: last, leaves
    if root == (near if kind == "bcast" else home[0]):
        if rest and kind == "bcast":  # the sender's port is the WAN's: a member relays
            kids[root] = [rest[0]]
            _heap(kids, rest[0], rest[1:], fanout)
        else:
            _heap(kids, root, rest, fanout)
    else:
        _heap(kids, root, rest, fanout)
        kids.setdefault(root, []).insert(0, near)  # the sender first, a leaf
    for g in groups:
        if g is home:
            continue
        theirs = out(g)
        if kind == "bcast":
            ways = _receivers(g, theirs)
            far = ways[j % len(ways)]
            others = [m for m in g if m not in theirs and m != far]
        else:
            near, far = _receivers(home)[j % len(_receivers(home))], g[0]
            others = g[1:]
        kids.setdefault(near, []).insert(0, far)  # the WAN first: the stream is the
        if others:  # bottleneck
            _heap(kids, far, others, fanout)
        if kind == "bcast":
            for s in reversed(theirs):  # the other site's senders: leaves, first
                if s != far:
                    kids.setdefault(far, []).insert(0, s)
        elif far != g[0] and len(g) > 1:
            kids.setdefault(far, []).insert(0, g[0])
    return Tree(root, {p: tuple(c) for p, c in kids.items()})


def port_floor(platform: Platform, bound: Any, flows: Sequence[Flow]) -> float:
    """A lower bound (seconds) on the simulated time of per-root ``flows`` (no relays)
    under the model ``bound`` (a :class:`~hetcoll.models.base.BoundModel` of
    ``platform``), in every order of their sends.

    Proof.  A rank has one send port: each of its transfers holds it from its start for
    ``send_busy`` at least (until the arrival under shared contention, later still), one
    transfer at a time; a receive port (models with one) is busy ``recv_busy`` ending at
    each arrival, one transfer at a time (docs/simulator.md, the send order).  Every
    segment of a flow crosses each edge of its tree once (a ``reduce`` flow's from child
    to parent), so the schedule ends no earlier than the largest sum of those busy times
    over one node's send or receive port.  O(E s) for E tree edges and s distinct segment
    sizes per flow."""
    n = len(platform)
    load = [0.0] * (2 * n)
    index = platform.index
    for f in flows:
        sizes = Counter(size for _, size in f.segments())
        up = f.kind == "reduce"
        for parent, kids in f.tree.children.items():
            p = index(parent)
            for child in kids:
                c = index(child)
                u, v = (c, p) if up else (p, c)
                for size, count in sizes.items():
                    load[u] += count * bound.send_busy(u, v, size)
                    load[n + v] += count * bound.recv_busy(u, v, size)
    return max(load, default=0.0)


def operands(
    platform: Platform,
    planner: str,
    collective: str,
    nbytes: int,
    members: Iterable[str] | None,
    sizes: Mapping[str, int] | None,
    align: int,
    ops: Sequence[str] = SITES_OPS,
) -> tuple[list[str], list[list[str]], list[int], tuple[str, ...]]:
    """``(order, groups, shares, phases)`` of a multi-site plan (``planner``'s, named in
    its errors, of the collectives ``ops``): the members in order (default every node
    with a ``site``), their sites (:func:`site_groups`), each member's share of the bytes
    (an allreduce's vector cut in near-equal multiples of ``align``, else its block) and
    the flows' kinds in order.  Raises :class:`PlannerError`, naming ``planner``, for
    another collective, a negative size, members outside two sites or ill-fitting
    ``sizes``."""
    if collective not in ops:
        raise PlannerError(f"{planner} plans {', '.join(ops)}, not a {collective}")
    if int(nbytes) < 0:
        raise PlannerError(f"{planner}: nbytes must be >= 0, got {nbytes}")
    if members is None:
        members = [node.id for node in platform.nodes if node.site is not None]
    order = list(dict.fromkeys(members))
    groups = site_groups(platform, order, planner)
    if collective == "allreduce":
        if sizes is not None:
            raise PlannerError("sizes: an allreduce has one vector, not blocks")
        return order, groups, _blocks(int(nbytes), len(order), align), ("reduce", "bcast")
    if sizes is not None and set(sizes) != set(order):
        raise PlannerError("sizes: give the block of every member")
    if sizes is not None and any(int(v) < 0 for v in sizes.values()):
        raise PlannerError(f"{planner}: sizes must be >= 0")
    shares = [int(sizes[m]) if sizes is not None else int(nbytes) for m in order]
    return order, groups, shares, ("reduce",) if collective == "reduce_scatter" else ("bcast",)


def segment_cuts(shares: Sequence[int], align: int) -> list[int | None]:
    """The segment sizes a multi-site plan tries, in order: whole (None), then halvings
    from the power of two under half the largest share, multiples of ``align``, down to
    :data:`MIN_SEGMENT` and at most :data:`CUTS` of them."""
    cuts: list[int | None] = [None]
    seg = 1 << max(max(shares, default=0) // 2, 1).bit_length() - 1
    while seg >= MIN_SEGMENT and len(cuts) <= CUTS:
        cuts.append(max(seg // align * align, align))
        seg //= 2
    return cuts


def halvings(
    cuts: Sequence[int | None],
    build: Callable[[int | None], list[Flow]],
    attempt: Callable[[int | None, list[Flow], float], float | None],
    budget: int | None = None,
) -> tuple[float, int | None]:
    """The search of the multi-site planners over their segment sizes (``sites``,
    ``site_pairs``, ``site_exchange``): for each of ``cuts`` in order (whole, then halving:
    :func:`segment_cuts`) the flows ``build(cut)`` are tried, ``attempt(cut, flows,
    fastest)`` returning the fastest time of what it tries (``fastest``: of the steps
    before; ``math.inf`` for a step it proves no faster without simulating it, None to
    stop the search), until two steps in a row gain nothing (finer cuts will not), or a
    segmented step's transfers pass ``budget``.  The attempts keep their own best plans
    (the first of equals).  Returns the fastest time and its cut (the first of equals;
    ``(inf, None)`` where nothing was timed).  O(len(cuts)) builds and attempts."""
    fastest, good, worse = math.inf, None, 0
    for cut in cuts:
        flows = build(cut)
        if cut is not None and budget is not None and sum(f.transfers for f in flows) > budget:
            break
        time = attempt(cut, flows, fastest)
        if time is None:
            break
        if time < fastest:
            fastest, good, worse = time, cut, 0
        else:
            worse += 1
            if worse == 2:
                break
    return fastest, good


def _heap(kids: dict[str, list[str]], top: str, rest: list[str], fanout: int) -> None:
    """Hang ``rest`` below ``top`` as a heap: the ``n``-th node of ``[top, *rest]``
    (from 0) the parent of nodes ``n fanout + 1`` .. ``n fanout + fanout`` (1: a chain)."""
    seq = [top, *rest]
    for n in range(1, len(seq)):
        kids.setdefault(seq[(n - 1) // fanout], []).append(seq[n])


@register(
    "sites",
    collectives=SITES_OPS,
    paper="Karonis et al. 2000 (MPICH-G2: the WAN crossed once per byte); Kielmann, Bal & "
    "Gorlatch 2000 (bandwidth-efficient wide-area collectives: the WAN kept busy); Park et "
    "al. 2004, Sec. 2; per-root flows as Zhao et al. 2024",
    complexity="O(N^2 k) tree edges (k receivers per site), one simulation per segment size tried",
    summary="multi-site hosts: each site's leader streams the WAN to the other site's "
    "receivers in turn, the sites' members fan out locally (allgather, reduce-scatter, "
    "allreduce)",
    options=("align", "fanout", "senders", "ends"),
    kind="forest",
    pipelined=True,
    own_slices=True,
)
def sites(
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
    senders: Annotated[int, Option(most=1 << 16)] | None = None,
    ends: Annotated[int, Option(most=2)] | None = None,
) -> Schedule:
    """Plan ``collective`` (``allgather``, ``reduce_scatter`` or ``allreduce``) of
    ``nbytes`` (each member's block; an allreduce's vector) among ``members`` of a
    multi-site platform (module docstring).

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
        Children per member in a site's trees (1: chains); default chosen by simulation
        among :data:`FANOUTS`.
    senders
        WAN senders per site (:func:`wan_senders`; 1: the leader); default chosen by
        simulation among :data:`SENDERS`.
    ends
        0: every block in segments of one size; 1: each site's last member's in half
        that; 2: its leader's as well (every candidate).  Default: 0 with
        ``segment_size``, else chosen by simulation after the segment size (module
        docstring).

    Returns
    -------
    Schedule
        Per-root flows (:mod:`hetcoll.perroot`) over the members; ``params``: the number
        of ``trees``, the ``segment_size`` (None: whole), the ``fanout``, whether the
        flows run in a ``timetable`` (then ``order``), the simulated ``estimate``.

    Examples
    --------
    >>> from hetcoll.generators import multisite_platform, star_platform
    >>> a = star_platform(2, ("10Gbps",))
    >>> p = multisite_platform({"a": a, "b": a}, [("a", "b", "1ms", "1Gbps")])
    >>> s = sites(p, nbytes=1 << 20, segment_size=1 << 18)
    >>> s.flows[0].tree.children  # a/0 leads site a, b/1 receives for site b
    {'a/0': ('b/1', 'a/1'), 'b/1': ('b/0',)}
    """
    from ..models import get_model

    align = max(int(align), 1)
    order, groups, shares, phases = operands(
        platform, "sites", collective, nbytes, members, sizes, align
    )

    halves = (set(), {g[-1] for g in groups if len(g) > 1})
    halves += (halves[1] | {g[0] for g in groups},)

    def build(seg: int | None, fan: int, crossing=None, ends: int = 0) -> list[Flow]:
        """The flows in segments of ``seg`` bytes (None: whole); ``ends`` 1: the blocks
        of each site's last member (the stream's end) in half that, 2: its leader's as
        well (the stream's start)."""
        flows = []
        for kind in phases:
            at = 0
            for m, share in zip(order, shares, strict=True):
                size = max(seg // 2 // align * align, align) if seg and m in halves[ends] else seg
                cut = size if size and share > size else None
                tree = site_tree(groups, m, kind, fan, crossing)
                flows.append(Flow(tree, share, at, 0, cut, kind=kind))
                at += share
        return flows

    def trees(fan: int, crossing=None) -> Callable[[str], Tree]:
        """Each root's ``bcast`` tree: those a reduce-scatter's timetable runs backwards."""
        return lambda root: site_tree(groups, root, "bcast", fan, crossing)

    def make(flows: list[Flow], estimate: float, seg: int | None, fan: int, order=None,
             h: int = 1) -> Schedule:  # fmt: skip
        params = {"trees": len(flows), "segment_size": seg, "fanout": fan, "senders": h,
                  "estimate": estimate, "timetable": order is not None}  # fmt: skip
        return Schedule(collective, "sites", max(int(nbytes), 0), tuple(flows), params,
                        order=order, sizes=sizes)  # fmt: skip

    def floor(flows: list[Flow], fan: int, crossing=None) -> float:
        """:func:`port_floor` of every variant :func:`runs` simulates (the least): the
        flows, and a reduce-scatter's or an allreduce's on its ``bcast`` trees run
        backwards (the same segments)."""
        low = port_floor(platform, bound, flows)
        if len(flows) < 2 or not all(f.nbytes for f in flows):
            return low
        down = as_broadcasts([f for f in flows if f.kind == "reduce"], trees(fan, crossing))
        if not down:
            return low
        back = [replace(f, kind="reduce") for f in down]
        other = back + down if collective == "allreduce" else back
        return min(low, port_floor(platform, bound, other))

    def runs(flows: list[Flow], seg: int | None, fan: int, crossing=None) -> tuple[Any, ...]:
        """``(time, order, prediction, flows)`` of the fastest (the first of equals:
        :func:`fastest_run`) of the flows in their trees' order, in the play-out's
        timetable (:mod:`hetcoll.planners.sitesorder`) and, for a reduce-scatter, the
        allgather's timetable run backwards
        (:func:`~hetcoll.planners.sitesorder.reversed_timetable`; an allreduce: then
        forwards, :func:`~hetcoll.planners.sitesorder.allreduce_timetable`, the reduce
        phase on the bcast trees, then on its own)."""
        out = [make(flows, 0.0, seg, fan)]
        if len(flows) > 1 and all(f.nbytes for f in flows):
            plain = out[0]
            for links, lead in playouts(platform):
                out.append(timetable(platform, plain, model, links, lead))
                if collective == "reduce_scatter":
                    out.append(reversed_timetable(platform, plain, model, links, lead,
                                                  trees(fan, crossing)))  # fmt: skip
                if collective == "allreduce":
                    out += [allreduce_timetable(platform, plain, model, own, links, lead)
                            for own in (False, True)]  # fmt: skip
        k, run = fastest_run(platform, model, out)
        return run.makespan, out[k].order, run, list(out[k].flows)

    fans = FANOUTS if fanout is None else (int(fanout),)
    counts = SENDERS if senders is None else (max(int(senders), 1),)
    fixed = int(ends or 0)
    if fixed not in (0, 1, 2):
        raise PlannerError(f"sites: ends is 0, 1 or 2, got {ends}")
    outs: list[tuple[int, dict[str, list[str]]]] = []  # the counts of distinct senders
    for h in counts:
        crossing = wan_senders(platform, groups, h)
        if all(crossing != seen for _, seen in outs):
            outs.append((h, crossing))
    if segment_size:
        seg = max(int(segment_size) // align * align, align)
        tried = []
        for (h, crossing), fan in itertools.product(outs, fans):
            flows = build(seg, fan, crossing, fixed)
            t, timed, _, fl = runs(flows, seg, fan, crossing)
            tried.append(make(fl, t, seg, fan, timed, h))
        return min(tried, key=lambda s: s.params["estimate"])  # the first of equals
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    budget = transfer_budget(bound.contention) // 4
    best = None
    cuts = segment_cuts(shares, align)
    for (h, crossing), fan in itertools.product(outs, fans):
        halt = False

        def attempt(seg: int | None, flows: list[Flow], mine: float, h=h, fan=fan,
                    crossing=crossing) -> float | None:  # fmt: skip
            """The fastest of :func:`runs`; untried where :func:`port_floor` shows no
            gain; several senders stop there, or once a cut is far behind the fastest."""
            nonlocal best, halt
            if halt:
                return None
            if mine < math.inf:
                low = floor(flows, fan, crossing)
                if low >= mine and (h == 1 or low > PRUNE * best[0]):
                    return None if h > 1 else math.inf
            fastest = runs(flows, seg, fan, crossing)
            if best is None or fastest[0] < best[0]:
                best = (*fastest, seg, fan, h)
            halt = h > 1 and fastest[0] > PRUNE * best[0]
            return fastest[0]

        halvings(cuts, lambda seg, fan=fan, crossing=crossing: build(seg, fan, crossing, fixed),
                 attempt, budget)  # fmt: skip
    seg, fan, h = best[4:]
    if seg is not None and ends is None:  # blocks in half segments: a shorter fill and drain
        crossing = wan_senders(platform, groups, h)
        for half in (1, 2):
            flows = build(seg, fan, crossing, half)
            if sum(f.transfers for f in flows) > budget:
                break
            fastest = runs(flows, seg, fan, crossing)
            if fastest[0] < best[0]:
                best = (*fastest, seg, fan, h)
    time, order, run, flows, seg, fan, h = best
    sched = make(flows, time, seg, fan, order, h)
    keep_prediction(platform, sched, model, run)
    return sched
