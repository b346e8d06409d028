"""The one comparison service: one applicability rule for auto, ``hetcoll compare``, the demo."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import load_platform, plan, simulate
from hetcoll.cli import main
from hetcoll.compare import candidates, compare
from hetcoll.errors import PlannerError
from hetcoll.planners import REGISTRY, applicable
from hetcoll.platform import Platform, nodes_from_costs


def hockney(n: int, seed: int) -> Platform:
    rng = np.random.default_rng(seed)
    lat = rng.uniform(1e-5, 1e-3, (n, n))
    lat = (lat + lat.T) / 2
    np.fill_diagonal(lat, 0)
    costs = rng.choice([1, 2, 3, 5, 8], n) * 1e-4
    return Platform(
        nodes_from_costs(costs, 1e-8),
        latency=lat,
        bandwidth=np.full((n, n), 1e8),
        model="hockney",
    )


@st.composite
def requests(draw):
    n = draw(st.integers(2, 9))
    model = draw(st.sampled_from(["tini", "postal", "hockney"]))
    p = hockney(n, draw(st.integers(0, 1000))).with_model(model)
    root = str(draw(st.integers(0, n - 1)))
    others = [i for i in p.ids if i != root]
    members = draw(st.one_of(st.none(), st.permutations(others).map(lambda xs: xs[: 1 + n // 2])))
    return p, root, members, draw(st.sampled_from([0, 1024]))


@settings(max_examples=30, deadline=None)
@given(requests())
def test_auto_ranks_exactly_what_compare_ranks(req):
    """auto and compare apply one rule: the same candidates, the same winner (before, auto
    also ran the postal planners under tini, compare did not)."""
    p, root, members, nbytes = req
    op = "bcast" if members is None else "multicast"
    found = compare(p, op, root=root, members=members, nbytes=nbytes)
    chosen = plan(p, root, members, method="auto", nbytes=nbytes)
    assert set(chosen.params["candidates"]) == {c.algorithm for c in found.ranked}
    assert chosen.params["chosen"] == found.best.algorithm
    assert simulate(p, chosen).makespan == pytest.approx(found.best.predicted_time)
    times = [c.predicted_time for c in found.ranked]
    assert times == sorted(times)


def test_the_rule_reads_the_registry_metadata():
    names, left_out = candidates("bcast", "hockney", 8)
    assert "optimal" not in names and "exact only under tini" in left_out["optimal"]
    assert "auto" not in names and "auto" not in left_out  # the selector is no candidate
    assert "gap_aware" in names  # designed for postal, ranked by the simulator anyway
    assert not any(REGISTRY[n].kind == "hypercube" for n in [*names, *left_out])
    names, left_out = candidates("bcast", "tini", 25)
    assert "at most 24 members" in left_out["optimal"]
    assert candidates("barrier", "tini", 5)[0] == sorted(
        k for k, v in REGISTRY.items() if v.kind == "hypercube"
    )
    assert "fnf_joint" in candidates("multi_multicast", "tini", 4)[0]
    assert "fnf_joint" not in candidates("multicast", "tini", 4)[0]
    for op, model, n in [("bcast", "tini", 8), ("multicast", "postal", 30), ("barrier", "x", 3)]:
        assert applicable(op, model, n) == candidates(op, model, n)[0]


def test_a_planner_designed_for_another_model_can_win():
    """Why ``models`` does not exclude: gap_aware (postal) beats every model-free tree
    planner on this Hockney platform, so auto must see it."""
    p = hockney(8, 0)
    found = compare(p, "bcast", root="0")
    free = [c for c in found.ranked if REGISTRY[c.algorithm].models is None]
    assert found.best.predicted_time < min(c.predicted_time for c in free)
    assert plan(p, "0", method="auto").params["chosen"] == found.best.algorithm


def test_hypercube_comparison_rows():
    """An allreduce's candidates are the hypercube embeddings, the trees (a reduce then
    a broadcast) and the per-root schedules (``ring``: every member's block reduced to it,
    then broadcast from it; ``site_exchange``: park-fig2's eight one-node sites swap
    their partial sums); only the embeddings have an embedding and a gain over blind."""
    p = load_platform("park-fig2")
    found = compare(p, "allreduce")
    rows = {r["algorithm"]: r for r in found.rows()}
    cubes = {"blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls"}
    assert {a for a, r in rows.items() if "embedding" in r} == cubes
    assert {"binomial", "rooted_ls", "rooted_exact"} <= set(rows) - cubes
    assert "ring" in rows
    for name in set(rows) - cubes:
        sched = found.get(name).schedule
        kinds = [f.kind for f in sched.flows]
        if name == "site_exchange":  # one exchange flow per share, an owner per site
            assert kinds == ["exchange"] * len(kinds) and len(kinds) == 1
            assert len(sched.flows[0].owners()) == len(p.ids)
        elif sched.per_root:  # a reduce flow and a broadcast flow per owner's share
            k = kinds.count("reduce")
            assert kinds == ["reduce"] * k + ["bcast"] * k and 0 < k <= len(p.ids)
        else:
            assert kinds == ["reduce", "bcast"]
        assert "gain_vs_blind" not in rows[name]
    assert rows["blind"]["gain_vs_blind"] == 0.0
    assert min(r["ratio"] for r in rows.values()) == 1.0
    assert all(sorted(rows[c]["embedding"]) == list(p.ids) for c in cubes)


def test_a_declined_request_is_reported_with_its_reason():
    p = load_platform("fig1")
    found = compare(p, "bcast", root="1", algos=["fnf", "eff_cube"])
    assert [c.algorithm for c in found.ranked] == ["fnf"]
    assert "does not plan a bcast" in found.skipped["eff_cube"]
    with pytest.raises(PlannerError, match=r"no planner applies.*eff_cube"):
        compare(p, "bcast", root="1", algos=["eff_cube"])


def test_compare_json_reports_the_rule_s_exclusions(capsys):
    """Planners the rule leaves out are listed under "skipped" with the reason."""
    code = main(["compare", "park-fig2", "--root", "A", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert "exact only under tini" in doc["skipped"]["optimal"]
    assert doc["best"] == doc["results"][0]["algorithm"]
    assert set(doc["results"][0]) == {"algorithm", "predicted_time", "throughput", "ratio"}
