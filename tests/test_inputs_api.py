"""Bad calls to the Python API raise the project's own exceptions, naming the culprit.

A survey of the public entry points: a bad *value* raises a
:class:`~hetcoll.errors.HetcollError` subclass whose message names the argument or field and
what was wrong; an object of the wrong kind entirely (``None`` where a platform goes) raises
``TypeError``.  Never a raw ``KeyError``, ``IndexError``, ``AttributeError``,
``ZeroDivisionError`` or numpy ``ValueError`` from deep inside, never a warning.
"""

from __future__ import annotations

import warnings

import pytest

from hetcoll import (
    Flow,
    Hypercube,
    Node,
    Platform,
    Schedule,
    Tree,
    calc_cost,
    get_model,
    load_platform,
    plan,
    plan_allreduce,
    plan_multiple,
    simulate,
)
from hetcoll.errors import (
    ArgumentError,
    HetcollError,
    ModelError,
    PlannerError,
    PlatformError,
    ScheduleError,
)
from hetcoll.generators import (
    classes_tini,
    drift,
    drift_series,
    eight_sites,
    figueira_platform,
    grid_platform,
    two_class_tini,
)
from hetcoll.generators import (
    testbed as make_testbed,
)
from hetcoll.levels import levels
from hetcoll.planners import plan_hypercube
from hetcoll.rng import as_rng, spawn_seeds

FIG1 = load_platform("fig1")
PARK = load_platform("park-fig2")
BCAST = plan(FIG1, "1")


def doc(**change):
    out = BCAST.to_dict()
    out.update(change)
    return out


def two_nodes(**kw):
    return {"nodes": [{"id": "a"}, {"id": "b"}], **kw}


