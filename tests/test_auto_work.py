"""Work removed from ``auto``'s search, each piece shown to leave what it computes as it
was (``tests/test_auto_pinned.py`` pins the choices and times themselves)."""

from __future__ import annotations

import gc

import pytest

import hetcoll.compare as comparison
from hetcoll import load_platform
from hetcoll.compare import compare, slice_choices


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:  # pragma: no cover - pytest runs with the collector on
        gc.disable()


def test_the_pruned_search_plans_with_the_collector_paused(monkeypatch, collector_on):
    seen = []
    plan_request = comparison.plan_request

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return plan_request(*args, **kwargs)

    monkeypatch.setattr(comparison, "plan_request", spy)
    p = load_platform("fig1")
    found = compare(p, "bcast", root="1", nbytes=2**20, slices=slice_choices(2**20), prune=True)
    assert found.best.algorithm and seen and not any(seen)
    assert gc.isenabled()  # and on again after


def test_the_collector_is_on_again_after_a_failed_search(monkeypatch, collector_on):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(comparison, "plan_request", broken)
    with pytest.raises(RuntimeError, match="boom"):
        compare(
            load_platform("fig1"), "bcast", root="1", nbytes=2**20,
            slices=slice_choices(2**20), prune=True,
        )  # fmt: skip
    assert gc.isenabled()


def test_a_paused_collector_stays_paused(monkeypatch):
    was = gc.isenabled()
    gc.disable()
    try:
        compare(load_platform("fig1"), "bcast", root="1", nbytes=2**20,
                slices=slice_choices(2**20), prune=True)  # fmt: skip
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_relabelled_is_replace_without_checking_the_rest_again():
    from dataclasses import replace

    from hetcoll import plan
    from hetcoll.generators import random_graph_platform

    p = random_graph_platform(30, 0.12, seed=0, model="one_port")
    s = plan(
        p, "0", method="multi_tree", nbytes=256 * 2**20, segment_size=2**20,
        options={"slices_per_period": 32},
    )  # fmt: skip
    assert s.timetable  # (an order of many entries: what the check skips)
    params = {"chosen": "multi_tree", "candidates": {"multi_tree": 1.0}}
    fast, slow = s.relabelled("auto", params), replace(s, algorithm="auto", params=params)
    assert fast == slow and fast.to_dict() == slow.to_dict()
    assert fast.params is not params and s.algorithm == "multi_tree"  # (a copy; s as it was)


@pytest.mark.parametrize(("algorithm", "params"), [(3, {}), ("auto", [1])])
def test_relabelled_checks_what_it_sets(algorithm, params):
    from hetcoll import plan
    from hetcoll.errors import ScheduleError

    s = plan(load_platform("fig1"), "1", method="fnf")
    with pytest.raises(ScheduleError, match=r"^(algorithm|params): must be"):
        s.relabelled(algorithm, params)


def test_auto_returns_its_winner_relabelled_not_rebuilt(monkeypatch):
    from hetcoll import plan
    from hetcoll.schedule import Schedule

    built = []
    init = Schedule.__post_init__

    def counted(self):
        built.append(self.algorithm)
        init(self)

    monkeypatch.setattr(Schedule, "__post_init__", counted)
    s = plan(load_platform("fig1"), "1", method="auto", nbytes=2**20)
    assert s.algorithm == "auto" and "auto" not in built


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((0, "a"), {}),
        ((1, "b", 2), {}),
        ((3, "c", 0, 7), {}),
        ((), {"flow": 4, "child": "d", "slot": 1}),
    ],
)
def test_an_ordered_send_is_the_frozen_dataclass_it_was(args, kwargs):
    import dataclasses

    from hetcoll.patterns import OrderedSend

    @dataclasses.dataclass(frozen=True)
    class OrderedSend_:  # the class as dataclass generated it, __init__ and all
        flow: int
        child: str
        lag: int = 0
        slot: int | None = None

    new, old = OrderedSend(*args, **kwargs), OrderedSend_(*args, **kwargs)
    assert dataclasses.astuple(new) == dataclasses.astuple(old)
    assert repr(new).partition("(")[1:] == repr(old).partition("(")[1:]
    assert hash(new) == hash(dataclasses.astuple(old)) == hash(old)
    assert new == OrderedSend(*dataclasses.astuple(old)) and new != old
    assert dataclasses.replace(new, lag=5).lag == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.flow = 9
    with pytest.raises(TypeError):
        OrderedSend(0)


def _multi_trees():
    """multi_tree's timetables on random Fig. 4 platforms: every model, periodic and
    whole-message orders, short and long messages."""
    from hetcoll import plan
    from hetcoll.generators import random_graph_platform

    for model, n, seed, slices, size, options in (
        ("one_port", 30, 0, 2048, 2**19, None),
        ("one_port", 30, 0, 512, 2**21, None),
        ("one_port", 30, 2, 256, 2**20, {"slices_per_period": 32}),
        ("one_port_uni", 30, 0, 256, 2**20, {"slices_per_period": 32}),
        ("multi_port", 30, 0, 256, 2**20, {"slices_per_period": 32}),
        ("multi_port", 30, 0, 256, 2**20, None),
    ):
        p = random_graph_platform(n, 0.12, seed=seed, model=model)
        yield plan(p, "0", method="multi_tree", nbytes=slices * size, segment_size=size,
                   options=options)  # fmt: skip


def test_multi_trees_listed_orders_pass_the_full_check_unchanged():
    from hetcoll.schedule import ListedOrder, Schedule, _order

    timetables = 0
    for s in _multi_trees():
        if s.order is None:
            continue
        timetables += 1
        # what Schedule would have kept of a plain mapping: the very same entries
        full = _order(dict(s.order), len(s.flows))
        assert full == s.order
        assert all(a is b for u in full for a, b in zip(full[u], s.order[u], strict=True))
        again = Schedule.from_dict(s.to_dict())  # and the document, checked in full
        assert again == s and type(again.order) is dict
        assert type(_order(ListedOrder(s.order), len(s.flows))) is dict
    assert timetables >= 5  # (the cases reach the timetables, not only single trees)


def test_prune_leaves_a_multi_multicast_unpruned():
    """``prune`` bounds one root's tree; several groups planned together are compared
    unpruned (with it they raised ``unknown node None`` from the one-root bound)."""
    p = load_platform("fig1")
    groups = [("1", ["2", "3", "4"]), ("3", ["4", "5", "6", "7", "8"])]
    args = dict(groups=groups, nbytes=2**20, slices=slice_choices(2**20))
    pruned = compare(p, "multi_multicast", prune=True, **args)
    full = compare(p, "multi_multicast", prune=False, **args)
    assert pruned.best.algorithm == full.best.algorithm
    assert pruned.best.predicted_time == full.best.predicted_time
    assert pruned.best.segment_size == full.best.segment_size
    assert [c.algorithm for c in pruned.ranked] == [c.algorithm for c in full.ranked]
