"""Link contention on switch platforms: the contention check, the exclusive simulation, the
step accounting, and ``hetcoll plan --check-contention`` / ``--json``."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import one_line_error, run
from _contention import without_blockers
from hetcoll import Flow, Platform, Schedule, Tree, plan, simulate
from hetcoll.contention import contention
from hetcoll.errors import ModelError
from hetcoll.generators import switch_platform
from hetcoll.models import get_model
from hetcoll.steps import step_conflicts, step_time, transfer_steps
from hetcoll.switches import SPEED_TYPES

DUMBBELL = {
    "model": "switch",
    "switches": [{"id": "x0"}, {"id": "x1"}],
    "switch_links": [["x0", "x1"]],
    "nodes": [
        {"id": "a", "switch": "x0", "type": 1},
        {"id": "b", "switch": "x0", "type": 1},
        {"id": "c", "switch": "x1", "type": 1},
        {"id": "d", "switch": "x1", "type": 1},
    ],
}
M = 1000


def two_messages(first: tuple[str, str], second: tuple[str, str]) -> Schedule:
    """Two independent messages that both start at time 0 (a multiple multicast)."""
    flows = (
        Flow(Tree(first[0], {first[0]: (first[1],)}), M, buffer=0),
        Flow(Tree(second[0], {second[0]: (second[1],)}), M, buffer=1),
    )
    return Schedule("multi_multicast", "hand", M, flows)


WHOLE = {"name": "switch", "link_hold": "whole"}


def o_send(kind: int = 1) -> float:
    s_c, s_m, _, _ = SPEED_TYPES[kind]
    return s_c + s_m * M


def o_trans(d: int) -> float:
    """Eq. (5): 100 Mbps links, a 1 Gbps switch fabric, 8 us per port."""
    return 0.08e-6 * M * d + (0.008e-6 * M + 16e-6) * (d + 1)


def t_ptp(d: int, sender: int = 1, receiver: int = 1) -> float:
    _, _, r_c, r_m = SPEED_TYPES[receiver]
    return o_send(sender) + o_trans(d) + (r_c + r_m * M)


@pytest.fixture
def dumbbell():
    return Platform.from_dict(DUMBBELL)


def test_two_transfers_on_one_directed_link_overlap(dumbbell):
    """a -> c and b -> d start at 0 and cross x0 -> x1 once their senders' overheads are
    done, both at O_send: the second waits until the first's tail is through, O_trans."""
    s = two_messages(("a", "c"), ("b", "d"))
    report = contention(dumbbell, s)
    assert not report.free
    (o,) = report.overlaps
    t = report.transfers
    assert o.link == ("x0", "x1")
    assert {(t[o.first].sender, t[o.second].sender)} == {("a", "b")}
    assert (o.start, o.end) == pytest.approx((o_send(), o_send() + o_trans(1)))
    # exclusive links: the second waits for the first's flits (lower index first at ties)
    pred = {(x.sender, x.receiver): x for x in report.predicted.transfers}
    assert pred[("a", "c")].start == 0.0
    assert pred[("b", "d")].start == pytest.approx(o_trans(1), rel=1e-12)
    assert pred[("b", "d")].blocked_on == "link"
    assert pred[("b", "d")].blocked_link == ("x0", "x1")
    assert report.predicted.makespan == pytest.approx(o_trans(1) + t_ptp(1), rel=1e-12)
    doc = report.to_dict()
    assert doc["contention_free"] is False
    assert doc["overlaps"][0]["link"] == ["x0", "x1"]
    assert doc["overlaps"][0]["transfers"] == [["a", "c"], ["b", "d"]]


def test_whole_transfer_window_holds_links_from_start_to_arrival(dumbbell):
    """link_hold="whole": the same two messages, the second waits for the first's arrival."""
    s = two_messages(("a", "c"), ("b", "d"))
    report = contention(dumbbell, s, WHOLE)
    (o,) = report.overlaps
    assert (o.start, o.end) == pytest.approx((0.0, t_ptp(1)))
    pred = {(x.sender, x.receiver): x for x in report.predicted.transfers}
    assert pred[("b", "d")].start == pytest.approx(t_ptp(1), rel=1e-12)
    assert report.predicted.makespan == pytest.approx(2 * t_ptp(1), rel=1e-12)


