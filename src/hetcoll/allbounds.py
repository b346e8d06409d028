"""Lower bounds and optima of an allgather, a reduce-scatter and an allreduce of ``M``
bytes (the whole result vector: the allgather's result, the reduce-scatter's input of each
rank, the allreduce's vector) on every node of a platform: ``hetcoll optimum --op``.

- ``allgather`` / ``reduce_scatter``: the optimal per-root packing of arborescences
  (:func:`hetcoll.planners.forest.pack_forest`, certified by its dual bound) with the
  whole vector as the largest message, and one byte's farthest reach;
- ``allreduce``: the reduce-scatter's bound (an allreduce leaves every rank its block of
  the reduced vector), one node's port (each node sends and receives ``M`` bytes at
  least), the cut bound ``M / min_S min(B+(S), B-(S))`` on the links' bandwidths, and the
  transmission count ``2 (N - 1) M / sum_i b_i``; and the time of the best reduce-scatter
  + allgather packing (pipelined, members' shares chosen by the LP): the optimum when it
  meets the bound.

Every bound is proved in its function's docstring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ArgumentError
from .platform import Platform

__all__ = ["OPS", "CollectiveBound", "collective_bound", "latency_cut", "members_bound"]

#: the operations :func:`collective_bound` bounds
OPS = ("allgather", "reduce_scatter", "allreduce")


@dataclass(frozen=True)
class CollectiveBound:
    """No ``op`` of ``size`` bytes on the platform is faster than ``lower_bound`` seconds;
    ``optimum`` is the optimal time where it is known (else None).

    ``parts``: each bound behind ``lower_bound`` (seconds, by name); ``packing``: the
    certified steady-state time of the per-root packing (allreduce: reduce-scatter +
    allgather) with ``size``-byte messages, ``packing_bound`` its dual bound, ``trees`` its
    arborescences; ``seconds``: the time taken to compute it all.
    """

    op: str
    size: int
    lower_bound: float
    optimum: float | None
    parts: dict[str, float] = field(default_factory=dict)
    packing: float = 0.0
    packing_bound: float = 0.0
    trees: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "size": self.size,
            "lower_bound": self.lower_bound,
            "optimum": self.optimum,
            "bounds": dict(self.parts),
            "packing_time": self.packing,
            "packing_bound": self.packing_bound,
            "trees": self.trees,
            "planning_seconds": self.seconds,
        }


def collective_bound(
    platform: Platform, op: str, size: int, model: Any = None, *, time_limit: float = 30.0
) -> CollectiveBound:
    """Lower bound (and optimum where known) of ``op`` (one of :data:`OPS`) of ``size``
    bytes on every node of ``platform`` under ``model`` (default the platform's); see the
    module docstring and the bound functions below.

    The optimum is known when the model's costs have no per-message part (a bandwidth-only
    platform: the packing's time is the same for every message size, reached as the slices
    get smaller) and, for an allreduce, the reduce-scatter + allgather packing meets the
    lower bound (within 1e-9); it is then that time.
    """
    import time

    from .planners.forest import pack_forest

    if op not in OPS:
        raise ArgumentError(f"op: one of {', '.join(OPS)}, not {op!r}")
    start = time.perf_counter()
    size = int(size)
    n = len(platform)
    if n == 1 or size <= 0:
        return CollectiveBound(op, size, 0.0, 0.0 if n == 1 or size == 0 else None)
    parts: dict[str, float] = {}
    reach = reach_all(platform, model)
    parts["reach"] = reach
    if op == "allreduce":
        forest = pack_forest(platform, "allreduce", slice_size=size, model=model,
                             time_limit=time_limit)  # fmt: skip
        rs = pack_forest(platform, "reduce_scatter", [size / n] * n, slice_size=size,
                         model=model, time_limit=time_limit)  # fmt: skip
        packing, packing_bound = forest.time * size, forest.bound * size
        parts["reduce_scatter"] = rs.bound
        parts.update(port_bounds(platform, size, model))
        parts["cut"] = cut_bound(platform, size, model)
    else:
        forest = pack_forest(platform, op, [size / n] * n, slice_size=size, model=model,
                             time_limit=time_limit)  # fmt: skip
        packing, packing_bound = forest.time, forest.bound
        parts["packing"] = packing_bound
    lower = max(parts.values())
    optimum = None
    if bandwidth_only(platform, size, model):
        if op != "allreduce":  # unknown when one byte's reach is the larger bound
            optimum = packing if forest.gap <= 1e-9 and packing >= lower else None
        elif packing <= lower * (1 + 1e-9):
            optimum = max(lower, packing_bound)
    return CollectiveBound(
        op,
        size,
        lower,
        optimum,
        parts,
        packing,
        packing_bound,
        len(forest.trees),
        time.perf_counter() - start,
    )


def bandwidth_only(platform: Platform, size: int, model: Any = None) -> bool:
    """Whether every resource's busy time is proportional to the bytes (no per-message
    part): the model's usage at ``2 size`` is twice that at ``size``."""
    from .planners.steady import model_problem

    one = model_problem(platform, 0, size, model).usage
    two = model_problem(platform, 0, 2 * size, model).usage
    diff = abs(two - 2 * one)
    return bool(diff.max() <= 1e-12 * max(abs(two).max(), 1e-300)) if diff.nnz else True


