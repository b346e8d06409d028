"""``Allgather``/``Allgatherv`` on trees over MPI (mpi_programs/tree_allgather.py): a
gather to rank 0 then a broadcast, planned by tree planners, bit for bit against mpi4py's
own (several element types and counts, a derived datatype, IN_PLACE, the v-variant,
objects); and ``auto`` under emulation running the tree it chose (5 and 8 ranks, one
slow).  ``allgather`` of objects under ``auto`` runs what the choice for its fixed block
says (a tuning file's tree or MPI's own natively, the model's plan under emulation; it ran
the wrapper's hypercube, whatever the choice, before), and ``Iallgather`` with IN_PLACE asks
the choice for one block as ``Allgather`` does (it asked for the whole buffer before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "tree_allgather.py"


@pytest.mark.parametrize("n", [1, 3, 8])
def test_tree_allgather_equals_mpi4py(tmp_path, n):
    out = tmp_path / f"tree_allgather{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=900)
    names = {r["case"] for r in records}
    for algo in ("fnf", "rooted_ls", "binomial", "flat"):
        assert f"{algo} int64 count=5000" in names
        assert f"{algo} IN_PLACE None" in names
        assert f"{algo} derived datatype" in names
        assert f"{algo} Allgatherv shift=1 IN_PLACE None" in names
        assert f"{algo} allgather object" in names
    autos = [r["case"] for r in records if r["case"].startswith("auto emulated")]
    assert len(autos) == 3
    if n == 8:  # one slow rank of eight: auto runs a tree
        assert "auto emulated count=1: tree" in names
    for label in ("plan", "mpi"):
        assert {f"auto native {label} allgather object {k}" for k in range(4)} <= names
    assert len([c for c in names if c.startswith("objects auto emulated allgather")]) == 2
    assert "Iallgather IN_PLACE asks the blocking call's size" in names
