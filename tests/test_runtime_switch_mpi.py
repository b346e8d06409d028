"""Switch platforms under MPI (<= 8 ranks, with timeouts): the data, not the timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.generators import switch_platform
from hetcoll.platform import save_platform
from hetcoll.runtime.launch import run_mpi

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "mpi_programs"


def test_switch_broadcasts_deliver_bit_identical_data(tmp_path):
    """Every switch planner (LABS, TWO-VBBS with its two flows, switch_aware, ...) on an
    8-workstation switch platform, roots 0 and 7, 0/1/2048 bytes, with and without the
    emulation of eq. (1)-(5): every rank holds exactly the root's bytes."""
    out = tmp_path / "out.jsonl"
    proc = run_mpi(8, [PROGRAMS / "switch_bcast.py", out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 6 * 2 * 2 * 3
    bad = [r for r in records if not r["ok"]]
    assert not bad, bad[:3]


def test_run_measures_a_schedule_of_several_flows(tmp_path):
    """``hetcoll run --algo two_vbbs`` (two trees, one per half of the message) used to stop
    with 'this schedule has several flows'; it reports the flows instead of one tree."""
    path = tmp_path / "sw4.json"
    save_platform(switch_platform(4, density=2, types=8, seed=5), path)
    args = ["hetcoll", "run", "--platform", path, "--emulate", "--algo", "two_vbbs"]
    args += ["--size", "2048", "--repeat", "1", "--json"]
    proc = run_mpi(4, args, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["algorithm"] == "two_vbbs" and len(doc["flows"]) == 2
    assert {f["root"] for f in doc["flows"]} == {"w0"}
    assert doc["predicted_time"] > 0
