"""``benchmarks/mpi/bench_mpich_algorithms.py`` without MPI: its summary pairs the rounds
of the one job, the rounds' order rotates, its arguments are checked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "_bench_mpich_algorithms", ROOT / "benchmarks" / "mpi" / "bench_mpich_algorithms.py"
)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_summary_pairs_each_round_with_the_best_forced_algorithm():
    # ring's median 2 is the lowest (tree 2.5); HetComm / ring: 2, 1.5 / 4, 1.5
    times = {
        "allreduce": {
            "auto": [[2.0, 1.0, 3.0]],
            "ring": [[1.0, 4.0, 2.0]],
            "tree": [[3.0, 1.5, 2.5]],
            "hetcomm": [[2.0, 1.5, 3.0]],
        }
    }
    doc = {"sizes": [8], "times": times, "choices": {"allreduce": [{"algorithm": "mpi"}]}}
    (row,) = bench.summary(doc)
    assert row["best"] == "ring" and row["forced"] == {"ring": 2.0, "tree": 2.5}
    assert (row["ratio"], row["ratio_min"], row["ratio_max"]) == (1.5, 0.375, 2.0)
    assert row["lost_every_round"] is False
    # the rounds' fastest: ring 1, tree 1.5, ring 2: 2, 1, 1.5
    assert row["ratio_fastest"] == 1.5 and row["ratio_auto"] == 1.0 and row["auto"] == 2.0
    times["allreduce"]["hetcomm"] = [[2.0, 4.5, 3.0]]
    (row,) = bench.summary(doc)
    assert row["lost_every_round"] is True and row["ratio_min"] == 1.125


def test_the_rounds_order_rotates_and_reverses():
    spec = importlib.util.spec_from_file_location(
        "_ranks_mpich_algorithms", ROOT / "benchmarks" / "mpi" / "ranks" / "mpich_algorithms.py"
    )
    ranks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ranks)
    variants = ["auto", "ring", "tree", "hetcomm"]
    orders = [ranks.order(variants, r) for r in range(4)]
    assert all(sorted(o) == sorted(variants) for o in orders)
    assert [o[0] for o in orders] == variants  # round r starts with the r-th variant
    assert orders[1] == ["ring", "auto", "hetcomm", "tree"]  # backwards


@pytest.mark.parametrize(
    "argv",
    [["--ranks", "9"], ["--ranks", "1"], ["--rounds", "0"], ["--sizes", "128MiB"],
     ["--sizes", "0"], ["--sizes", "lots"]],
)  # fmt: skip
def test_bad_arguments_exit_2_before_any_launch(argv, capsys, monkeypatch):
    monkeypatch.setattr(bench, "measure", lambda *a: pytest.fail("launched"))
    with pytest.raises(SystemExit) as info:
        bench.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert ": error: --" in err.strip().splitlines()[-1]


def test_the_table_says_which_mpich_algorithm_hetcomm_forced():
    times = {"allreduce": {"auto": [[2.0]], "ring": [[1.0]], "hetcomm": [[1.1]]}}
    doc = {"sizes": [512], "times": times, "rounds": 1, "repeat": 5, "ranks": 4}
    doc["choices"] = {"allreduce": [{"algorithm": "mpi", "mpich": "ring"}]}
    (row,) = bench.summary(doc)
    assert row["hetcomm_ran"] == "mpi:ring" and row["ratio"] == 1.1
    text = bench.table(doc, [row], (1.0, 2.0))
    assert "HetComm / best forced" in text and "mpi:ring" in text and "one job" in text


def test_a_size_lost_in_every_round_is_explained_by_what_the_tune_measured_there():
    times = {
        "allgather": {
            "auto": [[2.0, 2.0], [2.0, 2.0]],
            "ring": [[1.0, 1.0], [3.0, 3.0]],
            "hetcomm": [[2.0, 2.0], [2.0, 2.0]],
        }
    }
    tune = [
        {"nbytes": n, "calls": c, "winner": {"algorithm": "mpi"}, "confirmed": None,
         "speedup": {"ring": [1.5, 0.8]}}
        for n, c in ((2, 40), (4, 3))
    ]  # fmt: skip
    doc = {"sizes": [8, 16], "times": times, "tune": {"allgather": tune}}
    doc["choices"] = {"allgather": [{"algorithm": "mpi"}] * 2}
    rows = bench.summary(doc)
    assert [r["lost_every_round"] for r in rows] == [True, False]
    (note,) = bench.tune_notes(doc, rows)
    assert note == (
        "allgather 8 B: tune (2 B, 40 calls a measurement) measured ring 1.50 0.80 x MPI; "
        "picked mpi, the rounds' winner's confirmation none"
    )
