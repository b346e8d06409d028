"""The simulator on the rooted family: closed forms worked by hand (a chain, a star, the
trees of Banikazemi et al.'s Fig. 1 run backwards), the combine rule (one combine at a
time, in program order, ``n gamma`` each) under every model, and the emulating executor
equal to the simulator to the nanosecond."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hetcoll import Platform, load_platform, simulate
from hetcoll.planners import plan, plan_allreduce
from hetcoll.platform import Node
from hetcoll.schedule import Flow, Schedule, Tree

US = 1e-6


def tini(costs, t_byte=0.0, gamma=None):
    gamma = gamma or [0.0] * len(costs)
    nodes = tuple(
        Node(str(i), c * US, t_byte, gamma=g)
        for i, (c, g) in enumerate(zip(costs, gamma, strict=True))
    )
    return Platform(nodes, model="tini")


def chain(n):
    return Tree.from_edges("0", [(str(i), str(i + 1)) for i in range(n - 1)])


def star(n, order=None):
    kids = order if order is not None else [str(i) for i in range(1, n)]
    return Tree("0", {"0": tuple(kids)})


def one(tree, kind, nbytes, collective=None):
    return Schedule(collective or kind, "hand", nbytes, (Flow(tree, nbytes, kind=kind),))


def test_a_reduce_up_a_chain_adds_every_send_and_combine():
    """Node k sends first; each node combines once then sends on:
    T = sum_{i >= 1} t_i + sum_{i < k} n gamma_i."""
    costs, gamma, n = [5, 7, 3, 11], [1e-9, 2e-9, 3e-9, 4e-9], 1000
    p = tini(costs, gamma=gamma)
    got = simulate(p, one(chain(4), "reduce", n)).makespan
    assert got == pytest.approx((7 + 3 + 11) * US + n * (1e-9 + 2e-9 + 3e-9), rel=1e-12)


def test_a_star_reduce_combines_in_listed_order_one_at_a_time():
    """Arrivals a_j = t_j, combined in the listed order: F_j = max(a_j, F_{j-1}) + n gamma.
    Listed in arrival order that is max_j (a_(j) + (m - j + 1) n gamma); listed otherwise,
    a result that arrived early waits for the earlier-listed ones (rule 5)."""
    costs, n, g = [1, 10, 1, 4], 1000, 3e-9  # root, then arrivals 10, 1, 4 µs
    p = tini(costs, gamma=[g, 0, 0, 0])
    c = n * g
    by_arrival = simulate(p, one(star(4, ["2", "3", "1"]), "reduce", n)).makespan
    assert by_arrival == pytest.approx(max(1 * US + 3 * c, 4 * US + 2 * c, 10 * US + c))
    listed = simulate(p, one(star(4, ["1", "2", "3"]), "reduce", n)).makespan
    assert listed == pytest.approx(10 * US + 3 * c)  # 2 and 3 wait for 1
    assert listed > by_arrival


@pytest.mark.parametrize(
    ("method", "bcast", "reduce"),
    [("binomial", 700, 900), ("spoc", 500, 700), ("fnf", 400, 400)],
)
def test_fig1_trees_run_backwards(method, bcast, reduce):
    """Banikazemi et al. Fig. 1: the broadcasts take 700, 500, 400 µs; the same trees run
    backwards (each node sends once, t_ini of its own, gamma 0) take the longest path of
    senders to the root: binomial 8->7->5->1 = 900, SPOC 8->3->6->1 = 700 (node 6 is fast:
    300 + 300 + 100), FNF 8->6->1 = 400 µs."""
    p = load_platform("fig1")
    assert simulate(p, plan(p, "1", method=method)).makespan == pytest.approx(bcast * US)
    for collective in ("reduce", "gather"):
        sched = plan(p, "1", method=method, collective=collective, nbytes=4)
        assert simulate(p, sched).makespan == pytest.approx(reduce * US)


def test_gather_messages_grow_and_scatter_messages_shrink_along_a_chain():
    """Node i of a chain of k + 1 sends its parent the k - i + 1 blocks of its subtree
    (gather) or receives them (scatter): t_ini + (k - i + 1) B t_byte per hop."""
    costs, t_byte, b, k = [4, 6, 8, 10], 1e-8, 500, 3
    p = tini(costs, t_byte=t_byte)
    total = 4 * b
    gather = simulate(p, Schedule("gather", "h", b, (Flow(chain(4), total, kind="gather"),)))
    want = sum(costs[i] * US + (k - i + 1) * b * t_byte for i in range(1, 4))
    assert gather.makespan == pytest.approx(want, rel=1e-12)
    scatter = simulate(p, Schedule("scatter", "h", b, (Flow(chain(4), total, kind="scatter"),)))
    want = sum(costs[i - 1] * US + (k - i + 1) * b * t_byte for i in range(1, 4))
    assert scatter.makespan == pytest.approx(want, rel=1e-12)
    assert scatter.arrival["1"] == pytest.approx(costs[0] * US + 3 * b * t_byte)


def test_an_allreduce_is_the_reduce_then_the_broadcast():
    p = tini([1, 2, 3, 4, 5], gamma=[1e-9] * 5)
    tree = Tree("0", {"0": ("1", "2"), "1": ("3", "4")})
    reduce = simulate(p, one(tree, "reduce", 100)).makespan
    bcast = simulate(p, Schedule("bcast", "h", 100, (Flow(tree, 100),))).makespan
    both = Schedule("allreduce", "h", 100, (Flow(tree, 100, kind="reduce"), Flow(tree, 100)))
    assert simulate(p, both).makespan == pytest.approx(reduce + bcast)


def matrix(n, model, seed=0, **params):
    rng = np.random.default_rng(seed)
    lat = np.round(rng.uniform(1, 9, (n, n))) * US
    np.fill_diagonal(lat, 0)
    nodes = tuple(Node(str(i), 2 * US, 1e-9, gamma=2e-9 * (i % 3)) for i in range(n))
    return Platform(
        nodes, latency=lat, bandwidth=np.full((n, n), 1e9), model={"name": model, **params}
    )


def test_postal_star_reduce_arrivals_are_the_latencies():
    """Postal: a transfer arrives latency + n / bandwidth + recv_overhead after it starts;
    each leaf starts at 0; the root combines in listed order."""
    p = matrix(4, "postal", recv_overhead=1e-6)
    n = 1000
    lat = p.latency
    arrive = {c: lat[c, 0] + n / 1e9 + 1e-6 for c in (1, 2, 3)}
    order = sorted(arrive, key=arrive.get)
    sched = one(star(4, [str(c) for c in order]), "reduce", n)
    g = p.gamma[0] * n
    t = 0.0
    for c in order:
        t = max(arrive[c], t) + g
    assert simulate(p, sched).makespan == pytest.approx(t, rel=1e-12)


def test_hockney_receive_port_serialises_a_star_reduce():
    """Hockney: the root's receive port takes one transfer at a time (each busy for its
    whole delay), in the order asked for (all at 0: node order); combines overlap later
    arrivals."""
    p = matrix(4, "hockney")
    n = 1000
    t, done = 0.0, []
    for c in (1, 2, 3):
        d = p.model.bind(p).delay(c, 0, n)
        t += d
        done.append(t)
    g = p.gamma[0] * n
    f = 0.0
    for a in done:
        f = max(a, f) + g
    assert simulate(p, one(star(4), "reduce", n)).makespan == pytest.approx(f, rel=1e-12)


def test_a_hypercube_allreduce_pays_each_combine():
    """Two nodes, postal without overheads: each receives the other's vector after w and
    combines it, n gamma(own); the makespan is the slower combiner's."""
    nodes = (Node("a", gamma=1e-9), Node("b", gamma=5e-9))
    p = Platform(nodes, latency=[[0, 3e-6], [3e-6, 0]], model="postal")
    n = 1000
    got = simulate(p, plan_allreduce(p, method="blind", nbytes=n, op="sum")).makespan
    assert got == pytest.approx(3e-6 + n * 5e-9)
    gather = simulate(p, plan_allreduce(p, method="blind", nbytes=n, op="sum")).arrival
    assert gather["a"] == pytest.approx(3e-6 + n * 1e-9)


