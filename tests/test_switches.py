"""Switch platforms (Hsu et al. 2005): the file format, bad input, up*/down* routing, the
random topology generator and eq. (1)-(5) against the simulator."""

from __future__ import annotations

import collections
import copy
import itertools
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _cli import one_line_error, run
from hetcoll import Flow, Platform, PlatformError, Schedule, Tree, load_platform, simulate
from hetcoll.errors import ArgumentError, ModelError
from hetcoll.generators import switch_platform
from hetcoll.models import get_model
from hetcoll.platform import save_platform
from hetcoll.switches import SPEED_TYPES

#: The exact form of a switch platform file, as a user wrote it.
ISSUE = {
    "model": "switch",
    "switches": [{"id": "x0", "ports": 8}, {"id": "x1"}],
    "switch_links": [["x0", "x1"]],
    "nodes": [{"id": "w0", "switch": "x0", "type": 1}, {"id": "w1", "switch": "x1", "type": 8}],
}


def write(tmp_path, data, name="p.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def line(k: int, per_switch: int = 1, kind: int = 1) -> dict:
    """``k`` switches in a line ``x0 - x1 - ...``, ``per_switch`` workstations each."""
    return {
        "model": "switch",
        "switches": [{"id": f"x{i}"} for i in range(k)],
        "switch_links": [[f"x{i}", f"x{i + 1}"] for i in range(k - 1)],
        "nodes": [
            {"id": f"w{i}_{j}", "switch": f"x{i}", "type": kind}
            for i in range(k)
            for j in range(per_switch)
        ],
    }


# -- the file format ---------------------------------------------------------------------------


def test_the_issue_form_loads_and_round_trips(tmp_path):
    p = load_platform(write(tmp_path, ISSUE))
    net = p.switches
    assert p.ids == ("w0", "w1") and net.ids == ("x0", "x1") and net.ports == (8, 8)
    assert net.attach == ("x0", "x1") and net.types == (1, 8)
    assert net.costs[1].tolist() == list(SPEED_TYPES[8])
    assert p.model.name == "switch"
    again = tmp_path / "again.yaml"
    save_platform(p, again)
    assert load_platform(again).to_dict() == p.to_dict()
    assert p.to_dict()["nodes"][0] == {"id": "w0", "switch": "x0", "type": 1}


def test_table1_in_seconds():
    # Table 1: S_c, S_m, R_c, R_m in microseconds (per byte for S_m, R_m)
    assert SPEED_TYPES[1] == pytest.approx((60e-6, 0.05e-6, 110e-6, 0.03e-6))
    assert SPEED_TYPES[8] == pytest.approx((500e-6, 4.2e-6, 600e-6, 3.2e-6))
    assert len(SPEED_TYPES) == 8


def test_own_costs_with_units_and_routing_root(tmp_path):
    data = copy.deepcopy(ISSUE)
    data["nodes"][1] = {
        "id": "w1",
        "switch": "x1",
        "S_c": "90us",
        "S_m": "0.4us",
        "R_c": "140us",
        "R_m": 6e-8,
    }
    data["routing_root"] = "x1"
    p = load_platform(write(tmp_path, data))
    assert p.switches.costs[1] == pytest.approx(SPEED_TYPES[2])
    assert p.switches.types == (1, None) and p.switches.root == 1
    assert Platform.from_dict(p.to_dict()).to_dict() == p.to_dict()


BAD = [
    # (mutation, words of the one-line message)
    (
        lambda d: d["nodes"].append({"id": "w2", "switch": "x9", "type": 1}),
        ["nodes[2].switch", "x9"],
    ),
    (lambda d: d["switches"].append({"id": "x2"}), ["disconnected", "x2"]),
    (lambda d: d["nodes"][0].update(type=9), ["nodes[0].type", "1..8"]),
    (lambda d: d["nodes"][0].update(S_c=1e-6), ["nodes[0].S_c", "not both"]),
    (lambda d: d["nodes"][0].pop("type"), ["nodes[0]", "type"]),
    (lambda d: d["nodes"][0].pop("switch"), ["nodes[0].switch", "missing"]),
    (lambda d: d["switches"][1].update(ports=0), ["switches[1].ports"]),
    (lambda d: d["switches"][1].update(id="x0"), ["duplicate", "x0"]),
    (lambda d: d["switches"][1].update(id="w1"), ["switches[1].id", "workstation"]),
    (lambda d: d["switch_links"].append(["x1", "x0"]), ["switch_links[1]", "duplicate"]),
    (lambda d: d["switch_links"].append(["x1", "x1"]), ["switch_links[1]", "itself"]),
    (lambda d: d["switch_links"].append(["x1"]), ["switch_links[1]", "pair"]),
    (lambda d: d.update(routing_root="x7"), ["routing_root", "x7"]),
    (lambda d: d["switches"][0].update(colour="red"), ["switches[0].colour", "unknown field"]),
    (lambda d: d["nodes"][0].update(type="fast"), ["nodes[0].type"]),
    (lambda d: d.update(links=[{"u": "w0", "v": "w1"}]), ["either 'switches' or 'links'"]),
    (
        lambda d: (
            d["nodes"][1].update(S_c="-1us", S_m=0, R_c=0, R_m=0) or d["nodes"][1].pop("type")
        ),
        ["nodes[1].S_c"],
    ),
]


@pytest.mark.parametrize(("mutate", "words"), BAD)
def test_bad_input_is_one_line(tmp_path, capsys, mutate, words):
    data = copy.deepcopy(ISSUE)
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(PlatformError):
        load_platform(path)
    one_line_error(*run(capsys, "plan", path, "--root", "w0"), *words)


def test_more_attachments_than_ports(tmp_path, capsys):
    data = copy.deepcopy(ISSUE)
    data["switches"][0]["ports"] = 3
    data["nodes"] += [{"id": f"v{i}", "switch": "x0", "type": 2} for i in range(2)]
    path = write(tmp_path, data)  # 3 workstations and 1 link on a 3-port switch
    one_line_error(*run(capsys, "plan", path, "--root", "w0"), "x0", "4 attachments", "3 ports")


def test_switch_fields_without_switches(tmp_path, capsys):
    path = write(tmp_path, {"nodes": [{"id": "a", "type": 1}, {"id": "b"}]})
    one_line_error(*run(capsys, "plan", path, "--root", "a"), "nodes[0].type", "switch")


def test_the_switch_model_needs_switches():
    with pytest.raises(ModelError, match="needs a switch platform"):
        get_model("switch").bind(load_platform("fig1"))
    with pytest.raises(ModelError, match="routes"):
        get_model({"name": "switch", "routes": "fastest"})


# -- up*/down* routing -------------------------------------------------------------------------


def reference(net, a: int, b: int, choice: str) -> tuple[int, ...]:
    """The documented rule, in plain Python (hetcoll.switches' module docstring)."""
    s = len(net.ids)
    adj = net.neighbours
    root = net.root
    level = {root: 0}
    parent = {root: -1}
    queue = collections.deque([root])
    while queue:  # BFS from the root, neighbours in file order
        x = queue.popleft()
        for y in adj[x]:
            if y not in level:
                level[y] = level[x] + 1
                parent[y] = x
                queue.append(y)
    if choice == "tree":
        up, down = [a], [b]
        while up[-1] != down[-1]:
            x, y = up[-1], down[-1]
            if level[x] >= level[y] and x != root:
                up.append(parent[x])
            else:
                down.append(parent[y])
            if up[-1] in down:
                down = down[: down.index(up[-1]) + 1]
            elif down[-1] in up:
                up = up[: up.index(down[-1]) + 1]
        return tuple(up + down[-2::-1])

    def is_up(x, y):
        return level[y] < level[x] or (level[y] == level[x] and y < x)

    start = (a, 0)
    pred = {start: None}
    queue = collections.deque([start])
    while queue:
        x, ph = queue.popleft()
        moves = []
        if ph == 0:
            moves += [(y, 0) for y in adj[x] if is_up(x, y)]
        moves += [(y, 1) for y in adj[x] if not is_up(x, y)]
        for state in moves:
            if state not in pred:
                pred[state] = (x, ph)
                queue.append(state)

    def walk(state):
        path = []
        while state is not None:
            path.append(state[0])
            state = pred[state]
        return path[::-1]

    ends = [walk(st) for st in ((b, 0), (b, 1)) if st in pred]
    return tuple(min(ends, key=len))  # min keeps the first (phase 0) on ties
    del s


def legal_routes(net, a: int, b: int) -> list[tuple[int, ...]]:
    """Every simple legal up*/down* route from a to b (brute force)."""
    r = net.routing
    out = []

    def extend(path, down):
        x = path[-1]
        if x == b:
            out.append(tuple(path))
            return
        for y in net.neighbours[x]:
            if y in path:
                continue
            up = r.is_up(x, y)
            if up and down:
                continue
            extend([*path, y], down or not up)

    extend([a], False)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_routes_are_legal_shortest_and_follow_the_tie_rule(seed):
    p = switch_platform(20, density=2.5, seed=seed)
    net = p.switches
    r = net.routing
    for a, b in itertools.product(range(len(net)), repeat=2):
        route = r.route(a, b)
        assert route[0] == a and route[-1] == b and r.is_legal(route)
        assert len(route) - 1 == min(len(x) for x in legal_routes(net, a, b)) - 1
        assert len(route) - 1 == r.hops("shortest")[a, b]
        assert route == reference(net, a, b, "shortest")
        tree = r.route(a, b, "tree")
        assert r.is_legal(tree) and tree == reference(net, a, b, "tree")
        assert len(tree) - 1 == r.hops("tree")[a, b] >= len(route) - 1
        for x, y in itertools.pairwise(tree):  # only spanning-tree links
            assert r.parent[x] == y or r.parent[y] == x


def test_routes_are_deterministic_across_loads(tmp_path):
    p = switch_platform(64, seed=11)
    path = tmp_path / "p.json"
    save_platform(p, path)
    q = load_platform(path)
    a, b = p.switches.routing, q.switches.routing
    pairs = list(itertools.product(range(len(p.switches)), repeat=2))[::7]
    assert [a.route(x, y) for x, y in pairs] == [b.route(x, y) for x, y in pairs]


def test_up_ends_root_choice_and_ties():
    # a square x0-x1-x3-x2-x0: x1 and x2 are level 1 from root x0, x3 level 2
    square = {
        "model": "switch",
        "switches": [{"id": f"x{i}"} for i in range(4)],
        "switch_links": [["x0", "x1"], ["x1", "x3"], ["x3", "x2"], ["x2", "x0"]],
        "nodes": [{"id": f"w{i}", "switch": f"x{i}", "type": 1} for i in range(4)],
    }
    net = Platform.from_dict(square).switches
    assert net.root == 0  # every switch has eccentricity 2: the first listed
    r = net.routing
    assert r.is_up(3, 1) and r.is_up(3, 2) and r.is_up(1, 0) and not r.is_up(0, 2)
    assert r.route(1, 2) == (1, 0, 2)  # up to the root, then down: legal and shortest
    assert r.parent.tolist() == [-1, 0, 0, 1]  # x3 is first reached from x1
    assert r.route(3, 2, "tree") == (3, 1, 0, 2) and r.route(3, 2) == (3, 2)
    # a line: the centre is the root; a tie between two centres goes to the first listed
    assert Platform.from_dict(line(5)).switches.root == 2
    assert Platform.from_dict(line(4)).switches.root == 1
    # a link between two switches of the same level: its up end is the one listed first
    tri = dict(square, switch_links=[["x0", "x1"], ["x0", "x2"], ["x1", "x2"], ["x2", "x3"]])
    assert Platform.from_dict(tri).switches.root == 2  # the centre
    r = Platform.from_dict(dict(tri, routing_root="x0")).switches.routing
    assert r.is_up(2, 1) and not r.is_up(1, 2)
    assert r.route(2, 1) == (2, 1) and r.route(3, 1) == (3, 2, 1)


def test_resources_are_directed():
    r = Platform.from_dict(line(3)).switches.routing
    assert r.resources(r.route(0, 2)) == (0, 2)  # x0->x1 is link 0 forwards, x1->x2 link 1
    assert r.resources(r.route(2, 0)) == (3, 1)
    assert [r.resource_ends(k) for k in range(4)] == [(0, 1), (1, 0), (1, 2), (2, 1)]


# -- the generator ------------------------------------------------------------------------------


@given(
    st.integers(1, 300),
    st.sampled_from([1.0, 2.0, 4.0, 5.5]),
    st.sampled_from(["uniform", "extremes", "bell"]),
    st.integers(1, 8),
    st.integers(0, 2**32),
)
def test_generator_respects_ports_density_and_shares(n, density, speeds, types, seed):
    p = switch_platform(n, density=density, speeds=speeds, types=types, seed=seed)
    net = p.switches
    assert len(p) == n and len(net) == -(-n // density)
    used = net.workstation_count + net.degree
    assert (used <= 8).all()
    assert (net.distances >= 0).all()  # connected
    counts = collections.Counter(net.types)
    if speeds == "uniform":
        assert set(counts) <= set(range(1, types + 1))
        assert max(counts.values()) - min(counts.values()) <= 1
    elif speeds == "bell" and n >= 20:
        assert counts[4] == counts[5] == round(n * 0.2) or abs(counts[4] - n * 0.2) < 1
    elif speeds == "extremes":
        assert abs(counts[1] - n / 4) < 1 and abs(counts[8] - n / 4) < 1
    again = switch_platform(n, density=density, speeds=speeds, types=types, seed=seed)
    assert again.to_dict() == p.to_dict()


def test_generator_uses_the_free_ports():
    p = switch_platform(256, seed=5)
    net = p.switches
    free = 8 * len(net) - net.workstation_count.sum() - 2 * len(net.links)
    assert free < len(net)  # nearly every port is used: cycles beyond the spanning tree
    assert len(net.links) > len(net) - 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be"),
        ({"n": 10, "density": 0}, "density"),
        ({"n": 20, "density": 10}, "lower the density"),
        ({"n": 10, "ports": 2}, "ports"),
        ({"n": 10, "types": 9}, "types"),
        ({"n": 10, "speeds": "normal"}, "unknown distribution"),
        ({"n": 10, "speeds": {9: 1.0}}, "unknown speed type"),
    ],
)
def test_generator_bad_arguments(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        switch_platform(**kwargs)


# -- eq. (1)-(5) against the simulator -----------------------------------------------------------


def eq5(d: int, m: int) -> float:
    """Eq. (5) with the documented parameters (100 Mbps links, 1 Gbps fabric, 8 us/port)."""
    return 0.08e-6 * m * d + (0.008e-6 * m + 2 * 8e-6) * (d + 1)


@pytest.mark.parametrize("d", [0, 1, 2, 3, 4])
@pytest.mark.parametrize(("sender", "receiver"), [(1, 8), (8, 1), (3, 5)])
@pytest.mark.parametrize("m", [0, 2048, 10240])
def test_one_transfer_takes_eq1_to_eq5(d, sender, receiver, m):
    data = line(5)
    data["nodes"][0]["type"] = sender
    if d:
        data["nodes"][d]["type"] = receiver
    data["nodes"].append({"id": "z", "switch": "x0", "type": receiver})
    p = Platform.from_dict(data)
    to = "z" if d == 0 else f"w{d}_0"
    s = Schedule("multicast", "hand", m, (Flow(Tree("w0_0", {"w0_0": (to,)}), m),))
    s_c, s_m, _, _ = SPEED_TYPES[sender]
    _, _, r_c, r_m = SPEED_TYPES[receiver]
    expected = (s_c + s_m * m) + eq5(d, m) + (r_c + r_m * m)
    pred = simulate(p, s)
    assert pred.makespan == pytest.approx(expected, rel=1e-12)
    bound = p.model.bind(p)
    assert bound.send_busy(0, p.index(to), m) == pytest.approx(s_c + s_m * m)
    assert bound.delay_matrix(m)[0, p.index(to)] == bound.delay(0, p.index(to), m)


def test_matrices_match_the_scalar_costs():
    p = switch_platform(40, seed=2)
    bound = p.model.bind(p)
    d = bound.delay_matrix(2048)
    for u, v in itertools.product(range(0, 40, 3), range(0, 40, 7)):
        if u != v:
            assert d[u, v] == bound.delay(u, v, 2048)
    assert np.array_equal(bound.node_cost(2048), bound.send_matrix(2048)[:, 0])


@pytest.mark.parametrize(("n", "seed"), [(40, 1), (90, 5)])
def test_route_tables_hold_the_routes(n, seed):
    r = switch_platform(n, density=2.5, seed=seed).switches.routing
    for choice in ("shortest", "tree"):
        table = r.route_table(choice)
        for a, b in itertools.product(range(r.n), repeat=2):
            row = tuple(x for x in table[a, b].tolist() if x != r.pad)
            assert row == r.resources(r.route(a, b, choice))


def test_builtin_switch16_is_the_generators_network():
    """``hetcoll plan switch16 ...`` works out of the box: the shipped file is exactly
    ``switch_platform(16, seed=1)`` (so a generator change that alters it is seen)."""
    shipped = load_platform("switch16")
    made = switch_platform(16, seed=1, types=8)
    assert shipped.ids == made.ids and shipped.model.name == "switch"
    for name in ("ids", "ports", "links", "attach", "types"):
        assert getattr(shipped.switches, name) == getattr(made.switches, name)
    assert np.array_equal(shipped.switches.costs, made.switches.costs)
