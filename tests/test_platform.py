"""Platform: loading, validation with field paths, round trips, routing, networkx."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hetcoll import Link, Node, Platform, PlatformError, UnknownNodeError, load_platform
from hetcoll.errors import ModelError
from hetcoll.platform import save_platform

FIG1 = {
    "model": "tini",
    "nodes": [{"id": str(i), "t_ini": 100e-6 if i in (1, 6) else 300e-6} for i in range(1, 9)],
}


def write(tmp_path, data, name="p.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_issue_example_loads_with_string_ids(tmp_path):
    p = load_platform(write(tmp_path, FIG1))
    assert p.ids == ("1", "2", "3", "4", "5", "6", "7", "8")
    assert p.t_ini[0] == 100e-6 and p.t_ini[5] == 100e-6 and p.t_ini[1] == 300e-6
    assert p.model.name == "tini"


def test_builtin_fig1_is_the_issue_example():
    assert load_platform("fig1").to_dict()["nodes"] == Platform.from_dict(FIG1).to_dict()["nodes"]


def test_integer_ids_become_strings(tmp_path):
    p = load_platform(write(tmp_path, {"nodes": [{"id": 1}, {"id": 2, "t_ini": "5us"}]}))
    assert p.ids == ("1", "2")
    assert p.t_ini[1] == pytest.approx(5e-6)
    assert p.index("2") == 1


def test_units_in_files(tmp_path):
    data = {
        "model": "hockney",
        "nodes": [{"id": "a", "t_byte": "1ns"}, {"id": "b"}],
        "links": [{"u": "a", "v": "b", "latency": "2.5ms", "bandwidth": "8Mbps"}],
    }
    p = load_platform(write(tmp_path, data))
    assert p.links[0].latency == pytest.approx(2.5e-3)
    assert p.links[0].bandwidth == pytest.approx(1e6)  # 8 Mbit/s = 1 MB/s
    assert p.t_byte[0] == pytest.approx(1e-9)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_save_load_round_trip(tmp_path, suffix):
    data = {
        "name": "mixed",
        "model": {"name": "postal", "gap": 2e-6},
        "nodes": [{"id": "A", "site": "s1", "cluster": "c1"}, {"id": "B"}, {"id": "C"}],
        "latency": [[0, 0.01, 0.02], [0.015, 0, 0.03], [0.02, 0.03, 0]],
        "bandwidth": [["inf", 1e6, 2e6], [1e6, "inf", 3e6], [2e6, 3e6, "inf"]],
    }
    p = Platform.from_dict(data)
    path = tmp_path / f"p{suffix}"
    save_platform(p, path)
    q = load_platform(path)
    assert q.to_dict() == p.to_dict()
    assert q.model.gap == 2e-6
    assert q.labels("site") == ("s1", None, None)
    np.testing.assert_array_equal(q.latency, p.latency)


def test_links_round_trip_and_routing():
    nodes = tuple(Node(x) for x in "abcd")
    links = (
        Link("a", "b", 1e-3, 1e9),
        Link("b", "c", 1e-3, 1e6),
        Link("a", "c", 5e-3, 1e9),
        Link("c", "d", 2e-3, 1e8),
    )
    p = Platform(nodes, links, model="hockney")
    q = Platform.from_dict(json.loads(json.dumps(p.to_dict())))
    assert q.to_dict() == p.to_dict()
    r = p.routes
    # a -> d goes a-b-c-d (4 ms) rather than a-c-d (7 ms); bottleneck is b-c
    assert r.latency[0, 3] == pytest.approx(4e-3)
    assert r.bandwidth[0, 3] == pytest.approx(1e6)
    assert len(r.path(0, 3)) == 3
    assert r.path(0, 3) != r.path(3, 0)  # each direction its own resource
    assert r.latency[2, 0] == pytest.approx(2e-3)


def test_networkx_round_trip():
    p = Platform(
        (Node("a", 1e-6), Node("b", 2e-6), Node("c")),
        (Link("a", "b", 1e-3, 1e9), Link("b", "c", 2e-3)),
        model="hockney",
    )
    g = p.to_networkx()
    assert g.nodes["b"]["t_ini"] == 2e-6
    assert g.edges["a", "b"]["bandwidth"] == 1e9
    assert math.isinf(g.edges["b", "c"]["bandwidth"])
    q = Platform.from_networkx(g)
    assert q.to_dict() == p.to_dict()


def test_asymmetric_matrix_exports_a_digraph():
    p = Platform.from_dict(
        {"model": "postal", "nodes": [{"id": "A"}, {"id": "B"}], "latency": [[0, 1], [2, 0]]}
    )
    g = p.to_networkx()
    assert g.is_directed()
    assert g.edges["A", "B"]["latency"] == 1 and g.edges["B", "A"]["latency"] == 2


def test_unknown_node_error_names_it():
    p = Platform.from_dict(FIG1)
    with pytest.raises(UnknownNodeError, match=r"unknown node '9'.*8 nodes"):
        p.index("9")


BAD = [
    ("{", r"not valid JSON"),
    ([], r"platform: must be an object"),
    ({}, r"nodes: missing"),
    ({"nodes": []}, r"nodes: must be a non-empty list"),
    ({"nodes": [{"id": "a"}], "colour": 1}, r"colour: unknown field"),
    ({"nodes": [{"id": "a", "speed": 3}]}, r"nodes\[0\]\.speed: unknown field"),
    ({"nodes": [{"t_ini": 1}]}, r"nodes\[0\]\.id: missing"),
    ({"nodes": [{"id": "a"}, {"id": "a"}]}, r"nodes\[1\]\.id: duplicate id 'a'"),
    ({"nodes": [{"id": "a"}, {"id": "b", "t_ini": -1}]}, r"nodes\[1\]\.t_ini: .*>= 0, got -1"),
    ({"nodes": [{"id": "a", "t_ini": "NaN"}]}, r"nodes\[0\]\.t_ini: .*got nan"),
    ({"nodes": [{"id": "a", "t_byte": "inf"}]}, r"nodes\[0\]\.t_byte: .*got inf"),
    ({"nodes": [{"id": "a", "t_ini": "fast"}]}, r"nodes\[0\]\.t_ini: cannot read 'fast'"),
    ({"nodes": [{"id": "a", "t_ini": "3 parsecs"}]}, r"nodes\[0\]\.t_ini: unknown time unit"),
    ({"nodes": [{"id": True}]}, r"nodes\[0\]\.id: must be a string"),
    ({"nodes": [{"id": "a"}], "model": "magic"}, r"unknown model 'magic'"),
    ({"nodes": [{"id": "a"}], "model": {"name": "postal", "gap": -1}}, r"gap: must be .*>= 0"),
    ({"nodes": [{"id": "a"}], "model": {"name": "postal", "lag": 1}}, r"unknown parameter 'lag'"),
    (
        {"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"u": "a", "v": "z"}]},
        r"links\[0\]\.v: unknown node 'z'",
    ),
    (
        {"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"u": "a", "v": "b", "bandwidth": -1}]},
        r"links\[0\]\.bandwidth: must be > 0, got -1",
    ),
    (
        {"nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "links": [{"u": "a", "v": "b"}]},
        r"network is disconnected: 2 components.*'c' cannot reach",
    ),
    (
        {"nodes": [{"id": "a"}, {"id": "b"}], "latency": [[0, 1], [1]]},
        r"latency: is not square",
    ),
    (
        {"nodes": [{"id": "a"}, {"id": "b"}], "latency": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]},
        r"latency: is 3 x 3 but the platform has 2 nodes",
    ),
    ({"nodes": [{"id": "a"}, {"id": "b"}], "latency": [[0, -1], [1, 0]]}, r"latency\[0\]\[1\]"),
    ({"nodes": [{"id": "a"}, {"id": "b"}], "latency": [[0, "nan"], [1, 0]]}, r"got nan"),
    (
        {"nodes": [{"id": "a"}, {"id": "b"}], "latency": [[1, 1], [1, 0]]},
        r"latency\[0\]\[0\]: diagonal must be 0",
    ),
    (
        {
            "nodes": [{"id": "a"}, {"id": "b"}],
            "latency": [[0, 1], [1, 0]],
            "bandwidth": [[1, 0], [1, 1]],
        },
        r"bandwidth\[0\]\[1\]: must be > 0",
    ),
]


@pytest.mark.parametrize(("data", "message"), BAD)
def test_bad_platform_files_are_rejected_with_the_field(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(PlatformError, match=message) as info:
        load_platform(path)
    text = str(info.value)
    assert text.startswith("p.json: ")
    assert "\n" not in text


def test_bad_yaml(tmp_path):
    path = write(tmp_path, "nodes: [a, b\n", name="p.yaml")
    with pytest.raises(PlatformError, match=r"p.yaml: not valid YAML.*line"):
        load_platform(path)


def test_missing_file_lists_builtins():
    with pytest.raises(PlatformError, match=r"no such file.*fig1"):
        load_platform("does-not-exist.json")


@pytest.mark.parametrize("model", ["hockney", "postal"])
def test_network_models_need_a_network(model):
    p = Platform.from_dict({"nodes": [{"id": "a"}, {"id": "b"}], "model": model})
    with pytest.raises(ModelError, match=f"model '{model}' needs"):
        p.model.bind(p)
