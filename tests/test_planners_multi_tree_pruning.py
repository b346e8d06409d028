"""What multi_tree leaves out for a finite message changes nothing it returns: periods longer
than an eighth of the message, or after three in a row that finish no sooner, are not
timetabled (the period kept is the one kept with every period up to the message's length),
and a relayed single tree (binomial_graph's)
whose busiest port cannot beat the fastest candidate is not simulated (its bound is one)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hetcoll import plan, simulate
from hetcoll.generators import random_graph_platform
from hetcoll.planners import multitree, periodic_timetable
from hetcoll.planners.pipelined import _start, binomial_graph
from hetcoll.planners.steady import pack_arborescences, unbounded

L = 10**6


def _built_periods(monkeypatch) -> list[int]:
    """The slices per period of every timetable multi_tree builds from now on."""
    built: list[int] = []
    real = periodic_timetable._placed_timetable

    def spy(g, trees, m, *style_built):
        built.append(int(sum(m)))
        return real(g, trees, m, *style_built)

    monkeypatch.setattr(periodic_timetable, "_placed_timetable", spy)
    return built


@pytest.mark.parametrize(("n", "seed", "total"), [(30, 0, 1024), (30, 2, 512), (50, 1, 2048)])
def test_no_period_longer_than_an_eighth_of_the_message_is_timetabled(monkeypatch, n, seed, total):
    p = random_graph_platform(n, 0.12, seed=seed)
    built = _built_periods(monkeypatch)
    plan(p, "0", method="multi_tree", nbytes=total * L, segment_size=L)
    assert built
    assert max(built) <= total // periodic_timetable.LONGEST


@pytest.mark.parametrize(("n", "seed", "total", "most"), [(50, 0, 2048, 64), (40, 2, 8192, 96)])
def test_periods_after_three_that_finish_no_sooner_are_not_timetabled(
    monkeypatch, n, seed, total, most
):
    # the periods kept are 24 and 32 slices: the next three are built, no more
    p = random_graph_platform(n, 0.12, seed=seed)
    built = _built_periods(monkeypatch)
    plan(p, "0", method="multi_tree", nbytes=total * L, segment_size=L)
    assert max(built) == most


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(4, 16),
    density=st.sampled_from([0.12, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    total=st.sampled_from([16, 40, 100, 300, 700]),
)
def test_the_kept_period_is_the_one_kept_with_every_period_up_to_the_message(
    n, density, seed, total
):
    p = random_graph_platform(n, density, seed=seed)
    _req, g = _start(p, "0", None, None, total * L, L)
    if g.k == 1 or unbounded(g.problem()):
        return
    packing = pack_arborescences(g.problem())
    capped = periodic_timetable.timetabled(g, packing, None, total)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(periodic_timetable, "LONGEST", 1)
        m.setattr(periodic_timetable, "PATIENCE", 10**9)
        every = periodic_timetable.timetabled(g, packing, None, total)
    assert capped[0] == every[0]
    assert capped[2][1:] == every[2][1:]
    assert capped[3] == every[3]


def test_a_relayed_tree_that_cannot_win_is_not_simulated(monkeypatch):
    # n = 50, 128 slices: binomial_graph's tree (relayed, the event loop's) takes about 7x
    # the timetable; its busiest port alone already takes longer than the fastest candidate
    p = random_graph_platform(50, 0.12, seed=1)
    want = plan(p, "0", method="multi_tree", nbytes=128 * L, segment_size=L)
    starts: list[str | None] = []
    import hetcoll.simulator as sim  # multi_tree imports simulate from it where it uses it

    real_simulate = sim.simulate

    def spy(platform, schedule, model=None):
        starts.append(schedule.params.get("start"))
        return real_simulate(platform, schedule, model)

    monkeypatch.setattr(sim, "simulate", spy)
    got = plan(p, "0", method="multi_tree", nbytes=128 * L, segment_size=L)
    assert "binomial_graph" not in starts
    assert got.to_json() == want.to_json()


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(3, 14),
    density=st.sampled_from([0.15, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    slices=st.integers(1, 300),
)
def test_the_relayed_trees_bound_is_one(n, density, seed, slices):
    p = random_graph_platform(n, density, seed=seed)
    nbytes = slices * L - seed % 3
    req, g = _start(p, "0", None, None, nbytes, L)
    b = binomial_graph(p, "0", nbytes=nbytes, segment_size=L)
    bound = multitree._hops_bound(g.problem(), req, g, b, slices)
    assert bound <= simulate(p, b).makespan
    # a tree of plan-graph edges, unrelayed: the port bound of its edges
    edges = multitree._grow_one_port(g)
    tree = multitree._schedule(req, g, "multi_tree", edges, trees=1)
    assert multitree._hops_bound(g.problem(), req, g, tree, slices) == pytest.approx(
        multitree._port_bound(g.problem(), edges, slices), rel=1e-12
    )


@settings(max_examples=20, deadline=None)
@example(n=8, density=0.6, seed=0, slices=1, model="one_port")
@given(
    n=st.integers(3, 12),
    density=st.sampled_from([0.15, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    slices=st.sampled_from([1, 2, 7, 64]),
    model=st.sampled_from(["one_port", "one_port_uni"]),
)
def test_no_schedule_is_simulated_twice_under_one_port(n, density, seed, slices, model):
    # the periodic timetable simulated against the whole message's list schedule is not
    # simulated again as a single-tree candidate when it is one tree (8 nodes, 1 slice)
    import hetcoll.simulator

    real = hetcoll.simulator.simulate
    seen: list[str] = []

    def counted(platform, schedule, *args, **kwargs):
        seen.append(schedule.to_json())
        return real(platform, schedule, *args, **kwargs)

    p = random_graph_platform(n, density, seed=seed, model=model)
    hetcoll.simulator.simulate = counted
    try:
        plan(p, "0", method="multi_tree", nbytes=slices * L, segment_size=L)
    finally:
        hetcoll.simulator.simulate = real
    assert len(seen) == len(set(seen))
