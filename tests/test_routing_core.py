"""Core rows (``hetcoll.routing.rows.CoreRows``: kept, derived from their chains' ends'
rows, found on the kernel, or searched): exactly the rows a search from each node gives
(latencies to the bit, predecessors by the tie rule, bottlenecks, slack), and the routes
the plain Dijkstra of ``hetcoll.routing.reference`` finds, on graphs with long chains,
ties and rounding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _routing import assert_pairs_are_the_reference
from hetcoll import Link, Node, Platform
from hetcoll.routing import Tuning
from hetcoll.routing.arrays import least_positive
from hetcoll.routing.forest import Forest
from hetcoll.routing.graph import LinkGraph
from hetcoll.routing.reference import dijkstra_routes


@st.composite
def chained_graphs(draw, latencies, max_chain=6, bandwidths=None):
    """A connected graph whose links are mostly chains: a random tree plus extra links on
    a few nodes, each link drawn as a chain of up to ``max_chain`` inner nodes, and a few
    leaves (trees off the core); latencies from ``latencies``, bandwidths from
    ``bandwidths`` (four values by default)."""
    if bandwidths is None:
        bandwidths = st.sampled_from([1e6, 2e6, 5e6, math.inf])
    n = draw(st.integers(2, 7))
    pairs = [(draw(st.integers(0, i - 1)), i) for i in range(1, n)]
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n + 2))
    pairs += [(a, b) for a, b in extra if a != b]  # two ways between a and b: a cycle
    links = []
    seen = set()
    m = n
    for a, b in pairs:
        prev = a
        for _ in range(draw(st.integers(0, max_chain))):
            links.append((prev, m))
            prev, m = m, m + 1
        if frozenset((prev, b)) not in seen:  # (a platform has no parallel links)
            seen.add(frozenset((prev, b)))
            links.append((prev, b))
    for _ in range(draw(st.integers(0, 3))):  # leaves
        links.append((draw(st.integers(0, m - 1)), m))
        m += 1
    perm = draw(st.permutations(range(m)))  # node order is not chain order
    edges = [(perm[a], perm[b], draw(latencies), draw(bandwidths)) for a, b in links]
    return m, edges


def platform_of(n, edges):
    nodes = tuple(Node(str(i)) for i in range(n))
    links = tuple(Link(str(a), str(b), w, bw) for a, b, w, bw in edges)
    return Platform(nodes, links, model="hockney")


def search_of(n, edges, tuning=None):
    """The core rows (:class:`CoreRows`) of the platform's link graph."""
    graph = LinkGraph(n, *zip(*edges, strict=True), tuning or Tuning())
    return Forest(graph).search


def searched_row(core, s, offset, ask, base):
    """One start's row by a search, as ``CoreRows.rows`` gives it."""
    dist, edge, slack = core.search(np.array([s]), np.array([offset]), np.array([ask]))
    bw = core.bottleneck(np.array([s]), edge, np.array([base]))
    return dist[0], core.resources(edge)[0], bw[0], slack[0] if ask else math.inf


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


LATENCIES = {
    "distinct": st.floats(1e-6, 1e-3),
    "ties": st.sampled_from([1.0, 2.0]),
    "zero": st.sampled_from([0.0, 1.0, 2.0]),
    "rounding": st.sampled_from([0.1, 0.2, 0.3, 0.7]),
}


@pytest.mark.parametrize("kind", list(LATENCIES))
@settings(max_examples=50)
@given(data=st.data())
def test_rows_equal_a_search_from_every_start_in_any_order(kind, data):
    """Every core row asked in random batches (rows of chain ends are kept between calls
    and derived rows read them), some from other starting latencies (sources in trees),
    equals a search's, bit for bit; the chains are what :class:`Chains` says."""
    _check_rows(data, chained_graphs(LATENCIES[kind]), Tuning())


