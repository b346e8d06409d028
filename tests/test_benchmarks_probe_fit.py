"""The pure part of benchmarks/mpi/bench_probe_fit.py: per size the prediction's error over
the pairs and how far a second measurement of the same round trips moved (the floor of any
prediction's error on this host).  No MPI, no timing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mpi" / "bench_probe_fit.py"
_spec = importlib.util.spec_from_file_location("bench_probe_fit", _SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def row(n, measured, predicted, again=None):
    out = {"u": 0, "v": 1, "nbytes": n, "measured": measured, "predicted": predicted}
    return out if again is None else {**out, "again": again}


def test_errors_and_the_second_measurement_per_size():
    doc = {
        "rows": [row(2, 1.0, 1.1, 1.3), row(2, 2.0, 1.0, 2.0), row(2, 4.0, 4.0, 3.0), row(1, 1, 1)],
        "probed": [row(0, 1.0, 1.5)],
    }
    one, two = bench.summary(doc)
    assert one["nbytes"] == 1 and one["repeat"] is None and one["errors"] == [0.0, 0.0]
    assert two["errors"] == pytest.approx([0.1, 0.5])  # medians of 0.1, 0.5, 0
    assert two["repeat"] == pytest.approx(0.25)  # median of 0.3, 0, 0.25
    assert bench.summary(doc, "probed")[0]["errors"] == pytest.approx([0.5, 0.5])
