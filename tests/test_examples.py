"""Every example prints exactly its transcript (examples/NAME.out), like SimGrid's tesh files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


#: examples that run under mpiexec (their transcripts are checked in test_examples_mpi.py)
MPI_EXAMPLES = ("training_loop.py",)


@pytest.mark.parametrize(
    "script",
    sorted(p for p in EXAMPLES.glob("*.py") if p.name not in MPI_EXAMPLES),
    ids=lambda p: p.name,
)
def test_example_output(script):
    expected = script.with_suffix(".out").read_text()
    got = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert got == expected
