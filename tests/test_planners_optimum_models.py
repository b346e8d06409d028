"""``hetcoll optimum`` under every cost model: the optimum of the model's own resources
(Beaumont, Marchal & Robert 2004, Sec. 3.2 for the multi-port model), never exceeded by any
planner's simulated throughput."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run
from hetcoll import Platform, plan, simulate
from hetcoll.errors import HetcollError
from hetcoll.generators import switch_platform
from hetcoll.planners import REGISTRY
from hetcoll.planners.steady import lp_throughput, model_problem, optimum

MiB = 2**20


def star(t_byte: float = 1e-9) -> Platform:
    """Root 0 linked to 1, 2, 3 at 1e8 B/s; every node's send costs ``t_byte`` s/B."""
    return Platform.from_dict(
        {
            "nodes": [{"id": str(i), "t_byte": t_byte} for i in range(4)],
            "links": [{"u": "0", "v": str(i), "bandwidth": 1e8} for i in (1, 2, 3)],
        }
    )


def test_multi_port_optimum_of_a_star_is_the_link_rate(capsys):
    """By hand (Sec. 3.2): the root is busy 3 x 65.5 us per slice, each link 655 us, in
    parallel: 1e8 B/s, three times the one-port value; flat reaches it."""
    p = star()
    best = optimum(p, "0", 64 * 1024, "multi_port")
    assert best.throughput == pytest.approx(1e8, rel=1e-9)
    assert best.upper_bound == pytest.approx(1e8, rel=1e-9)
    assert best.ports == "send+links"
    assert optimum(p, "0", 64 * 1024, "one_port").throughput == pytest.approx(1e8 / 3, rel=1e-9)
    lp = lp_throughput(model_problem(p, "0", 64 * 1024, "multi_port"))
    assert lp.throughput * 64 * 1024 == pytest.approx(1e8, rel=1e-9)
    s = plan(p, "0", method="flat", model="multi_port", nbytes=64 * MiB, segment_size=64 * 1024)
    flat = 64 * MiB / simulate(p, s, model="multi_port").makespan
    assert flat == pytest.approx(1e8, rel=1e-3) and flat <= best.throughput * (1 + 1e-12)


def test_optimum_cli_multi_port_json(tmp_path, capsys):
    path = tmp_path / "star.json"
    path.write_text(json.dumps(star().to_dict()))
    code, out, _ = run(
        capsys, "optimum", path, "--root", "0", "--segment-size", "64KiB", "--model",
        "multi_port", "--json",
    )  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["throughput"] == pytest.approx(1e8, rel=1e-9)
    assert doc["ports"] == "send+links"


def test_tini_optimum_has_no_receive_port():
    """Sender-only costs: a node may receive from several senders at once.  Root t_ini 1,
    a and b t_ini 3: flat (weight 1/6) and the chains r-a-b, r-b-a (1/3 each) keep every
    sender busy all the time: 5/6 slice/s (a receive port would cap it lower: a would
    receive 1/6 + 1/3 slices from r and 1/3 x 3 s from b per second)."""
    nodes = [{"id": "r", "t_ini": 1.0}, {"id": "a", "t_ini": 3.0}, {"id": "b", "t_ini": 3.0}]
    p = Platform.from_dict({"model": "tini", "nodes": nodes})
    best = optimum(p, "r", 1)
    assert best.slices_per_second == pytest.approx(5 / 6, rel=1e-9)
    assert best.ports == "send"


def test_unbounded_is_refused_in_one_line():
    p = Platform.from_dict({"model": "postal", "nodes": [{"id": "a"}, {"id": "b"}],
                            "latency": [[0, 1e-3], [1e-3, 0]]})  # fmt: skip
    with pytest.raises(HetcollError, match="the throughput is unbounded"):
        optimum(p, "a", 1024)


# -- the invariant: no planner exceeds the optimum, under every model ---------------------------


def _links(draw, n):
    pairs = [(i, draw(st.integers(0, i - 1))) for i in range(1, n)]  # a spanning tree
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n))
    pairs += [(a, b) for a, b in extra if a != b]
    seen, links = set(), []
    for a, b in pairs:
        if frozenset((a, b)) in seen:
            continue
        seen.add(frozenset((a, b)))
        links.append(
            {
                "u": str(a),
                "v": str(b),
                "latency": draw(st.sampled_from([0.0, 1e-5, 1e-3])),
                "bandwidth": draw(st.sampled_from([1e6, 1e7, 1e8])),
            }
        )
    return links