def test_combine_costs_nothing_when_the_program_does_not_reduce():
    """gamma prices reductions only: a gather, an allgather over a hypercube and a
    broadcast take the same time with and without it."""
    from hetcoll.planners import plan_allgather

    p0 = matrix(5, "postal")
    p1 = Platform(
        tuple(replace(n, gamma=1e-3) for n in p0.nodes),
        latency=p0.latency,
        bandwidth=p0.bandwidth,
        model=p0.model,
    )
    for make in (
        lambda p: plan(p, "0", method="binomial", collective="gather", nbytes=64),
        lambda p: plan_allgather(p, method="eff_cube", nbytes=64),
        lambda p: plan(p, "0", method="fnf", nbytes=64),
    ):
        assert simulate(p0, make(p0)).makespan == simulate(p1, make(p1)).makespan


@pytest.mark.parametrize("model", ["tini", "postal"])
def test_the_emulating_executor_equals_the_simulator_on_rooted_schedules(model):
    """Whole nanoseconds everywhere, so the executor's modelled times must equal the
    simulator's exactly: every planner's reduce, gather, scatter and compositions, with
    combine costs.  (Under ``hockney`` a receive port that several children send to at
    once serves them in the order the emulation sees their stamps, not the simulator's
    node order: docs/runtime.md, Emulated heterogeneity.)"""
    from test_runtime_executor import assert_same_times

    rng = np.random.default_rng(5)
    n = 6
    nodes = tuple(
        Node(str(i), float(rng.integers(1, 9)) * US, 1e-9, gamma=float(rng.integers(0, 4)) * 1e-9)
        for i in range(n)
    )
    if model == "tini":
        p = Platform(nodes, model="tini")
    else:
        lat = np.round(rng.uniform(1, 9, (n, n))) * US
        np.fill_diagonal(lat, 0)
        p = Platform(nodes, latency=lat, bandwidth=np.full((n, n), 1e9), model=model)
    for collective in ("reduce", "gather", "scatter", "allreduce", "allgather", "reduce_scatter"):
        root = None if collective.startswith("all") or collective == "reduce_scatter" else "2"
        for method in ("binomial", "flat", "rooted_ls"):
            sched = plan(p, root, method=method, collective=collective, nbytes=1000)
            assert_same_times(p, sched.program())
