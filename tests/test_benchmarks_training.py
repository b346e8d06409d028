"""The pure part of benchmarks/mpi/bench_training.py: the step's total is the slowest rank's
own time per step, not the sum of the per-call maxima (which books the ranks a tree broadcast
leaves late twice: in the broadcast's row and in the next call's).  No MPI, no timing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mpi" / "bench_training.py"
_spec = importlib.util.spec_from_file_location("bench_training", _SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def rounds(bcast, allreduce, small, step=None):
    r = {"Bcast": bcast, "Allreduce": allreduce, "small": small}
    return [r if step is None else {**r, "step": step}]


def test_the_total_is_the_slowest_ranks_step():
    # the root leaves a tree broadcast at 0.2 s, the last leaf at 1.0 s; the root then waits
    # 0.8 s for it in the Allreduce (0.5 s of its own): per-call maxima 1.0 + 1.3, step 1.5
    doc = {
        "steps": 1,
        "times": {"hetcomm": rounds(1.0, 1.3, 0.1, 1.6), "baseline": rounds(1.5, 0.5, 0.1, 2.1)},
    }
    s = bench.summary(doc)
    assert s["total"]["hetcomm"] == 1.6 and s["total"]["baseline"] == 2.1
    assert s["total"]["ratio"] == pytest.approx(1.6 / 2.1)
    assert s["Allreduce"]["ratio"] == pytest.approx(1.3 / 0.5)  # the per-call row keeps the wait


def test_a_file_without_the_step_sums_the_calls():
    doc = {
        "steps": 2,
        "times": {"hetcomm": rounds(1.0, 1.3, 0.1), "baseline": rounds(1.5, 0.5, 0.1)},
    }
    assert bench.summary(doc)["total"]["hetcomm"] == pytest.approx(2.4 / 2)


def test_the_measured_variant_is_paired_with_the_baseline_and_the_constant():
    """``--measured``: round by round, the measured cost's variant over the baseline and
    over HetComm charging the constant."""
    doc = {
        "steps": 1,
        "times": {
            "baseline": rounds(2.0, 1.0, 0.1, 3.0) + rounds(4.0, 1.0, 0.1, 5.0),
            "hetcomm": rounds(1.0, 1.0, 0.1, 2.0) + rounds(3.0, 1.0, 0.1, 4.0),
            "measured": rounds(1.0, 0.5, 0.1, 1.5) + rounds(2.0, 1.0, 0.1, 2.0),
        },
    }
    assert list(bench._ratios(doc, "total", "measured", "baseline")) == [0.5, 0.4]
    assert list(bench._ratios(doc, "Bcast", "measured", "hetcomm")) == [1.0, 2.0 / 3.0]
    assert bench.summary(doc)["total"]["ratio"] == pytest.approx((2 / 3 + 4 / 5) / 2)


def test_the_measured_table_names_what_the_default_charges():
    """Natively the default HetComm charges nothing without a tuning file; under emulation
    the constant: the second column's denominator says which."""
    names = ("Bcast", "Allreduce", "allreduce(float)", "Bcast(8 B)", "Barrier")
    mpi = {n: {"algorithm": "mpi", "plan": None} for n in names}
    times = rounds(1.0, 1.0, 0.1, 2.0)
    doc = {
        "mode": "native",
        "ranks": 4,
        "steps": 1,
        "message_cost": 6e-4,
        "choices": mpi,
        "measured_choices": mpi,
        "times": {"baseline": times, "hetcomm": times, "measured": times},
    }
    assert "(600.0 us real) against none (native default)" in bench.measured_table(doc)
    emulated = bench.measured_table({**doc, "mode": "emulated"})
    assert "against the constant (200 us)" in emulated
