"""The members' bound's ``latency_cut`` (allbounds.latency_cut): a cut's bytes cross it no
earlier than one hop's latency after the start, so ``T >= L(S) + moved / B+(S)`` under
``hockney``.  Reached exactly by two hosts, one per site, exchanging in one message each
way; never above any registered planner's simulated time on random small multi-site
platforms (stars and link-graph sites, shared or exclusive links)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import simulate
from hetcoll.allbounds import latency_cut, members_bound
from hetcoll.compare import plan_request
from hetcoll.errors import HetcollError
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners import REGISTRY
from hetcoll.platform import Link, Node, Platform

#: one WAN hop between two hosts of the platforms below: two NICs' 5 us, the WAN's 1 ms
HOP = 1e-3 + 10e-6
#: the WAN's rate, bytes per second (5 Gbit/s)
WAN = 5e9 / 8
OPS = ("allgather", "reduce_scatter", "allreduce")


def two_sites(per_site, contention="shared", speeds=("25Gbps", "10Gbps")):
    site = star_platform(per_site, speeds, "5us")
    return multisite_platform(
        {"a": site, "b": site},
        [("a", "b", "1ms", "5Gbps")],
        model={"name": "hockney", "contention": contention},
    )


@pytest.mark.parametrize("contention", ["shared", "exclusive"])
@pytest.mark.parametrize(("op", "algo"), [("allgather", "sites"), ("allreduce", "blind")])
def test_one_host_per_site_reaches_it(contention, op, algo):
    """Two hosts, one per site: an allgather sends each block over the WAN in one
    message, recursive doubling's allreduce exchanges the vectors in one: both take one
    hop and the cut's bytes at the WAN's rate, the bound exactly (the cut and one byte's
    reach, the bounds before it, are each below by a hop or by the bytes)."""
    p = two_sites(1, contention, ("10Gbps",))
    members = hosts(p)
    block = 1 << 20
    whole = 2 * block if op == "allgather" else block
    moved = block  # an allgather's one block, an allreduce's whole vector
    sched = plan_request(p, op, algo, members=members, nbytes=block)
    found = members_bound(p, op, whole, members)
    assert found.parts["latency_cut"] == pytest.approx(HOP + moved / WAN, rel=1e-12)
    assert found.lower_bound == found.parts["latency_cut"]
    assert simulate(p, sched).makespan == pytest.approx(found.lower_bound, rel=1e-12)
    assert found.parts["cut"] == pytest.approx(moved / WAN, rel=1e-12)
    assert found.parts["reach"] < found.lower_bound - 0.9 * moved / WAN


def test_two_stars_of_four():
    """Two 4-host stars: the WAN cut's bytes (half an allgather's or reduce-scatter's
    vector, an allreduce's whole vector) after one hop, at least one host's start-up
    included (``t_ini`` 20 us on every host of site a)."""
    site = star_platform(4, ("25Gbps", "10Gbps"), "5us")
    slow = Platform(
        tuple(dataclasses.replace(n, t_ini=20e-6) for n in site.nodes),
        site.links,
        model=site.model,
    )
    p = multisite_platform({"a": slow, "b": site}, [("a", "b", "1ms", "5Gbps")])
    m = 64 << 20
    for op, moved in (("allgather", m / 2), ("reduce_scatter", m / 2), ("allreduce", m)):
        got = members_bound(p, op, m, hosts(p)).parts["latency_cut"]
        assert got == pytest.approx(HOP + 20e-6 + moved / WAN, rel=1e-12), op
        # from b's side no start-up: the smaller bound, not taken
        assert got > HOP + moved / WAN


def test_no_side_no_latency_and_inf_without_a_crossing():
    p = two_sites(1)
    members = hosts(p)
    assert latency_cut(p, members, []) == 0.0
    assert latency_cut(p, members, [({"a/0", "a/switch"}, 0.0, 1.0)]) == 0.0
    # a side holding every host: no member's route leaves it, yet bytes must
    assert latency_cut(p, members, [(set(p.ids), 1.0, 1.0)]) == float("inf")


def _link_site(k, rng):
    """A site of ``k`` hosts joined in a chain of links (a link graph, no switch)."""
    nodes = tuple(Node(f"h{i}") for i in range(k))
    links = tuple(
        Link(f"h{i}", f"h{i + 1}", rng.choice([1e-6, 5e-6]), rng.choice([1.25e9, 3.125e9]))
        for i in range(k - 1)
    )
    return Platform(nodes, links)


@settings(max_examples=30, deadline=None)
@given(
    counts=st.lists(st.integers(1, 3), min_size=2, max_size=3),
    chains=st.lists(st.booleans(), min_size=3, max_size=3),
    op=st.sampled_from(OPS),
    block=st.sampled_from([8, 1000, 64 << 10]),
    wan=st.tuples(st.sampled_from(["10us", "1ms"]), st.sampled_from(["1Gbps", "5Gbps"])),
    contention=st.sampled_from(["shared", "exclusive"]),
    seed=st.integers(0, 3),
)
def test_never_above_a_planners_simulated_time(counts, chains, op, block, wan, contention, seed):
    """Sites of 1-3 hosts (stars or chains of links), two or three of them joined by WAN
    links in a chain: every registered planner of the operation that plans among the
    hosts simulates at least the members' bound with its latency cut."""
    import random

    rng = random.Random(seed)
    names = "abc"[: len(counts)]
    parts = {
        s: _link_site(c, rng) if chain and c > 1 else star_platform(c, ("25Gbps", "10Gbps"), "5us")
        for s, c, chain in zip(names, counts, chains, strict=False)
    }
    links = [(names[i], names[i + 1], *wan) for i in range(len(names) - 1)]
    p = multisite_platform(parts, links, model={"name": "hockney", "contention": contention})
    members = hosts(p)
    if len(members) < 2:
        return
    whole = block if op == "allreduce" else block * len(members)
    bound = members_bound(p, op, whole, members).lower_bound
    planned = 0
    for algo, info in REGISTRY.items():
        if op not in info.collectives:
            continue
        try:
            sched = plan_request(p, op, algo, members=members, nbytes=block)
        except HetcollError:
            continue  # plans on every node, or not on these hosts
        planned += 1
        assert simulate(p, sched).makespan >= bound * (1 - 1e-9), algo
    assert planned


def test_a_size_curve_takes_the_bytes_at_its_least_scale():
    """Exclusive links with a size curve whose large messages cost half: the bytes' term
    halved (a message's effective size is at least half its bytes), never above the
    sites plan's simulated time; the hop's latency is not a per-byte cost."""
    p = two_sites(1, "exclusive", ("10Gbps",))
    curved = dataclasses.replace(p, size_curve=[[0, 1.0], [1 << 16, 0.5]])
    members = hosts(curved)
    block = 1 << 20
    got = members_bound(curved, "allgather", 2 * block, members).parts["latency_cut"]
    assert got == pytest.approx(HOP + 0.5 * block / WAN, rel=1e-12)
    sched = plan_request(curved, "allgather", "sites", members=members, nbytes=block)
    assert simulate(curved, sched).makespan >= got
