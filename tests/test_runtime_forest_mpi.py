"""``HetComm`` running the per-root planner ``forest`` over MPI
(mpi_programs/forest_runtime.py): ``Allreduce``, ``Allgather``, ``Reduce_scatter_block`` and
``Reduce_scatter`` bit for bit against mpi4py's own for every predefined integer operator,
exact float sums, MAX/MIN, MAXLOC/MINLOC on a padded pair type, user operators, IN_PLACE,
empty and uneven blocks, ranks on the platform's nodes in another order.  At 2 ranks an
owner's one receive runs on the engine's one-receive path, which names every receive
``recv``: a partial result must still be combined, not written."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "forest_runtime.py"


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_forest_collectives_equal_mpi4py(tmp_path, n):
    out = tmp_path / f"forest{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=900)
    names = {r["case"] for r in records}
    assert len(records) == 154
    for tag in ("wrapper", "per call"):
        assert f"{tag} Allreduce int64 BXOR" in names
        assert f"{tag} Allreduce MAXLOC DOUBLE_INT" in names
        assert f"{tag} Reduce_scatter_block MINLOC DOUBLE_INT" in names
    assert "reversed Allgather uint8 block=37" in names