def test_a_slow_senders_worm_enters_after_a_fast_ones_has_left(dumbbell):
    """A type-1 and a type-8 sender cross x0 -> x1 at once: the type-8 one's flits enter
    the network O_send(8) = 4.7 ms after its start, long after the type-1 worm (in the
    network from 110 us to 238 us) has left: neither waits.  Holding the links for the
    whole transfer makes the second wait for the first's arrival."""
    data = json.loads(json.dumps(DUMBBELL))
    data["nodes"][1]["type"] = 8
    p = Platform.from_dict(data)
    s = two_messages(("a", "c"), ("b", "d"))
    wire = {(x.sender, x.receiver): x for x in simulate(p, s).transfers}
    assert wire[("a", "c")].start == wire[("b", "d")].start == 0.0
    assert simulate(p, s).makespan == pytest.approx(t_ptp(1, sender=8), rel=1e-12)
    assert contention(p, s).free
    whole = {(x.sender, x.receiver): x for x in simulate(p, s, WHOLE).transfers}
    assert whole[("b", "d")].start == pytest.approx(t_ptp(1), rel=1e-12)
    assert not contention(p, s, WHOLE).free


def test_opposite_directions_do_not_contend(dumbbell):
    s = two_messages(("a", "c"), ("d", "b"))
    for model in (None, WHOLE):
        report = contention(dumbbell, s, model)
        assert report.free and not report.delays
        assert report.predicted.makespan == pytest.approx(t_ptp(1))
        assert all(x.start == 0.0 for x in report.predicted.transfers)


def test_transfers_on_one_switch_never_contend(dumbbell):
    s = two_messages(("a", "b"), ("c", "d"))
    assert contention(dumbbell, s).free
    s = two_messages(("a", "c"), ("c", "d"))  # d's message stays on x1
    assert contention(dumbbell, s).free


def test_links_held_while_the_flits_are_in_the_network(dumbbell):
    """a sends to c, then (its port free after O_send = 110 us) to d over the same link:
    the second worm may enter the network only once the first's tail is through, at
    O_send + O_trans = 238 us, so it starts at O_trans = 128 us, holding a's port."""
    tree = Tree("a", {"a": ("c", "d")})
    s = Schedule("multicast", "hand", M, (Flow(tree, M),))
    pred = simulate(dumbbell, s)
    starts = [(x.receiver, x.start) for x in pred.transfers]
    assert starts == [("c", 0.0), ("d", pytest.approx(o_trans(1), rel=1e-12))]
    assert pred.makespan == pytest.approx(o_trans(1) + t_ptp(1), rel=1e-12)
    free = simulate(dumbbell, s, {"name": "switch", "contention": "none"})
    assert [x.start for x in free.transfers] == [0.0, pytest.approx(o_send())]
    (o,) = contention(dumbbell, s).overlaps
    assert (o.start, o.end) == pytest.approx((2 * o_send(), o_send() + o_trans(1)))


def test_links_held_from_start_to_arrival(dumbbell):
    """The same under link_hold="whole": the second waits until the first arrives."""
    tree = Tree("a", {"a": ("c", "d")})
    s = Schedule("multicast", "hand", M, (Flow(tree, M),))
    pred = simulate(dumbbell, s, WHOLE)
    starts = [(x.receiver, x.start) for x in pred.transfers]
    assert starts == [("c", 0.0), ("d", pytest.approx(t_ptp(1)))]
    free = simulate(dumbbell, s, {"name": "switch", "contention": "none", "link_hold": "whole"})
    assert [x.start for x in free.transfers] == [0.0, pytest.approx(o_send())]
    (o,) = contention(dumbbell, s, WHOLE).overlaps
    assert (o.start, o.end) == pytest.approx((o_send(), t_ptp(1)))


def test_link_hold_is_checked():
    with pytest.raises(ModelError, match="link_hold must be one of wire, whole, got 'flits'"):
        get_model({"name": "switch", "link_hold": "flits"})


