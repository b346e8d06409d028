"""The hypercube data handlers without mpiexec: driven serially over lowered programs (as
the toy handler of test_hypercube_schedule does), plus HetComm's argument checks on one rank."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi4py import MPI

from hetcoll import HetcollError, PlannerError, plan_allgather, plan_allreduce, plan_barrier
from hetcoll.generators import figueira_platform
from hetcoll.planners import hypercube_planners
from hetcoll.runtime import BarrierHandler, GatherHandler, HetComm, ReduceHandler, typed_buffer
from hetcoll.runtime.reduce import sized_program


def run_serially(program, handlers) -> None:
    """Execute ``program`` one op at a time, moving bytes between the handlers."""
    done = {rank: [False] * len(ops) for rank, ops in program.ops.items()}
    mail: dict[tuple[str, str, int], deque] = {}
    progress = True
    while progress:
        progress = False
        for rank, ops in program.ops.items():
            h = handlers[rank]
            for i, op in enumerate(ops):
                if done[rank][i] or not all(done[rank][d] for d in op.deps):
                    continue
                if op.kind == "send":
                    data = bytes(h.send_buffer(op.chunk))
                    assert len(data) == program.chunks[op.chunk].nbytes
                    mail.setdefault((rank, op.peer, op.chunk), deque()).append(data)
                else:
                    box = mail.get((op.peer, rank, op.chunk))
                    if not box:
                        continue
                    buf = h.recv_buffer(op.chunk, op.kind)
                    buf[:] = box.popleft()
                    h.received(op.chunk, op.kind)
                done[rank][i] = progress = True
    assert all(all(flags) for flags in done.values()), "deadlock"


def _compose(inbuf, inoutbuf, datatype):
    """x -> a x + b maps, ``in o inout``: associative, not commutative."""
    a, io = np.frombuffer(inbuf, dtype=np.int64), np.frombuffer(inoutbuf, dtype=np.int64)
    a1, b1, a2, b2 = a[0::2].copy(), a[1::2].copy(), io[0::2].copy(), io[1::2].copy()
    io[0::2], io[1::2] = a1 * a2, a1 * b2 + b1


COMPOSE = MPI.Op.Create(_compose, commute=False)


def _fold(values, order):
    acc = values[order[-1]].copy()
    for v in reversed(order[:-1]):
        COMPOSE.Reduce_local([values[v], 4, MPI.INT64_T], [acc, 4, MPI.INT64_T])
    return acc


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 11), seed=st.integers(0, 100), method=st.sampled_from(hypercube_planners()))
def test_reduce_handler_combines_in_cube_order(n, seed, method):
    """With a non-commutative op every state is its origin's product in cube order: the
    final state is the product in the order of its origin (not rank order)."""
    p = figueira_platform(n, 20, seed=seed)
    program = plan_allreduce(p, method=method, nbytes=32, op="user").program()
    rng = np.random.default_rng(seed)
    values = {
        v: np.array([rng.choice([1, -1, 2]), rng.integers(-5, 5)] * 2, dtype=np.int64)
        for v in p.ids
    }
    handlers = {
        v: ReduceHandler(program, v, values[v].copy(), COMPOSE, 4, MPI.INT64_T) for v in p.ids
    }
    run_serially(program, handlers)
    for v, h in handlers.items():
        assert sorted(h.origin) == sorted(p.ids)
        assert np.array_equal(np.frombuffer(h.state, dtype=np.int64), _fold(values, h.origin))
        (own,) = program.initial[v]
        assert np.array_equal(h.held[own], values[v]), "a contribution was modified"


@pytest.mark.parametrize("method", hypercube_planners())
def test_gather_handler_places_blocks_of_any_size(method):
    p = figueira_platform(7, 20, seed=4)
    sizes = {v: 3 * int(v) for v in p.ids}  # node "0" has an empty block
    program = sized_program(plan_allgather(p, method=method, nbytes=1).program(), sizes)
    blocks = {v: np.full(sizes[v], int(v) + 1, dtype=np.uint8) for v in p.ids}
    handlers = {v: GatherHandler(program, v, blocks[v], sizes) for v in p.ids}
    run_serially(program, handlers)
    for h in handlers.values():
        got = h.blocks()
        assert {v: bytes(b) for v, b in got.items()} == {v: bytes(b) for v, b in blocks.items()}


def test_barrier_handler_moves_nothing():
    p = figueira_platform(5, 5, seed=1)
    program = plan_barrier(p, method="eff_cube").program()
    handlers = {v: BarrierHandler(program, v) for v in p.ids}
    run_serially(program, handlers)
    assert all(len(h.state) == 0 for h in handlers.values())


def test_typed_buffer_infers_datatypes_like_mpi4py():
    a = np.arange(6, dtype=np.int64)
    view, count, dt = typed_buffer(a, True, "x")
    assert (len(view), count, dt) == (48, 6, MPI.Datatype.fromcode("l"))
    assert typed_buffer([a, MPI.INT64_T], True, "x")[1:] == (6, MPI.INT64_T)
    assert typed_buffer([a, 2, MPI.INT64_T], True, "x")[1] == 2
    assert typed_buffer([a, "d"], True, "x")[2] == MPI.DOUBLE
    assert typed_buffer(bytearray(3), True, "x")[1:] == (3, MPI.UNSIGNED_CHAR)
    with pytest.raises(HetcollError, match="cannot map the buffer's format"):
        typed_buffer(np.zeros(2, dtype=[("v", "i4"), ("i", "i4")]), True, "Allreduce recvbuf")
    with pytest.raises(HetcollError, match="not a whole number of elements"):
        typed_buffer([bytearray(6), MPI.INT], True, "x")


@pytest.fixture
def solo():
    with HetComm(MPI.COMM_SELF, figueira_platform(1, seed=0), cube_algo="blind") as hc:
        yield hc


def test_single_rank_hypercube_collectives_return_at_once(solo):
    a, out = np.arange(4, dtype=np.int32), np.zeros(4, dtype=np.int32)
    solo.Allreduce(a, out, op=MPI.MAX)
    assert out.tolist() == [0, 1, 2, 3]
    solo.Allreduce(MPI.IN_PLACE, out)
    assert out.tolist() == [0, 1, 2, 3]
    gathered = np.zeros(4, dtype=np.int32)
    solo.Allgather(a, gathered)
    assert gathered.tolist() == [0, 1, 2, 3]
    assert solo.allreduce([1], op=MPI.SUM) == [1]
    assert solo.allgather({"a": 1}) == [{"a": 1}]
    solo.barrier()
    solo.Barrier()


def test_bad_arguments_are_clear(solo):
    a = np.zeros(4, dtype=np.int32)
    with pytest.raises(HetcollError, match="expected an MPI reduction operator"):
        solo.Allreduce(a, a.copy(), op="sum")
    with pytest.raises(HetcollError, match="they must match"):
        solo.Allreduce(np.zeros(4, dtype=np.int64), a)
    with pytest.raises(HetcollError, match="cannot hold 1 blocks of 16"):
        solo.Allgather(a, np.zeros(2, dtype=np.int32))
    with pytest.raises(HetcollError, match="read-only"):
        solo.Allreduce(a, b"\0" * 16)


def test_cube_planner_choice():
    p = figueira_platform(1, seed=0)
    with HetComm(MPI.COMM_SELF, p) as hc:  # the default chooses per call (hetcoll.choice)
        assert (hc.algo, hc.cube_algo) == ("auto", "auto")
    with HetComm(MPI.COMM_SELF, p, "fnf") as hc:
        assert (hc.algo, hc.cube_algo) == ("fnf", "eff_cube")
    with HetComm(MPI.COMM_SELF, p, "mpi") as hc:
        assert (hc.algo, hc.cube_algo) == ("mpi", "mpi")
    with HetComm(MPI.COMM_SELF, p, "eff_cube_ls") as hc:
        assert hc.cube_algo == "eff_cube_ls"
    with HetComm(MPI.COMM_SELF, p, "binomial", cube_algo="tsts_cube") as hc:
        assert hc.cube_algo == "tsts_cube"
    with HetComm(MPI.COMM_SELF, p, "forest") as hc:  # per root: also Reduce_scatter's
        assert (hc.cube_algo, hc.planning.rooted_algo) == ("forest", "rooted_ls")
    with pytest.raises(
        PlannerError, match=r"'fnf' is not a hypercube or per-root planner; choose from: .*forest"
    ):
        HetComm(MPI.COMM_SELF, p, cube_algo="fnf")


def test_buffer_pool_reuses_memory_after_release_only():
    from hetcoll.runtime.reduce import BufferPool

    pool = BufferPool(limit=100)
    a, b = pool.take(40), pool.take(40)
    assert a is not b
    pool.release()
    assert pool.nbytes() == 80
    c = pool.take(40)
    assert c is b or c is a  # reused
    pool.drop()  # after an error: forgotten, never handed out again
    assert all(x is not c for x in (pool.take(40), pool.take(40)))
    pool.release()
    pool.take(90)
    pool.release()  # over the limit: only the last call's size is kept
    assert set(pool.free) == {90}


@pytest.mark.parametrize("method", ["blind", "eff_cube"])
def test_pooled_handlers_give_the_same_results_twice(method):
    from hetcoll.runtime.reduce import BufferPool

    p = figueira_platform(6, 20, seed=2)
    program = plan_allreduce(p, method=method, nbytes=16, op="sum").program()
    pool = BufferPool()
    for _ in range(2):
        values = {v: np.array([int(v), 1], dtype=np.int64) for v in p.ids}
        handlers = {
            v: ReduceHandler(program, v, values[v], MPI.SUM, 2, MPI.INT64_T, pool) for v in p.ids
        }
        run_serially(program, handlers)
        for h in handlers.values():
            assert np.frombuffer(h.state, dtype=np.int64).tolist() == [15, 6]
        pool.release()
