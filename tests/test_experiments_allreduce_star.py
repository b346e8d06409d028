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
    MEASURED,
    SITES_ONLY,
    allreduce_star,
    measure_runs,
    measured_points,
    measured_table,
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
            if algo in SITES_ONLY:  # the hosts of several sites only
                assert t is None, algo
                continue
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
            if algo in SITES_ONLY:
                assert rows[key] == ["n/a"] * len(pts)
                continue
            assert rows[key] == [f"{p['times'][algo] / p['bound']:.3f}" for p in pts], algo


def test_the_figure_draws_the_bound_at_one_and_every_planner(quick, tmp_path):
    fig = build_figures(quick)["allreduce-star.png"]
    axes = fig.axes
    assert len(axes) == 2
    for ax, collective in zip(axes, ("allreduce", "allgather"), strict=True):
        pts = [p for p in quick.data["points"] if p["collective"] == collective]
        lines = ax.get_lines()
        assert list(lines[0].get_ydata()) == [1.0, 1.0]  # the bound
        drawn = [a for a in pts[0]["times"] if a not in SITES_ONLY]  # n/a: no line
        want = [[p["times"][a] / p["bound"] for p in pts] for a in drawn]
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


def test_two_sites_at_eight_bytes():
    """An 8-byte allgather on two-site (the reproduce's smallest size): its bound is the
    WAN cut's 4 bytes after one hop (2 NICs' 5 us, the WAN's 1 ms) at 5 Gbit/s, just above
    one byte's reach; the hosts' steady-state packing, which counts no hop, is far below
    it at a 1-byte block as at 4 KiB (its per-message costs barely grow with the block),
    and printed."""
    pt = point(("two-site", "allgather", 8))
    p = platform("two-site")
    found = members_bound(p, "allgather", 8, hosts(p))
    assert pt["bound"] == found.parts["latency_cut"] == pytest.approx(1.01e-3 + 4 / 625e6)
    assert pt["bound"] > found.parts["reach"]
    small = pt["steady"]
    assert 0 < small < 0.2 * pt["bound"]
    pt = point(("two-site", "allgather", 4096))
    assert small <= pt["steady"] < 0.2 * pt["bound"]
    rows = table([pt], "two-site", "allgather").splitlines()
    assert any(line.startswith("steady-state") for line in rows)


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
    assert EXPERIMENTS["allreduce-star"].takes == ("sizes", "measure")
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
        (["allreduce-star", "--measure", "--sizes", "128MiB"], "measured up to 64 MiB"),
        (["banikazemi-fig1", "--measure"], "--measure: banikazemi-fig1 has no measured form"),
        (["allreduce-star", "--measure", "--executor", "mpi"], "not with --executor mpi"),
    ],
)
def test_reproduce_refuses_bad_sizes_in_one_line(capsys, tmp_path, args, needle):
    out = tmp_path / "out"
    one_line_error(*run(capsys, "reproduce", *args, "--out", out), needle)
    assert not out.exists()  # nothing half-written


# -- measured under emulation (--measure): what is built from a job's result -------------------


def _stub_result():
    """A job's result as launch returns it, for one allreduce run at M = 1 MiB (x10):
    per algorithm the least of each of two rounds (seconds as measured), least overall,
    prediction and lateness; "native" (not emulated) is measured too and left out."""
    rounds = {
        "default": [2.0, 3.0],
        "ring": [3.0, 3.3],
        "rabenseifner": [4.0, 2.7],
        "blind": [5.0, 6.0],
        "binomial": [9.0, 9.0],
        "mpi": [3.2, 3.6],
        "native": [0.1, 0.1],
    }
    entry = {
        a: {"measured_time": min(r), "predicted_time": 1.5 * min(r), "late": 0.25, "per_round": r}
        for a, r in rounds.items()
    }
    entry["native"]["predicted_time"] = None
    doc = {
        "operation": "allreduce",
        "nbytes": 1 << 20,
        "time_scale": 10.0,
        "algorithm": "default",
        **entry["default"],
        "chosen": "forest",
        "baselines": {a: e for a, e in entry.items() if a != "default"},
    }
    return {"runs": [{"documents": [doc], "probe": None}]}


def test_measured_points_pair_the_rounds_and_scale_to_model_seconds():
    (pt,) = measured_points([("allreduce", 1 << 20)], _stub_result(), {("allreduce", 1 << 20): 0.1})
    assert pt["chosen"] == "forest" and pt["time_scale"] == 10.0 and pt["bound"] == 0.1
    assert list(pt["times"]) == ["default", *MEASURED["allreduce"]]  # no "native"
    assert pt["times"]["default"] == 2.0 / 10 and pt["times"]["rabenseifner"] == 2.7 / 10
    assert pt["predicted"]["ring"] == 1.5 * 3.0 / 10 and pt["late"]["mpi"] == 0.25 / 10
    # round 0: ring's 3.0 is the fastest MPI time; round 1: rabenseifner's 2.7 (paired)
    assert pt["best"] == ["ring", "rabenseifner"]
    assert pt["speedup"] == [3.0 / 2.0, 2.7 / 3.0]


def test_measured_table_is_measured_and_simulated_over_the_bound():
    (pt,) = measured_points([("allreduce", 1 << 20)], _stub_result(), {("allreduce", 1 << 20): 0.1})
    lines = measured_table([pt], "allreduce").splitlines()
    rows = {line[:30].strip(): line[30:].split() for line in lines[3:]}
    assert rows["default ran"] == ["forest"]
    assert rows["default"] == ["2.000", "(3.000)"]  # 0.2 / 0.1 measured, 0.3 / 0.1 simulated
    assert rows["ring (MPI)"] == ["3.000", "(4.500)"]
    assert rows["fastest MPI / default"] == ["1.20", "[0.90-1.50]"]  # median of 1.5 and 0.9


def test_measure_runs_the_default_beside_mpich_in_one_job():
    sizes = (8, 1 << 20, 2 << 20)
    runs, cases = measure_runs(
        sizes, rounds=2, repeat=1, repeat_small=7, time_scale=50.0, timeout=60.0
    )
    assert cases == [(c, m) for c in ("allreduce", "allgather") for m in sizes]
    for job, (c, m) in zip(runs, cases, strict=True):
        assert job.operation == c and job.planner == "default" and job.native and job.emulate
        assert job.repeat == (7 if m <= 1 << 20 else 1)  # more calls where a call is short
        assert job.baselines == BASELINES[c] and job.rounds == 2 and job.time_scale == 50.0
        assert job.sizes == ((m,) if c == "allreduce" else (m // 8,))


def test_the_figure_draws_the_measured_points_dotted_after_the_simulated(quick):
    (pt,) = measured_points([("allreduce", 1 << 20)], _stub_result(), {("allreduce", 1 << 20): 0.1})
    data = {**quick.data, "measured": {"platform": "star8", "points": [pt]}}
    fig = build_figures(type(quick)(quick.name, data, quick.tables, quick.figures))[
        "allreduce-star.png"
    ]
    ax = fig.axes[0]  # allreduce on star8
    simulated = 1 + sum(t is not None for t in quick.data["points"][0]["times"].values())
    dotted = ax.get_lines()[simulated:]
    assert [list(line.get_ydata()) for line in dotted] == [[t / 0.1] for t in pt["times"].values()]
    assert {line.get_linestyle() for line in dotted} == {":"}
    assert not fig.axes[1].get_lines()[simulated:]  # no allgather measured
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "default HetComm (its choice per call), measured" in labels
