"""The engine's executor without MPI: every rank's :class:`Executor` on an in-memory
transport, driven by a virtual clock, against the simulator on the same program.

Under emulated timing the executor's completion times must equal
``simulate_program``'s to the nanosecond wherever the emulation is exact (docs/runtime.md,
Emulated heterogeneity): the ``tini`` and ``postal`` models for every schedule, and
``hockney`` (bidirectional ports, no links) for a single tree, pipelined or not, and the
hypercube collectives.  Costs are whole nanoseconds, so rounding plays no part.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _worlds import FakeTransport, Scratch, World, run_world
from hetcoll import Platform, plan, plan_multiple
from hetcoll.errors import CollectiveTimeoutError
from hetcoll.generators import figueira_platform, grid_platform
from hetcoll.models import get_model
from hetcoll.planners import REGISTRY, plan_allgather, plan_allreduce, plan_barrier
from hetcoll.platform import nodes_from_costs
from hetcoll.program import Chunk, Op, Program
from hetcoll.runtime.emulation import EmulatedTiming, Emulator
from hetcoll.runtime.executor import ByteRanges, Executor, rank_plan
from hetcoll.schedule import Flow, Schedule, Tree
from hetcoll.simulator import simulate_program


def assert_same_times(platform, program, model=None, receives_only=False):
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    _, sim = simulate_program(bound, program)
    traces = run_world(platform, program, model)
    for node, ops in program.ops.items():
        for i, op in enumerate(ops):
            if receives_only and op.kind == "send":
                continue
            want = round(sim[node][i] * 1e9)
            got = traces[node].done[i]
            assert got == want, (node, i, op, got, want)
        assert traces[node].late == 0


def tini_platform(n, seed):
    rng = np.random.default_rng(seed)
    t_ini = rng.choice([1, 2, 3, 5, 8], size=n) * 1e-6
    return Platform(nodes_from_costs(t_ini, 1e-9), model="tini")


def tree_planners(n):
    return sorted(
        name
        for name, info in REGISTRY.items()
        if "bcast" in info.collectives
        and (info.max_members is None or info.max_members >= n)
        and name != "optimal"
    )


@pytest.mark.parametrize("n", [2, 5, 8])
def test_emulated_tree_times_equal_the_simulator_tini(n):
    p = tini_platform(n, seed=n)
    for algo in tree_planners(n):
        for root in (0, n - 1):
            for nbytes, seg in ((0, None), (1000, None), (4000, 1000), (5000, 999)):
                try:
                    sched = plan(p, str(root), method=algo, nbytes=nbytes, segment_size=seg)
                except Exception:  # a planner that refuses segments
                    continue
                assert_same_times(p, sched.program())


def test_timetable_receives_posted_late_need_rendezvous():
    """A multi-tree timetable posts each receive when the previous one completed; the
    simulator starts a transfer only once its receive is posted, and so does the emulated
    sender, told the posting time by the receiver's clear-to-send (rendezvous)."""
    p = tini_platform(5, seed=5)
    opts = {"slices_per_period": 16}  # the timetable (by default one tree may win)
    sched = plan(p, "4", method="multi_tree", nbytes=5000, segment_size=999, options=opts)
    assert sched.timetable
    assert_same_times(p, sched.program())


def test_emulated_multicasts_equal_the_simulator_tini():
    p = tini_platform(7, seed=3)
    groups = [("0", None), ("6", ["1", "2"]), ("1", ["0", "6", "3"])]
    for algo in ("fnf", "fnf_joint", "binomial"):
        sched = plan_multiple(p, groups, method=algo, nbytes=3000, segment_size=1000)
        assert_same_times(p, sched.program())


def postal_grid():
    lat = {
        "intra": (2e-3, 3e-3),
        "lan": (4e-3, 6e-3),
        "light": (8e-3, 12e-3),
        "heavy": (10e-3, 40e-3),
    }
    p = grid_platform(layout=[[2]] * 3, latency=lat, access=0.5e-3, seed=3)
    # whole nanoseconds, so that the comparison is exact
    latency = np.round(np.asarray(p.latency) * 1e9) / 1e9
    return Platform(p.nodes, latency=latency, model="postal")


