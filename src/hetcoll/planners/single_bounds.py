"""Lower bounds on the run of one pipelined tree of a plan graph, computed without
simulating it: :mod:`.multitree` skips the single-tree candidates whose bound already
exceeds the fastest found (their simulation could not change the choice)."""

from __future__ import annotations

from itertools import pairwise

from ..schedule import Schedule
from .pipelined import PlanGraph

__all__ = ["hops_bound", "port_bound"]


def port_bound(prob, tree: list[int], total: int) -> float:
    """No less than the makespan of one pipelined tree (plan-graph edges ``tree``) carrying
    ``total`` slices: its busiest resource is busy its load (per full slice, the row of
    ``prob``) for each of the ``total - 1`` full slices (the argument of
    :func:`hetcoll.bounds.rate_bound`; the last slice may be short)."""
    return float(prob.loads(tree).max(initial=0.0)) * (total - 1) * (1 - 1e-9)


def hops_bound(prob, req, g: PlanGraph, s: Schedule, total: int) -> float:
    """:func:`port_bound` of single trees whose edges may be relayed (``binomial_graph``'s):
    each hop of each tree edge a plan-graph edge (counted once per tree edge it carries),
    0 when a hop is none (no bound known)."""
    local = {req.ids[x]: k for k, x in enumerate(g.nodes.tolist())}
    index = {pair: e for e, pair in enumerate(zip(g.src.tolist(), g.dst.tolist(), strict=True))}
    edges = []
    for f in s.flows:
        relay = f.relay_of()
        for u, v in f.tree.edges():
            for a, b in pairwise((u, *relay.get((u, v), ()), v)):
                e = index.get((local.get(a, -1), local.get(b, -1)))
                if e is None:
                    return 0.0
                edges.append(e)
    return port_bound(prob, edges, total)
