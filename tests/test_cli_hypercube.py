"""hetcoll plan / compare / simulate with --op allreduce|allgather|barrier."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hetcoll.cli import main
from hetcoll.planners.cube_embedding import calc_cost

LATENCY = [
    [0, 0.003, 0.001, 0.004, 0.002],
    [0.003, 0, 0.002, 0.001, 0.005],
    [0.001, 0.002, 0, 0.003, 0.001],
    [0.004, 0.001, 0.003, 0, 0.002],
    [0.002, 0.005, 0.001, 0.002, 0],
]
IDS = ["A", "B", "C", "D", "E"]


def write_platform(tmp_path, latency=LATENCY, name="p.json", ids=IDS):
    path = tmp_path / name
    doc = {"model": "postal", "nodes": [{"id": i} for i in ids], "latency": latency}
    path.write_text(json.dumps(doc))
    return str(path)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("op", ["allreduce", "allgather", "barrier"])
@pytest.mark.parametrize("algo", ["blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls"])
def test_plan_json_prints_embedding_and_predicted_time(tmp_path, capsys, op, algo):
    path = write_platform(tmp_path)
    code, out, err = run(capsys, "plan", path, "--op", op, "--algo", algo, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "plan" and doc["collective"] == op and doc["algorithm"] == algo
    assert len(doc["embedding"]) == 4 and len(doc["folds"]) == 1
    assert sorted(doc["embedding"] + [e for e, _ in doc["folds"]]) == IDS
    index = {v: k for k, v in enumerate(IDS)}
    positions = [index[v] for v in doc["embedding"]]
    folds = [(index[e], index[p]) for e, p in doc["folds"]]
    assert doc["predicted_time"] == calc_cost(np.array(LATENCY), positions, folds)
    assert doc["schedule"]["hypercube"]["positions"] == doc["embedding"]


def test_plan_text_save_and_simulate(tmp_path, capsys):
    path = write_platform(tmp_path)
    out_file = tmp_path / "s.json"
    code, out, _ = run(
        capsys, "plan", path, "--op", "allreduce", "--reduce-op", "max", "-o", out_file
    )
    assert code == 0
    assert "eff_cube: allreduce (max)" in out and "embedding" in out and "folded" in out
    code, out, err = run(capsys, "simulate", path, out_file, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["algorithm"] == "eff_cube" and doc["combine"] == "max"
    code, out, _ = run(capsys, "plan", path, "--op", "allreduce", "--json")
    assert json.loads(out)["predicted_time"] == doc["predicted_time"]


def test_compare(tmp_path, capsys):
    path = write_platform(tmp_path)
    code, out, err = run(capsys, "compare", path, "--op", "allreduce", "--json")
    assert code == 0, err
    doc = json.loads(out)
    rows = {r["algorithm"]: r for r in doc["results"]}
    cubes = {r["algorithm"] for r in doc["results"] if "embedding" in r}
    assert cubes == {"blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls"}
    assert {"rooted_ls", "binomial"} <= set(rows) - cubes  # reduce + bcast trees beside them
    assert rows["blind"]["gain_vs_blind"] == 0.0
    assert rows["eff_cube_ls"]["predicted_time"] <= rows["eff_cube"]["predicted_time"]
    code, out, _ = run(capsys, "compare", path, "--op", "barrier", "--algos", "blind,eff_cube")
    assert code == 0 and "gain vs blind" in out and "dim2_cube" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--op", "barrier", "--root", "A"], "--root: a barrier has no root"),
        (
            ["--op", "allreduce", "--root", "A", "--algo", "eff_cube"],
            "hypercube allreduce has no root",
        ),
        (["--op", "allgather", "--reduce-op", "max"], "--reduce-op: only an allreduce"),
        (["--op", "bcast", "--root", "A", "--reduce-op", "max"], "--reduce-op: only for"),
        (["--op", "barrier", "--size", "8"], "a barrier moves no data"),
        (["--op", "allreduce", "--segment-size", "8"], "is not pipelined"),
        (["--op", "barrier", "--algo", "fnf"], "does not plan a barrier"),
        (["--op", "bcast", "--root", "A", "--algo", "eff_cube"], "does not plan a bcast"),
        (["--op", "allreduce", "--members", "A,Z"], "unknown node 'Z'"),
        (["--op", "allreduce", "--reduce-op", "avg"], "unknown reduction 'avg'"),
    ],
)
def test_bad_requests_one_line_exit_2(tmp_path, capsys, args, message):
    path = write_platform(tmp_path)
    code, out, err = run(capsys, "plan", path, *args)
    assert code == 2 and out == ""
    assert err.startswith("hetcoll: error: ") and err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize(
    ("latency", "message"),
    [
        ([[0, 1, 2], [1, 0, 2]], "latency: must be a square matrix, got shape (2, 3)"),
        ([[0, 1, 2], [1, 0, 2], [2, 2]], "latency: is not square"),
        ([[0, float("nan")], [1, 0]], "latency[0][1]: must be a number, got nan"),
        ([[0, -1], [-1, 0]], "latency[0][1]: must be a finite number >= 0"),
    ],
)
def test_bad_matrices_one_line_exit_2(tmp_path, capsys, latency, message):
    ids = [str(i) for i in range(len(latency))]
    path = tmp_path / "bad.json"
    doc = {"model": "postal", "nodes": [{"id": i} for i in ids], "latency": latency}
    path.write_text(json.dumps(doc))  # json writes NaN, as other tools do
    code, out, err = run(capsys, "plan", path, "--op", "allreduce")
    assert code == 2 and out == ""
    assert err.startswith("hetcoll: error: bad.json: ") and err.count("\n") == 1
    assert message in err
