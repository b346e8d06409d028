"""simulate_within: the event loop under shared contention stopped once its lower bound
passes the time a search's candidate must beat.  The bound is a proof (never above the
run's end, at every check), a run it does not stop is simulate's bit for bit, and the
searches of butterfly_pipelined and forest ask it with the time they compare each
candidate with, so that they keep the same schedules."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from hetcoll import Platform, plan, simulate
from hetcoll.generators import star_platform
from hetcoll.generators.stars import multisite_platform
from hetcoll.planners.butterflypipe import butterfly_pipelined, phased_search
from hetcoll.simulator import events, simulate_within

STAR = star_platform(8, ("25Gbps", "10Gbps"), "5us")
STAR3 = star_platform(6, ("100Gbps", "25Gbps", "10Gbps"), "5us")


def _two_sites() -> Platform:
    """Routes of two to four links (hockney's shared links)."""
    a = star_platform(3, ("25Gbps", "10Gbps"), "5us")
    b = star_platform(2, ("10Gbps",), "5us")
    return multisite_platform({"a": a, "b": b}, [("a", "b", "1ms", "1Gbps")])


def _cases():
    for p in (STAR, STAR3):
        for cut, seg in (("phased", 8192), ("phased", 65536), ("even", 16384)):
            yield p, butterfly_pipelined(p, nbytes=1 << 20, segment_size=seg, cut=cut)
        yield p, plan(p, None, method="forest", collective="allreduce", nbytes=1 << 20)
    p = _two_sites()
    for method in ("flat", "binomial"):
        yield p, plan(p, p.ids[0], method=method, nbytes=1 << 20)


CASES = list(_cases())


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_bound_never_passes_the_runs_end(case, monkeypatch):
    p, sched = CASES[case]
    seen: list[float] = []
    bound = events._Flows.bound

    def recorded(self, now):
        got = bound(self, now)
        seen.append(got)
        return got

    monkeypatch.setattr(events, "BOUND_EVERY", 1)
    monkeypatch.setattr(events._Flows, "bound", recorded)
    run = simulate_within(p, sched, None, math.inf)  # checked at every update, never stops
    assert len(seen) >= 5
    end = simulate(p, sched).makespan
    assert run.makespan.hex() == end.hex()
    assert max(seen) <= end * (1 + 1e-12)
    assert max(seen) >= 0.9 * end  # it closes on the end (a bound of some use)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_run_not_stopped_is_simulates_bit_for_bit(case, monkeypatch):
    p, sched = CASES[case]
    want = simulate(p, sched)
    got = simulate_within(p, sched, None, want.makespan)
    assert got is not None
    assert got.makespan.hex() == want.makespan.hex()
    assert {r: t.hex() for r, t in got.arrival.items()} == {
        r: t.hex() for r, t in want.arrival.items()
    }
    assert got.throughput == want.throughput
    monkeypatch.setattr(events, "BOUND_EVERY", 1)  # (a bcast of a few flows)
    assert simulate_within(p, sched, None, 0.5 * want.makespan) is None


def test_a_slower_phased_cut_stops_early(monkeypatch):
    fast = butterfly_pipelined(STAR, nbytes=1 << 20, segment_size=16384, cut="phased")
    slow = butterfly_pipelined(STAR, nbytes=1 << 20, segment_size=8192, cut="phased")
    t = simulate(STAR, fast).makespan
    assert simulate(STAR, slow).makespan > t
    stopped: list[float] = []
    bound = events._Flows.bound

    def recorded(self, now):
        got = bound(self, now)
        if got > self.above * (1 + events.MARGIN):
            stopped.append(now)
        return got

    monkeypatch.setattr(events._Flows, "bound", recorded)
    assert simulate_within(STAR, slow, None, t) is None
    assert stopped and stopped[0] < 0.7 * simulate(STAR, slow).makespan


def test_phased_search_asks_each_count_to_beat_the_fastest_so_far():
    """From a guess of 40 segments the search runs 32 (the power of two below) to its end,
    then 64 (slower), then walks down to 16 (faster) and 8 (slower); each count after the
    first is asked to beat the fastest so far."""
    sched = butterfly_pipelined(STAR, nbytes=1 << 20, segment_size=65536, cut="phased")
    times = {32: 1.2, 64: 1.3, 16: 1.1, 8: 1.25}
    asked: list[tuple[int, float | None]] = []

    def simulated(flows, count=0, above=None):
        asked.append((count, above))
        return replace(sched, params={"estimate": times[count], "segments": count})

    out = phased_search(lambda k: list(sched.flows), simulated, 10**9, 1.0, 40.0)
    assert [s.params["estimate"] for s in out] == [1.2, 1.3, 1.1, 1.25]
    assert asked == [(32, None), (64, 1.2), (16, 1.2), (8, 1.1)]


@pytest.mark.parametrize(
    "name, options",
    [
        ("butterfly_pipelined", {"cut": "phased"}),
        ("butterfly_pipelined", {"cut": "even"}),
        ("forest", {}),
    ],
)
def test_the_searches_keep_the_schedules_they_kept_without_stopping(name, options, monkeypatch):
    """butterfly_pipelined's phased and even searches and forest's, asking simulate_within
    with the time of the candidate each one is compared with, and with every run simulated
    to its end: the same schedule and estimate."""
    m = (1 << 20) - (1 << 20) % 64
    options = {"align": 8, **options}
    got = plan(STAR3, None, method=name, collective="allreduce", nbytes=m, options=options)
    asked = []

    def whole(platform, schedule, model, above):
        run = simulate(platform, schedule, model)
        asked.append((above, run.makespan))
        return run

    monkeypatch.setattr("hetcoll.simulator.simulate_within", whole)
    want = plan(STAR3, None, method=name, collective="allreduce", nbytes=m, options=options)
    assert got.params["estimate"].hex() == want.params["estimate"].hex()
    assert got.to_dict() == want.to_dict()
    assert asked  # every candidate after the first is asked to beat one before it
