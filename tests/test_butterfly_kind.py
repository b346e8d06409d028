"""``butterfly_pipelined`` under windows per edge and kind of flow (``cut="kind"``,
``chain="kind"``, :func:`hetcoll.perroot.per_root_program`): an edge's reduce-scatter and
allgather sends in windows of their own, twice as deep as their bytes', a reduce send
paced by its rank's combines two segments back — its lowering, the data every rank ends
with, and its time on the star where every NIC binds ``T*``."""

from __future__ import annotations

import pytest

from hetcoll import PlannerError, Schedule, ScheduleError, plan, simulate
from hetcoll.generators.stars import star_platform
from hetcoll.patterns import Flow, Tree
from test_butterfly_phased import t_star
from test_recursive import check_result, equal

KW = {"method": "butterfly_pipelined", "collective": "allreduce"}


def lanes(prog, chunks, node: str) -> dict[tuple[str, bool], set[int]]:
    """Per ``(peer, carries a combination of every member)`` of ``node``'s sends: how many
    sends back in that lane each send waits for (its window)."""
    ops = prog.ops[node]
    everyone = max(len(c.origin) for c in chunks)
    out: dict[tuple[str, bool], set[int]] = {}
    sends = [i for i, op in enumerate(ops) if op.kind == "send"]
    for lane in {(ops[i].peer, len(chunks[ops[i].chunk].origin) == everyone) for i in sends}:
        mine = [
            i for i in sends if (ops[i].peer, len(chunks[ops[i].chunk].origin) == everyone) == lane
        ]
        for j, i in enumerate(mine):
            back = [j - k for k, m in enumerate(mine[:j]) if m in ops[i].deps]
            if back:
                out.setdefault(lane, set()).add(min(back))
    return out


def test_windows_per_edge_and_kind_and_sends_paced_by_combines():
    """Four NICs of 25/25/10/10 Gbit/s, 64 KiB in 4 KiB segments: the fast nodes own the
    two shares; every edge's reduce sends and broadcast sends keep two each in flight
    (:data:`KIND_DEPTH` times a window of one: their bytes are equal), and an owner's
    reduce send waits for its combines of the segment two before it."""
    p = star_platform(4, ("25Gbps", "25Gbps", "10Gbps", "10Gbps"), "5us")
    s = plan(p, None, **KW, nbytes=64 << 10, segment_size=4096, options={"cut": "kind"})
    assert (s.chain, s.stagger) == ("kind", 2048)
    assert [f.nbytes for f in s.flows if f.kind == "reduce"] == [32 << 10, 32 << 10, 0, 0]
    prog = s.program()
    for v in p.ids:
        assert all(w == {2} for w in lanes(prog, prog.chunks, v).values())
    ops = prog.ops["0"]
    combines = [i for i, op in enumerate(ops) if op.kind == "recv_reduce"]
    # one combine per segment from each of the three others, in segment order
    segments = [combines[k : k + 3] for k in range(0, len(combines), 3)]
    paced = 0
    for i, op in enumerate(ops):
        if op.kind != "send" or op.peer != "1" or prog.chunks[op.chunk].origin != ("0",):
            continue  # not one of 0's reduce sends to 1
        done = [g for g in segments if g[-1] < i]
        if len(done) >= 2:
            assert done[-2][-1] in op.deps
            paced += 1
    assert paced > 5
    assert Schedule.from_json(s.to_json()) == s


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_every_rank_ends_with_the_sum(n):
    for p in (star_platform(n), star_platform(n, ("100Gbps", "25Gbps", "10Gbps"))):
        for nbytes, seg in ((3, None), (1000 * n + 1, None), (1000 * n + 8, 64), (0, 8)):
            s = plan(p, None, **KW, nbytes=nbytes, segment_size=seg, options={"cut": "kind"})
            assert s.chain == "kind"
            s.validate(p)
            check_result(s)


def test_within_one_percent_of_t_star_where_every_nic_binds():
    """Eight NICs, four of 25 and four of 10 Gbit/s, at 64 MiB: ``M / b_min = 2 (N - 1) M
    / sum b`` (every NIC busy both ways the whole time at ``T*``).  The even cut's leads
    stop its halving at 256 KiB segments (1.028 ``T*``), the phased one's take 1.05; the
    default search keeps the kind cut's 64 KiB segments, within 1 % of ``T*``."""
    p = star_platform(8, ("25Gbps", "10Gbps"), "5us")
    m = 64 << 20
    s = plan(p, None, **KW, nbytes=m, options={"align": 8})
    assert (s.chain, s.params["segment_size"]) == ("kind", 64 << 10)
    assert s.params["estimate"] == simulate(p, s).makespan < 1.01 * t_star(p, m)


def test_refusals():
    p = equal(3, 1e-6, 1e-9)  # ranks that send one at a time
    with pytest.raises(PlannerError, match="send concurrently"):
        plan(p, None, **KW, nbytes=64, options={"cut": "kind"})


def test_no_timetable_under_the_kind_chain():
    """Its pacing waits on combines of earlier rounds, which cannot wait on it; a
    timetable's slots order the ops otherwise, so a schedule with one is refused."""
    flows = (Flow(Tree("a", {"a": ("b",)}), 1, 0), Flow(Tree("b", {"b": ("a",)}), 1, 1))
    order = {"a": [[0, "b", 0, 0]], "b": [[1, "a", 0, 1]]}
    Schedule("allgather", "x", 1, flows, order=order, chain="edge").program()
    with pytest.raises(ScheduleError, match='chain "kind": flows in rounds'):
        Schedule("allgather", "x", 1, flows, order=order, chain="kind")
