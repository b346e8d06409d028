"""Routes on link platforms: SciPy's Dijkstra plus the tie rule, against a plain Dijkstra."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _routing import assert_pairs_are_the_reference
from hetcoll import Link, Node, Platform
from hetcoll.routing import Routes, Tuning
from hetcoll.routing.arrays import costs_in_place, permute_rows, small_pages
from hetcoll.routing.core import certified
from hetcoll.routing.forest import Forest
from hetcoll.routing.graph import LinkGraph
from hetcoll.routing.reference import dijkstra_routes


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


def routes_of(n, edges, tuning):
    """The platform's routes (as ``Platform.routes`` builds them) with ``tuning``."""
    a, b, w, bw = zip(*edges, strict=True)
    return Routes.from_links(n, a, b, w, bw, tuning)


def forest_of(n, edges):
    """The forest (core, trees, the core's rows) of the platform's link graph."""
    return Forest(LinkGraph(n, *zip(*edges, strict=True)))


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
    assert not r.has_matrices  # rows only
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
    assert not r.has_matrices  # only three source rows were computed, no matrix
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


@given(graphs(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1.0])), st.data())
def test_pairs_of_many_sources_follow_the_rule(g, data):
    """Routes of arbitrary pairs computed on demand (climbs, the source's core row, descents;
    within one tree, up to the common ancestor) are the reference's, exactly."""
    n, edges = g
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40)
    )
    u = [a for a, _ in pairs]
    v = [b for _, b in pairs]
    assert_pairs_are_the_reference(r, u, v, lat, bw, paths)
    assert not r.has_matrices


# a random platform's link latencies: distinct (tree sources share rows), with ties (some
# sources searched on their own), and rounding off in sums
LATENCY_KINDS = pytest.mark.parametrize(
    ("latencies", "kind"),
    [
        (lambda rng, m: rng.uniform(1e-6, 1e-5, m), "distinct"),
        (lambda rng, m: rng.choice([1e-6, 2e-6, 3e-6], m), "ties"),
        (lambda rng, m: rng.choice([0.1, 0.2, 0.3, 0.7], m), "rounding"),
    ],
    ids=["distinct", "ties", "rounding"],
)