@st.composite
def link_platforms(draw):
    n = draw(st.integers(2, 6))
    nodes = [
        {
            "id": str(i),
            "t_ini": draw(st.sampled_from([1e-6, 1e-5, 1e-4])),
            "t_byte": draw(st.sampled_from([0.0, 1e-9, 1e-8])),
        }
        for i in range(n)
    ]
    return Platform.from_dict({"nodes": nodes, "links": _links(draw, n)})


MODELS = [
    "tini",
    "hockney",
    {"name": "hockney", "ports": "unidirectional"},
    {"name": "hockney", "contention": "shared"},
    {"name": "postal", "overhead": 1e-5, "gap": 1e-5},
    "one_port",
    "one_port_uni",
    "multi_port",
]


def _bcast_planners():
    return sorted(
        name
        for name, info in REGISTRY.items()
        if info.serves("bcast") and info.kind in ("tree", "exact", "select")
    )


def _check_never_above(p: Platform, model, root: str, segment: int, slices: int) -> int:
    """Plan with every planner that accepts the request; each one's rate (bytes over
    makespan, and the simulator's steady throughput) is at most the optimum at the largest
    message the schedule sends.  Returns how many planners were checked."""
    checked = 0
    nbytes = segment * slices
    for name in _bcast_planners():
        try:
            s = plan(p, root, method=name, model=model, nbytes=nbytes, segment_size=segment)
        except HetcollError:
            continue  # not for this request (a model it refuses, too many members)
        pred = simulate(p, s, model=model)
        largest = max(c.nbytes for c in s.program().chunks)
        try:
            best = optimum(p, root, largest, model)
        except HetcollError as exc:
            assert "unbounded" in str(exc)
            continue
        bound = best.upper_bound * (1 + 1e-9)
        assert nbytes / pred.makespan <= bound, (name, model, nbytes / pred.makespan, bound)
        if pred.throughput is not None:
            assert pred.throughput <= bound, (name, model, pred.throughput, bound)
        checked += 1
    return checked


@pytest.mark.parametrize("model", MODELS, ids=lambda m: json.dumps(m))
@settings(max_examples=4)
@given(p=link_platforms(), slices=st.sampled_from([1, 4]), data=st.data())
def test_no_planner_exceeds_the_optimum(model, p, slices, data):
    root = data.draw(st.sampled_from(p.ids))
    assert _check_never_above(p, model, root, 4096, slices) > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_no_planner_exceeds_the_optimum_on_switches(seed):
    p = switch_platform(6, seed=seed)
    assert _check_never_above(p, "switch", p.ids[0], 2048, 4) > 0


def test_every_model_has_a_finite_bounded_optimum_on_fig2():
    """park-fig2 (a latency matrix) under each matrix model: a certified finite value; under
    tini (its nodes have no costs) the throughput is unbounded."""
    from hetcoll import load_platform

    p = load_platform("park-fig2")
    with pytest.raises(HetcollError, match="unbounded"):
        optimum(p, "A", 1024, "tini")
    for model in ("hockney", {"name": "postal", "gap": 1e-3}):
        best = optimum(p, "A", 1024, model)
        assert math.isfinite(best.throughput) and best.throughput > 0
        assert best.upper_bound == pytest.approx(best.throughput, rel=1e-8)
        assert np.all(np.array(best.n) >= 0)


# -- the edge loads: least link time at the optimal throughput, certified -----------------------


def test_edge_loads_reach_the_least_link_time_and_say_so():
    """A random 50-node platform (Table 2's density): 100 trees left the loads 1.2 % above
    their minimum (link time 41.82 against 41.34); now the column generation runs until its
    Lagrangian certificate closes, and the loads still carry the optimum to every node."""
    import networkx as nx

    from hetcoll.generators import random_graph_platform
    from hetcoll.planners.steady import (
        LOAD_TOL,
        edge_loads_certified,
        pack_arborescences,
        steady_problem,
    )

    p = random_graph_platform(50, 0.12, seed=0)
    prob = steady_problem(p, "0", 10**6)
    pack = pack_arborescences(prob)
    n, gap = edge_loads_certified(prob, pack)
    assert 0 <= gap <= LOAD_TOL
    assert float(prob.T @ n) < 41.5  # the 100-tree stop gave 41.82
    assert np.all(prob.usage @ n <= 1 + 1e-9)  # no port busier than one second per second
    g = nx.DiGraph()
    for e in np.flatnonzero(n > 0):
        g.add_edge(int(prob.src[e]), int(prob.dst[e]), capacity=float(n[e]))
    for w in (1, 17, 49):
        assert nx.maximum_flow_value(g, 0, w) >= pack.throughput * (1 - 1e-6)


