"""The mpi4py example (examples/training_loop.py) under mpiexec, 8 ranks, natively and
under emulation: its results equal mpi4py's (it checks every one); emulated it prints
exactly its transcript (what ran for each call is the model's choice), natively on this one
host MPI's own runs every call."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.mpi


SCRIPT = ROOT / "examples" / "training_loop.py"
ARGS = [SCRIPT, "--platform", ROOT / "examples" / "net.json"]


def test_training_loop_transcript_emulated():
    proc = run_mpi(8, [*ARGS, "--emulate"], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == SCRIPT.with_suffix(".out").read_text()
    assert "results equal mpi4py's: True" in proc.stdout


def test_training_loop_natively_on_one_host_is_mpi_throughout():
    """Every rank on this host, not emulated: no model applies, MPI keeps every call."""
    proc = run_mpi(8, ARGS, module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "3 steps on 8 ranks: results equal mpi4py's: True"
    assert len(lines) == 4 and all("MPI's own (every rank on this host" in ln for ln in lines[:3])
