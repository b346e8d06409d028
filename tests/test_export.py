"""Exports.  The SimGrid XML is parsed back and one message is timed as SimGrid would time it
(the route's latencies plus size / its smallest bandwidth, under the exported <config>, plus
the sender's host properties as the XML's comment says a replay applies them); that time must
be the model's own ``delay(u, v, n)`` and ``send_busy(u, v, n)``, for every model, pair and
size, on link and matrix platforms.  Node-link JSON and the export command."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import networkx as nx
import numpy as np
import pytest

from hetcoll import Link, Node, Platform, get_model, load_platform
from hetcoll.errors import ModelError
from hetcoll.export import SIMGRID_CONFIG, SIMGRID_OPTIONS, to_node_link, to_simgrid

SIZES = (0, 1, 1000, 1 << 20, 8 << 20)


def _props(element) -> dict[str, str]:
    return {p.get("id"): p.get("value") for p in element.findall("prop")}


def _parse(xml: str) -> dict:
    root = ET.fromstring(xml)
    assert root.tag == "platform" and root.get("version") == "4.1"
    config = root.find("config")
    zone = root.find("zone")
    hosts = {}
    for h in zone.findall("host"):
        assert h.get("speed") == "1f"  # x flops last x seconds
        hosts[h.get("id")] = {k: json.loads(v) for k, v in _props(h).items()}
    links = {}
    for lk in zone.findall("link"):
        bw, lat = lk.get("bandwidth"), lk.get("latency")
        assert bw.endswith("Bps") and lat.endswith("s")  # units always written, bytes
        assert lk.get("id") not in links, f"duplicate link id {lk.get('id')!r}"
        links[lk.get("id")] = (float(lat[:-1]), float(bw[:-3]), lk.get("sharing_policy"))
    routes = {}
    for r in zone.findall("route"):
        hops = [(c.get("id"), c.get("direction")) for c in r.findall("link_ctn")]
        for name, direction in hops:  # a split link is named with its direction, and only it
            assert (direction is not None) == (links[name][2] == "SPLITDUPLEX")
        routes[(r.get("src"), r.get("dst"))] = [name for name, _ in hops]
    return {
        "config": {} if config is None else _props(config),
        "zone": _props(zone),
        "hosts": hosts,
        "links": links,
        "routes": routes,
    }


def _simgrid_one_message(doc: dict, u: str, v: str, n: int) -> tuple[float, float]:
    """(arrival, sender busy) of one message of n bytes from u to v started at 0, as SimGrid
    computes it for a flow alone (CM02, factors 1, no TCP window, no cross-traffic) plus the
    sender's executions: before putting the message, and after it when the send does not
    block."""
    hops = doc["routes"][(u, v)]
    props = doc["hosts"][u]
    wait = props.get("hetcoll_route_latency", {}).get(v, 0.0)  # shared: latency off the links
    route = wait + sum(doc["links"][h][0] for h in hops)
    route += n / min(doc["links"][h][1] for h in hops)
    before = props.get("hetcoll_exec_before", 0.0) + n * props.get(
        "hetcoll_exec_before_per_byte", 0.0
    )
    after = props.get("hetcoll_exec_after", 0.0) + n * props.get("hetcoll_exec_after_per_byte", 0.0)
    blocking = doc["zone"].get("hetcoll_send", "blocking") == "blocking"
    return before + route, before + (route if blocking else 0.0) + after


def _check_single_messages(p: Platform, model=None) -> dict:
    doc = _parse(to_simgrid(p, model))
    bound = (get_model(model) if model is not None else p.model).bind(p)
    for a, u in enumerate(p.ids):
        for b, v in enumerate(p.ids):
            if a == b:
                continue
            for n in SIZES:
                arrival, busy = _simgrid_one_message(doc, u, v, n)
                where = f"{u}->{v}, {n} B"
                assert arrival == pytest.approx(bound.delay(a, b, n), rel=1e-12, abs=1e-280), where
                assert busy == pytest.approx(bound.send_busy(a, b, n), rel=1e-12, abs=1e-280), where
    return doc


def _link_platform(model="hockney") -> Platform:
    """Routes of several hops, a bottleneck, an infinite-bandwidth link, per-node costs that
    add per byte (a: 1 ns/B next to a 1 GB/s link) and one node without costs."""
    nodes = (
        Node("a", 1e-6, 1e-9),
        Node("b", 2e-6, 5e-9),
        Node("c", 3e-5),
        Node("d"),
        Node("e", 1e-5, 2e-8),
    )
    lks = (
        Link("a", "b", 1e-3, 1e9),
        Link("b", "c", 1e-3, 1e6),
        Link("a", "c", 5e-3, 1e9),
        Link("c", "d", 2e-3),  # bandwidth: infinite
        Link("d", "e", 1e-4, 1e8),
    )
    return Platform(nodes, lks, model=model, name="a -- b")


def _matrix_platform(model="postal", with_bandwidth=True) -> Platform:
    rng = np.random.default_rng(1)
    lat = rng.uniform(1e-3, 9e-3, (5, 5))
    np.fill_diagonal(lat, 0)
    bw = rng.uniform(1e6, 1e8, (5, 5)) if with_bandwidth else None
    nodes = tuple(Node(str(i), t_ini=1e-5 * i, t_byte=1e-9 * (i % 3)) for i in range(5))
    return Platform(nodes, latency=lat, bandwidth=bw, model=model)


POSTAL = {"name": "postal", "overhead": 2e-5, "gap": 3e-5, "recv_overhead": 4e-5}
MODELS = [
    "tini",
    "hockney",
    {"name": "hockney", "ports": "unidirectional"},
    {"name": "hockney", "contention": "shared"},
    "postal",
    POSTAL,
]


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_link_platform_single_messages_follow_the_model(model):
    _check_single_messages(_link_platform(), model)


@pytest.mark.parametrize("with_bandwidth", [True, False])
@pytest.mark.parametrize("model", MODELS, ids=str)
def test_matrix_platform_single_messages_follow_the_model(model, with_bandwidth):
    doc = _check_single_messages(_matrix_platform(with_bandwidth=with_bandwidth), model)
    if get_model(model).name != "tini":  # an asymmetric matrix keeps both directions
        assert doc["links"]["p0_1_0_1"][:2] != doc["links"]["p1_0_1_0"][:2]


@pytest.mark.parametrize("name", ["fig1", "testbed16", "park-fig2"])
def test_builtin_platforms_single_messages_follow_their_model(name):
    _check_single_messages(load_platform(name))


def test_park_postal_with_overheads_follows_eq2():
    """Park et al. eq. (2): the sender is busy overhead + gap per send, the message arrives
    latency + recv_overhead after it started; t_ini is not on the path."""
    _check_single_messages(load_platform("park-fig2"), POSTAL)
    p = Platform(
        tuple(Node(i, t_ini=1e-3) for i in "xyz"),
        latency=[[0, 1e-3, 2e-3], [1e-3, 0, 1e-3], [2e-3, 1e-3, 0]],
        model="postal",
    )
    doc = _check_single_messages(p)
    assert "hetcoll_exec_before" not in doc["hosts"]["x"]  # t_ini would add 100 %


def test_hockney_adds_node_and_link_costs():
    """g -> f at 1 MiB: t_ini + n t_byte + alpha + n / beta, not n / min(1 / t_byte, beta)."""
    p = Platform((Node("g", 1e-5, 5e-9), Node("f")), (Link("g", "f", 2e-4, 2e8),), model="hockney")
    n = 1 << 20
    arrival, busy = _simgrid_one_message(_parse(to_simgrid(p)), "g", "f", n)
    assert arrival == busy == pytest.approx(1e-5 + n * 5e-9 + 2e-4 + n / 2e8, rel=1e-12)


def test_infinite_bandwidth_adds_nothing():
    """An unbounded link must not add n / 1e15 (8e-9 s at 8 MiB: +8e-5 on fig1)."""
    n = 8 << 20
    fig1 = load_platform("fig1")
    doc = _parse(to_simgrid(fig1))
    assert _simgrid_one_message(doc, "1", "2", n)[0] == fig1.t_ini[0]
    p = _link_platform("postal")
    doc = _parse(to_simgrid(p))
    assert _simgrid_one_message(doc, "c", "d", n)[0] == 2e-3  # bit for bit the latency


def test_simgrid_options_match_the_model():
    """CM02 without factors, RTT weighting, TCP window or cross-traffic (which alone adds
    5 % to every transfer on a link both directions share), in the XML and for the CLI."""
    assert SIMGRID_OPTIONS == {
        "network/model": "CM02",
        "network/latency-factor": "1",
        "network/bandwidth-factor": "1",
        "network/weight-S": "0",
        "network/TCP-gamma": "0",
        "network/crosstraffic": "0",
    }
    assert "--cfg=network/crosstraffic:0" in SIMGRID_CONFIG
    doc = _parse(to_simgrid(load_platform("fig1")))
    assert doc["config"] == SIMGRID_OPTIONS


def test_link_platform_routes_like_hetcoll_each_direction_its_own_link():
    p = _link_platform()
    xml = to_simgrid(p)
    doc = _parse(xml)
    assert list(doc["hosts"]) == list(p.ids)
    assert "a - - b" in xml  # "--" may not stand in an XML comment
    assert doc["routes"][("a", "d")] == ["l0_a_b", "l1_b_c", "l3_c_d"]
    root = ET.fromstring(xml).find("zone")
    directions = {
        (r.get("src"), r.get("dst")): [c.get("direction") for c in r.findall("link_ctn")]
        for r in root.findall("route")
    }
    assert directions[("a", "d")] == ["UP", "UP", "UP"]
    assert directions[("d", "a")] == ["DOWN", "DOWN", "DOWN"]
    assert {lk[2] for lk in doc["links"].values()} == {"SPLITDUPLEX"}


def test_postal_messages_share_no_link():
    """Postal has no contention.  Under CM02 flows that share even a FATPIPE link slow each
    other when their route latencies differ, so every pair has a FATPIPE link of its own
    (and the recv_overhead link, of unbounded bandwidth, at the end)."""
    doc = _parse(to_simgrid(_link_platform(), POSTAL))
    assert {lk[2] for lk in doc["links"].values()} == {"FATPIPE"}
    firsts = [hops[0] for hops in doc["routes"].values()]
    assert len(set(firsts)) == len(firsts) == 5 * 4
    assert {tuple(hops[1:]) for hops in doc["routes"].values()} == {("recv_overhead",)}


def test_shared_contention_takes_latency_off_the_links():
    """CM02 divides a link's bandwidth among its flows in inverse proportion to their route
    latency; hetcoll's shared contention gives equal shares.  So under shared contention
    the links carry no latency (every flow's penalty is then 1) and each sender waits its
    route's latency itself; the exclusive export keeps the latencies on the links."""
    p = _link_platform()
    doc = _parse(to_simgrid(p, {"name": "hockney", "contention": "shared"}))
    assert {lk[0] for lk in doc["links"].values()} == {0.0}
    lat = p.routes.latency
    for a, u in enumerate(p.ids):
        waits = doc["hosts"][u]["hetcoll_route_latency"]
        assert waits == {v: float(lat[a, b]) for b, v in enumerate(p.ids) if b != a}
    exclusive = _parse(to_simgrid(p))
    assert all("hetcoll_route_latency" not in h for h in exclusive["hosts"].values())
    assert sorted(lk[0] for lk in exclusive["links"].values()) == sorted(
        lk.latency for lk in p.links
    )


def test_tini_ignores_the_network():
    doc = _parse(to_simgrid(_link_platform(), "tini"))
    assert set(doc["links"]) == {"free"}
    assert doc["links"]["free"][0] == 0.0


def test_link_ids_are_unique_whatever_the_node_ids():
    p = Platform(
        (Node("a_b"), Node("c"), Node("a"), Node("b_c")),
        latency=np.ones((4, 4)) - np.eye(4),
        model="postal",
    )
    doc = _parse(to_simgrid(p))  # asserts no duplicate ids
    assert len(doc["links"]) == 12


def test_model_must_fit_the_platform():
    with pytest.raises(ModelError, match="postal"):
        to_simgrid(load_platform("fig1"), "postal")


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
    doc = _parse(xml.read_text())
    assert list(doc["hosts"]) == list(load_platform("fig1").ids)
    assert "crosstraffic:0" in capsys.readouterr().err
    yml = tmp_path / "p.out"
    assert main(["export", "park-fig2", "-o", str(yml), "--format", "yaml"]) == 0
    assert load_platform_text(yml).to_dict() == load_platform("park-fig2").to_dict()
    capsys.readouterr()
    assert main(["export", "fig1", "-o", str(tmp_path / "p.txt")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
    assert not (tmp_path / "p.txt").exists()


def test_export_command_model(tmp_path, capsys):
    from hetcoll.cli import main

    xml = tmp_path / "park.xml"
    spec = '{"name": "postal", "overhead": 0.001}'
    assert main(["export", "park-fig2", "-o", str(xml), "--model", spec]) == 0
    doc = _parse(xml.read_text())
    assert doc["hosts"]["A"] == {"hetcoll_exec_after": 0.001}
    capsys.readouterr()
    bad = tmp_path / "bad.xml"
    assert main(["export", "fig1", "-o", str(bad), "--model", "postal"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hetcoll: error:") and len(err.strip().splitlines()) == 1
    assert not bad.exists()


def load_platform_text(path):
    import yaml

    return Platform.from_dict(yaml.safe_load(path.read_text()))