def test_edge_loads_smoothed_prices_take_fewer_solves_to_the_same_minimum(monkeypatch):
    """Smoothed prices (the default) reach the same certified least link time as plain
    column generation in far fewer master solves (work, not time: HiGHS is
    deterministic): 379 plain, 166 smoothed on this platform."""
    from hetcoll.generators import random_graph_platform
    from hetcoll.planners import steady

    prob = steady.steady_problem(random_graph_platform(50, 0.12, seed=0), "0", 10**6)
    pack = steady.pack_arborescences(prob)
    solves, real = [0], steady._Master.solve

    def counted(self):
        solves[0] += 1
        return real(self)

    monkeypatch.setattr(steady._Master, "solve", counted)
    found = {}
    for smoothing in (None, 0.0):
        solves[0] = 0
        args = () if smoothing is None else (smoothing,)
        n, gap = steady.edge_loads_certified(prob, pack, *args)
        found[smoothing] = (solves[0], float(prob.T @ n), gap)
    (fast, least, gap), (plain, least0, gap0) = found[None], found[0.0]
    assert gap <= steady.LOAD_TOL and gap0 <= steady.LOAD_TOL
    assert least == pytest.approx(least0, rel=2 * steady.LOAD_TOL)
    assert fast <= 0.6 * plain, (fast, plain)


def test_optimum_json_says_whether_n_is_minimal(capsys):
    code, out, _ = run(capsys, "optimum", "park-fig2", "--root", "A", "--segment-size", "1KiB",
                       "--model", "hockney", "--json")  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["n_minimal"] is True and 0 <= doc["n_gap"] <= 1e-6


def test_optimum_lp_says_when_its_loads_are_not_certified(tmp_path, capsys, monkeypatch):
    """The LP method's second LP (least link time) stopped by its time limit: ``n`` is the
    first LP's, so ``n_gap`` is unknown (null) and a warning names the limit, never 0.
    HiGHS really stops: the second call gets a time limit of 0 (no wall clock involved)."""
    import scipy.optimize

    from hetcoll.generators import random_graph_platform

    real, calls = scipy.optimize.linprog, []

    def second_stops(*args, options=None, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            options = {**options, "time_limit": 0.0}
        return real(*args, options=options, **kwargs)

    path = tmp_path / "g.json"
    path.write_text(json.dumps(random_graph_platform(8, 0.5, seed=1).to_dict()))
    args = ("optimum", path, "--root", "0", "--segment-size", "64KiB", "--method", "lp")
    code, out, err = run(capsys, *args, "--json")
    assert code == 0 and json.loads(out)["n_gap"] == 0 and json.loads(out)["n_minimal"] is True
    monkeypatch.setattr(scipy.optimize, "linprog", second_stops)
    code, out, err = run(capsys, *args, "--time-limit", "7", "--json")
    doc = json.loads(out)
    assert code == 0 and len(calls) == 2
    assert doc["n_gap"] is None and doc["n_minimal"] is None
    assert err.count("\n") == 1 and err.startswith("hetcoll: warning: ")
    assert "time limit, 7 s" in err and "n_gap unknown" in err
    assert doc["throughput"] > 0  # the throughput itself solved: still reported


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_master_column_is_scipys_column_sum_bit_for_bit(data):
    """steady._column (the column generation's column of a tree, read off the CSC arrays)
    is ``A[:, tree].sum(axis=1)``: the same rows and every value the same bits (the terms
    added in the same order), on matrices whose values differ in magnitude."""
    from scipy.sparse import random as sparse_random

    from hetcoll.planners.steady import _column

    rows, cols = data.draw(st.integers(1, 30)), data.draw(st.integers(1, 40))
    seed = data.draw(st.integers(0, 2**31))
    A = sparse_random(rows, cols, density=0.3, format="csc", random_state=seed)
    A.data = A.data * 10.0 ** np.random.default_rng(seed).integers(-8, 8, len(A.data))
    tree = np.array(sorted(data.draw(st.sets(st.integers(0, cols - 1), max_size=cols))), int)
    got_rows, got = _column(A, tree)
    want = np.asarray(A[:, tree].sum(axis=1)).ravel()
    assert got_rows.tolist() == np.flatnonzero(want).tolist()
    assert got.tobytes() == want[got_rows].tobytes()
