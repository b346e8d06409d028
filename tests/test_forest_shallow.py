"""The optimal packing's trees rebuilt along the fastest paths of no dearer edges
(:mod:`hetcoll.planners.forestshallow`): a spanning arborescence of the same root, no
dearer, every node's way from the root no slower; and the pipeline depths computed at once
equal to a walk down each tree."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.arborescence import min_arborescence
from hetcoll.generators import capacitated_graph_platform
from hetcoll.planners.forest import forest_problem, pack_forest
from hetcoll.planners.forestdepth import heights
from hetcoll.planners.forestshallow import depths, shallower


def _ways(prob, tree, direction, root):
    """Each node's seconds from the root down ``tree`` at ``prob.T``, by walking up."""
    kid, mom = (prob.dst, prob.src) if direction == "out" else (prob.src, prob.dst)
    up = {int(kid[e]): (int(mom[e]), float(prob.T[e])) for e in tree}
    assert len(up) == prob.n - 1 and root not in up  # one edge into every other node
    out = {}
    for v in range(prob.n):
        t, u, seen = 0.0, v, set()
        while u != root:
            assert u not in seen  # no cycle: every node reaches the root
            seen.add(u)
            u, dt = up[u]
            t += dt
        out[v] = t
    return out


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(3, 14),
    seed=st.integers(0, 2**16),
    direction=st.sampled_from(["out", "in"]),
    zeros=st.floats(0.0, 0.95),
)
def test_a_rebuilt_tree_is_no_dearer_and_no_slower(n, seed, direction, zeros):
    """On random link graphs with random prices (many of them zero, as the master's duals
    are), every root's cheapest tree rebuilt: a spanning arborescence of that root, its
    price at most the tree's, every node's way from the root at most the tree's."""
    p = capacitated_graph_platform(n, seed=seed % 97)
    prob = forest_problem(p, 2**20, None, "out")
    rng = np.random.default_rng(seed)
    cost = rng.random(prob.m) * (rng.random(prob.m) > zeros)
    for root in range(n):
        ends = (prob.src, prob.dst) if direction == "out" else (prob.dst, prob.src)
        tree = np.sort(np.array(min_arborescence(n, *ends, cost, root), dtype=np.int64))
        new = shallower(prob, cost, root, direction, tree)
        assert len(set(new.tolist())) == n - 1
        assert cost[new].sum() <= cost[tree].sum() * (1 + 1e-9) + 1e-12
        before, after = _ways(prob, tree, direction, root), _ways(prob, new, direction, root)
        assert all(after[v] <= before[v] * (1 + 1e-9) for v in range(n))


def test_free_edges_make_a_chain_a_star():
    """Every price zero: the chain 0 -> 1 -> 2 -> 3 becomes the star out of 0 where the
    direct links are faster than the chain's ways."""
    prob = SimpleNamespace(
        n=4,
        src=np.array([0, 1, 2, 0, 0]),
        dst=np.array([1, 2, 3, 2, 3]),
        T=np.array([1.0, 1.0, 1.0, 1.5, 1.5]),
    )
    chain = np.array([0, 1, 2])
    assert shallower(prob, np.zeros(5), 0, "out", chain).tolist() == [0, 3, 4]
    # a direct edge dearer than the chain's edge into its node stays out
    cost = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    assert shallower(prob, cost, 0, "out", chain).tolist() == [0, 1, 4]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 30), seed=st.integers(0, 2**16), direction=st.sampled_from(["out", "in"]))
def test_depths_at_once_are_each_trees_walk(n, seed, direction):
    """:func:`depths` (every column at once, by pointer jumping) is each tree's slowest
    way from the root, relative to the slowest edge's time."""
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    prob = SimpleNamespace(
        n=n,
        src=np.array([a for a, _ in pairs]),
        dst=np.array([b for _, b in pairs]),
        T=rng.random(len(pairs)) + 0.1,
    )
    edge = {ab: e for e, ab in enumerate(pairs)}
    columns = []
    for _ in range(5):
        order = rng.permutation(n)
        tree = []
        for k in range(1, n):
            kid, mom = int(order[k]), int(order[rng.integers(0, k)])
            tree.append(edge[(mom, kid) if direction == "out" else (kid, mom)])
        columns.append((int(order[0]), direction, np.sort(np.array(tree, dtype=np.int64))))
    top = float(prob.T.max())
    want = [max(_ways(prob, t, direction, r).values()) / top for r, _, t in columns]
    assert np.allclose(depths(prob, columns), want, rtol=1e-12)


def test_the_sixty_four_node_packing_is_shallower_and_still_optimal():
    """The benchmark's 64-node allgather: its longest tree 22 hops (39 from the column
    generation alone), the packing's time its certified bound."""
    p = capacitated_graph_platform(64, seed=0)
    packed = pack_forest(p, "allgather", [1] * 64, slice_size=2**20)
    assert packed.gap <= 1e-9
    tall = heights(packed.problem, list(zip(packed.roots, packed.dirs, packed.trees, strict=True)))
    assert max(tall) <= 24
