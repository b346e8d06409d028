"""The per-root order's checks in a hurry: a play-out's order is taken as it is listed
(every slot an int from 0 where every transfer started: :attr:`PlayOut.complete`), and
:func:`hetcoll.perroot.check_per_root_order` passes an order at once where its quick
test finds no fault, else the full check names the fault as before."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hetcoll import plan
from hetcoll.errors import ScheduleError
from hetcoll.generators import capacitated_graph_platform
from hetcoll.perroot import _plainly_right, check_per_root_order
from hetcoll.planners.forestorder import per_root_order
from hetcoll.planners.forestreverse import reversed_play_out


def forest_plan(op):
    p = capacitated_graph_platform(6, 0.5, seed=1)
    return p, plan(p, None, method="forest", collective=op, nbytes=1 << 16)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_a_play_out_says_every_transfer_started(op):
    p, s = forest_plan(op)
    played = (reversed_play_out if op == "reduce_scatter" else per_root_order)(p, s.flows)
    assert played.complete
    assert all(e.slot >= 0 for sends in played.order.values() for e in sends)


def sends_of(flows):
    """What :func:`check_per_root_order` expects of each node: its sends' listing counts."""
    out = {}
    for fi, f in enumerate(flows):
        if f.kind == "reduce":
            pairs = list(f.tree.parent().items())
        else:
            pairs = [(v, c) for v, kids in f.tree.children.items() for c in kids]
        for u, v in pairs:
            out.setdefault(u, {})[(fi, v)] = f.chunks
    return out


def faults(order):
    """Orders with one fault each (or a shared slot: no fault), made from a right one."""
    first = next(u for u in order if len(order[u]) > 1)
    a, b = order[first][0], order[first][1]
    other = next(u for u in order if u != first)
    yield "lag", {**order, first: (replace(a, lag=1), *order[first][1:])}
    yield "none", {**order, first: (replace(a, slot=None), *order[first][1:])}
    yield "negative", {**order, first: (replace(a, slot=-1), *order[first][1:])}
    yield "taken", {**order, other: (replace(order[other][0], slot=a.slot), *order[other][1:])}
    yield "twice", {**order, first: (a, *order[first])}
    yield "missing", {u: s for u, s in order.items() if u != first}
    yield "shared", {**order, first: (a, replace(b, slot=a.slot), *order[first][2:])}


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_the_quick_check_passes_only_what_the_full_one_passes(op):
    _, s = forest_plan(op)
    sends = sends_of(s.flows)
    assert _plainly_right(sends, s.order)
    check_per_root_order(s.flows, s.order)
    for name, order in faults(s.order):
        assert not _plainly_right(sends, order), name
        if name in ("lag", "none", "negative", "taken", "twice", "missing"):
            with pytest.raises(ScheduleError):
                check_per_root_order(s.flows, order)