def test_contention_needs_the_switch_model(dumbbell):
    s = two_messages(("a", "c"), ("b", "d"))
    with pytest.raises(ModelError, match="switch"):
        contention(dumbbell, s, "tini")


def test_step_conflicts_and_step_time(dumbbell):
    tree = Tree("a", {"a": ("b", "c"), "b": ("d",)})
    s = Schedule("bcast", "hand", M, (Flow(tree, M),))
    steps = [(t.sender, t.receiver, t.step) for t in transfer_steps(s)]
    assert steps == [("a", "b", 1), ("a", "c", 2), ("b", "d", 2)]
    (c,) = step_conflicts(dumbbell, s)
    assert (c.step, c.link) == (2, ("x0", "x1"))
    assert step_time(dumbbell, s) == pytest.approx(t_ptp(0) + t_ptp(1))
    tree_model = {"name": "switch", "routes": "tree"}
    assert step_conflicts(dumbbell, s, tree_model)  # one link: no other route


def test_a_contention_free_schedule_runs_as_if_links_were_free():
    p = switch_platform(64, seed=4)
    s = plan(p, "w0", method="postorder_doubling", nbytes=2048)
    free = simulate(p, s, {"name": "switch", "contention": "none"})
    report = contention(p, s)
    assert not report.free  # a sender's consecutive messages share its first links
    assert any(t > free.arrival[k] for k, t in report.predicted.arrival.items())
    s = plan(p, "w0", method="postorder_doubling", members=["w0", "w1"], nbytes=2048)
    assert contention(p, s).free
    assert (
        contention(p, s).predicted.makespan
        == simulate(p, s, {"name": "switch", "contention": "none"}).makespan
    )


# -- the command line ----------------------------------------------------------------------------


