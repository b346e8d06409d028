"""Park et al. (2004) eq. (2)-(4), computed here in closed form, against the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll import Node, Platform, Schedule, Tree, plan, simulate
from hetcoll.schedule import Flow

REL = 1e-12


def _random_instance(seed: int, n: int, *, asym: bool = True):
    rng = np.random.default_rng(seed)
    w = rng.uniform(1e-3, 0.2, (n, n))
    if not asym:
        w = np.triu(w, 1) + np.triu(w, 1).T
    np.fill_diagonal(w, 0.0)
    # a random rooted tree with random send orders: node perm[k] hangs off an earlier one
    perm = [0, *(rng.permutation(n - 1) + 1).tolist()]
    parent = {perm[k]: perm[int(rng.integers(0, k))] for k in range(1, n)}
    children: dict[int, list[int]] = {}
    for c in rng.permutation(list(parent)).tolist():
        children.setdefault(parent[c], []).append(c)
    return w, parent, children


def _schedule(children: dict[int, list[int]], nbytes: int = 0) -> Schedule:
    tree = Tree("0", {str(p): tuple(str(c) for c in cs) for p, cs in children.items()})
    return Schedule("bcast", "test", nbytes, (Flow(tree, nbytes),))


def _platform(w, model, bandwidth=None, t_byte=0.0):
    nodes = tuple(Node(str(i), t_byte=t_byte) for i in range(len(w)))
    return Platform(nodes, latency=w, bandwidth=bandwidth, model=model)


def _eq2(w, children, o, g, o_r, nbytes=0, bw=None, t_byte=0.0):
    """eq. (2): T_i = T_j + (c - 1)(T_so + T_G) + L_ji + T_RO, c = i's place among j's sends.

    Extended as LogGP: each earlier send also costs n * t_byte, the wire n / bandwidth."""
    t = {0: 0.0}
    todo = [0]
    while todo:
        j = todo.pop()
        for c, i in enumerate(children.get(j, []), start=1):
            wire = 0.0 if bw is None else nbytes / bw[j, i]
            t[i] = t[j] + (c - 1) * (o + g + nbytes * t_byte) + w[j, i] + wire + o_r
            todo.append(i)
    return t


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 14),
    o=st.sampled_from([0.0, 1e-4, 3e-3]),
    g=st.sampled_from([0.0, 2e-4, 1e-2]),
    o_r=st.sampled_from([0.0, 5e-4]),
)
def test_eq2_recursion_equals_simulator(seed, n, o, g, o_r):
    w, _, children = _random_instance(seed, n)
    model = {"name": "postal", "overhead": o, "gap": g, "recv_overhead": o_r}
    pred = simulate(_platform(w, model), _schedule(children))
    want = _eq2(w, children, o, g, o_r)
    for i, t in want.items():
        assert pred.arrival[str(i)] == pytest.approx(t, rel=REL, abs=1e-15)
    assert pred.makespan == pytest.approx(max(want.values()), rel=REL)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 10), nbytes=st.integers(0, 10**6))
def test_eq2_with_per_byte_costs_equals_simulator(seed, n, nbytes):
    w, _, children = _random_instance(seed, n)
    rng = np.random.default_rng(seed + 1)
    bw = rng.uniform(1e5, 1e8, (n, n))
    np.fill_diagonal(bw, np.inf)
    model = {"name": "postal", "overhead": 1e-4, "gap": 2e-4, "recv_overhead": 3e-5}
    pred = simulate(_platform(w, model, bw, t_byte=1e-9), _schedule(children, nbytes))
    want = _eq2(w, children, 1e-4, 2e-4, 3e-5, nbytes, bw, 1e-9)
    assert pred.makespan == pytest.approx(max(want.values()), rel=REL)
    for i, t in want.items():
        assert pred.arrival[str(i)] == pytest.approx(t, rel=REL, abs=1e-15)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 16))
def test_eq3_flat_tree_is_max_direct_latency(seed, n):
    w, _, _ = _random_instance(seed, n)
    p = _platform(w, "postal")
    pred = simulate(p, plan(p, "0", method="flat"))
    assert pred.makespan == max(w[0, i] for i in range(1, n))  # eq. (3), exactly
    for i in range(1, n):
        assert pred.arrival[str(i)] == w[0, i]


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 16))
def test_eq4_path_sums_for_every_tree(seed, n):
    """eq. (4): T_B = max_i (L_j + L_ji), L_j the latency sum from the root to the parent."""
    w, parent, children = _random_instance(seed, n)
    path = {0: 0.0}

    def latency_to(v: int) -> float:
        if v not in path:
            path[v] = latency_to(parent[v]) + w[parent[v], v]
        return path[v]

    want = max(latency_to(parent[i]) + w[parent[i], i] for i in parent)
    pred = simulate(_platform(w, "postal"), _schedule(children))
    assert pred.makespan == pytest.approx(want, rel=REL)


def test_eq2_counts_sends_not_children():
    # eq. (2) read literally with c = number of children would delay the first child too;
    # a sender starts its first send at once and its c-th after (c-1)(o + g).
    w = np.array([[0, 1.0, 1.0, 1.0], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]])
    p = _platform(w, {"name": "postal", "overhead": 0.1, "gap": 0.2})
    pred = simulate(p, plan(p, "0", method="flat"))
    assert [pred.arrival[k] for k in "123"] == pytest.approx([1.0, 1.3, 1.6])
