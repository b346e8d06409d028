"""The pure parts of benchmarks/mpi/bench_bcast_large.py: the probed costs' fit, the platforms
planned for, the choice of the best single tree and of multi_tree's slice (against a brute
force over the planners and slice sizes), the paired ratios.  No MPI, no timing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hetcoll.compare import candidates, slice_choices
from hetcoll.errors import PlannerError
from hetcoll.planners import plan
from hetcoll.simulator import simulate

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mpi" / "bench_bcast_large.py"
_spec = importlib.util.spec_from_file_location("bench_bcast_large", _SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

MIB = 1 << 20


def test_fit_costs_recovers_the_line_and_ignores_an_outlier_pair():
    sizes = (0, 64 * 1024, MIB, 4 * MIB)
    n, lat, bw = 5, 30e-6, 3e9
    rtt = np.zeros((n, n, len(sizes)))
    for s, L in enumerate(sizes):
        rtt[:, :, s] = 2 * (lat + L / bw)
        np.fill_diagonal(rtt[:, :, s], 0.0)
    rtt[1, 3] = rtt[3, 1] = 10 * rtt[1, 3]  # one pair disturbed: the median ignores it
    got_lat, got_bw = bench.fit_costs(rtt, sizes)
    assert got_lat == pytest.approx(lat, rel=1e-9)
    assert got_bw == pytest.approx(bw, rel=1e-9)


def test_fit_costs_refuses_round_trips_that_do_not_grow():
    rtt = np.full((2, 2, 2), 1e-3)
    with pytest.raises(ValueError, match="do not grow"):
        bench.fit_costs(rtt, (0, MIB))


def test_host_platform_is_the_complete_one_port_graph_with_one_cost():
    p = bench.host_platform(4, 5e-6, 2e9)
    assert p.model.name == "one_port" and len(p) == 4
    pairs = {(lk.u, lk.v) for lk in p.links}
    assert pairs == {(str(u), str(v)) for u in range(4) for v in range(u + 1, 4)}
    assert {(lk.latency, lk.bandwidth) for lk in p.links} == {(5e-6, 2e9)}


def test_structured_platform_scales_table2_to_the_host_mean():
    p = bench.structured_platform(6, 5e-6, 2e9)
    q = bench.structured_platform(6, 5e-6, 2e9)
    assert p.to_dict() == q.to_dict()  # deterministic: every run plans the same
    table2 = bench.random_graph_platform(6, 1.0, seed=bench.STRUCTURED_SEED)
    for lk, t2 in zip(p.links, table2.links, strict=True):
        assert (lk.u, lk.v, lk.latency) == (t2.u, t2.v, 5e-6)
        assert lk.bandwidth == pytest.approx(t2.bandwidth * 2e9 / bench.MEAN_BW, rel=1e-12)


def _brute_force(platform, nbytes):
    """Every candidate planner at every slice size, simulated: the least time of one
    pipelined tree (not multi_tree), and multi_tree's least time."""
    single, multi = [], []
    names, _ = candidates("bcast", platform.model.name, len(platform), True)
    for seg in slice_choices(nbytes):
        if seg is None:
            continue
        for name in names:
            opts = bench.MULTI_TREE if name == "multi_tree" else None
            try:
                s = plan(platform, "0", method=name, nbytes=nbytes, segment_size=seg, options=opts)
            except PlannerError:
                continue
            t = simulate(platform, s).makespan
            if name == "multi_tree":
                multi.append(t)
            elif len(s.flows) == 1:
                single.append(t)
    return min(single), min(multi)


@pytest.mark.parametrize(
    "platform",
    [bench.host_platform(4, 20e-6, 2e9), bench.structured_platform(5, 20e-6, 2e9)],
    ids=["host", "table2"],
)
def test_choose_is_the_brute_force_best(platform):
    nbytes = MIB
    got = bench.choose(platform, nbytes)
    best_single, best_multi = _brute_force(platform, nbytes)
    single, multi = got["single"], got["multi_tree"]
    assert single["algo"] != "multi_tree" and single["trees"] == 1
    assert single["segment_size"] is not None and single["segment_size"] < nbytes
    assert single["predicted"] == pytest.approx(best_single, rel=1e-12)
    assert multi["algo"] == "multi_tree"
    assert multi["predicted"] == pytest.approx(best_multi, rel=1e-12)
    # the chosen schedules really take the predicted times
    for c in (single, multi):
        opts = bench.MULTI_TREE if c["algo"] == "multi_tree" else None
        s = plan(
            platform,
            "0",
            method=c["algo"],
            nbytes=nbytes,
            segment_size=c["segment_size"],
            options=opts,
        )
        assert simulate(platform, s).makespan == pytest.approx(c["predicted"], rel=1e-12)


def test_multi_tree_is_the_single_chain_on_the_host_and_several_trees_on_table2():
    host = bench.choose(bench.host_platform(4, 20e-6, 2e9), MIB)
    assert host["multi_tree"]["trees"] == 1 and host["multi_tree"]["same_as_single"]
    assert host["single"]["algo"] == "chain"  # the optimum on a homogeneous complete graph
    table2 = bench.choose(bench.structured_platform(4, 20e-6, 2e9), MIB)
    assert table2["multi_tree"]["trees"] > 1 and not table2["multi_tree"]["same_as_single"]


def test_paired_takes_the_median_of_round_by_round_ratios():
    out = bench.paired({"native": [1.0, 2.0, 4.0], "x": [3.0, 2.0, 4.0]})
    assert out["native"] == {
        "median": 2.0,
        "best": 1.0,
        "ratio_median": 1.0,
        "ratio_quartiles": [1.0, 1.0],
    }
    # ratios 3, 1, 1: median 1 (the ratio of the bests would be 2 / 1 = 2), quartiles
    # (linear interpolation) 1 and 2
    assert out["x"] == {
        "median": 3.0,
        "best": 2.0,
        "ratio_median": 1.0,
        "ratio_quartiles": [1.0, 2.0],
    }


def test_fixed_is_the_planner_at_that_slice_in_chooses_form():
    p = bench.host_platform(4, 20e-6, 2e9)
    got = bench.fixed(p, "chain", 8 * MIB, MIB)
    s = plan(p, "0", method="chain", nbytes=8 * MIB, segment_size=MIB)
    assert got == {
        "algo": "chain",
        "segment_size": MIB,
        "predicted": simulate(p, s).makespan,
        "trees": 1,
    }
