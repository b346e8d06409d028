"""MPI tests: launch ``mpiexec -n K python -m mpi4py program`` (K <= 8, with a timeout) and
assert on the JSON the ranks write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _mpi import last_words, run_records
from hetcoll.runtime.launch import run_mpi

PROGRAMS = Path(__file__).with_name("mpi_programs")
pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def delivery(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("mpi") / "delivery.jsonl"
    return run_records(6, [PROGRAMS / "collectives.py", "delivery"], out, timeout=240, all_ok=False)


def test_every_case_delivers_bit_identical_data(delivery):
    failed = [r for r in delivery if not r["ok"]]
    assert not failed, failed[:5]


def test_cases_cover_every_planner_root_size_and_kind(delivery):
    from hetcoll.planners import REGISTRY

    names = {r["case"] for r in delivery}
    for algo, info in REGISTRY.items():
        if "bcast" not in info.collectives or (info.max_members or 99) < 6:
            continue
        for root in range(6):
            for n in (0, 1, 7, 1000):
                assert f"Bcast {algo} root={root} n={n}" in names
        assert (
            f"Bcast {algo} pipelined n=4099 seg=1024" in names
            or f"Bcast {algo} pipelined refused" in names
        )
        assert f"Bcast {algo} dtype=complex128" in names
        assert f"multicasts {algo}" in names
        assert f"agreement {algo}" in names
    assert "Bcast fnf pipelined n=4099 seg=1024" in names  # fnf pipelines
    assert any(r["case"].startswith("emulated Bcast fnf") for r in delivery)
    assert "multicasts fnf_joint" in names and "multicasts fnf_joint all sources" in names
    assert any(r["case"] == "freed" and r["ok"] for r in delivery)


def test_different_platforms_give_a_clear_error_on_every_rank(tmp_path):
    proc = run_mpi(
        4, [PROGRAMS / "collectives.py", "mismatch", tmp_path / "x"], module=False, timeout=60
    )
    assert proc.returncode != 0
    assert proc.stderr.count("hetcoll: error:") == 4, proc.stderr[-2000:]
    assert proc.stderr.count("were given different platforms") == 4
    assert "rank(s) 1:" in proc.stderr
    assert "no error" not in proc.stderr


def test_a_rank_that_never_joins_stops_the_job_with_a_named_timeout(tmp_path):
    proc = run_mpi(
        4, [PROGRAMS / "collectives.py", "timeout", tmp_path / "x"], module=False, timeout=60
    )
    assert proc.returncode == 3, proc.stderr[-2000:]  # on_timeout="abort": MPI_Abort(3)
    said = last_words(tmp_path / "x", 4)
    assert "timed out after 2 s" in said, (said, proc.stderr[-2000:])
    assert "Bcast(root=3, 10 B, binomial)" in said
    assert "recv of chunk 0" in said and "from rank" in said
    assert "no timeout" not in said + proc.stderr


@pytest.fixture(scope="module")
def postal(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("postal") / "postal.json"
    proc = run_mpi(6, [PROGRAMS / "postal.py", out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads(out.read_text())
    assert len(records) == 2 * 2 * 10
    return records


def test_grid_schedules_under_postal_emulation_deliver_the_bytes(postal):
    assert all(r["ok"] for r in postal), [r for r in postal if not r["ok"]][:3]


def test_grid_schedules_under_postal_emulation_follow_the_model(postal):
    """Park et al.'s schedules run under postal emulation (non-blocking sends, arrival after
    the pair's latency; eq. 2 and eq. 4): the arrival times the emulation imposes equal the
    simulator's to the nanosecond — or differ by no more than the lateness the ranks report
    when the host could not keep up (every attempt: see postal.py)."""
    assert min(r["early"] for r in postal) > -1e-8  # never ahead of the model
    # any inexact attempt is explained by the lateness the ranks reported (Trace.late)
    assert all(r["explained"] for r in postal), [r for r in postal if not r["explained"]][:3]
    # the two models really differ (eq. 2's gap delays a node's later children)
    by = {(r["algorithm"], r["root"], "gap" in r["model"]): r["makespan"] for r in postal}
    assert by[("flat", 0, True)] > by[("flat", 0, False)] + 4 * 3e-3 - 1e-9
