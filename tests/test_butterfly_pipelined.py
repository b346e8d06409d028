"""The ``butterfly_pipelined`` planner (:mod:`hetcoll.planners.butterflypipe`): the
balanced butterfly's reduce-scatter and allgather overlapped segment by segment — its time
on a small star in closed form, the data every rank ends with, determinism, the segment
search, refusals."""

from __future__ import annotations

import math

import pytest

from hetcoll import PlannerError, Platform, Schedule, plan, simulate
from hetcoll.generators.stars import star_platform
from hetcoll.planners.butterfly import balanced_shares
from test_recursive import check_result, equal

M = 8 << 20


def three() -> Platform:
    """A star of one 2 GB/s NIC and two 1 GB/s ones, no latency: ``T* = M / 1 GB/s`` (both
    terms of the bound), the fast node owns the whole vector."""
    nodes = [
        {"id": v, "bandwidth": b, "latency": 0} for v, b in (("a", 2e9), ("b", 1e9), ("c", 1e9))
    ]
    return Platform.from_dict({"model": "nic", "nodes": nodes})


@pytest.mark.parametrize("seg", [1 << 20, 1 << 19, 1 << 18])
def test_three_node_star_in_closed_form(seg):
    """``b`` and ``c`` send ``a`` the vector at their NIC's rate the whole time while ``a``
    sends each segment back once it has both parts: ``T* + seg / b_min``, the last segment's
    broadcast after the last byte of the reduce-scatter.  ``balanced`` runs the phases one
    after the other (and ``a``'s two sends one at a time): ``3 M / b_min``."""
    p = three()
    s = plan(
        p, None, method="butterfly_pipelined", collective="allreduce", nbytes=M, segment_size=seg
    )
    assert [f.nbytes for f in s.flows if f.kind == "reduce"] == [M, 0, 0]
    assert (s.chain, s.stagger) == ("edge", seg // 2)
    assert simulate(p, s).makespan == pytest.approx((M + seg) / 1e9, rel=1e-12)
    whole = plan(p, None, method="balanced", collective="allreduce", nbytes=M)
    assert simulate(p, whole).makespan == pytest.approx(3 * M / 1e9, rel=1e-12)


def test_the_search_keeps_the_fastest_segment_it_simulates():
    p = three()
    s = plan(p, None, method="butterfly_pipelined", collective="allreduce", nbytes=M)
    seg = s.params["segment_size"]
    assert seg is not None and seg < M // 16
    assert s.params["estimate"] == pytest.approx((M + seg) / 1e9, rel=1e-12)
    assert simulate(p, s).makespan == s.params["estimate"]
    assert s.params["bound"] == pytest.approx(M / 1e9)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_every_rank_ends_with_the_sum(n):
    for p in (
        equal(n, 1e-6, 1e-9),
        star_platform(n),
        star_platform(n, ("100Gbps", "25Gbps", "10Gbps")),
    ):
        for nbytes, seg in ((3, None), (1000 * n + 1, None), (1000 * n + 8, 64), (0, 8)):
            s = plan(
                p,
                None,
                method="butterfly_pipelined",
                collective="allreduce",
                nbytes=nbytes,
                segment_size=seg,
            )
            s.validate(p)
            check_result(s)


def test_deterministic_and_round_trips():
    p = star_platform(6, ("25Gbps", "10Gbps"), "5us")
    kw = {"method": "butterfly_pipelined", "collective": "allreduce", "nbytes": 6 << 20}
    s = plan(p, None, **kw, options={"align": 8})
    assert plan(p, None, **kw, options={"align": 8}).to_json() == s.to_json()
    assert Schedule.from_json(s.to_json()) == s
    shares = balanced_shares([node.bandwidth for node in p.nodes], 6 << 20, 8)
    assert [f.nbytes for f in s.flows if f.kind == "reduce"] == shares
    assert all(f.segment_size % 8 == 0 for f in s.flows if f.segment_size)


def test_faster_than_balanced_on_a_star_of_two_speeds():
    """The phases overlapped against one after the other: within 10 % of ``T*`` where
    ``balanced`` takes over twice it (16 MiB on six NICs of 25 and 10 Gbit/s)."""
    p = star_platform(6, ("25Gbps", "10Gbps"), "5us")
    rates = [node.bandwidth for node in p.nodes]
    m = 16 << 20
    t_star = max(m / min(rates), 10 * m / sum(rates))
    kw = {"collective": "allreduce", "nbytes": m, "options": {"align": 8}}
    piped = simulate(p, plan(p, None, method="butterfly_pipelined", **kw)).makespan
    whole = simulate(p, plan(p, None, method="balanced", **kw)).makespan
    assert piped < 1.1 * t_star < 2 * t_star < whole


def test_refusals():
    p = equal(3, 1e-6, 1e-9)
    with pytest.raises(PlannerError, match="does not plan a allgather"):
        plan(p, None, method="butterfly_pipelined", collective="allgather", nbytes=8)
    with pytest.raises(PlannerError, match="every node of the platform"):
        plan(p, "0", ["1"], method="butterfly_pipelined", collective="allreduce", nbytes=8)


def test_auto_picks_it_where_it_is_the_fastest():
    """``auto`` simulates it beside ``forest`` (both search their own segments) and keeps
    the faster: on ``star8``'s NICs (4 at 25, 4 at 10 Gbit/s) at 16 MiB the butterfly."""
    p = star_platform(8, ("25Gbps", "10Gbps"), "5us")
    s = plan(p, None, method="auto", collective="allreduce", nbytes=16 << 20, options={"align": 8})
    times = s.params["candidates"]
    assert s.params["chosen"] == "butterfly_pipelined"
    assert times["butterfly_pipelined"] == min(times.values()) < times["forest"]
    assert simulate(p, s).makespan == pytest.approx(times["butterfly_pipelined"], rel=1e-12)


def test_the_search_goes_down_to_every_message_the_simulator_takes(monkeypatch):
    """Its segments halve while the schedule sends at most the simulator's budget (here
    made 3 000 messages): on six NICs of 100/25/10 Gbit/s at 8 MiB the halvings keep
    gaining down to the last size within it, over half the budget (``forest``'s share of
    it, a quarter to a half, stopped one halving earlier), and the fastest is kept."""
    import hetcoll.planners.butterflypipe as bp
    import hetcoll.simulator as simulator

    monkeypatch.setattr(bp, "transfer_budget", lambda contention: 3000)
    tried: list[tuple[int, float]] = []
    real = simulator.simulate

    def spy(platform, schedule, model=None):
        run = real(platform, schedule, model)
        tried.append((sum(f.transfers for f in schedule.flows), run.makespan))
        return run

    def spy_within(platform, schedule, model, above):  # (a run proved slower: stopped)
        run = real_within(platform, schedule, model, above)
        t = run.makespan if run is not None else math.inf
        tried.append((sum(f.transfers for f in schedule.flows), t))
        return run

    real_within = simulator.simulate_within
    monkeypatch.setattr(simulator, "simulate", spy)
    monkeypatch.setattr(simulator, "simulate_within", spy_within)
    p = star_platform(6, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    s = plan(
        p, None, method="butterfly_pipelined", collective="allreduce", nbytes=M,
        options={"align": 8, "cut": "even"},
    )  # fmt: skip
    assert 1500 < max(sent for sent, _ in tried) <= 3000
    assert s.params["estimate"] == min(t for _, t in tried)
    assert sum(f.transfers for f in s.flows) == max(tried, key=lambda x: -x[1])[0]


def test_startup_prices_the_slowest_nics_sends_by_hand():
    """Four NICs of 25, 25, 10 and 10 Gbit/s, 5 us each: ``T* = M / 10 Gbit/s``, shares
    ``M/2, M/2, 0, 0``.  The edges of the fast pair carry ``M`` bytes, those of a fast and a
    slow node ``M/2``, so the windows are 2 and 1 (:func:`hetcoll.perroot.windows`): ``c``
    keeps 2 sends in flight on its edges with bytes.  In 1 KiB segments of ``M = 8 KiB`` it
    sends each fast owner 4, ``d`` one empty contribution and everyone its empty share:
    12 sends of a 10 us lead over 2, 60 us."""
    from hetcoll.planners.butterflypipe import butterfly_pipelined, startup

    p = star_platform(4, ("25Gbps", "10Gbps"), "5us")
    s = butterfly_pipelined(p, nbytes=8192, segment_size=1024)
    shares = [f.nbytes for f in s.flows if f.kind == "reduce"]
    assert shares == [4096, 4096, 0, 0]
    rates = [node.bandwidth for node in p.nodes]
    price = startup(p.model.bind(p), list(p.ids), shares, rates)
    assert price(s) == pytest.approx(60e-6, rel=1e-12)
    whole = butterfly_pipelined(p, nbytes=8192, segment_size=8192)
    assert price(whole) == pytest.approx(6 * 10e-6 / 2, rel=1e-12)


def test_a_halving_gains_while_the_time_over_the_bound_exceeds_three_startups():
    """``T = lower + lag + S`` halves to ``lower + lag / 2 + 2 S``: it gains iff
    ``T - lower > 3 S``; without a price, always."""
    from types import SimpleNamespace

    from hetcoll.planners.forestplan import _halving_gains

    def at(t):
        return SimpleNamespace(params={"estimate": t})

    assert _halving_gains(at(1.31), 1.0, lambda s: 0.1)
    assert not _halving_gains(at(1.3), 1.0, lambda s: 0.1 + 1e-12)
    assert not _halving_gains(at(1.2), 1.0, lambda s: 0.1)
    assert _halving_gains(at(1.2), 1.0, None)


def test_the_search_skips_a_halving_its_startup_would_lose(monkeypatch):
    """On six NICs of 25 and 10 Gbit/s at 1 MiB the 16 KiB segments' leads already cost a
    third of their time over ``T*``: the search stops there, without simulating the 8 KiB
    segments, which lose, and keeps what the full search keeps."""
    import hetcoll.simulator as simulator

    tried: list[int | None] = []
    real = simulator.simulate

    def spy(platform, schedule, model=None):
        tried.append(schedule.params["segment_size"])
        return real(platform, schedule, model)

    def spy_within(platform, schedule, model, above):
        tried.append(schedule.params["segment_size"])
        return real_within(platform, schedule, model, above)

    real_within = simulator.simulate_within
    monkeypatch.setattr(simulator, "simulate", spy)
    monkeypatch.setattr(simulator, "simulate_within", spy_within)
    p = star_platform(6, ("25Gbps", "10Gbps"), "5us")
    kw = {"method": "butterfly_pipelined", "collective": "allreduce", "nbytes": 1 << 20}
    s = plan(p, None, **kw, options={"align": 8, "cut": "even"})
    assert tried == [None, 16384]
    assert s.params["segment_size"] == 16384
    monkeypatch.setattr(simulator, "simulate", real)
    shorter = plan(p, None, **kw, segment_size=8192, options={"align": 8})
    assert simulate(p, shorter).makespan > s.params["estimate"]
    full = plan(p, None, **kw, options={"align": 8, "search": "full", "cut": "even"})
    assert full.params["segment_size"] == 16384
