"""Hypercube allreduce, allgather and barrier over MPI against mpi4py's own, for every rank
count 1..8 (including non-powers of two) and every hypercube planner; under emulation the
modelled completion times equal the simulator's and calc_cost.

Data and timing are separate tests: data never depends on timing, and a timing deviation
is accepted only where the lateness the ranks report explains it (a busy machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records
from hetcoll.planners import hypercube_planners

PROGRAM = Path(__file__).with_name("mpi_programs") / "hypercube.py"
pytestmark = pytest.mark.mpi

INT_OPS = ("sum", "prod", "max", "min", "band", "bor", "bxor", "plus_one", "compose")


@pytest.fixture(scope="module", params=range(1, 9), ids=lambda n: f"{n}ranks")
def records(request, tmp_path_factory) -> tuple[int, dict[str, dict]]:
    n = request.param
    out = tmp_path_factory.mktemp("cube") / f"cube{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=240, all_ok=False)
    return n, {r["case"]: r for r in records}


def _timing(case: str) -> bool:
    return " timing " in case and not case.endswith(" timing data")


def test_every_case_equals_mpi4py(records):
    _, by_case = records
    failed = [r for r in by_case.values() if not r["ok"] and not _timing(r["case"])]
    assert not failed, failed[:5]


def test_cases_cover_every_planner_op_and_kind(records):
    n, by_case = records
    for algo in hypercube_planners():
        for dtype in ("int32", "int64"):
            for op in INT_OPS:
                assert f"{algo} Allreduce {dtype} {op}" in by_case
        for case in (
            "Allreduce [buf, count, type]",
            "Allreduce IN_PLACE sum",
            "Allreduce IN_PLACE compose",
            "Allreduce empty",
            "allreduce int SUM",
            "allreduce tuple MAX",
            "allreduce list SUM",
            "allreduce long list SUM",
            "allreduce int user op",
            "allgather mixed",
            "Allgather int32 count=5",
            "Allgather IN_PLACE",
            "Allgather [buf, count, type]",
            f"barrier late={n - 1}",
        ):
            assert f"{algo} {case}" in by_case
        for case in ("Allreduce int64 sum", "Allreduce int64 compose", "allgather objects"):
            assert f"emulated {algo} {case}" in by_case
        assert f"emulated {algo} barrier late={n - 1}" in by_case
        if n > 1:
            assert f"{algo} mismatched sizes raise on every rank" in by_case
            for collective in ("barrier", "allreduce"):
                assert f"emulated {algo} timing {collective}" in by_case
            assert f"emulated {algo} timing data" in by_case


def test_emulated_completion_times_equal_the_simulator_and_calc_cost(records):
    """Every attempt's deviation from the simulator is explained by the lateness the ranks
    report (so an attempt on an idle machine is exact), none is ever early, and the
    simulator's makespan is calc_cost."""
    n, by_case = records
    timing = [r for r in by_case.values() if _timing(r["case"])]
    assert len(timing) == (2 * len(hypercube_planners()) if n > 1 else 0)
    for r in timing:
        assert r["explained"] and r["early"] > -1e-8, r
        assert r["makespan"] == pytest.approx(r["calc_cost"], abs=1e-12), r
        assert r["ok"], r
