"""Every experiment's figures: drawn from the result data alone (the plotted numbers are the
data's, and the same data gives the same figure after a JSON round trip) and carrying the
paper's reference values.  The matplotlib Figures are inspected (lines, point sets, bars),
not the PNG files."""

from __future__ import annotations

import json
import math

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

from _cli import run
from hetcoll.experiments import Config, Result
from hetcoll.figures import build_figures
from hetcoll.plots import BUILDERS, FIGURES


def _artists(fig) -> list[list[tuple]]:
    """Per axes: ``(kind, label, xs, ys)`` for every line, point set and bar set."""
    out = []
    for ax in fig.axes:
        items = []
        for line in ax.get_lines():
            xs, ys = line.get_xdata(), line.get_ydata()
            items.append(("line", line.get_label(), _floats(xs), _floats(ys)))
        for coll in ax.collections:
            offsets = coll.get_offsets()
            if len(offsets):
                items.append(
                    ("points", coll.get_label(), _floats(offsets[:, 0]), _floats(offsets[:, 1]))
                )
        for cont in ax.containers:
            if isinstance(cont, BarContainer):
                xs = [b.get_x() + b.get_width() / 2 for b in cont.patches]
                items.append(("bars", cont.get_label(), xs, [b.get_height() for b in cont]))
            elif isinstance(cont, ErrorbarContainer):
                line = cont.lines[0]
                items.append(
                    (
                        "errorbar",
                        cont.get_label(),
                        _floats(line.get_xdata()),
                        _floats(line.get_ydata()),
                    )
                )
        out.append(items)
    return out


def _floats(values) -> list[float]:
    return [float(v) for v in values]


def _axes_titled(fig, title: str):
    (ax,) = [ax for ax in fig.axes if ax.get_title() == title]
    return ax


def _has_points(items, x, y, label_part="paper") -> bool:
    """Whether a line or point set labelled with ``label_part`` passes through ``(x, y)``
    (to 1e-9: the data keep seconds, the axes µs)."""
    return any(
        kind in ("points", "line")
        and label_part in label
        and any(a == x and math.isclose(b, y, rel_tol=1e-9) for a, b in zip(xs, ys, strict=True))
        for kind, label, xs, ys in items
    )


def _built(result: Result) -> dict:
    """The figures of ``result``, checked to come from its data alone: built again from a
    JSON round trip of the data they are the same, artist for artist."""
    figs = build_figures(result)
    assert figs and set(result.figures) <= set(BUILDERS)
    again = build_figures(
        Result(result.name, json.loads(json.dumps(result.data)), [], result.figures)
    )
    assert sorted(again) == sorted(figs)
    for name, fig in figs.items():
        assert _artists(again[name]) == _artists(fig), name
    return figs


def test_every_registered_figure_is_built_from_data():
    from hetcoll import figures  # noqa: F401

    assert set(FIGURES) == set(BUILDERS)


def test_banikazemi_fig1_writes_a_png_with_the_papers_times(capsys, tmp_path):
    from hetcoll.experiments.banikazemi import fig1

    result = fig1(Config())
    (fig,) = _built(result).values()
    items = _artists(fig)[0]
    (bars,) = [i for i in items if i[0] == "bars"]
    assert bars[3] == [r["predicted_time"] * 1e6 for r in result.data["results"]]
    (paper,) = [i for i in items if i[0] == "points"]
    assert paper[1] == "paper (Fig. 1)"
    assert paper[3] == pytest.approx([700, 500, 400, 400])
    code, _, err = run(capsys, "reproduce", "banikazemi-fig1", "--out", tmp_path)
    assert code == 0
    assert (tmp_path / "banikazemi-fig1.png").stat().st_size > 0
    assert f"wrote {tmp_path / 'banikazemi-fig1.png'}" in err


def test_banikazemi_table2_figure():
    from hetcoll.experiments.banikazemi import TABLE2_PAPER, table2

    result = table2(Config(trials=20, seed=2, workers=1))
    (fig,) = _built(result).values()
    means, gaps = _artists(fig)
    rows = result.data["rows"]
    n = [float(r["participants"]) for r in rows]
    fnf = [i for i in means if i[0] == "errorbar" and i[1].startswith("FNF")]
    assert fnf[0][2:] == (n, [r["fnf_mean"] * 1e6 for r in rows])
    for k in n:
        paper_fnf, paper_opt = TABLE2_PAPER[int(k)]
        assert _has_points(means, k, paper_fnf)
        assert _has_points(means, k, paper_opt)
    assert _has_points(gaps, 9.0, 100 * (984.29 - 977.12) / 977.12)


def test_banikazemi_sim_figure_carries_23_33_and_24(monkeypatch):
    import hetcoll.experiments.banikazemi as b

    monkeypatch.setattr(b, "SIM_DESTINATIONS", (4, 63))
    monkeypatch.setattr(b, "SIM_MULTI_SOURCES", (4, 64))
    monkeypatch.setattr(b, "SIM_MULTI_DESTINATIONS", (8, 63))
    monkeypatch.setattr(b, "SIM_PANELS", tuple((p, lab, v[:2], f) for p, lab, v, f in b.SIM_PANELS))
    result = b.sim(Config(trials=1, seed=1, workers=1))
    figs = _built(result)
    speed = figs["banikazemi-sim-speed_factor.png"]
    for planner, foi in (("spoc", 2.3), ("fnf", 3.3)):
        items = _artists(speed)[[ax.get_title() for ax in speed.axes].index(planner)]
        assert _has_points(items, 63.0, foi)
        series = result.data["panels"][0]["series"]["4"]
        assert (
            "line",
            "speed factor = 4",
            [4.0, 63.0],
            [p["foi"][planner] for p in series],
        ) in items
    for name in ("banikazemi-sim-fast_fraction.png", "banikazemi-sim-message_size.png"):
        titles = [ax.get_title() for ax in figs[name].axes]
        assert _has_points(_artists(figs[name])[titles.index("spoc")], 63.0, 2.3)
        assert _has_points(_artists(figs[name])[titles.index("fnf")], 63.0, 3.3)
    multi = figs["banikazemi-sim-multiple_50.png"]
    for ax in multi.axes:
        items = _artists(multi)[multi.axes.index(ax)]
        assert _has_points(items, 63.0, 2.4) == (ax.get_title() in ("fnf", "fnf_joint"))


