"""The ``nic`` model (a star of full-duplex NICs into one non-blocking switch): the platform
form and its refusals, closed forms of the simulator's max-min sharing, every planner on a
star."""

from __future__ import annotations

import json

import pytest

from _cli import one_line_error, run
from hetcoll import Platform, plan, simulate
from hetcoll.errors import HetcollError, ModelError, PlatformError
from hetcoll.models import get_model
from hetcoll.planners import plan_allgather
from hetcoll.platform import load_platform
from hetcoll.program import Chunk, Op, Program
from hetcoll.simulator import simulate_program

GB = 1e9


def star(bandwidths, latencies=None, model="nic"):
    latencies = latencies or [0.0] * len(bandwidths)
    nodes = [
        {"id": str(i), "bandwidth": b, "latency": lat}
        for i, (b, lat) in enumerate(zip(bandwidths, latencies, strict=True))
    ]
    return Platform.from_dict({"model": model, "nodes": nodes})


def test_file_form_with_units_round_trips():
    doc = {
        "model": "nic",
        "nodes": [
            {"id": "a", "bandwidth": "25Gbps", "latency": "5us"},
            {"id": "b", "bandwidth": "10Gbps", "latency": "2us"},
        ],
    }
    p = Platform.from_dict(doc)
    assert p.is_star and p.model.name == "nic"
    assert p.node("a").bandwidth == 25e9 / 8 and p.node("b").latency == pytest.approx(2e-6)
    assert p.latency[0, 1] == pytest.approx(7e-6) and p.bandwidth[0, 1] == 10e9 / 8
    again = Platform.from_dict(json.loads(json.dumps(p.to_dict())))
    assert again.to_dict() == p.to_dict()
    assert "latency" not in p.to_dict() and "bandwidth" not in p.to_dict()
    assert Platform.from_networkx(p.to_networkx()).to_dict() == p.to_dict()
    assert p.with_model("hockney").with_model("nic").to_dict() == p.to_dict()


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"model": "nic", "nodes": [{"id": "a"}, {"id": "b"}]}, "model 'nic': a star needs"),
        (
            {"model": "nic", "nodes": [{"id": "a", "bandwidth": "1Gbps"}, {"id": "b"}]},
            "nodes[1].bandwidth: missing",
        ),
        (
            {"model": "nic", "nodes": [{"id": "a", "bandwidth": -1}, {"id": "b", "bandwidth": 1}]},
            "nodes[0].bandwidth",
        ),
        (
            {"model": "nic", "nodes": [{"id": "a", "bandwidth": "fast"}]},
            "nodes[0].bandwidth",
        ),
        (
            {"model": "nic", "nodes": [{"id": "a", "bandwidth": 1, "latency": "-3us"}]},
            "nodes[0].latency",
        ),
        ({"model": "hockney", "nodes": [{"id": "a", "latency": "1us"}]}, "nodes[0].latency"),
        (
            {
                "model": "nic",
                "nodes": [{"id": "a", "bandwidth": 1}, {"id": "b", "bandwidth": 1}],
                "links": [{"u": "a", "v": "b"}],
            },
            "links: nodes[0] has a NIC",
        ),
        (
            {
                "model": "nic",
                "nodes": [{"id": "a", "bandwidth": 1}, {"id": "b", "bandwidth": 1}],
                "latency": [[0, 1], [1, 0]],
            },
            "latency: nodes[0] has a NIC",
        ),
        ({"model": "nic", "nodes": [{"id": "a", "bandwidth": 1, "nic": 2}]}, "nic"),
    ],
)
def test_malformed_stars_are_refused_in_one_line(doc, needle):
    with pytest.raises(PlatformError) as info:
        Platform.from_dict(doc)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_cli_refuses_a_bad_star_with_exit_2(capsys, tmp_path):
    path = tmp_path / "star.json"
    path.write_text(json.dumps({"model": "nic", "nodes": [{"id": "a", "bandwidth": "0bps"}]}))
    one_line_error(*run(capsys, "plan", str(path), "--root", "a"), "nodes[0].bandwidth")


