"""Link contention under the hockney model: exclusive (circuit) and shared (max-min fair).

Hand-built dumbbell: a1, a2 on s1; b1, b2 on s2; access links free (no latency, infinite
bandwidth), the core link s1 - s2 with latency L and 1024 bytes/s.  Powers of two keep the
expected times exact in floating point.
"""

from __future__ import annotations

import math
from itertools import pairwise
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _contention import without_blockers
from hetcoll import Flow, Link, Node, Platform, Schedule, Tree, get_model, plan, simulate
from hetcoll.errors import ModelError
from hetcoll.program import Chunk, Op, Program
from hetcoll.simulator import events, max_min_rates, simulate_program
from hetcoll.simulator.links import RouteBooks

IDS = ["a1", "a2", "s1", "s2", "b1", "b2"]


def dumbbell(latency=0.0, t_ini=None):
    t_ini = t_ini or {}
    nodes = tuple(Node(x, t_ini.get(x, 0.0)) for x in IDS)
    links = (
        Link("a1", "s1"),
        Link("a2", "s1"),
        Link("s1", "s2", latency, 1024.0),
        Link("s2", "b1"),
        Link("s2", "b2"),
    )
    return Platform(nodes, links, model="hockney")


def transfers(*flows):
    """Concurrent single messages ``(sender, receiver, bytes)``: a program, one chunk each."""
    ops: dict[str, list[Op]] = {x: [] for x in IDS}
    for c, (u, v, _) in enumerate(flows):
        ops[u].append(Op("send", v, c))
        ops[v].append(Op("recv", u, c))
    chunks = tuple(Chunk(c, 0, n) for c, (_, _, n) in enumerate(flows))
    initial = {u: frozenset({c}) for c, (u, _, _) in enumerate(flows)}
    return Program({x: tuple(o) for x, o in ops.items()}, chunks, initial)


def run(p, program, model):
    transfers, _ = simulate_program(get_model(model).bind(p), program)
    return transfers


SHARED = {"name": "hockney", "contention": "shared"}
EXCLUSIVE = {"name": "hockney", "contention": "exclusive"}


def arrivals(p, s, model):
    return {t.receiver: t.arrival for t in run(p, s, model)}


def test_two_equal_flows_on_one_link_take_twice_as_long_when_shared():
    p = dumbbell(latency=0.25)
    both = transfers(("a1", "b1", 1024), ("a2", "b2", 1024))
    # latency occupies nothing, then each gets half of 1024 B/s: 0.25 + 1024 / 512
    assert arrivals(p, both, SHARED) == {"b1": 2.25, "b2": 2.25}
    # exclusive: a1 (lower index) holds the link for 0.25 + 1; a2 waits, then the same
    assert arrivals(p, both, EXCLUSIVE) == {"b1": 1.25, "b2": 2.5}
    alone = transfers(("a1", "b1", 1024))
    assert arrivals(p, alone, SHARED) == arrivals(p, alone, EXCLUSIVE) == {"b1": 1.25}


def test_exclusive_is_the_default_and_shared_is_named_in_the_spec():
    p = dumbbell(latency=0.25)
    both = transfers(("a1", "b1", 1024), ("a2", "b2", 1024))
    assert arrivals(p, both, "hockney") == arrivals(p, both, EXCLUSIVE)
    assert get_model(SHARED).to_spec() == SHARED
    assert get_model(EXCLUSIVE).to_spec() == "hockney"
    tree = Schedule("multicast", "t", 8, (Flow(Tree("a1", {"a1": ("b1",)}), 8),))
    assert simulate(p, tree, SHARED).model == SHARED
    with pytest.raises(ModelError, match="contention must be 'exclusive' or 'shared'"):
        get_model({"name": "hockney", "contention": "fair"})


def test_opposite_directions_do_not_interfere():
    p = dumbbell(latency=0.25)
    s = transfers(("a1", "b1", 1024), ("b2", "a2", 1024))
    for model in (SHARED, EXCLUSIVE):
        assert arrivals(p, s, model) == {"b1": 1.25, "a2": 1.25}


def test_a_short_flow_that_ends_gives_its_bandwidth_to_the_other():
    p = dumbbell()
    s = transfers(("a1", "b1", 1024), ("a2", "b2", 512))
    # both at 512 B/s: a2's 512 bytes are in at 1; a1 has 512 left, alone at 1024 B/s
    assert arrivals(p, s, SHARED) == {"b2": 1.0, "b1": 1.5}
    assert arrivals(p, s, EXCLUSIVE) == {"b1": 1.0, "b2": 1.5}


