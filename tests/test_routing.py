"""Routes on link platforms: SciPy's Dijkstra plus the tie rule, against a plain Dijkstra."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _reference import dijkstra_routes
from hetcoll import Link, Node, Platform


@st.composite
def graphs(draw, latencies):
    """A connected graph: a random tree plus extra links, latencies from ``latencies``."""
    n = draw(st.integers(2, 12))
    pairs = [(draw(st.integers(0, i - 1)), i) for i in range(1, n)]
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n))
    seen = {frozenset(p) for p in pairs}
    for a, b in extra:
        if a != b and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            pairs.append((a, b))
    edges = [
        (a, b, draw(latencies), draw(st.sampled_from([1e6, 2e6, 5e6, math.inf]))) for a, b in pairs
    ]
    perm = draw(st.permutations(range(n)))  # node order is not edge order
    edges = [(perm[a], perm[b], w, bw) for a, b, w, bw in edges]
    return n, edges


def platform_of(n, edges):
    nodes = tuple(Node(str(i)) for i in range(n))
    links = tuple(Link(str(a), str(b), w, bw) for a, b, w, bw in edges)
    return Platform(nodes, links, model="hockney")


def check_against_reference(n, edges):
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    assert r.latency.tolist() == lat  # exactly: the same floating-point sums
    assert r.bandwidth.tolist() == bw
    for s in range(n):
        for t in range(n):
            assert r.path(s, t) == paths[s][t], (s, t)


@given(graphs(st.sampled_from([0.0, 1.0, 2.0])))
def test_routes_with_many_ties_and_zero_latency_links_follow_the_rule(g):
    check_against_reference(*g)


@given(graphs(st.sampled_from([0.1, 0.2, 0.3, 0.7])))
def test_routes_with_rounding_follow_the_rule(g):
    check_against_reference(*g)


@given(graphs(st.floats(1e-6, 1e-3)))
def test_routes_with_distinct_latencies_follow_the_rule(g):
    check_against_reference(*g)


@given(graphs(st.sampled_from([0.1, 0.2, 0.3, 0.7, 1.0])), st.data())
def test_rows_of_a_few_sources_follow_the_rule(g, data):
    """Rows computed on demand (no matrices: sources in trees start their search from the
    core with their climb's latency) are the reference's, exactly."""
    n, edges = g
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    s = data.draw(st.integers(0, n - 1))
    got_lat, got_bw, res, off = r.pairs([s] * n, list(range(n)))
    assert r._pred is None  # rows only
    assert got_lat.tolist() == lat[s]
    assert got_bw.tolist() == bw[s]
    for t in range(n):
        assert tuple(res[off[t] : off[t + 1]].tolist()) == paths[s][t], (s, t)


def test_pairs_are_the_paths_and_rows_are_computed_on_demand():
    n = 40
    rng = np.random.default_rng(3)
    edges = [
        (int(rng.integers(0, i)), i, float(rng.integers(1, 4)), 1e6 * (1 + i % 3))
        for i in range(1, n)
    ]
    r = platform_of(n, edges).routes
    u = np.array([0, 0, 5, 5, 7, 3])
    v = np.array([9, 0, 1, 30, 7, 39])
    lat, bw, res, off = r.pairs(u, v)
    assert r._lat is None  # only three source rows were computed, no matrix
    lat_ref, bw_ref, paths = dijkstra_routes(n, edges)
    for i, (a, b) in enumerate(zip(u.tolist(), v.tolist(), strict=True)):
        assert tuple(res[off[i] : off[i + 1]].tolist()) == paths[a][b]
        assert lat[i] == lat_ref[a][b]
        assert bw[i] == bw_ref[a][b]
    assert r.latency.tolist() == lat_ref


def test_a_chain_of_a_thousand_nodes_keeps_no_path_whole():
    """All-pairs matrices plus one predecessor row per source: no stored tuples."""
    n = 1000
    nodes = tuple(Node(str(i)) for i in range(n))
    links = tuple(Link(str(i), str(i + 1), 1e-6, 1e9) for i in range(n - 1))
    r = Platform(nodes, links, model="hockney").routes
    assert r.latency[0, n - 1] == pytest.approx((n - 1) * 1e-6)
    assert r.path(0, n - 1) == tuple(range(0, 2 * (n - 1), 2))
    assert r.path(n - 1, 0) == tuple(range(2 * (n - 1) - 1, 0, -2))
    assert r._pred.dtype == np.int32 and r._pred.shape == (n, n)
