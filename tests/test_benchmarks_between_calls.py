"""``benchmarks/mpi/bench_between_calls.py`` without MPI: its table on synthetic timings
and its arguments checked before any launch; the rank program's steps between calls leave
the result as the call gave it except the one that writes it."""

from __future__ import annotations

import doctest
import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load("_bench_between_calls", ROOT / "benchmarks" / "mpi" / "bench_between_calls.py")


def test_the_doctests():
    assert doctest.testmod(bench).failed == 0


def test_the_table_pairs_each_variant_with_mpis_own_per_round():
    doc = {
        "variants": ["auto", "ring"],
        "modes": ["nothing", "write result"],
        "times": {
            "nothing": {"auto": [2.0, 4.0, 2.0], "ring": [1.0, 3.0, 3.0]},
            "write result": {"auto": [1.0, 1.0, 1.0], "ring": [2.0, 2.0, 0.5]},
        },
    }
    assert bench.rows(doc) == [
        ["ring", "0.750 (2/3)", "2.000 (1/3)"],
        ["auto us", "2000000.0", "1000000.0"],
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["--ranks", "1"],
        ["--ranks", "5"],
        ["--calls", "0"],
        ["--rounds", "0"],
        ["--size", "0"],
        ["--size", "65MiB"],
        ["--size", "x"],
    ],
)
def test_bad_arguments_exit_2_before_any_launch(argv, capsys, monkeypatch):
    monkeypatch.setattr("hetcoll.jobs.run_program", lambda *a, **k: pytest.fail("launched"))
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2


def test_only_the_write_of_the_result_changes_the_result_buffer():
    ranks = _load(
        "_ranks_between_calls", ROOT / "benchmarks" / "mpi" / "ranks" / "between_calls.py"
    )
    send, recv = np.arange(8, dtype=np.int64), np.arange(8, dtype=np.int64) * 3
    steps = ranks._steps(send, recv)
    assert set(steps) == set(ranks.BETWEEN) and steps["nothing"] is None
    for mode in ("read result", "write input"):
        before = recv.copy(), send.copy()
        steps[mode]()
        assert np.array_equal(recv, before[0])
        assert np.array_equal(send, before[1]) or mode == "write input"
    steps["write result"]()
    assert not recv.any()


def test_in_place_every_step_ends_with_the_contribution_written():
    ranks = _load(
        "_ranks_between_calls2", ROOT / "benchmarks" / "mpi" / "ranks" / "between_calls.py"
    )
    send, recv = np.full(8, 5, dtype=np.int64), np.zeros(8, dtype=np.int64)
    steps = ranks._steps(send, recv, lambda: np.copyto(recv, send))
    assert set(steps) == set(ranks.BETWEEN)
    for mode in ranks.BETWEEN:
        recv.fill(-1)
        steps[mode]()
        assert (recv == 5).all(), mode
