"""multi_tree for a multicast whose trees route member-to-member edges through non-members
(``Flow.relays``): a timetable has no relays, so these trees run in an untimed send order,
simulated against the best single tree; the schedule validates, every member receives
every byte, and no time is below the members' reach bound."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import run
from _worlds import run_world
from hetcoll import plan, simulate
from hetcoll.bounds import lower_bound
from hetcoll.generators import random_graph_platform
from hetcoll.platform import save_platform
from hetcoll.runtime.executor import ByteRanges


def received(s, member: str) -> list[tuple[int, int]]:
    """The byte ranges ``member`` stores for itself (relay copies only passing through
    not counted), merged."""
    prog = s.program()
    ranges = []
    for op in prog.ops.get(member, ()):
        if op.kind != "recv":
            continue
        chunk = prog.chunks[op.chunk if op.result is None else op.result]
        if chunk.copy_of is None:
            ranges.append((chunk.offset, chunk.offset + chunk.nbytes))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def check(p, root, members, nbytes, segment_size, s):
    assert s.collective == "multicast" and s.algorithm == "multi_tree"
    assert set(s.members()) == {root, *members}
    pred = simulate(p, s)  # validates: every op completes, every send's data is held
    members = [m for m in members if m != root]
    for m in members:
        assert received(s, m) == [(0, nbytes)], m
    reach = lower_bound(p, root, nbytes, members).reach
    assert pred.makespan >= reach * (1 - 1e-9)
    assert "finish_bound" not in s.params or not any(f.relays for f in s.flows)
    assert s.transfers >= len(members) * -(-nbytes // segment_size)
    return pred


def test_the_reported_instance_plans():
    # raised "order: a timetable cannot have relayed edges" before: its packing's trees
    # relay member-to-member edges through the odd nodes
    p = random_graph_platform(20, 0.2, seed=5)
    members = [str(i) for i in range(0, 19, 2)]  # (the root listed too)
    nbytes, seg = 128 << 20, 1 << 20
    s = plan(p, "0", method="multi_tree", members=members, nbytes=nbytes, segment_size=seg)
    assert any(f.relays for f in s.flows)
    pred = check(p, "0", members, nbytes, seg, s)
    # never slower than the single trees it is chosen among
    single = plan(
        p, "0", method="throughput_tree", members=members, nbytes=nbytes, segment_size=seg
    )
    assert pred.makespan <= simulate(p, single).makespan
    again = plan(p, "0", method="multi_tree", members=members, nbytes=nbytes, segment_size=seg)
    assert again.to_json() == s.to_json()
    # the packing's eight trees themselves, in the timetable's issue order without slots
    opts = {"slices_per_period": 16}
    s = plan(
        p, "0", method="multi_tree", members=members, nbytes=nbytes, segment_size=seg, options=opts
    )
    assert len(s.flows) == 8 and any(f.relays for f in s.flows) and not s.timetable
    assert "period" not in s.params
    check(p, "0", members, nbytes, seg, s)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(5, 11),
    density=st.sampled_from([0.2, 0.3, 0.45]),
    seed=st.integers(0, 10_000),
    data=st.data(),
    slices=st.integers(1, 40),
    model=st.sampled_from(["one_port", "one_port_uni", "multi_port"]),
)
def test_multicasts_plan_validate_and_respect_the_reach_bound(
    n, density, seed, data, slices, model
):
    p = random_graph_platform(n, density, seed=seed, model=model)
    others = [str(i) for i in range(1, n)]
    members = sorted(
        data.draw(st.lists(st.sampled_from(others), min_size=1, max_size=n - 2, unique=True)),
        key=int,
    )
    seg = 1 << 16
    nbytes = slices * seg - data.draw(st.integers(0, seg - 1))
    for opts in (None, {"slices_per_period": 16}):  # (chosen, and the packing's trees)
        s = plan(
            p,
            "0",
            method="multi_tree",
            members=members,
            nbytes=nbytes,
            segment_size=seg,
            options=opts,
        )
        check(p, "0", members, nbytes, seg, s)


def test_the_command_line_plans_a_relayed_multicast(capsys, tmp_path):
    path = tmp_path / "p.json"
    save_platform(random_graph_platform(20, 0.2, seed=5), path)
    members = ",".join(str(i) for i in range(2, 19, 2))
    code, out, err = run(
        capsys,
        "plan",
        path,
        "--op",
        "multicast",
        "--root",
        "0",
        "--members",
        members,
        "--size",
        "16MiB",
        "--segment-size",
        "1MiB",
        "--algo",
        "multi_tree",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["algorithm"] == "multi_tree"
    assert {"0", *members.split(",")} <= set(doc["arrival"])  # (and the relays)
    assert doc["predicted_time"] >= doc["lower_bound"] * (1 - 1e-9)


def test_the_engine_delivers_every_byte_of_the_untimed_relayed_trees():
    # the packing's eight trees, relayed, run by every rank's executor (in memory)
    p = random_graph_platform(20, 0.2, seed=5)
    members = [str(i) for i in range(0, 19, 2)]
    nbytes, opts = 6000, {"slices_per_period": 16}
    s = plan(p, "0", members, method="multi_tree", nbytes=nbytes, segment_size=100, options=opts)
    assert len(s.flows) == 8 and any(f.relays for f in s.flows)
    program = s.program()
    data = (np.arange(nbytes) * 7 + 3).astype(np.uint8)
    bufs = {v: data.copy() if v == "0" else np.zeros(nbytes, np.uint8) for v in p.ids}
    handlers = {v: ByteRanges(program.chunks, {0: memoryview(bufs[v])}) for v in p.ids}
    run_world(p, program, handlers=handlers, timing="native")
    for v in members:
        assert np.array_equal(bufs[v], data), v
