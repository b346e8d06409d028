"""Work shared between planners while auto plans (planners/_shared.py): inside
``shared_work`` each planner's schedule is byte for byte the one it plans alone, at every
slice size of one block, and the packing (and the edge loads, the timetables) are solved once
per problem, not once per planner, and once for slice sizes a power of two apart under costs
proportional to the bytes (_shared.scale_class)."""

from __future__ import annotations

import json

import pytest

from hetcoll import plan
from hetcoll.generators import random_graph_platform
from hetcoll.planners import _shared, periodic_timetable, steady
from hetcoll.planners._shared import shared_work

PLANNERS = ("throughput_tree", "lp_grow", "lp_prune", "multi_tree")
SLICES = (2**16, 2**18)


def _doc(p, name, seg):
    s = plan(p, "0", method=name, nbytes=2**22, segment_size=seg)
    return json.dumps(s.to_dict(), sort_keys=True)


@pytest.mark.parametrize("model", ["one_port", "one_port_uni", "multi_port"])
def test_shared_work_plans_what_each_planner_plans_alone(model, monkeypatch):
    p = random_graph_platform(9, 0.35, seed=7, model=model)
    alone = {(name, seg): _doc(p, name, seg) for seg in SLICES for name in PLANNERS}
    solves, loads, tables = [], [], []
    real, real_loads = _shared.pack_arborescences, _shared.edge_loads
    monkeypatch.setattr(_shared, "pack_arborescences", lambda prob: solves.append(1) or real(prob))
    monkeypatch.setattr(_shared, "edge_loads", lambda *a: loads.append(1) or real_loads(*a))
    real_table = periodic_timetable._one_timetable
    monkeypatch.setattr(
        periodic_timetable,
        "_one_timetable",
        lambda *a: tables.append((list(a[2]), a[3])) or real_table(*a),
    )
    with shared_work():
        together = {(name, seg): _doc(p, name, seg) for seg in SLICES for name in PLANNERS}
    assert together == alone
    assert len(set(alone.values())) > len(PLANNERS)  # the slice sizes plan differently
    # costs proportional to the bytes, slices a power of two apart: one packing, one LP of
    # edge loads (lp_grow, lp_prune) and one timetable per period for both slice sizes
    # (multi_port: three more packings, the multi-port problem's and its two on whole port
    # sends, slots and gaps, for multi_tree's trees)
    assert len(solves) == (4 if model == "multi_port" else 1)
    assert len(loads) == 1
    assert len(tables) == len({repr(t) for t in tables}) > 0
    solves.clear()
    _doc(p, "lp_grow", SLICES[0])  # outside the block: solved again
    assert solves == [1]


def test_auto_is_byte_identical_with_and_without_sharing(monkeypatch):
    """auto (which shares) against auto with sharing switched off."""
    p = random_graph_platform(10, 0.3, seed=2)
    shared_doc = json.dumps(plan(p, "0", method="auto", nbytes=2**24).to_dict(), sort_keys=True)
    monkeypatch.setattr(_shared, "_SHARED", _Never())
    plain = json.dumps(plan(p, "0", method="auto", nbytes=2**24).to_dict(), sort_keys=True)
    assert shared_doc == plain
    assert steady.pack_arborescences is _shared.pack_arborescences


class _Never:
    """A context variable that is never set: every call solves."""

    def get(self):
        return None

    def set(self, _value):
        return None

    def reset(self, _token):
        pass


def test_auto_does_not_simulate_again_the_run_multi_tree_returns(monkeypatch):
    """multi_tree simulates the schedule it returns (here: its timetable against the
    single trees, 128 slices), and auto takes that prediction (_shared.simulate_kept,
    simulated) instead of running the simulator on the same schedule a second time; the
    plan and every candidate's time are those of auto with sharing off, which simulates
    again."""
    import hetcoll.simulator.predict as predict

    p = random_graph_platform(8, 0.3, seed=3)
    runs, held = {}, []
    real = predict.prediction

    def counted(platform, schedule, model, shortcut=True):
        held.append(schedule)  # (held: no id is reused)
        runs[id(schedule)] = runs.get(id(schedule), 0) + 1
        return real(platform, schedule, model, shortcut)

    monkeypatch.setattr(predict, "prediction", counted)
    s = plan(p, "0", method="auto", nbytes=2**20)
    assert s.params["chosen"] == "multi_tree"
    assert max(runs.values()) == 1  # (twice for multi_tree's schedule without the keeping)
    monkeypatch.setattr(_shared, "_SHARED", _Never())
    runs.clear()
    plain = plan(p, "0", method="auto", nbytes=2**20)
    assert max(runs.values()) == 2
    assert json.dumps(s.to_dict(), sort_keys=True) == json.dumps(plain.to_dict(), sort_keys=True)


@pytest.mark.parametrize("model", ["one_port", "multi_port"])
def test_each_heuristics_tree_is_made_once_per_graph(model, monkeypatch):
    """The paper's heuristics' planners and throughput_tree's search (which starts from
    the same trees) at two slice sizes a power of two apart, costs proportional to the
    bytes: inside the block each tree is made once, and every schedule is the one planned
    alone."""
    from hetcoll.planners import pipelined

    p = random_graph_platform(9, 0.35, seed=7, model=model)
    names = ["prune_simple", "prune_degree", "grow_tree", "lp_prune", "lp_grow"]
    if model == "multi_port":
        names += ["grow_tree_multiport", "prune_degree_multiport"]
    names.append("throughput_tree")
    alone = [_doc(p, name, seg) for seg in SLICES for name in names]
    made = []
    for key, real in list(pipelined._HEURISTICS.items()):
        monkeypatch.setitem(
            pipelined._HEURISTICS,
            key,
            lambda g, loads, k=key, f=real: made.append(k) or f(g, loads),
        )
    with shared_work():
        together = [_doc(p, name, seg) for seg in SLICES for name in names]
    assert together == alone
    assert sorted(made) == sorted(names[:-1])  # throughput_tree's starts: made already
    made.clear()
    with shared_work():  # a time that is no power of two of the other's: made again
        _doc(p, "prune_degree", 2**16)
        _doc(p, "prune_degree", 3 * 2**16)
    assert made == ["prune_degree", "prune_degree"]
