"""The search that proves no single tree fits a limit (:func:`~hetcoll.planners.single_bounds.
no_tree_within`), and the planning it spares (``multi_tree``'s single trees, ``auto``'s
single-tree planners), against brute force: every spanning arborescence of small platforms,
and every (planner, slice size) of a request."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hetcoll import plan, simulate
from hetcoll.compare import compare, slice_choices
from hetcoll.errors import ModelError, PlannerError
from hetcoll.generators import random_graph_platform
from hetcoll.planners import REGISTRY, single_bounds
from hetcoll.planners._shared import shared_work
from hetcoll.planners.single_bounds import no_tree_within, trees_exceed
from hetcoll.planners.steady import model_problem


def arborescences(prob):
    """Every spanning arborescence of ``prob``'s edges from its root (edge lists)."""
    into = [[e for e in range(prob.m) if prob.dst[e] == v] for v in range(prob.n)]
    free = [v for v in range(prob.n) if v != prob.root]
    for pick in itertools.product(*(into[v] for v in free)):
        parent = dict(zip(free, (int(prob.src[e]) for e in pick), strict=True))
        ok = True
        for v in free:  # every node leads back to the root
            seen, x = set(), v
            while x != prob.root and x not in seen:
                seen.add(x)
                x = parent[x]
            ok &= x == prob.root
        if ok:
            yield list(pick)


@pytest.mark.parametrize("model", ["one_port", "one_port_uni", "multi_port"])
@pytest.mark.parametrize("seed", range(4))
def test_no_tree_within_only_where_every_tree_is_above_the_limit(model, seed):
    """At limits around the least busiest load of any tree (brute force over every tree),
    the search never claims "no tree" where one fits, and proves it below the least: a
    search that dropped a tree it should keep fails the first assertion, one that proves
    nothing the second."""
    p = random_graph_platform(6, 0.8, seed=seed, model=model)
    prob = model_problem(p, "0", 10**6)
    usage = prob.usage.tocsc()
    loads = [float(usage[:, tree].sum(axis=1).max()) for tree in arborescences(prob)]
    assert len(loads) > 10
    least = min(loads)
    proved = 0
    for f in (0.5, 0.9, 0.99, 0.999999, 1.0, 1.000001, 1.01, 1.5):
        limit = least * f
        got = no_tree_within(prob, limit)
        if any(x <= limit for x in loads):
            assert not got, (f, least)
        proved += got
    assert proved >= 3  # every limit below the least (0.5 to 0.99 at least)


def test_the_budget_gives_up_without_a_claim():
    p = random_graph_platform(8, 0.6, seed=1, model="one_port")
    prob = model_problem(p, "0", 10**6)
    least = min(float(prob.usage.tocsc()[:, t].sum(axis=1).max()) for t in arborescences(prob))
    assert no_tree_within(prob, least * 0.999)
    assert not no_tree_within(prob, least * 0.999, budget=0)


def test_trees_exceed_scales_the_limit():
    p = random_graph_platform(6, 0.5, seed=2, model="one_port")
    prob = model_problem(p, "0", 10**6)
    least = min(float(prob.usage.tocsc()[:, t].sum(axis=1).max()) for t in arborescences(prob))
    assert trees_exceed(prob, 100.0, least * 100 * 0.99)
    assert not trees_exceed(prob, 100.0, least * 100)  # the best tree ends there
    assert not trees_exceed(prob, 0.0, 1.0) and not trees_exceed(prob, 100.0, np.inf)


def brute_force(p, nbytes, slices):
    """``(seconds, planner, slice)`` of every candidate planner at every slice size, each
    planned and simulated on its own, fastest first."""
    out = []
    for seg in slices:
        pipelined = seg is not None and nbytes > seg
        for name, info in sorted(REGISTRY.items()):
            if info.unfit("bcast", p.model.name, len(p), pipelined) is not None:
                continue
            try:
                t = simulate(p, plan(p, "0", method=name, nbytes=nbytes, segment_size=seg))
            except (PlannerError, ModelError):
                continue
            out.append((t.makespan, name, seg or 0))
    return sorted(out)


#: (n, seed, proved): one-port Fig. 4 platforms where the search proves at some slice size
#: that no single tree can beat the fastest found (a multi-tree), and one where it cannot
#: (``grow_tree`` wins: every single-tree planner is planned after the others)
CASES = [(8, 0, True), (12, 1, True), (10, 1, False)]


@pytest.mark.parametrize("n, seed, proved", CASES)
def test_pruned_single_trees_agree_with_brute_force(monkeypatch, n, seed, proved):
    """``compare``'s pruned search over slice sizes (``auto``'s) finds the fastest of every
    (planner, slice) of the brute force, and ranks exactly what it ranks when the
    single-tree planners are all planned (the search disabled): skipping them changes no
    choice, no time and no candidate simulated."""
    p = random_graph_platform(n, 0.3, seed=seed, model="one_port")
    nbytes = 2**22
    slices = slice_choices(nbytes)[:4]
    planned = []
    real = single_bounds.no_tree_within

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        planned.append(out)
        return out

    monkeypatch.setattr(single_bounds, "no_tree_within", counted)

    def ranked():
        with shared_work():
            found = compare(p, "bcast", root="0", nbytes=nbytes, slices=slices, prune=True)
        return [(c.algorithm, c.segment_size, c.predicted_time) for c in found.ranked]

    got = ranked()
    t, name, seg = brute_force(p, nbytes, slices)[0]
    assert got[0] == (name, seg or None, pytest.approx(t, rel=1e-12, abs=0))
    assert (True in planned) == proved
    assert (name == "multi_tree") == proved
    monkeypatch.setattr(single_bounds, "no_tree_within", lambda *a, **k: False)
    assert ranked() == got
