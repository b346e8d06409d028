"""MPICH's logarithmic-step baselines (:mod:`hetcoll.planners.recursive`): Bruck's
allgather, the reduce-scatter by recursive halving, Rabenseifner's allreduce — the data
every rank ends with (each member's contribution exactly once), their closed-form times
on homogeneous platforms, one message per step, and refusals."""

from __future__ import annotations

import itertools
import math

import pytest

from hetcoll import PlannerError, Platform, plan, simulate
from hetcoll.platform import Node
from test_rings import complete

OPS = {"bruck": "allgather", "halving": "reduce_scatter", "rabenseifner": "allreduce"}


def equal(n: int, alpha: float, beta: float, gamma: float = 0.0) -> Platform:
    """``n`` equal nodes under ``tini``: ``alpha + m beta`` per message, one port."""
    return Platform(tuple(Node(str(i), alpha, beta, gamma=gamma) for i in range(n)), model="tini")


def delivered(sched) -> dict[str, list[frozenset]]:
    """Run ``sched``'s program on contribution sets, byte by byte: each rank's ops in
    program order (slot order: a valid global order), a send ships the sets of its bytes,
    a ``recv`` overwrites, a ``recv_reduce`` adds and must add nothing twice; a relay
    keeps a relay copy apart and forwards it."""
    prog = sched.program()
    ids = list(prog.ops)
    size = sum(sched.blocks().values()) if sched.collective != "allreduce" else sched.nbytes
    state = {v: [frozenset()] * size for v in ids}
    if sched.collective == "allreduce" or sched.collective == "reduce_scatter":
        for v in ids:
            state[v] = [frozenset((v,))] * size
    else:
        at = sched.block_offsets()
        for v, m in sched.blocks().items():
            state[v][at[v] : at[v] + m] = [frozenset((v,))] * m
    queues: dict[tuple, list] = {}
    kept: dict[tuple, list] = {}  # (relay, chunk) -> a relay copy's sets
    pos = dict.fromkeys(ids, 0)
    while any(pos[v] < len(prog.ops[v]) for v in ids):
        moved = False
        for v in ids:
            while pos[v] < len(prog.ops[v]):
                op = prog.ops[v][pos[v]]
                c = prog.chunks[op.chunk]
                lo, hi = c.offset, c.offset + c.nbytes
                if op.kind == "send":
                    data = kept.get((v, op.chunk)) or state[v][lo:hi]
                    assert all(data), f"{v} sends bytes [{lo}, {hi}) it does not hold"
                    queues.setdefault((v, op.peer, op.chunk), []).append(data)
                else:
                    q = queues.get((op.peer, v, op.chunk))
                    if not q:
                        break
                    data = q.pop(0)
                    if c.copy_of is not None and op.result is None:
                        kept[(v, op.chunk)] = data
                    elif op.kind == "recv":
                        state[v][lo:hi] = data
                    else:
                        old = state[v][lo:hi]
                        assert all(not (a & b) for a, b in zip(old, data, strict=True))
                        state[v][lo:hi] = [a | b for a, b in zip(old, data, strict=True)]
                pos[v] += 1
                moved = True
        assert moved, "deadlock"
    return state


def check_result(sched) -> None:
    state = delivered(sched)
    everyone = frozenset(state)
    if sched.collective == "allgather":
        at = sched.block_offsets()
        for v in state:
            for u, m in sched.blocks().items():
                assert state[v][at[u] : at[u] + m] == [frozenset((u,))] * m
    elif sched.collective == "reduce_scatter":
        at = sched.block_offsets()
        for v, m in sched.blocks().items():
            assert state[v][at[v] : at[v] + m] == [everyone] * m
    else:
        for v in state:
            assert state[v] == [everyone] * sched.nbytes


