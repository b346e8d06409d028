"""``butterfly_pipelined``'s phased cut (``cut="phased"``, :mod:`hetcoll.planners.butterflypipe`):
every share in as many segments, one send in flight per edge (``chain="peer"``,
:func:`hetcoll.perroot.per_root_program`) and the flows' first segments phased — its
lowering, the data every rank ends with, its count search, and its time against the even
cut's on a star whose slow NICs alone bind ``T*``."""

from __future__ import annotations

import math

import pytest

from hetcoll import PlannerError, Schedule, plan, simulate
from hetcoll.generators.stars import star_platform
from hetcoll.patterns import Flow, Tree
from hetcoll.perroot import _phases, per_root_program
from test_recursive import check_result, equal

KW = {"method": "butterfly_pipelined", "collective": "allreduce"}


def t_star(p, m: int) -> float:
    rates = [node.bandwidth for node in p.nodes]
    return max(m / min(rates), 2 * (len(rates) - 1) * m / sum(rates))


def test_each_share_in_as_many_segments_one_send_per_edge():
    """Four NICs of 100/100/25/10 Gbit/s (shares ``9 : 9 : 1.5 : 0`` of ``T* b - M``):
    with the largest share in 4 segments every share has 4 (its own size, in whole
    elements), the 10 Gbit/s node's empty share one message per edge; ``stagger`` is the
    element, each flow of a kind cut in segments starting ``(i + 1/2) / 3`` of a segment in."""
    p = star_platform(4, ("100Gbps", "100Gbps", "25Gbps", "10Gbps"), "5us")
    m = 39 * 1024
    big = -(-max(f.nbytes for f in plan(p, None, **KW, nbytes=m).flows) // 4)
    s = plan(p, None, **KW, nbytes=m, segment_size=big, options={"align": 8, "cut": "phased"})
    assert (s.chain, s.stagger, s.params["segments"]) == ("peer", 8, 4)
    reduce = [f for f in s.flows if f.kind == "reduce"]
    assert [f.chunks for f in reduce] == [4, 4, 4, 1]
    assert all(f.segment_size % 8 == 0 for f in reduce[:3]) and reduce[3].nbytes == 0
    first = _phases(s.flows, 8)
    for i, f in enumerate(reduce[:3]):
        assert first[i] == max(8, (2 * i + 1) * f.segment_size // 48 * 8)
    assert Schedule.from_json(s.to_json()) == s
    s.validate(p)
    check_result(s)


def windows_of(prog, node: str) -> dict[str, set[int]]:
    """Per peer of ``node``: how many sends back each of its sends to that peer waits for
    (its window)."""
    ops = prog.ops[node]
    out: dict[str, set[int]] = {}
    for peer in {op.peer for op in ops if op.kind == "send"}:
        mine = [i for i, op in enumerate(ops) if op.kind == "send" and op.peer == peer]
        for j, i in enumerate(mine):
            back = [j - k for k, m in enumerate(mine[:j]) if m in ops[i].deps]
            if back:
                out.setdefault(peer, set()).add(min(back))
    return out


def test_peer_chain_keeps_one_send_in_flight_per_edge():
    """Every member of four broadcasting its block (800, 400, 200, 200 bytes in 50-byte
    segments) to the other three: under ``chain="peer"`` each send waits for the rank's
    previous send to the same peer (one in flight per edge; none is alone at a NIC), where
    ``"edge"`` keeps windows in proportion to the edges' bytes (4 on ``a``'s)."""
    ids = "abcd"
    flows, at = [], 0
    for r, size in zip(ids, (800, 400, 200, 200), strict=True):
        star = Tree(r, {r: tuple(v for v in ids if v != r)})
        flows.append(Flow(star, size, at, segment_size=50))
        at += size
    peer = per_root_program(flows, chain="peer")
    assert all(w == {1} for v in ids for w in windows_of(peer, v).values())
    edge = per_root_program(flows, chain="edge")
    assert windows_of(edge, "a") == {v: {4} for v in "bcd"}


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_every_rank_ends_with_the_sum(n):
    for p in (star_platform(n), star_platform(n, ("100Gbps", "25Gbps", "10Gbps"))):
        for nbytes, seg in ((3, None), (1000 * n + 1, None), (1000 * n + 8, 64), (0, 8)):
            s = plan(p, None, **KW, nbytes=nbytes, segment_size=seg, options={"cut": "phased"})
            assert s.chain == "peer"
            s.validate(p)
            check_result(s)


def test_within_two_percent_of_t_star_where_the_even_cut_takes_six():
    """Four NICs of 100/25/10 Gbit/s at 8 MiB, ``T* = M / b_min`` (the fast NICs idle
    part of the time): the phased cut keeps every slow NIC busy both ways, its leads under
    the other flows' bytes, where the even cut's windows keep several of its segments in
    flight on the slow node's edges (1.07 ``T*``)."""
    p = star_platform(4, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    m = 8 << 20
    s = plan(p, None, **KW, nbytes=m, options={"align": 8})
    assert s.chain == "peer"
    assert s.params["estimate"] == simulate(p, s).makespan < 1.02 * t_star(p, m)
    even = plan(p, None, **KW, nbytes=m, options={"align": 8, "cut": "even"})
    assert simulate(p, even).makespan > 1.05 * t_star(p, m)


def test_the_count_search_starts_at_the_predicted_count(monkeypatch):
    """Four NICs of 100/100/25/10 Gbit/s at 1 MiB: the curve ``A / k + B k`` of the model's
    costs is least at 22 segments (:func:`predicted_count`); the search runs 16, the
    power of two below, to its end, then 32 and 8, each stopped once proved slower, then
    22, the count between 16's neighbours nearest the guess (1.0701 ``T*``, 16 take
    1.0707); it keeps the fastest, and simulates the even cut too only where the phased
    one is more than 1 % over the bound and every NIC binds (not here)."""
    import hetcoll.simulator as simulator

    tried: list[tuple[str, int | None, float]] = []
    real = simulator.simulate

    def spy(platform, schedule, model=None):
        run = real(platform, schedule, model)
        tried.append((schedule.chain, schedule.params.get("segments"), run.makespan))
        return run

    def spy_within(platform, schedule, model, above):  # (a run proved slower: stopped)
        run = real_within(platform, schedule, model, above)
        t = run.makespan if run is not None else math.inf
        tried.append((schedule.chain, schedule.params.get("segments"), t))
        return run

    real_within = simulator.simulate_within
    monkeypatch.setattr(simulator, "simulate", spy)
    monkeypatch.setattr(simulator, "simulate_within", spy_within)
    p = star_platform(4, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    s = plan(p, None, **KW, nbytes=1 << 20, options={"align": 8})
    assert [(k, t == math.inf) for chain, k, t in tried if chain == "peer"] == [
        (16, False),
        (32, True),
        (8, True),
        (22, False),
    ]
    assert s.params["segments"] == 22 and s.params["estimate"] == min(t for _, _, t in tried)
    over = min(t for chain, _, t in tried if chain == "peer") > 1.01 * s.params["bound"]
    # the 10 Gbit/s NIC owns no share and has time to spare: no even cut even where over
    assert over and not any(chain == "edge" for chain, _, _ in tried)


def test_refusals():
    p = equal(3, 1e-6, 1e-9)  # ranks that send one at a time
    with pytest.raises(PlannerError, match="send concurrently"):
        plan(p, None, **KW, nbytes=64, options={"cut": "phased"})
    assert plan(p, None, **KW, nbytes=64).chain == "rank"


def test_the_last_count_is_cut_short_at_the_budget(monkeypatch):
    """With the simulator's budget made 2 000 messages, four NICs of 100/25/10 Gbit/s at
    8 MiB (the predicted least past it): the first count tried, and the largest, is the
    largest whose schedule sends at most the budget, then the power of two below."""
    import hetcoll.planners.butterflypipe as bp
    import hetcoll.simulator as simulator

    monkeypatch.setattr(bp, "transfer_budget", lambda contention: 2000)
    tried: list[tuple[int, int]] = []
    real = simulator.simulate

    def spy(platform, schedule, model=None):
        tried.append((schedule.params.get("segments"), sum(f.transfers for f in schedule.flows)))
        return real(platform, schedule, model)

    def spy_within(platform, schedule, model, above):
        tried.append((schedule.params.get("segments"), sum(f.transfers for f in schedule.flows)))
        return real_within(platform, schedule, model, above)

    real_within = simulator.simulate_within
    monkeypatch.setattr(simulator, "simulate", spy)
    monkeypatch.setattr(simulator, "simulate_within", spy_within)
    p = star_platform(4, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    kw = {**KW, "nbytes": 8 << 20}
    plan(p, None, **kw, options={"align": 8, "cut": "phased"})
    counts = [k for k, _ in tried]
    last = counts[0]
    assert counts == [last, 64] and last > 64 * math.sqrt(2)
    # the next count sends more (at most last + 1 / last times as many: some flows are
    # one message whatever the count)
    assert tried[0][1] <= 2000 < tried[0][1] * (last + 1) / last


def _curve(a: float, b: float, most: int, guess: float = math.inf):
    """A count search on the curve ``1 + a / k + b k`` (seconds; the bound 1), ten messages
    per segment, from ``guess``: the counts simulated and the schedules kept."""
    from types import SimpleNamespace

    from hetcoll.planners.butterflypipe import phased_search

    counts: list[int] = []

    def cut(k):
        return [SimpleNamespace(transfers=10 * k, chunks=k)]

    def simulated(flows, k, above=None):
        counts.append(k)
        return SimpleNamespace(params={"segments": k, "estimate": 1 + a / k + b * k})

    return counts, phased_search(cut, simulated, most, 1.0, guess)


def test_the_count_search_walks_from_the_guess_to_the_least():
    """The curve is least at 64: from a guess of 20 the search runs 16, walks up while the
    time falls (32, 64) and skips 128, which the curve through 32 and 64 puts 25 % over
    64's time above the bound (:data:`~hetcoll.planners.butterflypipe.SKIP`: 10 %); the
    guess's count, 20, is not between 64's neighbours."""
    counts, out = _curve(4096.0, 1.0, 10**6, guess=20)
    assert counts == [16, 32, 64]
    assert min(out, key=lambda s: s.params["estimate"]).params["segments"] == 64


def test_the_count_search_walks_down_from_a_guess_past_the_least():
    """The same curve from a guess of 1 000: it runs 512, tries 1 024 (which rises), then
    walks down to 64 and skips 32 (the curve through 128 and 64 puts it 25 % above)."""
    counts, out = _curve(4096.0, 1.0, 10**6, guess=1000)
    assert counts == [512, 1024, 256, 128, 64]
    assert min(out, key=lambda s: s.params["estimate"]).params["segments"] == 64


def test_the_count_search_simulates_little_besides_the_budgets_count():
    """A curve still falling at the budget (1 000 segments), no guess: the first count
    simulated is the budget's, then the power of two below it (512) and no other."""
    counts, out = _curve(1000.0, 1e-4, 10_000)
    assert counts == [1000, 512]
    assert min(out, key=lambda s: s.params["estimate"]).params["segments"] == 1000


def test_one_count_where_the_budget_leaves_no_room_for_two():
    """The budget's count (5 segments) is under twice the first count (4): the search
    simulates that count alone, not 4 and then 5."""
    counts, out = _curve(1000.0, 1e-4, 50)
    assert counts == [5] and out[0].params["segments"] == 5


def test_no_even_cut_where_a_nic_has_time_to_spare(monkeypatch):
    """Eight NICs of 100/25/10 Gbit/s at 1 MiB (the 10 Gbit/s ones own no share and idle
    part of ``T*``): the phased cut, 1.094 ``T*``, over 1 % above the bound, is kept without
    simulating the even or kind cuts, which the phased one beats there (even 1.168 ``T*``,
    ``bench_star_baselines.py``)."""
    import hetcoll.simulator as simulator

    chains: list[str] = []
    real, real_within = simulator.simulate, simulator.simulate_within

    def spy(platform, schedule, model=None):
        chains.append(schedule.chain)
        return real(platform, schedule, model)

    def spy_within(platform, schedule, model, above):
        chains.append(schedule.chain)
        return real_within(platform, schedule, model, above)

    monkeypatch.setattr(simulator, "simulate", spy)
    monkeypatch.setattr(simulator, "simulate_within", spy_within)
    p = star_platform(8, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    m = (1 << 20) - (1 << 20) % 64
    s = plan(p, None, **KW, nbytes=m, options={"align": 8})
    assert set(chains) == {"peer"} and s.chain == "peer"
    assert 1.01 * t_star(p, m) < s.params["estimate"] < 1.1 * t_star(p, m)


def test_no_count_past_the_least_from_the_budgets():
    """The curve is least at 18, the budget 23 segments (under 16 times sqrt 2 = 22.6 the
    counts are 4, 8, 16, 23): from the budget's count the search walks down to 16, skips
    8 (the curve through 23 and 16 puts it 34 % over 16's time above the bound), then
    tries that curve's least, 18, between 16's neighbours, and keeps it."""
    counts, out = _curve(3240.0, 10.0, 230)
    assert counts == [23, 16, 18]
    assert min(out, key=lambda s: s.params["estimate"]).params["segments"] == 18


@pytest.mark.parametrize(
    "speeds, m, cut",
    [
        (("100Gbps", "25Gbps", "10Gbps"), 1 << 18, "owners"),
        (("25Gbps", "10Gbps"), 8 << 20, "phased"),
    ],
)
def test_the_kept_count_is_the_least_by_brute_force(monkeypatch, speeds, m, cut):
    """Brute force on stars of 8 NICs, the simulator's budget made 2 000 messages: from the
    predicted count and from guesses of 1, 6, 11 and 10^9, the count the search keeps takes
    no more time than any of the counts it walks (powers of two from 4 up to 1 / sqrt 2 of
    the budget's count, then that one or the guess's count below it:
    :func:`~hetcoll.planners.butterflypipe.ladder`) and the guess's count, each simulated
    to its end, and is within 4 % of every count's from 1 to the
    budget's (between the powers of two the phases fall otherwise: on 100/25/10 Gbit/s at
    256 KiB 5 segments take 1.245 ``T*``, 6 take 1.256, 4 take 1.283, 8 take 1.321)."""
    import hetcoll.planners.butterflypipe as bp

    monkeypatch.setattr(bp, "transfer_budget", lambda contention: 2000)
    seen = {}
    real, predicted = bp.phased_search, bp.predicted_count

    def spy(cut_, simulated, most, lower, guess=math.inf):
        seen.update(cut=cut_, simulated=simulated, most=most, guess=guess)
        return real(cut_, simulated, most, lower, guess)

    monkeypatch.setattr(bp, "phased_search", spy)
    p = star_platform(8, speeds, "5us")
    kept = []
    for guess in (None, 1.0, 6.0, 11.0, 1e9):
        monkeypatch.setattr(
            bp, "predicted_count", predicted if guess is None else lambda *a, g=guess: g
        )
        s = plan(p, None, **KW, nbytes=m, options={"align": 8, "cut": cut})
        kept.append((s, seen["guess"]))
    times = {}
    for k in range(1, 10**4):
        flows = seen["cut"](k)
        if sum(f.transfers for f in flows) > seen["most"]:
            break
        times[k] = seen["simulated"](flows, k, None).params["estimate"]
    top = max(times)
    assert len(bp.ladder(top)) >= 4
    for s, guess in kept:
        near = round(guess) if guess < top else top
        ladder = {*bp.ladder(top, guess), *([near] if near > 4 else [])}
        assert s.params["estimate"] == times[s.params["segments"]]
        assert s.params["estimate"] <= min(times[k] for k in ladder)
        assert s.params["estimate"] <= 1.04 * min(times.values())