def _random_platform(n, latencies, seed):
    """The benchmark's random routed platform (``benchmarks/simulated/bench_simulator.py``), small,
    with latencies drawn by ``latencies(rng, m)``: ``(n, edges)`` for the reference."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "simulated" / "bench_simulator.py"
    spec = importlib.util.spec_from_file_location("bench_simulator", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    links = bench.routed_platform(n, "random", seed).links
    rng = np.random.default_rng(seed)
    lat = latencies(rng, len(links))
    bw = rng.choice([1e6, 2e6, 5e6], len(links))
    return n, [
        (int(lk.u), int(lk.v), float(w), float(b)) for lk, w, b in zip(links, lat, bw, strict=True)
    ]


@LATENCY_KINDS
def test_tree_sources_share_their_attachments_rows_only_when_certified(latencies, kind):
    """On a 150-node random platform (about half the nodes in trees hanging off the core),
    the matrices and routes on demand equal the reference's exactly; with distinct
    latencies the sources in trees share their attachments' rows (fewer core searches than
    sources) and the core nodes inside chains derive theirs from their chains' ends' rows,
    with ties they are searched on their own."""
    n, edges = _random_platform(150, latencies, seed=5)
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    u = np.repeat(np.arange(n), 3)
    v = (u * 7 + np.tile([1, 50, 99], n)) % n
    assert_pairs_are_the_reference(r, u, v, lat, bw, paths)
    on_demand = r.work.searched  # every search, on the kernel or the whole core
    m = platform_of(n, edges).routes
    assert m.latency.tolist() == lat
    assert m.bandwidth.tolist() == bw
    for s in range(0, n, 7):
        for t in range(n):
            assert m.path(s, t) == paths[s][t], (s, t)
    f = forest_of(n, edges)
    core = f.core.c
    inner = int(np.count_nonzero(f.search.chains.at >= 0))
    assert core < n - 40  # plenty of sources in trees
    assert inner > 10  # and of core nodes inside chains
    if kind == "distinct":  # one search per core node outside chains, on demand and for
        # the matrices (the others' rows are derived from their chains' ends' rows)
        assert on_demand == core - inner and m.work.searched == core - inner
        assert m.work.derived == inner and m.work.shared == n - core
    elif kind == "ties":  # rows with ties certify nothing: sources in trees searched too
        assert m.work.searched > core


def test_a_climb_that_flips_a_rounding_tie_gets_its_own_route():
    """Node 3 hangs off node 0 by a link of 0.7; from 0, the direct link to 2 (0.3) beats
    0 -> 1 -> 2 (0.2 + 0.1 = 0.30000000000000004), but from 3 the sums are 1.0 against
    0.9999999999999999: the route from 3 turns at 1.  The slack of 0's row (one ulp)
    certifies nothing, so 3 is searched from its own starting latency."""
    edges = [(0, 1, 0.2, 1e6), (1, 2, 0.1, 2e6), (0, 2, 0.3, 5e6), (3, 0, 0.7, 1e6)]
    r = platform_of(4, edges).routes
    assert r.path(0, 2) == (4,)  # direct
    assert r.path(3, 2) == (6, 0, 2)  # 3 -> 0 -> 1 -> 2
    assert r.pair(3, 2) == (0.9999999999999999, 1e6)
    assert r.pair(0, 2) == (0.3, 5e6)
    m = platform_of(4, edges).routes
    assert m.latency[3, 2] == 0.9999999999999999 and m.path(3, 2) == (6, 0, 2)
    assert m.bandwidth[3, 2] == 1e6
    lat, bw, paths = dijkstra_routes(4, edges)
    assert m.latency.tolist() == lat and m.bandwidth.tolist() == bw
    assert all(m.path(s, t) == paths[s][t] for s in range(4) for t in range(4))
    slack = 0.30000000000000004 - 0.3
    assert not certified(np.array([slack]), np.array([0.6]), np.array([0.7]), 3)
    assert m.work.shared == 0


@given(graphs(st.sampled_from([0.1, 0.2, 0.3, 0.7, 1e-3, 2.5e-3])), st.data())
def test_a_certified_row_has_the_predecessors_of_every_starting_latency(g, data):
    """The certificate itself: whenever it accepts a starting latency, a search from that
    latency gives exactly the row's predecessors."""
    n, edges = g
    core = forest_of(n, edges).core
    if core.c < 3:
        return
    start = np.array([data.draw(st.integers(0, core.c - 1))])
    dist, pred, slack = core.search(start, np.zeros(1), np.array([True]))
    offsets = data.draw(
        st.lists(st.sampled_from([0.1, 0.7, 1.0, 3.3, 1e-9, 1e6, 12345.678]), min_size=1)
    )
    for o in offsets:
        top = dist.max(axis=1) + core.w_max
        if certified(slack, top, np.array([o]), core.c)[0]:
            _, other = core.search(start, np.array([o]))
            assert np.array_equal(other, pred), o


@pytest.mark.parametrize("latencies", [[1e-6, 3e-6], [0.1, 0.2, 0.3, 0.7]])
def test_long_climbs_and_descents_on_demand_follow_the_rule(latencies):
    """A 30-node random core with two 120-node chains hanging off it: routes on demand
    between deep nodes (climbs copied whole, longer than 64 links) equal the reference's."""
    rng = np.random.default_rng(11)
    n, edges = _random_platform(30, lambda r, m: r.choice(latencies, m), seed=3)
    for top in (4, 17):
        prev = top
        for _ in range(120):
            edges.append((prev, n, float(rng.choice(latencies)), float(rng.choice([1e6, 2e6]))))
            prev, n = n, n + 1
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    u = np.array([n - 1, n - 1, n - 1, n - 121, 149, 5, n - 1, 40, 100])
    v = np.array([n - 121, 0, n - 60, n - 1, n - 1, n - 1, 140, n - 2, 41])
    got_lat, got_bw, res, off = r.pairs(u, v)
    assert not r.has_matrices
    for i, (a, b) in enumerate(zip(u.tolist(), v.tolist(), strict=True)):
        assert tuple(res[off[i] : off[i + 1]].tolist()) == paths[a][b], (a, b)
        assert got_lat[i] == lat[a][b] and got_bw[i] == bw[a][b], (a, b)
    assert max(np.diff(off)) > 200


