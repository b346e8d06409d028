"""A play-out given ``above`` stops once proved slower (:mod:`hetcoll.planners.forestorder`):
each resource ends no earlier than when it is next free plus the busy time still to start
on it, so a play-out is stopped only when its time would exceed ``above``, and the planner
keeps the same one."""

from __future__ import annotations

import importlib
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll import plan
from hetcoll.generators import capacitated_graph_platform
from hetcoll.planners.forestorder import per_root_order
from hetcoll.planners.forestreverse import reversed_play_out

MiB = 2**20
order_module = importlib.import_module("hetcoll.planners.forestorder")


@pytest.fixture
def every_start(monkeypatch):
    """The bound checked at every start (1024 by default): a bound that is wrong anywhere
    in the run stops a play-out that is not slower."""
    monkeypatch.setattr(order_module, "_CHECK", 1)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_a_play_out_never_stops_when_it_is_not_slower(every_start, op):
    """``above`` at the play-out's own time: the same time and order, checked at every
    start; just under it: the same time or infinite; at the largest resource's work less
    a little (no play-out is that fast): stopped."""
    p = capacitated_graph_platform(8, seed=1)
    s = plan(p, None, method="forest", collective=op, nbytes=MiB)
    play = reversed_play_out if op == "reduce_scatter" else per_root_order
    free = play(p, s.flows)
    assert free.complete and 0 < free.time < math.inf
    same = play(p, s.flows, above=free.time)
    assert same.time == free.time and same.order == free.order
    under = play(p, s.flows, above=free.time * (1 - 1e-6))
    assert under.time in (free.time, math.inf)
    assert play(p, s.flows, above=free.time * 0.5).time == math.inf


def test_a_slower_cut_is_stopped_early():
    """The flows whole (1.2x the segments' time here) against the segments' time: proved
    slower before they have all started (checked every start)."""
    p = capacitated_graph_platform(8, seed=1)
    s = plan(p, None, method="forest", collective="allgather", nbytes=MiB)
    fast = per_root_order(p, s.flows)
    whole = [replace(f, segment_size=None) for f in s.flows]
    slow = per_root_order(p, whole)
    assert slow.time > fast.time
    seen = []
    real = order_module._proved_slower

    def spy(free, left, above):
        seen.append(real(free, left, above))
        return seen[-1]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(order_module, "_CHECK", 1)
        m.setattr(order_module, "_proved_slower", spy)
        assert per_root_order(p, whole, above=fast.time).time == math.inf
    assert seen[-1] and len(seen) < sum(f.transfers for f in whole)


def test_no_bound_is_claimed_with_reduce_flows(every_start):
    """An allreduce's reduce flows may hold a broadcast segment back for ever (its spans'
    dependencies): no bound is claimed there, the play-out runs to its end."""
    p = capacitated_graph_platform(8, seed=1)
    s = plan(p, None, method="forest", collective="allreduce", nbytes=8 * MiB)
    free = per_root_order(p, s.flows)
    assert per_root_order(p, s.flows, above=free.time * 1e-3).time == free.time


def _work_per_transfer(cost, count):
    """The resources' work summed transfer by transfer (each distinct cost tuple counted
    as often as it is a transfer's, in the order first seen): the reference for
    :func:`~hetcoll.planners.forestorder._work`."""
    times, kinds = {}, {}
    for c in cost:
        times[id(c)] = times.get(id(c), 0) + 1
        kinds.setdefault(id(c), c)
    left = [0.0] * count
    for k, (rows, busy, delay, _) in kinds.items():
        if busy and max(busy) > delay * (1 + 1e-12):
            return None
        for r, b in zip(rows, busy, strict=False):
            left[r] += b * times[k]
    return left


@given(
    st.lists(st.lists(st.integers(0, 5), max_size=4), min_size=1, max_size=6),
    st.lists(st.integers(1, 3), min_size=6, max_size=6),
    st.booleans(),
)
def test_the_work_from_segment_lists_is_the_work_per_transfer(lists, counts, late):
    """The work per resource from each segment's cost list and how many segments use it
    is, bit for bit, the sum over the transfers they stand for (tuples shared between
    lists, as :class:`~hetcoll.planners.forestorder._Costs` caches them); None for both
    where a transfer arrives before it leaves a resource (``late``)."""
    pool = [((r % 3,), (0.1 * (r + 1) / 3,), 0.1 * (r + 1) / 3, r % 3) for r in range(6)]
    if late:
        pool[0] = ((0,), (0.5,), 0.25, 0)
    uses = [([pool[i] for i in got], k) for got, k in zip(lists, counts, strict=False)]
    per_transfer = [c for got, k in uses for _ in range(k) for c in got]
    assert order_module._work(uses, 3) == _work_per_transfer(per_transfer, 3)
