"""The per-root packing among a multi-site platform's hosts, its switches routing
(planners/forestmembers.py): equal to the LP over every arborescence of the hosts, solved
by brute force; the WAN cut on two stars; ``members_bound``'s packing, ``hetcoll optimum``
and the planner ``forest`` on the hosts alone."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linprog

from _cli import run
from hetcoll import simulate
from hetcoll.allbounds import members_bound
from hetcoll.compare import plan_request
from hetcoll.errors import PlannerError
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners.forest import forest_problem, pack_forest
from hetcoll.platform import Link, Node, Platform, save_platform

MiB = 2**20
#: the WAN's rate below, bytes per second (5 Gbit/s)
WAN = 5e9 / 8


def two_sites(per_site=4, speeds=("25Gbps", "10Gbps"), wan_latency="1ms"):
    site = star_platform(per_site, speeds, "5us")
    return multisite_platform({"a": site, "b": site}, [("a", "b", wan_latency, "5Gbps")])


def arborescences(nodes, root):
    """Every spanning arborescence of the complete digraph on ``nodes`` out of ``root``,
    as its edges ``(parent, child)``: every parent function without a cycle."""
    others = [v for v in nodes if v != root]
    for parents in itertools.product(nodes, repeat=len(others)):
        up = dict(zip(others, parents, strict=True))
        if any(up[v] == v for v in others):
            continue
        ok = True
        for v in others:  # walk up: the root within len(nodes) steps
            seen, u = 0, v
            while u != root and seen <= len(nodes):
                u, seen = up[u], seen + 1
            ok &= u == root
        if ok:
            yield [(up[v], v) for v in others]


def brute_force_time(p, members, op, block, L):
    """The packing's time for blocks of ``block`` bytes (slices of ``L``), by the LP over
    every arborescence of the members (reduce-scatter: run backwards), each edge a
    host-to-host transfer: ``hockney``'s one-port sender and receiver busy for its
    latency and bytes at the route's bandwidth, every link of its route its bytes over
    its bandwidth."""
    bound = p.model.bind(p)
    cap = p.routes.resource_bandwidth
    idx = {m: p.index(m) for m in members}
    rows = {}

    def usage(edges):
        col = {}
        for a, b in edges:
            u, v = (idx[a], idx[b]) if op == "allgather" else (idx[b], idx[a])
            busy = bound.send_busy(u, v, L)
            for key in (("send", u), ("recv", v)):
                col[key] = col.get(key, 0.0) + busy
            for link in p.routes.path(u, v):
                col[("link", link)] = col.get(("link", link), 0.0) + L / cap[link]
        for key in col:
            rows.setdefault(key, len(rows))
        return col

    columns = [(r, usage(t)) for r in members for t in arborescences(members, r)]
    # variables: phi, then x per tree; maximise phi
    height = len(rows) + len(members)
    A, b = np.zeros((height, 1 + len(columns))), np.zeros(height)
    b[: len(rows)] = 1.0
    for j, (r, col) in enumerate(columns):
        for key, busy in col.items():
            A[rows[key], 1 + j] = busy
        A[len(rows) + members.index(r), 1 + j] = -1.0  # phi - sum_root x <= 0
    A[len(rows) :, 0] = 1.0
    c = np.zeros(1 + len(columns))
    c[0] = -1.0
    phi = -linprog(c, A_ub=A, b_ub=b, bounds=(0, None), method="highs").fun
    return block / (phi * L)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
@pytest.mark.parametrize(
    ("speeds", "wan_latency", "L"),
    [(("25Gbps", "10Gbps"), "1ms", MiB), (("10Gbps", "1Gbps"), "20us", 64 * 1024)],
)
def test_members_packing_is_the_brute_force_lp(op, speeds, wan_latency, L):
    """Two stars of two hosts: the members' packing (switches routing, no trees through
    them) equals the LP over all 4 x 16 arborescences of the hosts, and its bound
    certifies it."""
    p = two_sites(2, speeds, wan_latency)
    members = hosts(p)
    block = 3 * MiB
    f = pack_forest(p, op, [block] * 4, slice_size=L, members=members)
    want = brute_force_time(p, members, op, block, L)
    assert f.time == pytest.approx(want, rel=1e-9)
    assert f.bound == pytest.approx(want, rel=1e-9)
    assert set(f.problem.ids) == set(members)


def test_members_packing_of_two_stars_is_the_wan_cut():
    """Two stars of 25/10 Gbit/s hosts and a 5 Gbit/s WAN: the hosts' packing reaches the
    WAN cut (an allgather or reduce-scatter moves a site's 4 blocks, M / 2, over it; an
    allreduce M), certified, not their ports (the 10 Gbit/s hosts' receive ports at 7/8
    of it); the lower bound adds the hop its first message waits."""
    p, M = two_sites(), 256 * MiB
    members = hosts(p)
    for op, moved in (("allgather", M / 2), ("reduce_scatter", M / 2), ("allreduce", M)):
        got = members_bound(p, op, M, members, packing=True)
        assert got.packing == pytest.approx(moved / WAN, rel=1e-9)
        assert got.packing_bound == pytest.approx(moved / WAN, rel=1e-9)
        # the bound for a finite vector: the cut's bytes after one hop (1 ms, two NICs)
        assert got.lower_bound == pytest.approx(1.01e-3 + moved / WAN, rel=1e-9)
        assert got.trees > 0
        assert members_bound(p, op, M, members).trees == 0  # without: no packing


def test_every_node_as_members_is_the_whole_problem():
    p = two_sites(2)
    whole = forest_problem(p, MiB)
    same = forest_problem(p, MiB, members=list(p.ids))
    assert (whole.usage != same.usage).nnz == 0
    assert whole.ids == same.ids


def test_members_under_a_graph_model_are_refused():
    """A graph model's transfers go link by link: a switch relays, holding what it passes
    on, so it belongs to the trees."""
    links = [Link(v, "s", 0.0, 1e9) for v in "abc"]
    p = Platform(tuple(Node(i) for i in "abcs"), tuple(links), model="multi_port")
    with pytest.raises(PlannerError, match="link by link"):
        pack_forest(p, "allgather", [1.0] * 3, members=["a", "b", "c"])


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter", "allreduce"])
def test_optimum_cli_reports_the_hosts_packing(capsys, tmp_path, op):
    p, M = two_sites(), 256 * MiB
    path = tmp_path / "two-site.json"
    save_platform(p, path)
    code, out, _ = run(capsys, "optimum", path, "--op", op, "--size", "256MiB", "--json")
    assert code == 0
    doc = json.loads(out)
    moved = M if op == "allreduce" else M / 2
    assert doc["packing_time"] == pytest.approx(moved / WAN, rel=1e-9)
    assert doc["trees"] > 0 and doc["optimum"] is None
    code, out, _ = run(capsys, "optimum", path, "--op", op, "--size", "256MiB")
    assert code == 0 and "among the 8 hosts" in out and "per-root packing" in out


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter", "allreduce"])
def test_forest_plans_on_the_hosts_alone(op):
    """``forest`` among the hosts: every tree spans exactly the hosts, the schedule
    simulates, never under the packing's bound, byte for byte the same twice."""
    p = two_sites(2)
    members = hosts(p)
    nbytes = 4 * MiB if op == "allreduce" else MiB
    options = {"align": 8} if op == "allreduce" else None
    sched = plan_request(p, op, "forest", members=members, nbytes=nbytes, options=options)
    for flow in sched.flows:
        assert set(flow.tree.nodes) == set(members)
    vector = nbytes if op == "allreduce" else nbytes * len(members)
    bound = members_bound(p, op, vector, members, packing=True).lower_bound
    assert simulate(p, sched).makespan >= bound
    again = plan_request(p, op, "forest", members=members, nbytes=nbytes, options=options)
    assert again.to_json() == sched.to_json()
