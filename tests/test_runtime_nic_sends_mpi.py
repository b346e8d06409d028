"""Emulating the ``nic`` model over MPI (mpi_programs/nic_sends.py, 4 ranks): a rank's
sends to different peers are in flight together (rank 0's fan-out, from the order of the
starts and completions its engine records), and allgather / allreduce run with several
sends in flight (``forest``, ``blind``, ``auto``) bit for bit against mpi4py's own (int64),
the same bits on every rank (float64)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "nic_sends.py"
pytestmark = pytest.mark.mpi


def test_concurrent_sends_deliver_bit_for_bit(tmp_path):
    records = run_records(4, [PROGRAM], tmp_path / "nic_sends.jsonl", timeout=600)
    names = {r["case"] for r in records}
    assert len(records) == 2 + 3 * 3 * 3
    assert {"fan-out data", "fan-out sends in flight together"} <= names
    assert "forest Allreduce int64 count=40000" in names
