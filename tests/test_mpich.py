"""MPI's own collectives as MPICH runs them (hetcoll.mpich): the selection's thresholds,
programs that are valid and deliver every byte, and simulated times equal to the closed
forms of the algorithms on a homogeneous platform."""

from __future__ import annotations

import math

import pytest

from hetcoll.errors import HetcollError, ScheduleError
from hetcoll.mpich import ALGORITHMS, algorithm, native, predict
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.program import Chunk, Op, Program

T, B = 10e-6, 1e-9  # per message, per byte (tini: the sender pays both)


def homogeneous(p: int) -> Platform:
    return Platform(nodes_from_costs([T] * p, [B] * p), model="tini")


def ids(p: int) -> list[str]:
    return [str(i) for i in range(p)]


@pytest.mark.parametrize(
    ("collective", "ranks", "nbytes", "count", "want"),
    [
        ("bcast", 8, 12288, None, "binomial"),
        ("bcast", 8, 12289, None, "scatter_recursive_doubling_allgather"),
        ("bcast", 8, 524288, None, "scatter_recursive_doubling_allgather"),
        ("bcast", 8, 524289, None, "scatter_ring_allgather"),
        ("bcast", 7, 1 << 30, None, "binomial"),  # fewer than 8 ranks: always binomial
        ("bcast", 12, 12289, None, "scatter_ring_allgather"),  # not a power of two
        ("allreduce", 8, 8, 1, "recursive_doubling"),
        ("allreduce", 8, 16, 2, "recursive_doubling"),  # 2 elements < pof2 = 8
        ("allreduce", 8, 64, 8, "reduce_scatter_allgather"),
        ("allreduce", 6, 32, 4, "reduce_scatter_allgather"),  # pof2(6) = 4
        ("allgather", 8, 65535, None, "recursive_doubling"),  # 8 x 65535 < 524288
        ("allgather", 8, 65536, None, "ring"),
        ("allgather", 6, 13653, None, "brucks"),  # 6 x 13653 < 81920
        ("allgather", 6, 13654, None, "ring"),
        ("barrier", 5, 0, None, "dissemination"),
    ],
)
def test_selection_is_mpich_default(collective, ranks, nbytes, count, want):
    assert algorithm(collective, ranks, nbytes, count=count) == want


def test_user_operators_take_recursive_doubling():
    assert algorithm("allreduce", 8, 1 << 20, count=1 << 17, builtin=False) == "recursive_doubling"


