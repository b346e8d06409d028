"""The planner ``sites`` (planners/sites.py): allgather, reduce-scatter and allreduce among
a multi-site platform's hosts: the WAN-bound pipeline's closed form, its trees, the WAN
crossed once per byte and direction, never under the members' bound, chosen by ``auto``
where it is the fastest, and the data bit for bit under MPI (mpi_programs/sites.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import simulate
from hetcoll.allbounds import members_bound
from hetcoll.errors import PlannerError
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners import REGISTRY, plan
from hetcoll.planners.sites import site_groups, site_tree, sites, wan_senders
from hetcoll.planners.sitesorder import timetable
from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "sites.py"
#: a WAN hop's latency on the platforms below: the two NICs' 5 us and the WAN's 1 ms
HOP = 1e-3 + 10e-6
#: the WAN's rate, bytes per second (5 Gbit/s)
WAN = 5e9 / 8


def two_sites(per_site: int, speeds=("25Gbps", "10Gbps")):
    site = star_platform(per_site, speeds, "5us")
    return multisite_platform({"a": site, "b": site}, [("a", "b", "1ms", "5Gbps")])


@pytest.mark.parametrize(
    ("collective", "messages"), [("allgather", 1), ("reduce_scatter", 1), ("allreduce", 2)]
)
def test_one_host_per_site_is_the_wan_bound_pipeline(collective, messages):
    """One host per site: every byte crosses the WAN once per direction (twice for an
    allreduce: its partial sum, then its result), each of the ``k`` segments holding the
    one-port sender for the hop's latency and its bytes at the WAN's rate: ``k (HOP + s /
    W)`` per crossing, the allreduce's reduce and broadcast segments back to back."""
    p = two_sites(1, ("10Gbps",))
    size, seg = 1 << 20, 1 << 16
    sched = sites(p, nbytes=size, collective=collective, segment_size=seg)
    k = size // seg // (2 if collective == "allreduce" else 1)
    expected = messages * k * (HOP + seg / WAN)
    assert simulate(p, sched).makespan == pytest.approx(expected, rel=1e-12)
    assert sched.params["segment_size"] == seg
    # the allreduce's time is the WAN cut M / W plus a hop's latency per segment sent
    if collective == "allreduce":
        assert expected == pytest.approx(size / WAN + 2 * k * HOP, rel=1e-12)


def test_trees_of_two_stars():
    """Site a: leader a/0 (the faster NIC), receiver a/1; site b alike.  A bcast flow: the
    root's leader crosses the WAN first, the receiver fans out; the leader's own block
    goes to its next member, which passes it on.  A reduce flow: the other site's leader
    crosses to the root's receiver."""
    p = two_sites(2)
    assert site_groups(p, hosts(p)) == [["a/0", "a/1"], ["b/0", "b/1"]]
    ag = sites(p, nbytes=1000, segment_size=1000, fanout=3)
    assert [dict(f.tree.children) for f in ag.flows[:2]] == [
        {"a/0": ("b/1", "a/1"), "b/1": ("b/0",)},
        {"a/1": ("a/0",), "a/0": ("b/1",), "b/1": ("b/0",)},
    ]
    rs = sites(p, nbytes=1000, collective="reduce_scatter", segment_size=1000, fanout=3)
    assert [dict(f.tree.children) for f in rs.flows[:2]] == [
        {"a/0": ("a/1",), "a/1": ("b/0",), "b/0": ("b/1",)},
        {"a/1": ("b/0", "a/0"), "b/0": ("b/1",)},
    ]


def test_the_wan_stream_lands_on_the_receivers_in_turn():
    """Two 4-host stars: the member at place i of its site crosses to receiver (i + 1) mod
    3 of the other's (its members but the leader), one tree per member and direction."""
    p = two_sites(4)
    sched = sites(p, nbytes=1 << 10, segment_size=1 << 10, fanout=3, senders=1)
    assert len(sched.flows) == 8
    site = {n.id: n.site for n in p.nodes}
    crossing = {
        f.tree.root: [(u, v) for u, kids in f.tree.children.items() for v in kids
                      if site[u] != site[v]]
        for f in sched.flows
    }  # fmt: skip
    assert crossing == {
        "a/0": [("a/0", "b/2")],
        "a/1": [("a/0", "b/3")],
        "a/2": [("a/0", "b/1")],
        "a/3": [("a/0", "b/2")],
        "b/0": [("b/0", "a/2")],
        "b/1": [("b/0", "a/3")],
        "b/2": [("b/0", "a/1")],
        "b/3": [("b/0", "a/2")],
    }


