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
