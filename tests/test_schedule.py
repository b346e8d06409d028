"""Schedule IR: trees, flows, lowering to per-rank programs, validation, JSON."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll import Flow, Program, Schedule, ScheduleError, Tree
from hetcoll.program import Chunk, Op
from hetcoll.schedule import OrderedSend


def random_tree(draw_parents: list[int]) -> Tree:
    edges = [(str(p), str(c + 1)) for c, p in enumerate(draw_parents)]
    return Tree.from_edges("0", edges)


@st.composite
def trees(draw, max_nodes=12):
    n = draw(st.integers(1, max_nodes))
    parents = [draw(st.integers(0, c)) for c in range(n - 1)]  # node c+1 hangs off 0..c
    return random_tree(parents)


def test_tree_keeps_send_order_and_lists_nodes_breadth_first():
    t = Tree.from_edges("r", [("r", "b"), ("r", "a"), ("b", "c")])
    assert t.children == {"r": ("b", "a"), "b": ("c",)}
    assert t.nodes == ("r", "b", "a", "c")
    assert t.parent() == {"b": "r", "a": "r", "c": "b"}


@pytest.mark.parametrize(
    ("children", "message"),
    [
        ({"r": ("a", "a")}, "appears twice"),
        ({"r": ("a",), "x": ("y",)}, "not reached"),
        ({"r": ("a",), "a": ("r",)}, "appears twice"),
    ],
)
def test_bad_trees(children, message):
    with pytest.raises(ScheduleError, match=message):
        Tree("r", children)


def test_segments_cover_the_message():
    f = Flow(Tree("r", {"r": ("a",)}), nbytes=10, offset=5, segment_size=4)
    assert f.segments() == [(5, 4), (9, 4), (13, 2)]
    assert Flow(Tree("r"), 0).segments() == [(0, 0)]


def test_buffers_must_be_partitioned():
    t = Tree("r", {"r": ("a",)})
    with pytest.raises(ScheduleError, match="cover 6 bytes, the message has 10"):
        Schedule("bcast", "x", 10, (Flow(t, 6),))
    with pytest.raises(ScheduleError, match="gap or overlap"):
        Schedule("bcast", "x", 10, (Flow(t, 6), Flow(t, 6, offset=4)))
    other = Tree("a", {"a": ("r",)})
    with pytest.raises(ScheduleError, match="share the root"):
        Schedule("bcast", "x", 10, (Flow(t, 5), Flow(other, 5, offset=5)))
    with pytest.raises(ScheduleError, match="unknown collective"):
        Schedule("alltoall", "x", 0, (Flow(t, 0),))


def test_lowering_pipelined_tree():
    t = Tree("r", {"r": ("a", "b"), "a": ("c",)})
    s = Schedule("bcast", "x", 5, (Flow(t, 5, segment_size=2),))
    prog = s.program()
    assert prog.chunks == (Chunk(0, 0, 2), Chunk(0, 2, 2), Chunk(0, 4, 1))
    assert prog.initial == {"r": frozenset({0, 1, 2})}
    # the root sends segment by segment, each to every child in order
    assert [(o.peer, o.chunk) for o in prog.ops["r"]] == [
        ("a", 0),
        ("b", 0),
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("b", 2),
    ]
    # an inner node posts all receives first, then forwards each segment after receiving it
    a = prog.ops["a"]
    assert [o.kind for o in a] == ["recv"] * 3 + ["send"] * 3
    assert [o.deps for o in a[3:]] == [(0,), (1,), (2,)]
    prog.validate()


@given(trees(), st.integers(0, 40), st.one_of(st.none(), st.integers(1, 16)))
def test_every_member_receives_every_chunk_exactly_once(tree, nbytes, seg):
    s = Schedule("bcast", "x", nbytes, (Flow(tree, nbytes, segment_size=seg),))
    prog = s.program()
    prog.validate()
    for node in tree.nodes[1:]:
        got = sorted(op.chunk for op in prog.ops[node] if op.kind == "recv")
        assert got == list(range(len(prog.chunks)))
    assert Schedule.from_json(s.to_json()) == s


def test_concurrent_schedules_get_one_buffer_each():
    a = Schedule("multicast", "fnf", 8, (Flow(Tree("1", {"1": ("2",)}), 8),))
    b = Schedule("multicast", "fnf", 8, (Flow(Tree("3", {"3": ("1",)}), 8),))
    m = Schedule.concurrent([a, b])
    assert m.collective == "multi_multicast"
    assert m.roots == {0: "1", 1: "3"}
    assert Schedule.from_dict(m.to_dict()) == m
    prog = m.program()
    assert {c.buffer for c in prog.chunks} == {0, 1}
    prog.validate()


def _program(ops, initial, nchunks=1):
    return Program(ops, tuple(Chunk(0, 0, 1) for _ in range(nchunks)), initial)


def test_validate_rejects_send_before_data():
    p = _program({"a": (Op("send", "b", 0),), "b": (Op("recv", "a", 0),)}, {"b": frozenset({0})})
    with pytest.raises(ScheduleError, match="before it holds it"):
        p.validate()


def test_validate_rejects_unmatched_messages():
    p = _program({"a": (Op("send", "b", 0),), "b": ()}, {"a": frozenset({0})})
    with pytest.raises(ScheduleError, match="never receives it"):
        p.validate()
    p = _program({"a": (), "b": (Op("recv", "a", 0),)}, {"a": frozenset({0})})
    with pytest.raises(ScheduleError, match="never sends it"):
        p.validate()


def test_validate_detects_deadlock():
    # a waits for b's data before sending its own; b does the same: a cycle
    ops = {
        "a": (Op("recv", "b", 1), Op("send", "b", 0, (0,))),
        "b": (Op("recv", "a", 0), Op("send", "a", 1, (0,))),
    }
    p = _program(ops, {"a": frozenset({0}), "b": frozenset({1})}, nchunks=2)
    with pytest.raises(ScheduleError, match="deadlocks"):
        p.validate()


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"format": "x"}, "not a hetcoll schedule"),
        ({"format": "hetcoll-schedule", "version": 9}, "unsupported schedule version"),
        ({"format": "hetcoll-schedule", "version": 1, "collective": "bcast"}, "malformed"),
    ],
)
def test_bad_schedule_documents(doc, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule.from_dict(doc)


def _held_before(ops, initial):
    """For each op, the chunks its rank holds when it starts: the initial ones plus what the
    receives among its transitive dependencies brought (the definition, with sets)."""
    have = []
    for op in ops:
        held = set(initial)
        for d in op.deps:
            held |= have[d]
        before = frozenset(held)
        if op.kind == "recv":
            held.add(op.chunk)
        elif op.kind == "recv_reduce":
            held.add(op.chunk)
            if op.result is not None:
                held.add(op.result)
        have.append(frozenset(held))
        yield before


@st.composite
def one_rank_programs(draw):
    """Rank "a"'s random ops with random earlier dependencies; "b" sends what "a" receives
    and receives what "a" sends."""
    n = draw(st.integers(1, 12))
    ops = []
    for i in range(n):
        kind = draw(st.sampled_from(["send", "recv", "recv_reduce"]))
        deps = tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
        chunk = draw(st.integers(0, 3))
        result = draw(st.one_of(st.none(), st.integers(0, 3))) if kind == "recv_reduce" else None
        ops.append(Op(kind, "b", chunk, deps, result))
    initial = frozenset(draw(st.sets(st.integers(0, 3), max_size=2)))
    # b receives with recv_reduce: it may get a chunk twice without breaking a rule
    other = tuple(Op("recv_reduce" if op.kind == "send" else "send", "a", op.chunk) for op in ops)
    return ops, initial, other


@given(one_rank_programs())
def test_holdings_check_follows_the_transitive_definition(case):
    ops, initial, other = case
    prog = Program(
        {"a": tuple(ops), "b": other},
        tuple(Chunk(0, k, 1) for k in range(4)),  # disjoint bytes: no range covers another
        {"a": initial, "b": frozenset(range(4))},
    )
    expected = None
    received = set()
    for i, (op, held) in enumerate(zip(ops, _held_before(ops, initial), strict=True)):
        if op.kind == "send" and op.chunk not in held:
            expected = f"rank 'a' op {i} sends chunk {op.chunk} to 'b' before it holds it"
            break
        if op.kind == "recv":
            if op.chunk in received:
                expected = f"rank 'a' receives chunk {op.chunk} twice"
                break
            received.add(op.chunk)
    if expected is None:
        prog._check_holdings()
    else:
        with pytest.raises(ScheduleError) as info:
            prog._check_holdings()
        assert str(info.value).startswith(expected)


@given(trees(), st.integers(0, 40), st.one_of(st.none(), st.integers(1, 16)))
def test_single_flow_lowering_equals_the_general_one(tree, nbytes, seg):
    """A single flow lowers without sorting; an ``order`` equal to the tree's child order
    takes the general path and must give the same program, rank order included."""
    flow = Flow(tree, nbytes, segment_size=seg)
    fast = Schedule("bcast", "x", nbytes, (flow,)).program()
    order = {p: tuple((0, c) for c in kids) for p, kids in tree.children.items()}
    general = Schedule("bcast", "x", nbytes, (flow,), order=order).program()
    assert list(fast.ops.items()) == list(general.ops.items())
    assert fast.chunks == general.chunks
    assert fast.initial == general.initial


def test_order_entries_are_ordered_sends_and_keep_their_json_lists():
    """``order`` entries read from any of the three JSON shapes are :class:`OrderedSend`
    (flow, child, lag, slot) and are written back as the shortest list that says them, so a
    document written before the entries had names reads and writes the same."""
    tree = Tree("a", {"a": ("b", "c")})
    flows = (Flow(tree, 2, segment_size=1),)
    doc = Schedule("bcast", "x", 2, flows).to_dict()
    doc["order"] = {"a": [[0, "c", 0], [0, "b", 1]]}
    s = Schedule.from_dict(doc)
    assert s.order == {"a": (OrderedSend(0, "c"), OrderedSend(0, "b", lag=1))}
    assert not s.timetable
    assert s.to_dict()["order"] == {"a": [[0, "c"], [0, "b", 1]]}
    timed = {"a": [[0, "b", 0, 1], [0, "c", 2, 0]]}
    t = Schedule.from_dict({**doc, "order": timed})
    assert t.timetable and t.order["a"][1] == OrderedSend(0, "c", lag=2, slot=0)
    assert t.to_dict()["order"] == timed
    assert Schedule.from_json(t.to_json()) == t
    # a planner may give the entries themselves: the same schedule
    assert Schedule("bcast", "x", 2, flows, order=t.order) == t
    with pytest.raises(ScheduleError, match=r"order\['a'\]\[0\]: must be \[flow, child\]"):
        Schedule.from_dict({**doc, "order": {"a": [[0]]}})