def test_fanout_one_makes_chains_beside_the_leaders():
    """Fanout 1 on two 4-host stars: member a/1's block goes to the leader a/0 first (a
    leaf, which crosses the WAN to b/3) and down the chain a/2, a/3; b/3 passes it to its
    leader b/0 and down the chain b/1, b/2.  Reduced, the chains run into the leader b/0,
    which crosses to a/3, the receiver of a/1's block.  The reduce-scatter keeps those
    trees, or the allgather's run backwards in a timetable where that is faster (here, in
    the play-out with the WAN: 4.111 ms against 4.132 ms)."""
    p = two_sites(4)
    ag = sites(p, nbytes=1000, segment_size=1000, fanout=1, senders=1)
    assert dict(ag.flows[1].tree.children) == {
        "a/1": ("a/0", "a/2"),
        "a/2": ("a/3",),
        "a/0": ("b/3",),
        "b/3": ("b/0", "b/1"),
        "b/1": ("b/2",),
    }
    chains = {
        "a/1": ("a/0", "a/2"),
        "a/2": ("a/3",),
        "a/3": ("b/0",),
        "b/0": ("b/1",),
        "b/1": ("b/2",),
        "b/2": ("b/3",),
    }
    assert dict(site_tree(site_groups(p, hosts(p)), "a/1", "reduce", 1).children) == chains
    rs = sites(p, nbytes=1000, collective="reduce_scatter", segment_size=1000, fanout=1,
               senders=1)  # fmt: skip
    assert dict(rs.flows[1].tree.children) in (chains, dict(ag.flows[1].tree.children))
    assert simulate(p, rs).makespan < 4.1323e-3
    assert ag.params["fanout"] == rs.params["fanout"] == 1


def test_chains_win_on_larger_sites_and_are_chosen():
    """Two 8-host stars, an 8 MiB allgather, the leaders crossing the WAN: a star-like
    tree's centre sends each block to up to three members, a chain's members each once;
    the chains are faster, and the planner left to choose the fanout takes them."""
    p = two_sites(8)
    size = (8 << 20) // 16
    three = sites(p, nbytes=size, fanout=3, senders=1)
    one = sites(p, nbytes=size, fanout=1, senders=1)
    assert one.params["estimate"] < 0.8 * three.params["estimate"]
    chosen = sites(p, nbytes=size, senders=1)
    assert chosen.params["fanout"] == 1 and chosen == one


def test_refuses_members_in_one_site_or_without_a_site():
    p = two_sites(2)
    with pytest.raises(PlannerError, match="at least two sites"):
        sites(p, members=["a/0", "a/1"], nbytes=100)
    with pytest.raises(PlannerError, match="has no site"):
        sites(p, members=["a/0", "a/switch", "b/0"], nbytes=100)
    with pytest.raises(PlannerError, match="at least two sites"):
        sites(star_platform(4), nbytes=100)  # a star: no sites
    with pytest.raises(PlannerError, match="not a bcast"):
        sites(p, nbytes=100, collective="bcast")


def _wan_bytes(platform, sched):
    """Bytes sent from one site to another, per ordered pair of sites (simulated)."""
    site = {n.id: n.site for n in platform.nodes}
    out: dict[tuple[str, str], int] = {}
    for t in simulate(platform, sched).transfers:
        a, b = site[t.sender], site[t.receiver]
        if a != b:
            out[(a, b)] = out.get((a, b), 0) + t.nbytes
    return out


