"""`hetcoll reproduce beaumont-*`: tables, JSON data, figures drawn from the data with the
paper's values, on a tiny grid."""

from __future__ import annotations

import json

import pytest

from hetcoll.errors import HetcollError
from hetcoll.experiments import Config, get_experiment
from hetcoll.experiments.beaumont import ONE_PORT, PAPER_FIG4, PAPER_TABLE3
from hetcoll.figures import draw_figures
from hetcoll.plots import FIGURES

TINY = {"sizes": [8, 12], "densities": [0.2], "tiers": [30]}


@pytest.fixture(scope="module")
def results():
    return {
        name: get_experiment(name).func(Config(trials=2, seed=5, workers=1, params=TINY))
        for name in ("beaumont-fig4", "beaumont-fig5", "beaumont-table3")
    }


def test_ratios_are_at_most_one_under_one_port_and_ours_is_best(results):
    data = results["beaumont-fig4"].data
    json.dumps(data)
    for pt in data["by_size"]:
        stats = pt["stats"]
        assert pt["trials"] == 2 and pt["timeouts"] == 0
        for name in ONE_PORT:
            assert 0 < stats[name]["mean"] <= 1 + 1e-9, name
        best_paper = max(stats[k]["mean"] for k in PAPER_FIG4)
        assert stats["throughput_tree"]["mean"] >= best_paper - 1e-9
    assert data["paper_values"] == PAPER_FIG4
    assert "Fig. 4(a)" in results["beaumont-fig4"].tables[0]
    assert "paper" in results["beaumont-fig4"].tables[0]


def test_multi_port_ratios_can_pass_one(results):
    data = results["beaumont-fig5"].data
    assert data["model"] == "multi_port"
    means = [pt["stats"]["grow_tree_multiport"]["mean"] for pt in data["by_size"]]
    assert all(m > 0 for m in means)


def test_table3_carries_the_papers_values(results):
    data = results["beaumont-table3"].data
    assert data["paper_values"]["30"] == PAPER_TABLE3[30]
    assert [pt["n"] for pt in data["points"]] == [30]
    assert "[46%]" in results["beaumont-table3"].tables[0]


class _Marks:
    """Records the y values of every ``Axes.scatter`` call (the paper's markers)."""

    def __init__(self, original):
        self.ys: set[float] = set()

        def spy(ax, *args, **kwargs):
            if len(args) > 1:
                self.ys |= {round(float(y), 6) for y in args[1]}
            return original(ax, *args, **kwargs)

        self.spy = spy


@pytest.mark.parametrize("name", ["beaumont-fig4", "beaumont-fig5", "beaumont-table3"])
def test_figures_draw_from_the_data_alone(results, name, tmp_path, monkeypatch):
    import matplotlib.axes

    from hetcoll import figures  # noqa: F401  (registers the figure functions)

    result = results[name]
    data = json.loads(json.dumps(result.data))  # what the figure reads: the JSON alone
    marks = _Marks(matplotlib.axes.Axes.scatter)
    monkeypatch.setattr(matplotlib.axes.Axes, "scatter", marks.spy)
    drawn = [p for fig in result.figures for p in FIGURES[fig](data, tmp_path)]
    assert all(p.stat().st_size > 1000 for p in drawn)
    if name == "beaumont-fig4":
        assert {round(v, 6) for v in PAPER_FIG4.values()} <= marks.ys
    if name == "beaumont-table3":
        assert {round(v, 6) for v in PAPER_TABLE3[30].values()} <= marks.ys
    assert draw_figures(result, tmp_path)  # the CLI's path writes the same files


def test_deterministic_and_unknown_parameters(results):
    again = get_experiment("beaumont-table3").func(Config(trials=2, seed=5, workers=1, params=TINY))
    assert again.data == results["beaumont-table3"].data
    with pytest.raises(HetcollError, match="unknown parameter 'sizez'"):
        get_experiment("beaumont-fig4").func(Config(trials=1, params={"sizez": [3]}))