def test_plan_json_on_a_switch_platform(tmp_path, capsys):
    path = tmp_path / "net.json"
    path.write_text(json.dumps(DUMBBELL))
    code, out, _ = run(
        capsys, "plan", path, "--root", "a", "--size", M, "--algo", "binomial", "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["routing_root"] == "x0"
    by_pair = {(t["sender"], t["receiver"]): t for t in doc["transfers"]}
    ac = by_pair[("a", "c")]
    assert ac["route"] == ["x0", "x1"]
    assert ac["hold"] == pytest.approx(
        [ac["start"] + o_send(), ac["start"] + o_send() + o_trans(1)], rel=1e-12
    )
    assert by_pair[("a", "b")]["route"] == ["x0"]
    assert ac["arrival"] - ac["start"] == pytest.approx(t_ptp(1))
    assert doc["predicted_time"] == pytest.approx(max(t["arrival"] for t in doc["transfers"]))


def test_plan_check_contention(tmp_path, capsys):
    path = tmp_path / "net.json"
    path.write_text(json.dumps(DUMBBELL))
    # binomial in rank order: a -> c (across), then a -> b; c -> d stays on x1: no overlap
    code, out, _ = run(
        capsys, "plan", path, "--root", "a", "--algo", "binomial", "--check-contention"
    )
    assert code == 0 and "contention: none" in out
    # a chain a -> b -> c -> d ... versus flat: a -> b, a -> c, a -> d holds x0 -> x1 twice
    code, out, _ = run(
        capsys, "plan", path, "--root", "a", "--size", M, "--algo", "flat", "--check-contention"
    )
    assert code == 0
    assert "contention: 1 pairs of transfers share a directed link" in out
    assert "x0->x1: a->c and a->d" in out
    code, out, _ = run(
        capsys, "plan", path, "--root", "a", "--size", M, "--algo", "flat", "--check-contention",
        "--json",
    )  # fmt: skip
    doc = json.loads(out)["contention"]
    assert doc["contention_free"] is False
    assert doc["overlaps"][0]["transfers"] == [["a", "c"], ["a", "d"]]


def test_check_contention_needs_a_switch_platform(capsys):
    one_line_error(
        *run(capsys, "plan", "fig1", "--root", "1", "--check-contention"),
        "--check-contention",
        "switch",
    )


def test_a_receive_port_booked_after_a_rounding_gap_does_not_loop_forever():
    """Regression (merge of the event-driven simulator): a receive port is booked from
    ``start + (T_ptp - O_receive)``; when ``(end - off) + off`` rounds below ``end``, the same
    booking was hit again forever.  Run in a subprocess so a regression fails, not hangs;
    then no receiver's port is booked twice at once."""
    import subprocess
    import sys

    code = (
        "from hetcoll import plan, simulate\n"
        "from hetcoll.generators import switch_platform\n"
        "p = switch_platform(32, seed=1, types=8)\n"
        "print(simulate(p, plan(p, 'w1', method='two_vbbs', nbytes=2048)).makespan)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-500:]
    p = switch_platform(32, seed=1, types=8)
    pred = simulate(p, plan(p, "w1", method="two_vbbs", nbytes=2048))
    costs = p.switches.costs
    by_receiver: dict[str, list[tuple[float, float]]] = {}
    for t in pred.transfers:
        r_c, r_m = costs[p.index(t.receiver), 2:]
        by_receiver.setdefault(t.receiver, []).append(
            (t.arrival - (r_c + r_m * t.nbytes), t.arrival)
        )
    for spans in by_receiver.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-15 for a, b in itertools.pairwise(spans))
    assert pred.makespan == max(t.arrival for t in pred.transfers)


# -- exclusive windows on random switch networks ---------------------------------------------------


@st.composite
def switch_cases(draw):
    """A small random switch network (few switches, so routes share links), a random tree
    over it cut into 1-3 concurrent flows and maybe segments, and a link window."""
    n = draw(st.integers(3, 12))
    p = switch_platform(
        n,
        density=draw(st.sampled_from([1.5, 2.0, 3.0])),
        types=draw(st.sampled_from([1, 2, 8])),
        seed=draw(st.integers(0, 2**16)),
    )
    ids = list(p.ids)
    order = draw(st.permutations(ids[1:]))
    edges, placed = [], [ids[0]]
    for x in order:
        edges.append((draw(st.sampled_from(placed)), x))
        placed.append(x)
    tree = Tree.from_edges(ids[0], edges)
    nbytes = draw(st.sampled_from([0, 1, 512, 2048]))
    seg = draw(st.sampled_from([None, 256, 1024]))
    flows = draw(st.integers(1, 3)) if nbytes >= 3 else 1
    cut = [nbytes * i // flows for i in range(flows + 1)]
    parts = tuple(Flow(tree, b - a, offset=a, segment_size=seg) for a, b in itertools.pairwise(cut))
    model = {"name": "switch", "link_hold": draw(st.sampled_from(["wire", "whole"]))}
    return p, Schedule("bcast", "t", nbytes, parts), model


@settings(max_examples=150, deadline=None)
@given(switch_cases())
def test_link_windows_never_overlap_and_long_route_books_agree(case):
    """Under either window no two transfers hold a directed link at once, a transfer that
    waited for a link starts when the blocker's window ends (its own window then begins),
    and booking by transfer (``RouteBooks``, forced on every route) gives the per-link
    lists' prediction bit for bit."""
    from unittest.mock import patch

    from hetcoll.contention import held_window
    from hetcoll.simulator import events

    p, s, model = case
    pred = simulate(p, s, model)
    bound = get_model(model).bind(p)
    index = p.index
    ts = pred.transfers
    held = [held_window(bound, index, t) for t in ts]
    links = [set(bound.links(index(t.sender), index(t.receiver))) for t in ts]
    for i, j in itertools.combinations(range(len(ts)), 2):
        if links[i] & links[j] and held[i][0] < held[i][1] and held[j][0] < held[j][1]:
            assert held[i][1] <= held[j][0] or held[j][1] <= held[i][0], (ts[i], ts[j])
    for k, t in enumerate(ts):
        if t.blocked_on == "link":
            b = t.blocked_by
            assert held[b][1] == pytest.approx(held[k][0], rel=1e-12, abs=1e-18)
    with patch.object(events, "SHORT_ROUTE", 0):
        got = simulate(p, s, model)
    assert without_blockers(got) == without_blockers(pred)
