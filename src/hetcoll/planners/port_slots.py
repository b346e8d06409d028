"""The multi-port packing on whole port sends: the trees that carry a whole message under a
port per link (``multi_port``), packed for links that wait for their sender's port.

Under the multi-port model (Beaumont, Marchal & Robert 2004, Sec. 2.2, 3.2) a transfer over
``u -> v`` keeps ``u``'s send port busy ``send_uv`` and the link ``T_uv``, both from its
start.  The steady-state problem (:func:`~hetcoll.planners.steady.model_problem`) asks each
resource to be busy at most one second per second, as if a link could start a transfer the
instant its previous one ends.  It cannot while its sender is saturated: the port sends back
to back, so a link that frees in the middle of another link's send waits for the port, and
a link busy ``T`` per slice from a port busy ``s`` per send carries at most one slice every
``ceil(T / s)`` sends.  On a Fig. 4 platform (n = 50, density 0.12, seed 0) most ports
and a few links are saturated by the optimal packing, and the message's list schedule
(:func:`~hetcoll.planners.port_schedule.multi_port_transfers`) of its trees reaches
86.5 % of the bound at 1 024 slices and 88.1 % at 2 048.

:func:`slot_problem` is the same problem with each link's time per slice rounded up to a
whole number of its sender's port sends; its optimal packing keeps 99.6 % of the optimum
there and its list schedule reaches 90.9 % and 92.9 %.  The rounding can also cost more
than it saves (seed 1: 82 % of the optimum), so the message is list scheduled over both
packings (:func:`message_trees`) and the one that ends first is kept.

The list schedule is greedy, and which of its priorities ends first varies from platform
to platform: :func:`message_trees` also runs each packing's with a node counting a link
that frees within a quarter of a send as free (it then keeps the latest-start order
more).  At 1 024 slices (n = 50, seeds 0, 1, 2) the best of the four ends at 90.9 %,
91.1 % and 90.9 % of the bound, where the optimal packing's list schedule alone ends at
86.5 %, 90.5 % and 83.1 %; at 2 048 slices 92.9 %, 91.8 % and 92.1 %.  A message of more
than :data:`TRIAL` slices is list scheduled only the way that ends a trial of
:data:`TRIAL_SLICES` slices first.

:func:`gap_problem` keeps the links' times and adds a row per link a fraction of a send
longer than whole sends: what the gaps between its sends cost the port when the port
sends whole slices (the convex envelope of ``max(w, tau)`` sends per gap of ``w``).  Its
packing challenges the way kept (:func:`message_trees`' ``first``): at 1 024 and 8 192
slices (n = 50, seeds 0, 1, 2) it replaces it on seed 1 alone, where its justified list
schedule ends at 98.2 % of the bound and its list schedule at 98.5 % (the others'
about 92 %; the best single tree's 95.8 and 97.0 %).

Then the gap packing's slack packing (:func:`~hetcoll.planners.slack_packing.
slack_packing` at :data:`SLACK_CAP`: the same throughput with every resource its prices do
not name at most 95 % busy) challenges the way kept, with and without patience: the
optimal packing's vertex loads dozens of ports within a few % of the busiest, and each
one falls behind whenever a slice reaches it late.  At 1 024 and 8 192 slices (n = 50,
seeds 0, 1, 2) it replaces the way kept on every platform: 95.6, 99.6 and 93.5 % of the
bound at 1 024 slices (were 93.5, 98.2 and 92.1 %), 97.4, 99.9 and 93.4 % at 8 192 (94.0,
98.5, 92.8 %; ``benchmarks/simulated/bench_sizes.py --model multi_port --sizes 50 --seeds
3 --slices 1024,8192``).  With a cap of 0.93, 0.97 or 0.99 its justified list schedule of
1 024 slices reaches 94.1 / 92.9, 95.3 / 93.3 and 93.9 / 93.8 % on seeds 0 / 2.

Where that packing saturates a link longer than its sender's port
(:func:`~hetcoll.planners.port_schedule.critical_links`), the slack challenger is also
list scheduled, and justified, with its ports holding for those links (``critical`` of
:func:`~hetcoll.planners.port_schedule.multi_port_transfers`), the way whose trial ends
first challenging as above (ties: without).  On seed 2 the link ``48 -> 28``, 2.83 sends
of a port busy 71 % of the time, sets the rate: holding for it, the message reaches 95.8 %
of the bound at 1 024 slices, against 93.5 % without; seeds 0 and 1 have no such link.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .pipelined import PlanGraph
from .port_justify import MOST, port_justified
from .port_schedule import critical_links, multi_port_transfers
from .steady import SteadyProblem

__all__ = [
    "PATIENCE",
    "SLACK_CAP",
    "TRIAL",
    "TRIAL_SLICES",
    "gap_problem",
    "message_trees",
    "slot_problem",
]

#: a link that frees within this share of its sender's send counts as free in the second
#: list schedule :func:`message_trees` tries (a node then keeps the latest-start order more)
PATIENCE = 0.25
#: a message of more slices is list scheduled once, the way that ends a trial message of
#: :data:`TRIAL_SLICES` slices first (:func:`message_trees`)
TRIAL = 1024
#: the trial's slices: at n = 50 (seeds 0-2 at 1 536, 8 192 and 10^4 slices) and n = 30
#: (seeds 0-2 at 2 048) the ways and challengers whose trials of 512 slices end first are
#: those of 1 024, for half the trials' CPU (0.4 s of 3.3 s of planning at 10^4 slices)
TRIAL_SLICES = 512
#: the most a resource the gap packing's prices do not name is loaded in the slack packing
#: that challenges the others (:func:`~hetcoll.planners.slack_packing.slack_packing`)
SLACK_CAP = 0.95


def slot_problem(prob: SteadyProblem) -> SteadyProblem | None:
    """``prob`` (a :func:`~hetcoll.planners.steady.model_problem` of the ``multi_port``
    model) with each link's seconds per slice rounded up to a whole number of its
    sender's port seconds per slice (the sender's row of the same edge), or None when no
    link's time changes (none is a fraction of a send longer than a whole number)."""
    from scipy.sparse import csc_matrix

    usage = prob.usage.tocoo()
    row, col, val = usage.row, usage.col, usage.data.astype(float)
    sender = np.zeros(prob.m)
    at_src = row == prob.src[col]
    sender[col[at_src]] = val[at_src]
    link = (row >= 2 * prob.n) & (sender[col] > 0)
    s = sender[col[link]]
    rounded = np.ceil(val[link] / s * (1 - 1e-9)) * s
    grow = rounded > val[link] * (1 + 1e-9)  # not a whole number of sends already
    if not np.any(grow):
        return None
    out = val.copy()
    out[link] = np.where(grow, rounded, val[link])
    return replace(prob, resources=csc_matrix((out, (row, col)), shape=usage.shape))