def reach_all(platform: Platform, model: Any = None) -> float:
    """The longest, over ordered pairs ``(u, v)``, of the fastest time one byte takes from
    ``u`` to ``v`` (hops at the model's one-byte delay): every member's result depends on
    every member's contribution (:func:`hetcoll.bounds.reach_bound`'s proof, per pair)."""
    from .bounds import one_byte_distances

    n = len(platform)
    dist = one_byte_distances(platform, model)
    off = dist[~np.eye(n, dtype=bool)]
    far = float(off.max()) if off.size else 0.0
    return far if far > n * np.finfo(float).tiny else 0.0


def port_rates(platform: Platform, size: int, model: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``(send, recv)``: the most bytes per second each node can send (receive) in all,
    with messages of ``size`` bytes: an LP over its outgoing (incoming) edges under every
    resource of the model (ports, links)."""
    from .planners.steady import _Master, model_problem

    p = model_problem(platform, 0, size, model)
    usage = p.usage.tocsc()
    out = []
    for ends in (p.src, p.dst):
        rates = np.zeros(p.n)
        for v in range(p.n):
            edges = np.flatnonzero(ends == v)
            sub = usage[:, edges].tocsr()
            rows = np.unique(sub.nonzero()[0])
            if not len(rows):
                rates[v] = math.inf if len(edges) else 0.0
                continue
            # busy seconds per message of a few bytes are far below HiGHS's smallest
            # matrix entry (1e-9): columns scaled by the largest, rates scaled back
            scale = float(abs(sub.data).max())
            sub = (sub[rows] / scale).tocsc()
            lp = _Master([-math.inf] * len(rows), [1.0] * len(rows))
            for k in range(len(edges)):
                col = sub[:, [k]]
                lp.add(-1.0, col.indices, col.data)
            rates[v] = -lp.solve()[0] / scale * max(size, 1)
        out.append(rates)
    return out[0], out[1]


def port_bounds(platform: Platform, size: int, model: Any = None) -> dict[str, float]:
    """``{"port": ..., "count": ...}`` for an allreduce of ``size`` bytes (seconds).

    ``port``: every node sends at least ``size`` bytes and receives at least ``size`` (the
    others' results depend on each byte of its vector, and its result on each of theirs;
    no byte of a combination of independent inputs carries two positions), so ``T >= size
    / min_v min(send_v, recv_v)`` (:func:`port_rates`).  ``count``: an allreduce sends at
    least ``2 (N - 1)`` messages per position of the vector (one-way gossip with
    combining needs ``2N - 2`` calls: Harary & Schwenk 1974), so ``2 (N - 1) size`` bytes
    in all, at most ``sum_v send_v`` per second: ``T >= 2 (N - 1) size / sum_v send_v``
    (and the same with receives).  Messages of at most ``size`` bytes: the rates of
    :func:`port_rates` bound every schedule (affine costs).
    """
    send, recv = port_rates(platform, size, model)
    n = len(platform)
    worst = float(min(send.min(), recv.min()))
    total = float(min(send.sum(), recv.sum()))
    return {
        "port": size / worst if worst > 0 and math.isfinite(worst) else 0.0,
        "count": 2 * (n - 1) * size / total if total > 0 and math.isfinite(total) else 0.0,
    }


def cut_bound(platform: Platform, size: int, model: Any = None) -> float:
    """``size / min_S min(B+(S), B-(S))`` seconds, ``B+(S)`` the bandwidth of the links
    leaving the node set ``S`` (a graph model's links; 0 for a model without them).

    Proof.  Every node outside ``S`` needs the reduction of inputs inside ``S`` at each of
    the ``size`` positions: at least ``size`` bytes leave ``S`` over its links, each link
    carrying at most its bandwidth (a transfer keeps a link busy at least bytes /
    bandwidth under every graph model), and ``size`` bytes enter it.  The minimum over
    ``S`` is the digraph's global minimum cut: the least maximum flow from node 0 to any
    other node or back (networkx)."""
    import networkx as nx

    from .models import get_model

    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    if getattr(bound, "graph", None) is None or not platform.links:
        return 0.0
    g = nx.DiGraph()
    g.add_nodes_from(platform.ids)
    for link in platform.links:
        pairs = [(link.u, link.v)] if link.directed else [(link.u, link.v), (link.v, link.u)]
        for a, b in pairs:
            cap = link.bandwidth
            if g.has_edge(a, b):
                cap += g[a][b]["capacity"]
            g.add_edge(a, b, capacity=cap)
    if any(math.isinf(c) for _, _, c in g.edges(data="capacity")):
        return 0.0
    first = platform.ids[0]
    least = min(
        min(nx.maximum_flow_value(g, first, v), nx.maximum_flow_value(g, v, first))
        for v in platform.ids[1:]
    )
    return size / least if least > 0 else math.inf


def members_bound(
    platform: Platform,
    op: str,
    size: int,
    members: Sequence[str],
    model: Any = None,
    *,
    packing: bool = False,
    time_limit: float = 30.0,
) -> CollectiveBound:
    """Lower bound on ``op`` (``allgather``, ``reduce_scatter`` or ``allreduce``) of
    ``size`` bytes among ``members`` only, the other nodes routing (a multi-site
    platform's switches); no optimum (a multi-site platform's model has per-message
    costs: see :func:`collective_bound`).  The larger of:

    - ``reach``: the longest, over ordered pairs of members, of one byte's fastest time
      (:func:`reach_all`'s proof, per pair of members);
    - ``port``: an allreduce member sends and receives ``size`` bytes at least
      (:func:`port_bounds`' proof), an allgather member receives the others' blocks,
      ``(N - 1) size / N`` bytes, a reduce-scatter member sends them (its input at every
      position of the others' blocks leaves it, at least one byte per position: no byte
      of a combination of independent inputs carries two positions): over the member's
      best rate of :func:`port_rates`;
    - ``cut`` (a model whose links are held or shared: ``hockney``, the graph models):
      for a node set ``S`` holding member ``a`` and not member ``v``, every member outside
      ``S`` needs, at each position, the reduction of the inputs inside (allreduce:
      ``size`` bytes leave ``S``; reduce-scatter: the positions of its own block,
      ``|members - S| size / N`` bytes), or the blocks of the members inside (allgather:
      ``|S ∩ members| size / N`` bytes), over the links leaving ``S``, each at most its
      bandwidth; ``S`` a minimum cut from ``a`` to ``v`` and from ``v`` to ``a`` (networkx),
      for the first member ``a`` and every other ``v``.  A reduce-scatter's bound is the
      allgather's on the reversed links (each schedule of one, run backwards, is one of
      the other): equal on symmetric links;
    - ``latency_cut`` (model ``hockney`` on links): each ``S`` of ``cut`` again, its bytes
      no earlier than the first message can cross (:func:`latency_cut`): one hop's latency
      plus the cut's bytes over its bandwidth, where ``cut`` counts the bytes alone;
    - with ``packing`` (a model whose transfers are routed end to end): ``packing``, the
      certified bound of the members' per-root packing
      (:mod:`hetcoll.planners.forestmembers`) with ``size``-byte messages (allreduce:
      ``reduce_scatter``, the reduce-scatter's), as in :func:`collective_bound`, which
      also fills ``packing``, ``packing_bound`` and ``trees`` (allreduce: of the
      reduce-scatter + allgather packing).
    """
    import networkx as nx

    from .bounds import one_byte_distances
    from .models import get_model

    if op not in OPS:
        raise ArgumentError(f"op: one of {', '.join(OPS)}, not {op!r}")
    idx = [platform.index(m) for m in members]
    n, size = len(idx), int(size)
    if len(set(idx)) != n:
        raise ArgumentError("members: each node once")
    if n < 2 or size <= 0:
        return CollectiveBound(op, size, 0.0, 0.0 if n < 2 or size == 0 else None)
    dist = one_byte_distances(platform, model)[np.ix_(idx, idx)]
    parts = {"reach": float(dist[~np.eye(n, dtype=bool)].max())}
    send, recv = (rates[idx] for rates in port_rates(platform, size, model))
    if op == "allreduce":
        parts["port"] = size / float(min(send.min(), recv.min()))
    elif op == "allgather":
        parts["port"] = (n - 1) * size / n / float(recv.min())
    else:
        parts["port"] = (n - 1) * size / n / float(send.min())
    spec = get_model(model) if model is not None else platform.model
    held = getattr(spec, "contention", "exclusive") in ("exclusive", "shared")
    parts["cut"] = 0.0
    sides: list[tuple[set[str], float, float]] = []
    if platform.links and held:
        g = nx.DiGraph()
        for link in platform.links:
            ends = [(link.u, link.v)] if link.directed else [(link.u, link.v), (link.v, link.u)]
            for u, v in ends:
                cap = link.bandwidth + (g[u][v]["capacity"] if g.has_edge(u, v) else 0.0)
                g.add_edge(u, v, capacity=cap)
        first, inside = members[0], set(members)
        for v in members[1:]:
            for a, b in ((first, v), (v, first)):
                value, (side, _) = nx.minimum_cut(g, a, b)
                if op == "allreduce":
                    moved = size
                elif op == "allgather":
                    moved = len(inside & side) * size / n
                else:
                    moved = len(inside - side) * size / n
                parts["cut"] = max(parts["cut"], moved / value if value > 0 else math.inf)
                sides.append((side, moved, value))
        if spec.name == "hockney":
            parts["latency_cut"] = latency_cut(platform, members, sides)
    if not packing:
        return CollectiveBound(op, size, max(parts.values()), None, parts)
    import time

    from .planners.forest import pack_forest

    start = time.perf_counter()
    even = [size / n] * n
    if op == "allreduce":
        forest = pack_forest(platform, op, slice_size=size, model=model,
                             time_limit=time_limit, members=members)  # fmt: skip
        rs = pack_forest(platform, "reduce_scatter", even, slice_size=size, model=model,
                         time_limit=time_limit, members=members)  # fmt: skip
        parts["reduce_scatter"] = rs.bound
        time_of, bound_of = forest.time * size, forest.bound * size
    else:
        forest = pack_forest(platform, op, even, slice_size=size, model=model,
                             time_limit=time_limit, members=members)  # fmt: skip
        parts["packing"] = bound_of = forest.bound
        time_of = forest.time
    seconds = time.perf_counter() - start
    return CollectiveBound(
        op, size, max(parts.values()), None, parts, time_of, bound_of, len(forest.trees), seconds
    )


def latency_cut(
    platform: Platform, members: Sequence[str], sides: Sequence[tuple[set[str], float, float]]
) -> float:
    """The largest ``L(S) + moved / B+(S)`` seconds over ``sides``, each ``(S, moved,
    B+(S))``: a node set ``S``, the bytes that must leave it among ``members`` (as
    :func:`members_bound`'s ``cut`` counts them) and the bandwidth of its links leaving it;
    ``L(S)`` the least ``t_ini[u] + alpha(u, v)`` (the sender's start-up and the route's
    latency) over the ordered pairs of members whose route leaves ``S``.  Model
    ``hockney`` on a link platform (a multi-site platform's WAN), exclusive or shared.

    Proof.  Let a schedule end at ``T``.  The ``moved`` bytes leave ``S`` in messages
    between members whose route crosses a link leaving ``S`` (the only nodes that send are
    members; a message that ends after ``T`` feeds nothing), and each such message of
    ``n`` bytes started at ``t >= 0`` arrives by ``T``.  Under ``"shared"`` contention its
    bytes flow over its links in ``[t + lead, arrival]``, ``lead = t_ini[u] + n t_byte[u] +
    alpha(u, v) >= L(S)``, and the flows crossing the links leaving ``S`` add up to at
    most ``B+(S)`` bytes per second at every instant, so ``moved <= B+(S) (T - L(S))``.
    Under ``"exclusive"`` contention a message holds each link ``e`` of its route for its
    whole time, ``>= L(S) + n / b_e``, one message at a time: if ``D_e`` bytes cross ``e``
    (at least one message), ``T >= L(S) + D_e / b_e``, and as ``sum_e D_e >= moved`` some
    link leaving ``S`` has ``D_e / b_e >= moved / B+(S)``.  Either way ``T >= L(S) + moved
    / B+(S)``.  It is reached: two hosts, one per site, exchanging their blocks (an
    allgather) or their vectors (an allreduce) in one message each way take exactly that
    (``tests/test_latency_cut.py``).  A platform's size curve (exclusive links only: the
    shared ones refuse it) prices ``n`` bytes as ``effective(n) >= m n`` bytes, ``m`` its
    least scale, so the bytes' term is taken ``m`` times (:mod:`hetcoll.sizecurve`).
    """
    routes = platform.routes
    curve = platform.size_curve
    scale = 1.0 if curve is None or curve.is_identity() else min(curve.scales)
    if not sides or not routes.has_links:
        return 0.0
    idx = np.array([platform.index(m) for m in members])
    u, v = (a.ravel() for a in np.meshgrid(idx, idx, indexing="ij"))
    u, v = u[u != v], v[u != v]
    lat, _, resources, offsets = routes.pairs(u, v)
    lead = np.asarray(platform.t_ini, float)[u] + np.asarray(lat, float)
    resources, offsets = np.asarray(resources), np.asarray(offsets)
    count = len(routes.resource_bandwidth)
    ends = np.array([routes.resource_ends(r) for r in range(count)]).reshape(count, 2)
    ids = platform.ids
    best = 0.0
    for side, moved, value in sides:
        if moved <= 0:
            continue
        inside = np.array([ids[k] in side for k in range(len(ids))])
        leaving = inside[ends[:, 0]] & ~inside[ends[:, 1]]
        crossed = np.concatenate([[0], np.cumsum(leaving[resources])])
        crossing = crossed[offsets[1:]] > crossed[offsets[:-1]]
        if value <= 0 or not crossing.any():
            return math.inf
        best = max(best, float(lead[crossing].min()) + scale * moved / value)
    return best
