"""``multi_tree``: a schedule that reaches the optimal multi-tree throughput.

Beaumont, Marchal & Robert (2004) compute the optimal MTP throughput and stop there ("mostly
of theoretical interest", Sec. 1).  Here the optimum comes with its trees (the arborescence
packing of :func:`hetcoll.planners.steady.pack_arborescences`), and the schedule runs them
all at once:

1. **Integer periods.** Tree ``i`` carries ``lambda_i`` slices per second; scaled to a period
   and rounded, it carries ``m_i`` whole slices per period (the smallest period, among
   16, 24, 32, 48, ..., 4096 slices, whose rounding keeps 99.8 % of the optimum and whose
   timetable, step 3, keeps 99.5 %).  The
   rounding rounds down, then hands the remaining slices one at a time to the tree that
   keeps the busiest port least busy (about half the period that rounding to the nearest
   needs for the same share at 30-50 nodes), then moves single slices from tree to tree
   while that lowers the busiest port (:mod:`.period_rounding`).
2. **Flows.** Each tree becomes a pipelined flow carrying its share of the message
   (``m_i / sum m`` of the slices, contiguous bytes).
3. **Timetable.** One period's transfers form a bipartite multigraph between the senders'
   out-ports and the receivers' in-ports whose weighted degree is at most the period (the
   packing's port constraints).  A dense list schedule packs them (an open shop: whenever
   a sender and a receiver are both free, a transfer between them starts, the busiest
   ports first; for a finite message without ``slices_per_period`` also one with each
   pair's transfers spread over the period, the one that ends first kept) into a periodic
   timetable, usually within a fraction of a percent of the period.  Each slice takes its
   pair's first free transfer at or after it arrives, a later period's when it arrives
   after every free one (its *lag*).  Not a Birkhoff-von Neumann decomposition of the
   period into matchings: its matchings cut transfers at arbitrary times, and the orders
   taken from them reach only 60-70 % of the optimum at 30 nodes once executed.
4. **Order.** The schedule's ``order`` is that timetable (``[flow, child, lag, slot]``):
   every node sends and receives in slot order, one after the other, so the execution is
   a self-timed run of a feasible periodic schedule and keeps its period.

**The message's size.**  A periodic timetable fills its pipeline in a fraction of a period
per hop, so a long period that keeps 99.8 % of the optimum is slow for a short message.
Without ``slices_per_period``, every period of :data:`~.periodic_timetable.PERIODS` up to
an eighth of the message's slices (:data:`~.periodic_timetable.LONGEST`; and up to the
first whose timetable keeps 99.5 %) is timetabled (:mod:`.periodic_timetable` builds the
periodic timetables of steps 1, 3 and 4), and so is, under two ports per node and up to
:data:`MESSAGE_TRANSFERS` transfers, the whole message as one period
(:func:`_message_timetable`: the slices split in proportion to the trees' weights and list
scheduled in time, each node forwarding a slice as soon as it holds it and its ports are
free, so the start-up and the drain take a few transfers per hop instead of periods of
lag).  The one whose run ends first by :func:`~.periodic_timetable.finish_bound`
(``span * (periods - 1)`` plus when the first period's slices have all arrived, which the
self-timed run never exceeds) is kept; then the best single trees (``throughput_tree``'s,
the paper heuristics' it starts from, ``binomial_graph``'s) are simulated, and the fastest
returned instead when it ends no later (the timetable is simulated too when the bound does
not decide and the message has at most :data:`SIMULATED` slices).  So ``multi_tree`` is
never predicted slower than any of them; ``benchmarks/simulated/bench_sizes.py`` prints
both against the lower bound
(:func:`hetcoll.bounds.lower_bound`) per size.

**Slack** (two ports per node).  The packing LP is degenerate: its prices name one to three
ports at n = 50, but its vertex loads twenty-odd near the busiest, and each saturated port
falls behind wherever a slice reaches it late.  The trees of a packing of the same rate
that loads every port the optimum does not force at most 93 % (:mod:`.slack_packing`) are
timetabled the same way (:func:`_slack`) and kept when they end first: the whole message's
span before the kept schedule's run (simulated when not known), a periodic timetable's
finish bound before the kept one's, as among periods.  Their periods are also timetabled
repaired (:func:`~.dense_timetable.repaired_timetable`), one more candidate each, and the
periods of :data:`~.periodic_timetable.FINER` too.

**Start-up and drain** (two ports per node).  The periodic timetable kept, when its finish
bound rather than a simulated run decided (no whole message list scheduled) and every flow
has at least twice :data:`~.startup.PERIODS` periods, has the transfers of its first
periods list scheduled (:func:`~.startup.started`: a port sends whichever of them has
arrived instead of waiting for its lags in the timetable's order), kept when that lowers
the finish bound: 8 192 slices on the n = 50 platforms of ``bench_sizes.py`` end 0-0.31 %
of the bound sooner.  Then the transfers of its last :data:`~.startup.DRAIN` periods are
list scheduled the same way after the others (:func:`~.startup.drained`), kept when that
lowers the finish bound: 0-0.14 % of the bound sooner there (8 192 and 10^4 slices); up to
:data:`DRAIN_SIMULATED` transfers only when the simulated run ends sooner too
(:func:`_faster`).  The start-up and the drain lower the finish bounds of different
periods by different amounts (they take most of the fill away), so the timetables of up
to :data:`~.periodic_timetable.RUNNERS_UP` other periods (of the same trees) whose
periods alone end first, and before the kept one's, get theirs too, and the one that
then ends first by its bound is kept (:func:`_ends_first`).  The kept period's start-up
is also list scheduled with the transfers on a path to a priced port first (by
:data:`~.startup.AHEAD` periods), and kept with its own drain where that ends first by
its bound: 8 192 slices at n = 50 reach 98.52 / 99.41 / 98.56 / 99.24 / 99.02 % of the
bound (seeds 0-4; 10^4 slices 98.74 / 99.52 / 98.47 / 99.38 / 99.20 %; ``bench_sizes.py
--sizes 50 --seeds 5 --slices 8192,10000``), where the kept period alone, in the
timetable's order, reaches 98.45 / 99.29 / 98.27 / 98.99 / 99.02 %.

**A port per link** (``multi_port``).  The packing above is the one-port problem's, which
does not model those ports, so under ``multi_port`` the message is also carried whole by the
multi-port packing's trees, or those of its packing on whole port sends
(:mod:`.port_slots`), whichever list schedules it first (:func:`_multi_port_message`: each
tree pipelines its weight-proportional share of the slices along its own links, each node
sending in the order of a list schedule of the model's ports and links, whose run ends
when the list schedule does), and the fastest of the candidates is kept
(:mod:`.port_choice`; the triangle of
``tests/test_planners_multi_tree_multiport.py``: two trees, 51.0 ms for 100 slices where
every single tree takes 100.0 ms).

The simulator then measures the rate the program achieves
(:func:`hetcoll.simulator.steady_state`): at least 99 % of the optimum once the pipeline
is full.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import Annotated, Any

import numpy as np

from ..errors import PlannerError, ScheduleError
from ..platform import Platform
from ..schedule import (
    MAX_TRANSFERS,
    Flow,
    ListedOrder,
    Schedule,
    Tree,
    check_transfers,
)
from ._common import relays
from ._registry import Option, register
from ._shared import packing as shared_packing
from .justify import justified
from .message_schedule import listed_order, message_transfers, send_order
from .period_rounding import fewest_flows
from .period_rounding import shares as _shares
from .period_rounding import shares_and_loads as _shares_and_loads
from .periodic_timetable import PERIODS, candidate_periods, timetabled
from .pipelined import PlanGraph, _bfs_edges, _grow_one_port, _schedule, _start, best_tree
from .port_choice import (
    DeferredMessage,
    message_cap,
    multi_port_choice,
    single_tree,
    with_run_starts,
)
from .port_order import listed_send_order
from .port_slots import SLACK_CAP, TRIAL, TRIAL_SLICES, gap_problem, message_trees, slot_problem
from .relayed_trees import relayed, relayed_choice, untimed
from .single_bounds import bound_problem as _bound_problem
from .single_bounds import hops_bound as _hops_bound
from .single_bounds import port_bound as _port_bound
from .single_bounds import run_bound as _run_bound
from .single_bounds import tree_floor as _tree_floor
from .single_bounds import trees_exceed as _trees_exceed
from .slack_packing import shared_slack
from .startup import AHEAD, drained, priced_edges, started
from .startup import PERIODS as STARTUP
from .steady import Packing, unbounded

__all__ = ["multi_tree"]

#: the most slices for which the timetable is simulated when its finish bound does not decide
SIMULATED = 2048
#: the most slices for which binomial_graph's tree is a single-tree candidate (a shallow tree
#: wins only while the fill matters)
SHORT = 256
#: the most transfers of a message list scheduled whole (:func:`_message_timetable`)
MESSAGE_TRANSFERS = 120_000
#: the most transfers of a message whose periodic timetable is simulated with and without
#: its drain (:func:`_faster`), the faster kept (a lower finish bound may end no sooner:
#: n = 30, 10^4 slices, three of the five platforms of ``bench_sizes.py``); a longer one
#: keeps its drain by the finish bound alone, where a simulation costs about what planning
#: does (n = 50, 8 192 and 10^4 slices: its run ends sooner on all five platforms)
DRAIN_SIMULATED = 400_000


@register(
    "multi_tree",
    collectives=("bcast", "multicast"),
    paper="hetcoll, after Beaumont, Marchal & Robert 2004 Sec. 4.1 (optimal MTP throughput)",
    complexity="column generation + O(K (N + E)) matchings for K slots",
    summary="the optimal multi-tree packing as pipelined flows in a matching order",
    models=("one_port", "one_port_uni", "multi_port"),
    options=("slices_per_period",),
    pipelined=True,
)
def multi_tree(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    slices_per_period: Annotated[int, Option(most=PERIODS[-1])] | None = None,
) -> Schedule:
    """Several pipelined trees at once, at the optimal one-port throughput.

    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As every planner; the slice is ``segment_size`` (the whole message if None).
    slices_per_period : int, optional
        Round the trees' weights to this many slices per period and always run the
        timetable (default: for the message given, see "The message's size" in the module
        docstring).

    Returns
    -------
    Schedule
        One flow per tree (``params["trees"]`` of them), ``order`` the per-node send order
        of one period (``params["slices_per_period"]`` slices), ``params["period"]`` its
        seconds, ``params["finish_bound"]`` when the run ends at the latest,
        ``params["optimum"]`` the optimal throughput (bytes/s); or, when it is predicted
        faster, the best single tree (``throughput_tree``'s, ``params["trees"] == 1``).

    Notes
    -----
    See the module docstring.  The trees are spanning arborescences of the links' digraph
    (of the members, with store-and-forward relays, for a multicast).  A timetable has no
    relays: trees with a relayed edge send in its issue order without its slots (no
    ``period`` nor ``finish_bound``), kept only when the simulator finishes them before the
    best single tree (:mod:`.relayed_trees`).
    """
    req, g = _start(platform, root, members, model, nbytes, segment_size)
    prob = g.problem()
    if g.k == 1 or req.nbytes == 0 or unbounded(prob):
        # one tree of transfers that take no time already carries any rate
        return _schedule(req, g, "multi_tree", _grow_one_port(g))
    packing = shared_packing(prob)
    size = req.message_size()
    total = -(-req.nbytes // size)
    optimum = packing.throughput * size

    def singles(beat: float, *more: Schedule) -> tuple[Schedule | None, float]:
        return _fastest_single(platform, req, g, packing, optimum, total, *more, beat=beat)

    whole = None
    if g.ports == "multi" and slices_per_period is None:
        whole = _multi_port_listed(platform, req, g, total)
    if whole is not None and _periodic_left_out(g, packing, total):
        return multi_port_choice(platform, req, g, None, whole, singles, total <= SIMULATED)
    # periods of at most an eighth of the message's slices (LONGEST, see timetabled)
    others: list = []  # the runners-up among periods (their start-up and drain tried too)
    m, trees, timetable, finish = timetabled(g, packing, slices_per_period, total, False, others)
    multi = _timetable_schedule(req, g, m, trees, timetable, total, optimum, finish)
    if slices_per_period is not None:
        return multi
    if relayed(multi):  # a multicast's relayed trees: no timetable (.relayed_trees)
        singles = partial(_fastest_single, platform, req, g, packing, optimum, total)
        return relayed_choice(platform, req, multi, singles)
    periodic = multi
    multi, finish, known, listed = _whole_message(platform, req, g, packing, multi, finish, total)
    got = _slack(platform, req, g, packing, total, multi, finish, known, others)
    if got is not None:
        periodic, (multi, finish, known) = got[0], got
    elif listed is not None:  # built only now: the slack packing's message often ends first
        multi = _listed_schedule(platform, req, g, listed, total, optimum)[0]
    if g.ports == "multi":
        return multi_port_choice(platform, req, g, multi, whole, singles, total <= SIMULATED)
    if multi.params.get("trees", 1) == 1:  # one of the packing's trees: one more candidate
        # the periodic timetable's simulated time (not the whole message's span): not again
        ran = (multi, known) if known is not None and multi is periodic else None
        return _fastest_single(platform, req, g, packing, optimum, total, multi, ran=ran)[0]
    # two ports per node: the timetable ends by ``finish``, so a single tree that cannot
    # end by then need not be simulated (one port per node: it may end later)
    bounded = _two_ports(platform, req, g)
    if bounded and known is None and multi is periodic:  # its first periods list scheduled
        alternates = [
            _timetable_schedule(req, g, om, ot, make(), total, optimum, of)
            for om, ot, make, of in others
        ]
        multi, finish, last = _ends_first(req, g, packing, multi, finish, alternates)
        if last is not None and total * (g.k - 1) <= DRAIN_SIMULATED:
            last, known = _faster(platform, req, multi, last)
        if last is not None:
            multi, finish = last, last.params["finish_bound"]
    if not bounded:  # the event loop simulates the timetable, within its cap
        check_transfers(multi.flows, MAX_TRANSFERS, " simulated under this model's ports")
    single, single_time = _fastest_single(
        platform, req, g, packing, optimum, total, beat=finish if bounded else None
    )
    if single is None:
        return multi
    wins = _single_wins(platform, req, g, single_time, multi, finish, total, known)
    return single if wins else multi


def _ends_first(
    req, g: PlanGraph, packing: Packing, multi: Schedule, finish: float, alternates: list
):
    """``(schedule, finish, last)``: of the periodic timetable ``multi`` (its run ends by
    ``finish``) and ``alternates`` (other periods' of the same trees), the one whose
    finish bound is the lowest once its first periods are list scheduled
    (:func:`~.startup.started`, where that lowers it: ``schedule`` and ``finish``) and
    then its last periods (:func:`~.startup.drained`, ``last``, None where that does not
    lower it); ties: the first (``multi``).

    The start-up and the drain lower the bounds of different periods by different
    amounts (1.5-5 % of the run, most of the fill): on the n = 50 platforms of
    ``benchmarks/simulated/bench_sizes.py``, seeds 1, 2 and 3, 8 192 slices, a period
    other than the one that finishes first as a timetable (24, 20 and 32 slices) ends
    first with them (40, 28 and 40 slices), and its simulated run ends sooner too.
    O(candidates) start-ups and drains."""
    best = None
    candidates = [(multi, finish)] + [(x, x.params["finish_bound"]) for x in alternates]
    for one, bound in candidates:
        end, *kept = _start_and_drain(req, g, one, bound, started(req, g, one))
        if best is None or end < best[0]:
            best = (end, *kept, one, bound)
    assert best is not None
    end, one, bound, last, periodic, periodic_bound = best
    # the kept period's start-up with the paths to the priced ports first, where its
    # bound is lower (then with its own drain), kept where that ends first
    priced = priced_edges(g, packing.prices)
    ahead = [started(req, g, periodic, ahead=x, priced=priced) for x in AHEAD]
    ahead = [x for x in ahead if x is not None and x.params["finish_bound"] < bound]
    if ahead:
        first = min(ahead, key=lambda x: x.params["finish_bound"])  # (ties: the first)
        got = _start_and_drain(req, g, periodic, periodic_bound, first)
        if got[0] < end:
            return got[1:]
    return one, bound, last


def _start_and_drain(req, g: PlanGraph, one: Schedule, bound: float, first: Schedule | None):
    """``(end, schedule, finish, last)``: the periodic timetable ``one`` (its run ends by
    ``bound``) with its start-up ``first`` (:func:`~.startup.started`'s, None: none),
    then with its drain (:func:`~.startup.drained`, ``last``, None where that does not
    lower its bound ``finish``), ``end`` the lower of the two bounds."""
    lead = 0.0
    if first is not None:
        # its keys p >= 1 start at the start-up's span plus p - 1 periods
        lead = first.params["finish_bound"] - bound + (STARTUP - 1) * one.params["period"]
        one, bound = first, first.params["finish_bound"]
    last = drained(req, g, one, lead)  # its last periods list scheduled
    end = bound if last is None else last.params["finish_bound"]
    return end, one, bound, last


def _faster(platform: Platform, req, multi: Schedule, last: Schedule):
    """``(last, its time)`` when ``last`` (``multi`` with a drain) is simulated faster than
    ``multi``, else ``(None, multi's time)``: where both are simulated (up to
    :data:`DRAIN_SIMULATED` transfers), the drain is kept only where its run ends sooner
    (its finish bound is lower, yet the run may end as soon without it: on a Fig. 4
    platform, n = 30, seed 0, 8 192 slices of 128 KiB, both end at 17.5632 s)."""
    from ._shared import simulate_kept as simulate

    before = simulate(platform, multi, req.model).makespan
    after = simulate(platform, last, req.model).makespan
    return (last, after) if after < before else (None, before)


def _whole_message(
    platform: Platform, req, g: PlanGraph, packing: Packing, multi: Schedule, finish, total
) -> tuple[Schedule, float, float | None, Any]:
    """``(multi, finish, known, listed)``: the periodic timetable ``multi`` (its run ends
    by ``finish``; ``listed`` None) or, when it is predicted faster, the whole message list
    scheduled as one period, under two ports per node and up to :data:`MESSAGE_TRANSFERS`
    transfers (its run ends at its span): ``listed`` its :func:`_listed_message`, made a
    schedule by :func:`_listed_schedule` where kept; ``known`` the simulated time, or None.

    The periodic run ends by its finish bound, often sooner (on the 8-rank
    ``examples/net.json`` platform, 50 MiB in 100 KiB slices, with the packing HiGHS
    1.13-1.16 returns, a bound of 108.0 ms for a run of 99.6 ms, where the whole message
    takes 101.3 ms): when the whole message ends before the bound, the periodic timetable
    is simulated, and kept when it ends no later."""
    from ._shared import simulate_kept as simulate

    if not _message_sized(g, total):
        return multi, finish, None, None
    listed = _listed_message(g, packing, total)
    span = listed[2][1]
    if span >= finish:
        return multi, finish, None, None
    ran = simulate(platform, multi, req.model).makespan
    if span >= ran:
        return multi, finish, ran, None
    return multi, span, span, listed


def _slack(platform: Platform, req, g: PlanGraph, packing: Packing, total: int, *ours):
    """``(schedule, finish, known)`` as :func:`_listed_schedule` gives them, of the trees
    of :func:`~.slack_packing.slack_packing` (the same rate, fewer saturated ports) under
    two ports per node, when it ends before ``ours``, the ``(schedule, finish, known)``
    kept so far as :func:`_whole_message` gives them (else None; ``schedule`` only read
    when ``known`` is None): the whole message list scheduled (:func:`_message_timetable`,
    ``known`` its span) where :func:`_message_sized`, before ``known`` or else the
    simulated run of ours; else its periodic timetable (``known`` None), when its finish
    bound is below ours, as :func:`timetabled` chooses among periods.  ``ours`` may end
    with ``others``, the runners-up among ours' periods (:func:`timetabled`'s), which
    those of the slack packing's periodic timetable then replace."""
    from ._shared import simulate_kept as simulate

    slack = shared_slack(g.problem(), packing) if g.ports == "bidirectional" else None
    if slack is None:
        return None
    optimum = packing.throughput * req.message_size()
    multi, beat, known, others = (*ours, None)[:4]
    if not _message_sized(g, total):
        runners: list = []
        m, trees, timetable, finish = timetabled(g, slack, None, total, True, runners)
        if finish >= (beat if known is None else known):
            return None
        if others is not None:  # its runners-up among periods, in place of ours
            others[:] = runners
        periodic = _timetable_schedule(req, g, m, trees, timetable, total, optimum, finish)
        return periodic, finish, None
    listed = _listed_message(g, slack, total)
    span = listed[2][1]
    if span >= beat or span >= (known or simulate(platform, multi, req.model).makespan):
        return None
    return _listed_schedule(platform, req, g, listed, total, optimum)


def _listed_message(g: PlanGraph, packing: Packing, total: int):
    """``(shares, trees, (transfers, span))``: ``packing``'s trees with a positive share
    of the ``total`` slices and the whole message list scheduled on them, as
    :func:`_message_timetable` (listed node by node only if :func:`_listed_schedule`)."""
    share = _shares(total, list(packing.weights))
    keep = [i for i in range(len(share)) if share[i] > 0]
    mm, trees = [share[i] for i in keep], [packing.trees[i] for i in keep]
    return mm, trees, justified(g, *message_transfers(g, trees, mm))


def _listed_schedule(platform: Platform, req, g: PlanGraph, listed, total: int, optimum):
    """``(schedule, span, span)`` of :func:`_listed_message`'s ``listed``: its run ends at
    its span, recorded so that it is not simulated again where the run goes as listed."""
    from ._shared import keep_makespan
    from .known_runs import runs_as_listed

    mm, trees, (transfers, span) = listed
    timetable = (listed_order(transfers), span, span)
    whole = _timetable_schedule(req, g, mm, trees, timetable, total, optimum, span)
    if runs_as_listed(req, g, total):  # its simulated run ends at span: not simulated again
        keep_makespan(platform, whole, req.model, span)
    return whole, span, span


def _multi_port_message(platform: Platform, req, g: PlanGraph, total: int) -> Schedule | None:
    """:func:`_multi_port_listed`'s message made a schedule (None where it is None)."""
    listed = _multi_port_listed(platform, req, g, total)
    return None if listed is None else listed.schedule


def _multi_port_listed(platform: Platform, req, g: PlanGraph, total: int) -> DeferredMessage | None:
    """The trees of the optimal multi-port packing (:func:`~hetcoll.planners.steady.
    model_problem`'s: each sender's port serialised, each link one resource per direction),
    or of its packings on whole port sends (:mod:`.port_slots`: slots, and gaps and the
    gap packing's slack packing where they end sooner), whichever list schedules the
    message first, as flows of weight-proportional
    shares of the message's ``total`` slices, each node sending in the order of that list schedule
    (:func:`~hetcoll.planners.port_schedule.multi_port_transfers`), the whole message one period
    (``params["period"]`` that list schedule's end); None for a multicast, a broadcast of
    fewer than two slices or more messages than the simulator replays
    (:func:`~hetcoll.planners.port_choice.message_cap`: its list schedule costs a few
    seconds of CPU there, where :data:`MESSAGE_TRANSFERS` caps the one-port one).

    Each tree is pipelined along its own links and the packing shares the ports and the
    links among them, so the message arrives at nearly the optimal rate once every tree's
    pipeline is full."""
    from .steady import model_problem

    if req.collective != "bcast" or total < 2 or total * (g.k - 1) > message_cap(platform, req, g):
        return None
    prob = model_problem(platform, req.root, req.message_size(), req.model)
    if unbounded(prob) or not (
        np.array_equal(prob.src, g.src) and np.array_equal(prob.dst, g.dst)
    ):  # pragma: no cover - a broadcast's plan graph is the links' digraph
        return None
    packing = shared_packing(prob)
    slots, gaps = slot_problem(prob), gap_problem(prob)
    packings = [packing] + [shared_packing(x) for x in (slots, gaps) if x is not None]
    first = len(packings) - (gaps is not None)
    # challengers, each kept only where faster (message_trees): the gap packing, then the
    # slack packing of the gap packing (else of the optimal one), with patience too
    slack = shared_slack(gaps or prob, packings[-1], SLACK_CAP)
    patient = len(packings)
    packings += [slack] if slack is not None else []
    splits, trials = [], []  # the message's, and over TRIAL slices a trial's
    trial = min(total, TRIAL_SLICES) if total > TRIAL else total
    for packs in packings:
        for slices, out in ((total, splits), (trial, trials)):
            share = _shares(slices, list(packs.weights))
            keep = [i for i in range(len(share)) if share[i] > 0]
            out.append(([packs.trees[i] for i in keep], [share[i] for i in keep]))
    kept, transfers, span = message_trees(g, splits, trials, first, patient)
    trees, mm = splits[kept]
    starts: dict[str, np.ndarray] = {}
    order = partial(listed_send_order, transfers, starts=starts)  # each node's sends as they start
    optimum = packing.throughput * req.message_size()
    # the schedule carries these starts: the simulator checks them and, where they hold,
    # replays no more
    timetable = (order, span, span)
    build = partial(_timetable_schedule, req, g, mm, trees, timetable, total, optimum, None, starts)
    return DeferredMessage(build, span, sum(1 for x in _shares(total, mm) if x))


def _two_ports(platform: Platform, req, g: PlanGraph) -> bool:
    """Whether each node has one send and one receive port (``one_port``): then a
    timetable's self-timed run ends by its finish bound.  Not with one port per node
    (``one_port_uni``) nor a port per link (``multi_port``, where :func:`_port_bound`, a
    one-port load, does not bound a tree's run either: on a Fig. 4 platform, n = 30,
    seed 0, 256 slices, it was above ``throughput_tree``'s simulated time, which left that
    tree out and kept one 1.4 % slower)."""
    uni = getattr(req.model.bind(platform), "unidirectional", False)
    return not uni and g.ports != "multi"


def _fastest_single(
    platform: Platform,
    req,
    g: PlanGraph,
    packing: Packing,
    optimum,
    total,
    *more: Schedule,
    beat: float | None = None,
    ran: tuple[Schedule, float] | None = None,
) -> tuple[Schedule | None, float]:
    """The single pipelined tree simulated fastest for this message and its time:
    ``throughput_tree``'s (the least period), the paper heuristics' trees it starts from
    (shallower ones fill sooner) and, up to :data:`SHORT` slices, ``binomial_graph``'s
    (relayed, so simulated by the event loop), then ``more`` (ties: that order).

    A tree is not simulated when its busiest port (or link, under ``multi_port``:
    :func:`~hetcoll.planners.single_bounds.bound_problem`) alone, busy its load for each
    of the message's full slices (the argument of :func:`hetcoll.bounds.rate_bound`; each
    hop of a relayed edge counted, :func:`_hops_bound`), already takes longer than the
    fastest so far: it could not be chosen; nor, with ``beat``, when that takes longer
    than ``beat`` (then ``(None, inf)`` when no candidate is left; past :data:`SHORT`
    slices, known before the trees are built when the bounds of ``more`` exceed ``beat``
    and so does :func:`~.single_bounds.tree_floor` or, proved by
    :func:`~.single_bounds.trees_exceed`, every tree's :func:`~.single_bounds.port_bound`),
    nor one with more messages than
    :data:`~hetcoll.schedule.MAX_TRANSFERS` (a timetable may have more; under
    ``multi_port``, where :func:`~.port_choice.message_cap` allows, it is a tree with a
    send order, :func:`~.port_choice.listed_tree`); ``ran``, a
    schedule of ``more`` and its simulated time, is not simulated again.

    Under ``multi_port`` the candidates are simulated first in order of their bounds
    (ties: the order above), each tree's :func:`~.single_bounds.run_bound` (its start-up, its
    busiest port's sends and its drain: within 10^-10 of the run where a saturated port
    sets the rate), and none whose bound exceeds the fastest so far (or ``beat``): the
    fastest, first in the order above among equals, is simulated, so it is the one kept
    whenever some candidate ends by ``beat`` (at n = 50, seed 4, 10^4 slices, one run of
    0.4 s CPU, where the six candidates' runs take 2-3 s).  Where none does, and under
    the other models, the one the candidates simulated in the order above keep
    (:func:`_in_order`, the runs already made not made again).  The tree kept there, where
    it has a send order, carries its run's starts (:func:`~.port_choice.with_run_starts`),
    so that a simulation of it skips the send-order shortcut's Python loop."""

    from ._shared import kept_as
    from ._shared import simulate_kept as simulate
    from .pipelined import binomial_graph

    prob = _bound_problem(platform, req, g)
    # every candidate's bound is above beat: none is simulated (the trees' floor, else the
    # search that proves that no tree of the graph fits, ~1 ms at n = 50)
    if (
        total > SHORT
        and beat is not None
        and prob is not None
        and all(_hops_bound(prob, req, g, s, total) > beat for s in more)
        and (
            _tree_floor(prob, g, total) > beat
            or _trees_exceed(prob, (total - 1) * (1 - 1e-9), beat)
        )
    ):
        return None, np.inf
    start, edges, papers = best_tree(g, packing)
    trees = [(start, edges), *papers.items()]
    found: list[tuple[Schedule | None, list[int] | None]] = [(None, tree) for _name, tree in trees]
    if total <= SHORT:
        members = None if req.collective == "bcast" else [req.ids[m] for m in req.members]
        b = binomial_graph(
            platform,
            req.ids[req.root],
            members,
            req.model,
            nbytes=req.nbytes,
            segment_size=req.segment_size,
        )
        params = {"trees": 1, "optimum": optimum, "start": "binomial_graph"}
        found.append((replace(b, algorithm="multi_tree", params=params), None))
    found += [(s, None) for s in more]
    built: dict[int, Schedule | None] = {}  # each candidate's schedule, once built

    def build(i: int) -> Schedule | None:
        """Candidate ``i``'s schedule; None over a single tree's message cap."""
        if i not in built:
            s, tree = found[i]
            if tree is not None:
                try:
                    s = single_tree(req, g, tree, trees=1, optimum=optimum, start=trees[i][0])
                except ScheduleError:  # more messages than a single tree may send
                    s = None
            built[i] = s
        return built[i]

    times: dict[int, float] = {}
    runs: dict[int, Any] = {}  # the runs of trees with a send order (the best one kept)

    def run(i: int) -> float:
        """Candidate ``i``'s simulated time (the same transfers: the same run)."""
        if i not in times:
            s = built[i]
            assert s is not None
            same = [j for j in times if built[j].flows == s.flows and built[j].order == s.order]
            if same:
                times[i] = times[same[0]]
            elif ran is not None and s is ran[0]:
                times[i] = ran[1]
            else:
                got = simulate(platform, s, req.model)
                times[i] = got.makespan
                if s.order:
                    runs[i] = got
        return times[i]

    bounds = _run_bounds(platform, req, g, prob, found, build, total, beat)
    best: tuple[float, int] | None = None
    most = np.inf if beat is None else beat
    for low, i in sorted(bounds):
        if low > min(most, np.inf if best is None else best[0]):
            break  # (sorted: none after it either)
        t = run(i)
        if best is None or (t, i) < best:
            best = (t, i)
        for j in [j for j in runs if j != best[1]]:  # (one run of 10^5 transfers held)
            del runs[j]
    if best is not None and best[0] <= most:
        s = built[best[1]]
        assert s is not None
        if best[1] in runs:  # its run's starts: a simulation of it skips its Python loop
            s, kept = with_run_starts(s, runs.pop(best[1])), s
            kept_as(kept, s)
        return s, best[0]
    return _in_order(found, build, run, prob, req, g, total, beat)


def _run_bounds(platform: Platform, req, g: PlanGraph, prob, found, build, total: int, beat):
    """``(bound, i)`` of :func:`_fastest_single`'s candidates under ``multi_port`` (none
    else): each tree's :func:`~.single_bounds.run_bound`, or its port bound where that is
    more; left out, those over a single tree's message cap or whose port bound exceeds
    ``beat``."""
    if g.ports != "multi":
        return []
    most = np.inf if beat is None else beat
    out = []
    for i, (_s, tree) in enumerate(found):
        low = 0.0
        if tree is not None and prob is not None:
            low = _port_bound(prob, tree, total)
            if low > most:
                continue
        s = build(i)
        if s is None:
            continue
        if tree is None and prob is not None:
            low = _hops_bound(prob, req, g, s, total)
            if low > most:
                continue
        out.append((max(low, _run_bound(platform, req, s)), i))
    return out


def _in_order(found, build, run, prob, req, g: PlanGraph, total: int, beat):
    """:func:`_fastest_single`'s candidates simulated in order, each left out whose port
    bound exceeds the fastest so far (or ``beat``), the first simulated kept unless a
    later one is faster (ties: the first); ``(None, inf)`` when none is simulated.
    ``build(i)``: candidate ``i``'s schedule (None: not one), ``run(i)`` its time."""
    best: tuple[float, Schedule] | None = None
    tried: list[Schedule] = []  # a paper heuristic's tree may be the start's
    for i, (_s, tree) in enumerate(found):
        most = min(best[0] if best is not None else np.inf, np.inf if beat is None else beat)
        if tree is not None and prob is not None and _port_bound(prob, tree, total) > most:
            continue
        s = build(i)
        if s is None:  # more messages than a single tree may send: not a choice
            continue
        if tree is None and prob is not None and _hops_bound(prob, req, g, s, total) > most:
            continue  # (binomial_graph's relayed tree: 0.17 s of event loop at n = 50)
        if any(s.flows == x.flows and s.order == x.order for x in tried):
            continue  # the same transfers: simulated (ties keep the first)
        tried.append(s)
        t = run(i)
        if best is None or t < best[0]:
            best = (t, s)
    if best is None:
        return None, np.inf
    return best[1], best[0]


def _timetable_schedule(
    req,
    g: PlanGraph,
    m,
    trees,
    timetable,
    total: int,
    optimum: float,
    finish: float | None,
    starts: dict[str, np.ndarray] | None = None,
):
    """The trees as flows of ``m``-proportional shares of the message's ``total`` slices,
    in the timetable's order (``params["finish_bound"]``: ``finish``, none when None;
    ``timetable[0]`` a listing per node, or what makes the send order of ``flow_of`` and
    the nodes' names; ``starts``: what that fills with each node's starts, carried as the
    schedule's :attr:`~hetcoll.schedule.Schedule.listed_starts`)."""
    local_order, span = timetable[:2]
    size = req.message_size()
    share = _shares(total, m)
    if sum(1 for x in share if x) == 1:  # one tree carries everything: a plain pipeline
        only = trees[next(i for i, x in enumerate(share) if x)]
        return single_tree(req, g, only.tolist(), trees=1, optimum=optimum)
    flows, flow_of, offset = [], {}, 0
    for i, (tree, s) in enumerate(zip(trees, share, strict=True)):
        if s == 0:
            continue
        nb = min(s * size, req.nbytes - offset)
        pairs = [(int(g.nodes[g.src[e]]), int(g.nodes[g.dst[e]])) for e in _bfs_edges(g, tree)]
        ids = req.ids
        flow_of[i] = len(flows)
        flows.append(
            Flow(
                Tree.from_edges(ids[req.root], ((ids[a], ids[b]) for a, b in pairs)),
                nb,
                offset,
                segment_size=req.segment_size,
                relays=relays(req, pairs),
            )
        )
        offset += nb
    if offset != req.nbytes:  # pragma: no cover - _shares covers every slice
        raise PlannerError("multi_tree: the flows do not cover the message")
    name = [req.ids[x] for x in g.nodes.tolist()]  # a plan-graph node's id
    timed = not any(f.relays for f in flows)  # relayed: the issue order, untimed
    listed = None
    if callable(local_order):  # a multi-port list schedule's (.port_order)
        order = local_order(flow_of, name)
        if starts:  # (the schedule keeps these very tuples: ListedOrder)
            listed = {x: (order[x], at) for x, at in starts.items() if x in order}
    else:
        order = send_order(local_order, flow_of, name, timed)
    params = {
        "trees": len(flows),
        "slices_per_period": int(sum(m)),
        "period": span,
        "optimum": optimum,
        "finish_bound": finish,
    }
    if finish is None:  # (a list schedule's: its run ends at its span, not by a bound)
        del params["finish_bound"]
    return Schedule(
        req.collective,
        "multi_tree",
        req.nbytes,
        tuple(flows),
        params if timed else untimed(params),
        req.model.to_spec(),
        order=ListedOrder(order),  # (plain entries: not checked one by one again)
        listed_starts=listed,
    )


def _periodic_left_out(g: PlanGraph, packing: Packing, total: int) -> bool:
    """Whether :func:`~.port_choice.multi_port_choice` would leave out the periodic
    timetable of ``total`` slices (so it is not built, about a tenth of the planning and
    simulation at n = 50, 10^4 slices): it has two flows or more, whatever the period kept
    (:func:`~.period_rounding.fewest_flows`), each sending each slice over each edge of its
    tree, so more messages than the event loop simulates (:data:`MAX_TRANSFERS`)."""
    if min(map(len, packing.trees)) * total <= MAX_TRANSFERS:
        return False
    share, loads = _shares_and_loads(g, packing)
    return fewest_flows(share, loads, total, candidate_periods(total)) >= 2


def _message_sized(g: PlanGraph, total: int) -> bool:
    """Whether the message of ``total`` slices is also list scheduled whole
    (:func:`_message_timetable`): under two ports per node (its run then ends by its
    timetable) and with at most :data:`MESSAGE_TRANSFERS` transfers."""
    return g.ports == "bidirectional" and total * (g.k - 1) <= MESSAGE_TRANSFERS


def _single_wins(
    platform: Platform,
    req,
    g: PlanGraph,
    single_time: float,
    multi: Schedule,
    finish: float,
    total: int,
    known: float | None = None,
) -> bool:
    """Whether the best single tree, predicted (simulated) to take ``single_time``,
    finishes no later than the timetable ``multi`` (``known``: its simulated time, when
    known).  Under two ports per node ``multi`` finishes by ``finish``: when
    the single tree is slower than that, no simulation of ``multi`` is needed.  Otherwise
    (and always with one port per node, ``one_port_uni``, where the timetable, which books
    sends and receives apart, may be slower than ``finish``) ``multi`` is simulated when
    the message has at most :data:`SIMULATED` slices, else the single tree is kept (the
    bound overestimates: 21.3 s for a run of 19.3 s at n = 30, 1 024 slices)."""
    from ._shared import simulate_kept as simulate

    if single_time > finish and _two_ports(platform, req, g):
        return False
    if known is not None:
        return single_time <= known
    return total > SIMULATED or single_time <= simulate(platform, multi, req.model).makespan


def _message_timetable(
    g: PlanGraph, trees: list[np.ndarray], share: list[int]
) -> tuple[dict[int, list[tuple[int, int, int, int]]], float, float]:
    """``(order, span, reach)`` as :mod:`.periodic_timetable` gives them for a period, for
    the whole message as one period (:func:`message_transfers`, improved by a backward and
    a forward pass, :func:`~hetcoll.planners.justify.justified`): tree ``i`` carries
    ``share[i]`` slices, every transfer at lag 0, its slot its rank in the list schedule,
    ``span = reach`` the end of the last transfer.  A pair of a tree carries its slices in
    order (a node holds them in order and forwards the first first), so the ``q``-th
    listing of a tree and child carries the tree's ``q``-th slice."""
    transfers, span = justified(g, *message_transfers(g, trees, share))
    return listed_order(transfers), span, span
