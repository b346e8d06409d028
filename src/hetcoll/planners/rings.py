"""The ring of MPI libraries in per-root form: allgather, reduce-scatter and allreduce with
every member's block passed around the members in rank order (MPICH's ``ring`` algorithms,
``allgather_intra_ring.c``, ``reduce_scatter_intra_ring``; Thakur, Rabenseifner & Gropp
2005, Sec. 4.1 and 4.4; Patarasuk & Yuan 2009 for the bandwidth-optimal allreduce).

Member ``r``'s block is one flow over a chain of the ring: an allgather's from ``r`` to
``r + 1``, ``r + 2``, ... ``r - 1`` (a ``bcast`` flow); a reduce-scatter's from ``r + 1``
to ``r + 2``, ... to ``r`` (a ``reduce`` flow: each member adds its own part and passes the
partial result on); an allreduce is the reduce-scatter then the allgather of the same
blocks (the vector cut into ``N`` near-equal ranges).  In step ``s`` member ``u`` sends its
successor the block of ``u - s`` (allgather) or ``u - s - 1`` (reduce-scatter): each send's
slot in the schedule's ``order`` is ``s N + u``, so every rank sends its ``N - 1`` blocks in
MPICH's order, each after it received the block (:mod:`hetcoll.perroot`).

On a homogeneous platform of per-message cost ``alpha`` and ``beta`` seconds per byte an
allgather of ``m``-byte blocks takes ``(N - 1)(alpha + m beta)``; blind to unequal links,
each step waits for the ring's slowest link.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..errors import PlannerError
from ..models import get_model
from ..patterns import OrderedSend
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from ._registry import register

__all__ = ["ring"]

RING_OPS = ("allgather", "reduce_scatter", "allreduce")


def _chain(ids: list[str], r: int, up: bool) -> Tree:
    """Member ``r``'s chain: down the ring from ``r`` (``up`` False), or from ``r + 1`` up
    to ``r`` (a tree rooted at ``r`` whose only child is ``r - 1``, and so on)."""
    n = len(ids)
    step = -1 if up else 1
    seq = [ids[(r + step * k) % n] for k in range(n)]
    return Tree(seq[0], {seq[k]: (seq[k + 1],) for k in range(n - 1)})


def _blocks(total: int, n: int, align: int) -> list[int]:
    """``total`` bytes in ``n`` near-equal blocks, multiples of ``align`` (MPICH's counts:
    the first blocks one element larger), the last taking what is under one element."""
    units, rest = divmod(total, align)
    q, extra = divmod(units, n)
    out = [(q + (k < extra)) * align for k in range(n)]
    out[-1] += rest
    return out


def _relayed(platform: Platform, model: Any, flows: list[Flow], nbytes: int) -> list[Flow]:
    """``flows`` with their edges between nodes the model cannot send between directly
    relayed along its shortest path (store and forward, :attr:`Flow.relays`), as the
    network routes an MPI library's messages: under ``multi_port``, ``one_port``, ...
    where a rank has links to some ranks only."""
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    index = {v: platform.index(v) for v in platform.ids}
    ids = platform.ids
    cache: dict[tuple[str, str], tuple[str, ...] | None] = {}
    out = []
    for f in flows:
        paths = []
        for p, kids in f.tree.children.items():
            for c in kids:
                u, v = (c, p) if f.kind == "reduce" else (p, c)
                if (u, v) not in cache:
                    got = bound.relay_path(index[u], index[v], max(int(nbytes), 1))
                    cache[(u, v)] = None if got is None else tuple(ids[x] for x in got)
                way = cache[(u, v)]
                if way is not None:
                    paths.append(way[::-1] if f.kind == "reduce" else way)
        out.append(replace(f, relays=tuple(paths)) if paths else f)
    return out


@register(
    "ring",
    collectives=RING_OPS,
    paper="MPICH ring algorithms (Thakur, Rabenseifner & Gropp 2005, Sec. 4.1, 4.4); "
    "Patarasuk & Yuan 2009 (ring allreduce)",
    complexity="O(N^2) sends",
    summary="every member's block around the members in rank order, one block per step "
    "(allgather, reduce-scatter, and both for an allreduce)",
    options=("align",),
    kind="forest",
)
def ring(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allgather",
    sizes: dict[str, int] | None = None,
    align: int = 1,
) -> Schedule:
    """The ring ``collective`` (``allgather``, ``reduce_scatter``, ``allreduce``) of
    ``nbytes`` (each member's block; an allreduce's vector) over every node of
    ``platform`` in platform order (module docstring).  ``sizes``: each member's block (the
    v-variants); ``align``: an allreduce's blocks are multiples of it.  Blocks are sent
    whole (``segment_size`` is refused).  The ring ignores ``model``'s costs; under a model
    where only linked nodes talk (``multi_port``, ``one_port``) a block between members
    with no link goes through the shortest path's relays, as the network routes MPI's.

    Examples
    --------
    >>> from hetcoll import Platform, simulate
    >>> p = Platform.from_dict({"model": "multi_port", "nodes": [{"id": i} for i in "abc"],
    ...     "links": [{"u": "a", "v": "b", "bandwidth": 1e9}, {"u": "b", "v": "c",
    ...     "bandwidth": 1e9}, {"u": "a", "v": "c", "bandwidth": 1e9}]})
    >>> s = ring(p, nbytes=1000)
    >>> [x.child for x in s.order["a"]]
    ['b', 'b']
    """
    if collective not in RING_OPS:
        raise PlannerError(f"ring plans {', '.join(RING_OPS)}, not a {collective}")
    if segment_size:
        raise PlannerError("ring sends whole blocks: no segment_size")
    ids = list(platform.ids)
    if members is not None and set(members) | ({root} if root else set()) != set(ids):
        raise PlannerError(
            "ring plans on every node of the platform: give the members' sub-platform"
        )
    n = len(ids)
    if n < 2:
        raise PlannerError("ring needs at least two nodes")
    if sizes is not None and (collective == "allreduce" or set(sizes) != set(ids)):
        raise PlannerError("sizes: give the block of every node (not for an allreduce)")
    if collective == "allreduce":
        blocks = _blocks(int(nbytes), n, max(int(align), 1))
    else:
        blocks = [int(sizes[v]) if sizes is not None else int(nbytes) for v in ids]
    offsets = [sum(blocks[:r]) for r in range(n)]
    phases = {"allgather": ("bcast",), "reduce_scatter": ("reduce",)}.get(
        collective, ("reduce", "bcast")
    )
    flows: list[Flow] = []
    order: dict[str, list[OrderedSend]] = {v: [] for v in ids}
    for p, kind in enumerate(phases):
        up = kind == "reduce"
        first = len(flows)
        for r in range(n):
            flows.append(Flow(_chain(ids, r, up), blocks[r], offsets[r], kind=kind))
        for s in range(n - 1):
            for u in range(n):
                r = (u - s - 1) % n if up else (u - s) % n
                slot = (p * (n - 1) + s) * n + u
                order[ids[u]].append(OrderedSend(first + r, ids[(u + 1) % n], 0, slot))
    nominal = int(nbytes)
    flows = _relayed(platform, model, flows, max(blocks))
    return Schedule(
        collective,
        "ring",
        nominal,
        tuple(flows),
        {"trees": len(flows)},
        sizes=sizes,
        order={v: tuple(o) for v, o in order.items()},
    )