def test_a_flow_that_joins_later_shares_from_then_on():
    # a2 spends 0.5 s in its own costs (no link): a1 runs alone for 0.5 s (512 bytes), then
    # both at 512 B/s until a1's last 512 bytes are in (1.5); a2 has 512 left, alone: 2.0
    p = dumbbell(t_ini={"a2": 0.5})
    s = transfers(("a1", "b1", 1024), ("a2", "b2", 1024))
    assert arrivals(p, s, SHARED) == {"b1": 1.5, "b2": 2.0}
    # exclusive holds the link from the start, node costs included: a2 starts at 1
    assert arrivals(p, s, EXCLUSIVE) == {"b1": 1.0, "b2": 2.5}


def test_shared_links_still_serialise_a_receivers_port():
    p = dumbbell(latency=0.25)
    s = transfers(("a1", "b1", 1024), ("a2", "b1", 1024))
    got = run(p, s, SHARED)
    # one-port: b1 receives one message at a time, so the flows never overlap
    assert [(t.sender, t.start, t.arrival) for t in got] == [
        ("a1", 0.0, 1.25),
        ("a2", 1.25, 2.5),
    ]
    assert got[1].blocked_on == "recv_port"
    assert got[1].blocked_by == 0
    assert got[1].sender_free == 2.5  # the sender is busy until the arrival


def test_exclusive_reports_the_link_a_transfer_waited_for():
    p = dumbbell(latency=0.25)
    got = run(p, transfers(("a1", "b1", 1024), ("a2", "b2", 1024)), EXCLUSIVE)
    second = got[1]
    assert (second.blocked_by, second.blocked_on, second.blocked_link) == (0, "link", ("s1", "s2"))
    assert second.to_dict()["blocked_link"] == ["s1", "s2"]
    assert got[0].blocked_by is None


@pytest.mark.parametrize("ports", ["bidirectional", "unidirectional"])
def test_on_a_matrix_platform_shared_equals_exclusive(ports):
    lat = np.array([[0, 1.0, 1.0], [1.0, 0, 1.0], [1.0, 1.0, 0]])
    bw = np.full((3, 3), 512.0)
    p = Platform((Node("a"), Node("b"), Node("c")), latency=lat, bandwidth=bw, model="hockney")
    s = Schedule.concurrent(
        [
            Schedule("multicast", "t", 1024, (Flow(Tree(u, {u: (v,)}), 1024),))
            for u, v in (("a", "b"), ("c", "a"))
        ]
    )
    ex = simulate(p, s, {"name": "hockney", "ports": ports})
    sh = simulate(p, s, {"name": "hockney", "ports": ports, "contention": "shared"})
    assert [t.arrival for t in sh.transfers] == [t.arrival for t in ex.transfers]
    assert ex.makespan == (3.0 if ports == "bidirectional" else 6.0)


@given(st.integers(2, 6), st.integers(1, 8))
def test_a_pipelined_chain_has_no_contention_so_shared_keeps_the_closed_form(n, segments):
    """(n - 2 + S) hop times (see test_simulator.py): each link carries one segment at a time."""
    seg = 1024
    nodes = tuple(Node(str(i)) for i in range(n))
    links = tuple(Link(str(i), str(i + 1), 0.125, 4096.0) for i in range(n - 1))
    p = Platform(nodes, links, model=SHARED)
    tree = Tree.from_edges("0", [(str(i), str(i + 1)) for i in range(n - 1)])
    s = Schedule("bcast", "t", seg * segments, (Flow(tree, seg * segments, segment_size=seg),))
    hop = 0.125 + seg / 4096.0
    assert simulate(p, s).makespan == (n - 2 + segments) * hop


# -- max-min fairness ----------------------------------------------------------------------


@st.composite
def sharing_problems(draw):
    links = draw(st.integers(1, 5))
    capacity = np.array(
        draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 8.0]), min_size=links, max_size=links))
    )
    flows = draw(st.integers(1, 6))
    paths = [
        np.array(sorted(draw(st.sets(st.integers(0, links - 1), max_size=links))), dtype=np.int64)
        for _ in range(flows)
    ]
    caps = np.array(
        draw(st.lists(st.sampled_from([math.inf, 0.5, 4.0]), min_size=flows, max_size=flows))
    )
    return paths, caps, capacity


@given(sharing_problems())
def test_max_min_rates_are_feasible_and_every_flow_has_a_bottleneck(problem):
    """The definition: no link over capacity, and each flow is at its own cap or crosses a
    full link on which no flow gets more than it does (Bertsekas & Gallager, Sec. 6.5.2)."""
    paths, caps, capacity = problem
    rate = max_min_rates(paths, caps, capacity)
    load = np.zeros(len(capacity))
    for path, r in zip(paths, rate, strict=True):
        load[path] += r if math.isfinite(r) else 0.0
    assert (load <= capacity * (1 + 1e-12)).all()
    for i, path in enumerate(paths):
        if not len(path):
            assert rate[i] == caps[i]
            continue
        if rate[i] == caps[i]:
            continue
        on = [
            link
            for link in path.tolist()
            if load[link] >= capacity[link] * (1 - 1e-12)
            and all(rate[j] <= rate[i] * (1 + 1e-12) for j, q in enumerate(paths) if link in q)
        ]
        assert on, (i, rate, load)


