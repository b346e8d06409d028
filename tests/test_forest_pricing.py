"""The packing's pricing and its certificate, kept exact by the speed-ups: the minimum
arborescences of every root under one cost vector (the edges sorted once,
:func:`hetcoll.arborescence.min_arborescences`) are those found one root at a time and
those of a brute-force search; and on seeded random link graphs of the packing benchmark
(10 nodes, 1023 cuts) the certified time of an allgather and a reduce-scatter is the cut
bound found by enumerating every cut, with the dual certificate's gap within
:data:`hetcoll.planners.forest.GAP`."""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.arborescence import min_arborescence, min_arborescences
from hetcoll.generators import capacitated_graph_platform
from hetcoll.planners.forest import GAP, pack_forest
from test_forest import cut_time


def cheapest_by_brute_force(n, src, dst, cost, root):
    """The least total cost of a spanning arborescence of ``root`` (one edge into each
    other node, every node reaching back to the root), None when there is none."""
    into = [[e for e in range(len(src)) if dst[e] == v and src[e] != v] for v in range(n)]
    others = [v for v in range(n) if v != root]
    best = None
    for pick in itertools.product(*(into[v] for v in others)):
        parent = {v: src[e] for v, e in zip(others, pick, strict=True)}
        if all(_reaches(v, parent, root) for v in others):
            total = sum(cost[e] for e in pick)
            best = total if best is None else min(best, total)
    return best


def _reaches(v, parent, root):
    for _ in range(len(parent) + 1):
        if v == root:
            return True
        v = parent[v]
    return v == root


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 5),
    edges=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 2)), max_size=12),
)
def test_arborescences_of_every_root_are_the_cheapest(n, edges):
    # few distinct costs: ties everywhere, as under dual prices that are zero on idle ports
    edges = [(a % n, b % n, c) for a, b, c in edges]
    src = np.array([a for a, _, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b, _ in edges], dtype=np.int64)
    cost = np.array([float(c) for _, _, c in edges])
    roots = list(range(n))
    together = min_arborescences(n, src, dst, cost, roots)
    for root, tree in zip(roots, together, strict=True):
        alone = min_arborescence(n, src, dst, cost, root)
        assert (tree is None) == (alone is None)
        best = cheapest_by_brute_force(n, src, dst, cost, root)
        if tree is None:
            assert best is None
            continue
        assert tree.tolist() == alone.tolist()  # the same tree, edge for edge
        assert float(cost[tree].sum()) == best


#: the SHA-1 of every root's minimum arborescence on 24 seeded random graphs of 6 to 29
#: nodes under three distinct costs (420 trees)
TIED_TREES = "453cef8ebebddaa7510af5e99e43a495bbf11f29"


def test_which_of_the_tied_trees_is_pinned():
    """Under ties the tree found is the arborescence routine's choice (equal costs: the
    lower edge index per node), and the packing's columns, so the schedules, follow it: a
    faster routine must choose the same trees, edge for edge."""
    h = hashlib.sha1()
    for seed in range(24):
        rng = np.random.default_rng(seed)
        n = 6 + seed
        src, dst = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
        cost = rng.integers(0, 3, 6 * n) * 0.5
        for tree in min_arborescences(n, src, dst, cost, list(range(n))):
            h.update(b"-" if tree is None else tree.tobytes())
    assert h.hexdigest() == TIED_TREES


def cut_seconds(platform, blocks, inward):
    """:func:`test_forest.cut_time` over the platform's links, full duplex: each way at the
    link's bandwidth."""
    arcs = {}
    for link in platform.links:
        a, b = platform.index(link.u), platform.index(link.v)
        arcs[(a, b)] = arcs.get((a, b), 0.0) + link.bandwidth
        arcs[(b, a)] = arcs.get((b, a), 0.0) + link.bandwidth
    return cut_time(len(platform), arcs, blocks, inward)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_certified_packing_of_random_graphs_is_the_cut_bound(seed, op):
    p = capacitated_graph_platform(10, 0.3, seed=seed)
    blocks = [float(2**20 * (1 + r % 3)) for r in range(len(p))]  # unequal blocks
    forest = pack_forest(p, op, blocks, slice_size=2**20)
    assert forest.gap <= GAP
    assert forest.bound <= forest.time
    assert math.isclose(forest.time, cut_seconds(p, blocks, op == "reduce_scatter"), rel_tol=1e-9)


def strongly_connected(seed, n, extra, costs=3):
    """A seeded random strongly connected graph: a ring both ways plus ``extra`` random
    edges (self-loops and parallel edges allowed), in random order, ``costs`` distinct
    costs (ties everywhere)."""
    rng = np.random.default_rng(seed)
    pairs = [(v, (v + 1) % n) for v in range(n)] + [((v + 1) % n, v) for v in range(n)]
    pairs += [tuple(int(x) for x in rng.integers(0, n, 2)) for _ in range(extra)]
    rng.shuffle(pairs)
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    return src, dst, rng.integers(0, costs, len(pairs)) * 0.5


def test_one_contraction_serves_every_root(monkeypatch):
    """On a strongly connected graph every root's tree is read off one contraction of the
    whole graph (Camerini et al. 1979): the pricing's contraction runs once per cost
    vector, not once per root, and gives every root the tree found for it alone."""
    import hetcoll.arborescence as arb

    calls = []
    contract = arb._contract
    monkeypatch.setattr(
        arb, "_contract", lambda n, root, *a: calls.append(root) or contract(n, root, *a)
    )
    for seed in range(40):
        n = 2 + seed % 12
        src, dst, cost = strongly_connected(seed, n, 3 * n)
        calls.clear()
        together = arb.min_arborescences(n, src, dst, cost, list(range(n)))
        assert calls == [-1]  # one contraction, without a root
        for root, tree in enumerate(together):
            assert tree.tolist() == min_arborescence(n, src, dst, cost, root).tolist()


def test_a_graph_not_strongly_connected_is_priced_root_by_root():
    """Where one contraction cannot hold the whole graph (node 0 reaches every node, none
    reaches 0), each root gets its own: node 0 its cheapest tree, the others none."""
    src = np.array([0, 0, 1, 2, 1], dtype=np.int64)
    dst = np.array([1, 2, 2, 1, 3], dtype=np.int64)
    cost = np.array([3.0, 1.0, 1.0, 0.0, 2.0])
    trees = min_arborescences(4, src, dst, cost, [0, 1, 2, 3])
    assert trees[0].tolist() == min_arborescence(4, src, dst, cost, 0).tolist()
    assert float(cost[trees[0]].sum()) == cheapest_by_brute_force(4, src, dst, cost, 0) == 3.0
    assert trees[1:] == [None, None, None]
