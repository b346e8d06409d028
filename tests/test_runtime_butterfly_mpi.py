"""``HetComm`` running the planner ``butterfly_pipelined`` over MPI
(mpi_programs/butterfly_runtime.py): ``Allreduce`` on a star of NICs, its schedule's windows
of sends per edge and staggered first segments executed by the engine, bit for bit against
mpi4py's own (int64 SUM, BXOR, MAX; float64 sums of small integers; IN_PLACE), in a wrapper
of that algorithm and per call, and its phased cut (one send per edge, phased first
segments: ``chain="peer"``) and its cut under windows per edge and kind of flow
(``chain="kind"``) in wrappers, float64 sums of reals the same on every rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "butterfly_runtime.py"


@pytest.mark.parametrize("n", [2, 3, 4])
def test_butterfly_pipelined_allreduce_equals_mpi4py(tmp_path, n):
    out = tmp_path / f"butterfly{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=600)
    names = {r["case"] for r in records}
    assert len(records) == 4 * (5 * 4 + 1) + 4
    assert "wrapper Allreduce int64 BXOR count=131072" in names
    assert "per call Allreduce float64 SUM count=5000" in names
    assert "phased Allreduce int64 SUM count=131072" in names
    assert "phased Allreduce float64 reals same on every rank" in names
    assert "kind Allreduce int64 SUM count=131072" in names
    assert "kind Allreduce float64 reals same on every rank" in names
