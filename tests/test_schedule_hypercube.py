"""The hypercube form of Schedule: validation, JSON, lowering, and a toy data handler that
executes the lowered program the way the runtime will."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.errors import ScheduleError
from hetcoll.generators import figueira_platform
from hetcoll.planners import plan_allgather, plan_allreduce, plan_barrier
from hetcoll.program import Op, Program
from hetcoll.schedule import Flow, Hypercube, Schedule, Tree
from hetcoll.simulator import simulate


def cube_schedule(collective="allreduce", nbytes=8, combine=None, folds=()):
    combine = combine or {"allgather": "concat", "barrier": "none"}.get(collective, "sum")
    return Schedule(
        collective,
        "test",
        nbytes,
        hypercube=Hypercube(("A", "B", "C", "D"), folds, combine),
    )


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"positions": ("A", "B", "C")}, "power of two"),
        ({"positions": ()}, "power of two"),
        ({"positions": ("A", "A")}, "appears twice"),
        ({"positions": ("A", "B"), "folds": (("A", "B"),)}, "already in the cube"),
        ({"positions": ("A", "B"), "folds": (("C", "D"),)}, "must be a node of the cube"),
        ({"positions": ("A", "B"), "folds": (("C", "A"), ("D", "A"))}, "already has an extra"),
        ({"positions": ("A", "B"), "combine": "avg"}, "unknown operator 'avg'"),
        ({"positions": "AB"}, "must be a list, not a string"),
        ({"positions": ("A", "B"), "folds": (("C",),)}, r"folds\[0\]: must be an \[extra"),
    ],
)
def test_bad_hypercube(kwargs, message):
    with pytest.raises(ScheduleError, match=message):
        Hypercube(**kwargs)


def test_bad_hypercube_schedule():
    cube = Hypercube(("A", "B"))
    flow = Flow(Tree.from_edges("A", [("A", "B")]), 0)
    with pytest.raises(ScheduleError, match="has no flows"):
        Schedule("allreduce", "x", 0, (flow,), hypercube=cube)
    with pytest.raises(ScheduleError, match="not 'bcast'"):
        Schedule("bcast", "x", 0, hypercube=cube)
    with pytest.raises(ScheduleError, match="combines with concat"):
        Schedule("allgather", "x", 0, hypercube=cube)
    with pytest.raises(ScheduleError, match="moves no data"):
        Schedule("barrier", "x", 4, hypercube=Hypercube(("A", "B"), combine="none"))
    with pytest.raises(ScheduleError, match="at least one flow"):
        Schedule("bcast", "x", 0)
    with pytest.raises(ScheduleError, match="has no root"):
        _ = cube_schedule().root
    with pytest.raises(ScheduleError, match="has no tree"):
        _ = cube_schedule().tree


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "barrier"])
def test_json_round_trip(collective):
    p = figueira_platform(7, 20, seed=9)
    schedule = {
        "allreduce": lambda: plan_allreduce(p, method="eff_cube_ls", nbytes=24, op="min"),
        "allgather": lambda: plan_allgather(p, method="tsts_cube", nbytes=5),
        "barrier": lambda: plan_barrier(p, method="dim2_cube"),
    }[collective]()
    doc = schedule.to_dict()
    assert doc["flows"] == []
    assert doc["hypercube"]["dims"] == 2
    assert len(doc["hypercube"]["folds"]) == 3
    back = Schedule.from_json(schedule.to_json())
    assert back == schedule
    assert back.program() == schedule.program()
    doc["hypercube"]["dims"] = 3
    with pytest.raises(ScheduleError, match=r"hypercube\.dims: is 3"):
        Schedule.from_dict(doc)


# -- lowering ----------------------------------------------------------------------------------


def test_program_layout():
    s = cube_schedule(folds=(("E", "A"),))
    prog = s.program()
    chunk = {c.origin: k for k, c in enumerate(prog.chunks)}
    ae, ae_b, cd, all_ = (
        chunk[("A", "E")],
        chunk[("A", "E", "B")],
        chunk[("C", "D")],
        chunk[("A", "E", "B", "C", "D")],
    )
    assert prog.ops["A"] == (
        Op("recv_reduce", "E", chunk[("E",)], (), ae),  # fold in
        Op("send", "B", ae, (0,)),  # step 0
        Op("recv_reduce", "B", chunk[("B",)], (0,), ae_b),
        Op("send", "C", ae_b, (2,)),  # step 1
        Op("recv_reduce", "C", cd, (2,), all_),
        Op("send", "E", all_, (4,)),  # fold out
    )
    assert prog.ops["D"] == (
        Op("send", "C", chunk[("D",)], ()),
        Op("recv_reduce", "C", chunk[("C",)], (), cd),
        Op("send", "B", cd, (1,)),
        Op("recv_reduce", "B", ae_b, (1,), all_),
    )
    assert prog.ops["E"] == (Op("send", "A", chunk[("E",)]), Op("recv", "A", all_))
    assert prog.initial["E"] == frozenset({chunk[("E",)]})
    prog.validate()


def test_chunk_sizes():
    for collective, nbytes, sizes in [
        ("allreduce", 8, {1: 8, 2: 8, 4: 8}),
        ("allgather", 8, {1: 8, 2: 16, 4: 32}),
        ("barrier", 0, {1: 0, 2: 0, 4: 0}),
    ]:
        prog = cube_schedule(collective, nbytes).program()
        for c in prog.chunks:
            assert c.nbytes == sizes[len(c.origin)], (collective, c)
            assert c.buffer == c.offset == 0


def test_validate_catches_a_send_before_the_state_is_held():
    prog = cube_schedule().program()
    ops = dict(prog.ops)
    a = list(ops["A"])
    a[2] = Op(a[2].kind, a[2].peer, a[2].chunk, ())  # step 1 send without its dependency
    ops["A"] = tuple(a)
    with pytest.raises(ScheduleError, match="before it holds it"):
        Program(ops, prog.chunks, prog.initial).validate()
    ops = dict(prog.ops)
    ops["A"] = (Op("send", "B", 0, (), result=1), *ops["A"][1:])
    with pytest.raises(ScheduleError, match="result must be a chunk of a recv_reduce"):
        Program(ops, prog.chunks, prog.initial).validate()


def test_one_node_and_tree_schedules_unchanged():
    s = Schedule("barrier", "x", 0, hypercube=Hypercube(("A",), combine="none"))
    assert s.program().ops == {"A": ()}
    tree = Schedule("bcast", "x", 4, (Flow(Tree.from_edges("A", [("A", "B")]), 4),))
    prog = tree.program()
    assert prog.ops["B"] == (Op("recv", "A", 0),)
    assert prog.ops["A"] == (Op("send", "B", 0),)
    assert prog.chunks[0].origin == ()


# -- a toy data handler: what a runtime does with the chunks --------------------------------------


def execute(program: Program, contribution, combine):
    """Run ``program`` sequentially, like the runtime: a send ships the named chunk's data; a
    ``recv_reduce`` combines the rank's latest state with the message into ``result``.
    Returns each rank's final state (its latest result or received chunk)."""
    held = {
        rank: {c: contribution(program.chunks[c].origin[0]) for c in chunks}
        for rank, chunks in program.initial.items()
    }
    latest = {rank: next(iter(chunks)) for rank, chunks in program.initial.items()}
    done = {rank: [False] * len(ops) for rank, ops in program.ops.items()}
    mail: dict[tuple[str, str, int], deque] = {}
    progress = True
    while progress:
        progress = False
        for rank, ops in program.ops.items():
            for i, op in enumerate(ops):
                if done[rank][i] or not all(done[rank][d] for d in op.deps):
                    continue
                if op.kind == "send":
                    mail.setdefault((rank, op.peer, op.chunk), deque()).append(held[rank][op.chunk])
                else:
                    box = mail.get((op.peer, rank, op.chunk))
                    if not box:
                        continue
                    data = box.popleft()
                    if combine is concat:
                        assert len(data) == len(program.chunks[op.chunk].origin)
                    if op.kind == "recv":
                        held[rank][op.chunk] = data
                        latest[rank] = op.chunk
                    else:
                        mine = held[rank][latest[rank]]
                        want = program.chunks[op.result].origin
                        have = program.chunks[latest[rank]].origin
                        got = program.chunks[op.chunk].origin
                        assert sorted(want) == sorted(have + got)
                        held[rank][op.result] = combine(mine, data, have, got, want)
                        latest[rank] = op.result
                done[rank][i] = progress = True
    assert all(all(flags) for flags in done.values()), "deadlock"
    return {rank: (program.chunks[latest[rank]].origin, held[rank][latest[rank]]) for rank in held}


