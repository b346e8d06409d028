"""Schedules of the rooted family: flows that reduce, gather or scatter (alone, or followed
by a flow from the same root), their JSON, their validation and their lowering."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.errors import ScheduleError
from hetcoll.lowering import block_layout
from hetcoll.program import Chunk
from hetcoll.schedule import Flow, Schedule, Tree

TREE = Tree("r", {"r": ("a", "b"), "a": ("c", "d"), "b": ("e",)})
MEMBERS = ("r", "a", "b", "c", "d", "e")


@st.composite
def trees(draw, max_nodes=9):
    n = draw(st.integers(1, max_nodes))
    ids = [f"n{i}" for i in range(n)]
    edges = [(ids[draw(st.integers(0, i - 1))], ids[i]) for i in range(1, n)]
    return Tree.from_edges(ids[0], edges)


def composite(tree, collective, nbytes, seg=None, sizes=None):
    """A schedule of ``collective`` on ``tree`` (both parts on the same tree)."""
    blocks = sizes or dict.fromkeys(tree.nodes, nbytes)
    total = sum(blocks.values())
    vector = total if collective == "reduce_scatter" else nbytes
    up = {
        "reduce": "reduce",
        "gather": "gather",
        "allreduce": "reduce",
        "allgather": "gather",
        "reduce_scatter": "reduce",
    }.get(collective)
    down = {
        "scatter": "scatter",
        "allreduce": "bcast",
        "allgather": "bcast",
        "reduce_scatter": "scatter",
    }.get(collective)
    flows = []
    if up:
        flows.append(
            Flow(
                tree,
                vector if up == "reduce" else total,
                kind=up,
                segment_size=seg if up == "reduce" else None,
            )
        )
    if down:
        size = total if down == "scatter" or collective == "allgather" else vector
        flows.append(Flow(tree, size, kind=down, segment_size=seg if down == "bcast" else None))
    return Schedule(collective, "hand", nbytes, tuple(flows), sizes=sizes)


COLLECTIVES = ("reduce", "gather", "scatter", "allreduce", "allgather", "reduce_scatter")


@settings(max_examples=60, deadline=None)
@given(
    trees(),
    st.sampled_from(COLLECTIVES),
    st.integers(0, 40),
    st.one_of(st.none(), st.integers(1, 16)),
)
def test_rooted_schedules_round_trip_and_lower_to_valid_programs(tree, collective, n, seg):
    sched = composite(tree, collective, n, seg)
    again = Schedule.from_json(sched.to_json())
    assert again == sched
    program = sched.program()
    program.validate()
    # every member takes part, and the root of a reduce ends with every contribution
    assert set(program.ops) == set(tree.nodes)
    if collective in ("reduce", "allreduce", "reduce_scatter"):
        full = {
            program.chunks[op.result].origin
            for op in program.ops[tree.root]
            if op.kind == "recv_reduce"
        }
        if len(tree.nodes) > 1:
            assert any(set(o) == set(tree.nodes) for o in full)
    assert program.reduces == (collective in ("reduce", "allreduce", "reduce_scatter"))


@settings(max_examples=40, deadline=None)
@given(trees(), st.lists(st.integers(0, 9), min_size=9, max_size=9))
def test_a_gather_puts_each_subtree_in_one_range_in_preorder(tree, raw):
    sizes = {v: raw[k] for k, v in enumerate(tree.nodes)}
    order, offset, span = block_layout(tree, sizes)
    assert sorted(order) == sorted(tree.nodes) and order[0] == tree.root
    kids = tree.children
    for v in tree.nodes:
        at = offset[v] + sizes[v]
        for c in kids.get(v, ()):  # the children's ranges follow the node's block, in order
            assert offset[c] == at
            at += span[c]
        assert at == offset[v] + span[v]
    program = composite(tree, "gather", 0, sizes=sizes).program()
    program.validate()
    for v, ops in program.ops.items():  # every message is one subtree's range
        for op in ops:
            c = program.chunks[op.chunk]
            sender = v if op.kind == "send" else op.peer
            assert (c.offset, c.nbytes) == (offset[sender], span[sender])


def test_the_reduce_program_combines_children_in_listed_order():
    program = composite(TREE, "reduce", 8).program()
    ops = program.ops["a"]
    assert [(op.kind, op.peer) for op in ops] == [
        ("recv_reduce", "c"),
        ("recv_reduce", "d"),
        ("send", "r"),
    ]
    assert [program.chunks[op.result].origin for op in ops[:2]] == [("a", "c"), ("a", "c", "d")]
    assert ops[2].deps == (0, 1) and ops[0].deps == ops[1].deps == ()  # posted at once
    root = program.ops["r"]
    assert program.chunks[root[-1].result].origin == ("r", "a", "c", "d", "b", "e")
    assert program.initial["c"] == frozenset({program.chunks.index(Chunk(0, 0, 8, ("c",)))})


def test_an_allreduce_broadcasts_the_reduced_vector_segment_by_segment():
    program = composite(TREE, "allreduce", 10, seg=4).program()
    root = program.ops["r"]
    sends = [(i, op) for i, op in enumerate(root) if op.kind == "send"]
    assert len(sends) == 6  # 3 segments to 2 children
    for i, op in sends:  # each waits for the final combine of its own segment only
        c = program.chunks[op.chunk]
        (dep,) = root[i].deps
        made = program.chunks[root[dep].result]
        assert (made.offset, made.nbytes) == (c.offset, c.nbytes)
        assert c.origin == made.origin == ("r", "a", "c", "d", "b", "e")


def test_a_scatter_child_range_is_held_by_coverage():
    program = composite(TREE, "scatter", 3).program()
    a = program.ops["a"]
    assert [op.kind for op in a] == ["recv", "send", "send"]
    held = program.chunks[a[0].chunk]
    for op in a[1:]:
        c = program.chunks[op.chunk]
        assert held.offset <= c.offset and c.offset + c.nbytes <= held.offset + held.nbytes
    program.validate()


@pytest.mark.parametrize(
    ("flows", "collective", "message"),
    [
        ((Flow(TREE, 4, kind="reduce"),), "bcast", "moves data down"),
        ((Flow(TREE, 4),), "reduce", "flows of kind 'reduce', got 'bcast'"),
        ((Flow(TREE, 4), Flow(TREE, 4, kind="reduce")), "allreduce", "come before"),
        ((Flow(TREE, 4, kind="reduce"),), "allreduce", "needs a flow of kind 'bcast'"),
        ((Flow(TREE, 5, kind="gather"),), "gather", "one gather flow over the 24 bytes"),
        ((Flow(TREE, 3, kind="reduce"),), "reduce", "cover 3 bytes, of 4"),
        (
            (Flow(TREE, 4, kind="reduce"), Flow(Tree("a", {"a": MEMBERS[:1] + MEMBERS[2:]}), 4)),
            "allreduce",
            # flows of several roots: the per-root form, whose bcast roots own their bytes
            "byte 0 is reduced to 'r', but this bcast flow sends it from 'a'",
        ),
    ],
)
def test_malformed_rooted_schedules_are_refused(flows, collective, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule(collective, "x", 4, flows)


def test_flow_and_size_fields_are_checked():
    with pytest.raises(ScheduleError, match=r"flow\.kind: unknown 'up'"):
        Flow(TREE, 4, kind="up")
    with pytest.raises(ScheduleError, match="no segment_size"):
        Flow(TREE, 4, kind="gather", segment_size=2)
    with pytest.raises(ScheduleError, match="sizes: only a collective of blocks"):
        Schedule("reduce", "x", 4, (Flow(TREE, 4, kind="reduce"),), sizes={"r": 4})
    with pytest.raises(ScheduleError, match="'e' is missing"):
        Schedule("gather", "x", 4, (Flow(TREE, 5, kind="gather"),), sizes=dict.fromkeys("rabcd", 1))
    with pytest.raises(ScheduleError, match=r"sizes\['r'\]"):
        Schedule("gather", "x", 4, (Flow(TREE, 5, kind="gather"),), sizes={"r": -1})
    doc = composite(TREE, "gather", 1).to_dict()
    doc["flows"][0]["kind"] = "sideways"
    with pytest.raises(ScheduleError, match=r"flows\[0\]\.kind: unknown 'sideways'"):
        Schedule.from_dict(doc)


def test_v_sizes_round_trip_and_size_the_messages():
    sizes = {"r": 1, "a": 2, "b": 3, "c": 4, "d": 5, "e": 6}
    sched = composite(TREE, "allgather", 6, sizes=sizes)
    assert Schedule.from_json(sched.to_json()).sizes == sizes
    program = sched.program()
    sent = {
        (v, op.peer): program.chunks[op.chunk].nbytes
        for v, ops in program.ops.items()
        for op in ops
        if op.kind == "send"
    }
    assert sent[("a", "r")] == 2 + 4 + 5 and sent[("b", "r")] == 3 + 6
    assert sent[("r", "a")] == sum(sizes.values())  # the broadcast of every block


def test_relayed_up_edges_go_through_their_relays_backwards():
    """A relay path is written parent first; a reduce's data take it from the child."""
    tree = Tree("r", {"r": ("a",)})
    flow = Flow(tree, 4, kind="reduce", relays=(("r", "x", "a"),))
    sched = Schedule("reduce", "x", 4, (flow,))
    program = sched.program()
    program.validate()
    assert [(op.kind, op.peer) for op in program.ops["a"]] == [("send", "x")]
    assert [(op.kind, op.peer) for op in program.ops["x"]] == [("recv", "a"), ("send", "r")]
    (last,) = program.ops["r"]
    assert last.kind == "recv_reduce" and program.chunks[last.chunk].copy_of is not None
