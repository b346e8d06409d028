"""multi_tree's whole-message list schedule ends at its span: inside shared_work the
comparison takes that span (a KnownRun) instead of simulating the schedule, and the span
is the simulator's makespan bit for bit wherever runs_as_listed says so."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from hetcoll import plan, simulate
from hetcoll.errors import PlannerError
from hetcoll.generators import random_graph_platform
from hetcoll.planners import _shared
from hetcoll.planners._shared import shared_work, simulated
from hetcoll.planners.known_runs import KnownRun
from hetcoll.platform import Platform
from test_shared_work import _Never


def _with_latency(p: Platform, latency: float, seed: int) -> Platform:
    rng = np.random.default_rng(seed)
    links = tuple(replace(lk, latency=latency * float(rng.uniform(0.5, 1.5))) for lk in p.links)
    return Platform(p.nodes, links, model=p.model, name=f"{p.name} latency")


def _kept(monkeypatch) -> list:
    """The makespans multi_tree keeps (appended as it keeps them)."""
    found = []
    keep = _shared.keep_makespan

    def kept(platform, schedule, model, makespan):
        found.append((schedule, makespan))
        keep(platform, schedule, model, makespan)

    monkeypatch.setattr(_shared, "keep_makespan", kept)
    return found


@pytest.mark.parametrize(
    ("n", "seed", "nbytes", "segment", "latency"),
    [
        (16, 0, 2**22, 8192, None),
        (16, 0, 2**22, 32768, None),
        (16, 3, 2**22, 16384, 20e-6),
        (14, 0, 2**22, 16384, 10e-6),
        (20, 1, 2**23, 65536, 20e-6),
    ],
)
def test_a_kept_makespan_is_the_simulators_bit_for_bit(
    monkeypatch, n, seed, nbytes, segment, latency
):
    p = random_graph_platform(n, 0.2, seed=seed)
    if latency is not None:
        p = _with_latency(p, latency, seed)
    found = _kept(monkeypatch)
    with shared_work():
        s = plan(p, "0", method="multi_tree", nbytes=nbytes, segment_size=segment)
        run = simulated(p, s, p.model)
    # the last kept is the schedule returned (one kept before it, the packing's whole
    # message that the slack packing's beat, was replaced), each kept span its run's
    assert found and found[-1][0] is s
    assert all(simulate(p, x).makespan == t for x, t in found[:-1])
    assert isinstance(run, KnownRun)
    alone = simulate(p, s)
    assert run.makespan == alone.makespan == found[-1][1]
    assert run.throughput == alone.throughput  # (simulated on demand)


def test_a_message_the_slices_do_not_divide_is_simulated(monkeypatch):
    """Its last slice is short, so its run may end before the list schedule's span."""
    p = random_graph_platform(16, 0.2, seed=0)
    found = _kept(monkeypatch)
    with shared_work():
        s = plan(p, "0", method="multi_tree", nbytes=2**22 - 1000, segment_size=8192)
        run = simulated(p, s, p.model)
    assert s.params["trees"] > 1 and s.params["period"] == s.params["finish_bound"]
    assert found == []
    assert not isinstance(run, KnownRun)


def test_a_known_run_that_the_simulator_contradicts_is_refused():
    p = random_graph_platform(8, 0.3, seed=3)
    s = plan(p, "0", method="multi_tree", nbytes=2**20, segment_size=8192)
    right = simulate(p, s).makespan
    assert KnownRun(right, p, s, p.model).arrival == simulate(p, s).arrival
    with pytest.raises(PlannerError, match="simulated to end at"):
        _ = KnownRun(right * 2, p, s, p.model).arrival


def test_auto_does_not_simulate_the_whole_message_schedule_it_chooses(monkeypatch):
    """The chosen whole-message multi_tree is ranked by its span, never simulated; the
    plan is byte for byte auto's with sharing off, which simulates it."""
    import hetcoll.simulator.predict as predict

    p = random_graph_platform(16, 0.2, seed=0)
    runs, held = [], []
    real = predict.prediction

    def counted(platform, schedule, model, shortcut=True):
        held.append(schedule)
        runs.append(schedule)
        return real(platform, schedule, model, shortcut)

    monkeypatch.setattr(predict, "prediction", counted)
    found = _kept(monkeypatch)
    s = plan(p, "0", method="auto", nbytes=2**22)
    assert s.params["chosen"] == "multi_tree"
    chosen = [x for x, t in found if t == s.params["candidates"]["multi_tree"]]
    assert chosen and not any(x is chosen[0] for x in runs)
    monkeypatch.setattr(_shared, "_SHARED", _Never())
    runs.clear()
    plain = plan(p, "0", method="auto", nbytes=2**22)
    assert any(x.algorithm == "multi_tree" and x.flows == s.flows for x in runs)
    assert json.dumps(s.to_dict(), sort_keys=True) == json.dumps(plain.to_dict(), sort_keys=True)