@settings(max_examples=25, deadline=None)
@given(
    counts=st.lists(st.integers(1, 3), min_size=2, max_size=3),
    collective=st.sampled_from(["allgather", "reduce_scatter", "allreduce"]),
    block=st.integers(0, 5000),
    seg=st.sampled_from([None, 512, 2048]),
    speeds=st.sampled_from([("10Gbps",), ("25Gbps", "10Gbps"), ("10Gbps", "40Gbps")]),
)
def test_properties_on_random_multisite_platforms(counts, collective, block, seg, speeds):
    """Sites of 1-3 hosts, two or three of them (a chain of WAN links): a valid per-root
    schedule (it lowers and simulates), the same on a second call, never faster than the
    members' bound, and every site sends each other site exactly the bytes it must: an
    allgather's or reduce-scatter's each of its members' blocks (their partial sums),
    an allreduce's both, once."""
    names = "abc"[: len(counts)]
    parts = {s: star_platform(c, speeds, "5us") for s, c in zip(names, counts, strict=True)}
    wan = [(names[i], names[i + 1], "1ms", "5Gbps") for i in range(len(names) - 1)]
    p = multisite_platform(parts, wan)
    members = hosts(p)
    size = block
    sched = sites(p, nbytes=size, collective=collective, segment_size=seg)
    assert sched == sites(p, nbytes=size, collective=collective, segment_size=seg)
    run = simulate(p, sched)
    n = len(members)
    whole = size if collective == "allreduce" else size * n
    op = "allreduce" if collective == "allreduce" else "allgather"
    if whole:
        assert run.makespan >= members_bound(p, op, whole, members).lower_bound * (1 - 1e-9)
    if collective == "allreduce" and not all(f.nbytes for f in sched.flows):
        with pytest.raises(PlannerError, match="empty"):
            timetable(p, sched)
    else:  # every transfer once, in an order the simulator runs
        timed = timetable(p, sched)
        assert timed.order is not None and timed == timetable(p, sched)
        if whole:
            bound = members_bound(p, op, whole, members).lower_bound
            assert simulate(p, timed).makespan >= bound * (1 - 1e-9)
        assert _wan_bytes(p, timed) == _wan_bytes(p, sched)
    moved = _wan_bytes(p, sched)
    for a in names:
        for b in names:
            if a == b:
                continue
            if collective == "allgather":
                want = counts[names.index(a)] * size  # a's blocks, once
            elif collective == "reduce_scatter":
                want = counts[names.index(b)] * size  # a's partial sums of b's blocks
            else:
                shares = _owned(sched)
                want = sum(v for m, v in shares.items() if m.startswith(f"{b}/"))
                want += sum(v for m, v in shares.items() if m.startswith(f"{a}/"))
            assert moved.get((a, b), 0) == want, (a, b)