# -- exclusive contention: invariants on random routed platforms ----------------------------


@st.composite
def routed_cases(draw):
    """A random connected link platform, a random tree over it, segments, a port model."""
    n = draw(st.integers(3, 9))
    pairs = [(draw(st.integers(0, i - 1)), i) for i in range(1, n)]
    seen = {frozenset(x) for x in pairs}
    for a, b in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n)):
        if a != b and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            pairs.append((a, b))
    links = tuple(
        Link(
            str(a),
            str(b),
            draw(st.sampled_from([0.0, 0.25, 0.5])),
            1024.0 * draw(st.integers(1, 4)),
        )
        for a, b in pairs
    )
    p = Platform(tuple(Node(str(i)) for i in range(n)), links, model="hockney")
    order = draw(st.permutations([str(i) for i in range(1, n)]))
    edges, placed = [], ["0"]
    for x in order:
        edges.append((draw(st.sampled_from(placed)), x))
        placed.append(x)
    nbytes = 1024 * draw(st.integers(0, 4))
    seg = draw(st.sampled_from([None, 512, 1024]))
    s = Schedule(
        "bcast", "t", nbytes, (Flow(Tree.from_edges("0", edges), nbytes, segment_size=seg),)
    )
    ports = draw(st.sampled_from(["bidirectional", "unidirectional"]))
    return p, s, {"name": "hockney", "ports": ports}


def _overlap(a, b):
    """Both take time and their times overlap (a transfer of no duration holds nothing)."""
    return (
        a.start < a.arrival and b.start < b.arrival and a.start < b.arrival and b.start < a.arrival
    )


def _assert_exclusive_and_explained(p, model, ts):
    """No two transfers overlap on a directed link or a port, and every transfer's blocker
    is a transfer that really held what it names, up to this one's start."""
    routes = p.routes
    path = {k: set(routes.path(p.index(t.sender), p.index(t.receiver))) for k, t in enumerate(ts)}
    resource_of = {}
    for i, lk in enumerate(p.links):
        resource_of[(lk.u, lk.v)], resource_of[(lk.v, lk.u)] = 2 * i, 2 * i + 1
    uni = model["ports"] == "unidirectional"
    for i, a in enumerate(ts):
        for j in range(i + 1, len(ts)):
            b = ts[j]
            if not _overlap(a, b):
                continue
            assert not (path[i] & path[j]), (a, b)  # a directed link carries one at a time
            assert a.receiver != b.receiver, (a, b)  # one receive port
            assert a.sender != b.sender, (a, b)  # one send port
            if uni:
                assert {a.sender, a.receiver}.isdisjoint({b.sender, b.receiver}), (a, b)
    for k, t in enumerate(ts):
        if t.blocked_by is None:
            continue
        b = ts[t.blocked_by]
        assert t.blocked_by < k or b.start <= t.start
        if t.blocked_on == "dependency":
            assert b.receiver == t.sender and b.arrival == t.start
        elif t.blocked_on == "send_port":
            assert t.sender in (b.sender, b.receiver) and t.start in (b.sender_free, b.arrival)
        elif t.blocked_on == "recv_port":
            assert t.receiver in (b.receiver, b.sender) and b.arrival == t.start
        elif t.blocked_on == "link":
            resource = resource_of[t.blocked_link]
            assert resource in path[k] and resource in path[t.blocked_by]
            assert b.arrival == t.start


@given(routed_cases())
def test_exclusive_transfers_never_share_a_link_or_port_and_say_what_held_them(case):
    p, s, model = case
    ts = simulate(p, s, model).transfers
    _assert_exclusive_and_explained(p, model, ts)
    # each sender issues its sends in program order (its children, segment by segment)
    for sender, kids in s.tree.children.items():
        issued = [t.receiver for t in ts if t.sender == sender]
        segments = len(s.flows[0].segments())
        assert issued == [c for _ in range(segments) for c in kids]


