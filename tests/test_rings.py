"""The ``ring`` planner (:mod:`hetcoll.planners.rings`): MPICH's ring allgather,
reduce-scatter and allreduce in per-root form, their closed-form times on a homogeneous
platform, MPICH's send order, and refusals."""

from __future__ import annotations

import pytest

from hetcoll import PlannerError, Platform, plan, simulate


def complete(n: int, alpha: float, bandwidth: float) -> Platform:
    """Every pair linked, ``alpha`` seconds and ``bandwidth`` bytes/s per message."""
    links = [
        {"u": str(a), "v": str(b), "bandwidth": bandwidth, "latency": alpha,
         "send_latency": 0, "send_bandwidth": "inf"}
        for a in range(n) for b in range(a + 1, n)
    ]  # fmt: skip
    return Platform.from_dict(
        {"model": "multi_port", "nodes": [{"id": str(i)} for i in range(n)], "links": links}
    )


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_closed_forms_on_a_homogeneous_platform(n):
    """Allgather and reduce-scatter of ``m``-byte blocks: ``(N - 1)(alpha + m / B)``; an
    allreduce of ``M`` bytes: ``2 (N - 1)(alpha + M / (N B))``."""
    alpha, bw, m = 1e-5, 1e9, 3 * 2**20
    p = complete(n, alpha, bw)
    for op in ("allgather", "reduce_scatter"):
        s = plan(p, None, method="ring", collective=op, nbytes=m)
        assert s.transfers == n * (n - 1)
        assert simulate(p, s).makespan == pytest.approx((n - 1) * (alpha + m / bw), rel=1e-12)
    M = n * m
    s = plan(p, None, method="ring", collective="allreduce", nbytes=M)
    want = 2 * (n - 1) * (alpha + M / n / bw)
    assert simulate(p, s).makespan == pytest.approx(want, rel=1e-12)


def test_each_rank_sends_mpich_s_blocks_in_mpich_s_order():
    """Step ``s``: rank ``u`` sends its successor the block of ``u - s`` (allgather), of
    ``u - s - 1`` (reduce-scatter), the reduce-scatter's steps first in an allreduce."""
    n = 5
    p = complete(n, 0.0, 1e9)
    for op, roots in (
        ("allgather", lambda u, s: (u - s) % n),
        ("reduce_scatter", lambda u, s: (u - s - 1) % n),
    ):
        s = plan(p, None, method="ring", collective=op, nbytes=100)
        for u in range(n):
            sends = s.order[str(u)]
            assert [x.child for x in sends] == [str((u + 1) % n)] * (n - 1)
            assert [s.flows[x.flow].tree.root for x in sends] == [
                str(roots(u, k)) for k in range(n - 1)
            ]
    s = plan(p, None, method="ring", collective="allreduce", nbytes=1000)
    kinds = [s.flows[x.flow].kind for x in s.order["0"]]
    assert kinds == ["reduce"] * (n - 1) + ["bcast"] * (n - 1)
    assert sum(f.nbytes for f in s.flows if f.kind == "reduce") == 1000


def test_ring_refuses_in_one_line():
    p = complete(3, 0.0, 1e9)
    for kwargs, message in (
        ({"collective": "bcast"}, "does not plan a bcast"),
        ({"collective": "allgather", "segment_size": 64}, "whole blocks"),
        ({"collective": "allreduce", "sizes": {"0": 1, "1": 1, "2": 1}}, "sizes"),
    ):
        with pytest.raises(PlannerError, match=message):
            plan(p, None, method="ring", nbytes=100, **kwargs)


def test_a_ring_relays_between_consecutive_members_with_no_link():
    """Where consecutive members have no link the ring's blocks go through the shortest
    path's relays, as the network routes MPI's messages (it was refused when planned, and
    before that the simulator raised a ModelError on its schedule); the data every rank
    ends with: tests/test_recursive.py."""
    p = Platform.from_dict(
        {"model": "multi_port", "nodes": [{"id": i} for i in "abc"],
         "links": [{"u": "a", "v": "b", "bandwidth": 1e9}, {"u": "a", "v": "c", "bandwidth": 1e9}]}
    )  # fmt: skip
    # a relay path runs from an edge's parent to its child: b -> c's data way for a bcast
    # flow, c <- b for a reduce flow (rooted at c)
    for op, paths in (
        ("allgather", {("b", "a", "c")}),
        ("reduce_scatter", {("c", "a", "b")}),
        ("allreduce", {("c", "a", "b"), ("b", "a", "c")}),
    ):
        s = plan(p, None, method="ring", collective=op, nbytes=64)
        assert {x for f in s.flows for x in f.relays} == paths
        # two hops of 64 B at 1 GB/s on the slowest step's way
        assert simulate(p, s).makespan >= 2 * 64 / 1e9
