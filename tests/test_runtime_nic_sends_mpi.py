"""Emulating the ``nic`` model over MPI (mpi_programs/nic_sends.py, 4 ranks): a rank's
sends to different peers are in flight together (rank 0's fan-out, from the order of the
starts and completions its engine records), and allgather / allreduce run with several
sends in flight (``forest``, ``blind``, ``auto``) bit for bit against mpi4py's own (int64),
the same bits on every rank (float64)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "nic_sends.py"
pytestmark = pytest.mark.mpi


def test_concurrent_sends_deliver_bit_for_bit(tmp_path):
    out = tmp_path / "nic_sends.jsonl"
    proc = run_mpi(4, [PROGRAM, out], module=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    failed = [r for r in records if not r["ok"]]
    assert not failed, failed[:5]
    names = {r["case"] for r in records}
    assert len(records) == 2 + 3 * 3 * 3
    assert {"fan-out data", "fan-out sends in flight together"} <= names
    assert "forest Allreduce int64 count=40000" in names
