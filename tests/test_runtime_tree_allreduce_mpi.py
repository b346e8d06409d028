"""``Allreduce`` on trees over MPI (mpi_programs/tree_allreduce.py): a reduce to rank 0
then a broadcast, planned by tree planners, bit for bit against mpi4py's own for every
predefined integer operator, exact float sums, IN_PLACE and a user operator; and ``auto``
under emulation running the tree it chose (8 ranks, one slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "tree_allreduce.py"


@pytest.mark.parametrize("n", [1, 3, 8])
def test_tree_allreduce_equals_mpi4py(tmp_path, n):
    out = tmp_path / f"tree_allreduce{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=900)
    names = {r["case"] for r in records}
    for algo in ("fnf", "rooted_ls", "binomial", "flat"):
        assert f"{algo} int64 BXOR" in names
        assert f"{algo} float64 SUM count=5000" in names
        assert f"{algo} IN_PLACE None" in names
    autos = [r["case"] for r in records if r["case"].startswith("auto emulated")]
    assert len(autos) == 3
    if n == 8:  # one slow rank of eight: auto runs a tree
        assert "auto emulated count=1: tree" in names