def _hockney_costs(n, lat, bw, base, nbytes):
    """``base[u] + lat[u][v] + nbytes / bw[u][v]`` summed in that order, 0 on the diagonal."""
    return [
        [
            0.0
            if a == b
            else base[a] + lat[a][b] + nbytes / bw[a][b]
            if nbytes
            else base[a] + lat[a][b]
            for b in range(n)
        ]
        for a in range(n)
    ]


@given(graphs(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1.0])), st.data())
def test_a_cost_matrix_without_the_matrices_is_theirs_and_keeps_the_routes(g, data):
    """The first cost matrix of a link platform is computed batch by batch without
    keeping the latency and bandwidth matrices: exactly the reference's sums (ties,
    rounding, zero-latency links), the routes of arbitrary pairs after it too; a second
    size builds the matrices and gives the same sums."""
    n, edges = g
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    base = data.draw(st.lists(st.sampled_from([0.0, 0.1, 1e-3, 0.7]), min_size=n, max_size=n))
    nbytes = data.draw(st.sampled_from([0, 1, 1000, 12345]))
    got = r.cost_matrix(np.array(base), nbytes)
    assert not r.has_matrices  # no matrices kept
    assert got.tolist() == _hockney_costs(n, lat, bw, base, nbytes)
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40)
    )
    u = [a for a, _ in pairs]
    v = [b for _, b in pairs]
    assert_pairs_are_the_reference(r, u, v, lat, bw, paths)
    again = r.cost_matrix(np.array(base), nbytes + 7)
    assert r.has_matrices  # the second one builds the matrices
    assert again.tolist() == _hockney_costs(n, lat, bw, base, nbytes + 7)


@LATENCY_KINDS
def test_hockney_cost_matrices_stream_on_the_benchmarks_platform(latencies, kind):
    """The hockney send matrix of a 150-node random platform (sources in trees sharing
    their attachments' rows) equals the reference's sums exactly, without the latency and
    bandwidth matrices; the routes of every pair after it are the reference's, read from
    core rows kept once: a source in a tree that shares its attachment's row points to
    it (one per source that does not share its attachment's)."""
    n, edges = _random_platform(150, latencies, seed=5)
    lat, bw, paths = dijkstra_routes(n, edges)
    p = platform_of(n, edges)
    bound = p.model.bind(p)
    base = (p.t_ini + 4096 * p.t_byte).tolist()
    assert bound.send_matrix(4096).tolist() == _hockney_costs(n, lat, bw, base, 4096)
    r = p.routes
    assert not r.has_matrices
    tree = np.flatnonzero(forest_of(n, edges).depth > 0)
    assert r.work.shared <= len(tree)
    assert r.work.kept_rows == n - r.work.shared
    if kind == "distinct":  # no near tie: every source in a tree shares
        assert len(tree) > 20 and r.work.shared == len(tree)
    u = np.repeat(np.arange(n), n)
    v = np.tile(np.arange(n), n)
    assert_pairs_are_the_reference(r, u, v, lat, bw, paths)


