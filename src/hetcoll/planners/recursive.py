"""MPICH's logarithmic-step allgather, reduce-scatter and allreduce in per-root form:
Bruck's allgather (``bruck``), the reduce-scatter by recursive halving (``halving``) and
Rabenseifner's allreduce, recursive halving then recursive doubling (``rabenseifner``)
(Bruck et al. 1997; Thakur, Rabenseifner & Gropp 2005, Sec. 4; MPICH's
``allgather_intra_brucks.c``, ``reduce_scatter_intra_recursive_halving.c``,
``allreduce_intra_reduce_scatter_allgather.c``).  Baselines beside ``ring`` and
``forest``: blind to unequal links, in rank order.  (MPICH's binomial reduce then
broadcast is ``binomial`` planning an allreduce: its tree run backwards, then forwards.)

Each member's block (an allreduce's share of the vector) moves over a tree of its own
(:mod:`hetcoll.perroot`) whose edges are the algorithm's messages (relayed along the
shortest path where the model has no link between the two ranks); the schedule's
``order`` gives every send the slot ``step * N + sender``, the same for every block a
step sends to one peer, so the blocks of one step go as one message where their bytes
follow each other (:func:`hetcoll.perroot.check_per_root_order`).

- **Bruck** (any ``N``): at step ``k`` rank ``r`` sends the ``min(2**k, N - 2**k)`` blocks
  it holds, ``r, r + 1, ...``, to ``r - 2**k``: block ``b`` reaches the rank ``d`` below it
  from the rank ``d - 2**floor(log2 d)`` below it.  ``ceil(log2 N)`` steps, ``(N - 1) m``
  bytes sent per rank.  MPICH rotates the blocks through a scratch buffer so that each
  step is one message; here the blocks keep their places in the result, and a step whose
  blocks wrap past the last rank's is two messages (the first ranks' blocks, then the
  last ones').
- **Recursive halving** (``P = 2**floor(log2 N)``, ``rem = N - P``): the even ranks below
  ``2 rem`` first send their vector but their own block to the next rank and get their
  block's result from it at the end (the fold of Sec. 4; two messages where the own block
  splits the vector); the ``P`` others, at cube positions ``i`` (rank ``2i + 1`` below
  ``2 rem``, else ``i + rem``), exchange at steps ``mask = P/2, ..., 1`` with position
  ``i ^ mask`` the half of their range that the partner keeps, and reduce what they
  receive.  The partial of a block owned at position ``t`` goes from position ``i`` to
  ``i ^ hb(i ^ t)`` (``hb``: the highest set bit).  MPICH's folded rank sends its own
  block too and gets its result back; a per-root flow combines its owner's part last, so
  here the odd rank holds that block's partial without the even rank's part, and a
  message carrying it to the odd rank with other blocks goes in up to three pieces.
- **Rabenseifner**: the vector in ``P`` near-equal shares, position ``t``'s reduced over
  the halving tree (every even rank below ``2 rem`` sends its whole vector to the next
  rank first), then sent back over the same tree by recursive doubling (``mask = 1, ...,
  P/2``) and to the folded ranks last.

On a homogeneous platform of ``alpha`` per message, ``beta`` per byte and ``gamma`` per
byte combined, with ``N`` a power of two and ``M`` the vector: Rabenseifner's allreduce
takes ``2 log2(N) alpha + 2 (N - 1)/N M beta + (N - 1)/N M gamma``; the halving
reduce-scatter of ``m``-byte blocks ``log2(N) alpha + (N - 1) m (beta + gamma)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import PlannerError
from ..patterns import OrderedSend
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from ._registry import register
from .rings import _blocks, _relayed

__all__ = ["bruck", "halving", "rabenseifner"]


def _pof2(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def _hb(x: int) -> int:
    """The highest set bit of ``x`` > 0."""
    return 1 << (x.bit_length() - 1)


def _members(platform: Platform, root, members, collective, ops, name) -> list[str]:
    if collective not in ops:
        raise PlannerError(f"{name} plans {', '.join(ops)}, not a {collective}")
    ids = list(platform.ids)
    if members is not None and set(members) | ({root} if root else set()) != set(ids):
        raise PlannerError(
            f"{name} plans on every node of the platform: give the members' sub-platform"
        )
    if len(ids) < 2:
        raise PlannerError(f"{name} needs at least two nodes")
    return ids


def _sizes(ids: list[str], nbytes: int, sizes) -> list[int]:
    if sizes is not None and set(sizes) != set(ids):
        raise PlannerError("sizes: give the block of every node")
    return [int(sizes[v]) if sizes is not None else int(nbytes) for v in ids]


def _schedule(platform, model, collective, name, nbytes, flows, sends, sizes) -> Schedule:
    """The schedule of ``flows`` (relayed where the model needs it) with ``sends``:
    ``(slot, sender, flow, peer)``."""
    ids = list(platform.ids)
    flows = _relayed(platform, model, flows, max(f.nbytes for f in flows))
    order: dict[str, list[OrderedSend]] = {v: [] for v in ids}
    for slot, u, fi, v in sorted(sends):
        order[ids[u]].append(OrderedSend(fi, ids[v], 0, slot))
    return Schedule(
        collective,
        name,
        int(nbytes),
        tuple(flows),
        {"trees": len(flows)},
        sizes=sizes,
        order={v: tuple(o) for v, o in order.items() if o},
    )


@register(
    "bruck",
    collectives=("allgather",),
    paper="Bruck et al. 1997 (concatenation); Thakur, Rabenseifner & Gropp 2005, Sec. 4; "
    "MPICH allgather_intra_brucks",
    complexity="O(N^2) sends",
    summary="Bruck's allgather: at step k each rank sends the blocks it holds to the rank "
    "2^k below it, ceil(log2 N) steps, any N",
    kind="forest",
)
def bruck(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allgather",
    sizes: dict[str, int] | None = None,
) -> Schedule:
    """Bruck's allgather of ``nbytes`` per member (or ``sizes``) over every node of
    ``platform`` in platform order (module docstring).  Blocks are sent whole.  O(N^2)
    sends.

    Examples
    --------
    Five ranks: three steps; rank 0 sends 1, 2 and 1 blocks, in 3 messages; rank 4's
    step 1 wraps (blocks 4 and 0: two messages):

    >>> from hetcoll.platform import Node, Platform
    >>> p = Platform(tuple(Node(str(i), 1e-6, 1e-9) for i in range(5)), model="tini")
    >>> s = bruck(p, nbytes=8)
    >>> [(x.slot // 5, x.child, s.flows[x.flow].tree.root) for x in s.order["0"]]
    [(0, '4', '0'), (1, '3', '0'), (1, '3', '1'), (2, '1', '0')]
    >>> [sum(op.kind == "send" for op in ops) for ops in s.program().ops.values()]
    [3, 3, 3, 3, 4]
    """
    ids = _members(platform, root, members, collective, ("allgather",), "bruck")
    if segment_size:
        raise PlannerError("bruck sends whole blocks: no segment_size")
    n = len(ids)
    blocks = _sizes(ids, nbytes, sizes)
    flows, sends = [], []
    for b in range(n):
        kids: dict[str, list[str]] = {}
        for d in range(1, n):  # rank b - d gets block b at step log2 hb(d)
            k = _hb(d).bit_length() - 1
            src, dst = (b - d + _hb(d)) % n, (b - d) % n
            kids.setdefault(ids[src], []).append(ids[dst])
            sends.append((k * n + src, src, b, dst))
        tree = Tree(ids[b], {u: tuple(c) for u, c in kids.items()})
        flows.append(Flow(tree, blocks[b], sum(blocks[:b])))
    return _schedule(platform, model, "allgather", "bruck", nbytes, flows, sends, sizes)


def _cube(n: int) -> tuple[int, int, list[int]]:
    """``(P, rem, real)``: the power of two, the folded ranks' count, and the rank at
    each cube position (MPICH's ``newrank`` undone)."""
    p = _pof2(n)
    rem = n - p
    return p, rem, [2 * i + 1 if i < rem else i + rem for i in range(p)]


def _halving_tree(n: int, t: int, root_rank: int) -> tuple[dict[int, list[int]], list]:
    """The reduce tree of the share owned at cube position ``t`` (its result at rank
    ``root_rank``: the position's rank, or the folded even rank below it): children in
    the order they are combined (the folded rank, then partners from the largest mask
    down), and the sends ``(step, sender, receiver)`` (step 0 the fold, ``1..log2 P``
    the halving, ``log2 P + 1`` the result to a folded rank)."""
    p, rem, real = _cube(n)
    dims = p.bit_length() - 1
    kids: dict[int, list[int]] = {u: [] for u in range(n)}
    sends = []
    for k in range(rem):
        if 2 * k != root_rank:
            kids[2 * k + 1].append(2 * k)
            sends.append((0, 2 * k, 2 * k + 1))
    for step in range(1, dims + 1):
        mask = p >> step
        for i in range(p):
            if i != t and _hb(i ^ t) == mask:
                kids[real[i ^ mask]].append(real[i])
                sends.append((step, real[i], real[i ^ mask]))
    if root_rank != real[t]:
        kids[root_rank].append(real[t])
        sends.append((dims + 1, real[t], root_rank))
    return kids, sends


def _tree(ids: list[str], root: int, kids: dict[int, list[int]]) -> Tree:
    return Tree(ids[root], {ids[u]: tuple(ids[c] for c in cs) for u, cs in kids.items() if cs})


@register(
    "halving",
    collectives=("reduce_scatter",),
    paper="Thakur, Rabenseifner & Gropp 2005, Sec. 4 (recursive halving, any N); MPICH "
    "reduce_scatter_intra_recursive_halving",
    complexity="O(N^2) sends",
    summary="reduce-scatter by recursive halving: each step halves the range a rank "
    "reduces, log2 N steps (the ranks beyond a power of two folded in)",
    kind="forest",
)
def halving(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "reduce_scatter",
    sizes: dict[str, int] | None = None,
) -> Schedule:
    """The reduce-scatter by recursive halving of ``nbytes`` per member's block (or
    ``sizes``) over every node of ``platform`` in platform order (module docstring).
    Blocks are sent whole.  O(N^2) sends.

    Examples
    --------
    Four equal ranks (10 us per message, 1 GB/s, combining 1 ns per byte): two
    steps of two blocks then one, ``2 alpha + 3 m (beta + gamma)``:

    >>> from hetcoll import simulate
    >>> from hetcoll.platform import Node, Platform
    >>> p = Platform(tuple(Node(str(i), 1e-5, 1e-9, gamma=1e-9) for i in range(4)), model="tini")
    >>> s = halving(p, nbytes=1000)
    >>> round(simulate(p, s).makespan * 1e6, 6), 2 * 10 + 3 * 1000 * 2e-3
    (26.0, 26.0)
    """
    ids = _members(platform, root, members, collective, ("reduce_scatter",), "halving")
    if segment_size:
        raise PlannerError("halving sends whole blocks: no segment_size")
    n = len(ids)
    blocks = _sizes(ids, nbytes, sizes)
    rem = n - _pof2(n)
    flows, sends = [], []
    for b in range(n):
        t = b // 2 if b < 2 * rem else b - rem
        kids, hops = _halving_tree(n, t, b)
        flows.append(Flow(_tree(ids, b, kids), blocks[b], sum(blocks[:b]), kind="reduce"))
        sends += [(step * n + u, u, b, v) for step, u, v in hops]
    return _schedule(platform, model, "reduce_scatter", "halving", nbytes, flows, sends, sizes)


@register(
    "rabenseifner",
    collectives=("allreduce",),
    paper="Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005, Sec. 4; MPICH "
    "allreduce_intra_reduce_scatter_allgather",
    complexity="O(N^2) sends",
    summary="Rabenseifner's allreduce: reduce-scatter by recursive halving, then allgather "
    "by recursive doubling (the ranks beyond a power of two folded in)",
    options=("align",),
    kind="forest",
)
def rabenseifner(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allreduce",
    sizes: dict[str, int] | None = None,
    align: int = 1,
) -> Schedule:
    """Rabenseifner's allreduce of an ``nbytes`` vector over every node of ``platform``
    in platform order: ``P = 2**floor(log2 N)`` shares, multiples of ``align`` bytes
    (module docstring).  O(N^2) sends.

    Examples
    --------
    Eight equal ranks: ``2 log2(N) alpha + 2 (N - 1)/N M beta + (N - 1)/N M gamma``:

    >>> from hetcoll import simulate
    >>> from hetcoll.platform import Node, Platform
    >>> p = Platform(tuple(Node(str(i), 1e-5, 1e-9, gamma=1e-9) for i in range(8)), model="tini")
    >>> s = rabenseifner(p, nbytes=8000)
    >>> round(simulate(p, s).makespan * 1e6, 6), 2 * 3 * 10 + 2 * 7000e-3 + 7000e-3
    (81.0, 81.0)
    """
    ids = _members(platform, root, members, collective, ("allreduce",), "rabenseifner")
    if segment_size:
        raise PlannerError("rabenseifner sends whole shares: no segment_size")
    if sizes is not None:
        raise PlannerError("sizes: an allreduce has one vector (no blocks)")
    n = len(ids)
    p, rem, real = _cube(n)
    dims = p.bit_length() - 1
    shares = _blocks(int(nbytes), p, max(int(align), 1))
    ups, downs, sends = [], [], []
    for t in range(p):
        kids, hops = _halving_tree(n, t, real[t])
        lo = sum(shares[:t])
        ups.append(Flow(_tree(ids, real[t], kids), shares[t], lo, kind="reduce"))
        sends += [(step * n + u, u, t, v) for step, u, v in hops]
        # back down the same tree: partners from the smallest mask up, the folded rank last
        back = {u: [c for c in reversed(cs) if c % 2 or c >= 2 * rem] for u, cs in kids.items()}
        for k in range(rem):
            back[2 * k + 1].append(2 * k)
        downs.append(Flow(_tree(ids, real[t], back), shares[t], lo))
        # step s of the halving runs again at step 2 dims + 1 - s of the doubling
        sends += [((2 * dims + 2 - step) * n + v, v, p + t, u) for step, u, v in hops]
    return _schedule(platform, model, "allreduce", "rabenseifner", nbytes, ups + downs, sends, None)