@given(routed_cases(), st.integers(1, 3))
def test_bookings_of_long_routes_equal_the_per_link_lists(case, flows):
    """Routes longer than ``SHORT_ROUTE`` links are booked by transfer (``RouteBooks``);
    forced on every route, the prediction is the per-link lists' bit for bit (every time,
    with ties on purpose: a few distinct latencies) and every blocker held what it names.
    Which of several bookings ending at the same instant is named may differ: the
    per-link lists name the last one their passes over the route met."""
    p, s, model = case
    f = s.flows[0]
    if flows > 1 and s.nbytes >= flows:  # several flows at once: more contention, gaps
        cut = [s.nbytes * i // flows for i in range(flows + 1)]
        parts = tuple(
            Flow(f.tree, b - a, offset=a, segment_size=f.segment_size) for a, b in pairwise(cut)
        )
        s = Schedule("bcast", "t", s.nbytes, parts)
    expected = simulate(p, s, model)
    with patch.object(events, "SHORT_ROUTE", 0):
        got = simulate(p, s, model)
    assert without_blockers(got) == without_blockers(expected)
    _assert_exclusive_and_explained(p, model, got.transfers)
    assert [t.blocked_by is None for t in got.transfers] == [
        t.blocked_by is None for t in expected.transfers
    ]


@st.composite
def booking_requests(draw):
    """Links, routes over them (stretches of a line in either direction, as on a line of
    nodes, and scattered links; spanning several 64-link words, overlapping a lot) and
    requests ``(route, s, d)`` in order of ``s``, on a grid of quarters: many ties, and
    bookings that end where others start."""
    n_links = draw(st.sampled_from([3, 70, 200]))
    routes = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            a, b = sorted(draw(st.lists(st.integers(0, n_links), min_size=2, max_size=2)))
            path = list(range(a, max(b, a + 1)))[:: draw(st.sampled_from([1, -1]))]
        else:
            path = draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=12, unique=True))
        routes.append(np.array(path, dtype=np.int64) % n_links)
    steps = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4)), min_size=1, max_size=40))
    requests, s = [], 0.0
    for gap, d in steps:
        s += gap / 4
        requests.append((draw(st.integers(0, len(routes) - 1)), s, d / 4))
    return n_links, routes, requests, draw(st.sampled_from([1, 2, 256]))


@settings(max_examples=300)
@given(booking_requests())
def test_route_books_find_the_earliest_start_free_on_every_link(problem):
    """``RouteBooks.earliest`` against brute force over every booking of every link: the
    earliest ``t >= s`` with no booking on the route overlapping ``[t, t + d)`` (such a
    ``t`` is ``s`` or a booking's end), and its blocker: the first booked transfer ending
    at ``t`` on the route, on the first link of the route it holds."""
    n_links, routes, requests, capacity = problem
    books = RouteBooks(n_links, capacity)
    booked = []  # (start, end, links)
    for idx, (r, s, d) in enumerate(requests):
        path = routes[r]
        route = books.route(r, path)
        on_route = [(a, b, k) for k, (a, b, links) in enumerate(booked) if links & set(path)]

        def free(t, on_route=on_route, d=d):
            return all(b <= t or a >= t + d for a, b, _ in on_route)

        expected = min(t for t in [s] + [b for _, b, _ in on_route if b > s] if free(t))
        t, hit = books.earliest(route, s, d)
        assert t == expected
        if t == s:
            assert hit is None
        else:
            k, link = hit
            assert k == min(k for _, b, k in on_route if b == t)
            held = booked[k][2]
            assert link == next(x for x in path.tolist() if x in held)
        books.book(route, t, t + d, idx, s)
        booked.append((t, t + d, set(path.tolist())))


@settings(max_examples=25, deadline=None)
@given(
    st.integers(130, 160),
    st.integers(0, 2**16),
    st.sampled_from(["flat", "binomial", "fnf"]),
    st.sampled_from([None, 256]),
)
def test_a_line_longer_than_short_routes_times_as_the_per_link_lists(n, seed, method, seg):
    """A line of more than ``SHORT_ROUTE`` links books by transfer by itself; its times
    equal the per-link lists' (forced by a ``SHORT_ROUTE`` no route reaches)."""
    rng = np.random.default_rng(seed)
    links = tuple(
        Link(str(i), str(i + 1), float(rng.choice([1e-6, 2e-6, 5e-6])), float(x))
        for i, x in enumerate(rng.choice([1.25e8, 1.25e9], n - 1))
    )
    p = Platform(tuple(Node(str(i)) for i in range(n)), links, model="hockney")
    s = plan(p, str(int(rng.integers(n))), method=method, nbytes=1024, segment_size=seg)
    got = simulate(p, s)
    longest = max(len(p.routes.path(p.index(t.sender), p.index(t.receiver))) for t in got.transfers)
    assume(longest > 64)
    with patch.object(events, "SHORT_ROUTE", 10**9):
        expected = simulate(p, s)
    assert without_blockers(got) == without_blockers(expected)
