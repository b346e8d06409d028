"""fnf_joint: multiple multicast planned jointly on shared send ports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll import Flow, Schedule, ScheduleError, Tree, load_platform, simulate
from hetcoll.generators import two_class_tini
from hetcoll.planners import plan, plan_multiple


@st.composite
def multi(draw, max_n=14, max_groups=5):
    n = draw(st.integers(3, max_n))
    p = two_class_tini(
        n,
        draw(st.sampled_from([0.25, 0.5])),
        speed_factor=3.0,
        t_byte=1e-9,
        seed=draw(st.integers(0, 10**6)),
    )
    groups = []
    for _ in range(draw(st.integers(1, max_groups))):
        root = draw(st.integers(0, n - 1))
        others = [i for i in range(n) if i != root]
        k = draw(st.integers(1, n - 1))
        members = draw(st.permutations(others))[:k]
        groups.append((p.ids[root], [p.ids[m] for m in members]))
    return p, groups


@given(multi(max_groups=1))
def test_one_group_is_fnf(inst):
    p, groups = inst
    joint = plan_multiple(p, groups, method="fnf_joint", nbytes=100)
    fnf = plan(p, *groups[0], method="fnf", nbytes=100)
    assert joint.flows[0].tree == fnf.tree
    assert simulate(p, joint).makespan == pytest.approx(simulate(p, fnf).makespan)


@given(multi())
def test_valid_deterministic_and_round_trips(inst):
    p, groups = inst
    s = plan_multiple(p, groups, method="fnf_joint", nbytes=64)
    s.validate(p)
    assert [s.roots[b] for b in s.buffers] == [r for r, _ in groups]
    for b, (root, members) in enumerate(groups):
        assert set(s.members(b)) == {root, *members}
    assert Schedule.from_json(s.to_json()) == s
    assert plan_multiple(p, groups, method="fnf_joint", nbytes=64).to_json() == s.to_json()
    # every sender's sends are issued in the planned order
    pred = simulate(p, s)
    issued: dict[str, list] = {}
    for t in pred.transfers:
        issued.setdefault(t.sender, []).append(t)
    for node, pairs in s.order.items():
        assert len(issued[node]) == len(pairs)


def test_shares_the_fast_nodes_where_independent_trees_overload_them():
    """64 sources to 63 destinations each (Banikazemi Sec. 7.2, Fig. 10): FNF tree by tree
    sends everything through the same fast relays and loses to binomial trees; planned
    jointly it wins."""
    rng = np.random.default_rng(0)
    p = two_class_tini(64, 0.25, speed_factor=4, t_byte=12.5e-9, seed=1)
    groups = [(p.ids[r], [p.ids[m] for m in range(64) if m != r]) for r in range(64)]
    rng.shuffle(groups)
    t = {
        m: simulate(p, plan_multiple(p, groups, method=m, nbytes=1024)).makespan
        for m in ("binomial", "fnf", "fnf_joint")
    }
    assert t["fnf"] > t["binomial"]
    assert t["fnf_joint"] < t["binomial"] / 1.3


def test_order_must_list_each_send_once():
    t1, t2 = Tree("a", {"a": ("b", "c")}), Tree("b", {"b": ("a",)})
    flows = (Flow(t1, 1, buffer=0), Flow(t2, 1, buffer=1))
    ok = Schedule("multi_multicast", "x", 1, flows, order={"a": ((0, "c"), (0, "b"))})
    prog = ok.program()
    assert [op.peer for op in prog.ops["a"] if op.kind == "send"] == ["c", "b"]
    with pytest.raises(ScheduleError, match=r"order\['a'\]"):
        Schedule("multi_multicast", "x", 1, flows, order={"a": ((0, "b"),)})
    with pytest.raises(ScheduleError, match=r"order\['a'\]"):
        Schedule("multi_multicast", "x", 1, flows, order={"a": ((0, "b"), (0, "b"), (0, "c"))})


def test_fig1_doctest_value_and_cli(capsys):
    import json

    from hetcoll.cli import main

    p = load_platform("fig1")
    s = plan_multiple(p, [("1", ["2", "3", "4"]), ("6", ["5", "7", "8"])], method="fnf_joint")
    assert simulate(p, s).makespan == pytest.approx(300e-6)
    code = main(
        [
            "plan",
            "fig1",
            "--op",
            "multi-multicast",
            "--group",
            "1:2,3,4",
            "--group",
            "2:5,6,7,8",
            "--algo",
            "fnf_joint",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["collective"] == "multi_multicast" and "order" in doc["schedule"]