# (call, exception, text the message must contain)
BAD_VALUES = [
    # platforms
    (lambda: load_platform({"nodes": "ab"}), PlatformError, "nodes: must be a non-empty list"),
    (lambda: load_platform({"nodes": [1]}), PlatformError, "nodes[0]: must be an object"),
    (lambda: load_platform(two_nodes(links={})), PlatformError, "links: must be a list"),
    (lambda: load_platform(two_nodes(latency="x")), PlatformError, "latency: must be a list"),
    (lambda: load_platform(two_nodes(latency=[[0, [1]], [1, 0]])), PlatformError, "latency[0][1]"),
    (
        lambda: load_platform(two_nodes(links=[{"u": "a", "v": "b", "latency": [1]}])),
        PlatformError,
        "links[0].latency: must be a time",
    ),
    (
        lambda: load_platform(two_nodes(links=[{"u": ["a"], "v": "b"}])),
        PlatformError,
        "links[0].u: must be a string",
    ),
    (lambda: load_platform({1: 2}), PlatformError, "1: unknown field"),
    (lambda: load_platform({"nodes": [{"id": "a", 1: 2}]}), PlatformError, "nodes[0].1: unknown"),
    (lambda: load_platform(two_nodes(description=[1])), PlatformError, "description: must be"),
    (lambda: load_platform(two_nodes(model={"name": "postal", "gap": {}})), PlatformError, "gap"),
    (lambda: Platform("ab"), PlatformError, "nodes: must be a list"),
    (lambda: Platform([Node("a", float("nan"))]), PlatformError, "t_ini: must be a number"),
    (lambda: Platform([Node("a", "1e309")]), PlatformError, "nodes[0].t_ini: must be a finite"),
    (lambda: Platform([Node("a", 1e300)]), PlatformError, "nodes[0].t_ini: must be at most"),
    (lambda: Platform([Node("a", site=5)]), PlatformError, "nodes[0].site: must be a string"),
    (lambda: Platform([Node("a")], links=[5]), PlatformError, "links[0]: must be a Link"),
    (lambda: Platform([Node("a")], model=5), PlatformError, "model: expected a name or an object"),
    (lambda: Platform([Node("a")], name=5), PlatformError, "name: must be a string"),
    (lambda: FIG1.labels("x"), ArgumentError, "level must be"),
    # cost models
    (lambda: get_model({"name": ["tini"]}), ModelError, "name must be a string"),
    (lambda: get_model({"name": "postal", 1: 1}), ModelError, "parameter names are strings"),
    (lambda: get_model({"name": "postal", "gap": None}), ModelError, "gap: must be a time"),
    (lambda: get_model({"name": "postal", "gap": "1e400"}), ModelError, "gap: must be a finite"),
    (lambda: get_model({"name": "postal", "overhead": "-1s"}), ModelError, "overhead: must be"),
    # planners
    (lambda: plan(FIG1, "1", 5), PlannerError, "members: must be a list of node ids"),
    (lambda: plan(FIG1, "1", options=5), PlannerError, "options: must be a mapping"),
    (lambda: plan(FIG1, "1", nbytes=10**30), PlannerError, "size: must be at most"),
    (lambda: plan(FIG1, "1", nbytes=10**400), PlannerError, "size: must be at most"),
    (lambda: plan(FIG1, "1", segment_size=0), PlannerError, "segment size: must be a positive"),
    (lambda: plan(FIG1, "1", nbytes=10**9, segment_size=1), ScheduleError, "262144 per schedule"),
    (lambda: plan(FIG1, "1", model={"name": "postal", "gap": "x"}), ModelError, "gap: cannot read"),
    (lambda: plan_multiple(FIG1, [("1",)]), PlannerError, "groups[0]: must be a (root, members)"),
    (lambda: plan_multiple(FIG1, ["1"]), PlannerError, "groups[0]: must be a (root, members)"),
    (lambda: plan_multiple(FIG1, 5), PlannerError, "groups: must be a list"),
    (lambda: plan_allreduce(FIG1, nbytes=10**400), PlannerError, "size: must be at most"),
    (lambda: plan_allreduce(FIG1, 5), PlannerError, "members: must be a list"),
    (lambda: plan_hypercube(FIG1, 5), PlannerError, "not 5"),
    (lambda: simulate(FIG1, BCAST, {"name": ["x"]}), ModelError, "name must be a string"),
    # schedules
    (lambda: Schedule.from_dict(doc(flows=5)), ScheduleError, "flows: must be a list"),
    (lambda: Schedule.from_dict(doc(flows=[5])), ScheduleError, "flows[0]: must be an object"),
    (lambda: Schedule.from_dict(doc(flows=[{}])), ScheduleError, "flows[0].root: missing"),
    (
        lambda: Schedule.from_dict(doc(flows=[{"root": "1", "children": [], "nbytes": 0}])),
        ScheduleError,
        "flows[0].children: must be an object",
    ),
    (
        lambda: Schedule.from_dict(doc(flows=[{"root": None, "children": {}, "nbytes": 0}])),
        ScheduleError,
        "flows[0].root: must be a node id",
    ),
    (lambda: Schedule.from_dict(doc(params=5)), ScheduleError, "params: must be an object"),
    (lambda: Schedule.from_dict(doc(order=5)), ScheduleError, "order: must be an object"),
    (lambda: Schedule.from_dict(doc(order={"1": [[0]]})), ScheduleError, "order['1'][0]"),
    (lambda: Schedule.from_dict(doc(hypercube=5)), ScheduleError, "hypercube: must be an object"),
    (
        lambda: Schedule.from_dict(doc(flows=[], hypercube={"positions": [["a"]]})),
        ScheduleError,
        "hypercube.positions[0]: must be a node id",
    ),
    (
        lambda: Schedule.from_dict(doc(flows=[], hypercube={"positions": ["1", "2"], "dims": "1"})),
        ScheduleError,
        "hypercube.dims: must be an integer",
    ),
    (lambda: Schedule.from_json("[" * 100_000), ScheduleError, "nested deeper than"),
    (lambda: Schedule.from_json("1" * 5000), ScheduleError, "not valid JSON"),
    (lambda: Schedule("bcast", "x", 0, (5,)), ScheduleError, "flows[0]: must be a Flow"),
    (lambda: Schedule("bcast", 5, 0, BCAST.flows), ScheduleError, "algorithm: must be a string"),
    (lambda: Schedule("bcast", "x", 0, BCAST.flows, params=[1]), ScheduleError, "params"),
    (
        lambda: Schedule("bcast", "x", 0, BCAST.flows, order={"1": [("a", "2")]}),
        ScheduleError,
        "order['1'][0][0]",
    ),
    (lambda: BCAST.members(5), ScheduleError, "buffer 5: no such buffer"),
    (lambda: Tree("1", {"1": "23"}), ScheduleError, "children['1'] must be a list of node ids"),
    (lambda: Tree("1", 5), ScheduleError, "children must map a node"),
    (lambda: Tree("1", {"1": [["2"]]}), ScheduleError, "node ['2'] is not a string id"),
    (lambda: Tree.from_edges("1", [("1",)]), ScheduleError, "edges[0]: must be a (parent, child)"),
    (lambda: Tree.from_dict({}), ScheduleError, "tree.root: missing"),
    (lambda: Flow(BCAST.tree, "1k"), ScheduleError, "flow.nbytes: must be an integer"),
    (lambda: Flow(BCAST.tree, 2**60), ScheduleError, "flow.nbytes: must be at most"),
    (lambda: Hypercube(5), ScheduleError, "hypercube.positions: must be a list"),
    (lambda: Hypercube(["a", ["b"]]), ScheduleError, "hypercube.positions[1]"),
    (lambda: Hypercube(["a", "b"], combine=[1]), ScheduleError, "unknown operator"),
    # randomness and generators
    (lambda: as_rng(-1), ArgumentError, "seed: must be >= 0"),
    (lambda: spawn_seeds(-1, 2), ArgumentError, "seed: must be >= 0"),
    (lambda: spawn_seeds(1, -2), ArgumentError, "n: must be >= 0"),
    (lambda: two_class_tini(8, "x"), ArgumentError, "fast_fraction"),
    (lambda: two_class_tini("8", 0.5), ArgumentError, "n must be an integer"),
    (lambda: two_class_tini(2.5, 0.5), ArgumentError, "n must be an integer"),
    (lambda: two_class_tini(8, 0.5, t_fast=-1), ArgumentError, "t_fast: must be"),
    (lambda: two_class_tini(8, 0.5, seed=-1), ArgumentError, "seed: must be >= 0"),
    (lambda: two_class_tini(8, 0.5, speed_factor=float("nan")), ArgumentError, "speed_factor"),
    (lambda: classes_tini(4, []), ArgumentError, "values: must be a non-empty list"),
    (lambda: classes_tini(4, "ab"), ArgumentError, "values: must be a non-empty list"),
    (lambda: classes_tini(4, [-1]), ArgumentError, "values[0]: must be"),
    (lambda: make_testbed("4"), ArgumentError, "n must be an integer"),
    (lambda: make_testbed(4, 2, t_fast="x"), ArgumentError, "t_fast: cannot read 'x'"),
    (lambda: make_testbed(4, 2, scale=-1), ArgumentError, "scale: must be"),
    (lambda: grid_platform(layout=5), ArgumentError, "layout: must be a list"),
    (lambda: grid_platform(layout=[["a"]]), ArgumentError, "layout: must be a whole number"),
    (lambda: grid_platform(latency={"heavy": "x"}), ArgumentError, "latency['heavy']"),
    (lambda: grid_platform(latency={"heavy": (1,)}), ArgumentError, "latency['heavy']"),
    (lambda: grid_platform(latency=5), ArgumentError, "latency: must map levels"),
    (lambda: grid_platform(t_byte=float("nan")), ArgumentError, "t_byte: must be a number"),
    (lambda: grid_platform(seed=-1), ArgumentError, "seed: must be >= 0"),
    (lambda: eight_sites(latency=(1,)), ArgumentError, "latency['heavy']"),
    (lambda: drift(PARK, "x"), ArgumentError, "times: cannot read 'x'"),
    (lambda: drift(PARK, float("nan")), ArgumentError, "times: must be a number"),
    (lambda: drift(PARK, 10, step=0), ArgumentError, "step: must be"),
    (lambda: drift(PARK, 10, period=0), ArgumentError, "period: must be"),
    (lambda: list(drift_series(PARK, 5)), ArgumentError, "times: must be a list"),
    (lambda: figueira_platform(8, seed=-1), ArgumentError, "seed: must be >= 0"),
    (lambda: figueira_platform(4, base_latency="x"), ArgumentError, "base_latency"),
    (lambda: levels(PARK, matrix=[[0]]), ArgumentError, "matrix: must be 8 x 8"),
    (lambda: levels(PARK, matrix="x"), ArgumentError, "matrix: must be an array of numbers"),
    (lambda: calc_cost([[0, 1], [1, 0]], [0, 1], [("a",)]), ArgumentError, "folds"),
    (lambda: calc_cost([[0, 1e300], [1e300, 0]], [0, 1]), ArgumentError, "must be at most"),
]

