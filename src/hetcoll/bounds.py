"""Lower bounds on the makespan of broadcasting a finite message: no schedule of ``size``
bytes from ``root`` finishes sooner, whatever its trees, its slices and its order.

Two bounds, each proved in its function's docstring; :func:`lower_bound` is the larger:

- :func:`rate_bound`: ``size / B*``, ``B*`` the certified optimal steady-state throughput
  (Beaumont, Marchal & Robert 2004, Sec. 4.1) with the whole message as the slice;
- :func:`reach_bound`: the time one byte needs to reach the farthest member along the
  fastest chain of transfers (the model's delay of a one-byte message on each hop).

``hetcoll optimum --size`` prints them; the benchmarks measure every makespan against
:func:`lower_bound` (``bound / makespan``, 1 at the bound).

:func:`slice_bound` bounds the schedules whose messages carry at most a given slice (the
same proof with that slice): ``auto`` skips the slice sizes and the candidates whose bound
already exceeds the fastest time it has found (:func:`hetcoll.compare.compare`'s
``prune``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import dijkstra

from .platform import Platform

__all__ = [
    "Bound",
    "SliceBound",
    "lower_bound",
    "one_byte_distances",
    "rate_bound",
    "reach_bound",
    "slice_bound",
    "whole_slice_bound",
    "whole_slice_cap",
]


@dataclass(frozen=True)
class Bound:
    """``seconds = max(rate, reach)``: no broadcast of ``size`` bytes is faster.

    ``rate``: :func:`rate_bound`; ``reach``: :func:`reach_bound`; ``throughput``: the
    certified ``B*`` (bytes/s) behind ``rate``; ``farthest``: the member behind ``reach``.
    """

    size: int
    seconds: float
    rate: float
    reach: float
    throughput: float
    farthest: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "lower_bound": self.seconds,
            "rate_bound": self.rate,
            "reach_bound": self.reach,
            "bound_throughput": self.throughput,
            "farthest": self.farthest,
        }


def rate_bound(platform: Platform, root: str, size: int, model: Any = None) -> tuple[float, float]:
    """``(size / B*, B*)``: ``B*`` (bytes/s) is the certified upper bound of the optimal
    multi-tree throughput with slices of ``size`` bytes (:func:`hetcoll.planners.steady.
    optimum`'s ``upper_bound``), under the model's ports and links.

    Proof.  Let a schedule deliver the ``size`` bytes to every node by time ``T``, and let
    ``b_e`` be the bytes it sends over edge ``e``.  (i) Every byte crosses every cut that
    separates the root from a node, so the values ``n_e = b_e / (size T)`` carry a flow of
    ``1 / T`` from the root to every node.  (ii) A message carries at most ``size`` bytes
    and the model's costs are affine with non-negative intercepts, so the ``b_e`` bytes keep
    each resource of ``e`` (a send port, a receive port, a link) busy at least ``b_e /
    size`` times as long as one message of ``size`` bytes does; a resource is busy at most
    ``T`` in ``[0, T]``, so ``n_e`` meets every port and link constraint of the steady-state
    problem with slices of ``size`` bytes.  Hence ``1 / T`` slices per second is feasible
    there: ``1 / T <= TP*``, the optimum, itself at most the packing's dual bound (its
    certificate), and ``T >= size / (TP* size) >= size / B*``.  The bound holds for every
    slicing, since smaller slices only raise the cost per byte.  When transfers keep no
    resource busy (the throughput is unbounded) the bound is 0.

    Complexity: one arborescence packing (column generation).
    """
    from .planners.steady import model_problem, optimum, unbounded

    if size <= 0 or unbounded(model_problem(platform, root, size, model)):
        return 0.0, float("inf")  # (e.g. the postal model: only latencies, no busy port)
    best = optimum(platform, root, size, model)
    rate = best.upper_bound
    return (size / rate if rate > 0 and np.isfinite(rate) else 0.0), rate


def reach_bound(
    platform: Platform, root: str, members: Iterable[str] | None = None, model: Any = None
) -> tuple[float, str | None]:
    """``(seconds, member)``: the longest, over the members, of the shortest time a byte
    can take from ``root`` to that member, hop ``u -> v`` costing the model's delay of a
    one-byte message (Dijkstra over the edges the model lets talk: the links' digraph under
    a graph model, every ordered pair otherwise).

    Proof.  A member holds a byte only once a message carrying it arrives, sent by a node
    that held it before: the byte follows a chain of transfers from the root.  A transfer
    of ``m >= 1`` bytes from ``u`` arrives no earlier than its start plus the model's delay
    of ``m`` bytes alone (contention only delays it), and every model's delay grows with
    ``m``, so each hop takes at least the delay of one byte and the chain at least the
    shortest path's length.

    Complexity: O(E + N log N) after the model's costs of the E edges.
    """
    n = len(platform)
    r = platform.index(root)
    dist = one_byte_distances(platform, model, indices=r)
    wanted = [platform.index(m) for m in members] if members is not None else range(n)
    far = max((i for i in wanted if i != r), key=lambda i: (dist[i], -i), default=None)
    if far is None:
        return 0.0, None
    seconds = float(dist[far]) if dist[far] > n * np.finfo(float).tiny else 0.0
    return seconds, platform.ids[far]


def lower_bound(
    platform: Platform,
    root: str,
    size: int,
    members: Iterable[str] | None = None,
    model: Any = None,
) -> Bound:
    """The larger of :func:`rate_bound` and :func:`reach_bound` for a broadcast of ``size``
    bytes from ``root`` (a multicast to ``members``: only the reach bound is specific to
    them; the rate bound is the broadcast's, valid for a multicast only when every node is
    a member, so it is 0 otherwise).

    Examples
    --------
    >>> from hetcoll import Platform
    >>> p = Platform.from_dict({"model": "one_port", "nodes": [{"id": i} for i in "012"],
    ...     "links": [{"u": "0", "v": "1", "bandwidth": 1e6}, {"u": "1", "v": "2",
    ...     "bandwidth": 1e6}]})
    >>> b = lower_bound(p, "0", 10**6)
    >>> round(b.rate, 9), round(b.reach, 9)  # 1 MB at 1 MB/s; one byte over two hops
    (1.0, 2e-06)
    """
    members = list(members) if members is not None else None
    everyone = members is None or set(members) | {root} >= set(platform.ids)
    rate, throughput = rate_bound(platform, root, size, model) if everyone else (0.0, np.inf)
    reach, far = reach_bound(platform, root, members, model) if size > 0 else (0.0, None)
    return Bound(int(size), max(rate, reach), rate, reach, float(throughput), far)


@dataclass(frozen=True)
class SliceBound:
    """Lower bounds on broadcasting ``nbytes`` in messages of at most ``slice_size`` bytes.

    ``seconds``: no such broadcast is faster (:func:`rate_bound`'s proof with slices of
    ``slice_size``; 0 for a multicast, a size curve or an unbounded throughput), and so
    none in smaller messages either; :meth:`of` bounds one schedule's own time.
    ``start``: what a broadcast whose every message has exactly ``slice_size`` bytes
    takes beyond ``seconds`` (:attr:`whole`), the pipeline's fill (see :func:`slice_bound`).
    ``cap``: under ``multi_port``, no broadcast whose every message has exactly
    ``slice_size`` bytes is faster either (:func:`whole_slice_cap`; 0 where it does not
    apply).
    """

    nbytes: int
    slice_size: int
    seconds: float
    problem: Any = None  # the model's SteadyProblem with slices of slice_size (None: no bound)
    start: float = 0.0
    cap: float = 0.0

    @property
    def whole(self) -> float:
        """No broadcast of ``nbytes`` whose every message carries exactly ``slice_size``
        bytes is faster: ``max(seconds + start, cap)`` (every registered broadcast planner
        sends slices of exactly that size when it divides the message,
        ``tests/test_bounds_whole_slices.py``; not a bound for smaller slices).  The fill
        ``start`` is not added to ``cap``: its proof weights the resources by the fluid
        packing's prices, not the gap packing's (under ``multi_port`` it is 0 anyway: the
        links are resources, see :func:`_fill`)."""
        return max(self.seconds + self.start, self.cap)

    def of(self, schedule: Any) -> float:
        """A lower bound on ``schedule``'s simulated makespan: its busiest resource's time.

        Proof.  Each flow sends its bytes over every hop of every tree edge (a relayed
        edge: each hop of its path), in messages of at most ``slice_size`` bytes (checked:
        else 0).  As in :func:`rate_bound`, a message of ``m <= slice_size`` bytes keeps
        each resource busy at least ``m / slice_size`` times as long as one of
        ``slice_size`` bytes (affine costs, non-negative intercepts), so ``b_e`` bytes over
        edge ``e`` keep resource ``r`` busy at least ``usage[r, e] b_e / slice_size``, and
        a resource is busy at most the makespan.  0 when a hop is no edge of the model
        (the simulator refuses such a schedule) or a flow does not broadcast down its tree.

        Complexity: O(hops) plus one sparse product.
        """
        p = self.problem
        if p is None:
            return 0.0
        index = _edge_index(p)
        sent = np.zeros(p.m)
        for f in schedule.flows:
            if f.kind != "bcast" or (f.segment_size or f.nbytes) > self.slice_size:
                return 0.0
            relay = f.relay_of()
            for u, v in f.tree.edges():
                path = (u, *relay.get((u, v), ()), v)
                for a, b in pairwise(path):
                    e = index.get((a, b))
                    if e is None:
                        return 0.0
                    sent[e] += f.nbytes
        load = p.usage @ (sent / self.slice_size)
        return float(np.max(load, initial=0.0))


def _edge_index(problem: Any) -> dict[tuple[str, str], int]:
    ids = problem.ids
    pairs = zip(problem.src.tolist(), problem.dst.tolist(), strict=True)
    return {(ids[a], ids[b]): e for e, (a, b) in enumerate(pairs)}


def slice_bound(
    platform: Platform,
    root: str,
    nbytes: int,
    slice_size: int,
    members: Iterable[str] | None = None,
    model: Any = None,
) -> SliceBound:
    """:class:`SliceBound` of a broadcast (a multicast to ``members``) of ``nbytes`` from
    ``root`` in messages of at most ``slice_size`` bytes: ``nbytes / B*(slice_size)``, the
    certified optimal throughput with that slice (:func:`rate_bound`'s proof, which only
    asks every message to carry at most ``slice_size`` bytes), and the problem that bounds
    each schedule (:meth:`SliceBound.of`).  Without a bound (a size curve, whose per-byte
    cost need not fall with the size; a throughput nothing bounds) both are 0.

    Complexity: one arborescence packing (a multicast: none).
    """
    from .planners._shared import packing
    from .planners.steady import model_problem, unbounded

    if platform.size_curve is not None or nbytes <= 0 or slice_size <= 0:
        return SliceBound(int(nbytes), int(slice_size), 0.0)
    problem = model_problem(platform, root, slice_size, model)
    if unbounded(problem):
        return SliceBound(int(nbytes), int(slice_size), 0.0)
    everyone = members is None or set(members) | {root} >= set(platform.ids)
    seconds = start = cap = 0.0
    if everyone:
        # (inside auto's shared work, the packing its pipelined candidates start from)
        pack = packing(problem)
        rate = pack.upper_bound * slice_size
        seconds = nbytes / rate if rate > 0 and np.isfinite(rate) else 0.0
        if seconds and nbytes % slice_size == 0 and pack.prices is not None:
            start = _fill(platform, problem, slice_size, model, pack.prices)
        if seconds and nbytes % slice_size == 0:
            cap = whole_slice_cap(platform, problem, nbytes, model)
    return SliceBound(int(nbytes), int(slice_size), seconds, problem, start, cap)


def whole_slice_bound(
    platform: Platform, root: str, nbytes: int, slice_size: int, model: Any = None
) -> float | None:
    """No broadcast of ``nbytes`` from ``root`` whose every message carries exactly
    ``slice_size`` bytes is faster (seconds): the larger of :func:`lower_bound` (every
    slicing) and :attr:`SliceBound.whole` (the fluid bound with that slice, its fill and,
    under ``multi_port``, :func:`whole_slice_cap`); None when ``slice_size`` does not
    divide ``nbytes`` (no such broadcast).  ``hetcoll optimum --size --segment-size``
    prints it.  Complexity: :func:`lower_bound`'s and :func:`slice_bound`'s packings."""
    if slice_size <= 0 or nbytes <= 0 or nbytes % slice_size:
        return None
    every = lower_bound(platform, root, nbytes, model=model).seconds
    return max(every, slice_bound(platform, root, nbytes, slice_size, model=model).whole)


def whole_slice_cap(platform: Platform, problem: Any, nbytes: int, model: Any = None) -> float:
    """A lower bound on the makespan of every broadcast of ``nbytes`` whose every message
    carries exactly ``problem.nbytes`` bytes (a slice), under the ``multi_port`` model:
    ``nbytes / B_gap``, ``B_gap`` (bytes/s) the certified upper bound (dual prices) of
    the optimal packing of :func:`~hetcoll.planners.port_slots.gap_problem`'s problem
    (``problem`` with a row per link a fraction of its sender's send longer than whole
    sends).  0 under other models, where no link is such, or for a multicast.

    Proof.  Let such a run end at ``M`` and send ``m_e`` messages over edge ``e``; each
    keeps its sender's port busy ``s_u`` and its link ``tau s_u`` from its start, within
    ``[0, M]``.  (i) Each row of the gap problem is busy at most ``M`` in the run:
    the fluid rows as in :func:`rate_bound`, and a gap row of link ``e`` from ``u``
    because ``u``'s sends (all of the same ``s_u``: the row exists only then) split into
    the gaps between consecutive starts over ``e``, a gap of ``w`` sends lasting at least
    ``max(w, tau) s_u``, at least the row's charge for them, the last one ending by ``M``
    (its link busy ``tau s_u``, its sends ``w s_u``), and the sends before the first
    start over ``e`` are charged at most their own ``s_u`` each (``gap_problem``'s
    docstring).  So ``x_e = m_e / M`` loads every row at most 1.  (ii) Every byte reaches
    every node; the messages that first bring it to each node form a spanning
    arborescence ``A_b``, and a message over ``e`` carries ``slice_size`` bytes, so
    ``sum_b [e in A_b] <= m_e slice_size``: the arborescences ``A_b`` weighted ``1 /
    (slice_size M)`` each (the rows' coefficients are non-negative) are a packing of the
    gap problem of throughput ``k / M``, ``k = nbytes / slice_size``.  Hence ``k / M <=``
    its optimum ``<=`` the certificate, and ``M >= nbytes / B_gap``.  The fluid bound's
    fill (:func:`_fill`) is not added: its proof weights the resources by the fluid
    packing's prices.

    Complexity: one arborescence packing (inside ``auto``'s shared work, the one
    ``multi_tree`` packs its gap challenger from), only where the gap problem exists.
    """
    from .models import get_model
    from .planners._shared import packing
    from .planners.port_slots import gap_problem

    cost = get_model(model) if model is not None else platform.model
    gaps = gap_problem(problem) if cost.name == "multi_port" and nbytes > 0 else None
    if gaps is None:
        return 0.0
    rate = packing(gaps).upper_bound * problem.nbytes
    return nbytes / rate if rate > 0 and np.isfinite(rate) else 0.0


def _fill(platform: Platform, problem: Any, slice_size: int, model: Any, prices) -> float:
    """:attr:`SliceBound.start`: the resources' earliest busy times weighted by
    ``prices`` (the packing's certificate, summing to 1), less a margin for rounding; 0
    where the model's busy times do not lie within each transfer (a link held, a port busy
    longer than the delay).

    Proof.  Let every message carry exactly ``s = slice_size`` bytes, ``k = nbytes / s``
    of them from the root.  Each reaches every node; the transfers that first bring it to
    each node form a spanning arborescence of the model's edges, which keeps the resources
    busy at least ``1 / B`` weighted by ``prices`` (``B`` the packing's upper bound in
    slices per second; a relayed or repeated transfer only adds), so the weighted busy
    time of all of them is at least ``k / B = seconds``.  A transfer from ``u`` carries a
    message ``u`` holds, so it starts no sooner than ``D(u)``, the shortest time an
    ``s``-byte message takes from the root to ``u`` (each hop its delay alone), and keeps
    each resource busy within its start and its arrival (checked), no later than the
    makespan ``M``.  So resource ``r`` is busy at most ``M - e_r``, ``e_r`` the least
    ``D(u)`` over the edges from ``u`` that use it, and ``M >= seconds + sum_r prices_r
    e_r``.  O(E + N log N)."""
    from .models import get_model

    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    src, dst = problem.src, problem.dst
    costs = bound.costs(src, dst, np.full(len(src), slice_size, dtype=np.int64))
    delay = np.asarray(costs.delay, dtype=float)
    busy = np.maximum(np.asarray(costs.send_busy, float), np.asarray(costs.recv_busy, float))
    if len(costs.resources) or np.any(busy > delay) or not np.all(delay > 0):
        return 0.0
    n = problem.n
    reach = dijkstra(csr_array((delay, (src, dst)), shape=(n, n)), indices=problem.root)
    usage = problem.usage.tocoo()
    early = np.full(problem.rows, np.inf)
    np.minimum.at(early, usage.row, reach[src[usage.col]])
    early = np.where(np.isfinite(early), early, 0.0)
    return max(float(prices @ early) * (1 - 1e-9), 0.0)


def one_byte_distances(platform: Platform, model: Any = None, indices: int | None = None):
    """The fastest time one byte takes from each node (or from node ``indices`` only) to
    each, hop ``u -> v`` costing the model's delay of a one-byte message: Dijkstra over the
    edges the model lets talk (the links' digraph under a graph model, every ordered pair
    otherwise); ``inf`` where no path goes.  O(E + N log N) per source after the model's
    costs of the E edges."""
    from .models import get_model

    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    n = len(platform)
    graph = getattr(bound, "graph", None)
    if graph is not None:
        src, dst = np.asarray(graph.src), np.asarray(graph.dst)
    else:
        src, dst = (a.ravel() for a in np.nonzero(~np.eye(n, dtype=bool)))
    delay = np.asarray(bound.costs(src, dst, np.ones(len(src), dtype=np.int64)).delay, float)
    # a zero delay would vanish from a sparse matrix: keep it as the smallest positive
    weight = np.maximum(delay, np.finfo(float).tiny)
    dist = dijkstra(csr_array((weight, (src, dst)), shape=(n, n)), indices=indices)
    return np.where(np.isfinite(dist), dist, np.inf)
