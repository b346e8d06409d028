"""The planner ``site_exchange`` (planners/siteexchange.py): an allreduce among a
multi-site platform's hosts as exchange flows (each site's partial sums swapped by the
owners over the WAN at once); its shares, its time against the members' bound and
``site_pairs``, ``auto``'s choice, and the data in memory and under MPI
(mpi_programs/site_exchange.py) with the runtime's handler."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from hetcoll import simulate
from hetcoll.allbounds import members_bound
from hetcoll.errors import PlannerError
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners import REGISTRY, plan
from hetcoll.planners.siteexchange import exchange_flows, ramp, site_exchange
from hetcoll.planners.sitepairs import site_pairs
from hetcoll.planners.sites import site_groups, sites
from hetcoll.runtime.launch import run_mpi
from hetcoll.runtime.perroot import PerRootReduce
from hetcoll.schedule import Schedule
from test_runtime_reduce import run_serially

PROGRAM = Path(__file__).with_name("mpi_programs") / "site_exchange.py"


def multisite(counts, speeds=("25Gbps", "10Gbps")):
    """Stars of ``counts`` hosts, sites a, b, c joined by a chain of 1 ms, 5 Gbit/s WANs."""
    names = "abc"[: len(counts)]
    parts = {s: star_platform(c, speeds, "5us") for s, c in zip(names, counts, strict=True)}
    wan = [(names[i], names[i + 1], "1ms", "5Gbps") for i in range(len(names) - 1)]
    return multisite_platform(parts, wan)


def test_shares_one_per_place_of_the_largest_site():
    """Sites of 1 and 3 hosts: three shares, each rooted at a member of b, a/0 their
    other owner, whole at 1 KiB (crossers 3: every place; its leaders alone, faster here,
    one share); allreduce only."""
    p = multisite([1, 3])
    s = site_exchange(p, nbytes=1 << 10, align=8, crossers=3)
    assert [f.tree.root for f in s.flows] == ["b/0", "b/1", "b/2"]
    assert {f.peers for f in s.flows} == {("a/0",)}
    assert [f.nbytes for f in s.flows] == [344, 344, 336]
    assert s.params["segment_size"] is None
    assert REGISTRY["site_exchange"].collectives == ("allreduce",)
    lead = site_exchange(p, nbytes=1 << 10, align=8)
    assert lead.params["crossers"] == 1 and [f.tree.root for f in lead.flows] == ["b/0"]
    assert lead.params["estimate"] < s.params["estimate"]
    with pytest.raises(PlannerError, match="allreduce"):
        site_exchange(p, nbytes=64, collective="allgather")


def test_one_mib_one_wan_latency_and_chosen_by_auto():
    """Two 4-host stars joined by a 1 ms, 5 Gbit/s WAN, a 1 MiB allreduce: 4.10 ms, 1.52x
    the members' bound, where site_pairs' owner round trip takes 5.12 ms (1.90x); auto
    takes it."""
    p = multisite([4, 4])
    members = hosts(p)
    mine = simulate(p, site_exchange(p, nbytes=1 << 20, align=8)).makespan
    pairs = simulate(p, site_pairs(p, nbytes=1 << 20, collective="allreduce", align=8)).makespan
    bound = members_bound(p, "allreduce", 1 << 20, members).lower_bound
    assert mine < 1.55 * bound < 0.85 * pairs
    chosen = plan(p, None, members, method="auto", nbytes=1 << 20, collective="allreduce")
    assert chosen.params["chosen"] == "site_exchange"


def test_leaders_cross_at_64mib():
    """Two 4-host stars, a 64 MiB allreduce: the leaders alone cross the WAN, in
    segments down chains (1.497x the bound), faster than every place crossing (1.75x) and
    than sites (1.498x, its stream's ends in half segments; 1.63x in one size): the other
    members reduce and pass on segments while the leaders' ports hold the WAN's
    messages."""
    p = multisite([4, 4])
    members = hosts(p)
    size = 64 << 20
    s = site_exchange(p, nbytes=size, align=8)
    assert (s.params["crossers"], s.params["fanout"]) == (1, 1)
    assert {(f.tree.root, f.peers) for f in s.flows} == {("a/0", ("b/0",))}
    every = site_exchange(p, nbytes=size, align=8, crossers=4)
    assert every.params["crossers"] is None
    funnel = sites(p, nbytes=size, collective="allreduce", align=8)
    bound = members_bound(p, "allreduce", size, members).lower_bound
    mine = simulate(p, s).makespan
    assert mine == s.params["estimate"] < 1.56 * bound
    assert mine < simulate(p, funnel).makespan
    assert mine < 0.9 * simulate(p, every).makespan


def test_leaders_ramp_at_64mib():
    """Two 4-host stars, a 64 MiB allreduce: the leaders' segments ramp up from 1 MiB to
    about 6 MiB and down to 512 KiB (``ramp``): the WAN starts once a 1 MiB segment is
    reduced down the chain and the last result ends the chain early, 1.50x the bound
    against 1.54x for the best one size (4 MiB)."""
    p = multisite([4, 4])
    size = 64 << 20
    s = site_exchange(p, nbytes=size, align=8)
    cuts = s.flows[0].cuts
    assert len(s.flows) == 1 and cuts[0] == 1 << 20 and cuts[-1] == 1 << 19
    assert s.params["segment_size"] == max(cuts) > 4 << 20
    assert sum(cuts) == size and all(c % 8 == 0 for c in cuts)
    even = site_exchange(p, nbytes=size, align=8, crossers=1, segment_size=4 << 20)
    assert not even.flows[0].cuts
    bound = members_bound(p, "allreduce", size, hosts(p)).lower_bound
    mine = simulate(p, s).makespan
    assert mine == s.params["estimate"] < 1.5 * bound
    assert mine < 0.98 * simulate(p, even).makespan


def test_ramp_sizes():
    """Doubling up to the middle, near-equal middles, doubling down: multiples of align,
    summing to the vector; nothing where the ends fill it."""
    assert ramp(100, 10, 40, 20) == (10, 20, 50, 20)
    got = ramp(8000, 8, 1000, 16, 8)
    assert got[:3] == (8, 16, 32) and got[-3:] == (64, 32, 16) and sum(got) == 8000
    assert all(c % 8 == 0 for c in got)
    assert ramp(64, 16, 64, 16) == ()


@pytest.mark.parametrize("counts", [(4, 4), (3, 1, 2)])
def test_ramp_data_in_memory(counts):
    """The leaders' ramped segments run serially with the runtime's handler: int64 sums
    exact, float64 the same bits on every rank."""
    p = multisite(counts)
    members = hosts(p)
    groups = site_groups(p, members)
    cuts = ramp(1000 * 8, 8, 1000, 16, 8)
    flows = exchange_flows(groups, 8000, 8, 1, max(cuts), 1, cuts)
    assert flows[0].cuts == cuts
    program = Schedule("allreduce", "site_exchange", 8000, tuple(flows)).program()
    rng = np.random.default_rng(7)
    for dtype, mpitype in ((np.int64, MPI.INT64_T), (np.float64, MPI.DOUBLE)):
        data = {v: rng.standard_normal(1000) * 1e6 for v in members}
        if dtype is np.int64:
            data = {v: (x * 1e6).astype(np.int64) for v, x in data.items()}
        work = {v: data[v].copy().view(np.uint8) for v in members}
        n = len(members)
        handlers = {
            v: PerRootReduce(program, work[v], MPI.SUM, mpitype, 8, n, None, v) for v in members
        }
        run_serially(program, handlers)
        total = sum(data[v] for v in members)
        first = work[members[0]].tobytes()
        for v in members:
            assert work[v].tobytes() == first, (dtype, v)
        got = np.frombuffer(first, dtype)
        assert np.array_equal(got, total) if dtype is np.int64 else np.allclose(got, total)


@pytest.mark.parametrize("counts", [(4, 4), (3, 1, 2), (1, 3)])
@pytest.mark.parametrize("seg", [None, 96])
def test_data_in_memory(counts, seg):
    """Run serially with the runtime's handler (told its node): int64 sums exact, float64
    sums the same bits on every rank (three sites: the partials added in one order)."""
    p = multisite(counts)
    members = hosts(p)
    n = len(members)
    rng = np.random.default_rng(5)
    for dtype, mpitype in ((np.int64, MPI.INT64_T), (np.float64, MPI.DOUBLE)):
        for fanout in (3, 1):
            s = site_exchange(p, nbytes=50 * 8, segment_size=seg, align=8, fanout=fanout)
            program = s.program()
            data = {v: rng.standard_normal(50) * 1e6 for v in members}
            if dtype is np.int64:
                data = {v: (x * 1e6).astype(np.int64) for v, x in data.items()}
            work = {v: data[v].copy().view(np.uint8) for v in members}
            handlers = {
                v: PerRootReduce(program, work[v], MPI.SUM, mpitype, 8, n, None, v) for v in members
            }
            run_serially(program, handlers)
            total = sum(data[v] for v in members)
            first = work[members[0]].tobytes()
            for v in members:
                assert work[v].tobytes() == first, (dtype, fanout, v)
            got = np.frombuffer(first, dtype)
            assert np.array_equal(got, total) if dtype is np.int64 else np.allclose(got, total)


def test_bit_for_bit_under_mpi(tmp_path):
    """4 ranks as two sites of two hosts, of one and three, and three sites of 2, 1 and 1:
    int64 bit for bit mpi4py's, float64 the same bits on every rank, whole and in
    segments, heaps and chains, under the engine with HetComm's per-root handler."""
    out = tmp_path / "site_exchange.jsonl"
    proc = run_mpi(4, [PROGRAM, out], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 3 * 30
    failed = [r for r in records if not r["ok"]]
    assert not failed, failed[:5]
