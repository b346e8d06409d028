"""``benchmarks/mpi/bench_mpich_algorithms.py`` without MPI: its launches force every
MPICH algorithm once, its summary pairs the rounds, its arguments are checked."""

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


def test_every_algorithm_is_forced_in_exactly_one_launch():
    envs = bench.launches()
    assert envs[0] == {}  # MPICH's own selection, where HetComm runs too
    for collective, names in bench.ALGORITHMS.items():
        key = f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM"
        forced = [env[key] for env in envs if key in env]
        assert forced == list(names[1:])
        for env in envs:  # the shared-memory path cannot take over a forced algorithm
            if key in env:
                assert env[f"MPIR_CVAR_{collective.upper()}_POSIX_INTRA_ALGORITHM"] == "mpir"


def test_summary_pairs_each_round_with_its_fastest_forced_algorithm():
    def one(auto, ring, het):
        return {
            "allreduce": {
                "forced": {"auto": [auto], "ring": [ring]},
                "hetcomm": [het],
                "choices": [{"algorithm": "mpi"}],
            }
        }

    doc = {"sizes": [8], "rounds": [one(2.0, 1.0, 2.0), one(1.0, 4.0, 1.5), one(3.0, 2.0, 3.0)]}
    (row,) = bench.summary(doc)
    # rounds: 2 / 1, 1.5 / 1, 3 / 2; HetComm / auto 1, 1.5, 1
    assert (row["ratio"], row["ratio_min"], row["ratio_max"]) == (1.5, 1.5, 2.0)
    assert row["ratio_auto"] == 1.0 and row["best"] == "ring"
    assert row["forced"] == {"auto": 2.0, "ring": 2.0} and row["hetcomm"] == 2.0


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
    run = {"forced": {"auto": [2.0], "ring": [1.0]}, "hetcomm": [1.1]}
    rounds = [{"allreduce": {**run, "choices": [{"algorithm": "mpi", "mpich": "ring"}]}}]
    (row,) = bench.summary({"sizes": [512], "rounds": rounds})
    assert row["hetcomm_ran"] == "mpi:ring" and row["ratio"] == 1.1
    text = bench.table({"ranks": 4, "rounds": rounds, "repeat": 5}, [row], (1.0, 2.0))
    assert "default / best forced" in text and "mpi:ring" in text
