"""The bound of broadcasts in whole slices (``hetcoll.bounds.SliceBound.whole``,
``whole_slice_cap``, ``whole_slice_bound``, ``hetcoll optimum --size --segment-size``): under
``multi_port`` the gap packing's certified throughput caps every run whose messages all carry
exactly the slice; under the other models the bound is what it was."""

from __future__ import annotations

import json
from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import run
from hetcoll import Platform, simulate
from hetcoll.bounds import lower_bound, slice_bound, whole_slice_bound
from hetcoll.compare import candidates, plan_request
from hetcoll.errors import ModelError, PlannerError
from hetcoll.generators import random_graph_platform
from hetcoll.patterns import Flow, Tree
from hetcoll.planners.port_slots import gap_problem
from hetcoll.planners.steady import model_problem
from hetcoll.schedule import Schedule

L = 1000


def triangle(model: str = "multi_port") -> Platform:
    """tests/test_planners_port_gaps.py's: every port sends a slice in 1 ms; the links
    0 - 1 carry one in 1.5 ms, 0 - 2 in 3 ms, 1 - 2 in 1 ms (the gap packing: 8/9 of the
    fluid optimum, 1 000 slices per second)."""
    return Platform.from_dict(
        {
            "model": model,
            "nodes": [{"id": i, "t_byte": 1e-6} for i in "012"],
            "links": [
                {"u": "0", "v": "1", "bandwidth": 2e6 / 3},
                {"u": "0", "v": "2", "bandwidth": 1e6 / 3},
                {"u": "1", "v": "2", "bandwidth": 1e6},
            ],
        }
    )


def _whole_slices(schedule: Schedule, slice_size: int) -> bool:
    """Whether every message of ``schedule`` (a broadcast) carries exactly ``slice_size``."""
    return all(
        f.kind == "bcast"
        and not f.cuts
        and (f.segment_size or f.nbytes) == slice_size
        and f.nbytes % slice_size == 0
        for f in schedule.flows
    )


def test_the_triangles_whole_slices_are_capped_at_the_gap_packings_rate():
    for k in (1, 2, 8, 64):
        b = slice_bound(triangle(), "0", k * L, L)
        assert b.seconds == pytest.approx(k / 1000, rel=1e-9)  # the fluid optimum
        assert b.cap == pytest.approx(k / (1000 * 8 / 9), rel=1e-9)
        assert b.whole == b.cap
    # a slice that does not divide the message: not all whole, no cap
    assert slice_bound(triangle(), "0", 8 * L + 1, L).cap == 0.0


def test_no_split_of_whole_slices_over_the_triangles_trees_beats_the_cap():
    # brute force: every split of k slices over the three spanning arborescences from 0
    # (both child orders of the star), each simulated flow after flow: none below the cap
    # (the closest 4/3 of it); multi_tree's list schedule of 256 slices is within 4.2 %
    p = triangle()
    trees = [
        Tree("0", {"0": ("1",), "1": ("2",)}),
        Tree("0", {"0": ("2",), "2": ("1",)}),
        Tree("0", {"0": ("1", "2")}),
        Tree("0", {"0": ("2", "1")}),
    ]
    for k in (2, 3, 8):
        whole = slice_bound(p, "0", k * L, L).whole
        best = float("inf")
        for counts in product(range(k + 1), repeat=len(trees)):
            if sum(counts) != k:
                continue
            flows, offset = [], 0
            for tree, c in zip(trees, counts, strict=True):
                if c:
                    flows.append(Flow(tree, c * L, offset, segment_size=L))
                    offset += c * L
            s = Schedule("bcast", "split", k * L, tuple(flows))
            makespan = simulate(p, s).makespan
            assert makespan >= whole * (1 - 1e-12), (k, counts)
            best = min(best, makespan)
        assert best >= whole * 4 / 3 * (1 - 1e-12)
    whole = slice_bound(p, "0", 256 * L, L).whole
    s = plan_request(p, "bcast", "multi_tree", root="0", nbytes=256 * L, segment_size=L)
    assert 1 <= simulate(p, s).makespan / whole < 1.042


def test_the_size_benchmarks_seed_2_bound_of_whole_slices_is_97_51_percent_above():
    # bench_sizes.py --model multi_port --sizes 50 --seeds 3 --slices 8192: on seed 2 no run
    # of whole 1 MB slices reaches more than 97.51 % of the fluid bound; on seed 0 the gaps
    # cost nothing (the cap equals the fluid bound)
    size = 8192 * 10**6
    for seed, share in ((0, 1.0), (2, 0.975062)):
        p = random_graph_platform(50, 0.12, seed=seed, model="multi_port")
        fluid = lower_bound(p, "0", size).seconds
        whole = whole_slice_bound(p, "0", size, 10**6)
        assert fluid / whole == pytest.approx(share, abs=1e-6), seed
        assert whole >= fluid


