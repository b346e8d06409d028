"""The engine's cost per message measured on the job's ranks (hetcoll.jobs.tune.engine_cost,
``hetcoll tune``'s ``message_cost``), 4 ranks under emulation: a positive finite figure,
the same on every rank, written into the tuning file, and the charge every rank's
``HetComm`` derives from that file (mpi_programs/engine_cost.py).  Correctness, not
speed: a positive figure because the sliced broadcast does work the whole one does not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hetcoll.platform import Platform, nodes_from_costs, save_platform
from hetcoll.runtime.launch import run_mpi
from hetcoll.tuning import load_tuning

PROGRAM = Path(__file__).with_name("mpi_programs") / "engine_cost.py"
N = 4
pytestmark = pytest.mark.mpi


def test_engine_cost_is_positive_finite_and_the_same_on_every_rank(tmp_path):
    out = tmp_path / "cost.json"
    proc = run_mpi(N, [PROGRAM, out], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    every = json.loads(out.read_text())
    assert len(every) == N
    cost = every[0]["cost"]
    assert math.isfinite(cost) and cost > 0
    assert [r["cost"] for r in every] == [cost] * N
    assert [r["charged"] for r in every] == [cost / every[0]["scale"]] * N


def test_tune_writes_the_measured_cost_into_the_tuning_file(tmp_path):
    platform, out = tmp_path / "four.json", tmp_path / "tuning.json"
    costs = [1e-3 * (1 + r % 2) for r in range(N)]
    save_platform(Platform(nodes_from_costs(costs, [1e-8] * N), model="tini"), platform)
    args = ["hetcoll", "tune", "--platform", platform, "--emulate", "--time-scale", "0.05"]
    args += ["--collectives", "barrier", "--rounds", "3", "-o", out, "--json"]
    proc = run_mpi(N, args, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    cost = doc["message_cost"]
    assert isinstance(cost, float) and math.isfinite(cost) and cost > 0
    assert load_tuning(out).message_cost == cost


def test_on_one_rank_the_cost_is_zero_and_tune_job_runs():
    """One rank sends no message: no figure to divide by (a ZeroDivisionError before),
    nothing charged."""
    from mpi4py import MPI

    from hetcoll import HetComm
    from hetcoll.jobs.tune import engine_cost, tune_job

    one = Platform(nodes_from_costs([1e-6]), name="one")
    with HetComm(MPI.COMM_SELF, one, "mpi", timeout=30) as hc:
        assert engine_cost(hc, 1, loop=0.001) == 0.0
    found = tune_job(one, collectives=("barrier",), sizes=(), rounds=1, comm=MPI.COMM_SELF)
    assert found["ranks"] == 1 and found["message_cost"] == 0.0
