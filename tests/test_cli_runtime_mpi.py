"""``hetcoll run``, ``probe`` and ``demo`` under mpiexec (<= 8 ranks, with timeouts)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hetcoll import load_platform, plan
from hetcoll.cli import cli
from hetcoll.compare import same_trees
from hetcoll.platform import Platform, nodes_from_costs, save_platform
from hetcoll.runtime.launch import run_mpi

pytestmark = pytest.mark.mpi

#: six nodes in three speed classes, millisecond costs (emulation is faithful at that scale)
T_INI = np.array([0.7, 1.5, 0.7, 3.0, 1.5, 0.7]) * 1e-3
T_BYTE = np.array([5.0, 5.0, 5.0, 10.0, 5.0, 5.0]) * 1e-8


@pytest.fixture(scope="module")
def six(tmp_path_factory):
    path = tmp_path_factory.mktemp("plat") / "six.json"
    save_platform(Platform(nodes_from_costs(T_INI, T_BYTE), model="tini", name="six"), path)
    return path


def _json(stdout: str) -> dict:
    return json.loads(stdout)


def test_probe_recovers_an_emulated_platform(six, tmp_path):
    """Correctness, not timing: where the probe declares its measurement reliable (every
    round trip confirmed by a second round), it recovered the emulated platform; where a
    busy host kept it from that, it says so (the JSON, one warning line) and names the
    round trips it could not confirm."""
    out = tmp_path / "probed.json"
    proc = run_mpi(6, ["hetcoll", "probe", "--emulate", six, "-o", out, "--json"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = _json(proc.stdout)
    probed = load_platform(out)
    assert probed.ids == load_platform(six).ids
    assert doc["forecast_winners"]
    rel = doc["reliability"]
    assert rel["reliable"] == (rel["unconfirmed"] == [])
    assert 3 <= rel["max_rounds"] <= 3 + 3  # --rounds 3, --retries 3
    if not rel["reliable"]:
        for u, v, nbytes in rel["unconfirmed"]:
            assert {u, v} <= set(probed.ids) and nbytes in (0, 4096, 16384)
        assert rel["max_rounds"] == 6 and rel["spread"] > rel["spread_allowed"]
        assert "warning: unreliable probe" in proc.stderr
        return
    assert "unreliable" not in proc.stderr
    # A merge never reorders: a truly slower node is never probed faster.
    order = np.argsort(T_INI, kind="stable")
    assert np.all(np.diff(probed.t_ini[order]) >= 0), probed.t_ini
    if doc["fit"]["classes"] < 3:
        # confirmed round trips, but per-round fits that do not separate (a busy host): the
        # probe keeps those nodes in one class rather than inventing heterogeneity, and the
        # JSON shows why -- the intervals of each merged class (those the classes were
        # split on, step 6 of the probe) chain into one
        spread = doc["fit"]["node_interval"]["t_ini"]
        raw = doc["fit"]["node_raw"]["t_ini"]
        for value in np.unique(probed.t_ini):
            members = sorted(np.flatnonzero(probed.t_ini == value), key=lambda k: raw[k])
            first, top = raw[members[0]], spread[members[0]][1]
            for k in members[1:]:  # within the 5 % tolerance of the first, or overlapping
                assert raw[k] <= first * 1.05 or spread[k][0] <= top, (spread, raw)
                top = max(top, spread[k][1])
        return
    assert np.allclose(probed.t_ini, T_INI, rtol=0.10), probed.t_ini
    assert np.allclose(probed.t_byte, T_BYTE, rtol=0.10), probed.t_byte
    assert doc["t_ini_max_rel_error"] < 0.10
    true = load_platform(six)
    for root in ("0", "3"):
        assert plan(probed, root, method="fnf").tree == plan(true, root, method="fnf").tree


def test_probe_prints_its_table_and_nothing_unasked(tmp_path):
    """The human output is the table, the speed classes and where the file went; the
    forecaster's winners (a detail of the estimate) are in ``--json`` only."""
    two = tmp_path / "two.json"
    save_platform(Platform(nodes_from_costs([1e-3, 2e-3]), name="two"), two)
    out = tmp_path / "probed.json"
    args = ["hetcoll", "probe", "--emulate", two, "--sizes", "0,4KiB", "-o", out]
    proc = run_mpi(2, args, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "speed class" in proc.stdout
    assert "forecast" not in proc.stdout + proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.strip()]
    # where the file went, and (on a busy host) the one warning line that it is unreliable
    assert [x for x in said if not x.startswith("hetcoll: warning: unreliable")] == [f"wrote {out}"]


