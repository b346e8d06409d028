"""The planner ``sites``' port floor (planners/sites.py ``port_floor``): a lower bound on
a plan's simulated time from its nodes' port loads, exact at one host per site, never
above the simulated time on random 2-3-site platforms, and the candidates it rules out
not simulated, with the same plans chosen."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetcoll.simulator
from hetcoll import simulate
from hetcoll.generators import multisite_platform, star_platform
from hetcoll.planners import sites as plan_sites
from hetcoll.planners.sites import port_floor
from hetcoll.planners.sitesorder import timetable

#: a WAN hop: the two NICs' 5 us and the WAN's 1 ms; the WAN's bytes per second
HOP, WAN = 1e-3 + 10e-6, 5e9 / 8


def multisite(counts, speeds=("25Gbps", "10Gbps")):
    names = "abc"[: len(counts)]
    parts = {s: star_platform(c, speeds, "5us") for s, c in zip(names, counts, strict=True)}
    wan = [(names[i], names[i + 1], "1ms", "5Gbps") for i in range(len(names) - 1)]
    return multisite_platform(parts, wan)


def test_one_host_per_site_by_hand():
    """Two sites of one host: an allgather of 3 MB blocks whole sends each block once over
    the WAN, each host's send port busy one hop and the block at 5 Gbit/s: 1.01 ms + 4.8
    ms, the simulated time; in 1 MB segments three hops and the same bytes."""
    p = multisite([1, 1])
    bound = p.model.bind(p)
    whole = plan_sites(p, nbytes=3_000_000, segment_size=3_000_000)
    assert port_floor(p, bound, whole.flows) == pytest.approx(HOP + 3e6 / WAN, rel=1e-12)
    assert port_floor(p, bound, whole.flows) == pytest.approx(simulate(p, whole).makespan)
    cut = plan_sites(p, nbytes=3_000_000, segment_size=1_000_000)
    assert port_floor(p, bound, cut.flows) == pytest.approx(3 * HOP + 3e6 / WAN, rel=1e-12)
    # a reduce flow's edges are read child to parent: the same ports here
    up = [dataclasses.replace(f, kind="reduce") for f in whole.flows]
    assert port_floor(p, bound, up) == port_floor(p, bound, whole.flows)


@settings(max_examples=25, deadline=None)
@given(
    counts=st.lists(st.integers(1, 3), min_size=2, max_size=3),
    collective=st.sampled_from(["allgather", "reduce_scatter", "allreduce"]),
    block=st.integers(1, 5000),
    seg=st.sampled_from([None, 512, 2048]),
    speeds=st.sampled_from([("10Gbps",), ("25Gbps", "10Gbps"), ("10Gbps", "40Gbps")]),
    senders=st.sampled_from([1, 2]),
)
def test_never_above_the_simulated_time(counts, collective, block, seg, speeds, senders):
    """Sites of 1-3 hosts, two or three of them: the floor of the plan's flows is never
    above its simulated time, in its trees' order or in a timetable."""
    p = multisite(counts, speeds)
    bound = p.model.bind(p)
    sched = plan_sites(p, nbytes=block, collective=collective, segment_size=seg,
                       senders=senders, align=8 if collective == "allreduce" else 1)  # fmt: skip
    low = port_floor(p, bound, sched.flows)
    assert low > 0
    assert low <= simulate(p, sched).makespan * (1 + 1e-12)
    plain = dataclasses.replace(sched, order=None)
    assert low <= simulate(p, plain).makespan * (1 + 1e-12)
    if all(f.nbytes for f in sched.flows):
        assert low <= simulate(p, timetable(p, plain)).makespan * (1 + 1e-12)


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
def test_the_candidates_ruled_out_are_not_simulated_and_the_plan_is_the_same(
    collective, monkeypatch
):
    """Two 4-host stars at M = 1 MiB and three 3-host sites at 8 MiB: the plan
    chosen with the floor is the one chosen without it (each candidate simulated), and
    it simulates fewer schedules in all."""
    calls = []
    real = hetcoll.simulator.simulate

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hetcoll.simulator, "simulate", counted)
    cases = [(multisite([4, 4]), 1 << 20), (multisite([3, 3, 3]), 8 << 20)]
    counts = {}
    for floored in (True, False):
        if not floored:
            module = importlib.import_module("hetcoll.planners.sites")
            monkeypatch.setattr(module, "port_floor", lambda *a: 0.0)
        calls.clear()
        plans = []
        for p, m in cases:
            n = sum(1 for v in p.nodes if v.site)
            each = m if collective == "allreduce" else m // n
            plans.append(plan_sites(p, nbytes=each, collective=collective, align=8))
        counts[floored] = len(calls)
        if floored:
            chosen = plans
    assert chosen == plans
    assert counts[True] < counts[False]
