"""A native probe times the pipeline and charges what it paid per message
(mpi_programs/probe_pipeline.py, 3 ranks): ``fit["pipeline"]`` holds the chain's measured
periods, the model's and the message cost, every node's ``t_ini`` includes that cost,
every rank reports the same, and ``pipeline=False`` leaves the ping-pong's fit alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi
from hetcoll.runtime.pipeline_cost import SEGMENT_SIZES, SEGMENTS, intercept

PROGRAM = Path(__file__).with_name("mpi_programs") / "probe_pipeline.py"
N = 3


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("probe_pipeline") / "out"
    proc = run_mpi(N, [PROGRAM, out], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r: json.loads(Path(f"{out}.{r}").read_text()) for r in range(N)}


def test_the_native_probe_times_the_pipeline_and_charges_its_message_cost(ranks):
    got = ranks[0]["default"]
    pipe = got["fit"]["pipeline"]
    assert pipe["segment_sizes"] == list(SEGMENT_SIZES)
    assert pipe["segments"] == list(SEGMENTS)
    assert len(pipe["period"]) == len(pipe["predicted"]) == len(SEGMENT_SIZES)
    sizes = pipe["segment_sizes"]
    measured = dict(zip(sizes, pipe["period"], strict=True))
    predicted = dict(zip(sizes, pipe["predicted"], strict=True))
    cost = max(0.0, intercept(measured) - intercept(predicted))
    assert pipe["message_cost"] == pytest.approx(cost, rel=1e-12, abs=1e-15)
    assert all(t >= pipe["message_cost"] for t in got["t_ini"])
    assert all(ranks[r]["default"] == got for r in range(N))


def test_without_the_pipeline_the_fit_has_no_message_cost(ranks):
    assert "pipeline" not in ranks[0]["off"]["fit"]
