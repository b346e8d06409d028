"""``auto`` across hetcoll's plans and MPI's own (hetcoll.choice), and tuning files
(hetcoll.tuning): the margin rule exactly, the tuning file's rules first, one-line errors
for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import load_platform
from hetcoll.choice import Choice, choose, mpi_time
from hetcoll.errors import HetcollError
from hetcoll.mpich import native, predict
from hetcoll.planners import plan
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.simulator import simulate
from hetcoll.tuning import Rule, load_tuning

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_fig1_plan_beats_mpi_by_the_papers_ratio():
    """Banikazemi et al. Fig. 1: MPICH's binomial 700 us, the best tree 400 us."""
    p = load_platform("fig1")
    c = choose(p, "bcast", 0, list(p.ids), root="1")
    assert c.algorithm == "auto" and c.source == "model"
    assert c.mpi == pytest.approx(700e-6) and c.predicted == pytest.approx(400e-6)


def test_margin_decides_exactly():
    p = load_platform("fig1")
    ratio = 700 / 400  # the plan's predicted speed-up
    below = choose(p, "bcast", 0, list(p.ids), root="1", margin=ratio - 1 - 1e-9)
    above = choose(p, "bcast", 0, list(p.ids), root="1", margin=ratio - 1 + 1e-9)
    assert below.algorithm == "auto" and above.algorithm == "mpi"
    assert above.predicted == below.predicted and above.mpi == below.mpi


def test_a_segment_size_predicted_slower_than_mpi_is_not_picked():
    """fig1, 1 KiB from node 1: unsegmented, the best tree beats MPICH's binomial (400 vs
    700 us); a wrapper's or call's ``segment_size`` of 1-64 bytes makes every plan pay a
    message per slice (4.2-213 ms predicted), and ``auto`` then gives the call to MPI."""
    p = load_platform("fig1")
    assert choose(p, "bcast", 1024, list(p.ids), root="1").algorithm == "auto"
    for seg in (1, 16, 64):
        c = choose(p, "bcast", 1024, list(p.ids), root="1", segment_size=seg)
        assert c.algorithm == "mpi" and c.predicted > c.mpi == pytest.approx(700e-6), seg