CASES = [
    (coll, algo, p, n)
    for coll, algos in ALGORITHMS.items()
    for algo in algos
    for p in (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16)
    for n in ((0,) if coll == "barrier" else (0, 8, 97, 4096, 100_003 * 8))
    if not (algo in ("scatter_recursive_doubling_allgather",) and p & (p - 1))
    if not (coll == "allgather" and algo == "recursive_doubling" and p & (p - 1))
    if not (algo == "reduce_scatter_allgather" and n // 8 < 1 << (p.bit_length() - 1))
]


@pytest.mark.parametrize(("collective", "algo", "p", "nbytes"), CASES)
def test_programs_are_valid_and_deliver(collective, algo, p, nbytes):
    if collective == "allreduce" and nbytes % 8:
        nbytes -= nbytes % 8  # whole elements
    count = nbytes // 8 if collective == "allreduce" else None
    for root in sorted({0, p - 1, p // 2}) if collective == "bcast" else (0,):
        nat = native(collective, ids(p), nbytes, root=root, count=count, algorithm=algo)
        assert nat.algorithm == algo
        nat.program.validate()  # matching, no deadlock, nothing sent before it is held
        if nat.kind == "bytes" and collective == "bcast":
            for node in ids(p):
                assert _held(nat.program, node) >= nbytes, (node, root)
        if nat.kind == "bytes" and collective == "allgather":
            for node in ids(p):
                assert _held(nat.program, node) >= p * nbytes


def _held(program: Program, node: str) -> int:
    """How far from byte 0 a rank holds every byte at the end (initial + received)."""
    spans = [program.chunks[c] for c in program.initial.get(node, ())]
    spans += [program.chunks[op.chunk] for op in program.ops[node] if op.kind != "send"]
    at = 0
    for c in sorted(spans, key=lambda c: c.offset):
        if c.offset > at:
            break
        at = max(at, c.offset + c.nbytes)
    return at


@pytest.mark.parametrize("p", [2, 3, 5, 8, 9, 16])
def test_binomial_time_is_ceil_log2_steps(p):
    n = 1000
    nat = native("bcast", ids(p), n, root=p // 2)
    assert nat.algorithm == "binomial"
    steps = math.ceil(math.log2(p))
    assert predict(homogeneous(p), nat.program) == pytest.approx(steps * (T + n * B), rel=1e-12)


@pytest.mark.parametrize("p", [2, 3, 5, 8, 13])
def test_dissemination_time_and_messages(p):
    nat = native("barrier", ids(p), 0)
    steps = math.ceil(math.log2(p))
    sends = sum(op.kind == "send" for ops in nat.program.ops.values() for op in ops)
    assert sends == p * steps
    assert predict(homogeneous(p), nat.program) == pytest.approx(steps * T, rel=1e-12)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_rabenseifner_time_halves_each_step(p):
    n = 8 * 1024 * p  # divisible by every block count
    nat = native("allreduce", ids(p), n, count=n // 8)
    assert nat.algorithm == "reduce_scatter_allgather"
    k = int(math.log2(p))
    want = 2 * sum(T + n / 2**j * B for j in range(1, k + 1))
    assert predict(homogeneous(p), nat.program) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("p", [3, 5, 6, 7])
def test_rabenseifner_folds_the_even_ranks_first(p):
    rem = p - (1 << (p.bit_length() - 1))
    n = 8 * 64
    ops = native("allreduce", ids(p), n, count=64).program.ops
    for k in range(rem):
        even, odd = str(2 * k), str(2 * k + 1)
        assert ops[even][0] == Op("send", odd, ops[even][0].chunk)
        assert ops[even][-1].kind == "recv" and ops[even][-1].peer == odd
        assert len(ops[even]) == 2
        assert ops[odd][0].kind == "recv_reduce" and ops[odd][0].peer == even


@pytest.mark.parametrize("p", [8, 9, 12])
def test_scatter_ring_moves_mpich_bytes(p):
    """Scatter: relative rank k's subtree's blocks, one message; ring: P - 1 steps of one
    block each way per rank (MPICH sends empty blocks too)."""
    n = 1 << 20
    nat = native("bcast", ids(p), n, root=1, algorithm="scatter_ring_allgather")
    size = -(-n // p)
    sends = [(r, op) for r, ops in nat.program.ops.items() for op in ops if op.kind == "send"]
    ring = [(r, op) for r, op in sends if int(op.peer) == (int(r) + 1) % p]
    assert len(ring) >= p * (p - 1)
    for _, op in ring[-p * (p - 1) :]:
        assert nat.program.chunks[op.chunk].nbytes <= size
    root_sends = [nat.program.chunks[op.chunk] for op in nat.program.ops["1"] if op.kind == "send"]
    mask = 1 << (p - 1).bit_length() - 1
    first = root_sends[0]  # the biggest subtree first: relative ranks mask .. P - 1
    assert (first.offset, first.nbytes) == (mask * size, n - mask * size)


def test_predicted_bcast_is_mpich_shape_on_heterogeneous_platform():
    """The model sees the rank order: a slow root sends ceil(log2 P) slow messages."""
    p = Platform(nodes_from_costs([5e-4, 1e-4, 1e-4, 1e-4]), model="tini")
    nat = native("bcast", list(p.ids), 0, root=0)
    assert predict(p, nat.program) == pytest.approx(5e-4 + 5e-4)  # root's two sends


def test_bad_requests_are_one_line_errors():
    with pytest.raises(HetcollError, match="root"):
        native("bcast", ids(4), 10, root=4)
    with pytest.raises(HetcollError, match="collective"):
        native("gather", ids(4), 10)
    with pytest.raises(HetcollError, match="power of two"):
        native("bcast", ids(6), 1 << 20, algorithm="scatter_recursive_doubling_allgather")
    with pytest.raises(HetcollError, match="algorithms here"):
        native("barrier", ids(4), 0, algorithm="ring")
    with pytest.raises(HetcollError, match="count"):
        native("allreduce", ids(4), 10, count=3)


def test_forwarding_bytes_not_held_is_refused():
    """The byte-coverage rule of validation: forwarding part of a range needs all of it."""
    chunks = (Chunk(0, 0, 100), Chunk(0, 0, 60), Chunk(0, 40, 30), Chunk(0, 0, 100))
    ops = {
        "a": (Op("send", "b", 1),),
        "b": (Op("recv", "a", 1), Op("send", "c", 2, (0,))),  # bytes 40-70, holds 0-60
        "c": (Op("recv", "b", 2),),
    }
    with pytest.raises(ScheduleError, match="before it holds it"):
        Program(ops, chunks, {"a": frozenset({3})}).validate()
    ok = dict(ops, b=(Op("recv", "a", 1), Op("send", "c", 2, (0,))))
    chunks_ok = (Chunk(0, 0, 100), Chunk(0, 0, 80), Chunk(0, 40, 30), Chunk(0, 0, 100))
    Program(ok, chunks_ok, {"a": frozenset({3})}).validate()


# -- the bandwidth baselines' closed forms (allgather, allreduce) ---------------------------------


def hockney(p: int) -> Platform:
    """Homogeneous Hockney: every pair ``T + n B``, one-port bidirectional."""
    import numpy as np

    lat = np.full((p, p), T)
    np.fill_diagonal(lat, 0.0)
    return Platform(
        nodes_from_costs([0.0] * p), latency=lat, bandwidth=np.full((p, p), 1 / B), model="hockney"
    )


@pytest.mark.parametrize("platform", [homogeneous, hockney])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_ring_allreduce_is_two_rings_of_chunks(platform, p):
    """MPIR_Allreduce_intra_ring: 2 (P - 1) steps of one chunk of ceil(count / P)."""
    n = 8 * 1000 * p
    nat = native("allreduce", ids(p), n, count=n // 8, algorithm="ring")
    assert nat.algorithm == "ring" and nat.kind == "ranges"
    want = 2 * (p - 1) * (T + n / p * B)
    assert predict(platform(p), nat.program) == pytest.approx(want, rel=1e-12)


def test_ring_allreduce_chunks_are_mpich_ceilings():
    """count 10 on 4 ranks: chunks of 3, 3, 3, 1 elements (MPICH's ceil, the last shorter)."""
    nat = native("allreduce", ids(4), 80, count=10, algorithm="ring")
    sizes = {c.nbytes for c in nat.program.chunks[:-4]}
    assert sizes == {24, 8}
    nat = native("allreduce", ids(4), 16, count=2, algorithm="ring")  # empty chunks too
    nat.program.validate()


@pytest.mark.parametrize("platform", [homogeneous, hockney])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_ring_allgather_closed_form(platform, p):
    m = 4096
    nat = native("allgather", ids(p), m, algorithm="ring")
    assert predict(platform(p), nat.program) == pytest.approx((p - 1) * (T + m * B), rel=1e-12)


@pytest.mark.parametrize("platform", [homogeneous, hockney])
@pytest.mark.parametrize("p", [2, 3, 5, 6, 8])
def test_brucks_allgather_closed_form(platform, p):
    """ceil(log2 P) steps, step k carrying min(2^k, P - 2^k) blocks in one message."""
    m = 4096
    nat = native("allgather", ids(p), m, algorithm="brucks")
    steps = [min(1 << k, p - (1 << k)) for k in range(math.ceil(math.log2(p)))]
    want = sum(T + s * m * B for s in steps)
    assert predict(platform(p), nat.program) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("platform", [homogeneous, hockney])
@pytest.mark.parametrize("p", [2, 4, 8])
def test_recursive_doubling_allgather_closed_form(platform, p):
    """log2 P steps, step k exchanging 2^k blocks: log2 P T + (P - 1) m B."""
    m = 4096
    nat = native("allgather", ids(p), m, algorithm="recursive_doubling")
    want = int(math.log2(p)) * T + (p - 1) * m * B
    assert predict(platform(p), nat.program) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_rabenseifner_closed_form_under_hockney(p):
    n = 8 * 1024 * p
    nat = native("allreduce", ids(p), n, count=n // 8, algorithm="reduce_scatter_allgather")
    k = int(math.log2(p))
    want = 2 * k * T + 2 * (p - 1) / p * n * B
    assert predict(hockney(p), nat.program) == pytest.approx(want, rel=1e-12)