def gap_problem(prob: SteadyProblem) -> SteadyProblem | None:
    """``prob`` (a :func:`~hetcoll.planners.steady.model_problem` of the ``multi_port``
    model) with one more resource per link ``e`` from ``u`` whose time per slice is
    ``tau`` of ``u``'s sends, ``j < tau < j + 1`` for a whole ``j >= 1``, where every send
    of ``u`` takes the same ``s`` (the gaps below hold whole sends); None when no link is
    such.

    Between two sends over ``e`` the link is busy ``tau s``, and the port sends whole
    slices: a gap holding ``w`` sends (the one over ``e`` included) lasts at least
    ``max(w, tau) s``.  That is at least the convex ``tau + (w - j)(j + 1 - tau)`` in ``w``
    (equal at ``w = j`` and ``w = j + 1``, below ``tau`` for a smaller ``w``, below ``w``
    for a larger), so with ``n_e`` slices per second over ``e`` and the port busy ``X``
    seconds per second, the gaps take ``n_e s tau + (X - j n_e s)(j + 1 - tau)`` seconds
    per second: at most one.  The new resource's row: ``(j + 1 - tau) s`` per slice over
    each of ``u``'s edges, plus ``(tau - j (j + 1 - tau)) s`` over ``e``.  The fluid
    problem lets the port and the link both be busy all the time, which whole sends
    cannot (on a Fig. 4 platform, n = 50, density 0.12, seed 2, the optimum saturates a
    link of ``tau = 2.16`` and its port: that node takes 6 % longer with whole sends);
    :func:`slot_problem` rounds ``tau`` up to ``j + 1``, a gap of ``j + 1`` sends for
    each, which can cost more (there 10.3 % of the optimum, this 2.5 %).  O(edges x
    degree).

    The new rows bound every run, not only cyclic ones: a run of ``S`` seconds carrying
    ``total`` slices of this size meets each row with at most ``S`` (the gap after the
    last send over ``e`` holds that link ``tau s`` and the port's sends after it, the
    sends before the first one at least ``(j + 1 - tau) s`` each), so its slice counts
    per tree over ``S`` are a packing of this problem and ``S >= total / throughput``.
    On that platform the packing's throughput is 97.51 % of the fluid optimum: no run
    of whole slices reaches more than 97.51 % of ``benchmarks/simulated/bench_sizes.py``'s
    bound (the fluid one) there, at any number of slices
    (``tests/test_planners_port_gaps.py``)."""
    from scipy.sparse import csc_matrix

    usage = prob.usage.tocoo()
    row, col, val = usage.row, usage.col, usage.data.astype(float)
    send = np.zeros(prob.m)
    at_src = row == prob.src[col]
    send[col[at_src]] = val[at_src]
    link = np.zeros(prob.m)
    is_link = row >= 2 * prob.n
    np.add.at(link, col[is_link], val[is_link])
    rows, cols, vals = [], [], []
    r = prob.rows
    for e in np.flatnonzero(send > 0).tolist():
        s = send[e]
        tau = link[e] / s
        j = float(np.floor(tau * (1 + 1e-9)))
        if j < 1 or tau - j <= 1e-9 * tau:  # no longer than a send, or whole sends
            continue
        outs = np.flatnonzero(prob.src == prob.src[e])
        if np.any(np.abs(send[outs] - s) > 1e-12 * s):  # sends of other lengths fill gaps
            continue
        rows += [r] * len(outs)
        cols += outs.tolist()
        vals += [
            s * (j + 1 - tau) + (s * (tau - j * (j + 1 - tau)) if f == e else 0.0) for f in outs
        ]
        r += 1
    if r == prob.rows:
        return None
    shape = (r, prob.m)
    full = (np.concatenate([val, vals]), (np.concatenate([row, rows]), np.concatenate([col, cols])))
    return replace(prob, resources=csc_matrix(full, shape=shape))


