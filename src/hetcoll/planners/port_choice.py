"""``multi_tree``'s choice under a port per link (``multi_port``): the fastest of its
candidates as the event loop simulates them, each simulated at most once and none whose
load bound already exceeds a simulated time (:func:`multi_port_choice`).

Under ``multi_port`` a timetable's finish bound and a tree's one-port load bound none of
their runs, so :mod:`.multitree` simulated every candidate and the chosen one again (at
n = 50, 1 024 slices, eleven runs of the event loop).  The model's own ports and links
(:func:`~hetcoll.planners.single_bounds.bound_problem`) do bound them: each is busy its
load for every full slice of every tree that uses it
(:func:`~hetcoll.planners.single_bounds.flows_bound`), so a candidate whose bound exceeds
the fastest simulated time could not be chosen and is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cached_property

import numpy as np

from ..errors import ScheduleError
from ..patterns import OrderedSend
from ..platform import Platform
from ..schedule import MAX_TIMETABLE_TRANSFERS, MAX_TRANSFERS, Schedule, check_transfers
from .pipelined import PlanGraph, _schedule
from .single_bounds import bound_problem, flows_bound

__all__ = [
    "DeferredMessage",
    "listed_span",
    "listed_tree",
    "message_cap",
    "multi_port_choice",
    "single_tree",
    "with_run_starts",
]


class DeferredMessage:
    """The whole message's multi-port list schedule before it is made a :class:`Schedule`:
    ``span`` its end, ``flows`` the trees that carry a slice, :attr:`schedule` the
    schedule (made once, on first use).  :func:`multi_port_choice` needs only the span of
    a list schedule whose run ends at it (:func:`listed_span`), so where a single tree is
    chosen the send order of its transfers is never listed (at n = 50, seed 4, 10^4
    slices, 490 000 sends: about a tenth of ``multi_tree``'s planning)."""

    def __init__(self, build: Callable[[], Schedule], span: float, flows: int) -> None:
        self._build: Callable[[], Schedule] | None = build
        self.span = span
        self.flows = flows

    @cached_property
    def schedule(self) -> Schedule:
        """The schedule (``params["period"]`` the span where it has several flows); what
        made it (the list schedule's transfers) is let go once it is made."""
        build, self._build = self._build, None
        assert build is not None
        return build()


def _made(whole: Schedule | DeferredMessage | None) -> Schedule | None:
    """``whole`` as a schedule (None: None)."""
    return whole.schedule if isinstance(whole, DeferredMessage) else whole


def single_tree(req, g: PlanGraph, edges, **params) -> Schedule:
    """The tree of ``edges`` as :func:`~hetcoll.planners.pipelined._schedule` makes it or,
    when that has more messages than :data:`~hetcoll.schedule.MAX_TRANSFERS` under a port
    per link and :func:`message_cap` allows them, as :func:`listed_tree` makes it; a
    :class:`~hetcoll.errors.ScheduleError` else."""
    try:
        return _schedule(req, g, "multi_tree", edges, **params)
    except ScheduleError:
        if g.ports != "multi" or message_cap(req.platform, req, g) == MAX_TRANSFERS:
            raise
        return listed_tree(req, g, edges, **params)


def listed_tree(req, g: PlanGraph, edges, **params) -> Schedule:
    """The tree of ``edges`` as :func:`~hetcoll.planners.pipelined._schedule` makes it,
    with each node's children listed once as its send order: the same program (segment by
    segment, child by child in the tree's order), but a schedule with a send order, which
    may have :data:`~hetcoll.schedule.MAX_TIMETABLE_TRANSFERS` messages
    (:func:`message_cap`: the simulator's send-order shortcut replays it)."""
    one = _schedule(replace(req, nbytes=req.message_size()), g, "multi_tree", edges, **params)
    flow = replace(one.flows[0], nbytes=req.nbytes)
    kids = flow.tree.children
    order = {u: tuple(OrderedSend(0, c) for c in kids[u]) for u in flow.tree.nodes if kids.get(u)}
    return replace(one, nbytes=req.nbytes, flows=(flow,), order=order)


def with_run_starts(schedule: Schedule, run) -> Schedule:
    """``schedule``, one tree with a send order (:func:`listed_tree`), carrying the starts
    of ``run`` (its simulated :class:`~hetcoll.simulator.results.Prediction`) as its
    :attr:`~hetcoll.schedule.Schedule.listed_starts`: each node's sends in its listed
    order (segment by segment, child by child).  A simulation of the schedule then checks
    that they solve the run's equations (O(M) numpy) instead of running the send-order
    shortcut's Python step per transfer (:func:`~hetcoll.simulator.ordered.
    simulate_ordered`); where they do not, it runs that step as before.  ``schedule``
    itself where it is not such a tree or ``run`` does not list its transfers as columns.
    O(M log M) numpy for M transfers."""
    from ..simulator.results import TransferTable

    table = getattr(run, "transfers", None)
    order = schedule.order
    if (
        len(schedule.flows) != 1
        or not order
        or schedule.timetable
        or schedule.listed_starts is not None
        or not isinstance(table, TransferTable)
        or not len(table)
    ):
        return schedule
    ranks = table.ranks
    n = len(ranks)
    index = {rank: a for a, rank in enumerate(ranks)}
    place = np.full(n * n, -1, dtype=np.int64)  # per (sender, receiver), the listing's place
    for node, sends in order.items():
        if node in index:
            for j, send in enumerate(sends):
                if send.child in index:
                    place[index[node] * n + index[send.child]] = j
    sender, receiver = table.array("sender"), table.array("receiver")
    at = place[sender * n + receiver]
    if np.any(at < 0):
        return schedule
    listed = np.lexsort((at, table.array("chunk"), sender))
    ends = np.cumsum(np.bincount(sender, minlength=n)).tolist()
    start = table.array("start")[listed]
    hint: dict[str, tuple] = {}
    made = replace(schedule, listed_starts=hint)  # (hint filled with the new order's tuples)
    begin = 0
    for rank, end in zip(ranks, ends, strict=True):
        if end > begin and rank in made.order:
            hint[rank] = (made.order[rank], start[begin:end])
        begin = end
    return made


def message_cap(platform: Platform, req, g: PlanGraph) -> int:
    """The most messages of the whole message's list schedule: a schedule's with a send
    order (:data:`~hetcoll.schedule.MAX_TIMETABLE_TRANSFERS`) where the simulator's
    send-order shortcut (:func:`~hetcoll.simulator.ordered.simulate_ordered`) replays it
    (exclusive links, no receive port, whole slices: each node then takes its sends in
    the listed order), else the event loop's (:data:`~hetcoll.schedule.MAX_TRANSFERS`)."""
    bound = req.model.bind(platform)
    size = req.message_size()
    if bound.unidirectional or bound.contention != "exclusive" or req.nbytes % size:
        return MAX_TRANSFERS
    u, v = g.nodes[g.src], g.nodes[g.dst]
    recv = bound.costs(u, v, np.full(len(u), size, dtype=np.int64)).recv_busy
    return MAX_TRANSFERS if np.any(np.asarray(recv) != 0) else MAX_TIMETABLE_TRANSFERS


def listed_span(
    platform: Platform, req, g: PlanGraph, whole: Schedule | DeferredMessage | None
) -> float | None:
    """When the run of ``whole``, the multi-port list schedule of a message of whole slices
    (:func:`~hetcoll.planners.port_schedule.multi_port_transfers`, its end
    ``params["period"]``), ends: exactly that end when the model's costs of the plan
    graph's edges at the slice are the list schedule's own (each send busy ``send``, each
    link held ``T`` from the start, the slice there after ``T``, no receive port, exclusive
    links), for the simulator then runs each node's sends as the list schedule booked them
    (``tests/test_planners_multi_tree_multiport.py``, bit for bit); None when it is not
    known (a single tree, a shorter last slice or other costs: simulate it).

    At n = 50 and 10^4 slices that run, the simulator's replay of 490 000 transfers, was a
    fifth of ``multi_tree``'s planning.  A :class:`DeferredMessage` of several flows is
    such a list schedule (its span its ``period``), not made a schedule here."""
    if isinstance(whole, DeferredMessage):
        period = whole.span if whole.flows > 1 else None
    elif whole is None or whole.params.get("trees", 1) == 1 or "period" not in whole.params:
        period = None
    else:
        period = float(whole.params["period"])
    if period is None:
        return None
    bound = req.model.bind(platform)
    size = req.message_size()
    if bound.unidirectional or bound.contention != "exclusive" or req.nbytes % size:
        return None
    u, v = g.nodes[g.src], g.nodes[g.dst]
    costs = bound.costs(u, v, np.full(len(u), size, dtype=np.int64))
    offset, hold = costs.window()
    same = (
        np.array_equal(np.asarray(costs.send_busy, dtype=float), g.send)
        and np.array_equal(np.asarray(costs.delay, dtype=float), g.T)
        and np.array_equal(hold, g.T)
        and not np.any(offset)
        and not np.any(np.asarray(costs.recv_busy))
        and np.array_equal(np.diff(costs.offsets), np.ones(len(u), dtype=np.int64))
    )
    return period if same else None


def multi_port_choice(
    platform: Platform,
    req,
    g: PlanGraph,
    multi: Schedule | None,
    whole: Schedule | DeferredMessage | None,
    singles: Callable[..., tuple[Schedule | None, float]],
    simulated: bool,
) -> Schedule:
    """Under a port per link (``multi_port``), the fastest as the event loop simulates them
    of: the single trees of ``singles(beat, *more)`` (the fastest of them and of ``more``
    and its time, leaving out those whose bound exceeds ``beat``; ``(None, inf)`` when
    none is left), ``multi`` (the one-port packing's timetable, not simulated unless
    ``simulated`` when a single tree is left, or one of its trees, then one more single
    tree) and ``whole``, the multi-port packing's trees carrying the message whole (ties:
    a single tree, ``multi``, ``whole``).  The one-port packing and timetable do not model
    those ports (on a Fig. 4 platform, n = 50, seed 0, the one-port packing's throughput
    is 62 % of the multi-port optimum).

    ``whole`` is simulated first (unless its run is known to end at its list schedule's
    end, :func:`listed_span`); ``multi`` is left out when it has more messages than
    the event loop simulates (:data:`~hetcoll.schedule.MAX_TRANSFERS`) and ``whole`` is
    there (else refused), as when it is None (the caller found it would be and did not
    build it, with ``whole`` there); a candidate whose multi-port load bound
    (:func:`~hetcoll.planners.single_bounds.flows_bound`) exceeds a time already
    simulated is not simulated (it could not be chosen), and none is simulated twice.
    ``whole`` may be a :class:`DeferredMessage`, made a schedule only where simulated or
    returned."""
    from ..simulator import simulate

    prob = bound_problem(platform, req, g)
    beat = listed_span(platform, req, g, whole)
    if beat is None:
        whole = _made(whole)
        beat = np.inf if whole is None else simulate(platform, whole, req.model).makespan
    one = multi is not None and multi.params.get("trees", 1) == 1  # a single tree
    # the event loop simulates the timetable, within its cap: over it, left out
    over = multi is None or (not one and sum(f.transfers for f in multi.flows) > MAX_TRANSFERS)
    if over and whole is None:
        assert multi is not None
        check_transfers(multi.flows, MAX_TRANSFERS, " simulated under this model's ports")
    # (the same tree: simulated; a deferred message here has several flows, multi one)
    more = (multi,) if one and (isinstance(whole, DeferredMessage) or multi != whole) else ()
    chosen, known = singles(beat, *more)
    if not one and not over and (chosen is None or simulated):
        if chosen is None and whole is None:
            return multi
        bound = 0.0 if prob is None else flows_bound(prob, req, g, multi)
        if bound <= min(known, beat):  # else it could not be chosen
            ran = simulate(platform, multi, req.model).makespan
            if ran < known:
                chosen, known = multi, ran
    if chosen is None:  # every candidate left is slower than the whole message
        made = _made(whole)
        assert made is not None
        return made
    return _made(whole) if whole is not None and beat < known else chosen
