"""``forest`` under a model whose ranks send concurrently (``nic``, a star of NICs): each
rank keeps a window of sends in flight per edge (``chain="edge"``), in proportion to the
edge's bytes, so that max-min sharing gives every edge its packing's rate and the
simulated time reaches the certified optimum (``hetcoll.perroot.windows``)."""

from __future__ import annotations

import pytest

from hetcoll import plan, simulate
from hetcoll.choice import choose
from hetcoll.errors import ScheduleError
from hetcoll.generators import capacitated_graph_platform, star_platform
from hetcoll.mpich import native, predict
from hetcoll.perroot import WINDOW, windows
from hetcoll.schedule import Schedule

MIB = 2**20


def star(n: int = 4):
    return star_platform(n, ("25Gbps", "10Gbps"), "5us")


def rates(p) -> list[float]:
    return [node.bandwidth for node in p.nodes]


def forest(p, collective: str, nbytes: int) -> Schedule:
    align = {"align": 8} if collective == "allreduce" else None
    return plan(p, None, method="forest", collective=collective, nbytes=nbytes, options=align)


def test_allgather_on_a_star_within_one_percent_of_the_cut_bound():
    p = star()
    m = 64 * MIB  # the result: 16 MiB per rank
    s = forest(p, "allgather", m // 4)
    # the cut of the slow node alone: it receives every other block through its NIC
    cut = 3 / 4 * m / min(rates(p))
    assert s.params["packing_bound"] == pytest.approx(cut, rel=1e-6)
    assert s.chain == "edge"
    assert cut <= simulate(p, s).makespan <= 1.01 * cut  # 1.0002 (one send per rank: 2.44)


def test_reduce_scatter_on_a_star_near_the_cut_bound():
    p = star()
    m = 64 * MIB
    s = forest(p, "reduce_scatter", m // 4)
    cut = 3 / 4 * m / min(rates(p))
    # 1.0002: every block reduced whole over the star into its owner (forestdepth.py; 1.014
    # over the LP's first vertex, a window's partial results arriving a batch per hop)
    assert cut <= simulate(p, s).makespan <= 1.025 * cut


def test_allreduce_on_a_star_near_t_star():
    p = star()
    m = 64 * MIB
    b = rates(p)
    t_star = max(m / min(b), 2 * (len(b) - 1) * m / sum(b))
    s = forest(p, "allreduce", m)
    assert s.params["packing_bound"] * m == pytest.approx(t_star, rel=1e-6)
    # 1.021 T* (1.028 with every window's sends started together; one send per rank: 2.53
    # T*, the ring 1.50): the pipeline fills and drains through the windows
    assert t_star <= simulate(p, s).makespan <= 1.025 * t_star


def test_allreduce_on_a_three_speed_star_within_one_percent_of_t_star():
    p = star_platform(4, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    m = 64 * MIB
    b = rates(p)
    t_star = m / min(b)  # the slow NIC sends and receives the whole vector
    s = forest(p, "allreduce", m)
    # 1.0041 T*: a chain through the slow leaf, two sends in flight on its edge half a
    # segment apart, each one's lead under the other's bytes (1.044 with one send there)
    assert t_star <= simulate(p, s).makespan <= 1.01 * t_star
    assert s.stagger == s.params["segment_size"] // 2


def test_the_first_segment_of_every_flow_is_half_a_segment():
    p = star()
    s = forest(p, "allreduce", 4 * MIB)
    seg = s.params["segment_size"]
    assert s.stagger == seg // 2 and seg // 2 % 8 == 0  # whole elements
    program = s.program()
    program.validate()
    ends = {f.offset + f.nbytes for f in s.flows}
    for f in s.flows:
        assert f.segment_size == seg
        cuts = {c.offset for c in program.chunks if f.offset <= c.offset < f.offset + f.nbytes}
        # the flow's cuts: its start, half a segment in, then a segment apart
        want = {f.offset, *range(f.offset + seg // 2, f.offset + f.nbytes, seg)}
        assert cuts - ends == want - ends
    # the first two sends of every edge start together and end half a segment apart
    sent = {}
    for rank, ops in program.ops.items():
        for op in ops:
            if op.kind == "send":
                sent.setdefault((rank, op.peer), []).append(program.chunks[op.chunk].nbytes)
    assert all(sizes[0] == seg // 2 for sizes in sent.values())


def test_the_lowered_program_chains_sends_per_edge_in_windows():
    p = star()
    # (an allgather's equal blocks go over stars of one hop, whole: one window for all)
    s = forest(p, "allreduce", 4 * MIB)
    program = s.program()
    sent: dict[tuple[str, str], int] = {}
    for rank, ops in program.ops.items():
        for op in ops:
            if op.kind == "send":
                key = (rank, op.peer)
                sent[key] = sent.get(key, 0) + program.chunks[op.chunk].nbytes
    window = windows(sent)
    assert max(window.values()) <= WINDOW
    assert len({w for w in window.values()}) > 1  # the edges' windows differ
    assert max(len({p for r, p in sent if r == rank}) for rank in program.ops) > 1
    for rank, ops in program.ops.items():
        for peer in {op.peer for op in ops if op.kind == "send"}:
            mine = [i for i, op in enumerate(ops) if op.kind == "send" and op.peer == peer]
            w = window[(rank, peer)]
            for j, i in enumerate(mine):
                sends = {d for d in ops[i].deps if ops[d].kind == "send"}
                # the send w places earlier on this edge, and no send to another peer
                assert sends == ({mine[j - w]} if j >= w else set())


def test_windows_are_proportional_to_bytes():
    assert windows({("a", "b"): 300, ("a", "c"): 100}) == {("a", "b"): 3, ("a", "c"): 1}
    assert windows({("a", "b"): 5, ("b", "a"): 5}) == {("a", "b"): 1, ("b", "a"): 1}
    got = windows({("a", "b"): 1000, ("a", "c"): 1})
    assert got == {("a", "b"): WINDOW, ("a", "c"): 1}
    assert windows({}) == {}


def test_other_models_keep_one_send_per_rank():
    p = capacitated_graph_platform(6, seed=1)
    s = forest(p, "allgather", MIB)
    assert s.chain == "rank" and s.order is not None


def test_chain_round_trips_and_is_checked():
    s = forest(star(), "allreduce", MIB)
    back = Schedule.from_json(s.to_json())
    assert back == s and back.chain == "edge"
    plain = {k: v for k, v in s.to_dict().items() if k != "stagger"}
    assert "chain" not in Schedule.from_dict({**plain, "chain": "rank"}).to_dict()
    with pytest.raises(ScheduleError, match="chain: one of rank, edge"):
        Schedule.from_dict({**s.to_dict(), "chain": "link"})
    assert back.stagger == s.stagger > 0 and s.to_dict()["stagger"] == s.stagger
    with pytest.raises(ScheduleError, match='stagger: only under chain "edge"'):
        Schedule.from_dict({**s.to_dict(), "chain": "rank"})
    with pytest.raises(ScheduleError, match="stagger: must be a finite number >= 0, got -1"):
        Schedule.from_dict({**s.to_dict(), "stagger": -1})


def test_auto_runs_a_per_root_schedule_for_a_large_allreduce_on_a_star():
    """The butterfly's phased cut, 1.012 T* (the packing's 1.020 T*), against MPICH's
    1.50 T* (before the per-root schedules: 2.53 T*)."""
    p = star()
    nbytes = 64 * MIB
    got = choose(p, "allreduce", nbytes, list(p.ids), count=nbytes // 8, op="sum")
    assert got.algorithm == "butterfly_pipelined"
    assert got.predicted < 0.7 * got.mpi


@pytest.mark.parametrize("nbytes", [8, 64 * 1024, MIB, 16 * MIB])
@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_auto_is_never_slower_than_the_ring_on_a_star(collective, nbytes):
    p = star()
    count = nbytes // 8 if collective == "allreduce" else None
    got = choose(p, collective, nbytes, list(p.ids), count=count, op="sum", margin=0.0)
    chosen = got.mpi if got.passes else got.predicted
    ring = native(collective, list(p.ids), nbytes, count=count, algorithm="ring")
    assert chosen <= predict(p, ring.program) * (1 + 1e-9)


def test_allreduce_on_an_eight_node_three_speed_star_near_t_star():
    """The segment sizes tried by simulation go down to half what the simulator takes
    (``forestplan.SIMULATED``): here 64 KiB over the chain of 14 hops the packing takes
    through the slow root (a quarter stopped at 128 KiB: 1.021 T*)."""
    p = star_platform(8, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    m = 64 * MIB
    t_star = m / min(rates(p))  # the slow NICs bind
    s = forest(p, "allreduce", m)
    assert s.params["segment_size"] == 64 * 1024
    assert t_star <= simulate(p, s).makespan <= 1.015 * t_star  # 1.0118
