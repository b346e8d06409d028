"""The ``nic`` model (a star of full-duplex NICs into one non-blocking switch): the platform
form and its refusals, closed forms of the simulator's max-min sharing, every planner on a
star."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_one_sender_to_two_faster_receivers_splits_its_nic():
    """A node sends n bytes to two faster receivers at once: its sends share its sending NIC
    (no port held), each flow at b_u / 2, both in at l_u + l_v + 2 n / b_u."""
    n = 10**6
    p = star([1 * GB, 4 * GB, 4 * GB], [1e-6, 2e-6, 2e-6])
    program = _program([("0", "1"), ("0", "2")], n)
    transfers, done = simulate_program(p.model.bind(p), program)
    assert done["1"] == done["2"] == [pytest.approx(3e-6 + 2 * n / GB, rel=1e-12)]
    assert [t.start for t in transfers] == [0.0, 0.0]


def test_a_slow_receiver_leaves_the_rest_of_the_senders_nic_to_the_fast_one():
    """Max-min on the sender's NIC: a 2 GB/s node sends to a 0.5 GB/s and a 4 GB/s one:
    0.5 and 1.5 GB/s; the fast flow ends at n / 1.5 GB/s, the slow one at n / 0.5 GB/s."""
    n = 3 * 10**6
    p = star([2 * GB, 0.5 * GB, 4 * GB])
    _, done = simulate_program(p.model.bind(p), _program([("0", "1"), ("0", "2")], n))
    assert done["1"] == [pytest.approx(n / (0.5 * GB), rel=1e-12)]
    assert done["2"] == [pytest.approx(n / (1.5 * GB), rel=1e-12)]


def test_two_senders_into_a_slower_receiver_each_get_half_its_nic():
    """Two 4 GB/s senders into a 1 GB/s node at once: b_v / 2 each, both in at l + 2 n / b_v."""
    n = 10**6
    p = star([4 * GB, 4 * GB, 1 * GB], [1e-6, 1e-6, 3e-6])
    _, done = simulate_program(p.model.bind(p), _program([("0", "2"), ("1", "2")], n))
    assert done["2"] == pytest.approx([4e-6 + 2 * n / GB] * 2, rel=1e-12)


def test_a_senders_own_cost_per_message_starts_its_sends_one_at_a_time():
    """t_ini holds the send port (the node's own work per message), not the NIC: the second
    send starts t_ini after the first; the first flow runs alone for t_ini, then both share
    b_u: the first is in at t_ini + l + 2 n / b_u - t_ini = l + 2 n / b_u, the second
    t_ini later, at l + 2 n / b_u + t_ini (2 n bytes through b_u from t_ini + l on)."""
    n, t_ini, lat = 10**6, 10e-6, 1e-6
    doc = {
        "model": "nic",
        "nodes": [
            {"id": "0", "bandwidth": GB, "latency": lat / 2, "t_ini": t_ini},
            {"id": "1", "bandwidth": 4 * GB, "latency": lat / 2},
            {"id": "2", "bandwidth": 4 * GB, "latency": lat / 2},
        ],
    }
    p = Platform.from_dict(doc)
    transfers, done = simulate_program(p.model.bind(p), _program([("0", "1"), ("0", "2")], n))
    assert [t.start for t in transfers] == [0.0, t_ini]
    assert [t.sender_free for t in transfers] == [t_ini, 2 * t_ini]
    assert done["1"] == [pytest.approx(t_ini + lat + 2 * n / GB - t_ini, rel=1e-12)]
    assert done["2"] == [pytest.approx(lat + 2 * n / GB + t_ini, rel=1e-12)]


def test_a_flat_broadcast_sends_to_every_child_at_once():
    """Flat broadcast from a 2 GB/s root to 1, 4 and 2 GB/s children, equal latencies: three
    flows at once, max-min 2/3 GB/s each, all in at 2 l + 3 n / b_root."""
    n, lat = 10**6, 1e-6
    p = star([2 * GB, 1 * GB, 4 * GB, 2 * GB], [lat] * 4)
    got = simulate(p, plan(p, "0", method="flat", nbytes=n)).makespan
    assert got == pytest.approx(2 * lat + 3 * n / (2 * GB), rel=1e-12)


@st.composite
def _transfers(draw):
    n = draw(st.integers(2, 5))
    rates = draw(st.lists(st.sampled_from([1.0, 2.0, 2.5, 4.0]), min_size=n, max_size=n))
    lats = draw(st.lists(st.sampled_from([0.0, 1e-6, 3e-6]), min_size=n, max_size=n))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda t: t[0] != t[1]),
            min_size=1,
            max_size=8,
        )
    )
    sizes = draw(st.lists(st.integers(1, 10**6), min_size=len(pairs), max_size=len(pairs)))
    return [r * GB for r in rates], lats, pairs, sizes


@settings(max_examples=60, deadline=None)
@given(_transfers())
def test_no_nic_carries_more_than_its_rate_and_one_flow_per_nic_runs_alone(case):
    """Transfers all started at 0: through every NIC, the bytes of its flows take at least
    their sum over its rate after the first of them may flow; when no NIC carries two
    flows, each arrives at its time alone."""
    rates, lats, pairs, sizes = case
    p = star(rates, lats)
    bound = p.model.bind(p)
    offsets = [sum(sizes[:c]) for c in range(len(sizes))]
    chunks = tuple(Chunk(0, o, n) for o, n in zip(offsets, sizes, strict=True))
    ops: dict[str, list[Op]] = {str(u): [] for u in range(len(rates))}
    for c, (u, v) in enumerate(pairs):
        ops[str(u)].append(Op("send", str(v), c))
        ops[str(v)].append(Op("recv", str(u), c))
    initial = {str(u): frozenset(c for c, (a, _) in enumerate(pairs) if a == u) for u in ops}
    program = Program({r: tuple(o) for r, o in ops.items()}, chunks, initial)
    transfers, _ = simulate_program(bound, program)
    arrival = {t.chunk: t.arrival for t in transfers}
    for node in range(len(rates)):
        for side in (0, 1):  # its sending NIC, its receiving NIC
            mine = [c for c, pair in enumerate(pairs) if pair[side] == node]
            if not mine:
                continue
            first = min(lats[pairs[c][0]] + lats[pairs[c][1]] for c in mine)
            last = max(arrival[c] for c in mine)
            assert sum(sizes[c] for c in mine) / rates[node] <= (last - first) * (1 + 1e-9)
    senders = [u for u, _ in pairs]
    receivers = [v for _, v in pairs]
    if len(set(senders)) == len(senders) and len(set(receivers)) == len(receivers):
        for c, (u, v) in enumerate(pairs):
            assert arrival[c] == pytest.approx(bound.delay(u, v, sizes[c]), rel=1e-12)


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
    assert bound.delay_matrix(n)[0, 1] == bound.send_matrix(n)[0, 1] == bound.delay(0, 1, n)
    assert bound.send_busy(0, 1, n) == 0.0  # no node cost: the port is free at once
    costs = bound.costs([0, 1], [1, 0], [n, n])
    assert costs.delay.tolist() == [bound.delay(0, 1, n), bound.delay(1, 0, n)]
    assert costs.send_busy.tolist() == [0.0, 0.0]
    assert costs.resources.tolist() == [0, 3, 1, 2]
    assert bound.resource_name(3) == ("switch", "1")
