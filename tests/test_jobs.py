"""The jobs layer: one launch, one result document, clear errors (<= 4 ranks, timeouts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetcoll import load_platform, plan, simulate
from hetcoll.compare import compare
from hetcoll.errors import HetcollError
from hetcoll.generators import figueira_platform
from hetcoll.jobs import JobError, Run, entries, launch
from hetcoll.mpich import native, predict
from hetcoll.platform import Platform, nodes_from_costs

P4 = Platform(nodes_from_costs([0.7e-3, 1.5e-3, 0.7e-3, 1.5e-3]), name="p4")
ENTRY = {"measured_time", "predicted_time", "ratio", "late", "per_repeat"}


def test_a_run_round_trips_through_json_and_rejects_unknown_keys():
    run = Run(P4, "bcast", "fnf", baselines=("binomial",), sizes=(4, 100), repeat=2)
    again = Run.from_dict(run.to_dict())
    assert again.to_dict() == run.to_dict() and again.platform == P4.to_dict()
    with pytest.raises(HetcollError, match=r"unknown run key.*planners"):
        Run.from_dict({**run.to_dict(), "planners": ["fnf"]})
    with pytest.raises(HetcollError, match="operation"):
        Run(P4, "scan")
    assert Run(P4, "barrier").message_sizes == (0,) and Run(P4).message_sizes == (4,)


@pytest.mark.mpi
def test_one_job_two_operations_one_document_shape():
    """A broadcast run (two sizes) and a barrier run in one job: a document per size, the
    same header, every entry with its prediction (the simulator's, times the scale)."""
    cube = figueira_platform(4, 5, base_latency=1e-3, seed=1)
    runs = [
        Run(P4, "bcast", "fnf", ("binomial", "fnf"), sizes=(4, 100), repeat=2, time_scale=2.0),
        Run(cube, "barrier", "eff_cube", ("blind",), native=False, repeat=2, loop=2),
    ]
    result = launch(runs, 4, timeout=180)
    assert set(result["versions"]) == {"hetcoll", "python", "numpy", "mpi4py", "mpi"}
    (bcast, barrier) = result["runs"]
    assert [d["nbytes"] for d in bcast["documents"]] == [4, 100]
    for doc in bcast["documents"]:
        assert doc["operation"] == "bcast" and doc["ranks"] == 4 and doc["root"] == "0"
        # fnf as a baseline of itself: the same measurement, listed as asked
        # and MPI's own: emulated (MPICH's algorithm through the engine), the un-emulated
        # one kept apart (not compared)
        names = [e["algorithm"] for e in entries(doc)]
        assert names == ["fnf", "binomial", "mpi", "native", "fnf"]
        assert doc["baselines"]["fnf"]["measured_time"] == doc["measured_time"]
        for e in entries(doc):
            assert set(e) >= ENTRY and e["late"] >= 0 and e["measured_time"] > 0
        for name in ("fnf", "binomial"):
            want = compare(P4, root="0", nbytes=doc["nbytes"], algos=[name]).best
            e = next(x for x in entries(doc) if x["algorithm"] == name)
            assert e["predicted_time"] == pytest.approx(2.0 * want.predicted_time)
            assert e["tree"] == {p: list(c) for p, c in want.schedule.tree.children.items()}
        assert doc["baselines"]["native"]["predicted_time"] is None
        assert doc["baselines"]["native"]["emulated"] is False
        mpi = doc["baselines"]["mpi"]
        nat = native("bcast", list(P4.ids), doc["nbytes"])
        assert mpi["mpich"] == "binomial" == nat.algorithm
        assert mpi["predicted_time"] == pytest.approx(2.0 * predict(P4, nat.program))
        assert doc["speedup_vs_mpi"] == pytest.approx(mpi["measured_time"] / doc["measured_time"])
    (doc,) = barrier["documents"]
    assert doc["operation"] == "barrier" and doc["nbytes"] == 0 and "root" not in doc
    assert [e["algorithm"] for e in entries(doc)] == ["eff_cube", "blind"]
    blind = doc["baselines"]["blind"]
    assert blind["predicted_time"] == pytest.approx(
        simulate(cube, compare(cube, "barrier", algos=["blind"]).best.schedule).makespan
    )
    assert blind["loop_predicted_time"] <= blind["predicted_time"] + 1e-12
    header = set(bcast["documents"][0]) - set(entries(bcast["documents"][0])[0])
    assert header - {"root", "segment_size"} == set(doc) - set(entries(doc)[0])


@pytest.mark.mpi
def test_a_failing_job_is_one_job_error_with_the_ranks_message():
    with pytest.raises(JobError) as err:
        launch([Run(P4, repeat=1)], 3, timeout=120)
    assert str(err.value).startswith("the MPI job failed (exit 2): the platform has 4 nodes")
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)


