"""Latency-matrix platforms (Park et al. 2004): the exact file form loads; bad matrices are
rejected with one clear line, from Python and from the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hetcoll import PlatformError, load_platform
from hetcoll.cli import main

NODES = [{"id": "A"}, {"id": "B"}, {"id": "C"}]
GOOD = [[0, 0.012, 0.030], [0.011, 0, 0.020], [0.031, 0.019, 0]]


def test_the_issue_form_loads_asymmetric_with_labels():
    p = load_platform(
        {
            "model": "postal",
            "nodes": [{"id": "A", "site": "yonsei", "cluster": "y1"}, {"id": "B"}, {"id": "C"}],
            "latency": GOOD,
        }
    )
    assert p.ids == ("A", "B", "C")
    assert p.model.name == "postal"
    assert p.latency[0, 1] == 0.012 and p.latency[1, 0] == 0.011
    assert p.labels("site") == ("yonsei", None, None)
    assert p.labels("cluster") == ("y1", None, None)
    assert np.array_equal(p.routes.latency, np.array(GOOD))


def test_builtin_park_fig2_round_trips(tmp_path):
    p = load_platform("park-fig2")
    assert len(p) == 8 and p.model.name == "postal"
    assert np.array_equal(p.latency, p.latency.T)
    path = tmp_path / "fig2.json"
    path.write_text(json.dumps(p.to_dict()))
    q = load_platform(path)
    assert np.array_equal(q.latency, p.latency) and q.labels("site") == p.labels("site")


BAD = {
    "ragged": (
        [[0, 1, 2], [1, 0], [2, 1, 0]],
        "latency: is not square (row 1 has 2 entries, row 0 has 3)",
    ),
    "not-square": (
        [[0, 1, 2, 3], [1, 0, 1, 3], [2, 1, 0, 3]],
        "latency: must be a square matrix, got shape (3, 4)",
    ),
    "negative": ([[0, -1, 2], [1, 0, 1], [2, 1, 0]], "latency[0][1]: must be a finite number >= 0"),
    "diagonal": ([[0, 1, 2], [1, 5, 1], [2, 1, 0]], "latency[1][1]: diagonal must be 0, got 5.0"),
    "size": ([[0, 1], [1, 0]], "latency: is 2 x 2 but the platform has 3 nodes"),
    "text": ([[0, "x", 2], [1, 0, 1], [2, 1, 0]], "latency[0][1]: cannot read 'x' as a time"),
    "flat-list": ([0, 1, 2], "latency[0]: must be a list of numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_matrix_rejected_from_python(case):
    matrix, message = BAD[case]
    with pytest.raises(PlatformError) as info:
        load_platform({"model": "postal", "nodes": NODES, "latency": matrix})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def _write_with_literal(tmp_path, literal: str):
    # JSON files may carry NaN / Infinity literals (Python's json reads them)
    text = json.dumps({"model": "postal", "nodes": NODES})[:-1]
    text += f', "latency": [[0, {literal}, 2], [1, 0, 1], [2, 1, 0]]}}'
    path = tmp_path / "bad.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("NaN", "latency[0][1]: must be a number, got nan"),
        ("Infinity", "latency[0][1]: must be a finite number >= 0, got inf"),
    ],
)
def test_nan_and_infinity_rejected(tmp_path, literal, message):
    path = _write_with_literal(tmp_path, literal)
    with pytest.raises(PlatformError, match=r"^bad\.json: ") as info:
        load_platform(path)
    assert message in str(info.value)


def test_matrix_given_directly_is_validated_too():
    from hetcoll import Node, Platform

    nodes = tuple(Node(x) for x in "ABC")
    with pytest.raises(PlatformError, match=r"latency\[2\]\[0\]: must be a number, got nan"):
        Platform(nodes, latency=np.array([[0, 1, 1], [1, 0, 1], [np.nan, 1, 0]]), model="postal")
    with pytest.raises(PlatformError, match="is 2 x 2 but the platform has 3 nodes"):
        Platform(nodes, latency=np.zeros((2, 2)), model="postal")


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_matrix_cli_one_line_exit_2(tmp_path, capsys, case):
    matrix, message = BAD[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"model": "postal", "nodes": NODES, "latency": matrix}))
    code = main(["plan", str(path), "--root", "A", "--algo", "hlot"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("hetcoll: error: bad.json: ")
    assert message in lines[0]


def test_nan_cli_one_line(tmp_path, capsys):
    path = _write_with_literal(tmp_path, "NaN")
    assert main(["plan", str(path), "--root", "A", "--algo", "hlot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hetcoll: error: bad.json: latency[0][1]: must be a number, got nan"]


def test_cli_plans_hlot_on_good_matrix(tmp_path, capsys):
    path = tmp_path / "good.json"
    path.write_text(json.dumps({"model": "postal", "nodes": NODES, "latency": GOOD}))
    assert main(["plan", str(path), "--root", "A", "--algo", "hlot", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # C is reached through B: 0.012 + 0.020 = 0.032 > 0.030, so HLOT keeps the direct link
    assert doc["predicted_time"] == pytest.approx(0.030)
    assert doc["algorithm"] == "hlot"
