"""MPI's own collectives as MPICH runs them, as programs hetcoll simulates and executes.

``auto`` compares hetcoll's plans with passing a call through to MPI; to predict what MPI
costs on a platform, this module writes down the algorithm MPICH picks for the call and
lowers it to a :class:`~hetcoll.schedule.Program` (the per-rank ops the simulator and the
engine both run).  Under emulation the same program, run through the engine, is the
emulated MPI baseline: MPI's algorithm paying the platform's costs.

The selection is MPICH's default for an intra-communicator (``maint/tuning/coll/mpir/
generic.json`` of MPICH 4.1-5.0, the rules used when no tuning file or control variable
says otherwise; ``nbytes`` is the message of one rank):

- **Bcast**: ``binomial`` with fewer than 8 ranks or up to 12288 B; else, for a power of
  two of ranks and up to 524288 B, ``scatter_recursive_doubling_allgather``; otherwise
  ``scatter_ring_allgather``.
- **Allreduce**: ``recursive_doubling`` up to 8 B, for a user-defined operator, or with
  fewer elements than the largest power of two <= ranks; otherwise
  ``reduce_scatter_allgather`` (Rabenseifner).  ``ring`` (reduce-scatter ring, then
  allgather ring) is lowered too, for a forced algorithm (never MPICH's default choice).
- **Allgather**: ``recursive_doubling`` for a power of two of ranks and ranks x nbytes
  < 524288; else ``brucks`` below 81920 B in all; otherwise ``ring``.
- **Barrier**: ``dissemination``.

Each program follows MPICH's C loops (``src/mpi/coll/<collective>/*_intra_*.c``) message
for message: the same peers, byte ranges and order; a ``MPIC_Sendrecv`` is a send and a
receive that both wait for the previous step's send and receive.  Chunks are byte ranges
of the call's buffer (the receive buffer of an allgather, the vector of an allreduce); a
rank that receives a range holds every byte of it, and a rank holds every empty range
from the start (MPI sends empty messages too).  Where MPICH's algorithm is a hypercube
(recursive doubling: the ranks beyond the largest power of two fold into their odd
neighbours), the program is :meth:`~hetcoll.schedule.Hypercube.program`'s and
:func:`native` also gives the :class:`~hetcoll.schedule.Schedule`.

What is not modelled: MPICH's shared-memory and multi-node (``smp``) compositions, which
it uses on hierarchical communicators and for some calls on one host; those make MPI
faster than any program here predicts, which is why ``auto`` keeps a margin and why
``hetcoll tune`` measures instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import HetcollError
from .patterns import Flow, Hypercube, Tree
from .program import Chunk, Op, Program
from .schedule import Schedule

__all__ = [
    "ALGORITHMS",
    "BCAST_LONG",
    "BCAST_MIN_PROCS",
    "BCAST_SHORT",
    "COLLECTIVES",
    "Native",
    "algorithm",
    "native",
    "predict",
]

COLLECTIVES = ("bcast", "allreduce", "allgather", "barrier")
#: MPICH's thresholds (bytes, ranks) from its default selection (module doc)
BCAST_SHORT = 12288
BCAST_LONG = 524288
BCAST_MIN_PROCS = 8
ALLREDUCE_SHORT = 8
ALLGATHER_LONG = 524288
ALLGATHER_SHORT = 81920


def _pof2(n: int) -> int:
    """The largest power of two <= ``n`` (MPICH's ``MPL_pof2``)."""
    return 1 << (n.bit_length() - 1) if n > 0 else 0


def algorithm(
    collective: str,
    ranks: int,
    nbytes: int,
    *,
    count: int | None = None,
    builtin: bool = True,
) -> str:
    """The algorithm MPICH's default selection runs for a call (table in the module doc).

    ``nbytes``: one rank's message (a broadcast's buffer, an allreduce's vector, an
    allgather's block); ``count``: an allreduce's elements (default ``nbytes``);
    ``builtin``: whether an allreduce's operator is predefined.

    Examples
    --------
    >>> algorithm("bcast", 8, 12288), algorithm("bcast", 8, 12289), algorithm("bcast", 6, 1 << 20)
    ('binomial', 'scatter_recursive_doubling_allgather', 'binomial')
    >>> algorithm("allreduce", 8, 8 << 20, count=1 << 20)
    'reduce_scatter_allgather'
    """
    if collective == "bcast":
        if ranks < BCAST_MIN_PROCS or nbytes <= BCAST_SHORT:
            return "binomial"
        if ranks == _pof2(ranks) and nbytes <= BCAST_LONG:
            return "scatter_recursive_doubling_allgather"
        return "scatter_ring_allgather"
    if collective == "allreduce":
        count = nbytes if count is None else count
        if nbytes <= ALLREDUCE_SHORT or not builtin or count < _pof2(ranks):
            return "recursive_doubling"
        return "reduce_scatter_allgather"
    if collective == "allgather":
        total = ranks * nbytes
        if ranks == _pof2(ranks) and total < ALLGATHER_LONG:
            return "recursive_doubling"
        if total < ALLGATHER_SHORT:
            return "brucks"
        return "ring"
    if collective == "barrier":
        return "dissemination"
    raise HetcollError(f"collective: expected one of {', '.join(COLLECTIVES)}, got {collective!r}")


@dataclass(frozen=True)
class Native:
    """MPI's own collective for one call: MPICH's ``algorithm``, its per-rank ``program``,
    and the same as a ``schedule`` where one expresses it (a tree, a hypercube), else None.

    ``kind`` says how a rank's bytes map to the program's chunks: ``"bytes"`` (byte ranges
    of the call's buffer), ``"cube"`` (hypercube states), ``"ranges"`` (byte ranges of an
    allreduce's vector, reduced where the program says ``recv_reduce``) or ``"model"``
    (a prediction only: the messages are MPICH's, the chunks not the call's bytes).
    """

    collective: str
    algorithm: str
    nbytes: int
    program: Program
    kind: str
    schedule: Schedule | None = None


def native(
    collective: str,
    nodes: Sequence[str],
    nbytes: int,
    *,
    root: int = 0,
    count: int | None = None,
    builtin: bool = True,
    op: str = "sum",
    algorithm: str | None = None,
) -> Native:
    """MPICH's algorithm for a call on ranks ``nodes`` (node ids in rank order), lowered.

    ``root``: a broadcast's root rank; ``count``: an allreduce's elements (``nbytes`` a
    multiple of it); ``builtin``: a predefined allreduce operator; ``op``: its name (the
    hypercube's ``combine``); ``algorithm``: another of MPICH's algorithms for the
    collective than its selection's (as its ``MPIR_CVAR_<COLL>_INTRA_ALGORITHM`` forces
    one).  O(P log P) ops for P ranks (O(P^2) for a ring).

    Examples
    --------
    >>> n = native("bcast", ["a", "b", "c", "d"], 100)
    >>> n.algorithm, n.program.ops["a"]
    ('binomial', (Op(kind='send', peer='c', chunk=0, deps=(), result=None), \
Op(kind='send', peer='b', chunk=0, deps=(), result=None)))
    """
    nodes = [str(x) for x in nodes]
    p = len(nodes)
    if p < 1 or len(set(nodes)) != p:
        raise HetcollError(f"nodes: expected distinct node ids, one per rank, got {nodes!r}")
    if not 0 <= root < p:
        raise HetcollError(f"root: rank {root} is not in 0..{p - 1}")
    count = nbytes if count is None else int(count)
    if count < 0 or (count and nbytes % count) or (nbytes and not count):
        raise HetcollError(f"count: {count} elements cannot make {nbytes} bytes")
    name = _algorithm(collective, p, nbytes, count, builtin, algorithm)
    if collective == "bcast":
        if name == "binomial":
            sched = _binomial(nodes, nbytes, root)
            return Native(collective, name, nbytes, sched.program(), "bytes", sched)
        b = _Builder(nodes)
        done = _scatter_for_bcast(b, nbytes, root)
        if name == "scatter_ring_allgather":
            _ring_after_scatter(b, nbytes, root, done)
        else:
            _doubling_after_scatter(b, nbytes, root, done)
        return Native(collective, name, nbytes, b.program({nodes[root]: (0, nbytes)}), "bytes")
    if collective == "barrier":
        return Native(collective, name, 0, _dissemination(nodes), "bytes")
    if collective == "allreduce":
        if name == "recursive_doubling":
            sched = _doubling_cube(nodes, "allreduce", nbytes, op)
            return Native(collective, name, nbytes, sched.program(), "cube", sched)
        itemsize = nbytes // count if count else 1
        if name == "ring":
            return Native(
                collective, name, nbytes, _ring_allreduce(nodes, count, itemsize), "ranges"
            )
        prog = _reduce_scatter_allgather(nodes, count, itemsize)
        return Native(collective, name, nbytes, prog, "ranges")
    if collective == "allgather":
        if name == "recursive_doubling":
            sched = _doubling_cube(nodes, "allgather", nbytes, "concat")
            return Native(collective, name, nbytes, sched.program(), "cube", sched)
        if name == "ring":
            return Native(collective, name, nbytes, _ring_allgather(nodes, nbytes), "bytes")
        return Native(collective, name, nbytes, _brucks(nodes, nbytes), "model")
    raise HetcollError(f"collective: expected one of {', '.join(COLLECTIVES)}, got {collective!r}")


#: every algorithm of each collective that :func:`native` lowers
ALGORITHMS = {
    "bcast": ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather"),
    "allreduce": ("recursive_doubling", "reduce_scatter_allgather", "ring"),
    "allgather": ("recursive_doubling", "brucks", "ring"),
    "barrier": ("dissemination",),
}


def _algorithm(collective, ranks, nbytes, count, builtin, forced) -> str:
    name = algorithm(collective, ranks, nbytes, count=count, builtin=builtin)
    if forced is None:
        return name
    if forced not in ALGORITHMS[collective]:
        raise HetcollError(
            f"algorithm: MPICH's {collective} algorithms here are "
            + ", ".join(ALGORITHMS[collective])
            + f"; got {forced!r}"
        )
    pof2 = ranks == _pof2(ranks)
    if forced == "scatter_recursive_doubling_allgather" and not pof2:
        raise HetcollError(f"algorithm: {forced} needs a power of two of ranks, got {ranks}")
    if forced == "reduce_scatter_allgather" and (count < _pof2(ranks) or not builtin):
        raise HetcollError(
            f"algorithm: {forced} needs at least {_pof2(ranks)} elements and a predefined operator"
        )
    if collective == "allgather" and forced == "recursive_doubling" and not pof2:
        raise HetcollError(f"algorithm: {forced} needs a power of two of ranks, got {ranks}")
    return forced


def predict(platform: Any, program: Program, model: Any = None) -> float:
    """The simulator's time (seconds) of ``program`` on ``platform``: when its last op
    completes (0 for a program with no ops)."""
    from .models import get_model
    from .simulator import simulate_program

    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    _, done = simulate_program(bound, program)
    return max((max(t) for t in done.values() if t), default=0.0)


# -- building programs -------------------------------------------------------------------------


class _Builder:
    """Per-rank op lists over byte-range chunks, one chunk per message."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self.nodes = list(nodes)
        self.ops: list[list[Op]] = [[] for _ in nodes]
        self.chunks: list[Chunk] = []

    def chunk(self, offset: int, nbytes: int) -> int:
        self.chunks.append(Chunk(0, offset, max(nbytes, 0)))
        return len(self.chunks) - 1

    def add(self, rank: int, kind: str, peer: int, chunk: int, deps: Sequence[int]) -> int:
        self.ops[rank].append(Op(kind, self.nodes[peer], chunk, tuple(sorted(set(deps)))))
        return len(self.ops[rank]) - 1

    def message(
        self,
        src: int,
        dst: int,
        offset: int,
        nbytes: int,
        after_src,
        after_dst,
        *,
        reduce: bool = False,
    ) -> tuple[int, int]:
        """One message of ``nbytes`` at ``offset``: the send's and the receive's op index."""
        c = self.chunk(offset, nbytes)
        s = self.add(src, "send", dst, c, after_src)
        r = self.add(dst, "recv_reduce" if reduce else "recv", src, c, after_dst)
        return s, r

    def program(self, holds: dict[str, tuple[int, int]] | None = None) -> Program:
        """The program; ``holds[node] = (offset, nbytes)``: the range a rank starts with
        (every rank also holds every empty chunk: an empty message carries nothing)."""
        holds = holds or {}
        empty = frozenset(i for i, c in enumerate(self.chunks) if c.nbytes == 0)
        chunks = list(self.chunks)
        initial = {}
        for node in self.nodes:
            held = set(empty)
            if node in holds:
                chunks.append(Chunk(0, *holds[node]))
                held.add(len(chunks) - 1)
            initial[node] = frozenset(held)
        ops = {node: tuple(mine) for node, mine in zip(self.nodes, self.ops, strict=True)}
        return Program(ops, tuple(chunks), initial)


def _binomial(nodes: Sequence[str], nbytes: int, root: int) -> Schedule:
    """``MPIR_Bcast_intra_binomial``: hetcoll's ``binomial`` tree over the ranks, rotated."""
    from .planners.classic import binomial_edges

    p = len(nodes)
    rel = [nodes[(root + r) % p] for r in range(p)]
    tree = Tree.from_edges(rel[0], [(rel[a], rel[b]) for a, b in binomial_edges(p)])
    return Schedule("bcast", "mpi", nbytes, (Flow(tree, nbytes),))


def _scatter_for_bcast(b: _Builder, nbytes: int, root: int) -> list[list[int]]:
    """``MPII_Scatter_for_bcast``: a binomial scatter of ``ceil(nbytes / P)``-byte blocks
    (block ``k`` to relative rank ``k``; a subtree's blocks travel as one message).  Per
    rank, the ops the allgather that follows waits for."""
    p = len(b.nodes)
    size = -(-nbytes // p)
    curr = [0] * p
    curr[0] = nbytes
    got: list[int | None] = [None] * p  # relative rank -> its receive op
    done: list[list[int]] = [[] for _ in range(p)]
    for rel in range(p):
        rank = (rel + root) % p
        mask = 1
        while mask < p and not rel & mask:
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < p:
                send = curr[rel] - size * mask
                if send > 0:
                    dst = (rank + mask) % p
                    after = [] if got[rel] is None else [got[rel]]
                    s, r = b.message(rank, dst, size * (rel + mask), send, after, [])
                    done[rank].append(s)
                    got[rel + mask] = r
                    curr[rel + mask] = send
                    curr[rel] -= send
            mask >>= 1
        if got[rel] is not None:
            done[rank].append(got[rel])
    return done


def _block(nbytes: int, size: int, k: int) -> tuple[int, int]:
    """Block ``k``'s ``(offset, nbytes)`` (empty past the end)."""
    return k * size, max(0, min(size, nbytes - k * size))


def _ring_after_scatter(b: _Builder, nbytes: int, root: int, done: list[list[int]]) -> None:
    """``MPIR_Bcast_intra_scatter_ring_allgather``'s ring: at step ``i`` rank ``r`` sends
    block ``r - i + 1`` (relative to the root) to ``r + 1`` and receives block ``r - i``
    from ``r - 1``, one ``MPIC_Sendrecv`` per step."""
    p = len(b.nodes)
    size = -(-nbytes // p)
    after = [list(d) for d in done]
    for i in range(1, p):
        step: list[list[int]] = [[] for _ in range(p)]
        for rank in range(p):
            j = (rank - i + 1) % p
            right = (rank + 1) % p
            s, r = b.message(
                rank, right, *_block(nbytes, size, (j - root) % p), after[rank], after[right]
            )
            step[rank].append(s)
            step[right].append(r)
        after = step


def _doubling_after_scatter(b: _Builder, nbytes: int, root: int, done: list[list[int]]) -> None:
    """``MPIR_Bcast_intra_scatter_recursive_doubling_allgather``'s allgather (a power of
    two of ranks): at step ``i`` relative ranks ``r`` and ``r ^ 2**i`` swap the blocks of
    their subtrees, ``[root(r) * size, + held)``."""
    p = len(b.nodes)
    size = -(-nbytes // p)
    held = [_block(nbytes, size, rel)[1] for rel in range(p)]
    after = [list(d) for d in done]
    mask, i = 1, 0
    while mask < p:
        step: list[list[int]] = [[] for _ in range(p)]
        for rel in range(p):
            dst = rel ^ mask
            mine = (rel >> i) << i
            s, r = b.message(
                (rel + root) % p,
                (dst + root) % p,
                mine * size,
                held[rel],
                after[(rel + root) % p],
                after[(dst + root) % p],
            )
            step[(rel + root) % p].append(s)
            step[(dst + root) % p].append(r)
        held = [held[rel] + held[rel ^ mask] for rel in range(p)]
        after = step
        mask, i = mask << 1, i + 1


def _dissemination(nodes: Sequence[str]) -> Program:
    """``MPIR_Barrier_intra_dissemination``: at step ``k`` rank ``r`` sends an empty
    message to ``r + 2**k`` and receives one from ``r - 2**k``."""
    b = _Builder(nodes)
    p = len(nodes)
    after: list[list[int]] = [[] for _ in range(p)]
    mask = 1
    while mask < p:
        step: list[list[int]] = [[] for _ in range(p)]
        for rank in range(p):
            dst = (rank + mask) % p
            s, r = b.message(rank, dst, 0, 0, after[rank], after[dst])
            step[rank].append(s)
            step[dst].append(r)
        after = step
        mask <<= 1
    return b.program()


def _real(newrank: int, rem: int) -> int:
    """The rank at position ``newrank`` of MPICH's power-of-two group (odd ranks below
    ``2 rem`` stand for their even neighbour too)."""
    return newrank * 2 + 1 if newrank < rem else newrank + rem


def _doubling_cube(nodes: Sequence[str], collective: str, nbytes: int, combine: str) -> Schedule:
    """Recursive doubling as MPICH folds it: even ranks below ``2 rem`` hand their data to
    the next rank first and get the result last; the rest form a hypercube."""
    p = len(nodes)
    pof2 = _pof2(p)
    rem = p - pof2
    positions = [nodes[_real(k, rem)] for k in range(pof2)]
    folds = [(nodes[2 * k], nodes[2 * k + 1]) for k in range(rem)]
    if collective == "allgather" and folds:
        raise HetcollError("MPICH's recursive-doubling allgather needs a power of two of ranks")
    cube = Hypercube(positions, folds, combine)
    return Schedule(collective, "mpi", nbytes, (), hypercube=cube)


def _reduce_scatter_allgather(nodes: Sequence[str], count: int, itemsize: int) -> Program:
    """``MPIR_Allreduce_intra_reduce_scatter_allgather`` (Rabenseifner): the fold of
    :func:`_doubling_cube`, a reduce-scatter by recursive halving (each step sends away
    half of the range still held and reduces the other half received), an allgather by
    recursive doubling back, the fold undone."""
    p = len(nodes)
    pof2 = _pof2(p)
    rem = p - pof2
    b = _Builder(nodes)
    nbytes = count * itemsize
    cnts = [count // pof2 + (1 if i < count % pof2 else 0) for i in range(pof2)]
    disps = [sum(cnts[:i]) for i in range(pof2 + 1)]

    def span(lo: int, hi: int) -> tuple[int, int]:
        return disps[lo] * itemsize, (disps[hi] - disps[lo]) * itemsize

    after: list[list[int]] = [[] for _ in range(p)]
    for k in range(rem):  # even 2k hands its vector to 2k + 1
        s, r = b.message(2 * k, 2 * k + 1, 0, nbytes, [], [], reduce=True)
        after[2 * k], after[2 * k + 1] = [s], [r]
    # per position: [send_idx, recv_idx, last_idx] as MPICH's loop keeps them
    state = [[0, 0, pof2] for _ in range(pof2)]
    mask = 1
    while mask < pof2:
        step: list[list[int]] = [[] for _ in range(p)]
        plans = []
        for me in range(pof2):
            send_idx, recv_idx, last_idx = state[me]
            if me < me ^ mask:
                send_idx = recv_idx + pof2 // (mask * 2)
                give, take = (send_idx, last_idx), (recv_idx, send_idx)
            else:
                recv_idx = send_idx + pof2 // (mask * 2)
                give, take = (send_idx, recv_idx), (recv_idx, last_idx)
            plans.append((give, take))
            state[me] = [recv_idx, recv_idx, last_idx]  # send_idx = recv_idx afterwards
        for me in range(pof2):
            you = me ^ mask
            src, dst = _real(me, rem), _real(you, rem)
            s, r = b.message(src, dst, *span(*plans[me][0]), after[src], after[dst], reduce=True)
            step[src].append(s)
            step[dst].append(r)
        after = [step[r] or after[r] for r in range(p)]
        mask <<= 1
        if mask < pof2:
            for me in range(pof2):
                state[me][2] = state[me][1] + pof2 // mask
    mask >>= 1
    while mask > 0:
        step = [[] for _ in range(p)]
        plans = []
        for me in range(pof2):
            send_idx, recv_idx, last_idx = state[me]
            if me < me ^ mask:
                if mask != pof2 // 2:
                    last_idx += pof2 // (mask * 2)
                recv_idx = send_idx + pof2 // (mask * 2)
                give = (send_idx, recv_idx)
            else:
                recv_idx = send_idx - pof2 // (mask * 2)
                give = (send_idx, last_idx)
            plans.append(give)
            state[me] = [recv_idx if me > me ^ mask else send_idx, recv_idx, last_idx]
        for me in range(pof2):
            src, dst = _real(me, rem), _real(me ^ mask, rem)
            s, r = b.message(src, dst, *span(*plans[me]), after[src], after[dst])
            step[src].append(s)
            step[dst].append(r)
        after = [step[r] or after[r] for r in range(p)]
        mask >>= 1
    for k in range(rem):  # the result back to the even ranks
        b.message(2 * k + 1, 2 * k, 0, nbytes, after[2 * k + 1], after[2 * k])
    holds = {node: (0, nbytes) for node in nodes}
    return b.program(holds)


def _ring_allreduce(nodes: Sequence[str], count: int, itemsize: int) -> Program:
    """``MPIR_Allreduce_intra_ring``: the vector in ``P`` chunks of ``ceil(count / P)``
    elements (the last ones shorter, possibly empty); a reduce-scatter ring (at step ``i``
    rank ``r`` sends chunk ``r - 1 - i`` to ``r + 1`` and reduces chunk ``r - 2 - i``
    received from ``r - 1`` into its own, one ``Isend``/``Irecv``/``Waitall`` per step),
    after which rank ``r`` holds chunk ``r`` reduced; then ``MPIR_Allgatherv_intra_ring``
    in place (at step ``i`` rank ``r`` sends chunk ``r - i`` and receives chunk ``r - i -
    1``).  On a homogeneous platform: ``2 (P - 1)`` steps of one chunk each."""
    b = _Builder(nodes)
    p = len(nodes)
    chunk = -(-count // p)
    cnts, total = [], 0
    for _ in range(p):
        c = min(chunk, count - total)
        cnts.append(c)
        total += c
    displs = [sum(cnts[:i]) for i in range(p)]

    def span(k: int) -> tuple[int, int]:
        return displs[k] * itemsize, cnts[k] * itemsize

    after: list[list[int]] = [[] for _ in range(p)]
    for reduce in (True, False):
        for i in range(p - 1):
            step: list[list[int]] = [[] for _ in range(p)]
            for rank in range(p):
                right = (rank + 1) % p
                k = (rank - 1 - i) % p if reduce else (rank - i) % p
                s, r = b.message(rank, right, *span(k), after[rank], after[right], reduce=reduce)
                step[rank].append(s)
                step[right].append(r)
            after = step
    nbytes = count * itemsize
    return b.program({node: (0, nbytes) for node in nodes})


def _ring_allgather(nodes: Sequence[str], nbytes: int) -> Program:
    """``MPIR_Allgather_intra_ring``: at step ``i`` rank ``r`` sends block ``r - i`` to
    ``r + 1`` and receives block ``r - i - 1`` from ``r - 1`` (block ``k`` at ``k *
    nbytes`` of the receive buffer)."""
    b = _Builder(nodes)
    p = len(nodes)
    after: list[list[int]] = [[] for _ in range(p)]
    for i in range(p - 1):
        step: list[list[int]] = [[] for _ in range(p)]
        for rank in range(p):
            right = (rank + 1) % p
            j = (rank - i) % p
            s, r = b.message(rank, right, j * nbytes, nbytes, after[rank], after[right])
            step[rank].append(s)
            step[right].append(r)
        after = step
    return b.program({node: (k * nbytes, nbytes) for k, node in enumerate(nodes)})


def _brucks(nodes: Sequence[str], nbytes: int) -> Program:
    """``MPIR_Allgather_intra_brucks``'s messages: at step ``k`` rank ``r`` sends the
    ``min(2**k, P - 2**k)`` blocks it holds to ``r - 2**k`` and receives as many from
    ``r + 2**k``.  MPICH keeps the blocks rotated (its own first) in a scratch buffer, so
    a message's bytes sit at different offsets at its two ends, which a chunk (one byte
    range) cannot say: this program has the right peers, sizes and order for a prediction,
    but its chunks are not the call's bytes (:attr:`Native.kind` ``"model"``)."""
    b = _Builder(nodes)
    p = len(nodes)
    after: list[list[int]] = [[] for _ in range(p)]
    pof2 = 1
    while pof2 < p:
        blocks = min(pof2, p - pof2)
        step: list[list[int]] = [[] for _ in range(p)]
        for rank in range(p):
            dst = (rank - pof2) % p
            s, r = b.message(rank, dst, 0, blocks * nbytes, after[rank], after[dst])
            step[rank].append(s)
            step[dst].append(r)
        after = step
        pof2 *= 2
    return b.program({node: (0, p * nbytes) for node in nodes})
