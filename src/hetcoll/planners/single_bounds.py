"""Lower bounds on the run of pipelined trees of a plan graph, computed without simulating
them: :mod:`.multitree` skips the candidates whose bound already exceeds the fastest found
(their simulation could not change the choice)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from ..schedule import Schedule
from .pipelined import PlanGraph

__all__ = ["bound_problem", "flows_bound", "hops_bound", "port_bound", "tree_floor"]


def port_bound(prob, tree: list[int], total: int) -> float:
    """No less than the makespan of one pipelined tree (plan-graph edges ``tree``) carrying
    ``total`` slices: its busiest resource is busy its load (per full slice, the row of
    ``prob``) for each of the ``total - 1`` full slices (the argument of
    :func:`hetcoll.bounds.rate_bound`; the last slice may be short)."""
    return float(prob.loads(tree).max(initial=0.0)) * (total - 1) * (1 - 1e-9)


def tree_floor(prob, g: PlanGraph, total: int) -> float:
    """No more than :func:`port_bound` of any tree that reaches every node of the plan
    graph ``g`` from its root (``prob``'s edges ``g``'s): such a tree has an edge into each
    other node, which loads some resource at least its heaviest entry of ``prob``, and a
    sum of nonnegative loads is no less than any of its terms (in floats too).  So: over
    the nodes, the largest of the least heaviest entries of their edges in; 0 when a node
    has no edge in or a load is negative."""
    usage = prob.usage.tocsc()
    if usage.nnz and usage.data.min() < 0:
        return 0.0
    heaviest = np.asarray(usage.max(axis=0).toarray()).ravel()  # per edge
    least = np.full(g.k, np.inf)
    np.minimum.at(least, g.dst, heaviest)
    least[g.root] = 0.0
    if not np.all(np.isfinite(least)):
        return 0.0
    return float(least.max(initial=0.0)) * (total - 1) * (1 - 1e-9)


def hops_bound(prob, req, g: PlanGraph, s: Schedule, total: int) -> float:
    """:func:`port_bound` of single trees whose edges may be relayed (``binomial_graph``'s):
    each hop of each tree edge a plan-graph edge (counted once per tree edge it carries),
    0 when a hop is none (no bound known)."""
    edges = _flow_edges(req, g, s)
    if edges is None:
        return 0.0
    return port_bound(prob, [e for f in edges for e in f], total)


def flows_bound(prob, req, g: PlanGraph, s: Schedule) -> float:
    """No less than the makespan of ``s``, pipelined trees that each carry their flow's
    slices: every resource is busy its load (the rows of ``prob``, per full slice) for
    each slice of each flow, less one slice of the flow that loads it most (at most one
    slice of the message is short); 0 when a hop is not a plan-graph edge."""
    edges = _flow_edges(req, g, s)
    if edges is None:
        return 0.0
    busy = np.zeros(prob.rows)
    most = np.zeros(prob.rows)
    for f, tree in zip(s.flows, edges, strict=True):
        load = prob.loads(tree)
        busy += load * (-(-f.nbytes // f.segment_size) if f.segment_size else 1)
        np.maximum(most, load, out=most)
    return float((busy - most).max(initial=0.0)) * (1 - 1e-9)


def _flow_edges(req, g: PlanGraph, s: Schedule) -> list[list[int]] | None:
    """Per flow of ``s``, the plan-graph edges of its transfers (each hop of a relayed
    edge); None when a hop is not a plan-graph edge."""
    local = {req.ids[x]: k for k, x in enumerate(g.nodes.tolist())}
    index = {pair: e for e, pair in enumerate(zip(g.src.tolist(), g.dst.tolist(), strict=True))}
    out = []
    for f in s.flows:
        relay = f.relay_of()
        edges = []
        for u, v in f.tree.edges():
            for a, b in pairwise((u, *relay.get((u, v), ()), v)):
                e = index.get((local.get(a, -1), local.get(b, -1)))
                if e is None:
                    return None
                edges.append(e)
        out.append(edges)
    return out


def bound_problem(platform, req, g: PlanGraph):
    """The problem whose resource loads bound a run of the plan graph's trees (the
    one-port ports, or the multi-port model's ports and links), None when none is known
    (a multicast: its trees' hops may be relayed through other nodes)."""
    from .steady import model_problem

    if req.collective != "bcast":
        return None
    if g.ports != "multi":
        return g.problem()
    prob = model_problem(platform, req.root, req.message_size(), req.model)
    same = np.array_equal(prob.src, g.src) and np.array_equal(prob.dst, g.dst)
    return prob if same else None