def test_huge_page_advice_is_off_inside_small_pages_and_back_after():
    """``small_pages`` (around a streamed cost matrix) switches numpy's huge-page advice
    off and puts it back as it was, also when the block raises, and once only, when the
    last of overlapping blocks ends; a cost matrix streamed under it is the reference's."""
    multiarray = getattr(np, "_core", None) or np.core
    switch = getattr(multiarray.multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        pytest.skip("this numpy has no huge-page switch")
    n, edges = _random_platform(60, lambda rng, m: rng.uniform(1e-6, 1e-5, m), seed=2)
    lat, bw, _ = dijkstra_routes(n, edges)
    base = np.linspace(0.0, 1e-3, n)
    before = switch(True)
    try:
        for advice in (True, False):
            switch(advice)
            with small_pages():
                assert switch(False) is False  # off inside (and left off)
            assert switch(advice) is advice  # put back
            got = platform_of(n, edges).routes.cost_matrix(base, 4096)
            assert got.tolist() == _hockney_costs(n, lat, bw, base.tolist(), 4096)
            assert switch(advice) is advice
        switch(True)
        with pytest.raises(MemoryError), small_pages():
            raise MemoryError
        assert switch(True) is True
        # overlapping blocks (as two threads' would): off until the last one ends
        outer, inner = small_pages(), small_pages()
        outer.__enter__()
        inner.__enter__()
        outer.__exit__(None, None, None)
        assert switch(False) is False
        inner.__exit__(None, None, None)
        assert switch(True) is True
    finally:
        switch(before)


@st.composite
def trees(draw):
    """A tree platform's links (no core but one node): random recursive trees, lines and
    stars, with ties, rounding and zero latencies, infinite bandwidths, nodes and links
    in random order and either direction."""
    n = draw(st.integers(2, 40))
    shape = draw(st.sampled_from(["random", "line", "star", "brooms"]))
    if shape == "line":
        pairs = [(i - 1, i) for i in range(1, n)]
    elif shape == "star":
        pairs = [(0, i) for i in range(1, n)]
    elif shape == "brooms":  # a few long lines off one node: deep heavy paths and light ones
        pairs = [
            (i - 1 if draw(st.integers(0, 4)) else draw(st.integers(0, i - 1)), i)
            for i in range(1, n)
        ]
    else:
        pairs = [(draw(st.integers(0, i - 1)), i) for i in range(1, n)]
    lat = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 1e-6, 3e-6])
    bw = st.sampled_from([1e6, 2e6, 5e6, math.inf])
    perm = draw(st.permutations(range(n)))
    edges = []
    for a, b in draw(st.permutations(pairs)):
        a, b = (perm[a], perm[b]) if draw(st.booleans()) else (perm[b], perm[a])
        edges.append((a, b, draw(lat), draw(bw)))
    return n, edges


def _tree_walks(n, edges):
    """Every ordered pair's path in a tree by brute force: ``(latency, bandwidth,
    resources)``, the latency summed from the source link after link (the documented
    order), the bandwidth the smallest on the path."""
    out = {}
    near = [[] for _ in range(n)]
    for k, (a, b, w, bw) in enumerate(edges):
        near[a].append((b, 2 * k, w, bw))
        near[b].append((a, 2 * k + 1, w, bw))
    for s in range(n):
        out[s, s] = (0.0, math.inf, ())
        todo = [s]
        while todo:
            x = todo.pop()
            lat, low, res = out[s, x]
            for y, r, w, bw in near[x]:
                if (s, y) not in out:
                    out[s, y] = (lat + w, min(low, bw), (*res, r))
                    todo.append(y)
    return out


@given(trees(), st.data())
def test_a_trees_cost_matrix_is_every_paths_sum_from_its_source(tree, data):
    """On a tree, the first cost matrix takes all sources at once (slices in preorder,
    transposed in place): ``base[u] + latency + nbytes / bandwidth`` with the latency
    summed from ``u`` link after link along the path, exactly; the routes after it too."""
    n, edges = tree
    walks = _tree_walks(n, edges)
    r = platform_of(n, edges).routes
    assert forest_of(n, edges).core.c == 1  # the tree's own path
    base = data.draw(st.lists(st.sampled_from([0.0, 0.1, 1e-3, 0.7]), min_size=n, max_size=n))
    nbytes = data.draw(st.sampled_from([0, 1, 1000, 12345]))
    got = r.cost_matrix(np.array(base), nbytes)
    assert not r.has_matrices
    expected = [
        [
            0.0
            if a == b
            else base[a] + walks[a, b][0] + nbytes / walks[a, b][1]
            if nbytes
            else base[a] + walks[a, b][0]
            for b in range(n)
        ]
        for a in range(n)
    ]
    assert got.tolist() == expected
    u = data.draw(st.lists(st.integers(0, n - 1), max_size=30))
    v = data.draw(st.lists(st.integers(0, n - 1), min_size=len(u), max_size=len(u)))
    lat, bw, res, off = r.pairs(u, v)
    for i, (a, b) in enumerate(zip(u, v, strict=True)):
        assert (lat[i], bw[i], tuple(res[off[i] : off[i + 1]].tolist())) == walks[a, b]


