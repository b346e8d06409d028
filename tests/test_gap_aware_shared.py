"""``gap_aware``'s tree search is shared across ``auto``'s slice sizes when their costs are
one another's times a power of two, and the trees are those it finds alone."""

from __future__ import annotations

import importlib
from dataclasses import replace

import numpy as np
import pytest

from hetcoll import plan
from hetcoll.compare import slice_choices
from hetcoll.generators import random_graph_platform
from hetcoll.planners._shared import shared_work
from hetcoll.platform import Platform

ga = importlib.import_module("hetcoll.planners.gap_aware")
NBYTES = 2**26


def _platform(latency: float = 0.0) -> Platform:
    p = random_graph_platform(20, 0.2, seed=1, model="one_port")
    if not latency:
        return p
    rng = np.random.default_rng(1)
    links = tuple(replace(lk, latency=latency * float(rng.uniform(0.5, 1.5))) for lk in p.links)
    return Platform(p.nodes, links, model=p.model, name=p.name)


def _counted(monkeypatch) -> list[int]:
    calls: list[int] = []
    search = ga._candidates

    def counted(*args):
        calls.append(1)
        return search(*args)

    monkeypatch.setattr(ga, "_candidates", counted)
    return calls


def test_auto_searches_once_under_costs_proportional_to_the_bytes(monkeypatch):
    calls = _counted(monkeypatch)
    s = plan(_platform(), "0", method="auto", nbytes=NBYTES)
    assert "gap_aware" in s.params["candidates"]
    assert len(calls) == 1  # before the sharing: one per slice size auto planned (3)


def test_per_link_latency_searches_each_slice_size(monkeypatch):
    calls = _counted(monkeypatch)
    p = _platform(50e-6)
    sizes = slice_choices(NBYTES)
    with shared_work():
        for size in sizes:
            plan(p, "0", method="gap_aware", nbytes=NBYTES, segment_size=size)
    assert len(calls) == len(sizes)


@pytest.mark.parametrize("latency", [0.0, 50e-6])
def test_the_shared_trees_are_those_planned_alone(latency):
    p = _platform(latency)
    sizes = slice_choices(NBYTES)
    alone = [plan(p, "0", method="gap_aware", nbytes=NBYTES, segment_size=s) for s in sizes]
    with shared_work():
        together = [plan(p, "0", method="gap_aware", nbytes=NBYTES, segment_size=s) for s in sizes]
    assert [repr(s) for s in together] == [repr(s) for s in alone]
