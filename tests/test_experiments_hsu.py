"""`hetcoll reproduce hsu-labs` and `hsu-claims` on a few small trials: data, tables, figures
drawn from the JSON alone with the paper's values on them."""

from __future__ import annotations

import importlib
import json

import pytest

from _cli import run
from hetcoll.errors import HetcollError
from hetcoll.experiments import Config, get_experiment
from hetcoll.figures import draw_figures
from hetcoll.plots import BUILDERS

importlib.import_module("hetcoll.experiments.hsu_figures")  # registers the builders
SMALL = {"sizes": [16, 32], "types": [2, 8]}


@pytest.fixture(scope="module")
def labs_result():
    return get_experiment("hsu-labs").func(Config(trials=2, seed=5, workers=1, params=SMALL))


@pytest.fixture(scope="module")
def claims_result():
    params = {"sizes": [16, 24]}
    return get_experiment("hsu-claims").func(Config(trials=3, seed=2, workers=1, params=params))


def test_labs_data(labs_result):
    data = labs_result.data
    json.dumps(data)
    assert data["paper_gain_percent"] == {"fig5": 12.14, "fig6": 18.29}
    assert list(data["panels"]) == ["fig5", "fig6", "fig7", "fig8"]
    fig5 = data["panels"]["fig5"]
    assert [(p["types"], p["workstations"]) for p in fig5] == [(2, 16), (2, 32), (8, 16), (8, 32)]
    assert [p["types"] for p in data["panels"]["fig8"]] == [8, 8]
    for pts in data["panels"].values():
        for p in pts:
            e = p["event"]
            # switch_aware is never slower than LABS or TWO-VBBS in the event-driven run
            assert e["ours_losses"] == 0 and e["ours_gain_min"] >= 0
            assert e["ours_gain_min"] <= e["ours_gain"] <= e["ours_gain_max"]
            assert e["mean"]["switch_aware"] <= min(e["mean"]["labs"], e["mean"]["two_vbbs"])
            gain = 100 * (e["mean"]["two_vbbs"] - e["mean"]["labs"]) / e["mean"]["two_vbbs"]
            assert e["labs_gain"] == pytest.approx(gain)
            assert p["steps"]["mean"]["labs"] > 0
    head = data["headline"]["fig5"]["event"]
    assert set(head["labs_gain_by_types"]) == {"2", "8"}
    assert head["ours_gain_8_types"] >= 0
    eight = [p["event"] for p in data["panels"]["fig5"] if p["types"] == 8]
    assert head["ours_gain_8_types_min"] == min(e["ours_gain_min"] for e in eight)
    assert head["ours_gain_8_types_max"] == max(e["ours_gain_max"] for e in eight)


def test_labs_tables(labs_result):
    tables = labs_result.tables
    assert len(tables) == 5
    assert "Fig. 5" in tables[0] and "paper: LABS about 12.14 % better" in tables[0]
    assert "Fig. 6" in tables[1] and "18.29" in tables[1]
    assert "reconstruct" in tables[0]
    assert "both accountings" in tables[4] and "12.14" in tables[4] and "steps" in tables[4]


def test_labs_deterministic(labs_result):
    again = get_experiment("hsu-labs").func(Config(trials=2, seed=5, workers=1, params=SMALL))
    assert again.data == labs_result.data


def test_labs_figures_from_the_json_with_the_papers_gains(labs_result, tmp_path):
    written = draw_figures(labs_result, tmp_path)
    assert sorted(p.name for p in written) == ["hsu-labs-gains.png", "hsu-labs-times.png"]
    assert all(p.stat().st_size > 1000 for p in written)
    data = json.loads(json.dumps(labs_result.data))  # nothing but the JSON
    (fig,) = BUILDERS["hsu-labs-gains"](data).values()
    ax = fig.axes[0]
    levels = {round(line.get_ydata()[0], 2) for line in ax.lines if len(set(line.get_ydata())) == 1}
    assert {12.14, 18.29} <= levels
    assert any("12.14" in t.get_text() for t in ax.texts)
    drawn = [list(line.get_ydata()) for line in ax.lines if len(line.get_xdata()) == 2]
    by = data["headline"]["fig5"]["event"]["labs_gain_by_types"]
    assert list(by.values()) in drawn  # the curve is the data's


def test_claims(claims_result):
    data = claims_result.data
    json.dumps(data)
    keys = [c["key"] for c in data["claims"]]
    assert set(data["by_size"]) == {"16", "24"}
    assert data["paper_fraction"] == 1.0
    for n in data["by_size"].values():
        assert set(n) == set(keys)
        assert n["lemma2"] == 1.0  # Lemma 2 holds for the binomial-like tree
        assert n["labs5_lst"] == 1.0  # LABS without step 5 is ordered along its LST
        assert n["pd_tree"] == 1.0  # postorder doubling along the tree
    assert "the paper claims 100 %" in claims_result.tables[0]
    (fig,) = BUILDERS["hsu-claims"](json.loads(json.dumps(data))).values()
    ax = fig.axes[0]
    assert any(list(line.get_ydata()) == [100.0, 100.0] for line in ax.lines)
    heights = [round(b.get_height(), 6) for b in ax.patches]
    assert heights[: len(keys)] == [round(100 * data["by_size"]["16"][k], 6) for k in keys]


def test_unknown_parameter():
    with pytest.raises(HetcollError, match="hsu-labs: unknown parameter 'sizez'"):
        get_experiment("hsu-labs").func(Config(trials=1, params={"sizez": [16]}))
    with pytest.raises(HetcollError, match="unknown panel"):
        get_experiment("hsu-labs").func(Config(trials=1, params={"panels": ["fig9"]}))


def test_cli(tmp_path, capsys):
    code, out, _ = run(
        capsys, "reproduce", "hsu-claims", "--trials", "1", "--workers", "1", "--out", tmp_path,
        "--no-plot",
    )  # fmt: skip
    assert code == 0 and "Lemma 1" in out
    doc = json.loads((tmp_path / "hsu-claims.json").read_text())
    assert doc["trials"] == 1 and len(doc["by_size"]) == 5
