"""The engine's cost per message in ``auto``'s choice (hetcoll.choice, hetcoll.compare):
a finer slicing wins only where its predicted gain exceeds what its extra messages cost,
the charge is exact (the busiest rank's messages), pruning stays exact with it, and the
runtime's choice for the training loop's 50 MiB broadcast under emulation keeps slices of
400 KiB or more (it took 100 KiB ones, measured 2.1x slower); a cost measured by ``hetcoll
tune`` (the tuning file's ``message_cost``) replaces the constant exactly where the
arithmetic of the charge says."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import load_platform, plan, simulate
from hetcoll.choice import (
    DEFAULT_MARGIN,
    ENGINE_MESSAGE_COST,
    charged_message_cost,
    choose,
    engine_message_cost,
    mpi_time,
)
from hetcoll.compare import busiest_messages, compare, critical_messages, slice_choices
from hetcoll.hetcomm import Planning
from hetcoll.mpich import native, predict
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.simulator import simulate_program
from hetcoll.tuning import load_tuning

NET = Path(__file__).resolve().parents[1] / "examples" / "net.json"
MIB = 1 << 20


def _bcast_call(nbytes: int) -> dict:
    return {
        "algo": "auto",
        "groups": None,
        "nbytes": nbytes,
        "segment_size": None,
        "root": "0",
        "members": None,
    }


def test_runtime_keeps_coarse_slices_for_the_training_broadcast():
    """``examples/net.json``, 8 ranks, 50 MiB from rank 0, emulated at time scale 10 (the
    training benchmark): the model alone picks ``multi_tree`` in 400 KiB slices (95.8 ms,
    its message list schedule justified, against 99.9 ms in 100 KiB slices, 4x the
    busiest rank's messages); charged the engine's cost per message, the runtime plans
    400 KiB or coarser, and the choice's prediction is that schedule's, charged."""
    p = load_platform(NET)
    cost = engine_message_cost(10.0)
    bare = plan(p, "0", method="auto", nbytes=50 * MIB)
    assert bare.params["segment_size"] == 400 * 1024  # what the model alone takes
    planning = Planning("auto", None, None, {})
    planning.message_cost = cost
    sched = planning.tree(p, _bcast_call(50 * MIB))
    assert sched.params["segment_size"] >= 400 * 1024
    assert sched.params["message_cost"] == cost
    call = {**_bcast_call(50 * MIB), "algo": None, "collective": "bcast", "nodes": list(p.ids)}
    c = planning.choose(p, {**call, "emulate": True})
    found = simulate(p, sched)
    assert c.algorithm == "auto"
    assert c.predicted == pytest.approx(found.makespan + cost * busiest_messages(found))


def test_the_charge_is_the_busiest_ranks_messages():
    """MPI's dissemination barrier on 8 ranks: every rank sends and receives 3 messages;
    ``mpi_time`` adds 6 charges, exactly."""
    p = load_platform(NET)
    nodes = list(p.ids)
    base = predict(p, native("barrier", nodes, 0).program)
    assert mpi_time(p, "barrier", 0, nodes, message_cost=1e-3) == pytest.approx(base + 6e-3)
    flat = simulate(p, plan(p, "0", method="flat", nbytes=8))
    assert busiest_messages(flat) == 7  # the root sends to all 7 others


def test_mpi_is_charged_under_emulation_only():
    """Natively MPI's own runs in C, not through the engine: only the plan is charged."""
    p = load_platform(NET)
    nodes = list(p.ids)
    kw = {"root": "0", "message_cost": 50e-6}
    emulated = choose(p, "bcast", 8, nodes, emulated=True, **kw)
    across = choose(p, "bcast", 8, nodes, **kw)
    bare = mpi_time(p, "bcast", 8, nodes, root="0")
    assert across.mpi == pytest.approx(bare)
    assert emulated.mpi == pytest.approx(bare + 50e-6 * 3)  # binomial: the root's 3 sends
    assert emulated.predicted == across.predicted


def test_the_small_allreduce_of_the_training_loop_stays_with_mpi():
    """The object ``allreduce`` of one float (an allgather of 256-byte blocks): a tree
    (``rooted_exact``, the busiest rank 8 messages) is predicted 147 us against MPI's
    recursive doubling's 247 us (6 each); charged the engine's messages at time scale 10
    the plan's speed-up no longer covers the margin, and MPI's own runs."""
    p = load_platform(NET)
    nodes = list(p.ids)
    bare = choose(p, "allgather", 256, nodes, emulated=True)
    assert bare.algorithm == "rooted_exact"
    c = choose(p, "allgather", 256, nodes, emulated=True, message_cost=engine_message_cost(10))
    assert c.algorithm == "mpi" and c.plan == "rooted_exact"
    charge = engine_message_cost(10)
    assert c.mpi == pytest.approx(bare.mpi + 6 * charge)
    assert c.predicted == pytest.approx(bare.predicted + 8 * charge)


def test_engine_message_cost_is_real_time_in_model_seconds():
    assert engine_message_cost() == ENGINE_MESSAGE_COST
    assert engine_message_cost(4.0) == ENGINE_MESSAGE_COST / 4


def _measured(cost: float, emulated: bool = True):
    """A tuning file of 8 ranks carrying a measured ``message_cost`` and no rules."""
    return load_tuning(
        {
            "format": "hetcoll-tuning",
            "version": 1,
            "ranks": 8,
            "emulated": emulated,
            "message_cost": cost,
            "rules": {},
        }
    )


def test_a_wrapper_charges_the_measured_cost_as_it_was_measured():
    """The file's cost (real seconds) in model seconds under emulation; the constant (or
    nothing natively) without one, or when the file was measured the other way."""
    emulated, native = _measured(3e-4), _measured(3e-5, emulated=False)
    assert charged_message_cost(emulated, emulated=True, time_scale=10.0) == 3e-4 / 10
    assert charged_message_cost(native, emulated=False) == 3e-5
    assert charged_message_cost(None, emulated=True, time_scale=4.0) == ENGINE_MESSAGE_COST / 4
    assert charged_message_cost(native, emulated=True, time_scale=4.0) == ENGINE_MESSAGE_COST / 4
    assert charged_message_cost(emulated, emulated=False) == 0.0
    assert charged_message_cost(None, emulated=False) == 0.0
    assert charged_message_cost(_measured(None), emulated=True) == ENGINE_MESSAGE_COST


def test_a_measured_cost_slices_the_training_broadcast_where_the_arithmetic_says():
    """``examples/net.json``, 8 ranks, 50 MiB from rank 0 at time scale 10: from every
    candidate's predicted time and busiest-rank messages, the charge per message at which
    ``multi_tree`` in 400 KiB slices (the bare optimum, 317 messages) loses to 1.6 MiB
    slices (80), and then those to 6.4 MiB (24); a measured cost just below and just
    above each break-even (real seconds: times 10) gives the wrapper's plan those slices."""
    p = load_platform(NET)
    scale, n = 10.0, 50 * MIB
    every = compare(p, "bcast", root="0", nbytes=n, slices=slice_choices(n)).ranked
    cands = [(c.predicted_time, busiest_messages(c.prediction), c.segment_size) for c in every]

    def best(cost):
        return min(cands, key=lambda c: (c[0] + cost * c[1], c[1]))

    def break_even(t, m):  # the least charge at which a candidate with fewer messages wins
        return min((tj - t) / (m - mj) for tj, mj, _ in cands if mj < m)

    fine = best(0.0)
    assert (fine[1], fine[2]) == (317, 400 * 1024)
    first = break_even(*fine[:2])
    mid = best(first * 1.001)
    assert (mid[1], mid[2]) == (80, 1600 * 1024)
    second = break_even(*mid[:2])
    assert first == pytest.approx(2.2623e-5, rel=1e-3)
    assert second == pytest.approx(3.0647e-4, rel=1e-3)

    def slices(measured: float) -> int:
        planning = Planning("auto", None, None, {}, tuning=_measured(measured))
        planning.message_cost = charged_message_cost(
            planning.tuning, emulated=True, time_scale=scale
        )
        return planning.tree(p, _bcast_call(n)).params["segment_size"]

    assert slices(first * scale * 0.999) == 400 * 1024
    assert slices(first * scale * 1.001) == 1600 * 1024
    assert slices(second * scale * 0.999) == 1600 * 1024
    assert slices(second * scale * 1.001) == 6400 * 1024


def test_a_measured_cost_gives_the_small_allreduce_to_mpi_where_the_arithmetic_says():
    """The object ``allreduce`` of one float (an allgather of 256-byte blocks) under
    emulation: the plan (``rooted_exact``, 8 messages on its busiest rank) runs while
    ``(plan + 8 c) (1 + margin) < mpi + 6 c``; a measured cost just below the break-even
    keeps the plan, just above it gives the call to MPI."""
    p = load_platform(NET)
    nodes, scale, m = list(p.ids), 10.0, DEFAULT_MARGIN
    bare = choose(p, "allgather", 256, nodes, emulated=True)
    assert bare.algorithm == "rooted_exact"
    even = (bare.mpi - bare.predicted * (1 + m)) / (8 * (1 + m) - 6)
    assert even > 0
    for factor, want in ((0.999, "rooted_exact"), (1.001, "mpi")):
        cost = charged_message_cost(
            _measured(even * scale * factor), emulated=True, time_scale=scale
        )
        c = choose(p, "allgather", 256, nodes, emulated=True, message_cost=cost)
        assert (c.algorithm, c.plan) == (want, "rooted_exact")
        assert c.predicted == pytest.approx(bare.predicted + 8 * cost)
        assert c.mpi == pytest.approx(bare.mpi + 6 * cost)


@settings(max_examples=12, deadline=None)
@given(
    t_ini=st.lists(st.floats(1e-6, 1e-4), min_size=3, max_size=5),
    per_byte=st.floats(1e-10, 1e-8),
    nbytes=st.sampled_from([40_000, MIB, 3 * MIB]),
    cost=st.sampled_from([0.0, 1e-6, 2e-5, 1e-3]),
)
def test_auto_is_the_least_charged_of_every_candidate(t_ini, per_byte, nbytes, cost):
    """By brute force: ``auto`` with ``message_cost`` (pruned by lower bounds) returns a
    schedule whose charged time is the least over every candidate at every slice size,
    each simulated and charged here (no pruning); a larger charge never gives the busiest
    rank more messages."""
    n = len(t_ini)
    t_byte = [per_byte * (3.0 if k % 2 else 1.0) for k in range(n)]
    p = Platform(nodes_from_costs(t_ini, t_byte), model="tini")
    got = plan(p, "0", method="auto", nbytes=nbytes, options={"message_cost": cost})
    found = simulate(p, got)
    charged = found.makespan + cost * busiest_messages(found)
    every = compare(p, "bcast", root="0", nbytes=nbytes, slices=slice_choices(nbytes))
    least = min(c.predicted_time + cost * busiest_messages(c.prediction) for c in every.ranked)
    assert charged == pytest.approx(least, rel=1e-9)
    fewer = plan(p, "0", method="auto", nbytes=nbytes, options={"message_cost": cost * 10 + 1e-4})
    assert busiest_messages(simulate(p, fewer)) <= busiest_messages(found)


@pytest.mark.parametrize(
    "call",
    [
        ("bcast", {"method": "flat"}),
        ("bcast", {"method": "fnf", "segment_size": 2048}),
        ("allreduce", {"method": "forest", "collective": "allreduce"}),
        ("reduce", {"method": "binomial", "collective": "reduce"}),
    ],
)
def test_the_busiest_ranks_messages_are_counted_alike_on_a_program_and_on_its_run(call):
    """One count for the charge of a plan (its simulated run) and of MPI's algorithm (its
    program, ``mpi_time``): each rank's sends and receives, the same on both."""
    p = load_platform(NET)
    collective, kw = call
    sched = plan(p, None if collective == "allreduce" else "0", nbytes=20_000, **kw)
    run = simulate(p, sched)
    assert busiest_messages(sched.program()) == busiest_messages(run) > 0
    mpich = native("allreduce", list(p.ids), 20_000, count=2500, op="sum").program
    transfers, _ = simulate_program(p.model.bind(p), mpich)
    # recursive halving, then doubling: 3 + 3 steps, each a send and a receive
    assert busiest_messages(mpich) == busiest_messages(SimpleNamespace(transfers=transfers)) == 12


def test_forest_is_charged_its_critical_chain_not_its_busiest_rank():
    """``examples/net.json``, 8 ranks, an allreduce of 256 KiB of doubles, 10 us charged per
    message under emulation: forest's plan (1 796.256 us) has 40 messages on its busiest
    rank and 9 on its critical chain.  Charged the busiest rank's (2 196.256 us) it lost to a
    tree and then to MPI's own (2 315.008 us + 12 charges) by the margin; charged its
    critical chain (1 886.256 us) it keeps the call."""
    p = load_platform(NET)
    nodes, nbytes, cost = list(p.ids), 256 * 1024, 1e-5
    sched = plan(p, None, method="forest", collective="allreduce", nbytes=nbytes,
                 options={"align": 8})  # fmt: skip
    run = simulate(p, sched)
    assert run.makespan == pytest.approx(1796.256e-6, rel=1e-12)
    assert (busiest_messages(run), critical_messages(run)) == (40, 9)
    c = choose(p, "allreduce", nbytes, nodes, count=nbytes // 8, op="sum", emulated=True,
               message_cost=cost)  # fmt: skip
    assert (c.algorithm, c.plan) == ("forest", "forest")
    assert c.predicted == pytest.approx(1796.256e-6 + 9 * cost, rel=1e-12)
    assert c.mpi == pytest.approx(2315.008e-6 + 12 * cost, rel=1e-12)
    assert c.predicted * (1 + DEFAULT_MARGIN) < c.mpi  # 2 357.82 us < 2 435.008 us
    old = run.makespan + 40 * cost  # the busiest rank's charge: MPI's own would run
    assert old * (1 + DEFAULT_MARGIN) > c.mpi  # 2 745.32 us


def test_the_critical_chain_of_a_flat_broadcast_is_its_roots_sends():
    """Where ``hetcoll tune`` measures the cost (a flat broadcast, whole and in 16 slices)
    both counts are the root's sends: the measured unit is the charged one."""
    p = load_platform(NET)
    for seg in (None, 4096):
        run = simulate(p, plan(p, "0", method="flat", nbytes=16 * 4096, segment_size=seg))
        assert critical_messages(run) == busiest_messages(run) == (7 if seg is None else 112)
