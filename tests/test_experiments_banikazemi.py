"""The Section 7.2 experiment: its trial function and the shape of its result."""

from __future__ import annotations

import pytest

from hetcoll.experiments import Config
from hetcoll.experiments.banikazemi import _sim_point, sim


def test_homogeneous_nodes_give_no_improvement():
    """Sec. 6.4: on equal nodes SPOC and FNF build binomial-time trees: FoI exactly 1."""
    lat = _sim_point((0.25, 1.0, 1024, 32, 1, "random", 6, 7))
    assert lat["spoc"] == pytest.approx(lat["binomial"])
    assert lat["fnf"] == pytest.approx(lat["binomial"])


def test_fnf_beats_binomial_on_average_and_a_fast_source_helps_spoc():
    random = _sim_point((0.25, 4.0, 1024, 63, 1, "random", 10, 3))
    fast = _sim_point((0.25, 4.0, 1024, 63, 1, "fast", 10, 3))
    assert random["fnf"] < random["binomial"] / 1.5
    # a slow source must send ceil(log2 64) = 6 slow messages in any binomial-shaped tree
    assert random["spoc"] > 0.75 * random["binomial"]
    assert fast["binomial"] / fast["spoc"] > 1.5


def test_same_seed_same_numbers():
    task = (0.5, 2.0, 64, 8, 4, "random", 3, 11)
    assert _sim_point(task) == _sim_point(task)


def test_result_shape(monkeypatch):
    import hetcoll.experiments.banikazemi as b

    monkeypatch.setattr(b, "SIM_DESTINATIONS", (4, 63))
    monkeypatch.setattr(b, "SIM_MULTI_SOURCES", (4,))
    monkeypatch.setattr(b, "SIM_MULTI_DESTINATIONS", (8,))
    result = sim(Config(trials=2, seed=1, workers=1))
    panels = {p["panel"]: p for p in result.data["panels"]}
    assert set(panels) == {
        "speed_factor",
        "fast_fraction",
        "message_size",
        "source",
        "multiple_25",
        "multiple_50",
    }
    for p in panels.values():
        for points in p["series"].values():
            for point in points:
                lat = point["latency"]
                assert point["foi"]["fnf"] == pytest.approx(lat["binomial"] / lat["fnf"])
    assert len(result.tables) == len(panels)


def test_multiple_multicast_includes_the_joint_planner():
    """With every node a source (Fig. 10's largest case), planning the trees jointly beats
    planning them one by one."""
    lat = _sim_point((0.25, 4.0, 1024, 63, 64, "random", 2, 5))
    assert set(lat) == {"binomial", "spoc", "fnf", "fnf_joint"}
    assert lat["fnf"] > lat["binomial"]  # tree by tree, FNF overloads the fast relays
    assert lat["fnf_joint"] < lat["binomial"] / 1.3
