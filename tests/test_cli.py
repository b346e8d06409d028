"""The command line: the JSON contract, and one line + exit 2 for every bad input."""

from __future__ import annotations

import json

import pytest

from hetcoll.cli import main


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_json_contract_on_fig1(capsys):
    code, out, err = run(
        capsys, "plan", "fig1", "--op", "bcast", "--root", "1", "--algo", "fnf", "--json"
    )
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["algorithm"] == "fnf"
    assert doc["root"] == "1"
    assert doc["predicted_time"] == pytest.approx(400e-6)
    assert doc["sends"] == [
        ["1", "6"],
        ["1", "2"],
        ["6", "3"],
        ["1", "4"],
        ["6", "5"],
        ["1", "7"],
        ["6", "8"],
    ]
    assert doc["arrival"] == pytest.approx(
        {"1": 0, "6": 1e-4, "2": 2e-4, "3": 2e-4, "4": 3e-4, "5": 3e-4, "7": 4e-4, "8": 4e-4}
    )
    assert doc["units"]["time"] == "s"
    assert all(isinstance(k, str) for k in doc["arrival"])


@pytest.mark.parametrize(("algo", "time"), [("binomial", 700e-6), ("spoc", 500e-6)])
def test_plan_fig1_other_algorithms(capsys, algo, time):
    code, out, _ = run(capsys, "plan", "fig1", "--root", "1", "--algo", algo, "--json")
    assert code == 0 and json.loads(out)["predicted_time"] == pytest.approx(time)