@given(trees(), st.data(), st.sampled_from([1, 2, 5, 1 << 20]))
def test_a_trees_routes_are_climbs_and_descents_along_its_paths(tree, data, chunk):
    """Routes on a tree without any matrix (heavy-path runs, copied in chunks of any
    size): every pair's links, latency (summed from its source) and bottleneck are the
    path's, exactly."""
    n, edges = tree
    walks = _tree_walks(n, edges)
    r = routes_of(n, edges, Tuning(run_chunk=chunk))
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))))
    u = [a for a, _ in pairs]
    v = [b for _, b in pairs]
    lat, bw, res, off = r.pairs(u, v)
    assert not r.has_matrices
    for i, (a, b) in enumerate(pairs):
        assert (lat[i], bw[i], tuple(res[off[i] : off[i + 1]].tolist())) == walks[a, b]


def test_a_long_line_and_a_deep_tree_route_as_their_paths():
    """Routes longer than a chunk on a 600-node line (two heavy paths from its centre)
    and on a tree of long branches (many light ones): the brute-force paths."""
    rng = np.random.default_rng(8)
    line = [(i, i + 1, float(rng.choice([0.1, 0.2, 0.3])), 1e6 * (1 + i % 3)) for i in range(599)]
    deep = [(int(rng.integers(max(0, i - 40), i)), i, 0.1 * (i % 7), 2e6) for i in range(1, 300)]
    for n, edges in ((600, line), (300, deep)):
        walks = _tree_walks(n, edges)
        r = routes_of(n, edges, Tuning(run_chunk=1000))
        u = rng.integers(0, n, 400)
        v = rng.integers(0, n, 400)
        lat, bw, res, off = r.pairs(u, v)
        for i, (a, b) in enumerate(zip(u.tolist(), v.tolist(), strict=True)):
            assert (lat[i], bw[i], tuple(res[off[i] : off[i + 1]].tolist())) == walks[a, b]


