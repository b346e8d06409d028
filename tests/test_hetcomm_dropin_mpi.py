"""HetComm as a drop-in for an mpi4py communicator, 1..8 ranks (mpi_programs/dropin.py):
every root, sentinel-filled buffers, derived datatypes, IN_PLACE in both spellings, empty
buffers, Fortran-ordered, DLPack and CUDA-array-interface buffers, COMM_SELF and duplicated
communicators, every element against mpi4py's own result; what HetComm does not plan
reaches the user's communicator unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records

PROGRAM = Path(__file__).with_name("mpi_programs") / "dropin.py"
pytestmark = pytest.mark.mpi


CASES = [(n, "1") for n in range(1, 9)] + [(4, "0")]  # and once without the fast path


@pytest.fixture(
    scope="module", params=CASES, ids=lambda c: f"{c[0]}ranks" + ("" if c[1] == "1" else "-nofast")
)
def records(request, tmp_path_factory) -> tuple[int, dict[str, dict]]:
    n, fast = request.param
    out = tmp_path_factory.mktemp("dropin") / f"dropin{n}.jsonl"
    env = {"HETCOLL_FAST": fast}
    records = run_records(n, [PROGRAM], out, timeout=300, env=env, all_ok=False)
    return n, {r["case"]: r for r in records}


def test_every_case_equals_mpi4py(records):
    _, by_case = records
    failed = [r for r in by_case.values() if not r["ok"]]
    assert not failed, failed[:5]


def test_cases_cover_the_mpi4py_conventions(records):
    n, by_case = records
    for tag in ("world", "dup", "self"):
        size = 1 if tag == "self" else n
        for root in range(size):
            for kind in ("indexed block", "indexed block lb", "vector", "resized", "fortran"):
                assert f"{tag} Bcast root={root} {kind}" in by_case
            for kind in ("DLPackOnly", "CAIOnly"):
                assert f"{tag} Bcast root={root} {kind}" in by_case
            assert f"{tag} Bcast root={root} n=0 int32" in by_case
        for spelling in ("MPI.IN_PLACE", "None"):
            assert f"{tag} Allreduce {spelling} float64 sum" in by_case
            assert f"{tag} Allgather {spelling} count=5" in by_case
        for name in ("Gather", "Scatter", "Reduce", "Alltoall", "Scan", "Get_rank/Get_size"):
            assert f"{tag} {name}" in by_case
        assert f"{tag} Allreduce MAXLOC DOUBLE_INT" in by_case
        assert f"{tag} Allgather derived recv type" in by_case
    assert "Free frees both" in by_case
