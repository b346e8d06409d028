"""Exports: SimGrid XML parsed back must route every pair as hetcoll does; node-link JSON."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import networkx as nx
import numpy as np
import pytest

from hetcoll import Link, Node, Platform, load_platform
from hetcoll.export import to_node_link, to_simgrid


def _parse(xml: str):
    root = ET.fromstring(xml)
    assert root.tag == "platform" and root.get("version") == "4.1"
    zone = root.find("zone")
    hosts = [h.get("id") for h in zone.findall("host")]
    links = {}
    for lk in zone.findall("link"):
        bw, lat = lk.get("bandwidth"), lk.get("latency")
        assert bw.endswith("Bps") and lat.endswith("s")  # units always written, bytes
        links[lk.get("id")] = (float(lat[:-1]), float(bw[:-3]))
    routes = {
        (r.get("src"), r.get("dst")): [c.get("id") for c in r.findall("link_ctn")]
        for r in zone.findall("route")
    }
    return hosts, links, routes


def _check_routes(p: Platform, links, routes):
    """Each exported route's latency is t_ini(u) + hetcoll's route latency, its bottleneck
    the smaller of 1/t_byte(u) and hetcoll's route bandwidth."""
    has_net = p.has_network
    for a, u in enumerate(p.ids):
        for b, v in enumerate(p.ids):
            if a == b:
                continue
            hops = routes[(u, v)]
            lat = sum(links[h][0] for h in hops)
            bw = min(links[h][1] for h in hops)
            want_lat = p.t_ini[a] + (p.routes.latency[a, b] if has_net else 0.0)
            want_bw = min(
                1 / p.t_byte[a] if p.t_byte[a] else math.inf,
                p.routes.bandwidth[a, b] if has_net else math.inf,
            )
            assert lat == pytest.approx(want_lat, rel=1e-12, abs=1e-18)
            assert bw == pytest.approx(min(want_bw, 1e15), rel=1e-12)


def test_sender_only_platform():
    p = load_platform("fig1")
    hosts, links, routes = _parse(to_simgrid(p))
    assert hosts == list(p.ids)
    assert len(routes) == 8 * 7
    _check_routes(p, links, routes)


def test_link_platform_routes_like_hetcoll():
    nodes = (Node("a", 1e-6, 1e-9), Node("b"), Node("c"), Node("d"))
    lks = (
        Link("a", "b", 1e-3, 1e9),
        Link("b", "c", 1e-3, 1e6),
        Link("a", "c", 5e-3, 1e9),
        Link("c", "d", 2e-3, 1e8),
    )
    p = Platform(nodes, lks, model="hockney", name="a -- b")
    xml = to_simgrid(p)
    hosts, links, routes = _parse(xml)
    assert hosts == ["a", "b", "c", "d"]
    assert "a - - b" in xml  # "--" may not stand in an XML comment
    assert routes[("a", "d")] == ["a_out", "l0_a_b", "l1_b_c", "l3_c_d"]
    _check_routes(p, links, routes)


def test_asymmetric_matrix_platform():
    rng = np.random.default_rng(1)
    lat = rng.uniform(1e-3, 9e-3, (5, 5))
    np.fill_diagonal(lat, 0)
    bw = rng.uniform(1e6, 1e8, (5, 5))
    p = Platform(
        tuple(Node(str(i), t_ini=1e-5 * i) for i in range(5)),
        latency=lat,
        bandwidth=bw,
        model="postal",
    )
    hosts, links, routes = _parse(to_simgrid(p))
    assert len(hosts) == 5 and len(routes) == 20
    _check_routes(p, links, routes)
    assert links["p_0_1"] != links["p_1_0"]


def test_node_link_round_trip():
    """The JSON networkx reads back holds every pair's latency (park-fig2 is a symmetric
    matrix: a complete graph)."""
    p = load_platform("park-fig2")
    g = nx.node_link_graph(to_node_link(p), edges="edges")
    assert list(g.nodes) == list(p.ids)
    for a, u in enumerate(p.ids):
        for b, v in enumerate(p.ids):
            if a != b:
                assert g.edges[u, v]["latency"] == p.latency[a, b]
    q = Platform.from_networkx(g, model="postal")  # as a link platform: inf bandwidths back
    assert all(math.isinf(lk.bandwidth) for lk in q.links)


def test_export_command(tmp_path, capsys):
    from hetcoll.cli import main

    xml = tmp_path / "p.xml"
    assert main(["export", "fig1", "-o", str(xml)]) == 0
    hosts, _, _ = _parse(xml.read_text())
    assert hosts == list(load_platform("fig1").ids)
    yml = tmp_path / "p.out"
    assert main(["export", "park-fig2", "-o", str(yml), "--format", "yaml"]) == 0
    assert load_platform_text(yml).to_dict() == load_platform("park-fig2").to_dict()
    capsys.readouterr()
    assert main(["export", "fig1", "-o", str(tmp_path / "p.txt")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
    assert not (tmp_path / "p.txt").exists()


def load_platform_text(path):
    import yaml

    return Platform.from_dict(yaml.safe_load(path.read_text()))
