"""``multi_tree``'s single tree with a send order (``port_choice.listed_tree``, over the
event loop's cap under ``multi_port``) carries the starts of the run its planner simulated
(``port_choice.with_run_starts``): a simulation of it checks them instead of running the
send-order shortcut's Python loop, and predicts exactly what that loop does."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import plan
from hetcoll.generators import random_graph_platform
from hetcoll.simulator import ordered
from hetcoll.simulator.predict import prediction

L = 10**6


def _taken(p, s):
    """``s``'s prediction and what each :func:`~hetcoll.simulator.ordered._witnessed`
    call (the check of a planner's starts) returned while it was made."""
    seen: list = []
    check = ordered._witnessed
    with mock.patch.object(ordered, "_witnessed", lambda *a: seen.append(check(*a)) or seen[-1]):
        return prediction(p, s, None, shortcut=True), seen


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(3, 12),
    density=st.sampled_from([0.15, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    slices=st.integers(1, 60),
    short=st.sampled_from([0, 0, 1, L // 3]),
)
def test_a_listed_tree_with_its_runs_starts_runs_as_without_them(n, density, seed, slices, short):
    from hetcoll.planners.pipelined import _start, best_tree
    from hetcoll.planners.port_choice import listed_tree, with_run_starts
    from hetcoll.planners.steady import pack_arborescences

    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    req, g = _start(p, "0", None, None, slices * L - short, L)
    _name, edges, _papers = best_tree(g, pack_arborescences(g.problem()))
    listed = listed_tree(req, g, edges)
    loop, seen = _taken(p, listed)  # the shortcut's own loop: no starts to check
    assert seen == []
    hinted = with_run_starts(listed, loop)
    assert hinted == listed and hinted.to_json() == listed.to_json()
    assert hinted.listed_starts is not None
    assert all(hinted.listed_starts[x][0] is hinted.order[x] for x in hinted.listed_starts)
    fast, seen = _taken(p, hinted)
    assert len(seen) == 1 and seen[0] is not None  # the starts taken, no loop
    assert fast.to_dict() == loop.to_dict()
    assert list(fast.transfers) == list(loop.transfers)
    assert fast.makespan == loop.makespan and fast.arrival == loop.arrival


def test_multi_trees_single_tree_carries_its_runs_starts():
    # n = 50, seed 4, 5 400 slices: multi_tree keeps one tree, over the event loop's cap,
    # so listed (a send order); before, it carried no starts and its simulation replayed
    # 264 600 transfers in Python
    p = random_graph_platform(50, 0.12, seed=4, model="multi_port")
    s = plan(p, "0", method="multi_tree", nbytes=5400 * L, segment_size=L)
    assert s.params["trees"] == 1 and s.order and s.listed_starts is not None
    fast, seen = _taken(p, s)
    assert len(seen) == 1 and seen[0] is not None
    from dataclasses import replace

    loop, seen = _taken(p, replace(s, listed_starts=None))
    assert seen == []
    assert fast.to_dict() == loop.to_dict() and fast.makespan == loop.makespan