def test_mpi_time_is_the_mpich_program_time():
    p = load_platform("testbed16")
    nodes = list(p.ids)
    for coll, n in (("bcast", 1 << 20), ("allreduce", 8 << 10), ("barrier", 0)):
        nat = native(coll, nodes, n, count=n // 8 if coll == "allreduce" else None)
        want = predict(p, nat.program)
        got = mpi_time(p, coll, n, nodes, root=nodes[0], count=n // 8 if n else None)
        assert got == want > 0


def test_homogeneous_small_calls_stay_with_mpi():
    """No heterogeneity: no plan beats MPICH's binomial by the margin at small sizes."""
    p = Platform(nodes_from_costs([20e-6] * 8, [1e-9] * 8), model="tini")
    for n in (0, 8, 1024, 8192):
        for root in ("0", "5"):
            assert choose(p, "bcast", n, list(p.ids), root=root).algorithm == "mpi"
    assert choose(p, "barrier", 0, list(p.ids)).algorithm == "mpi"
    assert choose(p, "allreduce", 8, list(p.ids), op="sum", count=1).algorithm == "mpi"


def test_given_algo_and_non_commutative():
    p = load_platform("fig1")
    assert choose(p, "bcast", 10, list(p.ids), root="1", algo="fnf") == Choice("fnf")
    c = choose(p, "allreduce", 64, list(p.ids), op="user", commutative=False, builtin=False)
    assert c.algorithm == "mpi"


def test_choice_is_deterministic():
    p = load_platform("testbed16")
    a = [choose(p, "bcast", n, list(p.ids), root="3") for n in (8, 1 << 16, 1 << 22)]
    b = [choose(p, "bcast", n, list(p.ids), root="3") for n in (8, 1 << 16, 1 << 22)]
    assert a == b


def test_the_planned_schedule_is_the_one_predicted():
    p = load_platform("testbed16")
    c = choose(p, "bcast", 1 << 20, list(p.ids), root="0")
    s = plan(p, "0", method="auto", nbytes=1 << 20)
    assert simulate(p, s).makespan == c.predicted


TUNING = {
    "format": "hetcoll-tuning",
    "version": 1,
    "ranks": 9,
    "rules": {
        "bcast": [
            {"from_bytes": 0, "algorithm": "mpi"},
            {"from_bytes": 1000, "algorithm": "chain", "segment_size": 4096},
            {"from_bytes": 10**6, "algorithm": "mpi"},
        ]
    },
}


def test_tuning_rules_come_first():
    p = load_platform("fig1")
    t = load_tuning(TUNING)
    assert t.lookup("bcast", 999) == Rule(0, "mpi")
    assert t.lookup("bcast", 1000) == Rule(1000, "chain", 4096)
    assert t.lookup("bcast", 10**6) == Rule(10**6, "mpi")
    assert t.lookup("allreduce", 8) is None
    c = choose(p, "bcast", 5000, list(p.ids), root="1", tuning=t)
    assert (c.algorithm, c.segment_size, c.source) == ("chain", 4096, "tuning")
    c = choose(p, "bcast", 0, list(p.ids), root="1", tuning=t)  # the model would plan
    assert (c.algorithm, c.source) == ("mpi", "tuning")
    assert choose(p, "barrier", 0, list(p.ids), tuning=t).source == "model"


def test_tuning_round_trip(tmp_path):
    t = load_tuning(TUNING)
    assert t.message_cost is None  # not measured: the wrapper falls back to the constant
    path = tmp_path / "t.json"
    path.write_text(t.to_json())
    assert load_tuning(str(path)) == t
    measured = load_tuning({**TUNING, "message_cost": 3.0517578125e-4})
    path.write_text(measured.to_json())
    back = load_tuning(str(path))
    assert back == measured and back.message_cost == 3.0517578125e-4
    assert load_tuning({**TUNING, "message_cost": 0}).message_cost == 0.0


@pytest.mark.parametrize("value", [-1e-6, float("nan"), float("inf"), "200us", True, [1e-4]])
def test_a_bad_message_cost_is_one_line(tmp_path, value):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**TUNING, "message_cost": value}))  # NaN, Infinity as JSON has them
    with pytest.raises(HetcollError) as err:
        load_tuning(str(path))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: message_cost: expected seconds per message")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "x"}, "not a hetcoll tuning file"),
        ({"ranks": 0}, "ranks"),
        ({"rules": {"gather": []}}, "unknown collective 'gather'"),
        ({"rules": {"bcast": [{"from_bytes": -1, "algorithm": "mpi"}]}}, "from_bytes"),
        ({"rules": {"bcast": [{"from_bytes": 0, "algorithm": "fnff"}]}}, "unknown planner"),
        (
            {"rules": {"bcast": [{"from_bytes": 5, "algorithm": "mpi"}] * 2}},
            "increasing",
        ),
        ({"rules": {"bcast": [{"from_bytes": 0, "algorithm": "mpi", "x": 1}]}}, "unknown key"),
        # whether the file's message_cost is charged hangs on it: "false" is not false
        ({"emulated": "false"}, "emulated: expected true or false"),
        ({"emulated": 0}, "emulated: expected true or false"),
    ],
)
def test_bad_tuning_is_one_line(change, message):
    with pytest.raises(HetcollError, match=message):
        load_tuning({**TUNING, **change})


