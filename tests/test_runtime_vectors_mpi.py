"""The v-variants and reduce-scatter over MPI (mpi_programs/vectors.py): ``Gatherv``,
``Scatterv``, ``Allgatherv``, ``Reduce_scatter_block`` and ``Reduce_scatter`` planned by
HetComm, every root, element by element against mpi4py's own results on the same ranks,
``last_call``, and ranks that disagree raising ``MismatchError`` on every rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "vectors.py"


@pytest.mark.parametrize("n", [1, 3, 8])
def test_vector_collectives_equal_mpi4py(tmp_path, n):
    out = tmp_path / f"vectors{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=600)
    names = {r["case"] for r in records}
    for root in range(n):
        assert f"Gatherv root={root} derived datatype" in names
        assert f"Scatterv root={root} IN_PLACE None" in names
        assert f"last_call Gatherv root={root}" in names
    for name in (
        "Allgatherv shift=1 IN_PLACE None",
        "Allgatherv derived datatype",
        "Reduce_scatter_block per=3 int64 BXOR",
        "Reduce_scatter_block non-commutative user op",
        "Reduce_scatter non-commutative user op",
        "Reduce_scatter SUM recvcounts gathered",
        "Reduce_scatter IN_PLACE None",
        "default algo: Gatherv passed to MPI",
        f"reduce root={n}: MPI.ERR_ROOT",
        f"Gatherv root={-n}: MPI.ERR_ROOT",
    ):
        assert name in names
    if n > 1:
        assert "Gatherv with another count: MismatchError on every rank" in names
        assert "Reduce_scatter_block with another op: MismatchError" in names
