"""``hetcoll reproduce allreduce-star``: its table and figure hold the planners' simulated
times over the lower bound, exactly; its command refuses bad sizes in one line."""

from __future__ import annotations

import json

import pytest

from _cli import one_line_error, run
from hetcoll import simulate
from hetcoll.allbounds import collective_bound, members_bound
from hetcoll.compare import plan_request
from hetcoll.errors import HetcollError
from hetcoll.experiments import EXPERIMENTS, Config
from hetcoll.experiments.allreduce_star import (
    BASELINES,
    EVERY_NODE,
    HETCOLL,
    allreduce_star,
    platform,
    point,
    table,
)
from hetcoll.figures import build_figures, draw_figures
from hetcoll.generators import hosts
from hetcoll.units import format_size, format_time


@pytest.fixture(scope="module")
def quick():
    return allreduce_star(Config(workers=1, params={"quick": True}))


def _direct(name, collective, m, algo):
    """The planner's simulated time, planned here through the public front door."""
    p = platform(name)
    each = m if collective == "allreduce" else m // len(p)
    per_root = collective == "allreduce" and algo in ("forest", "balanced", "ring", "rabenseifner")
    s = plan_request(p, collective, algo, nbytes=each, options={"align": 8} if per_root else None)
    return simulate(p, s).makespan


def test_points_are_the_planners_simulated_times_and_the_bound(quick):
    points = quick.data["points"]
    assert {(p["collective"], p["M"]) for p in points} == {
        (c, m) for c in ("allreduce", "allgather") for m in (64, 64 << 10)
    }
    for pt in points:
        name, collective, m = pt["platform"], pt["collective"], pt["M"]
        assert name == "star8"
        found = collective_bound(platform(name), collective, m)
        assert pt["bound"] == found.lower_bound and pt["optimum"] == found.optimum
        assert list(pt["times"]) == [*HETCOLL[collective], *BASELINES[collective]]
        for algo, t in pt["times"].items():
            assert t == _direct(name, collective, m, algo), algo
            assert t >= pt["bound"] * (1 - 1e-9), algo  # no plan beats the bound


def test_the_table_is_time_over_bound_with_the_bound_row_at_one(quick):
    assert len(quick.tables) == 2  # star8: allreduce, allgather
    for text, collective in zip(quick.tables, ("allreduce", "allgather"), strict=True):
        pts = [p for p in quick.data["points"] if p["collective"] == collective]
        lines = text.splitlines()
        assert lines[0].startswith(f"{collective} on star8")
        assert lines[1].split()[3:] == [w for p in pts for w in format_size(p["M"]).split()]
        rows = {line[:18].strip(): line[18:].split() for line in lines[3:]}
        assert rows["lower bound (time)"] == [
            w for p in pts for w in format_time(p["bound"]).split()
        ]
        assert rows["bound"] == ["1.000"] * len(pts)
        for algo in (*HETCOLL[collective], *BASELINES[collective]):
            key = algo if algo in HETCOLL[collective] else f"{algo} (MPI)"
            assert rows[key] == [f"{p['times'][algo] / p['bound']:.3f}" for p in pts], algo


def test_the_figure_draws_the_bound_at_one_and_every_planner(quick, tmp_path):
    fig = build_figures(quick)["allreduce-star.png"]
    axes = fig.axes
    assert len(axes) == 2
    for ax, collective in zip(axes, ("allreduce", "allgather"), strict=True):
        pts = [p for p in quick.data["points"] if p["collective"] == collective]
        lines = ax.get_lines()
        assert list(lines[0].get_ydata()) == [1.0, 1.0]  # the bound
        want = [[p["times"][a] / p["bound"] for p in pts] for a in pts[0]["times"]]
        assert [list(line.get_ydata()) for line in lines[1:]] == want
        assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[0].startswith("lower bound") and any("MPICH" in x for x in labels)
    (png,) = draw_figures(quick, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_sites_plan_on_the_hosts_against_their_bound():
    """The hosts are the members, the switches route: the bound is members_bound's, the
    planners that plan on every node are n/a (None, "n/a" in the table, no line)."""
    pt = point(("two-site", "allgather", 4096))
    p = platform("two-site")
    members = hosts(p)
    assert pt["bound"] == members_bound(p, "allgather", 4096, members).lower_bound
    for algo, t in pt["times"].items():
        if algo in EVERY_NODE:
            assert t is None
            continue
        s = plan_request(p, "allgather", algo, members=members, nbytes=4096 // 8)
        assert t == simulate(p, s).makespan and t >= pt["bound"], algo
    rows = {
        line[:18].strip(): line[18:].split()
        for line in table([pt], "two-site", "allgather").splitlines()[3:]
    }
    assert rows["ring (MPI)"] == ["n/a"] and rows["auto"] == [
        f"{pt['times']['auto'] / pt['bound']:.3f}"
    ]


def test_same_inputs_same_numbers():
    task = ("star8-3speeds", "allgather", 512)
    assert point(task) == point(task)


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"platforms": ["star9"]}, "unknown platform 'star9'"),
        ({"sizes": [12]}, "multiple of 8"),
        ({"sizes": [0]}, "multiple of 8"),
        ({"sizes": [512 << 20]}, "256 MiB"),
        ({"sizes": []}, "at least one"),
    ],
)
def test_bad_params_are_refused_before_any_work(params, needle):
    with pytest.raises(HetcollError, match=needle):
        allreduce_star(Config(workers=1, params=params))


def test_reproduce_command_writes_the_json_and_the_png(capsys, tmp_path):
    assert EXPERIMENTS["allreduce-star"].takes == ("sizes",)
    code, out, _ = run(
        capsys, "reproduce", "allreduce-star", "--sizes", "4KiB", "--workers", "1",
        "--out", tmp_path, "--json",
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert {(p["platform"], p["M"]) for p in doc["points"]} == {
        ("star8", 4096),
        ("star8-3speeds", 4096),
        ("two-site", 4096),
    }
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "allreduce-star.json",
        "allreduce-star.png",
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["allreduce-star", "--sizes", "12"], "multiple of 8"),
        (["allreduce-star", "--sizes", "lots"], "--sizes"),
        (["allreduce-star", "--sizes", "4KiB,"], "--sizes"),
        (["banikazemi-fig1", "--sizes", "4KiB"], "sweeps no message sizes"),
    ],
)
def test_reproduce_refuses_bad_sizes_in_one_line(capsys, tmp_path, args, needle):
    out = tmp_path / "out"
    one_line_error(*run(capsys, "reproduce", *args, "--out", out), needle)
    assert not out.exists()  # nothing half-written
