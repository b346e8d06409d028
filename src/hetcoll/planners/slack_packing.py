"""A packing of the same optimal one-port throughput that leaves slack on every port the
optimum does not force busy: fewer saturated ports for ``multi_tree``'s timetables.

The packing LP is degenerate.  On the n = 50 platforms of
``benchmarks/simulated/bench_sizes.py`` its dual prices (the certificate) are positive on
one to three ports, yet the vertex HiGHS returns loads 20-30 send and receive ports to
within 2 % of the busiest.  A list schedule or a periodic timetable keeps a saturated port
busy all the time only if every slice it needs reaches it in time, so each saturated port
is a place where the run falls behind the bound: with those ports loaded at most
:data:`CAP` instead, the whole message's justified list schedule of 1 024 slices reaches
95.2 / 98.5 / 96.7 % of the bound where the packing's own reaches 93.5 / 93.9 / 95.4 %
(seeds 0-2), and the periodic timetable of 8 192 slices 97.5 / 98.6 / 97.7 % where it
reaches 96.5 / 94.1 / 94.6 %.

:func:`slack_packing` finds it by column generation on the same problem with the rows of
the unpriced resources scaled by ``1 / CAP``: a packing feasible there is feasible in the
original problem (every load only falls back by the factor).  When that costs throughput,
the resources the new prices name are forced too and it is solved again, a few times at
most; None when the throughput cannot be kept.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.sparse import diags

from ._shared import _rescaled, is_shared, scale_class, scaled
from .steady import Packing, SteadyProblem, pack_arborescences

__all__ = ["CAP", "shared_slack", "slack_packing"]

#: the most a resource the optimum does not force busy is loaded (seconds per second):
#: 0.93 on the n = 50 platforms above (0.97 gains about half as much; 0.90 more at 8 192
#: slices on two platforms of three, less at 1 024 on seed 0, 94.5 %, and three times the
#: column generation there)
CAP = 0.93
#: the throughput kept, relative to the packing's
KEEP = 1 - 1e-6
#: the most times the forced resources grow
ROUNDS = 6


def slack_packing(problem: SteadyProblem, packing: Packing, cap: float = CAP) -> Packing | None:
    """A packing of ``problem`` with at least :data:`KEEP` of ``packing``'s throughput
    whose resources are busy at most ``cap`` seconds per second except those forced: the
    ones ``packing``'s prices are positive on, and those the later solves' prices name.
    None when ``packing`` has no prices or the throughput is not kept within
    :data:`ROUNDS` solves.

    Feasible in ``problem``: its loads there are those of the scaled problem (at most 1)
    times ``cap`` on the scaled rows, unchanged on the others.  Each solve starts from
    the columns of the one before.  Complexity: up to :data:`ROUNDS` column generations,
    each warm started (0.01-0.1 s at n = 50)."""
    if packing.prices is None or not 0 < cap < 1:
        return None
    forced = np.asarray(packing.prices) > 1e-9
    columns = list(packing.columns)
    for _ in range(ROUNDS):
        scale = np.where(forced, 1.0, 1.0 / cap)
        scaled = replace(problem, resources=diags(scale) @ problem.usage)
        found = pack_arborescences(scaled, initial=columns)
        if found.throughput >= KEEP * packing.throughput:
            loads = problem.usage @ found.edge_slices(problem.m)
            if float(np.max(loads, initial=0.0)) > 1 + 1e-9:  # pragma: no cover - scaled
                return None
            return found
        if found.prices is None:
            return None
        more = forced | (np.asarray(found.prices) > 1e-9)
        if np.array_equal(more, forced):
            return None
        forced, columns = more, list(found.columns)
    return None


def shared_slack(problem: SteadyProblem, packing: Packing, cap: float = CAP) -> Packing | None:
    """:func:`slack_packing` of ``problem`` and ``packing`` (at ``cap``); inside
    :func:`~hetcoll.planners._shared.shared_work`, when ``packing`` is the one kept for
    ``problem``, the answer kept for its scale class and ``cap``, rescaled (``auto`` plans
    ``multi_tree`` at several slice sizes of one class)."""
    if not is_shared(problem, packing):
        return slack_packing(problem, packing, cap)
    key, scale = scale_class(problem)

    def rescaled(kept: Packing | None, ratio: float) -> Packing | None:
        return None if kept is None else _rescaled(kept, ratio)

    compute = lambda: slack_packing(problem, packing, cap)  # noqa: E731
    return scaled(("slack", cap, key), scale, compute, rescaled)