def test_figueira_cost_figure_carries_10_and_30_percent():
    from hetcoll.experiments.figueira import cost_gain

    params = {"sizes": [8, 16, 1024], "max_links": [5], "ours_trials": 0}
    monkey = Config(trials=1, seed=1, workers=1, params=params)
    result = cost_gain(monkey)
    (fig,) = _built(result).values()
    (items,) = _artists(fig)
    sizes = [8.0, 16.0, 1024.0]
    for name in ("dim2_cube", "tsts_cube", "eff_cube"):
        gains = [p["gain"][name] for p in result.data["points"]]
        assert any(i[2:] == (sizes, gains) for i in items if i[0] == "line"), name
    assert _has_points(items, 8.0, 10.0) and _has_points(items, 1024.0, 10.0)  # Dim2
    assert _has_points(items, 1024.0, 30.0)  # Eff_Cube
    tsts = [i for i in items if i[1] == "TSTS_Cube, paper (about)"]
    assert tsts[0][2:] == ([8.0, 16.0], [10.0, 10.0])


@pytest.fixture(scope="module")
def park():
    from hetcoll.experiments import get_experiment

    small = {"clusters": [2, 4], "clusters_per_site": [1], "sizes": [2, 65536]}
    return get_experiment("park-grid").func(Config(trials=2, seed=3, workers=1, params=small))


def test_park_figures_keep_every_planner_visible(park):
    figs = _built(park)
    assert sorted(figs) == ["park-clusters.png", "park-fig2.png", "park-sizes.png"]
    for name in ("park-clusters.png", "park-sizes.png"):
        items = _artists(figs[name])[0]
        curves = {i[1]: i for i in items if i[0] == "line" and not i[1].startswith("_")}
        assert set(curves) == {"MPICH-GX (HLOT)", "hlot", "spt", "gap_aware (ours)"}
        # no two curves drawn at the same points, even where their values are equal
        drawn = [set(zip(c[2], c[3], strict=True)) for c in curves.values()]
        assert all(a.isdisjoint(b) for k, a in enumerate(drawn) for b in drawn[k + 1 :])
        lines = [ln for ln in figs[name].axes[0].get_lines() if not ln.get_label().startswith("_")]
        assert len({(ln.get_marker(), ln.get_linestyle()) for ln in lines}) == len(lines)
    points = park.data["clusters"]["layouts"][0]["points"]
    items = _artists(figs["park-clusters.png"])[0]
    assert [c[3] for c in items if c[1] == "spt"] == [[p["gain"]["spt"] for p in points]]
    assert any(i[0] == "points" and i[3] == [160.0] for i in items)  # the paper's gain
    fig2 = _artists(figs["park-fig2.png"])[0]
    assert any(i[0] == "points" and i[1] == "paper (text)" and 1420.0 in i[3] for i in fig2)


def test_testbed_figure_from_its_data():
    """The MPI experiment's figure, on data of its shape (no ranks launched)."""
    from hetcoll.experiments.testbed import PAPER_FOI

    points = [
        {
            "fast": k,
            "nbytes": n,
            "foi_spoc": {"measured": 1.1 * k, "predicted": 1.2 * k},
            "foi_fnf": {"measured": 1.3 * k + n / 1e4, "predicted": 1.4 * k},
        }
        for k in (2, 8)
        for n in (4, 1024)
    ]
    data = {"fast": [2, 8], "points": points, "paper_foi_50pct_short": PAPER_FOI}
    (fig,) = _built(Result("banikazemi-testbed", data, [], ["testbed-foi"])).values()
    spoc, fnf = _artists(fig)
    assert ("line", "8 fast, measured", [4.0, 1024.0], [8.8, 8.8]) in spoc
    assert ("line", "8 fast, measured", [4.0, 1024.0], [10.4 + 4e-4, 10.4 + 0.1024]) in fnf
    assert any(i[1] == "paper: 2.3" and i[3] == [2.3, 2.3] for i in fnf)
    assert any(i[1] == "paper: 1.7" and i[3] == [1.7, 1.7] for i in spoc)


def test_figueira_barrier_figure_from_its_data():
    """The MPI experiment's figure, on data of its shape (no ranks launched)."""
    points = [
        {
            "n": 8,
            "method": m,
            "predicted_gain": g,
            "measured_gain": g - 1,
            "loop_measured_gain": g - 2,
            "loop_predicted_gain": g + 1,
        }
        for m, g in (("dim2_cube", 12.0), ("eff_cube", 30.0))
    ]
    data = {"sizes": [8], "points": points, "loop": 10, "draws": 3}
    (fig,) = _built(Result("figueira-barrier", data, [], ["figueira-barrier"])).values()
    (items,) = _artists(fig)
    bars = {i[1]: i[3] for i in items if i[0] == "bars"}
    assert bars["predicted (calc_cost)"] == [12.0, 30.0]
    assert bars["measured, one barrier"] == [11.0, 29.0]