@pytest.mark.parametrize("n", [*range(2, 12), 16])
@pytest.mark.parametrize("name", sorted(OPS))
def test_every_rank_ends_with_its_result(name, n):
    """Every block of every member exactly once where MPI puts it, for every N (powers of
    two and the folded ones), uneven blocks and shares too."""
    p = equal(n, 1e-6, 1e-9)
    for nbytes in (3, 5 * n + 2):
        check_result(plan(p, None, method=name, collective=OPS[name], nbytes=nbytes))
    if name != "rabenseifner":
        sizes = {str(i): (i * 7) % 5 for i in range(n)}
        check_result(plan(p, None, method=name, collective=OPS[name], nbytes=0, sizes=sizes))


def _steps(sched) -> int:
    n = len(sched.order)
    return len({x.slot // n for sends in sched.order.values() for x in sends})


@pytest.mark.parametrize("n", [2, 3, 5, 7, 8, 12])
def test_bruck_closed_form(n):
    """``ceil(log2 N)`` steps; each rank sends ``(N - 1) m`` bytes in one message per step,
    two where its blocks wrap past the last rank's; without latency the time is
    ``(N - 1) m beta``, with it one ``alpha`` per message on the slowest rank's path."""
    m, beta = 1000, 1e-9
    s = plan(equal(n, 0.0, beta), None, method="bruck", collective="allgather", nbytes=m)
    steps = math.ceil(math.log2(n))
    assert _steps(s) == steps
    prog = s.program()
    for v in prog.ops:
        r = int(v)
        sends = [prog.chunks[op.chunk].nbytes for op in prog.ops[v] if op.kind == "send"]
        assert sum(sends) == (n - 1) * m
        wraps = sum(r + min(1 << k, n - (1 << k)) > n for k in range(steps))
        assert len(sends) == steps + wraps
    assert simulate(equal(n, 0.0, beta), s).makespan == pytest.approx((n - 1) * m * beta)
    alpha = 1e-5
    t = simulate(equal(n, alpha, beta), s).makespan
    wrapped = sum(n - 1 + min(1 << k, n - (1 << k)) > n for k in range(steps))
    assert t == pytest.approx((steps + wrapped) * alpha + (n - 1) * m * beta, rel=1e-12)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_halving_and_rabenseifner_closed_forms(n):
    """Powers of two: the reduce-scatter ``log2 N alpha + (N - 1) m (beta + gamma)``;
    Rabenseifner's allreduce ``2 log2 N alpha + 2 (N - 1)/N M beta + (N - 1)/N M gamma``
    (Thakur, Rabenseifner & Gropp 2005, Sec. 4), one message per rank per step."""
    alpha, beta, gamma, m = 1e-5, 1e-9, 3e-10, 4096
    p = equal(n, alpha, beta, gamma)
    d = n.bit_length() - 1
    s = plan(p, None, method="halving", collective="reduce_scatter", nbytes=m)
    assert _steps(s) == d
    assert all(sum(op.kind == "send" for op in ops) == d for ops in s.program().ops.values())
    want = d * alpha + (n - 1) * m * (beta + gamma)
    assert simulate(p, s).makespan == pytest.approx(want, rel=1e-12)
    M = n * m
    s = plan(p, None, method="rabenseifner", collective="allreduce", nbytes=M)
    assert all(sum(op.kind == "send" for op in ops) == 2 * d for ops in s.program().ops.values())
    want = 2 * d * alpha + 2 * (n - 1) / n * M * beta + (n - 1) / n * M * gamma
    assert simulate(p, s).makespan == pytest.approx(want, rel=1e-12)
    # the same on a complete link graph (every link both ways, multi_port)
    g = complete(n, alpha, 1 / beta)
    s = plan(g, None, method="rabenseifner", collective="allreduce", nbytes=M)
    want = 2 * d * alpha + 2 * (n - 1) / n * M * beta
    assert simulate(g, s).makespan == pytest.approx(want, rel=1e-12)


def test_folded_ranks_send_their_vector_first_and_get_their_result_last():
    """Six ranks: 0 and 2 fold into 1 and 3 (MPICH's ``rem = 2``); Rabenseifner's even
    ranks send once (the whole vector) and receive once (the whole result)."""
    p = equal(6, 1e-6, 1e-9)
    s = plan(p, None, method="rabenseifner", collective="allreduce", nbytes=600)
    prog = s.program()
    for even in ("0", "2"):
        ops = prog.ops[even]
        partner = str(int(even) + 1)
        assert [(op.kind, op.peer, prog.chunks[op.chunk].nbytes) for op in ops] == [
            ("send", partner, 600),
            ("recv", partner, 600),
        ]
    roots = sorted({f.tree.root for f in s.flows})
    assert roots == ["1", "3", "4", "5"]


def test_refusals_name_the_problem():
    p = equal(4, 1e-6, 1e-9)
    for name, kwargs, message in (
        ("bruck", {"collective": "reduce_scatter"}, "does not plan a reduce_scatter"),
        ("bruck", {"collective": "allgather", "segment_size": 8}, "whole blocks"),
        ("halving", {"collective": "reduce_scatter", "sizes": {"0": 1}}, "sizes"),
        ("rabenseifner", {"collective": "allreduce", "segment_size": 8}, "whole shares"),
    ):
        with pytest.raises(PlannerError, match=message):
            plan(p, None, method=name, nbytes=64, **kwargs)


@pytest.mark.parametrize("n", [5, 8])
def test_ranks_without_a_link_are_relayed(n):
    """On a line (links between neighbours only) every message between ranks with no
    link goes store and forward through the ranks between, as the network routes MPI's:
    the data arrive as on a complete graph, each relayed message takes one hop per link
    (the engine refuses such schedules: tests/mpi_programs/perroot.py)."""
    line = Platform.from_dict(
        {"model": "multi_port", "nodes": [{"id": str(i)} for i in range(n)],
         "links": [{"u": str(i), "v": str(i + 1), "bandwidth": 1e9, "latency": 1e-6,
                    "send_latency": 0, "send_bandwidth": "inf"} for i in range(n - 1)]}
    )  # fmt: skip
    for name, op in [*OPS.items(), ("ring", "allgather"), ("ring", "reduce_scatter")]:
        s = plan(line, None, method=name, collective=op, nbytes=40)
        assert any(f.relays for f in s.flows)
        for f in s.flows:
            for path in f.relays:
                assert all(abs(int(a) - int(b)) == 1 for a, b in itertools.pairwise(path))
        check_result(s)
        assert simulate(line, s).makespan > 0
    s = plan(line, None, method="ring", collective="allreduce", nbytes=40)
    check_result(s)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_binomial_allreduce_is_mpich_s_binomial_reduce_then_bcast(n):
    """MPICH's reduce + broadcast allreduce needs no planner of its own: ``binomial`` run
    backwards then forwards from rank 0 has MPICH's trees (``MPIR_Reduce_intra_binomial``
    combining the nearest child first, ``MPIR_Bcast_intra_binomial`` sending the farthest
    first), and on equal nodes with ``N`` a power of two it takes
    ``log2 N (2 alpha + 2 M beta + M gamma)``."""
    from hetcoll.mpich import native
    from hetcoll.mpich_rooted import rooted_native

    alpha, beta, gamma, M = 1e-5, 1e-9, 3e-10, 4096
    p = equal(n, alpha, beta, gamma)
    s = plan(p, None, method="binomial", collective="allreduce", nbytes=M)
    ids = list(p.ids)
    assert [f.kind for f in s.flows] == ["reduce", "bcast"]
    assert s.flows[0].tree == rooted_native("reduce", ids, M, algorithm="binomial").flows[0].tree
    assert s.flows[1].tree == native("bcast", ids, M, algorithm="binomial").schedule.flows[0].tree
    if n & (n - 1) == 0:
        d = n.bit_length() - 1
        want = d * (2 * alpha + 2 * M * beta + M * gamma)
        assert simulate(p, s).makespan == pytest.approx(want, rel=1e-12)
