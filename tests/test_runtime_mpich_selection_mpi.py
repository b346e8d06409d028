"""MPICH's own selection file made from a tuning file (runtime/mpich_selection.py) is read
and obeyed by the MPI library here, and its guards keep every call it cannot serve on
MPICH's own choice: a program started with it gives the right data for allreduce (SUM,
MAX, in place, a non-commutative operator) and allgather at every rule's sizes on 4 and 2
ranks, on 3 ranks (another size: MPICH's own) and on a split communicator; the same file
without the guard on ``reduce_scatter_allgather`` aborts the job at an 8-byte allreduce
(MPICH's assertion), which shows that MPICH runs what the file names
(mpi_programs/mpich_selection.py).  A ``HetComm`` given the same tuning file in a program
started with it passes its ``Allreduce`` and ``Allgather`` to MPI with mpi4py's own methods
(no Python before the call: MPICH forces the algorithms), and forces them itself (its
one-step functions) without the file or with another one; the data are MPI's either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "mpich_selection.py"
VARIABLE = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"


def _write(tmp_path: Path, ranks: int, *extra: str) -> Path:
    out = tmp_path / f"selection{ranks}{''.join(extra)}.json"
    proc = run_mpi(1, [PROGRAM, "write", str(ranks), out, *extra], module=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.mpi
@pytest.mark.parametrize(("ranks", "tuned_for"), [(4, 4), (2, 2), (3, 4)])
def test_a_program_started_with_the_file_gets_the_right_data(tmp_path, ranks, tuned_for):
    selection = _write(tmp_path, tuned_for)
    out = tmp_path / "check"
    env = {VARIABLE: str(selection)}
    proc = run_mpi(ranks, [PROGRAM, "check", out], module=False, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(ranks):
        assert json.loads(Path(f"{out}.{r}").read_text())["ok"], r


@pytest.mark.mpi
def test_mpich_runs_what_the_file_names_so_the_guards_matter(tmp_path):
    selection = _write(tmp_path, 4, "unguarded")
    out = tmp_path / "check"
    env = {VARIABLE: str(selection)}
    proc = run_mpi(4, [PROGRAM, "check", out], module=False, timeout=240, env=env)
    assert proc.returncode != 0
    assert "reduce_scatter_allgather" in proc.stderr and "count >= pof2" in proc.stderr


@pytest.mark.mpi
@pytest.mark.parametrize(("made_for", "kinds"), [(4, "mpi4py"), (2, "forced"), (None, "forced")])
def test_a_tuned_hetcomm_leaves_the_forcing_to_the_file_made_from_its_tuning(
    tmp_path, made_for, kinds
):
    env = {VARIABLE: str(_write(tmp_path, made_for))} if made_for else {}
    out = tmp_path / "hetcomm"
    proc = run_mpi(4, [PROGRAM, "hetcomm", out], module=False, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(4):
        got = json.loads(Path(f"{out}.{r}").read_text())
        assert got["forcing"] and got["ok"], (r, got)
        assert got["kinds"] == [kinds, kinds], (r, got)
