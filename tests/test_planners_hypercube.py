"""Hypercube planners: the paper's rules, permutations, determinism, simulator == calc_cost."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import PlannerError, UnknownNodeError, UnknownPlannerError, simulate
from hetcoll.generators import figueira_platform, random_link_costs
from hetcoll.planners import (
    REGISTRY,
    cube_embedding,
    hypercube_planners,
    plan_allgather,
    plan_allreduce,
    plan_barrier,
    plan_hypercube,
)
from hetcoll.platform import Node, Platform

METHODS = ("blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls")


def sym(n: int, seed: int, high: int = 20, integer: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.integers(1, high + 1, size=(n, n)).astype(float) if integer else rng.random((n, n))
    w = np.triu(w, 1)
    return w + w.T


def matrix_platform(w: np.ndarray, model="postal") -> Platform:
    return Platform(tuple(Node(str(i)) for i in range(len(w))), latency=w, model=model)


def indices(schedule):
    cube_ = schedule.hypercube
    return (
        np.array([int(v) for v in cube_.positions]),
        tuple((int(e), int(p)) for e, p in cube_.folds),
    )


# -- the paper's rules, against literal transcriptions -------------------------------------------


def reference_dim2(w):
    n = len(w)
    marked = [False] * n
    pos = [None] * n
    for i in range(0, n - 1, 2):
        k = 0
        while marked[k]:
            k += 1
        pos[i] = k
        marked[k] = True
        j = min((v for v in range(n) if not marked[v]), key=lambda v: (w[k][v], v))
        pos[i + 1] = j
        marked[j] = True
    return pos


def reference_eff(w):
    n = len(w)
    d = n.bit_length() - 1
    pos = [None] * n
    for j in range(d):
        pos[1 << j] = j
    used = set(range(d))
    for i in range(n):
        for j in range(d):
            y = i ^ (1 << j)
            if pos[y] is not None:
                continue
            best, choice = float("inf"), None
            for k in range(n):
                if k in used:
                    continue
                around = [pos[y ^ (1 << e)] for e in range(d)]
                weight = sum(w[k][v] for v in around if v is not None)
                if weight < best:
                    best, choice = weight, k
            pos[y] = choice
            used.add(choice)
    return pos


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32])
@pytest.mark.parametrize("seed", range(5))
def test_dim2_and_eff_follow_the_pseudocode(n, seed):
    w = sym(n, seed, high=5)  # small range: many ties, so the tie rules are exercised
    assert cube_embedding.dim2_embedding(w)[0].tolist() == reference_dim2(w.tolist())
    assert cube_embedding.eff_embedding(w)[0].tolist() == reference_eff(w.tolist())


@pytest.mark.parametrize("n", [2, 3, 8, 13, 64])
def test_tsts_is_an_mst_tour_along_a_gray_code(n):
    w = sym(n, n, high=50)
    parent = cube_embedding.mst_parents(w)
    weight = sum(w[v, parent[v]] for v in range(n) if parent[v] >= 0)
    graph = nx.from_numpy_array(w)
    assert weight == pytest.approx(nx.minimum_spanning_tree(graph).size(weight="weight"))
    if n & (n - 1):
        return
    positions, _ = cube_embedding.tsts_embedding(w)
    tour = positions[cube_embedding.gray_code(np.arange(n))]
    tree = nx.Graph([(v, int(parent[v])) for v in range(n) if parent[v] >= 0])
    tree.add_nodes_from(range(n))
    assert tour.tolist() == list(nx.dfs_preorder_nodes(tree, 0, sort_neighbors=sorted))
    gray = cube_embedding.gray_code(np.arange(n))
    assert all(bin(int(a ^ b)).count("1") == 1 for a, b in itertools.pairwise(gray))


def test_blind_folds_like_mpich():
    positions, folds = cube_embedding.blind_embedding(np.zeros((6, 6)))
    assert positions.tolist() == [1, 3, 4, 5]
    assert folds == ((0, 1), (2, 3))
    positions, folds = cube_embedding.blind_embedding(np.zeros((8, 8)))
    assert positions.tolist() == list(range(8)) and folds == ()


def test_fold_pairs_takes_cheap_disjoint_pairs():
    w = sym(7, 3, high=9)
    pairs = cube_embedding.fold_pairs(w, 3)
    nodes = [v for pair in pairs for v in pair]
    assert len(nodes) == len(set(nodes)) == 6
    cheapest = min(w[i, j] for i in range(7) for j in range(i + 1, 7))
    assert w[pairs[0]] == cheapest


# -- every embedding: a permutation, deterministic ------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [*range(1, 18), 31, 33, 100])
def test_every_embedding_is_a_permutation(method, n):
    w = sym(n, n)
    positions, folds = cube_embedding.embed(w, method)
    p = 1 << (n.bit_length() - 1)
    assert len(positions) == p and len(folds) == n - p
    nodes = positions.tolist() + [e for e, _ in folds]
    assert sorted(nodes) == list(range(n))
    assert {q for _, q in folds} <= set(positions.tolist())
    again = cube_embedding.embed(w.copy(), method)
    assert again[0].tolist() == positions.tolist() and again[1] == folds


@pytest.mark.parametrize("n", [8, 16, 37, 64])
def test_local_search_never_worse_and_deterministic(n):
    w = sym(n, 7 * n, high=5)
    start, folds = cube_embedding.eff_embedding(w)
    better, stats = cube_embedding.improve_embedding(w, start, folds)
    assert cube_embedding.calc_cost(w, better, folds) <= cube_embedding.calc_cost(w, start, folds)
    assert sorted(better.tolist()) == sorted(start.tolist())
    assert stats["evals"] <= 8 * len(start)
    again, stats2 = cube_embedding.improve_embedding(w, start, folds)
    assert again.tolist() == better.tolist() and stats2["moves"] == stats["moves"]
    same, stats0 = cube_embedding.improve_embedding(w, start, folds, max_evals=0)
    assert same.tolist() == start.tolist() and stats0["evals"] == 0


def test_local_search_gains_on_the_papers_topologies():
    # not a speed test: the local search must find a much cheaper cube than eff_cube
    w = random_link_costs(64, 5, seed=11).astype(float)
    blind = cube_embedding.calc_cost(w, cube_embedding.blind_embedding(w)[0])
    start, _ = cube_embedding.eff_embedding(w)
    better, _ = cube_embedding.improve_embedding(w, start)
    gain_eff = (blind - cube_embedding.calc_cost(w, start)) / blind
    gain_ls = (blind - cube_embedding.calc_cost(w, better)) / blind
    assert gain_ls >= gain_eff + 0.10


def test_local_search_evaluation_is_exact():
    w = sym(32, 5, integer=False)
    s = cube_embedding._Search(w, np.arange(32), ((),)[:0])
    bs = np.arange(1, 32)
    makespan, _, _ = s.evaluate(5, bs)
    for b, m in zip(bs, makespan, strict=True):
        pos = np.arange(32)
        pos[[5, b]] = pos[[b, 5]]
        assert m == cube_embedding.calc_cost(w, pos)


@pytest.mark.parametrize(
    "options", [{"candidates": 0}, {"max_evals": -1}, {"time_limit": "soon"}, {"candidates": 1.5}]
)
def test_local_search_options_are_checked(options):
    p = figueira_platform(8, seed=0)
    with pytest.raises(PlannerError, match="eff_cube_ls: "):
        plan_allreduce(p, method="eff_cube_ls", options=options)


# -- the planners on platforms ------------------------------------------------------------------


def test_registry_metadata():
    assert hypercube_planners() == sorted(METHODS)
    for name in METHODS:
        info = REGISTRY[name]
        assert info.kind == "hypercube"
        assert set(info.collectives) == {"allreduce", "allgather", "barrier"}
        assert "Figueira" in info.paper


@pytest.mark.parametrize("method", METHODS)
def test_planners_give_valid_schedules(method):
    p = figueira_platform(11, 20, seed=4)
    for schedule in (
        plan_allreduce(p, method=method, nbytes=64, op="max"),
        plan_allgather(p, method=method, nbytes=16),
        plan_barrier(p, method=method),
        plan_allreduce(p, ["3", "1", "7", "9", "0"], method=method),
    ):
        schedule.validate(p)
        assert schedule.algorithm == method
        assert sorted(schedule.participants) == sorted(schedule.hypercube.nodes)
    assert plan_allreduce(p, method=method, op="max").hypercube.combine == "max"
    assert plan_allgather(p, method=method).hypercube.combine == "concat"
    assert plan_barrier(p, method=method).hypercube.combine == "none"


def test_members_subset_and_errors():
    p = figueira_platform(6, seed=2)
    s = plan_allreduce(p, ["5", "2", "4"], method="blind")
    assert s.hypercube.positions == ("4", "5") and s.hypercube.folds == (("2", "4"),)
    with pytest.raises(UnknownNodeError, match="unknown node 'X'"):
        plan_allreduce(p, ["X"])
    with pytest.raises(PlannerError, match="listed twice"):
        plan_allreduce(p, ["1", "1"])
    with pytest.raises(PlannerError, match="empty"):
        plan_allreduce(p, [])
    with pytest.raises(PlannerError, match="unknown reduction 'avg'"):
        plan_allreduce(p, op="avg")
    with pytest.raises(PlannerError, match="does not plan an allreduce"):
        plan_allreduce(p, method="fnf")
    with pytest.raises(UnknownPlannerError):
        plan_allreduce(p, method="nope")
    with pytest.raises(PlannerError, match="not 'bcast'"):
        plan_hypercube(p, "bcast")
    with pytest.raises(PlannerError, match="bytes >= 0"):
        plan_allreduce(p, nbytes=-1)
    with pytest.warns(UserWarning, match="ignores unknown option 'speed'"):
        plan_allreduce(p, method="eff_cube", options={"speed": 1})
    assert plan_allreduce(p, op="MPI_MAX").hypercube.combine == "max"


def test_tini_platform_plans_on_sender_costs():
    # sender-only costs are asymmetric: the planners weigh a pair by its slower direction
    p = Platform(tuple(Node(str(i), t_ini=(i + 1) * 1e-6) for i in range(4)), model="tini")
    s = plan_barrier(p, method="eff_cube")
    assert simulate(p, s).makespan > 0


@settings(max_examples=60)
@given(
    n=st.integers(1, 13),
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(METHODS),
    collective=st.sampled_from(["allreduce", "barrier", "allgather"]),
    integer=st.booleans(),
)
def test_simulator_equals_calc_cost(n, seed, method, collective, integer):
    w = sym(n, seed, integer=integer)
    p = matrix_platform(w)
    nbytes = 0 if collective == "barrier" else seed % 100
    schedule = plan_hypercube(p, collective, method=method, nbytes=nbytes)
    positions, folds = indices(schedule)
    assert simulate(p, schedule).makespan == cube_embedding.calc_cost(w, positions, folds)


@settings(max_examples=30)
@given(n=st.integers(2, 12), seed=st.integers(0, 2**32 - 1), method=st.sampled_from(METHODS))
def test_asymmetric_costs_follow_each_direction(n, seed, method):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 20, size=(n, n)).astype(float)
    np.fill_diagonal(w, 0)
    p = matrix_platform(w)
    schedule = plan_allreduce(p, method=method)
    positions, folds = indices(schedule)
    predicted = simulate(p, schedule).makespan
    # the simulator follows each message's own direction ...
    assert predicted == cube_embedding.cube_cost(w, positions, folds)
    # ... which the paper's one-weight-per-pair cost, with the slower direction, bounds
    assert predicted <= cube_embedding.calc_cost(np.maximum(w, w.T), positions, folds)
    if (w != w.T).any():
        with pytest.raises(ValueError, match="must be symmetric"):
            cube_embedding.calc_cost(w, positions, folds)


def test_hockney_on_a_matrix_matches_calc_cost_of_its_delays():
    w = sym(8, 1, integer=False) * 1e-3
    bw = np.full((8, 8), 1e6)
    p = Platform(tuple(Node(str(i)) for i in range(8)), latency=w, bandwidth=bw, model="hockney")
    s = plan_allreduce(p, method="eff_cube", nbytes=1000)
    positions, _ = indices(s)
    delays = np.array(p.model.bind(p).delay_matrix(1000))  # a copy: the matrix is read-only
    np.fill_diagonal(delays, 0)
    assert simulate(p, s).makespan == pytest.approx(cube_embedding.calc_cost(delays, positions))


def brute_force_cost(w: np.ndarray) -> float:
    """The cheapest embedding of 8 nodes, over all 8! placements (vectorised)."""
    perms = np.array(list(itertools.permutations(range(len(w)))))
    idx = np.arange(perms.shape[1])
    c = np.zeros(perms.shape)
    for i in range(perms.shape[1].bit_length() - 1):
        q = idx ^ (1 << i)
        c = np.maximum(c, c[:, q]) + w[perms[:, q], perms]
    return float(c.max(axis=1).min())


@pytest.mark.parametrize("seed", range(3))
def test_no_heuristic_beats_the_optimum(seed):
    w = sym(8, 100 + seed, high=20)
    best = brute_force_cost(w)
    costs = {m: cube_embedding.calc_cost(w, cube_embedding.embed(w, m)[0]) for m in METHODS}
    assert min(costs.values()) >= best
    assert costs["eff_cube_ls"] <= costs["eff_cube"]