def test_a_native_probe_measures_pairs_one_at_a_time_where_ranks_outnumber_cores(tmp_path):
    """Natively, three ranks on one host measure their pairs one at a time exactly when the
    host has fewer than three cores (pairs at once would time the scheduler's slices), and
    ``--parallel`` overrides it.  Correctness of the choice, not of the timings."""
    from hetcoll.knobs import usable_cores

    expected = "one at a time" if usable_cores() < 3 else "disjoint pairs at once"
    base = ["hetcoll", "probe", "--sizes", "0,4KiB", "--rounds", "1", "--retries", "0"]
    for extra, pairs in (([], expected), (["--parallel"], "disjoint pairs at once")):
        out = tmp_path / f"probed{len(extra)}.json"
        proc = run_mpi(3, [*base, *extra, "-o", out, "--json"], timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert _json(proc.stdout)["fit"]["pairs"] == pairs
        assert _json(proc.stdout)["fit"]["pipeline"]["message_cost"] >= 0.0  # natively
        assert load_platform(out).ids == ("0", "1", "2")


def test_run_reports_measured_predicted_and_baselines(six):
    proc = run_mpi(
        6,
        [
            "hetcoll",
            "run",
            "--platform",
            six,
            "--emulate",
            "--repeat",
            "2",
            "--root",
            "3",
            "--size",
            "100",
            "--json",
        ],
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = _json(proc.stdout)  # rank 0 alone prints
    assert doc["algorithm"] == "fnf" and doc["root"] == "3" and doc["nbytes"] == 100
    for key in ("measured_time", "predicted_time"):
        assert doc[key] > 0
    assert doc["baselines"]["native"]["measured_time"] > 0
    assert doc["baselines"]["native"]["emulated"] is False  # shown apart, never compared
    assert doc["baselines"]["native"]["speedup_vs_mpi"] is None
    assert doc["baselines"]["binomial"]["measured_time"] > 0
    mpi = doc["baselines"]["mpi"]  # MPI's own algorithm (binomial below 8 ranks), emulated
    assert mpi["mpich"] == "binomial" and mpi["measured_time"] > 0
    assert doc["speedup_vs_mpi"] == pytest.approx(mpi["measured_time"] / doc["measured_time"])
    # the emulation never beats the model: the last recipient finishes after its arrival
    assert doc["clock_time"] >= doc["predicted_time"] * (1 - 1e-9)
    assert mpi["clock_time"] >= mpi["predicted_time"] * (1 - 1e-9)


@pytest.mark.parametrize("op", ["barrier", "allreduce"])
def test_run_measures_a_hypercube_collective(tmp_path, op):
    from hetcoll.generators import figueira_platform

    plat = tmp_path / "cube.json"
    save_platform(figueira_platform(5, 5, base_latency=2e-3, seed=2), plat)
    args = ["hetcoll", "run", "--platform", plat, "--op", op, "--emulate", "--repeat", "2"]
    proc = run_mpi(5, [*args, "--algo", "eff_cube_ls", "--json"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = _json(proc.stdout)
    assert doc["operation"] == op and doc["algorithm"] == "eff_cube_ls" and doc["ranks"] == 5
    assert doc["nbytes"] == (0 if op == "barrier" else 8)
    assert sorted(doc["embedding"] + [e for e, _ in doc["folds"]]) == list("01234")
    blind = doc["baselines"]["blind"]
    # the emulation never beats the model: the last rank leaves after the cube's cost
    for d in (doc, blind):
        assert d["measured_time"] >= d["predicted_time"] * (1 - 1e-9)
    assert doc["predicted_time"] < blind["predicted_time"]
    assert doc["baselines"]["native"]["measured_time"] > 0


def test_run_bad_input_under_mpiexec_is_one_line_and_exit_2(tmp_path):
    proc = run_mpi(3, ["hetcoll", "run", "--platform", tmp_path / "nope.json"], timeout=60)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("hetcoll: error:")]
    assert len(errors) == 1 and "nope.json" in errors[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--platform", "fig1", "--repeat", "0"], "--repeat"),
        (["run", "--platform", "fig1", "--algo", "nope"], "unknown planner"),
        (["run", "--platform", "fig1", "--root", "99"], "unknown node"),
        (["run", "--platform", "fig1", "--op", "scan"], "'scan' is not one of"),
        (["run", "--platform", "fig1", "--op", "barrier", "--root", "1"], "has no root"),
        (["run", "--platform", "fig1", "--op", "allreduce", "--algo", "fnf"], "choose from"),
        (["run", "--platform", "fig1", "--algo", "eff_cube"], "does not plan a bcast"),
        (["run", "--platform", "fig1", "--op", "barrier", "--size", "8"], "moves no data"),
        (["probe", "--sizes", "", "-o", "x.json"], "--sizes"),
        (["demo", "--ranks", "1"], "--ranks"),
        (["probe", "-o", "x.json"], "2 or more ranks"),  # outside an MPI job of 2+ ranks
        (["tune"], "2 or more ranks"),
        (["tune", "--collectives", "scan"], "--collectives: unknown scan"),
        (["tune", "--emulate"], "--emulate: give the platform"),
        (["tune", "--sizes", "x"], "--sizes"),
        (["tune", "--mpich-selection", "x.json"], "--mpich-selection: natively, with"),
    ],
)
def test_bad_input_is_rejected_before_mpi(args, message):
    from hetcoll.cli import main

    runner = CliRunner()
    result = runner.invoke(cli, args, standalone_mode=False, catch_exceptions=True)
    assert result.exception is not None
    assert message in str(result.exception)
    assert main(args) == 2


def test_demo_runs_end_to_end(tmp_path):
    plat = tmp_path / "p4.json"
    save_platform(Platform(nodes_from_costs([0.7e-3, 1.5e-3, 0.7e-3, 1.5e-3]), name="p4"), plat)
    out = tmp_path / "demo"
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hetcoll",
            "demo",
            "--ranks",
            "4",
            "--platform",
            str(plat),
            "--repeat",
            "1",
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    names = {r["algorithm"] for r in doc["results"]}
    assert {"binomial", "spoc", "fnf", "mpi"} <= names
    assert "native" not in names  # un-emulated: kept apart, never compared
    assert doc["native_unemulated"]["measured_time"] > 0
    assert all(r["measured_time"] > 0 for r in doc["results"])
    mpi = next(r for r in doc["results"] if r["algorithm"] == "mpi")
    assert mpi["mpich"] == "binomial" and mpi["speedup_vs_mpi"] == 1.0  # 4 ranks
    for r in doc["results"]:
        if not r.get("same_tree_as"):
            assert r["speedup_vs_mpi"] == pytest.approx(mpi["measured_time"] / r["measured_time"])
    assert (out / "demo-trees.png").stat().st_size > 0
    assert (out / "demo-comparison.png").stat().st_size > 0
    # Whether the probe recovered the platform well enough for FNF to build the same tree is
    # probe accuracy - timing, measured idle and busy in benchmarks/mpi/bench_probe.py.  Here:
    # the demo reports it truthfully, from the platform its probe wrote.
    pr = doc["probe"]
    assert "fnf" in pr["same_tree"] and isinstance(pr["reliable"], bool)
    truth = load_platform(plat)
    recomputed = same_trees(
        truth,
        Platform.from_dict(pr["platform"]),
        sorted(pr["same_tree"]),
        root=truth.ids[0],
        nbytes=doc["nbytes"],
        scale=doc["time_scale"],
    )
    assert pr["same_tree"] == recomputed


def test_run_passes_planner_options_to_the_ranks(tmp_path):
    """``--option`` reaches the planner inside every rank (max_pairs=1 refuses the exact
    planner, a large one lets it run); an unknown key is one warning from rank 0."""
    plat = tmp_path / "four.json"
    costs = np.array([1.0, 2.0, 3.0, 2.0]) * 1e-3
    save_platform(Platform(nodes_from_costs(costs, np.zeros(4)), model="tini"), plat)
    args = ["hetcoll", "run", "--platform", plat, "--emulate", "--repeat", "1", "--algo"]
    refused = run_mpi(4, [*args, "optimal", "--option", "max_pairs=1"], timeout=120)
    assert refused.returncode == 2
    assert "more than max_pairs=1" in refused.stderr and "Traceback" not in refused.stderr
    ok = run_mpi(
        4,
        [*args, "optimal", "--option", "max_pairs=1e6", "--option", "bogus=2", "--json"],
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert _json(ok.stdout)["algorithm"] == "optimal"
    warned = [ln for ln in ok.stderr.splitlines() if ln.startswith("hetcoll: warning:")]
    assert warned == [
        "hetcoll: warning: planner 'optimal' ignores unknown option 'bogus' "
        "(it accepts: max_pairs, max_states)"
    ]


@pytest.mark.mpi
def test_tune_writes_mpichs_selection_file_from_its_rules(tmp_path):
    """``--mpich-selection``: natively, beside the tuning file, MPICH's own selection made
    from it (runtime/mpich_selection.py): MPICH's built-in tree, with the allreduce of 2
    ranks its rules' chain where they force an algorithm the file names."""
    from hetcoll.runtime.mpich_selection import RESTRICTIONS
    from hetcoll.tuning import load_tuning

    out, selection = tmp_path / "tuning.json", tmp_path / "selection.json"
    args = ["hetcoll", "tune", "--collectives", "allreduce", "--sizes", "8,4KiB", "--rounds", "3"]
    args += ["--candidates", "0", "--mpich-algorithms", "-o", out, "--mpich-selection", selection]
    proc = run_mpi(2, args, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tree = json.loads(selection.read_text())
    assert "collective=bcast" in tree and "collective=allgather" in tree
    intra = tree["collective=allreduce"]["comm_type=intra"]
    forced = [
        r for r in load_tuning(out).rules["allreduce"] if r.mpich in RESTRICTIONS["allreduce"]
    ]
    assert ("comm_size<3" in intra) == bool(forced), (intra, forced)


def test_tune_measures_and_writes_rules_that_load(tmp_path, six):
    """Under emulation (MPI's own: MPICH's algorithm, emulated): one row per collective and
    size, every plan's paired speed-ups, rules that load and cover what was measured."""
    from hetcoll.tuning import load_tuning

    out = tmp_path / "tuning.json"
    args = ["hetcoll", "tune", "--platform", six, "--emulate", "--time-scale", "0.05"]
    args += ["--collectives", "bcast,barrier", "--sizes", "8,64KiB", "--rounds", "3"]
    proc = run_mpi(6, [*args, "--candidates", "2", "-o", out, "--json"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = _json(proc.stdout)
    assert doc["kind"] == "tuning" and doc["ranks"] == 6 and doc["emulated"] is True
    rows = doc["measurements"]
    assert [(r["collective"], r["nbytes"]) for r in rows] == [
        ("bcast", 8),
        ("bcast", 65536),
        ("barrier", 0),
    ]
    for r in rows:
        mpi, *plans = r["plans"]
        assert mpi["algorithm"] == "mpi" and 1 <= len(plans) <= 2
        for p in r["plans"]:
            assert len(p["times"]) == 3 and min(p["times"]) > 0
            want = [m / t for m, t in zip(mpi["times"], p["times"], strict=True)]
            assert p["speedup"] == pytest.approx(want)
    t = load_tuning(out)
    assert t.ranks == 6 and set(t.rules) == {"bcast", "barrier"}
    for r in rows:
        rule = t.lookup(r["collective"], r["nbytes"])
        assert (rule.algorithm, rule.segment_size) == (
            r["winner"]["algorithm"],
            r["winner"]["segment_size"],
        )


def test_tune_reports_knobs_measured_slower_and_never_writes_them(tmp_path):
    """``--segment-sizes`` and ``--spin`` measure a user's knobs beside the candidates
    (natively, 4 ranks): every plan whose median speed-up is below 1 is listed in its row's
    ``slower`` (and a knob among them in one stderr warning line per row), the winner is
    never one of them, and a plan measured with a spin is never written (a rule has none)."""
    from hetcoll.tuning import load_tuning

    out, four = tmp_path / "tuning.json", tmp_path / "four.json"
    save_platform(Platform(nodes_from_costs(T_INI[:4], T_BYTE[:4]), name="four"), four)
    args = ["hetcoll", "tune", "--platform", four, "--collectives", "bcast,allreduce"]
    args += ["--sizes", "64KiB", "--rounds", "3", "--candidates", "1"]
    args += ["--segment-sizes", "1KiB", "--spin", "1ms", "-o", out, "--json"]
    proc = run_mpi(4, args, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = _json(proc.stdout)["measurements"]
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("hetcoll: warning:")]
    expected_warnings = 0
    for r in rows:
        _, *plans = r["plans"]
        spun = [p for p in plans if p.get("spin")]
        assert spun and all(p["spin"] == 1e-3 and p["knob"] for p in spun)
        if r["collective"] == "bcast":
            assert any(p.get("knob") and p["segment_size"] == 1024 for p in plans), plans
        want = [p for p in plans if p["speedup_median"] < 1.0]
        assert [s["speedup"] for s in r["slower"]] == [p["speedup_median"] for p in want]
        assert [s["knob"] for s in r["slower"]] == [bool(p.get("knob")) for p in want]
        w = r["winner"]
        chosen = [p for p in plans if (p["algorithm"], p["segment_size"]) == tuple(w.values())]
        if w["algorithm"] != "mpi":
            assert any(not p.get("spin") and p["speedup_median"] >= 1.0 for p in chosen)
        expected_warnings += any(s["knob"] for s in r["slower"])
    assert len(warned) == expected_warnings, warned
    assert all("measured slower than MPI's own" in ln for ln in warned)
    assert "KnobWarning" not in proc.stderr  # tune's own knobs: measured, not warned about
    t = load_tuning(out)
    for r in rows:
        rule = t.lookup(r["collective"], r["nbytes"])
        assert (rule.algorithm, rule.segment_size) == tuple(r["winner"].values())
