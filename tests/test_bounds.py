"""Lower bounds on a finite broadcast (hetcoll.bounds, hetcoll optimum --size): exact values
on platforms whose optimum is known in closed form, and no planner's simulated time below
them on random platforms."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import one_line_error, run
from hetcoll import Platform, load_platform, plan, simulate
from hetcoll.bounds import lower_bound, reach_bound
from hetcoll.compare import compare
from hetcoll.generators import random_graph_platform

MB = 10**6


def star(k: int, bandwidth: float, model: str = "one_port") -> Platform:
    return Platform.from_dict(
        {
            "model": model,
            "nodes": [{"id": str(i)} for i in range(k + 1)],
            "links": [{"u": "0", "v": str(i), "bandwidth": bandwidth} for i in range(1, k + 1)],
        }
    )


@pytest.mark.parametrize("k", [1, 2, 5])
def test_a_star_under_one_port_is_bounded_by_its_root_sending_k_copies(k):
    # every byte leaves the root once per leaf: k * size / bandwidth, which the flat tree
    # reaches exactly (so the bound is tight there)
    p = star(k, 2 * MB)
    b = lower_bound(p, "0", 3 * MB)
    assert b.rate == pytest.approx(k * 1.5, rel=1e-9)
    assert b.seconds == b.rate
    flat = simulate(p, plan(p, "0", method="flat", nbytes=3 * MB)).makespan
    assert flat == pytest.approx(b.seconds, rel=1e-9)


def test_reach_is_the_sum_of_latencies_along_the_fastest_chain():
    # 0 -> 1 -> 2 with 1 ms each beats the direct 0 -> 2 link of 5 ms; hockney: a one-byte
    # message costs latency + 1 / bandwidth
    p = Platform.from_dict(
        {
            "model": "hockney",
            "nodes": [{"id": i} for i in "012"],
            "links": [
                {"u": "0", "v": "1", "latency": 1e-3, "bandwidth": 1e9},
                {"u": "1", "v": "2", "latency": 1e-3, "bandwidth": 1e9},
                {"u": "0", "v": "2", "latency": 5e-3, "bandwidth": 1e9},
            ],
        }
    )
    seconds, far = reach_bound(p, "0")
    one = simulate(p, plan(p, "0", method="flat", nbytes=1)).arrival
    assert far == "2"
    # no schedule delivers a byte to 2 sooner than the two hops of 1 ms (+ 1 ns each)
    assert seconds == pytest.approx(2e-3 + 2e-9, rel=1e-6)
    assert seconds <= one["2"]
    assert lower_bound(p, "0", 0).seconds == 0.0


def test_a_multicast_to_some_nodes_keeps_only_the_reach_bound():
    p = star(3, MB)
    b = lower_bound(p, "0", MB, members=["0", "1"])
    assert b.rate == 0.0 and b.farthest == "1"
    assert b.seconds == b.reach > 0


def test_optimum_cli_prints_the_bound_in_json(tmp_path, capsys):
    path = tmp_path / "star.json"
    path.write_text(json.dumps(star(4, MB).to_dict()))
    code, out, _ = run(capsys, "optimum", path, "--root", "0", "--size", "2MB", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["lower_bound"] == pytest.approx(8.0, rel=1e-9)
    assert doc["rate_bound"] == doc["lower_bound"] and doc["slice_size"] == 2 * MB
    args = ("optimum", path, "--root", "0", "--size", "2MB", "--segment-size", "1MB")
    code, out, _ = run(capsys, *args)
    assert code == 0 and "lower bound for" in out
    one_line_error(*run(capsys, "optimum", path, "--root", "0"), "--size")


def test_no_planner_beats_the_bound_on_the_builtin_platforms():
    # fig1 is Banikazemi's (the optimal planner's exhaustive optimum is among the ranked)
    for name in ("fig1", "park-fig2"):
        p = load_platform(name)
        root = p.ids[0]
        for size in (1, 1000, 10**6):
            bound = lower_bound(p, root, size).seconds
            ranked = compare(p, "bcast", root=root, nbytes=size).ranked
            assert ranked
            for c in ranked:
                assert c.predicted_time >= bound * (1 - 1e-9), (name, size, c.algorithm)


@settings(max_examples=25)
@given(
    n=st.integers(2, 7),
    density=st.sampled_from([0.2, 0.4, 0.8]),
    seed=st.integers(0, 10**6),
    model=st.sampled_from(["one_port", "one_port_uni", "multi_port"]),
    slices=st.integers(1, 40),
    slice_kib=st.sampled_from([1, 64, 1024]),
)
def test_no_planner_predicts_a_time_below_the_lower_bound(
    n, density, seed, model, slices, slice_kib
):
    p = random_graph_platform(n, density, seed=seed, model=model)
    seg = slice_kib * 1024
    size = slices * seg - (seed % 7)
    bound = lower_bound(p, "0", size)
    ranked = compare(p, "bcast", root="0", nbytes=size, slices=[None, seg]).ranked
    assert ranked
    for c in ranked:
        assert c.predicted_time >= bound.seconds * (1 - 1e-9), c.algorithm