@pytest.mark.parametrize(
    ("searches", "ranks"),
    [("one", "natural"), ("many", "natural"), ("many", "uint16"), ("one", "float")],
)
@pytest.mark.parametrize("kind", list(LATENCIES))
@settings(max_examples=25)
@given(data=st.data())
def test_rows_in_small_blocks_with_many_bandwidths(kind, searches, ranks, data):
    """The same with blocks of rows cut small (the tie test and the slack one row at a
    time, bottlenecks and sums along kept trees two rows at a time; searches of one start
    each, or of many), bandwidths all distinct, and the kept bottlenecks stored as 8-bit
    ranks (up to 256 bandwidths, else 16-bit), 16-bit ranks or floats."""
    many = st.floats(1e5, 1e9).map(lambda x: float(np.float32(x)))
    graphs = chained_graphs(LATENCIES[kind], bandwidths=st.one_of(many, st.just(math.inf)))
    types = {"natural": Tuning().rank_types, "uint16": (np.uint16,), "float": ()}[ranks]
    tuning = Tuning(
        core_elements=1 if searches == "one" else Tuning().core_elements,
        edge_rows_elements=1,
        along_rows=2,
        rank_types=types,
    )
    _check_rows(data, graphs, tuning)


def _check_rows(data, graphs, tuning) -> None:
    n, edges = data.draw(graphs)
    search = search_of(n, edges, tuning)
    core = search.core
    c = core.c
    chains = search.chains
    for x in np.flatnonzero(chains.at >= 0).tolist():
        p = chains.at[x]
        assert chains.end_a[x] < p < chains.end_b[x]
        assert chains.node[p] == x
        into = core.e_head == x
        assert np.count_nonzero(into) == 2  # two links, to two neighbours
        assert set(core.e_tail[into].tolist()) == {chains.node[p - 1], chains.node[p + 1]}
    for p in np.flatnonzero(chains.ahead >= 0).tolist():
        a, b = chains.node[p], chains.node[p + 1]
        assert (core.e_tail[chains.ahead[p]], core.e_head[chains.ahead[p]]) == (a, b)
        assert (core.e_tail[chains.back[p]], core.e_head[chains.back[p]]) == (b, a)
    starts = np.array(data.draw(st.permutations(range(c))), dtype=np.int64)
    offsets = np.array(
        data.draw(st.lists(st.sampled_from([0.0] * 4 + [0.1, 3e-6]), min_size=c, max_size=c))
    )
    ask = np.array(data.draw(st.lists(st.booleans(), min_size=c, max_size=c)))
    base = np.array(
        data.draw(st.lists(st.sampled_from([math.inf, 1e6, 3e6]), min_size=c, max_size=c))
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, c), max_size=4)))
    for lo, hi in zip([0, *cuts], [*cuts, c], strict=True):
        at = np.arange(lo, hi)
        if not len(at):
            continue
        dist, res, bw, slack = search.rows(starts[at], offsets[at], ask[at], base[at])
        for j, i in enumerate(at.tolist()):
            want = searched_row(core, starts[i], offsets[i], ask[i], base[i])
            assert same_bits(dist[j], want[0]), (starts[i], offsets[i])
            assert res[j].tolist() == want[1].tolist(), (starts[i], offsets[i])
            assert same_bits(bw[j], want[2])
            assert same_bits(slack[j], want[3])


@pytest.mark.parametrize("kind", list(LATENCIES))
@settings(max_examples=15)
@given(data=st.data())
def test_routes_on_graphs_with_long_chains_follow_the_rule(kind, data):
    """Routes, latency and bandwidth matrices, and a streamed cost matrix on graphs with
    long chains are the reference Dijkstra's, exactly."""
    n, edges = data.draw(chained_graphs(LATENCIES[kind], max_chain=10))
    lat, bw, paths = dijkstra_routes(n, edges)
    r = platform_of(n, edges).routes
    got = r.cost_matrix(np.zeros(n), 1000)
    want = [[0.0 if a == b else lat[a][b] + 1000 / bw[a][b] for b in range(n)] for a in range(n)]
    assert got.tolist() == want
    u = np.repeat(np.arange(n), n)
    v = np.tile(np.arange(n), n)
    assert_pairs_are_the_reference(r, u, v, lat, bw, paths)
    m = platform_of(n, edges).routes
    assert m.latency.tolist() == lat
    assert m.bandwidth.tolist() == bw
    _, _, res, off = m.pairs(u, v)  # read from the predecessor matrix
    for i, (a, b) in enumerate(zip(u.tolist(), v.tolist(), strict=True)):
        assert tuple(res[off[i] : off[i + 1]].tolist()) == paths[a][b], (a, b)


