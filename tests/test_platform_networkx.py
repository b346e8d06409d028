"""``Platform.to_networkx()`` then ``from_networkx()`` gives the same platform: latency
matrices stay matrices (not a complete graph of links, routed on lowest latency), switch
platforms keep their switches, antiparallel directed links stay two links; every model
predicts the same times on both."""

from __future__ import annotations

import networkx as nx
import pytest

from hetcoll import Platform, load_platform, plan, simulate
from hetcoll.errors import HetcollError
from hetcoll.export import to_node_link
from hetcoll.generators import (
    eight_sites,
    figueira_platform,
    grid_platform,
    random_graph_platform,
    switch_platform,
    tiers_platform,
    two_class_tini,
)
from hetcoll.generators import (
    testbed as make_testbed,
)
from hetcoll.models import MODELS
from hetcoll.platform import builtin_platforms

ANTIPARALLEL = {
    "model": "one_port",
    "nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}],
    "links": [
        {"u": "a", "v": "b", "bandwidth": 1e6, "directed": True},
        {"u": "b", "v": "a", "bandwidth": 2e6, "latency": 1e-3, "directed": True},
        {"u": "c", "v": "a", "latency": 1e-3, "send_latency": 1e-4, "send_bandwidth": "inf"},
    ],
}


def _platforms():
    out = [(name, load_platform(name)) for name in builtin_platforms()]
    out += [
        ("random_graph", random_graph_platform(7, 0.3, seed=1)),
        ("tiers", tiers_platform(12, seed=2)),
        ("grid", grid_platform(3, 2, 2, seed=3)),
        ("grid_asymmetric", grid_platform(2, 2, 2, asymmetry=0.3, bandwidth=True, seed=4)),
        ("eight_sites", eight_sites(seed=5)),
        ("figueira", figueira_platform(8, seed=6)),
        ("switch", switch_platform(10, seed=7)),
        ("testbed", make_testbed(6, 3)),
        ("hnow", two_class_tini(6, 0.5, seed=8)),
        ("antiparallel", Platform.from_dict(ANTIPARALLEL)),
    ]
    return out


PLATFORMS = _platforms()


def _round_trip(p: Platform) -> Platform:
    return Platform.from_networkx(p.to_networkx())


@pytest.mark.parametrize(("name", "p"), PLATFORMS, ids=[n for n, _ in PLATFORMS])
def test_round_trip_gives_the_same_platform(name, p):
    q = _round_trip(p)
    assert q.to_dict() == p.to_dict()
    # through node-link JSON too (what `hetcoll export --format networkx` writes)
    g = nx.node_link_graph(to_node_link(p), edges="edges")
    assert Platform.from_networkx(g).to_dict() == p.to_dict()


@pytest.mark.parametrize(("name", "p"), PLATFORMS, ids=[n for n, _ in PLATFORMS])
def test_round_trip_predicts_the_same_times_under_every_model(name, p):
    q = _round_trip(p)
    root = p.ids[-1]
    checked = 0
    for model in sorted(MODELS):
        try:
            s = plan(p, root, method="fnf", model=model, nbytes=10_000, segment_size=4096)
            before = simulate(p, s, model=model)
        except HetcollError:
            continue  # the model does not apply to this platform
        after = simulate(q, s, model=model)
        assert after.makespan == before.makespan, (name, model)
        assert after.arrival == before.arrival
        checked += 1
    assert checked > 0


def test_park_fig2_keeps_its_matrix():
    """The complete graph of links was routed on lowest latency: A->G went 0.90 s -> 0.25 s
    and hlot's predicted time 0.60 s -> 0.58 s."""
    p = load_platform("park-fig2")
    q = _round_trip(p)
    assert not q.links and (q.latency == p.latency).all()
    a, g = p.index("A"), p.index("G")
    assert q.routes.latency[a, g] == p.routes.latency[a, g]
    s = plan(p, "A", method="hlot")
    assert simulate(q, s).makespan == simulate(p, s).makespan


def test_antiparallel_directed_links_are_two_links():
    p = Platform.from_dict(ANTIPARALLEL)
    q = _round_trip(p)
    assert [(lk.u, lk.v, lk.directed) for lk in q.links] == [
        ("a", "b", True),
        ("b", "a", True),
        ("c", "a", False),
    ]


def test_a_users_digraph_edges_are_directed_links():
    g = nx.DiGraph()
    g.add_edge("x", "y", latency=1e-3, bandwidth=1e6, pos=(0, 1))  # pos: not hetcoll's
    g.add_edge("y", "x", latency=2e-3, bandwidth=1e6)
    q = Platform.from_networkx(g, model="one_port")
    assert [(lk.u, lk.v, lk.latency, lk.directed) for lk in q.links] == [
        ("x", "y", 1e-3, True),
        ("y", "x", 2e-3, True),
    ]


def test_switch_platform_keeps_its_switches():
    p = load_platform("switch16")
    q = _round_trip(p)
    assert q.switches is not None and q.switches.ids == p.switches.ids
    assert q.model.name == "switch"
