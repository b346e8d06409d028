"""The planner ``sites`` with several WAN senders per site (``senders``,
planners/sites.py ``wan_senders``): the slow members cross the WAN, the fast ones receive
it, each sender's hop beside the others' bytes; the trees by hand, the WAN crossed once
per byte and direction, the data bit for bit in memory (int64 sums), the members' bound
kept, and chosen where it simulates faster."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from hetcoll import simulate
from hetcoll.allbounds import members_bound
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners.sites import site_groups, sites, wan_senders
from hetcoll.runtime.perroot import PerRootReduce
from hetcoll.runtime.rank_ops import ByteRanges
from test_runtime_reduce import run_serially


def two_sites(per_site, speeds=("25Gbps", "10Gbps")):
    site = star_platform(per_site, speeds, "5us")
    return multisite_platform({"a": site, "b": site}, [("a", "b", "1ms", "5Gbps")])


def test_the_slow_members_send_and_the_fast_receive():
    """Two 4-host stars (a/0, a/1 at 25 Gbit/s, a/2, a/3 at 10): two senders, the 10
    Gbit/s hosts; a/0's block crosses from a/2, a/1's from a/3, a/2's and a/3's from their
    roots, to the receivers b/1, b/0, b/1, b/0 in turn, which pass it to the other site's
    senders first (leaves) and to the other receiver."""
    p = two_sites(4)
    groups = site_groups(p, hosts(p))
    assert wan_senders(p, groups, 1) == {"a/0": ["a/0"], "b/0": ["b/0"]}
    assert wan_senders(p, groups, 2) == {"a/0": ["a/2", "a/3"], "b/0": ["b/2", "b/3"]}
    assert wan_senders(p, groups, 9) == {"a/0": ["a/1", "a/2", "a/3"], "b/0": ["b/1", "b/2", "b/3"]}
    sched = sites(p, nbytes=1 << 10, segment_size=1 << 10, fanout=3, senders=2)
    assert sched.params["senders"] == 2
    trees = {f.tree.root: f.tree.children for f in sched.flows}
    assert trees["a/0"] == {
        "a/0": ("a/2", "a/1", "a/3"),
        "a/2": ("b/1",),
        "b/1": ("b/2", "b/3", "b/0"),
    }
    assert trees["a/1"] == {
        "a/1": ("a/3", "a/0", "a/2"),
        "a/3": ("b/0",),
        "b/0": ("b/2", "b/3", "b/1"),
    }
    assert trees["a/2"] == {
        "a/2": ("b/1", "a/0"),
        "a/0": ("a/1", "a/3"),
        "b/1": ("b/2", "b/3", "b/0"),
    }
    assert trees["a/3"] == {
        "a/3": ("b/0", "a/0"),
        "a/0": ("a/1", "a/2"),
        "b/0": ("b/2", "b/3", "b/1"),
    }
    # one sender per site: the leader's trees, as before
    one = sites(p, nbytes=1 << 10, segment_size=1 << 10, fanout=3, senders=1)
    assert one.params["senders"] == 1
    assert one.flows[0].tree.children == {
        "a/0": ("b/2", "a/1"),
        "a/1": ("a/2", "a/3"),
        "b/2": ("b/0", "b/1", "b/3"),
    }


def _vectors(p, n, seed):
    rng = np.random.default_rng(seed)
    return {v: rng.integers(-(1 << 40), 1 << 40, n, dtype=np.int64) for v in hosts(p)}


@pytest.mark.parametrize("per_site", [2, 3, 4])
@pytest.mark.parametrize("seg", [None, 4000])
def test_every_host_gets_every_block_bit_for_bit(per_site, seg):
    """Allgather: each host's block at its place, every host ending with all of them;
    reduce-scatter and allreduce: int64 sums equal to numpy's, bit for bit, with two
    senders per site, in the trees' order and in the planner's timetable."""
    p = two_sites(per_site)
    members = hosts(p)
    n = len(members)
    block = 8 * 1001
    data = _vectors(p, n * 1001, 1)
    total = sum(data.values())
    for collective in ("allgather", "reduce_scatter", "allreduce"):
        nbytes = block * n if collective == "allreduce" else block
        sched = sites(p, nbytes=nbytes, collective=collective, segment_size=seg, senders=2,
                      align=8)  # fmt: skip
        program = sched.program()
        offsets = sched.block_offsets()
        if collective == "allgather":
            whole = np.concatenate([data[v][:1001] for v in members])
            bufs = {v: np.zeros(n * block, np.uint8) for v in members}
            for v in members:
                lo = offsets[v]
                bufs[v][lo : lo + block] = whole.view(np.uint8)[lo : lo + block]
            handlers = {v: ByteRanges(program.chunks, {0: memoryview(bufs[v])}) for v in members}
            run_serially(program, handlers)
            for v in members:
                assert np.array_equal(bufs[v], whole.view(np.uint8)), (collective, v)
            continue
        work = {v: data[v].copy().view(np.uint8) for v in members}
        handlers = {v: PerRootReduce(program, work[v], MPI.SUM, MPI.INT64_T, 8, n) for v in members}
        run_serially(program, handlers)
        want = total.view(np.uint8)
        for v in members:
            if collective == "allreduce":
                assert np.array_equal(work[v], want), (collective, v)
            else:
                lo = offsets[v]
                assert np.array_equal(work[v][lo : lo + block], want[lo : lo + block])


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
def test_the_wan_is_crossed_once_per_byte_and_the_bound_kept(collective):
    """Two 3-host stars, two senders: each site sends the other its blocks (or partial
    sums) once, an allreduce its shares twice; the plan is never under the members'
    bound."""
    p = two_sites(3)
    members = hosts(p)
    size = 3 << 16
    sched = sites(p, nbytes=size, collective=collective, senders=2, align=8)
    site = {v.id: v.site for v in p.nodes}
    run = simulate(p, sched)
    moved = {}
    for t in run.transfers:
        a, b = site[t.sender], site[t.receiver]
        if a != b:
            moved[(a, b)] = moved.get((a, b), 0) + t.nbytes
    each = 3 * size if collective != "allreduce" else size  # a site's blocks; the vector
    assert moved == {("a", "b"): each, ("b", "a"): each}
    whole = size if collective == "allreduce" else size * len(members)
    assert run.makespan >= members_bound(p, collective, whole, members).lower_bound


def test_two_senders_are_chosen_where_faster():
    """Two 4-host stars, a 1 MiB allgather (128 KiB blocks): with one sender the leader's
    port carries the site's four WAN messages one after another, each a hop's latency;
    two senders' hops overlap: the planner left to choose takes two, faster than one."""
    p = two_sites(4)
    block = 128 << 10
    chosen = sites(p, nbytes=block)
    one = sites(p, nbytes=block, senders=1)
    assert chosen.params["senders"] == 2
    assert simulate(p, chosen).makespan < 0.8 * simulate(p, one).makespan


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter"])
def test_pruning_several_senders_keeps_the_choice(collective, monkeypatch):
    """Two 4-host stars, 8 MiB blocks (64 MiB in all): two senders' finer cuts, pruned
    once 1.2x the fastest plan so far, would not have won: the same schedule as the
    search without the pruning."""
    import sys

    module = sys.modules["hetcoll.planners.sites"]
    p = two_sites(4)
    block = 8 << 20
    pruned = sites(p, nbytes=block, collective=collective)
    monkeypatch.setattr(module, "PRUNE", float("inf"))
    assert sites(p, nbytes=block, collective=collective) == pruned


def test_two_wan_senders_bit_for_bit_under_mpi(tmp_path):
    """6 ranks as two sites of three hosts, every plan with two WAN senders per site (four
    hosts cross the WAN): the cases of tests/mpi_programs/sites.py (allgather of blocks
    of 0, 1, odd and uneven sizes, reduce-scatter and allreduce int64 bit for bit, float64
    the same bits on every rank, whole, in segments and in timetables) under the engine."""
    import json
    from pathlib import Path

    from hetcoll.runtime.launch import run_mpi

    program = Path(__file__).with_name("mpi_programs") / "sites.py"
    out = tmp_path / "sites.jsonl"
    proc = run_mpi(6, [program, out], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 43
    failed = [r for r in records if not r["ok"]]
    assert not failed, failed[:5]