def message_trees(
    g: PlanGraph,
    splits: list[tuple[list[np.ndarray], list[int]]],
    trials: list[tuple[list[np.ndarray], list[int]]] | None = None,
    first: int | None = None,
    patient: int | None = None,
) -> tuple[int, list[tuple[float, int, int, int, int]], float]:
    """``(index, transfers, span)``: of ``splits``, each some trees and the slices of the
    message each carries, the one whose list schedule
    (:func:`~hetcoll.planners.port_schedule.multi_port_transfers`, each node taking
    the slice whose link frees first, or, with :data:`PATIENCE`, a slice first in the
    latest-start order whose link frees within a fraction of a send) ends first (ties: the
    first split, then no patience), with that schedule's transfers and end, justified
    (:func:`~hetcoll.planners.port_justify.port_justified` with the same patience: up to
    its ``MOST`` transfers, backward and forward passes, kept when one ends sooner).

    With ``trials``, the same packings carrying a shorter message (at most
    :data:`TRIAL_SLICES` slices), when the message is longer: the split and patience whose trial
    ends first (same ties) are the only ones list scheduled for the message.  The list
    schedule costs a few microseconds a transfer, so four of them would be most of
    ``multi_tree``'s planning at 8 192 slices; and the way that ends 1 024 slices first
    ends 4 096 first too on Fig. 4 platforms (n = 50, seeds 0, 1, 2).  Each way after
    the first stops once it is sure to end after the fastest before it (``beat`` of
    :func:`~hetcoll.planners.port_schedule.multi_port_transfers`): the choice is the same,
    and at n = 50, seed 1, the two trials that end 12-15 % after the best stop early.

    With ``first``, the splits from ``first`` on are challengers, each in turn list
    scheduled without patience: one whose trial (or, without ``trials``, list schedule)
    ends before the way kept so far (else it stops once sure not to), then list scheduled
    and justified as that way was, replaces it when it ends sooner (ties: the way kept),
    so a challenger never makes the message slower than the splits before it alone.  The
    way kept is list scheduled for the message only when a challenger's must be compared
    with it, and then, above port_justify's ``MOST`` transfers (not justified), stops once
    sure to end after the challenger's (n = 50, seed 0, 10^4 slices: 40 % of the way).  The
    challengers from ``patient`` on are list scheduled with :data:`PATIENCE` too, the
    one whose trial ends first (ties: no patience) challenging as above.

    Above ``MOST`` transfers, where a challenger's trial wins and the next challenger's
    ends before it, the next one's message is list scheduled first (:func:`_ahead`): it
    challenges whichever of the two wins and wins unless one of them ends no later, so
    both stop once sure to end after it and, where it wins, neither runs to its end.  The
    choice and schedule are those of the challengers in turn
    (``tests/test_planners_port_lookahead.py``); at n = 50, seed 1, 10^4 slices, the gap
    packing's message (490 000 transfers) and the way kept stop within 200 transfers."""
    last = len(splits) if first is None else min(first, len(splits))
    patient = len(splits) if patient is None else patient
    ways = [(index, patience, False) for index in range(last) for patience in (0.0, PATIENCE)]
    kept = _chosen(g, splits, trials, ways)
    assert kept is not None
    # the kept way's message is list scheduled only when a challenger's must be compared
    # with it, and then stops once sure to end after the challenger's (where its list
    # schedule is not justified: more than port_justify's MOST transfers)
    justified = sum(splits[0][1]) * (g.k - 1) <= MOST

    def chosen(challenger: int, beat: float):
        tries = [
            (challenger, p, False) for p in ((0.0, PATIENCE) if challenger >= patient else (0.0,))
        ]
        if challenger >= patient and critical_links(g, *splits[challenger]) is not None:
            tries += [(challenger, p, True) for p in (0.0, PATIENCE)]
        return _chosen(g, splits, trials, tries, beat)

    done = None
    ahead = None  # (challenger, the beat of its trial, what _chosen gave)
    challenger = last
    while challenger < len(splits):
        if ahead is not None and ahead[:2] == (challenger, kept[1]):
            got = ahead[2]
        else:
            got = chosen(challenger, kept[1])
        if got is None:
            challenger += 1
            continue
        if not justified and challenger + 1 < len(splits):
            # the next challenger's trial, as if this one won: if it ends before this
            # one's, it challenges whichever wins here, and wins unless the message of
            # this one or of the way kept ends no later than its own (each then list
            # scheduled only until sure to end after it)
            ahead = (challenger + 1, got[1], chosen(challenger + 1, got[1]))
            if ahead[2] is not None:
                won = _ahead(g, splits, kept, done, got, ahead[2])
                kept, done = won[:2]
                challenger += 2
                continue
        theirs = _message(g, splits, got)
        assert theirs is not None
        if done is None:
            done = _message(g, splits, kept, math.inf if justified else theirs[2])
        if done is None or theirs[2] < done[2]:  # (None: the kept way's ends after theirs)
            kept, done = got, theirs
        challenger += 1
    if done is None:
        done = _message(g, splits, kept)
        assert done is not None
    return done


