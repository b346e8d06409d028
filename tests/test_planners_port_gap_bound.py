"""The gap bound of the multi-port list schedule (``port_schedule.gap_bound``): whole sends
leave gaps in a port whose link is a fraction of a send longer than whole sends; the bound
they give is below the span of every list schedule, and a list schedule whose bound is
already after ``beat`` is not run."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.generators import random_graph_platform
from hetcoll.planners import port_schedule
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.multitree import _shares
from hetcoll.planners.pipelined import _start
from hetcoll.planners.port_schedule import (
    critical_links,
    gap_bound,
    horizon,
    multi_port_transfers,
)
from hetcoll.planners.port_slots import PATIENCE, gap_problem, slot_problem
from hetcoll.planners.steady import model_problem

L = 10**6


def _split(n: int, seed: int, slices: int, which: int = 0):
    """The plan graph of a Fig. 4 platform (density 0.3, multi_port) and the trees of its
    optimal multi-port packing (``which`` 0), of the packing on whole port sends (1) or of
    the gap packing (2), each with its weight-proportional share of ``slices``."""
    p = random_graph_platform(n, 0.3, seed=seed, model="multi_port")
    req, g = _start(p, "0", None, None, slices * L, L)
    prob = model_problem(p, req.root, L, req.model)
    problem = (prob, slot_problem(prob), gap_problem(prob))[which] or prob
    pack = shared_packing(problem)
    share = _shares(slices, list(pack.weights))
    keep = [i for i in range(len(share)) if share[i] > 0]
    return g, [pack.trees[i] for i in keep], [share[i] for i in keep]


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(6, 12),
    seed=st.integers(0, 40),
    slices=st.integers(2, 48),
    which=st.integers(0, 2),
    patience=st.sampled_from([0.0, PATIENCE]),
    critical=st.booleans(),
    extra=st.lists(st.integers(0, 7), min_size=1, max_size=6),
)
def test_the_gap_bound_is_below_every_list_schedule(
    n, seed, slices, which, patience, critical, extra
):
    g, trees, share = _split(n, seed, slices, which)
    # any split of the slices among the trees, not only the packing's
    share = [s + extra[i % len(extra)] for i, s in enumerate(share)]
    crit = critical_links(g, trees, share) if critical else None
    _transfers, span = multi_port_transfers(g, trees, share, patience, critical=crit)
    assert gap_bound(g, trees, share) <= span


@pytest.mark.parametrize(("n", "seed"), [(8, 3), (10, 3), (12, 0)])
def test_a_list_schedule_sure_to_end_after_beat_by_its_gaps_is_not_run(monkeypatch, n, seed):
    # on these platforms (64 slices) the gaps of a port bound the span above the
    # busiest port's or link's time (port_schedule.horizon: 14.4, 15.6, 14.1 %)
    g, trees, share = _split(n, seed, 64)
    bound = gap_bound(g, trees, share)
    assert bound > 1.1 * horizon(g, trees, share)
    _transfers, span = multi_port_transfers(g, trees, share)
    beat = bound * (1 - 1e-6)
    assert span > beat

    def not_listed(*_args):
        raise AssertionError("list scheduled")

    monkeypatch.setattr(port_schedule, "tail_times", not_listed)
    assert multi_port_transfers(g, trees, share, beat=beat) is None
    # not sure at the bound itself: list scheduled
    with pytest.raises(AssertionError, match="list scheduled"):
        multi_port_transfers(g, trees, share, beat=bound)
