"""Pipelined broadcast on platform graphs (Beaumont, Marchal & Robert 2004): the platform
and models, the closed forms, the optimum (LP (2) and the packing), every planner's tree,
multi_tree in the simulator, bad input."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import one_line_error, run
from hetcoll import Platform, Schedule, plan, simulate
from hetcoll.arborescence import min_arborescence
from hetcoll.errors import PlannerError
from hetcoll.generators import random_graph_platform, tiers_platform
from hetcoll.planners import REGISTRY
from hetcoll.planners.periodic_timetable import steady_period
from hetcoll.planners.steady import (
    SteadyProblem,
    edge_loads,
    lp_throughput,
    optimum,
    pack_arborescences,
    steady_problem,
)
from hetcoll.simulator import steady_state

PAPER_ONE_PORT = ["prune_simple", "prune_degree", "grow_tree", "lp_prune", "lp_grow"]
GRAPH_PLANNERS = [
    *PAPER_ONE_PORT,
    "binomial_graph",
    "grow_tree_multiport",
    "prune_degree_multiport",
    "throughput_tree",
    "multi_tree",
]
L = 10**6  # slice: 1 MB, so T_uv = 1e6 / bandwidth


def platform(links, model="one_port", n=None, **extra):
    ids = sorted({x for lk in links for x in (lk[0], lk[1])}, key=int) if n is None else range(n)
    return Platform.from_dict(
        {
            "model": model,
            "nodes": [{"id": str(i), **extra.get(str(i), {})} for i in ids],
            "links": [
                {"u": str(u), "v": str(v), "bandwidth": bw, **(rest[0] if rest else {})}
                for u, v, bw, *rest in links
            ],
        }
    )


def path(*times):
    """The path 0-1-...-k, link i taking times[i] seconds per 1 MB slice."""
    return platform([(i, i + 1, L / t) for i, t in enumerate(times)])


def tree_edges(schedule):
    return [(p, c) for f in schedule.flows for p, c in f.tree.edges()]


def closed_form(p, schedule, ports="bidirectional"):
    """Slices per second of one pipelined tree: 1 / max_u max(sum T_children, T_parent)."""
    g = p.digraph
    edges = zip(g.src.tolist(), g.dst.tolist(), strict=True)
    T = dict(zip(edges, g.times(L).tolist(), strict=True))
    out = dict.fromkeys(range(len(p)), 0.0)
    inc = dict.fromkeys(range(len(p)), 0.0)
    for a, b in tree_edges(schedule):
        u, v = p.index(a), p.index(b)
        out[u] += T[(u, v)]
        inc[v] += T[(u, v)]
    per = [out[u] + inc[u] if ports == "unidirectional" else max(out[u], inc[u]) for u in out]
    return 1 / max(per)


# -- platform --------------------------------------------------------------------------------


def test_the_issue_platform_loads_with_both_directions():
    p = Platform.from_dict(
        {
            "model": "one_port",
            "nodes": [{"id": "0"}, {"id": "1"}, {"id": "2"}],
            "links": [
                {"u": "0", "v": "1", "bandwidth": 1.0e8},
                {"u": "1", "v": "2", "bandwidth": "80MBps", "latency": "5us"},
            ],
        }
    )
    g = p.digraph
    pairs = list(zip(g.src.tolist(), g.dst.tolist(), strict=True))
    assert pairs == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert g.times(1000).tolist() == pytest.approx([1e-5, 1e-5, 5e-6 + 1.25e-5, 5e-6 + 1.25e-5])
    assert Platform.from_dict(p.to_dict()).to_dict() == p.to_dict()


def test_directed_links_and_busy_times_round_trip():
    p = platform(
        [
            (0, 1, 1e6, {"directed": True, "send_latency": "1us", "send_bandwidth": 2e6}),
            (1, 0, 5e5, {"directed": True, "recv_latency": 0.0, "recv_bandwidth": 4e6}),
        ]
    )
    g = p.digraph
    assert list(zip(g.src.tolist(), g.dst.tolist(), strict=True)) == [(0, 1), (1, 0)]
    assert g.times(1e6).tolist() == pytest.approx([1.0, 2.0])
    assert Platform.from_dict(json.loads(json.dumps(p.to_dict()))).to_dict() == p.to_dict()
    m = p.with_model("multi_port").model.bind(p.with_model("multi_port"))
    assert m.send_busy(0, 1, 10**6) == pytest.approx(1e-6 + 0.5)
    assert m.recv_busy(1, 0, 10**6) == pytest.approx(0.25)
    assert m.recv_busy(0, 1, 10**6) == 0.0
    assert isinstance(p.to_networkx(), nx.DiGraph)


def test_opposite_directed_links_are_not_duplicates_but_a_second_link_is():
    platform([(0, 1, 1e6, {"directed": True}), (1, 0, 1e6, {"directed": True})])
    with pytest.raises(Exception, match="duplicate link"):
        platform([(0, 1, 1e6), (1, 0, 1e6, {"directed": True})])


# -- bad input ------------------------------------------------------------------------------


@pytest.fixture
def write(tmp_path):
    def _write(data):
        path = tmp_path / "p.json"
        path.write_text(json.dumps(data))
        return path

    return _write


BASE = {"model": "one_port", "nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}


@pytest.mark.parametrize(
    ("links", "args", "needles"),
    [
        (
            [{"u": "a", "v": "b", "bandwidth": 1e6}, {"u": "c", "v": "b", "directed": True}],
            ["plan", "--root", "a", "--algo", "grow_tree"],
            ["'c' is unreachable from root 'a'"],
        ),
        (
            [{"u": "a", "v": "b", "bandwidth": 1e6}, {"u": "c", "v": "b", "directed": True}],
            ["optimum", "--root", "a", "--segment-size", "1MB"],
            ["'c' is unreachable from root 'a'"],
        ),
        (
            [{"u": "a", "v": "b", "bandwidth": -1}, {"u": "b", "v": "c"}],
            ["optimum", "--root", "a", "--segment-size", "1MB"],
            ["links[0].bandwidth", "must be > 0"],
        ),
        (
            [{"u": "a", "v": "b", "bandwidth": 0}, {"u": "b", "v": "c"}],
            ["plan", "--root", "a"],
            ["links[0].bandwidth", "must be > 0"],
        ),
        (
            [{"u": "a", "v": "b"}, {"u": "b", "v": "zz"}],
            ["optimum", "--root", "a", "--segment-size", "1MB"],
            ["links[1].v: unknown node 'zz'"],
        ),
        (
            [{"u": "a", "v": "b", "bandwidth": 1e6}, {"u": "b", "v": "c", "bandwidth": 1e6}],
            ["optimum", "--root", "a", "--segment-size", "0"],
            ["segment size", "positive"],
        ),
        (
            [{"u": "a", "v": "b", "bandwidth": 1e6}, {"u": "b", "v": "c", "bandwidth": 1e6}],
            ["plan", "--root", "a", "--size", "1MB", "--segment-size", "0"],
            ["segment size", "positive"],
        ),
        (
            [{"u": "a", "v": "b", "bandwidth": 1e6}, {"u": "b", "v": "c", "bandwidth": 1e6}],
            ["plan", "--root", "a", "--algo", "flat", "--model", "hockney", "--size", "1"],
            [],
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, write, links, args, needles):
    f = write({**BASE, "links": links})
    code, out, err = run(capsys, args[0], f, *args[1:])
    if not needles:  # a control: the same platform plans fine
        assert code == 0, err
        return
    one_line_error(code, out, err, *needles)


def test_a_saved_schedule_with_a_direct_transfer_between_strangers_is_refused(capsys, tmp_path):
    p = path(1.0, 1.0)
    s = Schedule.from_dict(
        {
            **plan(p, "0", method="chain").to_dict(),
            "flows": [{"root": "0", "children": {"0": ["1", "2"]}, "nbytes": 0}],
        }
    )
    (tmp_path / "p.json").write_text(json.dumps(p.to_dict()))
    (tmp_path / "s.json").write_text(s.to_json())
    code, out, err = run(capsys, "simulate", tmp_path / "p.json", tmp_path / "s.json")
    one_line_error(code, out, err, "no link from '0' to '2'", "relayed")


# -- closed forms ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_tree_throughput_in_the_simulator_is_the_closed_form(seed):
    p = random_graph_platform(9, 0.3, seed=seed)
    for name in ("grow_tree", "prune_degree", "lp_grow"):
        s = plan(p, "0", method=name, nbytes=60 * L, segment_size=L)
        rate = steady_state(simulate(p, s), s)
        assert rate.bytes_per_second == pytest.approx(rate.slices_per_second * L, rel=1e-12)
        assert rate.slices_per_second == pytest.approx(closed_form(p, s), rel=1e-9)


def test_multi_port_tree_period_is_sec_3_2():
    """A star from 0: period max(k send_0, max T) (Sec. 3.2, Fig. 3's two cases)."""
    for send, expected in ((0.2, 1.0), (0.5, 1.5)):
        p = platform(
            [(0, 1, L / 0.5), (0, 2, L / 1.0), (0, 3, L / 0.7)],
            model="multi_port",
            **{"0": {"t_byte": send / L}},
        )
        s = plan(p, "0", method="flat", nbytes=40 * L, segment_size=L)
        rate = steady_state(simulate(p, s), s)
        assert 1 / rate.slices_per_second == pytest.approx(expected, rel=1e-9)


def test_relays_store_and_forward_every_hop():
    """Alg. 4 on the path 0-1-2-3: 0 -> 2 goes through 1, which receives twice per slice."""
    p = path(1.0, 2.0, 1.0)
    s = plan(p, "0", method="binomial_graph", nbytes=40 * L, segment_size=L)
    assert s.flows[0].relays == (("0", "1", "2"),)
    assert Schedule.from_json(s.to_json()) == s
    s.validate(p)
    rate = steady_state(simulate(p, s), s)
    # node 0 sends to 1 twice (its own copy and the relayed one), 1 receives both: 2 s
    assert rate.slices_per_second == pytest.approx(1 / 2.0, rel=1e-9)
    prog = s.program()
    copies = [c for c in prog.chunks if c.copy_of is not None]
    assert len(copies) == 40 and all(c.nbytes == L for c in copies)
    assert [op.result for op in prog.ops["2"]][:1] == [copies[0].copy_of]


# -- the optimum ----------------------------------------------------------------------------


def test_the_printed_lp_overestimates_and_the_corrected_one_does_not():
    """The path 0-1-2-3 with T = 1, 10, 1 both ways: 0.1 slice per time unit, not 1.0."""
    p = path(1.0, 10.0, 1.0)
    prob = steady_problem(p, "0", L)
    assert lp_throughput(prob, printed=True).throughput == pytest.approx(1.0, rel=1e-9)
    assert lp_throughput(prob).throughput == pytest.approx(0.1, rel=1e-9)
    pack = pack_arborescences(prob)
    assert pack.throughput == pytest.approx(0.1, rel=1e-12)
    assert pack.upper_bound == pytest.approx(0.1, rel=1e-12)


def all_arborescences(n, src, dst, root):
    inc = [[e for e in range(len(src)) if dst[e] == v] for v in range(n)]
    others = [v for v in range(n) if v != root]
    for choice in itertools.product(*[inc[v] for v in others]):
        parent = {v: int(src[e]) for v, e in zip(others, choice, strict=True)}
        ok = True
        for v in others:
            seen, x = set(), v
            while x != root and ok:
                ok = x not in seen
                seen.add(x)
                x = parent[x]
        if ok:
            yield list(choice)


@pytest.mark.parametrize("seed", range(6))
def test_lp_on_a_tree_platform_is_the_best_single_tree(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    links = [(int(rng.integers(0, v)), v, float(rng.uniform(5e5, 2e6))) for v in range(1, n)]
    p = platform(links)
    prob = steady_problem(p, "0", L)
    best = max(1 / prob.loads(t).max() for t in all_arborescences(n, prob.src, prob.dst, 0))
    assert lp_throughput(prob).throughput == pytest.approx(best, rel=1e-9)
    assert pack_arborescences(prob).throughput == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_packing_equals_lp_is_certified_and_bounds_every_heuristic(seed):
    p = random_graph_platform(8 + seed % 4, 0.3, seed=seed)
    prob = steady_problem(p, "0", L)
    lp = lp_throughput(prob, min_link_time=True)
    pack = pack_arborescences(prob)
    assert pack.throughput == pytest.approx(lp.throughput, rel=1e-9)
    assert pack.upper_bound >= lp.throughput * (1 - 1e-9)
    assert pack.gap <= 1e-9
    for name in (*PAPER_ONE_PORT, "throughput_tree", "binomial_graph"):
        s = plan(p, "0", method=name, nbytes=L, segment_size=L)
        single = 1 / max(1e-300, 1 / closed_form(p, s)) if name != "binomial_graph" else None
        if single is not None:
            assert single <= lp.throughput * (1 + 1e-9), name
    # max-flow certificate: under capacities n_uv every destination gets TP
    for n_e in (lp.n, edge_loads(prob, pack)):
        g = nx.DiGraph()
        for e, (a, b) in enumerate(zip(prob.src.tolist(), prob.dst.tolist(), strict=True)):
            g.add_edge(a, b, capacity=float(n_e[e]))
        for w in range(1, len(p)):
            assert nx.maximum_flow_value(g, 0, w) >= lp.throughput * (1 - 1e-7)
        loads = np.zeros(2 * len(p))
        np.add.at(loads, prob.src, n_e * prob.T)
        np.add.at(loads, len(p) + prob.dst, n_e * prob.T)
        assert loads.max() <= 1 + 1e-7


@pytest.mark.parametrize("seed", range(4))
def test_packing_equals_lp_when_every_cost_ties(seed):
    # one bandwidth everywhere: every T_uv equal, so the pricing sees ties at every step
    rng = np.random.default_rng(seed)
    n = 9 + seed
    pairs = {(int(rng.integers(0, v)), v) for v in range(1, n)}
    pairs |= {(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.3}
    p = platform([(a, b, 1e6, {"directed": True} if rng.random() < 0.3 else {}) for a, b in pairs])
    prob = steady_problem(p, "0", L)
    lp = lp_throughput(prob)
    pack = pack_arborescences(prob)
    assert pack.throughput == pytest.approx(lp.throughput, rel=1e-9)
    assert pack.upper_bound >= lp.throughput * (1 - 1e-9)
    assert pack.gap <= 1e-9


def test_unidirectional_optimum_is_at_most_the_bidirectional_one():
    p = random_graph_platform(10, 0.3, seed=4)
    bi = optimum(p, "0", L).slices_per_second
    uni = optimum(p, "0", L, model="one_port_uni").slices_per_second
    assert uni <= bi * (1 + 1e-12)
    assert uni == pytest.approx(lp_throughput(steady_problem(p, "0", L, "one_port_uni")).throughput)


def test_optimum_command_json(capsys, tmp_path):
    p = path(1.0, 10.0, 1.0)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p.to_dict()))
    code, out, err = run(capsys, "optimum", f, "--root", "0", "--segment-size", "1MB", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["throughput"] == pytest.approx(1e5)  # bytes/s: 0.1 slice of 1 MB per second
    assert doc["slices_per_second"] == pytest.approx(0.1)
    assert {(x["u"], x["v"]) for x in doc["n"]} == {("0", "1"), ("1", "2"), ("2", "3")}
    code, out, _ = run(
        capsys, "optimum", f, "--root", "0", "--segment-size", "1MB", "--method", "lp"
    )
    assert code == 0 and "100 kB/s" in out


# -- the arborescence routine ----------------------------------------------------------------


@settings(max_examples=150)
@given(st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_min_arborescence_is_optimal_under_ties(n, seed):
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.7]
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    cost = rng.integers(0, 3, size=len(pairs)).astype(float)  # many ties
    root = int(rng.integers(0, n))
    trees = list(all_arborescences(n, src, dst, root))
    got = min_arborescence(n, src, dst, cost, root)
    if not trees:
        assert got is None
        return
    assert got is not None and len(got) == n - 1
    assert sorted(int(dst[e]) for e in got) == sorted(set(range(n)) - {root})
    assert any(sorted(t) == sorted(got.tolist()) for t in trees)  # an arborescence
    assert cost[got].sum() == pytest.approx(min(cost[t].sum() for t in trees))


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 7), st.integers(0, 2**32 - 1), st.sampled_from(["0/1", "prices"]))
def test_min_arborescence_under_zero_cycles_and_parallel_edges(n, seed, kind):
    # costs of 0 and 1 (free cycles nest inside free cycles) or the pricing's own form,
    # T_uv (y_u + y'_v) with most prices 0; parallel edges too; brute force
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.45]
    pairs += [pairs[i] for i in rng.integers(0, len(pairs), size=len(pairs) // 4)]
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    if kind == "0/1":
        cost = (rng.random(len(pairs)) < 0.3).astype(float)
    else:
        y = np.where(rng.random(2 * n) < 0.7, 0.0, rng.integers(1, 4, size=2 * n) / 4)
        cost = rng.integers(1, 3, size=len(pairs)) * (y[src] + y[n + dst])
    trees = list(all_arborescences(n, src, dst, 0))
    got = min_arborescence(n, src, dst, cost, 0)
    if not trees:
        assert got is None
        return
    assert got is not None
    assert any(sorted(t) == sorted(got.tolist()) for t in trees)
    assert cost[got].sum() == min(cost[t].sum() for t in trees)


def test_min_arborescence_on_nested_cycles_matches_networkx():
    # positive dual prices make the cheapest incoming edges close cycles inside cycles (the
    # case that took the round-by-round contraction about N rounds); distinct costs, where
    # networkx is right
    rng = np.random.default_rng(11)
    for n in (40, 80):
        pairs = [(a, b) for a in range(n) for b in range(1, n) if a != b and rng.random() < 0.15]
        pairs += [(b - 1, b) for b in range(1, n) if (b - 1, b) not in pairs]
        src, dst = (np.array(x) for x in zip(*pairs, strict=True))
        y = rng.random(2 * n)
        cost = rng.uniform(0.5, 2, len(pairs)) * (y[src] + y[n + dst])
        g = nx.DiGraph()
        for e, (a, b) in enumerate(pairs):
            g.add_edge(a, b, weight=cost[e])
        best = nx.minimum_spanning_arborescence(g).size(weight="weight")
        got = min_arborescence(n, src, dst, cost, 0)
        tree = nx.DiGraph(list(zip(src[got].tolist(), dst[got].tolist(), strict=True)))
        assert nx.is_arborescence(tree) and len(tree) == n
        assert cost[got].sum() == pytest.approx(best, rel=1e-12)


def test_min_arborescence_matches_networkx_without_ties():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = 15
        pairs = [(a, b) for a in range(n) for b in range(1, n) if a != b and rng.random() < 0.4]
        pairs += [(0, b) for b in range(1, n) if (0, b) not in pairs]
        src, dst = (np.array(x) for x in zip(*pairs, strict=True))
        cost = rng.random(len(pairs))
        g = nx.DiGraph()
        for e, (a, b) in enumerate(pairs):
            g.add_edge(a, b, weight=cost[e])
        best = nx.minimum_spanning_arborescence(g)
        got = min_arborescence(n, src, dst, cost, 0)
        assert cost[got].sum() == pytest.approx(best.size(weight="weight"))


# -- planners -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_every_planner_returns_a_spanning_arborescence_of_the_links(seed):
    p = random_graph_platform(12, 0.25, seed=seed)
    # some links one way only: pruning must keep every node reachable along directions
    data = p.to_dict()
    tree = nx.bfs_tree(p.to_networkx(), "0").to_undirected()
    for link in data["links"]:
        if not tree.has_edge(link["u"], link["v"]):
            link["directed"] = True
    p = Platform.from_dict(data)
    assert any(lk.directed for lk in p.links)
    p.digraph.check_reachable(0, p.ids)
    edges = set(zip(p.digraph.src.tolist(), p.digraph.dst.tolist(), strict=True))
    for name in GRAPH_PLANNERS:
        s = plan(p, "0", method=name, nbytes=64 * L, segment_size=L)
        s.validate(p)
        for f in s.flows:
            assert set(f.tree.nodes) == set(p.ids)
            assert len(f.tree.edges()) == len(p) - 1
            relayed = {(r[0], r[-1]) for r in f.relays}
            for a, b in f.tree.edges():
                if (a, b) in relayed:
                    assert name == "binomial_graph"
                else:
                    assert (p.index(a), p.index(b)) in edges, (name, a, b)
        assert Schedule.from_json(s.to_json()) == s
        assert plan(p, "0", method=name, nbytes=64 * L, segment_size=L).to_json() == s.to_json()


@pytest.mark.parametrize("seed", range(5))
def test_throughput_tree_is_never_below_a_paper_heuristic(seed):
    p = random_graph_platform(14, 0.3, seed=100 + seed)
    ours = closed_form(p, plan(p, "0", method="throughput_tree", nbytes=L, segment_size=L))
    for name in PAPER_ONE_PORT:
        theirs = closed_form(p, plan(p, "0", method=name, nbytes=L, segment_size=L))
        assert ours >= theirs * (1 - 1e-12), name
    assert ours <= optimum(p, "0", L).slices_per_second * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_multi_tree_reaches_99_percent_of_the_optimum_in_the_simulator(seed):
    p = random_graph_platform(7, 0.3, seed=seed)
    best = optimum(p, "0", L).throughput
    per = {"slices_per_period": steady_period(p, "0", L)}
    probe = plan(p, "0", method="multi_tree", nbytes=4096 * L, segment_size=L, options=per)
    lag = max((x.lag for seq in (probe.order or {}).values() for x in seq), default=0)
    per = {"slices_per_period": probe.params.get("slices_per_period", 16)}
    nbytes = per["slices_per_period"] * (4 * lag + 4) * L
    s = plan(p, "0", method="multi_tree", nbytes=nbytes, segment_size=L, options=per)
    assert s.params["optimum"] == pytest.approx(best, rel=1e-9)
    s.validate(p)
    assert Schedule.from_json(s.to_json()) == s
    rate = steady_state(simulate(p, s), s).bytes_per_second
    assert rate >= 0.99 * best
    assert rate <= best * (1 + 1e-9)


def test_multi_tree_period_is_chosen_by_its_timetable_not_only_its_rounding():
    # a platform of the Fig. 4 grid (n = 40, density 0.08): 32 slices per period keep
    # 99.8 % when rounded, but their timetable only 98.4 % (simulated 98.6 %); 48 keep
    # 100 % both ways
    from hetcoll.experiments.beaumont import FULL, grid_platforms

    n, d, seed = grid_platforms(FULL["sizes"], FULL["densities"], 10)[167]
    p = random_graph_platform(n, d, seed=seed)
    per = {"slices_per_period": steady_period(p, "0", L)}
    s = plan(p, "0", method="multi_tree", nbytes=4096 * L, segment_size=L, options=per)
    per, period = s.params["slices_per_period"], s.params["period"]
    assert per * L / period >= 0.995 * s.params["optimum"]
    assert per == 48


def test_multi_tree_at_a_given_period_keeps_the_periodic_regimes_rate():
    # a Fig. 4 platform (n = 20, density 0.2, seed 20000): at 192 slices per period the
    # timetable with each pair's transfers spread over the period keeps 97.4 % of the
    # optimum (at 384, where it ended a 21-period message first by its bound, 97.2 %); a
    # given period must plan the periodic regime (what steady_period's period is for), the
    # dense one: 99.6 %
    p = random_graph_platform(20, 0.2, seed=20000)
    best = optimum(p, "0", L).throughput
    per = {"slices_per_period": steady_period(p, "0", L)}
    k = per["slices_per_period"]
    assert k == 192
    probe = plan(p, "0", method="multi_tree", nbytes=k * L, segment_size=L, options=per)
    lag = max(x.lag for seq in probe.order.values() for x in seq)
    runs = 2 * lag + 7
    s = plan(p, "0", method="multi_tree", nbytes=k * runs * L, segment_size=L, options=per)
    assert k * L / s.params["period"] >= 0.995 * best
    window = ((lag + 2) / runs, (lag + 6) / runs)
    rate = steady_state(simulate(p, s), s, window).bytes_per_second
    assert 0.99 * best <= rate <= best * (1 + 1e-9)


def test_multi_tree_timetable_orders_every_port():
    p = random_graph_platform(7, 0.3, seed=0)
    s = plan(p, "0", method="multi_tree", nbytes=256 * 3 * L, segment_size=L)
    assert s.timetable and s.params["trees"] >= 2
    prog = s.program()
    for ops in prog.ops.values():
        recvs = [i for i, op in enumerate(ops) if op.kind == "recv"]
        sends = [i for i, op in enumerate(ops) if op.kind == "send"]
        assert all(ops[b].deps[-1:] == (a,) for a, b in itertools.pairwise(recvs))
        assert all(a in ops[b].deps for a, b in itertools.pairwise(sends))


def test_multi_tree_small_messages_and_one_slice():
    p = random_graph_platform(6, 0.4, seed=1)
    for nbytes, seg in ((0, None), (1, None), (7, 3), (5 * L + 1, L)):
        s = plan(p, "0", method="multi_tree", nbytes=nbytes, segment_size=seg)
        s.validate(p)
        assert sum(f.nbytes for f in s.flows) == nbytes


def test_multi_port_planners_beat_one_port_ones_under_multi_port():
    p = random_graph_platform(15, 0.2, seed=2, model="multi_port")
    rates = {}
    for name in ("grow_tree", "grow_tree_multiport", "prune_degree_multiport", "binomial_graph"):
        s = plan(p, "0", method=name, nbytes=40 * L, segment_size=L)
        rates[name] = steady_state(simulate(p, s), s).slices_per_second
    assert rates["grow_tree_multiport"] >= rates["binomial_graph"]
    assert max(rates["grow_tree_multiport"], rates["prune_degree_multiport"]) > 0


def test_tiers_platforms_have_the_papers_densities():
    for n in (30, 65):
        for seed in range(3):
            p = tiers_platform(n, seed=seed)
            density = len(p.links) / (n * (n - 1) / 2)
            assert 0.04 <= density <= 0.16, (n, density)
            assert p.digraph.reachable(0).all()


def test_random_graph_platform_is_connected_and_near_its_density():
    for seed in range(5):
        p = random_graph_platform(40, 0.04, seed=seed)
        assert p.digraph.reachable(0).all()
        assert len(p.links) <= 0.04 * 40 * 39 / 2 * 1.6 + 20
        assert all(n.t_byte > 0 for n in p.nodes)


def test_registry_lists_the_nine_planners_and_ours():
    for name in (*GRAPH_PLANNERS,):
        assert name in REGISTRY
        assert "Beaumont" in REGISTRY[name].paper or name in ("throughput_tree",)


def test_unreachable_raises_from_the_python_api():
    p = platform([(0, 1, 1e6), (2, 1, 1e6, {"directed": True})])
    with pytest.raises(PlannerError, match="'2' is unreachable from root '0'"):
        optimum(p, "0", L)
    assert math.isfinite(optimum(p, "2", L).throughput)
    SteadyProblem  # noqa: B018  (exported)


def test_auto_chooses_the_planner_and_the_slice_by_size():
    # small message: one piece down a latency tree; large: slices down a pipelined tree,
    # the best (planner, slice) pair of every candidate the simulator ranks
    from hetcoll.compare import compare, slice_choices

    p = random_graph_platform(6, 0.4, seed=3)
    small = plan(p, "0", method="auto", nbytes=1000)
    assert "segment_size" not in small.params
    assert not REGISTRY[small.params["chosen"]].pipelined
    assert "multi_tree" not in small.params["candidates"]
    big = 16 * 2**20
    s = plan(p, "0", method="auto", nbytes=big)
    seg = s.params["segment_size"]
    assert seg in slice_choices(big) and seg is not None
    assert REGISTRY[s.params["chosen"]].pipelined
    # (the single pipelined trees are candidates too, left unsimulated here because their
    # bounds are above multi_tree's time)
    assert {"multi_tree", "fnf"} <= set(s.params["candidates"])
    ranked = compare(p, "bcast", root="0", nbytes=big, slices=slice_choices(big)).ranked
    best = min(c.predicted_time for c in ranked)
    # (compare without pruning simulates every candidate at the slice sizes that fit its
    # budget together; auto, pruning, goes on to smaller slices)
    assert simulate(p, s).makespan <= best * (1 + 1e-12)
    unsliced = min(c.predicted_time for c in ranked if c.segment_size is None)
    assert best < 0.8 * unsliced
    given_slice = plan(p, "0", method="auto", nbytes=big, segment_size=2**18)
    assert "segment_size" not in given_slice.params
    assert sum(f.nbytes for f in given_slice.flows) == big


def test_the_packing_prints_nothing_on_standard_output():
    """highspy 1.16 prints its banner from C++ as a solver is built; a command's JSON on
    standard output (``hetcoll run --json`` on every rank) must not start with it."""
    code = (
        "from hetcoll import load_platform\n"
        "from hetcoll.planners.steady import pack_arborescences, steady_problem\n"
        "prob = steady_problem(load_platform('fig1'), '1', 1 << 16)\n"
        "print('throughput', pack_arborescences(prob).throughput > 0)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert proc.stdout == "throughput True\n"


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(4, 16),
    seed=st.integers(0, 10**6),
    model=st.sampled_from(["one_port", "one_port_uni", "multi_port"]),
)
def test_the_local_searchs_kept_periods_are_each_nodes_period_after_every_step(n, seed, model):
    """throughput_tree's local search keeps each node's period up to date as it moves
    nodes (and undoes an ejection's trial moves): after every step they are the periods
    counted afresh, float for float, so its moves are the ones a recount would take."""
    from hetcoll.planners._common import prepare
    from hetcoll.planners.pipelined import _grow_one_port, _Search, plan_graph

    p = random_graph_platform(n, 0.4, seed=seed, model=model)
    g = plan_graph(prepare(p, "0", None, None, 2**20, 2**16))
    search = _Search(g, _grow_one_port(g))
    steps = 0
    while steps < 500 and (search.single_move() or search.eject()):
        steps += 1
        assert search.periods == [search.period(u) for u in range(g.k)]
    assert search.periods == [search.period(u) for u in range(g.k)]