WRONG_KINDS = [
    lambda: load_platform(None),
    lambda: load_platform(5),
    lambda: Platform.from_networkx(5),
    lambda: plan("fig1", "1"),
    lambda: plan_allreduce(None),
    lambda: simulate(FIG1, None),
    lambda: simulate("fig1", BCAST),
    lambda: BCAST.validate(5),
    lambda: Schedule.concurrent([BCAST, 5]),
    lambda: as_rng("x"),
]


@pytest.mark.parametrize(("call", "error", "text"), BAD_VALUES)
def test_a_bad_value_raises_a_hetcoll_error_naming_it(call, error, text):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning on the way
        with pytest.raises(HetcollError) as info:
            call()
    assert isinstance(info.value, error), repr(info.value)
    assert text in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("call", WRONG_KINDS)
def test_an_object_of_the_wrong_kind_is_a_type_error(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize(
    ("setting", "text"),
    [
        ({"timeout": "x"}, "timeout: cannot read 'x'"),
        ({"timeout": float("nan")}, "timeout: must be a number"),
        ({"timeout": -1}, "timeout: must be a finite number > 0"),
        ({"time_scale": float("inf")}, "time_scale: must be a finite number > 0"),
        ({"segment_size": -5}, "segment_size: must be"),
        ({"segment_size": "x"}, "segment_size: must be a positive integer"),
        ({"algo": "nope"}, "unknown planner 'nope'"),
        ({"options": 5}, "options: must be a dict"),
        ({"model": "magic"}, "unknown model 'magic'"),
        ({"spin": -1}, "spin: must be"),
        ({"poll": "x"}, "poll: cannot read 'x'"),
    ],
)
def test_hetcomm_settings_are_checked_on_one_rank(setting, text):
    from mpi4py import MPI

    from hetcoll import HetComm

    with pytest.raises(HetcollError, match=text.replace("(", r"\(")):
        HetComm(MPI.COMM_SELF, {"nodes": [{"id": "a"}]}, **setting)
