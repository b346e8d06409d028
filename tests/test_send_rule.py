"""Every engine against the one table of the send rule (``tests/_send_rule.py``).

Each test is one engine on one case, named ``[engine-case]``: a rule change is a change of
the table, and an engine that disagrees with it fails by name.  The engines:

- ``event loop``: the simulator's :class:`~hetcoll.simulator.events.Simulation`;
- ``one-tree shortcut``: :func:`~hetcoll.simulator.tree.simulate_tree` (cases that are one
  tree; it must take them);
- ``timetable shortcut``: :func:`~hetcoll.simulator.timetable.simulate_timetable` (cases
  that are a timetable; it must take them);
- ``executor``: every rank's :class:`~hetcoll.runtime.executor.Executor` under emulation,
  in memory on a virtual clock;
- ``fast path`` and ``segment path``: every rank's native loop
  (:class:`~hetcoll.runtime.fast.FastRun` for chunks up to a packed message,
  :class:`~hetcoll.runtime.segments.SegmentRun` above) on a virtual MPI that times each
  message by the model.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from _send_rule import CASES, Case
from _worlds import run_native, run_world
from hetcoll.program import Program
from hetcoll.runtime.fast import FastRun
from hetcoll.runtime.segments import SegmentRun
from hetcoll.runtime.transport import CONTROL_TAGS, PACK, Bare
from hetcoll.simulator import simulate_program
from hetcoll.simulator.predict import prediction
from hetcoll.simulator.timetable import simulate_timetable
from hetcoll.simulator.tree import simulate_tree


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _table(program: Program, done, starts) -> dict[str, list]:
    """Per rank and op, the table's form: a send's (start, end), a receive's end (ns).
    ``starts[(sender, receiver, chunk)]`` lists the transfers' starts in program order."""
    starts = {k: list(v) for k, v in starts.items()}
    out = {}
    for rank, ops in program.ops.items():
        row = []
        for i, op in enumerate(ops):
            if op.kind == "send":
                row.append((starts[(rank, op.peer, op.chunk)].pop(0), done[rank][i]))
            else:
                row.append(done[rank][i])
        out[rank] = row
    return out


def _starts(transfers) -> dict[tuple, list[int]]:
    got: dict[tuple, list[int]] = {}
    for t in transfers:
        got.setdefault((t.sender, t.receiver, t.chunk), []).append(_ns(t.start))
    return got


def event_loop(case: Case) -> dict[str, list]:
    bound = case.platform.model.bind(case.platform)
    transfers, done = simulate_program(bound, case.program)
    done_ns = {r: [_ns(x) for x in d] for r, d in done.items()}
    return _table(case.program, done_ns, _starts(transfers))


def one_tree_shortcut(case: Case) -> dict[str, list]:
    s, p = case.schedule, case.platform
    bound = p.model.bind(p)
    assert simulate_tree(bound, s, s.nbytes) is not None, "the shortcut does not take it"
    return _shortcut(case)


def timetable_shortcut(case: Case) -> dict[str, list]:
    s, p = case.schedule, case.platform
    bound = p.model.bind(p)
    assert simulate_timetable(bound, s, s.nbytes) is not None, "the shortcut does not take it"
    return _shortcut(case)


def _shortcut(case: Case) -> dict[str, list]:
    pred = prediction(case.platform, case.schedule, None, shortcut=True)
    starts = _starts(pred.transfers)
    done = {}  # a send ends when its port is free, a receive at its arrival
    ends = {(t.sender, t.receiver, t.chunk): t for t in pred.transfers}
    for rank, ops in case.program.ops.items():
        row = []
        for op in ops:
            if op.kind == "send":
                row.append(_ns(ends[(rank, op.peer, op.chunk)].sender_free))
            else:
                row.append(_ns(ends[(op.peer, rank, op.chunk)].arrival))
        done[rank] = row
    return _table(case.program, done, starts)


def executor(case: Case) -> dict[str, list]:
    traces = run_world(case.platform, case.program)
    starts: dict[tuple, list[int]] = {}
    for rank, ops in case.program.ops.items():
        for i, op in enumerate(ops):
            if op.kind == "send":
                starts.setdefault((rank, op.peer, op.chunk), []).append(traces[rank].started[i])
    return _table(case.program, {r: t.done for r, t in traces.items()}, starts)


def _native(case: Case, program: Program, loop: type) -> dict[str, list]:
    done, transfers = run_native(case.platform, program, loop)
    ids = case.platform.ids
    starts: dict[tuple, list[int]] = {}
    for src, dst, tag, start, _ in transfers:
        # a bare chunk's tag: base + seq % epochs + epochs * chunk; a packed one's: data_tag
        chunk = (tag - Bare.base) // Bare.epochs if tag >= Bare.base else tag - CONTROL_TAGS
        starts.setdefault((ids[src], ids[dst], chunk), []).append(start)
    return _table(program, done, starts)


def fast_path(case: Case) -> dict[str, list]:
    return _native(case, case.program, FastRun)


def segment_path(case: Case) -> dict[str, list]:
    program = case.program
    if all(c.nbytes <= PACK for c in program.chunks):  # size-free: make every chunk large
        program = replace(
            program, chunks=tuple(replace(c, nbytes=PACK + 1) for c in program.chunks)
        )
    return _native(case, program, SegmentRun)


def _engines(case: Case):
    yield "event loop", event_loop
    s = case.schedule
    if s is not None and len(s.flows) == 1 and not s.order and not s.flows[0].relays:
        yield "one-tree shortcut", one_tree_shortcut
    if s is not None and s.timetable:
        yield "timetable shortcut", timetable_shortcut
    yield "executor", executor
    if all(c.nbytes <= PACK for c in case.program.chunks):
        yield "fast path", fast_path
    if case.size_free or any(c.nbytes > PACK for c in case.program.chunks):
        yield "segment path", segment_path


_NATIVE = ("fast path", "segment path")
RUNS = [
    pytest.param(case, engine, run, id=f"{engine}-{case.name}")
    for case in CASES
    for engine, run in _engines(case)
]


@pytest.mark.parametrize(("case", "engine", "run"), RUNS)
def test_the_engine_reproduces_the_table(case, engine, run):
    expected = case.native if engine in _NATIVE and case.native is not None else case.times
    assert run(case) == expected


def test_the_table_covers_the_rule_and_every_engine_runs():
    """Every case of the rule has a row, and every engine runs on several of them."""
    engines = [engine for _, engine, _ in (p.values for p in RUNS)]
    for engine in ("event loop", "one-tree shortcut", "executor", "fast path", "segment path"):
        assert engines.count(engine) >= 3, engine
    assert "timetable shortcut" in engines
    names = " ".join(case.name for case in CASES)
    for words in ("program order", "blocked first send", "relay", "clear-to-send", "slots"):
        assert words in names, words
    assert all(case.why_native for case in CASES if case.native is not None)