def test_tuning_file_errors(tmp_path):
    with pytest.raises(HetcollError, match="cannot read"):
        load_tuning(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(HetcollError, match="not JSON"):
        load_tuning(str(bad))
    bad.write_text(json.dumps([1]))
    with pytest.raises(HetcollError, match="not a hetcoll tuning file"):
        load_tuning(str(bad))


def test_a_platform_that_cannot_carry_mpi():
    """one_port: only linked neighbours talk; MPICH's direct sends cannot be predicted or
    emulated there, so natively MPI keeps the call and under emulation the plan runs."""
    from hetcoll.platform import Platform

    p = Platform.from_dict(
        {
            "model": "one_port",
            "nodes": [{"id": str(i)} for i in range(4)],
            "links": [
                {"u": "0", "v": "1", "bandwidth": 1e8},
                {"u": "1", "v": "2", "bandwidth": 1e8},
                {"u": "2", "v": "3", "bandwidth": 1e8},
            ],
        }
    )
    native = choose(p, "bcast", 1 << 16, list(p.ids), root="0")
    emulated = choose(p, "bcast", 1 << 16, list(p.ids), root="0", emulated=True)
    assert native.algorithm == "mpi" and native.mpi is None
    assert emulated.algorithm == "auto" and emulated.predicted == native.predicted


@settings(max_examples=30)
@given(
    t_ini=st.lists(st.floats(1e-6, 5e-3), min_size=2, max_size=8),
    per_byte=st.floats(1e-10, 1e-7),
    slow=st.floats(1.0, 20.0),
    data=st.data(),
)
def test_auto_never_picks_a_plan_predicted_slower_than_mpi(t_ini, per_byte, slow, data):
    """Whatever the platform, call and margin, ``auto`` runs a plan only where the simulator
    predicts it faster than MPICH's own algorithm by the margin; MPI's time is recomputed
    here from :mod:`hetcoll.mpich` (not from ``choose``), a broadcast's plan from the
    ``auto`` planner and the simulator."""
    n = len(t_ini)
    t_byte = [per_byte * (slow if k % 2 else 1.0) for k in range(n)]
    p = Platform(nodes_from_costs(t_ini, t_byte), model="tini")
    nodes = list(p.ids)
    coll = data.draw(st.sampled_from(["bcast", "allreduce", "barrier"]))
    nbytes = 0 if coll == "barrier" else data.draw(st.sampled_from([8, 4096, 1 << 20, 50 << 20]))
    margin = data.draw(st.sampled_from([0.0, 0.25, 1.0]))
    root = data.draw(st.sampled_from(nodes)) if coll == "bcast" else None
    count = nbytes // 4 if coll == "allreduce" else None
    c = choose(p, coll, nbytes, nodes, root=root, op="sum", count=count, margin=margin)
    nat = native(coll, nodes, nbytes, root=nodes.index(root) if root else 0, count=count, op="sum")
    t_mpi = predict(p, nat.program)
    assert c.mpi == pytest.approx(t_mpi, rel=1e-12)
    if c.passes:
        assert not c.predicted * (1 + margin) < t_mpi
        return
    assert c.predicted * (1 + margin) < t_mpi
    if coll == "bcast":
        s = plan(p, root, method=c.algorithm, nbytes=nbytes)
        assert simulate(p, s).makespan == pytest.approx(c.predicted, rel=1e-12)


@settings(max_examples=10)
@given(
    t_ini=st.lists(st.floats(1e-7, 1e-4), min_size=2, max_size=5),
    per_byte=st.floats(1e-10, 1e-8),
    nbytes=st.sampled_from([8, 4096, 1 << 20]),
    collective=st.sampled_from(["allreduce", "allgather"]),
)
def test_auto_all_plan_is_the_fastest_tree_or_hypercube(t_ini, per_byte, nbytes, collective):
    """``auto``'s plan for an allreduce or allgather is the fastest, by the simulator, of
    every hypercube planner, every tree planner whose schedule the engine runs (a reduce
    or gather to rank 0 then a broadcast), forest and (allreduce) butterfly_pipelined,
    recomputed here planner by planner; a tree
    chosen is one the engine runs; the margin rule against MPI's time holds."""
    from hetcoll.choice import tree_runs
    from hetcoll.compare import compare
    from hetcoll.planners.hypercube import hypercube_planners

    p = Platform(nodes_from_costs(t_ini, [per_byte] * len(t_ini)), model="tini")
    nodes = list(p.ids)
    reduce = collective == "allreduce"
    op, count = ("sum", nbytes // 4) if reduce else (None, None)
    c = choose(p, collective, nbytes, nodes, op=op, count=count)
    cubes = set(hypercube_planners())
    trees = compare(p, collective, root=nodes[0], nbytes=nbytes, op=op).ranked
    everything = compare(p, collective, nbytes=nbytes, op=op).ranked
    times, schedules = {}, {}
    for x in [*trees, *(y for y in everything if y.algorithm in cubes)]:
        s = x.schedule  # each schedule simulated here, not taken from the ranking
        if x.algorithm in cubes or (tree_runs(s) and x.segment_size is None):
            times[x.algorithm], schedules[x.algorithm] = simulate(p, s).makespan, s
    assert any(n in cubes for n in times) and any(n not in cubes for n in times)
    times["forest"] = _forest_time(p, collective, nbytes)  # per root: the engine runs it too
    if reduce:  # ... and the pipelined butterfly's
        times["butterfly_pipelined"] = _forest_time(p, collective, nbytes, "butterfly_pipelined")
    assert c.predicted == pytest.approx(min(times.values()), rel=1e-9)
    assert times[c.plan] == pytest.approx(c.predicted, rel=1e-9)
    assert c.plan in (*cubes, "forest", "butterfly_pipelined") or tree_runs(schedules[c.plan])
    assert c.passes == (not c.predicted * 1.25 < c.mpi)


def test_auto_runs_allreduce_on_a_tree_where_one_is_fastest():
    """One slow rank among eight: a tree (reduce to rank 0, then broadcast) is predicted
    faster than every hypercube planner and MPI's recursive doubling by the margin, and
    auto runs it (the engine runs such trees: ``choice.tree_runs``)."""
    from hetcoll.choice import best_cube, tree_runs
    from hetcoll.compare import compare
    from hetcoll.planners.hypercube import hypercube_planners

    p = Platform(nodes_from_costs([1e-6] * 7 + [20e-6], [1e-9] * 8), model="tini")
    nodes = list(p.ids)
    c = choose(p, "allreduce", 8, nodes, op="sum", count=1, emulated=True)
    assert c.algorithm not in hypercube_planners() and c.algorithm != "mpi"
    s = plan(p, nodes[0], method=c.algorithm, nbytes=8, collective="allreduce")
    assert tree_runs(s)
    cube = compare(p, "allreduce", nbytes=8, op="sum").get(
        best_cube(p, "allreduce", 8, None, "sum")
    )
    assert c.predicted < simulate(p, cube.schedule).makespan and c.predicted * 1.25 < c.mpi


def test_auto_runs_allgather_on_a_tree_where_one_is_fastest():
    """testbed16 at 8 B per rank: a gather to rank 0 then a broadcast is predicted faster
    than every hypercube planner and MPI's own by the margin, and auto runs it (the engine
    runs such trees, ``choice.tree_runs``; before, auto's plan for an allgather was always
    a hypercube)."""
    from hetcoll.choice import best_cube, tree_runs
    from hetcoll.compare import compare
    from hetcoll.planners.hypercube import hypercube_planners

    p = load_platform("testbed16")
    nodes = list(p.ids)
    c = choose(p, "allgather", 8, nodes, emulated=True)
    assert c.algorithm not in hypercube_planners() and c.algorithm != "mpi"
    s = plan(p, nodes[0], method=c.algorithm, nbytes=8, collective="allgather")
    assert tree_runs(s) and simulate(p, s).makespan == pytest.approx(c.predicted, rel=1e-12)
    cube = compare(p, "allgather", nbytes=8).get(best_cube(p, "allgather", 8, None, None))
    assert c.predicted < simulate(p, cube.schedule).makespan and c.predicted * 1.25 < c.mpi


def test_tree_runs_names_what_the_engine_runs():
    """An allreduce or allgather from two flows meeting at one root without relays; not a
    hypercube, not a reduce-scatter, not a lone gather."""
    from hetcoll.choice import tree_runs
    from hetcoll.planners.hypercube import plan_allgather

    p = load_platform("fig1")
    root = p.ids[0]
    for coll in ("allreduce", "allgather"):
        assert tree_runs(plan(p, root, method="fnf", nbytes=64, collective=coll))
    for coll in ("gather", "reduce_scatter"):
        assert not tree_runs(plan(p, root, method="fnf", nbytes=64, collective=coll))
    assert not tree_runs(plan_allgather(p, method="eff_cube", nbytes=64))


def _forest_time(p, coll, nbytes, name="forest"):
    align = {"align": 4} if coll == "allreduce" else None
    s = plan(p, None, method=name, nbytes=nbytes, collective=coll, options=align)
    return simulate(p, s).makespan


@settings(max_examples=12, deadline=None)
@given(
    t_ini=st.lists(st.floats(1e-6, 1e-4), min_size=2, max_size=6),
    per_byte=st.floats(1e-10, 1e-8),
    slow=st.floats(1.0, 8.0),
    coll=st.sampled_from(["allgather", "allreduce"]),
    nbytes=st.sampled_from([4096, 1 << 16, 1 << 20]),
    margin=st.sampled_from([0.0, 0.25, 1.0]),
)
def test_auto_weighs_forest_beside_the_others_and_mpi(t_ini, per_byte, slow, coll, nbytes, margin):
    """``auto`` weighs ``forest``'s per-root schedule (which the engine runs) beside the
    hypercubes, the trees and MPI's own: it never runs a plan predicted slower than MPI's
    algorithm by the margin, and it runs ``forest`` wherever forest is predicted fastest of
    all by more than the margin; forest's and MPI's times recomputed here from the planner,
    the simulator and :mod:`hetcoll.mpich`."""
    n = len(t_ini)
    t_byte = [per_byte * (slow if k % 2 else 1.0) for k in range(n)]
    p = Platform(nodes_from_costs(t_ini, t_byte), model="tini")
    nodes = list(p.ids)
    count = nbytes // 4 if coll == "allreduce" else None
    c = choose(p, coll, nbytes, nodes, op="sum", count=count, margin=margin, emulated=True)
    t_mpi = predict(p, native(coll, nodes, nbytes, count=count, op="sum").program)
    t_forest = _forest_time(p, coll, nbytes)
    assert c.mpi == pytest.approx(t_mpi, rel=1e-12)
    assert c.predicted <= t_forest * (1 + 1e-12)  # the best plan: forest or better
    if c.passes:
        assert not c.predicted * (1 + margin) < t_mpi
    else:
        assert c.predicted * (1 + margin) < t_mpi and c.algorithm == c.plan
    if t_forest < c.predicted * (1 + 1e-12) and t_forest * (1 + margin) < t_mpi:
        assert c.algorithm == "forest"  # predicted fastest beyond the margin: it runs


def test_auto_runs_forest_where_it_is_predicted_fastest():
    """examples/net.json, 1 MiB: forest's allgather is predicted 2.2x MPI's speed and over
    twice the best hypercube's, its allreduce 1.40x MPI's, faster than every hypercube and
    tree: auto runs it (before, per-root schedules were no candidate and auto ran MPI's)."""
    from hetcoll.choice import best_cube
    from hetcoll.planners import plan_hypercube

    p = load_platform(str(EXAMPLES / "net.json"))
    nodes = list(p.ids)
    for coll, count in (("allgather", None), ("allreduce", 1 << 18)):
        c = choose(p, coll, 1 << 20, nodes, op="sum", count=count, emulated=True)
        assert c.algorithm == c.plan == "forest"
        assert c.predicted == pytest.approx(_forest_time(p, coll, 1 << 20), rel=1e-12)
        assert c.predicted * 1.25 < c.mpi
    cube = best_cube(p, "allgather", 1 << 20, None, None)
    t_cube = simulate(p, plan_hypercube(p, "allgather", None, method=cube, nbytes=1 << 20))
    assert _forest_time(p, "allgather", 1 << 20) * 2 < t_cube.makespan
