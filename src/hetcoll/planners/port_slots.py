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
:data:`TRIAL` slices first.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .pipelined import PlanGraph
from .port_justify import port_justified
from .port_schedule import multi_port_transfers
from .steady import SteadyProblem

__all__ = ["PATIENCE", "TRIAL", "message_trees", "slot_problem"]

#: a link that frees within this share of its sender's send counts as free in the second
#: list schedule :func:`message_trees` tries (a node then keeps the latest-start order more)
PATIENCE = 0.25
#: a message of more slices is list scheduled once, the way that ends a trial message of
#: this many slices first (:func:`message_trees`)
TRIAL = 1024


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


def message_trees(
    g: PlanGraph,
    splits: list[tuple[list[np.ndarray], list[int]]],
    trials: list[tuple[list[np.ndarray], list[int]]] | None = None,
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
    :data:`TRIAL` slices), when the message is longer: the split and patience whose trial
    ends first (same ties) are the only ones list scheduled for the message.  The list
    schedule costs a few microseconds a transfer, so four of them were most of
    ``multi_tree``'s planning at 8 192 slices; and the way that ends 1 024 slices first
    ended 4 096 first too on Fig. 4 platforms (n = 50, seeds 0, 1, 2).  Each way after
    the first stops once it is sure to end after the fastest before it (``beat`` of
    :func:`~hetcoll.planners.port_schedule.multi_port_transfers`): the choice is the same,
    and at n = 50, seed 1, the two trials that end 12-15 % after the best stop early."""
    ways = [(index, patience) for index in range(len(splits)) for patience in (0.0, PATIENCE)]
    if trials is not None and sum(splits[0][1]) > sum(trials[0][1]):
        ways = [ways[_first(g, trials, ways)[0]]]
    w, (transfers, span) = _first(g, splits, ways)
    index, patience = ways[w]
    return (index, *port_justified(g, transfers, span, (patience,)))


def _first(
    g: PlanGraph, splits: list[tuple[list[np.ndarray], list[int]]], ways: list[tuple[int, float]]
) -> tuple[int, tuple[list[tuple[float, int, int, int, int]], float]]:
    """Of ``ways`` (a split and a patience each), the index of the one whose list schedule
    ends first (ties: the first) and that schedule.  Each after the first stops as soon as
    it is sure to end later than the fastest so far (``beat``): it could not be chosen."""
    best: tuple[int, tuple[list[tuple[float, int, int, int, int]], float]] | None = None
    for w, (index, patience) in enumerate(ways):
        beat = math.inf if best is None else best[1][1]
        run = multi_port_transfers(g, *splits[index], patience, beat=beat)
        if run is not None and (best is None or run[1] < best[1][1]):
            best = (w, run)
    assert best is not None
    return best