def test_a_timetable_brings_the_allgather_toward_the_wan_cut():
    """Two 4-host stars, a 256 MiB allgather: in its trees' order the plan takes 1.54x the
    WAN cut (senders wait for busy receivers holding their port); the play-out's
    timetable reserves the receivers' ports and takes under 1.4x (1.48x when the play-out
    booked a busy receiver ahead, its sender idle meanwhile): chosen, and predicted as
    simulated."""
    p = two_sites(4)
    size = 256 << 20
    sched = sites(p, nbytes=size // 8)
    bound = members_bound(p, "allgather", size, hosts(p)).lower_bound
    assert sched.params["timetable"] and sched.order is not None
    assert sched.params["estimate"] == simulate(p, sched).makespan < 1.4 * bound
    plain = simulate(p, dataclasses.replace(sched, order=None)).makespan
    assert plain > sched.params["estimate"]


def test_half_segments_at_the_streams_ends_at_64mib():
    """Two 4-host stars, a 64 MiB allgather: in the best one size (4 MiB, chains, one
    sender) 1.481x the members' bound; with each site's last member's blocks in 2 MiB
    segments 1.450x (a shorter drain): chosen, and predicted as simulated."""
    p = two_sites(4)
    size = 64 << 20
    s = sites(p, nbytes=size // 8)
    one = sites(p, nbytes=size // 8, segment_size=4 << 20, fanout=1, senders=1)
    bound = members_bound(p, "allgather", size, hosts(p)).lower_bound
    last = {"a/3", "b/3"}
    assert {(f.tree.root in last, f.segment_size) for f in s.flows} == {
        (True, 2 << 20),
        (False, 4 << 20),
    }
    assert s.params["estimate"] == simulate(p, s).makespan < 1.46 * bound
    assert one.params["estimate"] > 1.47 * bound
    assert s == sites(p, nbytes=size // 8, segment_size=4 << 20, fanout=1, senders=1, ends=1)


def test_the_timetable_waits_for_a_busy_receiver_rather_than_booking_it():
    """Two 4-host stars, a 4 MiB allgather in chains and 1 MiB segments: the play-out
    that starts a transfer only once both its ports are free (``wait="all"``) times it at
    1.78x the WAN cut; booking the busy receiver ahead (``"busiest"``) leaves the sender's
    port idle until then: 2.45x."""
    from hetcoll.planners.forestorder import per_root_order
    from hetcoll.planners.sitesorder import RouteCosts

    p = two_sites(4)
    size = 4 << 20
    plain = sites(p, nbytes=size, segment_size=size // 4, fanout=1)
    plain = dataclasses.replace(plain, order=None)
    cut = members_bound(p, "allgather", size * 8, hosts(p)).parts["cut"]
    times = {}
    for wait in ("all", "busiest"):
        played = per_root_order(p, plain.flows, None, RouteCosts(p), wait=wait)
        times[wait] = simulate(p, dataclasses.replace(plain, order=played.order)).makespan
    assert simulate(p, timetable(p, plain)).makespan == times["all"]
    assert times["all"] < 1.8 * cut < 2.4 * cut < times["busiest"]


@pytest.mark.parametrize(("per_site", "seg"), [(2, 1 << 10), (3, 1 << 12), (4, None)])
def test_a_reversed_timetable_is_the_allgathers_backwards(per_site, seg):
    """Each transfer of the allgather's timetable ``u -> v`` of slot ``s`` (of ``S``) is a
    send ``v -> u`` of slot ``S - s`` of the reduce-scatter, on the same trees; every
    block's partial sums reach its owner once per member (the simulator's program is
    valid) and never under the bound."""
    from hetcoll.planners.sitesorder import reversed_timetable

    p = two_sites(per_site)
    block = 1 << 14
    ag = timetable(p, sites(p, nbytes=block, segment_size=seg, fanout=1))
    rs = reversed_timetable(p, ag)
    top = max(e.slot for sends in ag.order.values() for e in sends)
    fwd = sorted((e.flow, u, e.child, top - e.slot) for u, es in ag.order.items() for e in es)
    back = sorted((e.flow, e.child, v, e.slot) for v, es in rs.order.items() for e in es)
    assert fwd == back
    assert [f.tree for f in rs.flows] == [f.tree for f in ag.flows]
    assert {f.kind for f in rs.flows} == {"reduce"} and rs.collective == "reduce_scatter"
    bound = members_bound(p, "reduce_scatter", block * len(hosts(p)), hosts(p)).lower_bound
    assert simulate(p, rs).makespan >= bound
    with pytest.raises(PlannerError, match="allgather"):
        reversed_timetable(p, sites(p, nbytes=block, segment_size=seg, fanout=1,
                                    collective="allreduce"))  # fmt: skip


@pytest.mark.parametrize("links", [False, True])
def test_a_reduce_scatter_is_run_backwards_on_the_broadcast_trees_given(links):
    """A reduce-scatter handed to ``reversed_timetable`` is played out as the allgather of
    the broadcast trees given (each root's), then run backwards: the very schedule that
    the allgather itself gives; without trees, its own trees broadcast.  Both planners
    build their reduce-scatter's backward timetable this one way."""
    from hetcoll.planners.sitesorder import as_broadcasts, reversed_timetable

    p = two_sites(3)
    groups = site_groups(p, hosts(p))
    rs = sites(p, nbytes=1 << 14, segment_size=1 << 12, fanout=1, collective="reduce_scatter")
    down = dataclasses.replace(rs, collective="allgather", order=None, flows=tuple(
        dataclasses.replace(f, kind="bcast", tree=site_tree(groups, f.tree.root, "bcast", 1))
        for f in rs.flows))  # fmt: skip
    trees = lambda root: site_tree(groups, root, "bcast", 1)  # noqa: E731
    got = reversed_timetable(p, rs, None, links, None, trees)
    assert got == reversed_timetable(p, down, None, links)
    assert got.order != rs.order and {f.kind for f in got.flows} == {"reduce"}
    own = as_broadcasts(rs.flows)
    assert [f.tree for f in own] == [f.tree for f in rs.flows]
    assert {f.kind for f in own} == {"bcast"}
    plain = dataclasses.replace(rs, order=None)
    same = dataclasses.replace(plain, collective="allgather", flows=tuple(own))
    assert reversed_timetable(p, plain, None, links) == reversed_timetable(p, same, None, links)


def test_the_reduce_scatter_runs_an_allgathers_timetable_backwards():
    """Two 4-host stars, a 256 MiB reduce-scatter: the allgather's timetable run backwards
    (its segments' reduce flows played out on the ports fare worse: 1.62x the WAN cut)
    takes under 1.55x: chosen, on the allgather's trees (its WAN senders' trees: two since
    the play-out with the WAN, 1.410x), and predicted as simulated."""
    p = two_sites(4)
    size = 256 << 20
    sched = sites(p, nbytes=size // 8, collective="reduce_scatter")
    bound = members_bound(p, "reduce_scatter", size, hosts(p)).lower_bound
    assert sched.params["timetable"] and sched.order is not None
    fan = sched.params["fanout"]
    groups = site_groups(p, hosts(p))
    crossing = wan_senders(p, groups, sched.params["senders"])
    for f in sched.flows:
        assert f.tree == site_tree(groups, f.tree.root, "bcast", fan, crossing)
    assert sched.params["estimate"] == simulate(p, sched).makespan < 1.55 * bound


def test_an_allreduce_timetable_reduces_up_the_trees_it_broadcasts_down():
    """The allreduce's broadcast phase in its own play-out's timetable, preceded by that
    timetable run backwards as its reduce phase, on the same trees; in 4 MiB segments
    the 256 MiB allreduce on two 4-host stars takes it, under 1.55x the WAN cut (1.58x
    before: the reduce and bcast flows' own play-out or trees' order)."""
    from hetcoll.planners.sitesorder import allreduce_timetable, reversed_timetable

    p = two_sites(2)
    small = sites(p, nbytes=1 << 16, collective="allreduce", segment_size=1 << 12, fanout=1)
    both = allreduce_timetable(p, small)
    half = len(both.flows) // 2
    down = both.flows[half:]
    assert [f.kind for f in both.flows] == ["reduce"] * half + ["bcast"] * half
    assert [f.tree for f in both.flows[:half]] == [f.tree for f in down]
    ag = dataclasses.replace(small, flows=down, collective="allgather", order=None, nbytes=0,
                             sizes={f.tree.root: f.nbytes for f in down})  # fmt: skip
    rs = reversed_timetable(p, ag)
    ups = {v: [e for e in es if e.flow < half] for v, es in both.order.items()}
    assert {v: es for v, es in ups.items() if es} == {v: list(es) for v, es in rs.order.items()}
    last_up = max(e.slot for es in ups.values() for e in es)
    assert all(e.slot > last_up for es in both.order.values() for e in es if e.flow >= half)
    assert (
        simulate(p, both).makespan >= members_bound(p, "allreduce", 1 << 16, hosts(p)).lower_bound
    )
    p = two_sites(4)
    size = 256 << 20
    sched = sites(p, nbytes=size, collective="allreduce", align=8)
    bound = members_bound(p, "allreduce", size, hosts(p)).lower_bound
    assert sched.params["timetable"] and sched.order is not None
    assert sched.params["estimate"] == simulate(p, sched).makespan < 1.55 * bound


def test_an_allreduce_timetable_on_its_own_reduce_trees_by_hand():
    """Two sites of two 10 Gbit/s hosts, four whole shares of 64 KiB, chains: with ``own``
    the reduce phase is the reduce trees' play-out as an allgather run backwards (the
    reduce flows kept), then the broadcast phase's play-out.  Both phases' a -> b WAN sends
    leave a/0 (b -> a: b/0), the reduce phase's first in its send order, so none shares the
    WAN with another: one local hop ``L`` (each leader's partner's part up to it), three
    WAN hops back to back at each leader (its two shares of the other site's roots, then
    its own share's broadcast), a local hop, a WAN hop (the partner's share), a local hop:
    ``3 L + 4 W``.  On the bcast trees run backwards the partners cross the WAN in the
    reduce phase, a local send between their two crossings: ``4 L + 4 W``."""
    from hetcoll.planners.sitesorder import allreduce_timetable

    p = two_sites(2, ("10Gbps",))
    share = 1 << 16
    local = 10e-6 + share / (10e9 / 8)  # two NICs' 5 us, the 10 Gbit/s NICs' rate
    wan = HOP + share / WAN
    plain = sites(p, nbytes=4 * share, collective="allreduce", segment_size=4 * share, fanout=1,
                  senders=1)  # fmt: skip
    plain = dataclasses.replace(plain, order=None)
    own = allreduce_timetable(p, plain, own=True)
    assert own.flows == plain.flows
    site = {v: p.node(v).site for v in hosts(p)}
    top = max(e.slot for es in own.order.values() for e in es if own.flows[e.flow].kind == "reduce")
    for u, sends in own.order.items():
        wan_sends = [e for e in sends if site[e.child] != site[u]]
        assert not wan_sends or u in ("a/0", "b/0")
        assert all(e.slot > top for e in sends if own.flows[e.flow].kind == "bcast")
    assert simulate(p, own).makespan == pytest.approx(3 * local + 4 * wan, rel=1e-12)
    back = allreduce_timetable(p, plain)
    assert simulate(p, back).makespan == pytest.approx(4 * local + 4 * wan, rel=1e-12)


def test_a_64mib_allreduce_takes_its_own_reduce_trees_backwards():
    """Two 4-host stars, a 64 MiB allreduce: the reduce phase in its own trees' play-out
    run backwards (every a -> b WAN send of both phases from a's leader, none sharing the
    WAN with another) is chosen, under 1.65x the WAN cut (1.683x before it was a
    candidate: the bcast trees run backwards, whose last reduce sends over the WAN share it
    with the leader's first broadcast sends), and predicted as simulated."""
    from hetcoll.planners.sitesorder import allreduce_timetable

    p = two_sites(4)
    size = 64 << 20
    sched = sites(p, nbytes=size, collective="allreduce", align=8)
    again = allreduce_timetable(p, dataclasses.replace(sched, order=None), own=True)
    assert sched.order == again.order and sched.flows == again.flows
    bound = members_bound(p, "allreduce", size, hosts(p)).lower_bound
    assert sched.params["estimate"] == simulate(p, sched).makespan < 1.65 * bound


def _owned(sched):
    """Each root's bytes in an allreduce's reduce flows."""
    out: dict[str, int] = {}
    for f in sched.flows:
        if f.kind == "reduce":
            out[f.tree.root] = out.get(f.tree.root, 0) + f.nbytes
    return out


def test_auto_weighs_sites_and_takes_it_for_a_large_allreduce():
    """Registered as a per-root planner of the three collectives; on two 4-node stars
    joined by a 5 Gbit/s WAN ``auto`` takes it, ``site_pairs`` (every host crossing the
    WAN; 3.5 % faster here) or ``site_exchange`` (the sites' partial sums swapped in one
    hop) for a 16 MiB allreduce, the three faster than every other
    candidate, and every other at least 1.7x slower: they send the vector over the WAN
    more than once; but ``forest`` on the hosts' packing, which sends it once and is
    slower)."""
    info = REGISTRY["sites"]
    assert info.collectives == ("allgather", "reduce_scatter", "allreduce")
    p = two_sites(4)
    size = 16 << 20
    sched = plan(p, None, hosts(p), method="auto", nbytes=size, collective="allreduce")
    ours = ("sites", "site_pairs", "site_exchange")
    assert sched.params["chosen"] in ours
    times = sched.params["candidates"]
    best = max(times[name] for name in ours)
    assert min(t for name, t in times.items() if name not in ours) > best
    assert min(t for name, t in times.items() if name not in (*ours, "forest")) > 1.7 * best


def test_bit_for_bit_under_mpi(tmp_path):
    """4 ranks as two sites of two hosts: allgather (blocks of 0, 1, odd sizes, equal and
    uneven), reduce-scatter and allreduce (int64 bit for bit, float64 the same bits on
    every rank), whole and in segments, in the trees' order and in a timetable (a
    reduce-scatter also as an allgather's run backwards)."""
    out = tmp_path / "sites.jsonl"
    proc = run_mpi(4, [PROGRAM, out], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 43
    failed = [r for r in records if not r["ok"]]
    assert not failed, failed[:5]
