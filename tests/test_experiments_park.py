"""`hetcoll reproduce park-grid`: tables, JSON data and figures, on a few trials."""

from __future__ import annotations

import json

import pytest

from hetcoll.cli import main
from hetcoll.errors import HetcollError
from hetcoll.experiments import Config, get_experiment
from hetcoll.figures import draw_figures

SMALL = {"clusters": [2, 4], "clusters_per_site": [1, 2], "sizes": [2, 65536]}


@pytest.fixture(scope="module")
def result():
    return get_experiment("park-grid").func(Config(trials=2, seed=3, workers=1, params=SMALL))


def test_fig2_part_matches_the_text(result):
    rows = {r["algorithm"]: r for r in result.data["fig2"]["results"]}
    for name, units in {"binomial": 1420, "mst": 1150, "hlot": 600}.items():
        assert rows[name]["units"] == pytest.approx(units)
        assert rows[name]["paper_units"] == units
    assert rows["spt"]["units"] == pytest.approx(580)
    assert rows["mpich-gx"]["units"] == pytest.approx(600)
    assert rows["mpich-g2"]["units"] == pytest.approx(900)


def test_data_shapes_and_invariants(result):
    data = result.data
    assert data["trials"] == 2 and data["paper_gain_percent"] == 160
    layouts = data["clusters"]["layouts"]
    assert [lay["clusters_per_site"] for lay in layouts] == [1, 2]
    for lay in layouts:
        assert [p["clusters"] for p in lay["points"]] == [2, 4]
        for p in lay["points"]:
            # gap_aware is never slower than hlot or spt, so never gains less than them
            assert p["gain"]["gap_aware"] >= max(p["gain"]["hlot"], p["gain"]["spt"]) - 1e-9
            assert p["gain"]["mpich-gx"] >= -1e-9  # GX = G2 with HLOT for flat at the top
    assert [p["nbytes"] for p in data["sizes"]["points"]] == [2, 65536]
    json.dumps(data)  # JSON-ready


def test_tables(result):
    assert len(result.tables) == 4
    assert "Fig. 2" in result.tables[0] and "1420" in result.tables[0]
    assert "1 cluster per site" in result.tables[1]
    assert "2 clusters per site" in result.tables[2]
    assert "message size" in result.tables[3]


def test_figures_read_only_the_data(result, tmp_path):
    written = draw_figures(result, tmp_path)
    assert sorted(p.name for p in written) == [
        "park-clusters.png",
        "park-fig2.png",
        "park-sizes.png",
    ]
    assert all(p.stat().st_size > 1000 for p in written)


def test_deterministic(result):
    again = get_experiment("park-grid").func(Config(trials=2, seed=3, workers=1, params=SMALL))
    assert again.data == result.data


def test_unknown_parameter():
    with pytest.raises(HetcollError, match="park-grid: unknown parameter 'clusterz'"):
        get_experiment("park-grid").func(Config(trials=1, params={"clusterz": [2]}))


def test_cli(tmp_path, capsys):
    code = main(
        [
            "reproduce",
            "park-grid",
            "--trials",
            "1",
            "--workers",
            "1",
            "--out",
            str(tmp_path),
            "--no-plot",
            "--json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["experiment"] == "park-grid" and doc["trials"] == 1
    assert (tmp_path / "park-grid.json").exists()
