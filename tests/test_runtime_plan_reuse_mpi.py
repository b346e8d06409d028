"""A wrapper plans each request once (mpi_programs/plan_reuse.py): calls that differ only
in their element type or a reduce tree's operator share the schedule, which is byte for
byte the one a new wrapper plans; the data are mpi4py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "plan_reuse.py"


@pytest.mark.parametrize("n", [1, 3])
def test_a_request_is_planned_once(tmp_path, n):
    out = tmp_path / f"plan_reuse{n}.jsonl"
    proc = run_mpi(n, [PROGRAM, out], module=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    failed = [r for r in records if not r["ok"]]
    assert not failed, failed[:5]
    names = {r["case"] for r in records}
    assert "planned once per request" in names
    assert "Reduce int64x2 MAX: the schedule a new wrapper plans" in names
