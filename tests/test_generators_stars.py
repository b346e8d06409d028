"""Star platforms with a few NIC speeds and multi-site platforms (generators/stars.py)."""

from __future__ import annotations

import pytest

from hetcoll.errors import HetcollError
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.platform import Platform
from hetcoll.program import Chunk, Op, Program
from hetcoll.simulator import simulate_program

GBPS = 1e9 / 8


def test_star_splits_the_speeds_evenly_in_rank_order():
    p = star_platform(8, ("25Gbps", "10Gbps", "1Gbps"), "2us")
    assert [n.bandwidth for n in p.nodes] == [25 * GBPS] * 3 + [10 * GBPS] * 3 + [GBPS] * 2
    assert {n.latency for n in p.nodes} == {2e-6} and p.model.name == "nic"


def test_a_seed_shuffles_the_speeds_and_keeps_the_counts():
    a, b = (star_platform(9, ("25Gbps", "10Gbps"), seed=3) for _ in range(2))
    assert a.to_dict() == b.to_dict()
    speeds = [n.bandwidth for n in a.nodes]
    assert sorted(speeds) == [10 * GBPS] * 4 + [25 * GBPS] * 5
    assert speeds != sorted(speeds, reverse=True)


@pytest.mark.parametrize(
    ("args", "needle"),
    [((0,), "n"), ((4, ()), "speeds"), ((4, "10Gbps"), "speeds"), ((4, ("-1Gbps",)), "speeds[0]")],
)
def test_bad_star_arguments_are_refused(args, needle):
    with pytest.raises(HetcollError, match=needle.replace("[", r"\[")):
        star_platform(*args)


def two_sites():
    a = star_platform(3, ("10Gbps",), "1us")
    line = Platform.from_dict(
        {
            "model": "hockney",
            "nodes": [{"id": "x"}, {"id": "y"}],
            "links": [{"u": "x", "v": "y", "latency": "3us", "bandwidth": "40Gbps"}],
        }
    )
    return multisite_platform({"a": a, "b": line}, [("a", "b", "5ms", "1Gbps")])


def test_multisite_routes_through_the_switch_and_the_wan():
    p = two_sites()
    assert hosts(p) == ["a/0", "a/1", "a/2", "b/x", "b/y"]
    lat, bw = p.routes.pair(p.index("a/0"), p.index("b/y"))
    # NIC (1us), WAN to the gateway b/x (5 ms), the site's link (3us); the WAN's 1 Gbps
    assert lat == pytest.approx(1e-6 + 5e-3 + 3e-6) and bw == GBPS
    lat, bw = p.routes.pair(p.index("a/0"), p.index("a/2"))
    assert lat == pytest.approx(2e-6) and bw == 10 * GBPS


def test_two_flows_across_the_wan_share_it():
    """Shared contention: a/0 -> b/x (latency 5.001 ms) and a/1 -> b/y (3 us more, the
    site's link) cross the 1 Gbps WAN W.  The first flows alone for 3 us, then both at
    W / 2: the first ends at 5.001 ms + 2 n / W - 3 us, the second 3 us of W later."""
    p = two_sites()
    n = 10**6
    chunks = (Chunk(0, 0, n), Chunk(0, n, n))
    ops = {
        "a/0": (Op("send", "b/x", 0),),
        "a/1": (Op("send", "b/y", 1),),
        "b/x": (Op("recv", "a/0", 0),),
        "b/y": (Op("recv", "a/1", 1),),
    }
    initial = {"a/0": frozenset({0}), "a/1": frozenset({1}), "b/x": frozenset(), "b/y": frozenset()}
    _, done = simulate_program(p.model.bind(p), Program(ops, chunks, initial))
    assert done["b/x"] == pytest.approx([1e-6 + 5e-3 + 2 * n / GBPS - 3e-6], rel=1e-12)
    assert done["b/y"] == pytest.approx([1e-6 + 5e-3 + 2 * n / GBPS], rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"sites": {}, "wan": []}, "sites"),
        ({"sites": {"a/b": None}, "wan": []}, "site name"),
        ({"sites": {"a": 3}, "wan": []}, "must be a Platform"),
        ({"wan": [("a", "c", "1ms", "1Gbps")]}, "unknown site 'c'"),
        ({"wan": [("a", "b", "-1ms", "1Gbps")]}, "wan[0].latency"),
        ({"wan": [("a", "b")]}, "wan[0]"),
        ({"wan": [("a", "b", "1ms", "1Gbps")], "gateways": {"b": "z"}}, "unknown node 'z'"),
        ({"wan": [("a", "b", "1ms", "1Gbps")], "gateways": {"a": "0"}}, "gateway is its switch"),
        ({"wan": []}, "disconnected"),
    ],
)
def test_bad_multisite_arguments_are_refused_in_one_line(kwargs, needle):
    a = star_platform(2, ("10Gbps",))
    b = Platform.from_dict(
        {"model": "hockney", "nodes": [{"id": "x"}, {"id": "y"}], "links": [{"u": "x", "v": "y"}]}
    )
    args = {"sites": {"a": a, "b": b}, **kwargs}
    with pytest.raises(HetcollError) as info:
        multisite_platform(args.pop("sites"), **args)
    assert needle in str(info.value) and "\n" not in str(info.value)