def test_a_tie_between_the_two_ends_follows_the_rule():
    """Branch nodes 0 and 1 joined by three chains, 0-2-3-1, 0-4-1 and 0-5-6-7-1 (the
    ends' own rows without ties).  From 4 (inside the middle chain, 1.0 from 0 and 2.0
    from 1), 6 is 4.0 away by either end: 4-0-5-6 and 4-1-7-6, both of 3 links; the rule
    takes the predecessor nearest to 4 (5 at 2.5, 7 at 3.25): 5.  That row is searched,
    and so is 6's (the same tie, from 6 to 4); the four other inner rows are derived."""
    w = {(0, 2): 1.25, (2, 3): 1.75, (3, 1): 2.25, (0, 4): 1.0, (4, 1): 2.0}
    w |= {(0, 5): 1.5, (5, 6): 1.5, (6, 7): 0.75, (7, 1): 1.25}
    edges = [(a, b, x, 1e6 * (1 + a % 3)) for (a, b), x in w.items()]
    r = platform_of(8, edges).routes
    assert r.latency[4, 6] == 4.0
    assert r.work.derived == 4
    assert r.path(4, 6) == (7, 10, 12)  # 4 -> 0 -> 5 -> 6
    lat, bw, paths = dijkstra_routes(8, edges)
    assert paths[4][6] == (7, 10, 12)
    assert r.latency.tolist() == lat and r.bandwidth.tolist() == bw
    assert all(r.path(s, t) == paths[s][t] for s in range(8) for t in range(8))


def test_a_chain_longer_than_the_way_around_is_left_by_its_far_end():
    """A ring 0-1-...-9-0 with a chord 0-5 (latency 1.0, the ring's links 0.1 .. 1.0): from
    inner nodes near 0 the routes to the other half go the long way or by the chord as the
    sums say; every inner row is derived and equals the reference's."""
    ring = [(i, (i + 1) % 10, 0.1 * (1 + i), 1e6 * (1 + i % 3)) for i in range(10)]
    edges = [*ring, (0, 5, 1.0, 5e6)]
    r = platform_of(10, edges).routes
    lat, bw, paths = dijkstra_routes(10, edges)
    assert r.latency.tolist() == lat and r.bandwidth.tolist() == bw
    assert all(r.path(s, t) == paths[s][t] for s in range(10) for t in range(10))
    assert r.work.derived > 0


def test_cycles_of_inner_nodes_and_loops_are_searched():
    """A ring has no chain ends and a loop hangs off one node: neither is a chain, their
    nodes are searched (and routed by the rule)."""
    ring = [(i, (i + 1) % 6, 1.0 + 0.25 * i, 1e6) for i in range(6)]
    r = platform_of(6, ring).routes
    assert search_of(6, ring).chains.count == 0
    lat, bw, paths = dijkstra_routes(6, ring)
    assert r.latency.tolist() == lat and r.bandwidth.tolist() == bw
    # a loop 0-6-7-0 off a triangle 0-1-2: its inner nodes 6 and 7 are not in a chain
    edges = [(0, 1, 1.0, 1e6), (1, 2, 1.5, 1e6), (2, 0, 2.0, 1e6)]
    edges += [(0, 3, 1.0, 1e6), (3, 4, 1.25, 1e6), (4, 0, 1.75, 1e6)]
    r = platform_of(5, edges).routes
    search = search_of(5, edges)
    chains, core = search.chains, search.core
    assert chains.at[core.local[3]] == -1 and chains.at[core.local[4]] == -1
    lat, bw, paths = dijkstra_routes(5, edges)
    assert r.latency.tolist() == lat and r.bandwidth.tolist() == bw
    assert all(r.path(s, t) == paths[s][t] for s in range(5) for t in range(5))