@pytest.mark.parametrize(
    "model",
    [
        {"name": "postal"},
        {"name": "postal", "overhead": 1e-3, "gap": 2e-3, "recv_overhead": 0.5e-3},
    ],
)
def test_emulated_postal_times_equal_the_simulator(model):
    p = postal_grid()
    for algo in ("flat", "binomial", "mst", "spt", "hlot", "magpie", "gap_aware", "fnf"):
        for root in (p.ids[0], p.ids[-1]):
            sched = plan(p, root, method=algo, model=model)
            assert_same_times(p, sched.program(), model)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_emulated_hypercube_times_equal_the_simulator(n):
    p = figueira_platform(n, 3, base_latency=5e-3, seed=n)
    latency = np.round(np.asarray(p.latency) * 1e9) / 1e9
    p = Platform(p.nodes, latency=latency, model="postal")
    for method in ("blind", "eff_cube", "tsts_cube"):
        for sched in (
            plan_allreduce(p, method=method, nbytes=32, op="sum"),
            plan_allgather(p, method=method, nbytes=16),
            plan_barrier(p, method=method),
        ):
            assert_same_times(p, sched.program(), receives_only=True)


def hockney_platform(n, seed):
    rng = np.random.default_rng(seed)
    latency = rng.integers(1, 9, size=(n, n)) * 1e-6
    np.fill_diagonal(latency, 0)
    bandwidth = np.full((n, n), 1e9)
    return Platform(
        nodes_from_costs([1e-6] * n, 0.0), latency=latency, bandwidth=bandwidth, model="hockney"
    )


def test_emulated_hockney_single_trees_equal_the_simulator():
    p = hockney_platform(6, seed=1)
    for algo in ("binomial", "chain", "flat", "fnf"):
        for nbytes, seg in ((0, None), (3000, 1000), (10_000, 2500)):
            sched = plan(p, "2", method=algo, nbytes=nbytes, segment_size=seg)
            assert_same_times(p, sched.program())


# -- data and native timing -----------------------------------------------------------------------


@given(st.integers(2, 7), st.integers(0, 3000), st.integers(0, 6), st.sampled_from([None, 7, 500]))
def test_the_fake_world_delivers_every_byte_natively(n, nbytes, root, seg):
    p = tini_platform(n, seed=1)
    root = root % n
    sched = plan(p, str(root), method="fnf", nbytes=nbytes, segment_size=seg)
    program = sched.program()
    expected = (np.arange(nbytes) * 7 + 3).astype(np.uint8)
    bufs = {v: expected.copy() if v == str(root) else np.zeros(nbytes, np.uint8) for v in p.ids}
    handlers = {v: ByteRanges(program.chunks, {0: memoryview(bufs[v])}) for v in p.ids}
    run_world(p, program, handlers=handlers, timing="native")
    for v in p.ids:
        assert np.array_equal(bufs[v], expected)


_ = (Flow, Schedule, Tree)  # re-exported names used by other engine tests


def test_a_send_waiting_for_its_clear_to_send_honours_the_deadline():
    """Node 0's only send goes to a receive node 1 posts late (after chunk 0 from node 2):
    under emulation node 0 waits for node 1's clear-to-send; node 1 never runs here, so the
    wait ends at the deadline with an error naming the send."""
    p = Platform(nodes_from_costs([1e-6, 1e-6, 1e-6], 0.0), model="tini")
    chunks = (Chunk(0, 0, 0), Chunk(1, 0, 0))
    ops = {
        "0": (Op("send", "1", 1, ()),),
        "1": (Op("recv", "2", 0, ()), Op("recv", "0", 1, (0,))),
        "2": (Op("send", "1", 0, ()),),
    }
    program = Program(ops, chunks, {"0": frozenset({1}), "1": frozenset(), "2": frozenset({0})})
    plan = rank_plan(program, "0", {"0": 0, "1": 1, "2": 2})
    assert plan.late == (True,)
    assert rank_plan(program, "2", {"0": 0, "1": 1, "2": 2}).late == (False,)
    world = World()
    timing = EmulatedTiming(Emulator(p, [0, 1, 2]), 0, clock=world.clock)
    ex = Executor(plan, Scratch(program), FakeTransport(world, 0), timing)
    world.now = 10
    with pytest.raises(CollectiveTimeoutError, match=r"op 0 .*send of chunk 1.* never became"):
        ex.run(5, None, "Bcast")
    assert ex.trace.issued == [0]  # it never sent