def _ahead(g: PlanGraph, splits, kept, done, got, next_got):
    """``(kept, done)`` after :func:`message_trees` compares ``got``'s message with the
    way ``kept``'s (``done``, or None when not list scheduled yet), then ``next_got``'s
    (the next challenger's, whose trial ends before ``got``'s) with the one kept: the
    same as in that order, but with ``next_got``'s message list scheduled first, so that
    the others stop once sure to end after it (``_message`` with ``beat``: None, or the
    message run to its end).  ``next_got`` wins when both end after it; otherwise each
    that was stopped ends after it, so after the other, and the two run to their end
    decide as in order (ties: the way kept, then ``got``)."""
    last = _message(g, splits, next_got)
    assert last is not None
    if done is None:
        done = _message(g, splits, kept, last[2])
    theirs = _message(g, splits, got, last[2])
    if done is not None and done[2] > last[2]:
        done = None  # (ends after the next challenger's: it cannot stay kept)
    if theirs is not None and theirs[2] > last[2]:
        theirs = None
    if done is None and theirs is None:
        return next_got, last
    # one of the two ends no later than ``last``: the next challenger does not win
    if done is None or (theirs is not None and theirs[2] < done[2]):
        return got, theirs
    return kept, done


def _chosen(g: PlanGraph, splits, trials, ways, beat: float = math.inf):
    """``(way, mark, run)`` of :func:`message_trees` among ``ways`` (``(split, patience,
    critical)``): the way whose trial (its list schedule without a trial) ends first, ``mark``
    that end, ``run`` the message's list schedule ``(transfers, span)`` when it is the
    trial, else None; None when no way's ``mark`` is less than ``beat``."""
    if trials is not None and sum(splits[0][1]) > sum(trials[0][1]):
        trial = _first(g, trials, ways, beat)
        if trial is None:
            return None
        w, (_transfers, mark) = trial
        return ways[w], mark, None
    found = _first(g, splits, ways, beat)
    if found is None:
        return None
    w, run = found
    return ways[w], run[1], run


