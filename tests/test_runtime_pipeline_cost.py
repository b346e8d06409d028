"""The pipeline's per-message cost (runtime/pipeline_cost.py) without MPI: the chain the
probe times has the period the model predicts for it, the cost is what the measured
periods exceed that by at 0 bytes, it lands in every node's ``t_ini`` and nothing else,
and ``auto`` then slices a large broadcast more coarsely (the MPI side is in
test_runtime_pipeline_cost_mpi.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import plan
from hetcoll.models import get_model
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.pipeline_cost import (
    chain_program,
    intercept,
    message_cost,
    predicted_periods,
    with_message_cost,
)
from hetcoll.simulator import simulate_program
from hetcoll.sizecurve import SizeCurve


def makespan(platform: Platform, segments: int, nbytes: int) -> float:
    bound = get_model(platform.model).bind(platform)
    _, done = simulate_program(bound, chain_program(platform.ids, segments, nbytes))
    return max(t for times in done.values() for t in times)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 6),
    seed=st.integers(0, 10**6),
    nbytes=st.sampled_from([1, 32 << 10, 512 << 10]),
)
def test_the_predicted_period_is_the_simulated_chains_per_segment(n, seed, nbytes):
    """One more segment costs the simulated chain exactly the predicted period (the
    start-up and the drain cancel in the difference the probe takes)."""
    rng = np.random.default_rng(seed)
    p = Platform(
        nodes_from_costs(rng.uniform(1e-5, 1e-3, n), rng.uniform(1e-10, 1e-8, n)), model="tini"
    )
    period = (makespan(p, 16, nbytes) - makespan(p, 4, nbytes)) / 12
    assert period == pytest.approx(predicted_periods(p, [nbytes])[nbytes], rel=1e-9)


def test_the_message_cost_is_the_excess_at_zero_bytes():
    measured = {32768: 4e-4, 524288: 1.2e-3}  # 3.6e-4 + 1.6e-9 / B (rounded)
    predicted = {32768: 1e-4, 524288: 6e-4}
    expect = intercept(measured) - intercept(predicted)
    assert message_cost(measured, predicted) == pytest.approx(expect, rel=1e-12)
    assert expect == pytest.approx(
        (4e-4 - 32768 * (8e-4 / 491520)) - (1e-4 - 32768 * (5e-4 / 491520)), rel=1e-9
    )
    assert message_cost(predicted, measured) == 0.0  # faster than the model: nothing


def test_the_cost_lands_in_every_t_ini_and_nowhere_else():
    nodes = nodes_from_costs([1e-4, 2e-4, 3e-4], [1e-9, 2e-9, 3e-9])
    lat = np.array([[0, 1e-5, 2e-5], [1e-5, 0, 3e-5], [2e-5, 3e-5, 0]])
    bw = np.full((3, 3), 1e9)
    curve = SizeCurve((0, 1 << 20), (0.5, 1.0))
    p = Platform(nodes, latency=lat, bandwidth=bw, model="tini", name="x", size_curve=curve)
    q = with_message_cost(p, 5e-5)
    assert q.t_ini.tolist() == pytest.approx([1.5e-4, 2.5e-4, 3.5e-4], rel=1e-12)
    assert q.t_byte.tolist() == p.t_byte.tolist()
    assert np.array_equal(q.latency, p.latency) and np.array_equal(q.bandwidth, p.bandwidth)
    assert (q.model, q.name, q.size_curve, q.ids) == (p.model, p.name, p.size_curve, p.ids)


def test_auto_slices_a_large_broadcast_coarser_once_the_pipelines_cost_is_charged():
    """A host's ping-pong fit (40 us, 0.5 ns/B) and the same with 100 us per message: auto
    keeps the chain but cuts 16 MiB into fewer, larger slices."""
    host = Platform(nodes_from_costs([40e-6] * 4, [0.5e-9] * 4), model="tini")
    before = plan(host, "0", method="auto", nbytes=16 << 20).params["segment_size"]
    after = plan(with_message_cost(host, 100e-6), "0", method="auto", nbytes=16 << 20)
    assert after.params["segment_size"] > before