def test_an_idle_turn_yields_until_a_yield_is_slow_then_sleeps_for_a_while(monkeypatch):
    """fast.Rest (docs/runtime.md, Waiting): yields while yields return quickly; after one
    that took longer than ``slow`` (the host is busy with other processes) it sleeps
    instead until ``hold`` has passed, then yields again.  A virtual clock: no wall time."""
    from hetcoll.runtime import fast

    clock = [0]
    done: list[str] = []

    def sched_yield(cost: list[int]) -> None:
        done.append("yield")
        clock[0] += cost[0]

    cost = [1_000]
    monkeypatch.setattr(fast.time, "monotonic_ns", lambda: clock[0])
    monkeypatch.setattr(fast.time, "sleep", lambda s: done.append("sleep"))
    monkeypatch.setattr(fast.os, "sched_yield", lambda: sched_yield(cost))
    rest = fast.Rest(slow=200_000, hold=10_000_000)
    rest()
    rest()
    cost[0] = 1_000_000  # a yield that gave the core away for a tick
    rest()
    rest()
    rest()
    clock[0] += 10_000_000  # the hold is over
    cost[0] = 1_000
    rest()
    assert done == ["yield", "yield", "yield", "sleep", "sleep", "yield"]


def test_a_rest_sleeps_longer_only_while_yields_stay_slow(monkeypatch):
    """fast.Rest: a slow yield that took more than ``1/often`` of the time since the last
    while ended doubles the while (the host stays busy), up to ``most``; one long after
    (as on an idle host of four ranks on two cores: one in a few hundred ms) halves it,
    down to ``hold``.  A virtual clock: no wall time."""
    from hetcoll.runtime import fast

    clock = [10**12]
    cost = [1_000]
    done: list[str] = []
    monkeypatch.setattr(fast.time, "monotonic_ns", lambda: clock[0])
    monkeypatch.setattr(fast.time, "sleep", lambda s: done.append("sleep"))
    monkeypatch.setattr(fast.os, "sched_yield", lambda: clock.__setitem__(0, clock[0] + cost[0]))
    rest = fast.Rest(slow=200_000, hold=1_000_000, most=3_000_000, often=8)
    spans = []

    def after(gap: int | None) -> None:
        """``gap`` ns after the while ended (None: now), a yield that takes 0.5 ms."""
        if gap is not None:
            clock[0] = rest.until + gap
        cost[0] = 500_000
        rest()
        cost[0] = 1_000
        spans.append(rest.until - clock[0] + 500_000)  # the while, from the yield's start

    after(None)  # the first: hold
    after(1_000_000)  # 0.5 ms of the last 1 ms: twice as long
    after(0)  # at once again: twice again, capped at most
    after(3_999_999)  # still over 1/8 of the time: stays at most
    after(4_000_000)  # 1/8 exactly: not busy, half as long
    after(8_000_000)  # long after: half again, but at least hold
    after(3_000_000)
    assert spans == [1_000_000, 2_000_000, 3_000_000, 3_000_000, 1_500_000, 1_000_000, 2_000_000]
    assert done == []  # each while was over before the next look
    rest()  # within the while: a sleep
    clock[0] = rest.until
    rest()  # after it: a fast yield, no sleep
    assert done == ["sleep"]
    assert rest.span == 2_000_000


def test_the_fast_paths_straight_line_plans_are_exactly_one_message_trees():
    """fast.straight: a rank of a one-message tree (its receive, then its sends, each
    depending on it alone) runs its ops one after the other; anything with several
    receives (segments) or sends not all waiting for the receive takes the general loop."""
    from hetcoll.runtime.fast import straight
    from hetcoll.runtime.rank_ops import SEND

    p = Platform(nodes_from_costs([1e-6] * 7, 1e-9), model="tini")
    rank_of = {node: r for r, node in enumerate(p.ids)}
    program = plan(p, "2", method="binomial", nbytes=10).program()
    for node in p.ids:
        rp = rank_plan(program, node, rank_of)
        sends = tuple(k == SEND for k in rp.kinds)
        recv, order = straight(rp, sends)
        assert (recv < 0) == (node == "2")  # the root only sends
        assert list(order) == [i for i, s in enumerate(sends) if s]  # program order
        assert all(rp.ndeps[i] == (0 if recv < 0 else 1) for i in order)
    piped = plan(p, "0", method="chain", nbytes=40, segment_size=10).program()
    middle = rank_plan(piped, "3", rank_of)  # four receives, each forwarded
    assert straight(middle, tuple(k == SEND for k in middle.kinds)) is None