@given(st.integers(1, 40), st.sampled_from([1, 2, 3, 7, 128]), st.booleans(), st.data())
def test_costs_in_place_and_rows_permuted_in_place_are_the_plain_numpy(n, tile, table, data):
    """The tree cost matrix's two in-place steps against plain numpy: tiles of any size
    (sizes not a multiple of them), with or without the bandwidth table."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    t = rng.random((n, n))
    base = rng.random(n)
    tab = rng.random(3) if table else None
    rank = rng.integers(0, 3, (n, n)).astype(np.uint8)
    expected = (t + base + (tab[rank] if table else 0.0)).T
    costs_in_place(t, base, tab, rank, tile)
    assert np.array_equal(t, expected)
    src = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    expected = t[src]
    permute_rows(t, src)
    assert np.array_equal(t, expected)


@pytest.mark.parametrize(
    ("batch", "group"), [(1, None), (3, None), (64, None), (3, 1), (64, 1), (64, 300)]
)
@LATENCY_KINDS
def test_rows_in_batches_of_any_size_are_the_reference(latencies, kind, batch, group):
    """The forest's batches of any size (one source each: every tree's sources are runs
    of one column; many: runs of several, broken where a near tie is searched on its own;
    the batches' arrays reused, the last one smaller), their runs summed in groups and
    their descents in blocks of any size (``group`` entries: one column or one row at a
    time, or a few runs), give the reference's cost matrix, routes after it, and
    matrices, exactly; the work counters show which of those cases ran."""
    n, edges = _random_platform(150, latencies, seed=5)
    lat, bw, paths = dijkstra_routes(n, edges)
    tuning = Tuning(tree_elements=batch * n)  # ``batch`` sources per batch
    if group is not None:
        tuning = Tuning(tree_elements=batch * n, along_elements=group, descent_elements=group)
    r = routes_of(n, edges, tuning)
    base = np.linspace(0.0, 1e-3, n)
    got = r.cost_matrix(base, 4096)
    assert got.tolist() == _hockney_costs(n, lat, bw, base.tolist(), 4096)
    for s in range(0, n, 3):
        for t in range(n):
            assert r.path(s, t) == paths[s][t], (s, t)
    m = routes_of(n, edges, tuning)
    assert m.latency.tolist() == lat and m.bandwidth.tolist() == bw
    for s in range(1, n, 5):
        for t in range(n):
            assert m.path(s, t) == paths[s][t], (s, t)
    # every shared column is in one run; runs are summed in groups
    columns = r.work.shared + m.work.shared
    runs = r.work.runs + m.work.runs
    groups = r.work.run_groups + m.work.run_groups
    if batch == 1:  # runs of one column
        assert runs == columns
    elif kind == "distinct" and batch > 3:  # sources of one tree side by side
        assert runs < columns
    if group == 1:  # one run per group
        assert groups == runs and (groups or kind != "distinct")
    elif group is not None and kind == "distinct" and batch > 3:  # a few runs per group
        assert groups < runs and groups > runs // batch


def test_a_source_searched_between_two_certified_ones_splits_their_run():
    """Nodes 3, 4 and 5 hang off node 0, whose row has a slack of 1e-13 (0 -> 2 direct
    against 0 -> 1 -> 2): enough to certify climbs of 0.5 (3 and 5), not of 1000 (4, searched
    on its own).  The columns of 3 and 5 share 0's row with 4 between them: two runs (of
    one group), and the cost matrix and routes are the reference's."""
    edges = [
        (0, 1, 1.0, 1e6),
        (1, 2, 1.0, 2e6),
        (0, 2, 2.0 + 1e-13, 5e6),
        (3, 0, 0.5, 1e6),
        (4, 0, 1000.0, 2e6),
        (5, 0, 0.5, 5e6),
    ]
    n = 6
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    base = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert r.cost_matrix(base, 1000).tolist() == _hockney_costs(n, lat, bw, base.tolist(), 1000)
    # the core's three rows and 4's own searched; 3 and 5 (columns 0 and 2) along 0's row
    assert r.work.searched == 4 and r.work.shared == 2
    assert r.work.runs == 2 and r.work.run_groups == 1
    assert all(r.path(s, t) == paths[s][t] for s in range(n) for t in range(n))
    m = platform_of(n, edges).routes
    assert m.latency.tolist() == lat and m.bandwidth.tolist() == bw


def test_every_way_to_read_routes_agrees_on_the_benchmarks_1000_node_platform():
    """On the benchmark's random 1000-node platform (too large for the reference), the
    matrices, a streamed cost matrix, the routes after it (kept core rows) and routes on
    demand (a few sources at a time) agree bit for bit, with the default blocks and with
    blocks of a few rows and batches of a few sources."""
    n, edges = _random_platform(1000, lambda rng, m: rng.uniform(1e-6, 1e-5, m), seed=1)
    base = np.linspace(0.0, 1e-4, n)
    full = routes_of(n, edges, Tuning())
    lat, bw = full.latency, full.bandwidth
    want = base[:, None] + lat + 4096 / bw
    np.fill_diagonal(want, 0.0)
    sources = np.arange(0, n, 20)
    small = Tuning(tree_elements=5 * n, core_elements=1 << 12, along_elements=999, along_rows=3)
    for tuning in (Tuning(), small):
        streamed = routes_of(n, edges, tuning)
        assert np.array_equal(streamed.cost_matrix(base, 4096), want)
        assert not streamed.has_matrices
        on_demand = routes_of(n, edges, tuning)
        for lo in range(0, len(sources), 7):  # a few sources at a time
            u = np.repeat(sources[lo : lo + 7], n)
            v = np.tile(np.arange(n), len(sources[lo : lo + 7]))
            want_routes = full.pairs(u, v)  # read from the predecessor matrix
            for r in (streamed, on_demand):
                got = r.pairs(u, v)
                assert all(np.array_equal(a, b) for a, b in zip(got, want_routes, strict=True))
        assert on_demand.latency.tobytes() == lat.tobytes()