def _message(g: PlanGraph, splits, chosen, beat: float = math.inf):
    """``(index, transfers, span)`` of ``chosen`` (:func:`_chosen`'s): its message's list
    schedule, justified (:func:`~hetcoll.planners.port_justify.port_justified`); None when
    with ``beat`` that list schedule is sure to end after ``beat``."""
    (index, patience, critical), _mark, run = chosen
    crit = critical_links(g, *splits[index]) if critical else None
    if run is None:
        run = multi_port_transfers(g, *splits[index], patience, beat=beat, critical=crit)
        if run is None:
            return None
    return (index, *port_justified(g, *run, (patience,), critical=crit))


def _first(
    g: PlanGraph,
    splits: list[tuple[list[np.ndarray], list[int]]],
    ways: list[tuple[int, float, bool]],
    beat: float = math.inf,
) -> tuple[int, tuple[list[tuple[float, int, int, int, int]], float]] | None:
    """Of ``ways`` (a split, a patience and whether with its critical links each), the
    index of the one whose list schedule ends first (ties: the first) and that schedule;
    None when none ends before ``beat``.
    Each stops as soon as it is sure to end later than the fastest so far, or ``beat``:
    it could not be chosen."""
    best: tuple[int, tuple[list[tuple[float, int, int, int, int]], float]] | None = None
    for w, (index, patience, critical) in enumerate(ways):
        most = beat if best is None else best[1][1]
        crit = critical_links(g, *splits[index]) if critical else None
        run = multi_port_transfers(g, *splits[index], patience, beat=most, critical=crit)
        if run is not None and run[1] < most:
            best = (w, run)
    return best
