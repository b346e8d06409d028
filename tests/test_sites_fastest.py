"""The multi-site planners' choice among a candidate's timetables
(:func:`hetcoll.planners.sites.fastest_run`): the answer of simulating every one, in fewer
simulations."""

from __future__ import annotations

import dataclasses

import pytest

import hetcoll.simulator as simulator
from hetcoll import simulate
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners.sites import playouts, site_groups, site_tree, sites
from hetcoll.planners.sitesorder import allreduce_timetable, timetable
from hetcoll.schedule import Flow, Schedule


def two_sites(per_site: int):
    site = star_platform(per_site, ("25Gbps", "10Gbps"), "5us")
    return multisite_platform({"a": site, "b": site}, [("a", "b", "1ms", "5Gbps")])


def candidates(p, nbytes: int, seg: int | None) -> list[Schedule]:
    """An allreduce's flows on ``sites``' trees as that planner lists its candidates: in
    their trees' order, then each play-out's timetable and the allreduce's two."""
    members = hosts(p)
    groups = site_groups(p, members)
    share = nbytes // len(members)
    flows = [
        Flow(site_tree(groups, m, kind, 3), share, i * share, 0, seg, kind=kind)
        for kind in ("reduce", "bcast")
        for i, m in enumerate(members)
    ]
    plain = Schedule("allreduce", "sites", share * len(members), tuple(flows), {})
    out = [plain]
    for links, lead in playouts(p):
        out.append(timetable(p, plain, None, links, lead))
        out += [allreduce_timetable(p, plain, None, own, links, lead) for own in (False, True)]
    return out


@pytest.mark.parametrize(("per_site", "nbytes", "seg"), [(2, 1 << 16, None), (3, 1 << 18, 1 << 15)])
def test_the_fastest_run_is_the_first_fastest_of_all(per_site, nbytes, seg):
    """Brute force: every candidate simulated in full; the index is the first of the
    fastest, its prediction that simulation's, bit for bit, in either order."""
    from hetcoll.planners.sites import fastest_run

    p = two_sites(per_site)
    out = candidates(p, nbytes, seg)
    times = [simulate(p, s).makespan for s in out]
    k, run = fastest_run(p, None, out)
    assert k == times.index(min(times))
    assert run.makespan == min(times) and run.transfers == simulate(p, out[k]).transfers
    k, run = fastest_run(p, None, out[::-1])  # the first of equals, whichever runs first
    assert k == times[::-1].index(min(times)) and run.makespan == min(times)


def test_an_equal_schedule_is_not_simulated_again(monkeypatch):
    """A candidate equal to an earlier one (two play-outs giving one timetable) costs no
    simulation, and among equal times the first listed wins."""
    from hetcoll.planners.sites import fastest_run

    p = two_sites(2)
    out = candidates(p, 1 << 16, None)
    calls = []
    real, within = simulator.simulate, simulator.simulate_within
    monkeypatch.setattr(simulator, "simulate", lambda *a: calls.append(a[1]) or real(*a))
    monkeypatch.setattr(simulator, "simulate_within",
                        lambda *a: calls.append(a[1]) or within(*a))  # fmt: skip
    twice = [out[1], out[0], dataclasses.replace(out[1]), out[0]]
    k, run = fastest_run(p, None, twice)
    assert len(calls) == 2 and k in (0, 1)
    assert run.makespan == min(real(p, out[0]).makespan, real(p, out[1]).makespan)


def test_sites_simulates_each_distinct_timetable_once(monkeypatch):
    """An allreduce of ``sites`` in whole blocks on two 2-host stars: its ten candidates
    (the flows, three play-outs' timetables and the allreduce's two for each) hold
    fewer distinct timetables, one simulation each."""
    p = two_sites(2)
    out = candidates(p, 1 << 16, None)
    distinct = [s for k, s in enumerate(out) if s not in out[:k]]
    assert len(out) == 10 and len(distinct) < len(out)
    calls = []
    real, within = simulator.simulate, simulator.simulate_within
    monkeypatch.setattr(simulator, "simulate", lambda *a: calls.append(a[1]) or real(*a))
    monkeypatch.setattr(simulator, "simulate_within",
                        lambda *a: calls.append(a[1]) or within(*a))  # fmt: skip
    sites(p, nbytes=1 << 16, segment_size=1 << 16, fanout=3, senders=1,
          collective="allreduce", ends=0)  # fmt: skip
    assert len(calls) == len(distinct)