@pytest.mark.mpi
def test_a_job_that_outlives_its_timeout_is_stopped():
    slow = Run(load_platform("testbed16").to_dict(), repeat=1, time_scale=100.0)
    with pytest.raises(JobError, match="did not finish within 3 s"):
        launch([slow], 16, timeout=3)


def test_tune_candidates_keep_an_unsliced_plan_where_the_fastest_are_sliced():
    """50 MiB on examples/net.json: the simulator's two fastest broadcasts are pipelined,
    but tune also measures the fastest unsliced tree (on one host a pipelined broadcast
    predicted fastest measured slower than an unsliced one); MPI's own comes first."""
    from types import SimpleNamespace

    from hetcoll.jobs.tune import _plans

    p = load_platform(str(Path(__file__).parents[1] / "examples" / "net.json"))
    hc = SimpleNamespace(platform=p, nodes=list(p.ids), time_scale=1.0)
    found = _plans(hc, "bcast", 50 << 20, 2)
    mpi, *plans = found
    assert mpi["algorithm"] == "mpi"
    assert [c["segment_size"] is None for c in plans] == [False, False, True]
    best_whole = min(
        (c for c in compare(p, "bcast", root="0", nbytes=50 << 20).ranked),
        key=lambda c: c.predicted_time,
    )
    assert plans[2]["predicted"] == best_whole.predicted_time
    small = _plans(hc, "bcast", 8, 2)  # the fastest are unsliced already: nothing added
    assert len(small) == 3


def test_tune_candidates_of_an_allreduce_are_hypercubes():
    """The runtime runs an allreduce on hypercubes only; a tree allreduce the comparison
    ranks first (rooted_exact on this 4-node platform) made every rank of ``hetcoll tune``
    fail with "cube_algo: 'rooted_exact' is not a hypercube planner"."""
    from types import SimpleNamespace

    from hetcoll.jobs.tune import _plans
    from hetcoll.planners.hypercube import hypercube_planners
    from hetcoll.platform import Platform, nodes_from_costs

    t_ini, t_byte = [0.7e-3, 1.5e-3, 0.7e-3, 3.0e-3], [5e-8, 5e-8, 5e-8, 1e-7]
    p = Platform(nodes_from_costs(t_ini, t_byte), name="four")
    hc = SimpleNamespace(platform=p, nodes=list(p.ids), time_scale=1.0)
    for collective in ("allreduce", "allgather", "barrier"):
        mpi, *plans = _plans(hc, collective, 0 if collective == "barrier" else 65536, 3)
        assert mpi["algorithm"] == "mpi" and plans
        assert {c["algorithm"] for c in plans} <= set(hypercube_planners()), plans


def test_a_cube_runs_auto_predicted_as_the_wrapper_runs_it():
    """HetComm's Allreduce(algo="auto") runs the best hypercube plan (Planning.cube), so a
    job predicts "auto" as that plan, not as the best of every planner (on star8 a ring,
    which the wrapper does not run: measured against it, the ratio was the two plans')."""
    from hetcoll.choice import charged_message_cost
    from hetcoll.hetcomm import Planning
    from hetcoll.jobs.ranks import _predictions

    p = load_platform("star8")
    n = 1 << 20
    run = Run(p, "allreduce", "blind", baselines=("auto",), native=False, sizes=(n,))
    planning = Planning("fnf", None, None, {})  # as HetComm sets it for the job's wrapper
    planning.message_cost = charged_message_cost(None, emulated=True, time_scale=run.time_scale)
    call = {"collective": "allreduce", "nbytes": n, "op": "sum", "algo": "auto", "members": None}
    ran = planning.cube(p, call)
    found = _predictions(run, p, "0", n)
    assert found.get("auto").predicted_time == simulate(p, ran).makespan
    assert found.get("auto").schedule.algorithm == ran.algorithm != "ring"
    everything = compare(p, "allreduce", nbytes=n, op="sum", algos=["auto"])
    assert everything.get("auto").predicted_time < found.get("auto").predicted_time


