"""The one-tree shortcut of the simulator (``simulate_tree``) against the event loop: the
same prediction bit for bit (every transfer, its times, its blocker, their order, the
arrivals, the makespan, the throughput) wherever it applies, and it applies where it must."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import Flow, Link, Node, Platform, Schedule, Tree, plan, simulate
from hetcoll.simulator.predict import prediction
from hetcoll.simulator.tree import simulate_tree


def both(platform, schedule, model=None):
    """The prediction with and without the shortcut, and whether the shortcut applied."""
    fast = prediction(platform, schedule, model, shortcut=True)
    slow = prediction(platform, schedule, model, shortcut=False)
    bound = (platform.model if model is None else _model(model)).bind(platform)
    total = schedule.nbytes * len(schedule.buffers)
    return fast, slow, simulate_tree(bound, schedule, total) is not None


def _model(spec):
    from hetcoll.models import get_model

    return get_model(spec)


def assert_identical(fast, slow):
    # repr writes every float exactly (round trip), -0.0 and all; Transfer's repr has
    # every field, sender_free included
    assert repr(fast) == repr(slow)
    assert repr(fast.transfers) == repr(slow.transfers)
    assert fast.to_dict(transfers=True) == slow.to_dict(transfers=True)


@st.composite
def trees(draw, n):
    """A random ordered tree on nodes "0".."n-1" with a random root."""
    perm = draw(st.permutations([str(i) for i in range(n)]))
    kids: dict[str, list[str]] = {}
    for i in range(1, n):
        parent = perm[draw(st.integers(0, i - 1))]
        kids.setdefault(parent, []).append(perm[i])
    for p in kids:
        kids[p] = draw(st.permutations(kids[p]))
    return Tree(perm[0], {p: tuple(cs) for p, cs in kids.items()})


#: times drawn from few values, so that many sums tie exactly (ties decide the order)
_TIMES = st.sampled_from([0.0, 1e-4, 2e-4, 3e-4, 5e-4, 1e-3, 0.1, 0.3, 1.7e-5])


@st.composite
def cases(draw):
    n = draw(st.integers(1, 14))
    tree = draw(trees(n))
    kind = draw(
        st.sampled_from(
            ["tini", "postal", "hockney", "hockney-uni", "hockney-shared", "links", "links-postal"]
        )
    )
    t_ini = [draw(_TIMES) for _ in range(n)]
    t_byte = [draw(st.sampled_from([0.0, 1e-9, 3e-7])) for _ in range(n)]
    nodes = tuple(Node(str(i), t_ini[i], t_byte[i]) for i in range(n))
    if kind.startswith("links") and n > 1:
        links = tuple(
            Link(str(int(draw(st.integers(0, i - 1)))), str(i), draw(_TIMES) or 1e-6, 1e6)
            for i in range(1, n)
        )
        model = "postal" if kind == "links-postal" else "hockney"
        platform = Platform(nodes, links, model=model)
    elif kind.startswith("links") or kind == "tini":
        platform = Platform(nodes, model="tini")
    else:
        lat = np.array([[draw(_TIMES) for _ in range(n)] for _ in range(n)])
        np.fill_diagonal(lat, 0.0)
        bw = np.array([[draw(st.sampled_from([1e3, 1e6, np.inf])) for _ in range(n)]] * n)
        np.fill_diagonal(bw, np.inf)
        if kind == "postal":
            model = {
                "name": "postal",
                "overhead": draw(_TIMES),
                "gap": draw(st.sampled_from([0.0, 1e-4])),
                "recv_overhead": draw(st.sampled_from([0.0, 2e-4])),
            }
        else:
            model = {
                "name": "hockney",
                "ports": "unidirectional" if kind == "hockney-uni" else "bidirectional",
                "contention": "shared" if kind == "hockney-shared" else "exclusive",
            }
        platform = Platform(nodes, latency=lat, bandwidth=bw, model=model)
    nbytes = draw(st.sampled_from([0, 1, 7, 1000, 4096]))
    segment = draw(st.sampled_from([None, 1, 3, 1000, 1024])) if nbytes else None
    if segment is not None and nbytes // segment > 40:
        segment = None
    schedule = Schedule("bcast", "t", nbytes, (Flow(tree, nbytes, segment_size=segment),))
    return platform, schedule


@settings(max_examples=400)
@given(cases())
def test_the_shortcut_predicts_exactly_what_the_event_loop_does(case):
    platform, schedule = case
    fast, slow, _ = both(platform, schedule)
    assert_identical(fast, slow)


@pytest.mark.parametrize(
    "model, links",
    [("tini", False), ("postal", False), ("hockney", False), ("postal", True)],
)
def test_the_shortcut_applies_to_contention_free_models(model, links):
    n = 12
    rng = np.random.default_rng(3)
    nodes = tuple(Node(str(i), float(rng.integers(1, 4)) * 1e-4, 1e-9) for i in range(n))
    if links:
        p = Platform(nodes, tuple(Link(str(i // 2), str(i), 1e-5, 1e8) for i in range(1, n)))
    else:
        lat = rng.integers(1, 5, (n, n)) * 1e-5
        np.fill_diagonal(lat, 0.0)
        p = Platform(nodes, latency=lat, bandwidth=np.full((n, n), 1e8), model=model)
    model = model if links else None
    for method, seg in (("binomial", None), ("fnf", 1000), ("flat", 3000)):
        s = plan(p, "0", method=method, nbytes=10_000, segment_size=seg)
        fast, slow, applied = both(p, s, model)
        assert applied, (model, method)
        assert_identical(fast, slow)


def test_the_shortcut_steps_aside_where_ports_or_links_interact():
    n = 6
    nodes = tuple(Node(str(i), 1e-4) for i in range(n))
    linked = Platform(nodes, tuple(Link(str(i - 1), str(i), 1e-5, 1e8) for i in range(1, n)))
    lat = np.full((n, n), 1e-5)
    np.fill_diagonal(lat, 0.0)
    matrix = Platform(nodes, latency=lat, model="hockney")
    s = plan(linked, "0", method="binomial", nbytes=1000, segment_size=100)
    for p, model in (
        (linked, "hockney"),  # links: contention
        (matrix, {"name": "hockney", "ports": "unidirectional"}),
        (matrix, {"name": "hockney", "contention": "shared"}),
    ):
        fast, slow, applied = both(p, s, model)
        assert not applied
        assert_identical(fast, slow)
    two = Schedule.concurrent([s, s])  # several flows share ports
    assert simulate_tree(matrix.model.bind(matrix), two, 2000) is None
    tini = Platform(tuple(Node(str(i), 0.0 if i == 1 else 1e-4) for i in range(n)))
    # node 1 sends for free: its child's sends become startable at the instant they start
    chain = Tree.from_edges("0", [(str(i), str(i + 1)) for i in range(n - 1)])
    fast, slow, applied = both(tini, Schedule("bcast", "t", 0, (Flow(chain, 0),)))
    assert not applied
    assert_identical(fast, slow)


def test_segments_that_arrive_out_of_order_are_sent_in_the_ports_order():
    # postal, no overhead: the short last segment overtakes the one before it on the
    # slow link 0 -> 1, so node 1 holds segment 1 first and forwards it first
    nodes = tuple(Node(str(i)) for i in range(3))
    lat = np.full((3, 3), 1e-3)
    np.fill_diagonal(lat, 0.0)
    bw = np.full((3, 3), 1e3)
    p = Platform(nodes, latency=lat, bandwidth=bw, model="postal")
    tree = Tree("0", {"0": ("1",), "1": ("2",)})
    s = Schedule("bcast", "t", 3, (Flow(tree, 3, segment_size=2),))
    fast, slow, applied = both(p, s)
    assert applied
    assert_identical(fast, slow)
    from_1 = [t.chunk for t in fast.transfers if t.sender == "1"]
    assert from_1 == [1, 0]
    # segment 1 reaches node 1 at 2 ms and node 2 at 4 ms; segment 0 at 3 and 6 ms
    assert [t.start for t in fast.transfers if t.sender == "1"] == pytest.approx([2e-3, 3e-3])
    assert fast.makespan == simulate(p, s).makespan == pytest.approx(6e-3)


@pytest.mark.parametrize("model", ["one_port", "one_port_uni", "multi_port"])
def test_the_shortcut_equals_the_event_loop_on_beaumonts_graph_models(model):
    """Beaumont et al.'s one-port and multi-port models on random graph platforms; a tree
    with store-and-forward relays never takes the shortcut (its hops are ops)."""
    from hetcoll.generators.beaumont import random_graph_platform
    from hetcoll.models import get_model

    taken = 0
    for seed in range(3):
        p = random_graph_platform(9, 0.3, seed=seed)
        for algo in ("grow_tree", "prune_degree", "binomial_graph", "fnf"):
            for nbytes, seg in ((1000, None), (7001, 999)):
                s = plan(p, p.ids[0], method=algo, model=model, nbytes=nbytes, segment_size=seg)
                quick = simulate_tree(get_model(model).bind(p), s, s.nbytes)
                if s.flows[0].relays:
                    assert quick is None
                taken += quick is not None
                a = prediction(p, s, model, shortcut=True)
                b = prediction(p, s, model, shortcut=False)
                assert repr(a.transfers) == repr(b.transfers)
                assert (a.arrival, a.throughput, a.slices_per_second) == (
                    b.arrival,
                    b.throughput,
                    b.slices_per_second,
                )
    if model == "one_port":  # separate send and receive ports: the shortcut's case
        assert taken


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 12),
    st.integers(0, 2**16),
    st.sampled_from(["wire", "whole"]),
    st.sampled_from(["exclusive", "none"]),
    st.sampled_from([(2048, None), (2048, 700), (1, None)]),
    st.data(),
)
def test_both_paths_agree_on_switch_networks(n, seed, hold, contention, size, data):
    """Hsu et al.'s switch model, either link window, links held or not: the event loop and
    the shortcut (which steps aside: a receive port busy longer than the sender's, links)
    predict the same bit for bit."""
    from hetcoll.generators import switch_platform

    p = switch_platform(n, density=2.0, types=8, seed=seed)
    tree = data.draw(trees(n))
    tree = Tree(
        f"w{tree.root}", {f"w{k}": tuple(f"w{c}" for c in v) for k, v in tree.children.items()}
    )
    nbytes, seg = size
    s = Schedule("bcast", "t", nbytes, (Flow(tree, nbytes, segment_size=seg),))
    model = {"name": "switch", "link_hold": hold, "contention": contention}
    fast, slow, _ = both(p, s, model)
    assert_identical(fast, slow)
