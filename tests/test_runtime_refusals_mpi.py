"""Buffers typed as mpi4py types them, and refusals on one rank, over MPI
(mpi_programs/refusals.py): complex long double DLPack arrays in the rooted and vector
calls bit for bit against mpi4py's own; a call refused by the root or a non-root raises on
every rank instead of leaving the others to the timeout, and the wrapper goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "refusals.py"


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_typing_and_refusals(tmp_path, n):
    out = tmp_path / f"refusals{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=600)
    names = {r["case"] for r in records}
    for root in range(n):
        for call in ("Gatherv", "Scatterv", "Gather", "Reduce"):
            assert f"{call} root={root}" in names
    assert "Allgatherv" in names
    if n > 1:
        for check in ("data", "always"):
            for root in {0, n - 1}:
                tag = f"check={check} root={root}"
                assert f"{tag} Gatherv refused at the root" in names
                assert f"{tag} Reduce refused at a non-root" in names
                assert f"{tag} calls after the refusals" in names
                for call in ("Bcast", "Allreduce", "Allgather", "Bcast_init"):
                    assert f"{tag} {call} refused on one rank" in names
                assert f"{tag} calls after the unrooted refusals" in names
