"""A wrapper plans each request once (mpi_programs/plan_reuse.py): calls that differ only
in their element type or a reduce tree's operator share the schedule, which is byte for
byte the one a new wrapper plans; the data are mpi4py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "plan_reuse.py"


@pytest.mark.parametrize("n", [1, 3])
def test_a_request_is_planned_once(tmp_path, n):
    out = tmp_path / f"plan_reuse{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=600)
    names = {r["case"] for r in records}
    assert "planned once per request" in names
    assert "Reduce int64x2 MAX: the schedule a new wrapper plans" in names
