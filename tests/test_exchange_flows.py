"""Exchange flows (patterns.Flow kind ``exchange``, perroot._exchange): each site reduces a
share to its owner, the owners swap their partial sums over the WAN at once, each
broadcasts the result in its site.  Their checks, JSON, lowering (every member ends with
the state of every member, the WAN crossed once per segment each way) and simulated time
on two sites against ``site_pairs``' owner round trip."""

from __future__ import annotations

import pytest

from hetcoll import simulate
from hetcoll.errors import ScheduleError
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.patterns import Flow, OrderedSend, Tree
from hetcoll.planners.rings import _blocks
from hetcoll.planners.sitepairs import pair_tree, site_pairs
from hetcoll.planners.sites import site_groups
from hetcoll.schedule import Schedule


def multisite(counts, speeds=("25Gbps", "10Gbps")):
    """Stars of ``counts`` hosts, sites a, b, c joined by a chain of 1 ms, 5 Gbit/s WANs."""
    names = "abc"[: len(counts)]
    parts = {s: star_platform(c, speeds, "5us") for s, c in zip(names, counts, strict=True)}
    wan = [(names[i], names[i + 1], "1ms", "5Gbps") for i in range(len(names) - 1)]
    return multisite_platform(parts, wan)


def exchange(p, nbytes, seg=None, fanout=3):
    """One exchange flow per place of the largest site, its owners that member and its
    counterparts (pair_tree's first children)."""
    groups = site_groups(p, hosts(p))
    big = max(groups, key=len)
    flows, at = [], 0
    for m, share in zip(big, _blocks(nbytes, len(big), 8), strict=True):
        tree = pair_tree(groups, m, fanout)
        peers = tree.children[m][: len(groups) - 1]
        cut = seg if seg and share > seg else None
        flows.append(Flow(tree, share, at, 0, cut, kind="exchange", peers=peers))
        at += share
    return Schedule("allreduce", "test", nbytes, tuple(flows))


def test_peers_checked_and_json():
    tree = Tree("a", {"a": ("b", "c"), "b": ("d",)})
    f = Flow(tree, 64, kind="exchange", peers=("b",))
    assert f.owners() == {"a": ("a", "c"), "b": ("b", "d")}
    assert f.hops == 2 * 2 + 2
    assert Flow.from_dict(f.to_dict()) == f
    assert f.to_dict()["peers"] == ["b"]
    with pytest.raises(ScheduleError, match="peers"):
        Flow(tree, 64, kind="exchange")  # no peer
    with pytest.raises(ScheduleError, match="peers"):
        Flow(tree, 64, kind="exchange", peers=("c",))  # not listed first
    with pytest.raises(ScheduleError, match="peers"):
        Flow(tree, 64, kind="exchange", peers=("d",))  # not a child of the root
    with pytest.raises(ScheduleError, match="peers"):
        Flow(tree, 64, kind="reduce", peers=("b",))
    with pytest.raises(ScheduleError, match="relays"):
        Flow(tree, 64, kind="exchange", peers=("b",), relays=(("a", "c", "b"),))


def test_cuts_checked_json_and_segments():
    """An exchange flow's ``cuts``: its segments' sizes in order, summing to nbytes, the
    largest its segment_size; JSON round trip; a gather or scatter has none (a bcast or
    reduce flow may: ``tests/test_forest_ramp.py``)."""
    tree = Tree("a", {"a": ("b", "c"), "b": ("d",)})
    f = Flow(tree, 64, 8, 0, 32, kind="exchange", peers=("b",), cuts=(8, 32, 16, 8))
    assert f.segments() == [(8, 8), (16, 32), (48, 16), (64, 8)]
    assert f.chunks == 4 and f.transfers == 4 * f.hops
    assert Flow.from_dict(f.to_dict()) == f
    assert f.to_dict()["cuts"] == [8, 32, 16, 8]
    assert "cuts" not in Flow(tree, 64, kind="exchange", peers=("b",)).to_dict()
    with pytest.raises(ScheduleError, match="cuts"):
        Flow(tree, 64, 0, 0, 32, kind="exchange", peers=("b",), cuts=(8, 32, 16))  # 56 bytes
    with pytest.raises(ScheduleError, match="cuts"):
        Flow(tree, 64, 0, 0, 16, kind="exchange", peers=("b",), cuts=(8, 32, 16, 8))
    with pytest.raises(ScheduleError, match="cuts"):
        Flow(tree, 64, 0, 0, 32, kind="exchange", peers=("b",), cuts=(0, 32, 32))
    with pytest.raises(ScheduleError, match="cuts"):
        Flow(tree, 64, kind="gather", cuts=(32, 32))


def test_schedule_checks_and_json():
    p = multisite([2, 2])
    s = exchange(p, 1 << 10, seg=128)
    assert s.per_root
    assert Schedule.from_json(s.to_json()).flows == s.flows
    with pytest.raises(ScheduleError, match="exchange flows cover 512 bytes"):
        Schedule("allreduce", "t", 1 << 10, s.flows[:1])
    with pytest.raises(ScheduleError, match="exchange"):
        Schedule("allreduce", "t", 1 << 10, s.flows, order={"a/0": (OrderedSend(0, "b/0", 0, 0),)})


@pytest.mark.parametrize("counts", [(4, 4), (2, 2), (3, 1, 2), (1, 3)])
@pytest.mark.parametrize("seg", [None, 1 << 12])
def test_program_reduces_everything_everywhere(counts, seg):
    """The program validates (holdings, no deadlock); every member receives or computes
    the state of all members for every segment; each pair of owners swaps each segment
    once each way and no other message crosses between sites."""
    p = multisite(counts)
    members = hosts(p)
    s = exchange(p, 3 << 13, seg)
    prog = s.program()
    prog.validate()
    assert prog.reduces
    everyone = tuple(sorted(members))
    site = {v: p.node(v).site for v in members}
    segs = {(lo, n) for f in s.flows for lo, n in f.segments()}
    crossings = 0
    for v, ops in prog.ops.items():
        done = set()
        for op in ops:
            c = prog.chunks[op.chunk]
            if op.kind != "send" and c.origin == everyone:
                done.add((c.offset, c.nbytes))
            if op.result is not None and prog.chunks[op.result].origin == everyone:
                done.add((c.offset, c.nbytes))
            if op.kind == "send" and site[op.peer] != site[v]:
                crossings += 1
                assert c.origin == tuple(sorted(m for m in members if site[m] == site[v]))
        assert done == segs, v
    k = len(counts)
    assert crossings == k * (k - 1) * sum(f.chunks for f in s.flows)


def test_faster_than_the_owner_round_trip_at_1mib():
    """Two 4-host stars, a 1 MiB allreduce: one WAN latency where site_pairs' partial sum
    and result cross one after the other (simulated: 4.10 ms against 5.12 ms)."""
    p = multisite([4, 4])
    mine = simulate(p, exchange(p, 1 << 20)).makespan
    theirs = simulate(p, site_pairs(p, nbytes=1 << 20, collective="allreduce", align=8)).makespan
    assert mine < 0.85 * theirs