@st.composite
def small_multi_port(draw) -> Platform:
    """3-5 nodes, each sending a slice in 1 ms, on a path plus random links of 1, 1.5, 2.5
    or 3 sends per slice (fractions of a send make gap rows)."""
    n = draw(st.integers(3, 5))
    pairs = [(str(i), str(i + 1)) for i in range(n - 1)]
    pairs += [(str(a), str(b)) for a in range(n) for b in range(a + 2, n) if draw(st.booleans())]
    sends = st.sampled_from([1.0, 1.5, 2.5, 3.0])
    return Platform.from_dict(
        {
            "model": "multi_port",
            "nodes": [{"id": str(i), "t_byte": 1e-6} for i in range(n)],
            "links": [{"u": u, "v": v, "bandwidth": 1e6 / draw(sends)} for u, v in pairs],
        }
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=small_multi_port(), k=st.integers(2, 12))
def test_no_registered_broadcast_planner_beats_the_whole_slice_bound(p, k):
    # every candidate of a pipelined broadcast sends whole slices when the slice divides
    # each half of the message (what compare's pruning by SliceBound.whole assumes), and
    # none that does is simulated below the bound
    b = slice_bound(p, "0", k * L, L)
    assert b.whole >= b.seconds > 0
    names, _ = candidates("bcast", "multi_port", len(p), True)
    planned = 0
    for name in names:
        try:
            s = plan_request(p, "bcast", name, root="0", nbytes=k * L, segment_size=L)
        except (PlannerError, ModelError):
            continue
        whole = _whole_slices(s, L)
        # (else halves of an odd number of slices: two_vbbs's, or switch_aware's choice
        # of it)
        assert whole or (k % 2 and {f.nbytes for f in s.flows} == {k * L // 2}), name
        low = b.whole if whole else b.seconds
        assert simulate(p, s).makespan >= low * (1 - 1e-9), name
        planned += 1
    assert planned >= 20


def test_pruning_takes_the_whole_slice_bound_only_where_every_planner_sends_whole_slices():
    # the triangle, 7 slices of 1 000 bytes: two_vbbs's halves end in half slices, so the
    # size's bound is the fluid one; 8 slices: the whole-slice cap
    from hetcoll.slicesizes import size_bounds as _size_bounds

    p = triangle()
    for k, name in ((7, "seconds"), (8, "whole")):
        b = slice_bound(p, "0", k * L, L)
        assert b.whole > b.seconds
        assert _size_bounds([None, L], [None, b], k * L) == [0.0, getattr(b, name)]


@pytest.mark.parametrize("model", ["one_port", "one_port_uni", "hockney", "postal"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_other_models_keep_the_bound_they_had(model, seed):
    # no gap cap outside multi_port: whole is the fluid bound plus the fill, exactly
    p = random_graph_platform(12, 0.3, seed=seed, model=model)
    for k in (1, 16, 64):
        b = slice_bound(p, "0", k * L, L)
        assert b.cap == 0.0 and b.whole == b.seconds + b.start
    # under one_port the multi-port gap rows would exist on the triangle, but do not apply
    assert gap_problem(model_problem(triangle(), "0", L)) is not None
    b = slice_bound(triangle("one_port"), "0", 8 * L, L)
    assert b.cap == 0.0 and b.whole == b.seconds + b.start


def test_optimum_cli_reports_the_whole_slice_bound(tmp_path, capsys):
    path = tmp_path / "triangle.json"
    path.write_text(json.dumps(triangle().to_dict()))
    args = ("optimum", path, "--root", "0", "--size", "8000", "--segment-size", "1000")
    code, out, _ = run(capsys, *args, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["lower_bound"] == pytest.approx(0.008, rel=1e-9)
    assert doc["whole_slice_bound"] == pytest.approx(0.009, rel=1e-9)
    code, out, _ = run(capsys, *args)
    assert code == 0 and "lower bound in messages of exactly" in out
    # a slice that does not divide the message: no whole-slice broadcast, null
    code, out, _ = run(capsys, "optimum", path, "--root", "0", "--size", "8001", "--segment-size",
                       "1000", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["whole_slice_bound"] is None