def test_a_broadcast_runs_auto_predicted_as_the_wrapper_plans_it():
    """HetComm's Bcast(algo="auto") under emulation plans the auto planner charged the
    engine's cost per message (Planning._charged), which slices more coarsely than the
    planner alone: a job predicts "auto" as that schedule (on a Fig. 4 platform of 8 nodes,
    1 MiB at x20, multi_tree in 8 KiB slices was predicted while lp_grow in 32 KiB ran)."""
    from hetcoll.choice import charged_message_cost
    from hetcoll.generators import random_graph_platform
    from hetcoll.hetcomm import Planning
    from hetcoll.jobs.ranks import _predictions

    p = random_graph_platform(8, 0.4, seed=1)
    n = 1 << 20
    run = Run(p, "bcast", "auto", native=False, sizes=(n,), time_scale=20.0)
    planning = Planning("auto", None, None, {})  # as HetComm sets it for the job's wrapper
    planning.message_cost = charged_message_cost(None, emulated=True, time_scale=20.0)
    ran = plan(p, p.ids[0], method="auto", nbytes=n, options=planning._charged("auto"))
    found = _predictions(run, p, p.ids[0], n)
    assert found.get("auto").schedule.params == ran.params
    assert found.get("auto").predicted_time == simulate(p, ran).makespan
    alone = plan(p, p.ids[0], method="auto", nbytes=n)
    assert alone.params["segment_size"] < ran.params["segment_size"]


# -- what a default wrapper runs, measured in rounds ------------------------------------------


def test_default_is_for_hypercube_operations_and_rounds_are_at_least_one():
    with pytest.raises(HetcollError, match="default: measured for allreduce, allgather"):
        Run(P4, "bcast", "fnf", baselines=("default",))
    with pytest.raises(HetcollError, match="rounds: must be >= 1, got 0"):
        Run(P4, "allreduce", rounds=0)
    run = Run(P4, "allreduce", "default", baselines=("ring",), rounds=3)
    assert Run.from_dict(run.to_dict()).to_dict() == run.to_dict()


def _cube(method, times, late=0.0, nbytes=8):
    from hetcoll.runtime.measure import CubeMeasurement

    return CubeMeasurement(
        "allreduce", method, nbytes, len(times), measured_time=min(times),
        median_time=sorted(times)[len(times) // 2], per_repeat=list(times), late=late,
    )  # fmt: skip


def test_rounds_merge_into_one_entry_keeping_each_rounds_least():
    from hetcoll.jobs.ranks import _merged

    m = _merged([_cube("ring", [3.0, 4.0], 0.1), _cube("ring", [2.0, 5.0], 0.2)])
    assert m.per_round == [3.0, 2.0] and m.per_repeat == [3.0, 4.0, 2.0, 5.0]
    assert m.measured_time == 2.0 and m.late == 0.2  # the least call's lateness
    assert m.median_time == 3.5 and m.method == "ring"


def test_the_default_entry_is_predicted_as_the_plan_it_chose():
    """The default wrapper's entry names what it ran (``chosen``) and is predicted as that
    plan, or as MPICH's algorithm when it gave the call to MPI."""
    from hetcoll.jobs.ranks import _document

    p = load_platform("star8")
    n = 64 << 10
    run = Run(p, "allreduce", "default", ("ring",), native=False, sizes=(n,), time_scale=10.0)
    ring = _cube("ring", [2.0], nbytes=n)
    doc = _document(run, p, 8, "0", n, {"default": _cube("forest", [1.0], nbytes=n), "ring": ring})
    assert doc["algorithm"] == "default" and doc["chosen"] == "forest"
    want = compare(p, "allreduce", nbytes=n, op="sum", algos=["forest"]).get("forest")
    assert doc["predicted_time"] == pytest.approx(10.0 * want.predicted_time)
    assert "chosen" not in doc["baselines"]["ring"]
    doc = _document(run, p, 8, "0", n, {"default": _cube("mpi", [1.0], nbytes=n), "ring": ring})
    nat = native("allreduce", list(p.ids), n, count=n // 8)
    assert doc["chosen"] == "mpi" and doc["mpich"] == nat.algorithm
    assert doc["predicted_time"] == pytest.approx(10.0 * predict(p, nat.program))


@pytest.mark.mpi
def test_the_default_runs_its_choice_beside_baselines_round_by_round():
    from hetcoll.choice import charged_message_cost, choose
    from hetcoll.generators import star_platform

    p = star_platform(4, ("25Gbps", "10Gbps"), "5us")
    n = 4096
    run = Run(p, "allreduce", "default", ("ring",), sizes=(n,), repeat=1, rounds=3, time_scale=10.0)
    (doc,) = launch([run], 4, timeout=300)["runs"][0]["documents"]
    assert [e["algorithm"] for e in entries(doc)] == ["default", "ring", "mpi", "native"]
    for e in entries(doc):
        assert len(e["per_round"]) == 3 and e["measured_time"] == min(e["per_round"])
    cost = charged_message_cost(None, emulated=True, time_scale=10.0)
    want = choose(p, "allreduce", n, list(p.ids), op="sum", count=n // 8, emulated=True,
                  message_cost=cost)  # fmt: skip
    assert doc["chosen"] == want.algorithm