@settings(max_examples=200)
@given(
    z=st.lists(
        st.lists(
            st.one_of(
                st.just(0.0),
                st.floats(0.0, math.inf, allow_subnormal=True),
                st.sampled_from([5e-324, 2.2250738585072014e-308, 1.0, math.inf]),
            ),
            min_size=1,
            max_size=12,
        ),
        min_size=1,
        max_size=6,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1)
)
def test_least_positive_is_the_least_nonzero_entry_of_each_row(z):
    """``least_positive`` (an integer minimum on the bit patterns) is the least non-zero
    entry of each row, ``inf`` for a row of zeros, bit for bit."""
    a = np.array(z, dtype=float)
    want = [min((x for x in row if x != 0.0), default=math.inf) for row in z]
    assert least_positive(a.copy()).tolist() == want


@pytest.mark.parametrize("kind", list(LATENCIES))
@settings(max_examples=40)
@given(data=st.data())
def test_kernel_rows_are_a_searchs_or_rejected(kind, data):
    """Every kernel node's row found on the kernel (chains contracted) and accepted is the
    search's, bit for bit: latencies, predecessors, bottlenecks, links and slack; rows
    with ties or a wrong tree are rejected, and ``found`` searches them."""
    n, edges = data.draw(chained_graphs(LATENCIES[kind]))
    search = search_of(n, edges)
    core = search.core
    kern = search.kernel if core.c >= 3 else None
    if kern is None:
        return
    assert core.c - np.count_nonzero(search.chains.at >= 0) == kern.nk
    starts = kern.nodes
    asked = np.array(data.draw(st.lists(st.booleans(), min_size=len(starts), max_size=len(starts))))
    dist, pred, slack, bw, links, ok = kern.rows(starts, asked)
    want_dist, want_pred, want_slack = core.search(starts, np.zeros(len(starts)), asked)
    want_bw, want_links = core.bottleneck(starts, want_pred, np.full(len(starts), math.inf), True)
    for i in np.flatnonzero(ok).tolist():
        assert same_bits(dist[i], want_dist[i])
        assert pred[i].tolist() == want_pred[i].tolist()
        assert same_bits(bw[i], want_bw[i])
        assert links[i].tolist() == want_links[i].tolist()
        if asked[i]:
            assert same_bits(slack[i], want_slack[i])
    found = search.found(starts, np.zeros(len(starts)), asked, True, True)
    assert same_bits(found[0], want_dist) and found[1].tolist() == want_pred.tolist()
    assert same_bits(found[3], want_bw) and found[4].tolist() == want_links.tolist()


def test_a_kernel_tree_one_rounding_off_is_searched():
    """From 2, node 7 is 0.6 away by 2-0-1-7 (0.2 + 0.3 + 0.1, summed link after link)
    and 0.6000000000000001 by the chain 2-5-6-7 (0.2 three times); the kernel's contracted
    latencies hang 7 off the chain's end 2.  On that tree's sums the tie rule's
    predecessors are the tree's (3 is 0.6 away by 2-0-1-3 and 2-8-9-10-3: fewest links),
    but 1 -> 7 is negative (0.6 < 0.6000000000000001): the row is rejected and searched.
    Taking it would route 2 -> 7 by the chain."""
    edges = [(0, 1, 0.3), (1, 2, 0.7), (1, 3, 0.1), (2, 4, 0.1), (2, 5, 0.2), (5, 6, 0.2)]
    edges += [(6, 7, 0.2), (7, 1, 0.1), (2, 8, 0.1), (8, 9, 0.3), (9, 10, 0.1), (10, 3, 0.1)]
    edges = [(a, b, w, 1e6) for a, b, w in [*edges, (0, 2, 0.2)]]
    r = platform_of(11, edges).routes
    search = search_of(11, edges)
    core = search.core
    assert core.nodes[search.kernel.nodes].tolist() == [1, 2]
    start = core.local[[2]]
    dist, pred, *_, ok = search.kernel.rows(start, np.array([False]))
    assert not ok[0]
    assert core.predecessors(start, dist).tolist() == pred.tolist()
    assert dist[0, core.local[7]] == 0.6000000000000001
    lat, bw, paths = dijkstra_routes(11, edges)
    assert lat[2][7] == 0.6 and paths[2][7] == (25, 0, 15)
    assert r.latency.tolist() == lat and r.bandwidth.tolist() == bw
    assert all(r.path(s, t) == paths[s][t] for s in range(11) for t in range(11))
