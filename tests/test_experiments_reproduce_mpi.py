"""``hetcoll reproduce NAME --executor mpi``: the trials run on the ranks of
``mpiexec -n N python -m mpi4py.futures -m hetcoll ...`` and the output is the bytes a local
run of the same seed writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from _cli import one_line_error, run
from _golden import TABLE2_ARGS, assert_table2_golden

MPIEXEC = Path(sys.executable).with_name("mpiexec")


@pytest.mark.mpi
def test_three_ranks_give_the_local_runs_bytes(tmp_path):
    """Rank 0 runs the command, ranks 1 and 2 the trials; the golden files are main's local
    output for the same seed (tests/test_experiments_table2.py)."""
    cmd = [str(MPIEXEC), "-n", "3", sys.executable, "-m", "mpi4py.futures", "-m", "hetcoll"]
    cmd += [*TABLE2_ARGS, "--executor", "mpi", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_table2_golden(done.stdout, tmp_path)


def test_without_mpi4py_futures_it_says_how(capsys, tmp_path):
    one_line_error(
        *run(capsys, "reproduce", "banikazemi-fig1", "--executor", "mpi", "--out", tmp_path),
        "--executor mpi",
        "python -m mpi4py.futures -m hetcoll",
    )
    assert not any(tmp_path.iterdir())  # nothing half-written


def test_workers_are_the_ranks(capsys, tmp_path):
    one_line_error(
        *run(capsys, "reproduce", "banikazemi-fig1", "--executor", "mpi", "--workers", "2"),
        "--workers: not with --executor mpi",
    )


def test_unknown_executor(capsys):
    code, out, err = run(capsys, "reproduce", "banikazemi-fig1", "--executor", "dask")
    one_line_error(code, out, err, "--executor")


@pytest.mark.parametrize("name", ["banikazemi-testbed", "figueira-barrier"])
def test_experiments_with_their_own_mpi_job_refuse_it(capsys, name):
    one_line_error(
        *run(capsys, "reproduce", name, "--executor", "mpi"),
        f"--executor mpi: {name} starts MPI ranks of its own",
    )
