"""``forest``'s quick choice of segment size (``search="quick"``, the default) against the
full search, and ``auto`` weighing ``forest`` for the all-to-all collectives."""

from __future__ import annotations

import pytest

import hetcoll.planners.forestplan as forestplan
import hetcoll.simulator
from hetcoll import load_platform, plan, simulate
from hetcoll.allbounds import collective_bound
from hetcoll.compare import candidates, plan_request
from hetcoll.errors import ModelError, PlannerError, ScheduleError
from hetcoll.generators import capacitated_graph_platform, star_platform
from hetcoll.planners import REGISTRY

MIB = 2**20
OPS = ("allreduce", "allgather", "reduce_scatter")


def each(p, op: str, m: int) -> int:
    return m if op == "allreduce" else m // len(p)


def test_auto_runs_a_per_root_plan_for_a_large_allreduce_on_star8():
    p = load_platform("star8")
    m = 64 * MIB
    s = plan(p, None, method="auto", collective="allreduce", nbytes=m)
    bound = collective_bound(p, "allreduce", m).lower_bound
    # (it was the ring, 1.753x the bound; forest 1.037x, the pipelined butterfly 1.028x)
    assert s.params["chosen"] == "butterfly_pipelined"
    times = s.params["candidates"]
    assert times["butterfly_pipelined"] < times["forest"] < times["ring"]
    assert simulate(p, s).makespan <= 1.05 * bound


def test_forest_is_a_candidate_of_a_message_given_whole():
    for op in OPS:
        names, left_out = candidates(op, "nic", 8, pipelined=False)
        assert "forest" in names and "forest" not in left_out
    assert REGISTRY["forest"].own_slices
    # a planner that only pipelines given slices stays out
    assert REGISTRY["multi_tree"].unfit("bcast", "nic", 8, pipelined=False) is not None


@pytest.mark.parametrize(
    ("speeds", "op", "m"),
    [
        (("25Gbps", "10Gbps"), "allreduce", MIB),
        (("25Gbps", "10Gbps"), "allgather", 4 * MIB),
        (("100Gbps", "10Gbps"), "reduce_scatter", 4 * MIB),
        (("25Gbps", "10Gbps"), "allreduce", 64),
    ],
)
def test_auto_is_the_fastest_candidate(speeds, op, m):
    """Brute force: every candidate planned for the request (``forest`` with either
    search), simulated; ``auto`` returns the fastest of them."""
    p = star_platform(4, speeds, "5us")
    got = plan(p, None, method="auto", collective=op, nbytes=each(p, op, m))
    names, _ = candidates(op, "nic", len(p), pipelined=False)
    times = {}
    for name in {*names, "forest"}:
        try:
            s = plan_request(p, op, name, nbytes=each(p, op, m))
        except (PlannerError, ModelError, ScheduleError):  # it declines the request
            continue
        times[name] = simulate(p, s).makespan
    full = plan_request(p, op, "forest", nbytes=each(p, op, m), options={"search": "full"})
    times["forest (full)"] = simulate(p, full).makespan
    assert simulate(p, got).makespan <= min(times.values()) * 1.001


class _Count:
    def __init__(self, monkeypatch) -> None:
        self.sims = self.plays = 0
        sim, play = hetcoll.simulator.simulate, forestplan.per_root_order
        within = hetcoll.simulator.simulate_within

        def counted_sim(*a, **k):
            self.sims += 1
            return sim(*a, **k)

        def counted_within(*a, **k):
            self.sims += 1
            return within(*a, **k)

        def counted_play(*a, **k):
            self.plays += 1
            return play(*a, **k)

        monkeypatch.setattr(hetcoll.simulator, "simulate", counted_sim)
        monkeypatch.setattr(hetcoll.simulator, "simulate_within", counted_within)
        monkeypatch.setattr(forestplan, "per_root_order", counted_play)


@pytest.mark.parametrize(
    ("where", "op", "m"),
    [
        ("star", "allreduce", 16 * MIB),
        ("star", "reduce_scatter", 4 * MIB),
        ("3speeds", "allgather", 4 * MIB),
        ("graph", "allgather", 2 * MIB),
        ("graph", "reduce_scatter", 2 * MIB),
    ],
)
def test_the_quick_search_is_within_one_percent_of_the_full_one(monkeypatch, where, op, m):
    """The quick search's plan is within :data:`STOP` of the full search's, and it runs
    no more simulations and play-outs (the allreduce's reduce + broadcast through one rank
    is dropped after its cheapest points)."""
    if where == "star":
        p = star_platform(4, ("25Gbps", "10Gbps"), "5us")
    elif where == "3speeds":
        p = star_platform(4, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    else:
        p = capacitated_graph_platform(8, seed=0)
    align = {"align": 8} if op == "allreduce" else {}
    runs = {}
    for search in ("full", "quick"):
        with monkeypatch.context() as mp:
            count = _Count(mp)
            s = plan(p, None, method="forest", collective=op, nbytes=each(p, op, m),
                     options={**align, "search": search})  # fmt: skip
        runs[search] = (simulate(p, s).makespan, count.sims + count.plays)
    (full, full_work), (quick, quick_work) = runs["full"], runs["quick"]
    assert quick <= (1 + forestplan.STOP) * full
    assert quick_work <= full_work
    if op == "allreduce":
        assert quick_work < full_work