def test_plan_writes_schedule_and_simulate_reads_it(capsys, tmp_path):
    path = tmp_path / "s.json"
    code, out, _ = run(
        capsys,
        "plan",
        "fig1",
        "--op",
        "multicast",
        "--root",
        "2",
        "--members",
        "3,6,8",
        "--size",
        "1KiB",
        "--algo",
        "spoc",
        "-o",
        path,
    )
    assert code == 0 and "predicted time" in out
    code, out, _ = run(capsys, "simulate", "fig1", path, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["algorithm"] == "spoc" and doc["nbytes"] == 1024
    assert set(doc["arrival"]) == {"2", "3", "6", "8"}


def test_simulate_accepts_plan_json_output(capsys, tmp_path):
    code, out, _ = run(capsys, "plan", "fig1", "--root", "1", "--algo", "binomial", "--json")
    path = tmp_path / "plan.json"
    path.write_text(out)
    code, out, _ = run(capsys, "simulate", "fig1", path, "--json")
    assert code == 0
    assert json.loads(out)["predicted_time"] == pytest.approx(700e-6)


def test_compare_json_is_sorted_with_ratios(capsys):
    code, out, _ = run(capsys, "compare", "fig1", "--root", "1", "--json")
    assert code == 0
    doc = json.loads(out)
    times = [r["predicted_time"] for r in doc["results"]]
    assert times == sorted(times)
    by = {r["algorithm"]: r for r in doc["results"]}
    assert by["fnf"]["ratio"] == pytest.approx(1.0)
    assert by["binomial"]["ratio"] == pytest.approx(1.75)
    assert {"binomial", "flat", "chain", "spoc", "fnf"} <= set(by)


def test_multi_multicast(capsys):
    code, out, _ = run(
        capsys,
        "plan",
        "fig1",
        "--op",
        "multi-multicast",
        "--group",
        "1:2,3",
        "--group",
        "6:7,8",
        "--algo",
        "flat",
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["collective"] == "multi_multicast"
    assert doc["roots"] == ["1", "6"]
    assert doc["predicted_time"] == pytest.approx(200e-6)


def test_planners_json(capsys):
    code, out, _ = run(capsys, "planners", "--json")
    assert code == 0
    names = {p["name"] for p in json.loads(out)["planners"]}
    assert {"binomial", "flat", "chain", "spoc", "fnf"} <= names


def test_reproduce_fig1(capsys, tmp_path):
    code, out, _ = run(capsys, "reproduce", "banikazemi-fig1", "--out", tmp_path, "--json")
    assert code == 0
    doc = json.loads(out)
    got = {r["algorithm"]: r["predicted_time"] for r in doc["results"]}
    assert got["binomial"] == pytest.approx(700e-6)
    assert got["spoc"] == pytest.approx(500e-6)
    assert got["fnf"] == pytest.approx(400e-6)
    assert (tmp_path / "banikazemi-fig1.json").exists()


BAD_PLATFORMS = {
    "malformed.json": '{"nodes": [',
    "malformed.yaml": "nodes: [a, b\n",
    "missing.json": '{"model": "tini"}',
    "unknown-field.json": '{"nodes": [{"id": "1", "tini": 3}]}',
    "duplicate.json": '{"nodes": [{"id": "1"}, {"id": "1"}]}',
    "negative.json": '{"nodes": [{"id": "1"}, {"id": "2", "t_ini": -1e-6}]}',
    "nan.json": '{"nodes": [{"id": "1", "t_ini": NaN}, {"id": "2"}]}',
    "infinite.json": '{"nodes": [{"id": "1", "t_ini": Infinity}, {"id": "2"}]}',
    "disconnected.json": '{"model": "hockney", "nodes": [{"id": "1"}, {"id": "2"}, {"id": "3"}],'
    ' "links": [{"u": "1", "v": "2", "latency": 1}]}',
    "matrix.json": '{"model": "postal", "nodes": [{"id": "1"}, {"id": "2"}],'
    ' "latency": [[0, 1], [1, 0], [1, 1]]}',
}


@pytest.mark.parametrize("name", sorted(BAD_PLATFORMS))
def test_bad_platform_file_one_line_exit_2_nothing_written(capsys, tmp_path, name):
    path = tmp_path / name
    path.write_text(BAD_PLATFORMS[name])
    out_file = tmp_path / "schedule.json"
    code, out, err = run(capsys, "plan", path, "--root", "1", "-o", out_file)
    assert code == 2
    assert out == ""
    assert err.startswith(f"hetcoll: error: {name}: ")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out_file.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "fig1", "--root", "9"], "unknown node '9'"),
        (["plan", "fig1", "--root", "1", "--algo", "fnff"], "unknown planner 'fnff'; choose from"),
        (["plan", "fig1", "--op", "alltoall", "--root", "1"], "unknown operation 'alltoall'"),
        (["plan", "fig1", "--op", "gather"], "--op gather needs --root"),
        (["plan", "fig1", "--op", "multicast", "--root", "1", "--members", ""], "--members"),
        (
            ["plan", "fig1", "--op", "multicast", "--root", "1", "--members", "2,z"],
            "unknown node 'z'",
        ),
        (["plan", "fig1", "--op", "multicast", "--root", "1"], "needs --members"),
        (["plan", "fig1", "--op", "multicast", "--root", "1", "--members", "1"], "no destination"),
        (["plan", "fig1"], "needs --root"),
        (["plan", "fig1", "--root", "1", "--size", "-5"], "--size"),
        (["plan", "fig1", "--root", "1", "--size", "lots"], "--size"),
        (["plan", "fig1", "--root", "1", "--model", "magic"], "unknown model 'magic'"),
        (["plan", "fig1", "--root", "1", "--model", "postal"], "model 'postal' needs"),
        (["plan", "no-such-platform.json", "--root", "1"], "no such file"),
        (["plan", "fig1", "--root", "1", "--frobnicate"], "No such option"),
        (["compare", "fig1", "--root", "1", "--algos", "fnf,nope"], "unknown planner 'nope'"),
        (["reproduce", "no-such-paper"], "unknown experiment"),
        (["reproduce", "banikazemi-fig1", "--trials", "0"], "--trials"),
        (["simulate", "fig1", "missing-schedule.json"], "cannot read"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert err.startswith("hetcoll: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_schedule_file(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "hetcoll-schedule", "version": 1, "collective": "bcast",'
        ' "algorithm": "x", "nbytes": 0, "flows": [{"root": "1", "children":'
        ' {"1": ["2", "2"]}, "nbytes": 0}]}'
    )
    code, out, err = run(capsys, "simulate", "fig1", bad)
    assert code == 2 and "appears twice" in err and err.count("\n") == 1
    foreign = tmp_path / "foreign.json"
    foreign.write_text(
        '{"format": "hetcoll-schedule", "version": 1, "collective": "bcast",'
        ' "algorithm": "x", "nbytes": 0, "flows": [{"root": "1", "children":'
        ' {"1": ["2", "Z"]}, "nbytes": 0}]}'
    )
    code, out, err = run(capsys, "simulate", "fig1", foreign)
    assert code == 2 and out == "" and "unknown node 'Z'" in err


def test_model_parameters_on_the_command_line(capsys):
    """--model takes a JSON object: eq. (2)'s gap delays the flat tree's later children."""
    args = ["plan", "park-fig2", "--root", "A", "--algo", "flat", "--json"]
    _, out, _ = run(capsys, *args)
    plain = json.loads(out)["predicted_time"]
    code, out, _ = run(capsys, *args, "--model", '{"name": "postal", "gap": 0.01}')
    doc = json.loads(out)
    assert code == 0 and doc["model"] == {"name": "postal", "gap": 0.01}
    assert doc["predicted_time"] > plain
    code, out, err = run(capsys, *args[:-1], "--model", '{"name": "postal", "lag": 1}')
    assert code == 2 and "unknown parameter 'lag'" in err and err.count("\n") == 1