def test_nic_model_refuses_a_platform_that_is_not_a_star():
    with pytest.raises(ModelError, match="model 'nic' needs a star"):
        get_model("nic").bind(load_platform("fig1"))
    with pytest.raises(HetcollError, match="star"):
        simulate(load_platform("fig1"), plan(load_platform("fig1"), "1"), model="nic")


# -- closed forms -------------------------------------------------------------------------------


def _program(sends, nbytes):
    """Each ``(u, v)`` sends its own chunk of ``nbytes`` at time 0, receives all posted."""
    chunks = tuple(Chunk(0, c * nbytes, nbytes) for c in range(len(sends)))
    ops: dict[str, list[Op]] = {}
    for c, (u, v) in enumerate(sends):
        ops.setdefault(u, []).append(Op("send", v, c))
        ops.setdefault(v, []).append(Op("recv", u, c))
    initial = {r: frozenset(c for c, (u, _) in enumerate(sends) if u == r) for r in ops}
    return Program({r: tuple(o) for r, o in ops.items()}, chunks, initial)


def test_k_senders_into_one_node_share_its_receiving_nic():
    """k fast senders into a slow node at once: each gets b_v / k, all end at
    l_u + l_v + k n / b_v."""
    k, n = 3, 10**6
    p = star([4 * GB, 4 * GB, 4 * GB, 1 * GB], [2e-6, 2e-6, 2e-6, 1e-6])
    _, done = simulate_program(p.model.bind(p), _program([(str(i), "3") for i in range(k)], n))
    assert done["3"] == pytest.approx([3e-6 + k * n / GB] * k, rel=1e-12)


def test_a_slow_sender_frees_the_receivers_nic_for_the_others():
    """Max-min: a 0.5 GB/s sender and two 4 GB/s ones into a 2 GB/s NIC get 0.5, 0.75,
    0.75; after the fast ones end (n / 0.75) the slow one runs at 0.5 (its own NIC)."""
    n = 3 * 10**6
    p = star([0.5 * GB, 4 * GB, 4 * GB, 2 * GB])
    _, done = simulate_program(p.model.bind(p), _program([("0", "3"), ("1", "3"), ("2", "3")], n))
    assert done["3"] == pytest.approx([n / (0.5 * GB), n / (0.75 * GB), n / (0.75 * GB)])


def test_one_sender_to_k_receivers_sends_in_turn_at_its_nic_rate():
    """A flat broadcast: the root's sends go one after the other (its send port), each at
    min(b_root, b_child): sum_i (l_root + l_i + n / min(b_root, b_i))."""
    n = 10**6
    p = star([2 * GB, 1 * GB, 4 * GB, 2 * GB], [1e-6, 2e-6, 3e-6, 4e-6])
    got = simulate(p, plan(p, "0", method="flat", nbytes=n)).makespan
    expected = sum(
        1e-6 + lat + n / min(2 * GB, b) for b, lat in [(GB, 2e-6), (4 * GB, 3e-6), (2 * GB, 4e-6)]
    )
    assert got == pytest.approx(expected, rel=1e-12)


def test_star_allgather_by_recursive_doubling_is_full_duplex():
    """Homogeneous star, N = 4, m bytes each: step i exchanges 2^i m both ways at once on
    every full-duplex NIC: 2 (2 l) + 3 m / b."""
    m, b, lat = 10**6, 1 * GB, 5e-6
    p = star([b] * 4, [lat] * 4)
    s = plan_allgather(p, method="blind", nbytes=m)
    assert simulate(p, s).makespan == pytest.approx(2 * 2 * lat + 3 * m / b, rel=1e-12)


def test_alone_a_transfer_costs_what_the_matrices_say():
    p = star([3 * GB, 1 * GB], [1e-6, 2e-6])
    bound = p.model.bind(p)
    n = 12345
    assert bound.delay(0, 1, n) == pytest.approx(3e-6 + n / GB, rel=1e-15)
    assert bound.delay_matrix(n)[0, 1] == bound.delay(0, 1, n)
    costs = bound.costs([0, 1], [1, 0], [n, n])
    assert costs.delay.tolist() == [bound.delay(0, 1, n), bound.delay(1, 0, n)]
    assert costs.resources.tolist() == [0, 3, 1, 2]
    assert bound.resource_name(3) == ("switch", "1")