def add(mine, data, have, got, want):
    return mine + data


def concat(mine, data, have, got, want):
    blocks = dict(zip(have, mine, strict=True)) | dict(zip(got, data, strict=True))
    return tuple(blocks[v] for v in want)


@settings(max_examples=40)
@given(
    n=st.integers(1, 13),
    seed=st.integers(0, 1000),
    method=st.sampled_from(["blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls"]),
)
def test_lowered_program_computes_allreduce_and_allgather(n, seed, method):
    p = figueira_platform(n, 20, seed=seed)
    value = {v: int(v) ** 2 + 1 for v in p.ids}
    reduced = execute(plan_allreduce(p, method=method).program(), value.get, add)
    assert {state for _, state in reduced.values()} == {sum(value.values())}
    gathered = execute(plan_allgather(p, method=method).program(), lambda v: (value[v],), concat)
    for origin, blocks in gathered.values():
        assert sorted(origin) == sorted(p.ids)
        assert blocks == tuple(value[v] for v in origin)


@pytest.mark.parametrize("n", [2, 3, 8, 11])
def test_repeated_program_is_a_loop_of_calls(n):
    from hetcoll.simulator import simulate_program

    p = figueira_platform(n, 20, seed=n)
    sched = plan_barrier(p, method="eff_cube")
    one = sched.program()
    assert one.repeated(1) == one
    loop = one.repeated(5)
    loop.validate()
    assert len(loop.chunks) == 5 * len(one.chunks)
    _, done = simulate_program(p.model.bind(p), loop)
    total = max(max(t) for t in done.values())
    single = simulate(p, sched).makespan
    # the runs overlap across ranks (never within one), so the loop is no slower than
    # 5 separate calls and no faster than one
    assert single <= total <= 5 * single + 1e-12
    if n == 2:  # one exchange per call: nothing can overlap
        assert total == pytest.approx(5 * single)
    with pytest.raises(ScheduleError, match="times: must be an integer >= 1"):
        one.repeated(0)
