"""``auto`` stops at the lower bound: an allgather, reduce-scatter or allreduce on every
node does not plan ``forest`` (seconds of play-outs and simulations) once a cheaper
candidate is within 0.1 % of the lower bound (the cut, port and count bounds of
:mod:`hetcoll.allbounds`, no packing)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import hetcoll.compare
from hetcoll import plan, simulate
from hetcoll.allbounds import collective_bound
from hetcoll.choice import choose
from hetcoll.compare import plan_request
from hetcoll.generators import star_platform
from hetcoll.planners import REGISTRY

MIB = 2**20
NEAR = 1e-3  # hetcoll.compare.NEAR: 0.1 %


@pytest.fixture
def planned(monkeypatch):
    """The planner names :func:`hetcoll.compare.plan_request` and ``forest`` are asked for,
    in order."""
    names: list[str] = []
    real = hetcoll.compare.plan_request
    forest = REGISTRY["forest"]

    def counted(platform, operation, method, **kw):
        names.append(method)
        return real(platform, operation, method, **kw)

    def counted_forest(*a, **kw):
        names.append("forest (planner)")
        return forest_func(*a, **kw)

    forest_func = forest.func
    monkeypatch.setattr(hetcoll.compare, "plan_request", counted)
    monkeypatch.setitem(REGISTRY, "forest", replace(forest, func=counted_forest))
    return names


def star():
    return star_platform(8, ("25Gbps", "10Gbps"), "5us")


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_a_candidate_at_the_bound_ends_the_search_before_forest(planned, op):
    """16 MiB blocks on a star of 8 NICs at two speeds: the hypercube (allgather) and
    recursive halving (reduce-scatter) are within 0.04 % of the bound, so forest is not
    planned; before, it was, for 3 of auto's 3.5 CPU seconds at 4 MiB."""
    p = star()
    s = plan(p, None, method="auto", collective=op, nbytes=16 * MIB)
    bound = collective_bound(p, op, 8 * 16 * MIB).lower_bound
    assert "forest" not in planned and "forest (planner)" not in planned
    assert "forest" not in s.params["candidates"]
    assert simulate(p, s).makespan <= bound * (1 + NEAR)
    assert s.params["chosen"] == ("blind" if op == "allgather" else "halving")
    # what forest would have planned is no faster than auto's choice by more than 0.1 %
    alone = simulate(p, plan_request(p, op, "forest", nbytes=16 * MIB)).makespan
    assert simulate(p, s).makespan <= alone * (1 + NEAR)


def test_forest_is_planned_last_while_no_candidate_is_near_the_bound(planned):
    """An allreduce on the same star: the best of the others is 1.07x the bound, so forest
    and the pipelined butterfly (both search their own segments) are planned after every
    other candidate; the butterfly is the faster."""
    p = star()
    s = plan(p, None, method="auto", collective="allreduce", nbytes=16 * MIB)
    assert s.params["chosen"] == "butterfly_pipelined"
    assert s.params["candidates"]["butterfly_pipelined"] < s.params["candidates"]["forest"]
    assert planned.count("forest") == 1 and "forest (planner)" in planned
    at = planned.index("forest")
    others = [
        k for k, name in enumerate(planned) if name in REGISTRY and not REGISTRY[name].own_slices
    ]
    assert max(others) < at  # after every planner that does not search its own slicing


@pytest.mark.parametrize("op", ["allgather", "allreduce"])
def test_the_bound_packs_no_forest_of_its_own(monkeypatch, op):
    """auto's bound is the one without a packing (collective_bound's packings cost 9 CPU s
    on a 64-node allreduce, as much as forest's own): no packing is solved but forest's
    (planners/forestplan.py, which holds its own name for it), and that one only where no
    candidate meets the bound (the allreduce)."""
    import importlib

    module = importlib.import_module("hetcoll.planners.forest")  # hetcoll.planners.forest
    packed = []  # is the planner function
    real = module.pack_forest
    monkeypatch.setattr(module, "pack_forest", lambda *a, **k: packed.append(a[1]) or real(*a, **k))
    p = star()
    s = plan(p, None, method="auto", collective=op, nbytes=16 * MIB)
    assert packed == []
    assert ("forest" in s.params["candidates"]) == (op == "allreduce")


def test_compare_without_a_bound_plans_forest(planned):
    """``hetcoll compare`` (no bound) still ranks every candidate."""
    p = star()
    found = hetcoll.compare.compare(p, "allgather", nbytes=16 * MIB)
    assert "forest" in {c.algorithm for c in found.ranked}


def test_the_runtime_choice_skips_forest_at_the_bound(monkeypatch):
    """``choose`` (HetComm's per-call auto) does not plan forest when the best hypercube or
    tree is within 0.1 % of the bound: the same answer, without forest's search."""
    import hetcoll.choice

    asked = []
    real = hetcoll.choice._per_root_plan
    monkeypatch.setattr(
        hetcoll.choice, "_per_root_plan", lambda *a, **k: asked.append(a) or real(*a, **k)
    )
    p = star()
    got = choose(p, "allgather", 16 * MIB, list(p.ids), margin=0.0)
    assert not asked
    assert got.plan == "blind"
    got = choose(p, "allreduce", 16 * MIB, list(p.ids), count=2 * MIB, op="sum")
    # 1.07x the bound otherwise: the per-root plans are weighed, the butterfly the faster
    assert len(asked) == 1 and got.algorithm == "butterfly_pipelined"
