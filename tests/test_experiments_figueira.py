"""The random topologies of Figueira & Reddi and `hetcoll reproduce figueira-cost`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hetcoll.cli import main
from hetcoll.experiments import EXPERIMENTS, Config
from hetcoll.experiments.figueira import cost_gain, cost_trial
from hetcoll.figures import draw_figures
from hetcoll.generators import figueira_platform, random_link_costs


def test_random_link_costs():
    m = random_link_costs(50, 5, seed=3)
    assert m.dtype == np.int64 and m.shape == (50, 50)
    assert (m == m.T).all() and (np.diag(m) == 0).all()
    off = m[~np.eye(50, dtype=bool)]
    assert off.min() == 1 and off.max() == 5
    assert set(np.unique(off)) == {1, 2, 3, 4, 5}
    assert (random_link_costs(50, 5, seed=3) == m).all()
    assert (random_link_costs(50, 5, seed=4) != m).any()
    assert random_link_costs(1, 20, seed=0).tolist() == [[0]]
    with pytest.raises(ValueError, match="n must be"):
        random_link_costs(0)
    with pytest.raises(ValueError, match="max_links must be"):
        random_link_costs(4, 0)


def test_figueira_platform():
    p = figueira_platform(6, 20, base_latency=1e-3, seed=7)
    assert p.ids == ("0", "1", "2", "3", "4", "5") and p.model.name == "postal"
    assert np.allclose(p.latency, random_link_costs(6, 20, seed=7) * 1e-3)


def test_cost_trial_is_pure_and_ours_never_worse():
    a = cost_trial((123, 32, 5, True))
    assert a == cost_trial((123, 32, 5, True))
    assert set(a) == {"blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls"}
    assert a["eff_cube_ls"] <= a["eff_cube"]
    assert all(v >= 5 for v in a.values())  # 5 dimensions, every pair costs >= 1 link
    assert "eff_cube_ls" not in cost_trial((123, 32, 5, False))


def test_experiment_small(tmp_path):
    assert "figueira-cost" in EXPERIMENTS
    config = Config(
        trials=6, seed=1, workers=1, params={"sizes": [8, 16], "max_links": [5], "ours_trials": 3}
    )
    result = cost_gain(config)
    data = result.data
    assert data["trials"] == 6 and data["ours_trials"] == 3
    assert [(p["max_links"], p["n"]) for p in data["points"]] == [(5, 8), (5, 16)]
    point = data["points"][1]
    assert set(point["gain"]) == {"dim2_cube", "tsts_cube", "eff_cube"}
    assert point["ours"]["trials"] == 3
    assert point["ours"]["extra_gain"] >= 0  # the local search never loses
    json.dumps(data)  # JSON by construction
    assert "max cost 5 links" in result.tables[0]
    assert cost_gain(config).data == data  # reproducible from the seed
    (png,) = draw_figures(result, tmp_path)
    assert png.name == "figueira-cost.png" and png.stat().st_size > 1000


def test_reproduce_command(tmp_path, capsys, monkeypatch):
    # the CLI path, tiny: patch the default sizes so that it runs in a moment
    monkeypatch.setattr("hetcoll.experiments.figueira.SIZES", (8, 16))
    code = main(
        ["reproduce", "figueira-cost", "--trials", "2", "--workers", "1", "--out", str(tmp_path)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Figueira & Reddi Fig. 6" in out
    doc = json.loads((tmp_path / "figueira-cost.json").read_text())
    assert doc["kind"] == "experiment" and len(doc["points"]) == 4
    assert (tmp_path / "figueira-cost.png").exists()


@pytest.mark.mpi
def test_barrier_experiment_small(tmp_path):
    """Fig. 7 in miniature, tiny: 4 emulated ranks, 3 topologies, two planners."""
    from hetcoll.experiments.figueira import barrier_gain

    assert "figueira-barrier" in EXPERIMENTS
    params = {"sizes": [4], "draws": 3, "loop": 3, "methods": ["dim2_cube", "eff_cube_ls"]}
    result = barrier_gain(Config(trials=2, seed=3, params=params))
    data = result.data
    json.dumps(data)
    assert [(p["n"], p["method"]) for p in data["points"]] == [(4, "dim2_cube"), (4, "eff_cube_ls")]
    for p in data["points"]:
        # each planner ran on its best draw: never below the mean over the draws
        assert 0 <= p["draw"] < 3 and p["predicted_gain"] >= p["mean_predicted_gain"] - 1e-9
        for row in (p["blind"], p["planner"]):
            # the emulation never beats the model: one barrier, and the loop
            assert row["min"] >= row["predicted"] * (1 - 1e-9)
            assert row["loop"] >= row["loop_predicted"] * (1 - 1e-9)
            assert row["loop_predicted"] <= row["predicted"] + 1e-12
    assert "Fig. 7 in miniature" in result.tables[0]
    (png,) = draw_figures(result, tmp_path)
    assert png.name == "figueira-barrier.png" and png.stat().st_size > 1000
