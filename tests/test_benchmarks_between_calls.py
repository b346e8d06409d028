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
        ["--ways", "single,barrier"],
        ["--steps", "nothing,nothing"],
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
    for mode in ("read result", "write input", "free temporary"):
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


def test_a_temporary_of_the_results_size_is_allocated_and_freed_between_calls():
    """The step that gives an algorithm allocating a buffer of the result's size in the
    call (``brucks``) the block a check's temporary freed: 0.55-0.78 of MPICH's own
    allgather at 1 MiB on 2 ranks in some jobs, 1.11-1.45 otherwise (tracemalloc sees
    numpy's data)."""
    import tracemalloc

    ranks = _load(
        "_ranks_between_calls3", ROOT / "benchmarks" / "mpi" / "ranks" / "between_calls.py"
    )
    send, recv = np.zeros(1 << 16, dtype=np.uint8), np.zeros(1 << 17, dtype=np.uint8)
    step = ranks._steps(send, recv)["free temporary"]
    tracemalloc.start()
    try:
        step()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak >= recv.nbytes and current < recv.nbytes
