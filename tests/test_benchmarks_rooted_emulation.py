"""The pure part of benchmarks/mpi/bench_rooted_emulation.py: a case's time scale makes its
prediction at least the target and the host's own time for the call at most the given share
of it (the host's delay adds to the emulated costs whatever the scale: a flat tree of
``testbed16``, 16 ranks on two cores, ran 11-22 ms late at every scale).  No MPI, no timing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mpi" / "bench_rooted_emulation.py"
_spec = importlib.util.spec_from_file_location("bench_rooted_emulation", _SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize(
    ("least", "target", "host", "share", "predicted", "want"),
    [
        (1.0, 0.2, 0.001, 0.05, 0.002, 100.0),  # the target decides: 0.2 s
        (1.0, 0.2, 0.020, 0.05, 0.002, 200.0),  # the host (20 ms) decides: 0.4 s predicted
        (500.0, 0.2, 0.020, 0.05, 0.002, 500.0),  # the least factor decides
        (1.0, 0.2, 0.020, 0.10, 0.002, 100.0),  # a looser share: the target again
    ],
)
def test_case_scale(least, target, host, share, predicted, want):
    scale = bench.case_scale(least, target, host, share, predicted)
    assert scale == pytest.approx(want)
    assert predicted * scale >= target * (1 - 1e-12)
    assert host <= share * predicted * scale * (1 + 1e-12)
