"""``switch_aware`` (ours): a broadcast for switch networks that sees node speeds *and* links.

LABS and TWO-VBBS (Hsu et al. 2005; Lin & Sheu 2005) avoid link contention by structure (an
ordered chain, synchronous steps) and use node speeds only to reorder; FNF (Banikazemi et
al. 1998) uses speeds and ignores links.  ``switch_aware`` plans with the simulator's own
rules on a switch network, where a worm holds its route only while its flits are in the
network (the ``switch`` model's ``link_hold``): what costs time are the workstations'
overheads, ``O_send`` at the sender and ``O_receive`` at the receiver, and what it rewards
is keeping the slow ones off the critical path and overlapping them with other transfers.

1. **greedy trees with link reservations**: each receiver joins from the sender whose
   transfer would *arrive* first, given when that sender's port is free and when every
   directed link of the up*/down* route is free during the transfer's link window; the
   transfer then books the sender's port and the route's links.  Three receiver orders:
   ``"fastest"`` (FNF's: a node is never slower than its children, Banikazemi et al.
   Lemma 2), ``"ecef"`` (the pair that completes first joins next), and ``"tail"``: the
   fastest ``k`` members first (the relays), then every other member by decreasing
   ``O_receive`` (the part of a transfer no sender can shorten: the slowest receivers are
   served first, while the relays' ports are free), for ``k`` a share of the members
   (:data:`RELAY_SHARES`).  Above :data:`SMALL` members, neither ``"ecef"`` nor the tail
   order without relays;
2. **local search**: every tree also with each node's children reordered so that the child
   whose subtree finishes last (estimated) is served first;
3. **pieces** (when no segment size is given): the two fastest trees also carry the
   message cut into 2, 3, 4, 6 or 8 equal pieces (:data:`PIECES`, in turn while each count
   is faster than the one before), each piece forwarded as soon as it is in,
   so that a slow source's ``S_m m`` overlaps the relays' forwarding: a type-8 source
   needs 9.1 ms to push 2048 flits, its first quarter is through after 2.7 ms.  Every
   piece costs each receiver one more ``R_c``, so fast sources keep the message whole;
4. **never slower than the baselines**: the candidates -- the trees, whole and in pieces,
   ``labs``, ``two_vbbs`` and ``fnf`` -- are simulated under the request's model and the
   fastest is returned (ties: the first in that order).  So ``switch_aware`` is never
   slower than LABS, TWO-VBBS or FNF on any instance, by construction.

Where it wins and where it loses is measured by ``hetcoll reproduce hsu-labs`` and
``benchmarks/simulated/bench_switch.py`` (``docs/switches.md``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from ..platform import Platform
from ..schedule import Schedule, check_simulations
from ._common import Request, prepare, tree_schedule
from ._registry import register
from .chains import two_vbbs
from .fnf import fnf
from .labs import labs

__all__ = ["switch_aware", "greedy_edges"]

#: above this many members the earliest-completion pass (O(N^2) per member) and the flat
#: tail order (no relays: a source cannot serve that many itself) are skipped
SMALL = 512
#: shares of the members that relay in the ``"tail"`` greedies (the fastest ones)
RELAY_SHARES = (0.0, 0.1, 0.25, 0.5)
#: how many pieces a message may be cut into when no segment size is given
PIECES = (2, 3, 4, 6, 8)
#: how many of the fastest whole-message trees are tried in pieces
PIECE_TREES = 2


class _Greedy:
    """The state of a greedy: who holds the data, when each port and link is free."""

    def __init__(self, req: Request) -> None:
        m = req.message_size()
        bound = req.bound
        self.bound, self.m = bound, m
        self.delay = np.asarray(bound.delay_matrix(m))
        self.busy = np.asarray(bound.node_cost(m), dtype=float)
        # routes as directed-link resources, when the model holds links (switch, exclusive)
        self.table = None
        if getattr(bound, "exclusive", False):
            routing = bound.routing
            self.table = routing.route_table(bound.choice)
            self.free = np.zeros(routing.pad + 1)  # the last: padding, always free
            self.switch = np.asarray(bound.net.switch_of)
            # a transfer from u holds its route from lead[u] after its start (link_window)
            self.lead = self.busy if bound.wire else np.zeros(len(self.busy))
        n = len(req.members)
        self.senders = np.empty(n, dtype=np.intp)
        self.senders[0] = req.root
        self.port = np.empty(n)  # by join order
        self.port[0] = 0.0
        self.k = 1
        self.edges: list[tuple[int, int]] = []

    def best(self, v: int) -> tuple[float, int, float]:
        """``(arrival, sender's join index, start)`` of the earliest transfer to ``v``
        (ties: the earliest-joined sender)."""
        s = self.senders[: self.k]
        start = self.port[: self.k]
        if self.table is not None:
            # when the route from each switch to v's is free: one row per switch, not sender
            free = self.free[self.table[:, self.switch[v]]].max(axis=1)
            start = np.maximum(start, free[self.switch[s]] - self.lead[s])
        arrive = start + self.delay[s, v]
        j = int(np.argmin(arrive))
        return float(arrive[j]), j, float(start[j])

    def join(self, j: int, v: int, start: float, arrive: float) -> None:
        u = int(self.senders[j])
        self.edges.append((u, v))
        self.port[j] = start + self.busy[u]
        if self.table is not None:
            r = self.table[self.switch[u], self.switch[v]]
            window = self.bound.link_window(u, v, self.m)
            end = arrive if window is None else start + window[0] + window[1]
            self.free[r] = np.maximum(self.free[r], end)
            self.free[-1] = 0.0
        self.senders[self.k] = v
        self.port[self.k] = arrive
        self.k += 1


def greedy_edges(req: Request, order: str = "fastest", relays: int = 0) -> list[tuple[int, int]]:
    """The greedy of :mod:`this module <hetcoll.planners.switch_aware>`, step 1.

    ``order="fastest"``: receivers by sending cost (ties: rank), each from the sender whose
    transfer arrives first; ``"tail"``: the ``relays`` fastest the same way, then the others
    by decreasing receive cost (ties: rank); ``"ecef"``: at each step the (sender,
    receiver) pair that arrives first (ties: the earliest-joined sender, then the lowest
    index).  A transfer starts when its sender's port is free and every link of its route
    is free during its link window, which it then books.  Edges come in global start order
    (hence in each sender's send order).  ``"fastest"`` and ``"tail"``: O(N^2 log N)
    vectorised; ``"ecef"`` evaluates lazily (a heap of lower bounds: ports and links only
    get busier), O(N^2 log N) typical.
    """
    g = _Greedy(req)
    others = req.others()
    if order in ("fastest", "tail"):
        cost = np.asarray(req.node_cost())
        receivers = sorted(others, key=lambda x: (cost[x], x))
        if order == "tail":
            m, bound = req.message_size(), req.bound
            tail = {v: bound.recv_busy(req.root, v, m) for v in receivers[relays:]}
            receivers[relays:] = sorted(tail, key=lambda x: (-tail[x], x))
        for v in receivers:
            arrive, j, start = g.best(v)
            g.join(j, v, start, arrive)
        return g.edges
    key = {v: float(g.delay[req.root, v]) for v in others}  # each one's lowest bound
    heap = [(b, v) for v, b in key.items()]
    heapq.heapify(heap)
    left = np.asarray(others, dtype=np.intp)
    while heap:
        bound, v = heapq.heappop(heap)
        if key.get(v) != bound:
            continue  # joined already, or superseded by another bound
        arrive, j, start = g.best(v)
        if heap and (arrive, v) > heap[0]:
            key[v] = arrive  # the bound was too low: try again in its turn
            heapq.heappush(heap, (arrive, v))
            continue
        g.join(j, v, start, arrive)
        del key[v]
        left = left[left != v]
        # the new sender may reach the others earlier than their bounds say
        new = g.port[g.k - 1] + g.delay[v, left]
        for w, b in zip(left.tolist(), new.tolist(), strict=True):
            if b < key[w]:
                key[w] = b
                heapq.heappush(heap, (b, w))
    return g.edges


def _longest_first(req: Request, edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The same tree with each node's children reordered: the child whose subtree is
    estimated to finish last first (estimates ignore links: delay and busy times only)."""
    m = req.message_size()
    delay = np.asarray(req.bound.delay_matrix(m))
    busy = np.asarray(req.bound.node_cost(m), dtype=float)
    children: dict[int, list[int]] = {}
    for p, c in edges:
        children.setdefault(p, []).append(c)
    finish: dict[int, float] = {}
    order = [req.root]
    for x in order:
        order.extend(children.get(x, ()))
    for x in reversed(order):  # a subtree's finish if x sends in the best order from time 0
        kids = sorted(children.get(x, ()), key=lambda c: -(delay[x, c] + finish[c]))
        children[x] = kids
        t, end = 0.0, 0.0
        for c in kids:
            end = max(end, t + delay[x, c] + finish[c])
            t += busy[x]
        finish[x] = end
    return [(p, c) for p in order for c in children.get(p, ())]


@register(
    "switch_aware",
    collectives=("bcast", "multicast"),
    paper="hetcoll (ours), after Hsu et al. 2005 and Banikazemi et al. 1998",
    complexity="O(N^2 (S D + N)) for its greedies, plus at most 25 simulations",
    summary="greedy trees on node speeds with link reservations, slow receivers first, the "
    "message in pieces from slow sources; never slower than labs, two_vbbs or fnf",
    models=("switch",),
)
def switch_aware(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Our broadcast for switch networks: node speeds and link contention together.

    See the module docstring: greedy trees that book the links of every route, children
    reordered longest-subtree-first, the fastest two also with the message in pieces when
    no ``segment_size`` is given, and the fastest by simulation among them, ``labs``,
    ``two_vbbs`` and ``fnf`` -- never slower than any of those three on any instance.
    ``params["chosen"]`` names the winner (``"greedy"`` for one of the trees, then
    ``params["pieces"]`` says in how many pieces).

    Examples
    --------
    >>> from hetcoll import plan, simulate
    >>> from hetcoll.generators import switch_platform
    >>> p = switch_platform(32, seed=1)
    >>> t = {m: simulate(p, plan(p, "w0", method=m, nbytes=2048)).makespan
    ...      for m in ("switch_aware", "labs", "two_vbbs")}
    >>> t["switch_aware"] <= min(t["labs"], t["two_vbbs"])
    True
    """
    from ..simulator import simulate

    req = prepare(platform, root, members, model, nbytes, segment_size)

    def time(s: Schedule) -> float:
        return simulate(platform, s, req.model).makespan

    trees = [(edges, 1) for edges in _trees(req)]
    # it simulates every tree and the three baselines: refuse what would take minutes
    check_simulations(
        "switch_aware", len(trees) + 3, req.nbytes, req.segment_size, len(req.members) - 1
    )
    times = [time(tree_schedule(req, "switch_aware", e)) for e, _ in trees]
    if segment_size is None:  # the fastest trees in pieces too, more while it pays
        for i in sorted(range(len(trees)), key=times.__getitem__)[:PIECE_TREES]:
            edges, least = trees[i][0], times[i]
            for k in (k for k in PIECES if k <= req.nbytes):
                trees.append((edges, k))
                times.append(time(_in_pieces(req, edges, k)))
                if times[-1] >= least:
                    break
                least = times[-1]
    ids = req.ids
    member_ids = None if members is None else [ids[u] for u in req.members]
    baselines = [
        planner(
            platform,
            root,
            member_ids,
            req.model,
            nbytes=req.nbytes,
            segment_size=req.segment_size,
        )
        for planner in (labs, two_vbbs, fnf)
    ]
    times += [time(s) for s in baselines]
    i = int(np.argmin(times))
    if i < len(trees):
        edges, pieces = trees[i]
        best = _in_pieces(req, edges, pieces)
        params: dict[str, Any] = {"chosen": "greedy", "pieces": pieces}
    else:
        best = baselines[i - len(trees)]
        params = {"chosen": best.algorithm}
    return Schedule(
        best.collective,
        "switch_aware",
        best.nbytes,
        best.flows,
        params,
        req.model.to_spec(),
        order=best.order,
    )


def _trees(req: Request) -> list[list[tuple[int, int]]]:
    """The greedy trees (module docstring, steps 1 and 2), each as found and with its
    children reordered longest-subtree-first, duplicates dropped."""
    n = len(req.members)
    greedies = [greedy_edges(req, "fastest")]
    if n <= SMALL:
        greedies.append(greedy_edges(req, "ecef"))
    for share in RELAY_SHARES:
        if share > 0 or n <= SMALL:
            greedies.append(greedy_edges(req, "tail", relays=round(share * (n - 1))))
    out: list[list[tuple[int, int]]] = []
    for edges in greedies:
        for tree in (edges, _longest_first(req, edges)):
            if tree not in out:
                out.append(tree)
    return out


def _in_pieces(req: Request, edges: list[tuple[int, int]], pieces: int) -> Schedule:
    """The tree ``edges`` carrying the message in ``pieces`` equal segments (the last one
    shorter when they do not divide it; the request's own segments when 1)."""
    if pieces > 1:
        req = replace(req, segment_size=-(-req.nbytes // pieces))
    return tree_schedule(req, "switch_aware", edges)
