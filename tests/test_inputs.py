"""Inputs that cannot produce a wrong answer: every case a new user hit, as a test.

Each bad input gives one line ``hetcoll: error: ...`` and exit 2 on the command line, or the
project's own exception naming the culprit in the Python API; never a traceback, a numpy
warning, an infinite or negative time, or a file half written.
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pytest

from _cli import one_line_error, run
from hetcoll import Platform, Schedule, ScheduleError, load_platform, plan, simulate
from hetcoll.errors import HetcollError, ModelError, PlatformError
from hetcoll.models import get_model


def schedule_doc(children, collective="bcast", root="1", **extra):
    return {
        "format": "hetcoll-schedule",
        "version": 1,
        "collective": collective,
        "algorithm": "hand",
        "nbytes": 0,
        "flows": [{"root": root, "children": children, "nbytes": 0}],
        **extra,
    }


def write_json(path, doc):
    path.write_text(json.dumps(doc))
    return path


# -- 1. a schedule that does not do its job ------------------------------------------------------


def test_simulate_refuses_a_broadcast_that_misses_nodes(capsys, tmp_path):
    path = write_json(tmp_path / "s.json", schedule_doc({"1": ["2"]}))
    code, out, err = run(capsys, "simulate", "fig1", path)
    one_line_error(code, out, err, "node '3' receives nothing", "reaches 2")


def test_simulate_refuses_a_fig1_broadcast_on_testbed16(capsys, tmp_path):
    path = tmp_path / "s.json"
    assert run(capsys, "plan", "fig1", "--root", "1", "-o", path)[0] == 0
    code, out, err = run(capsys, "simulate", "testbed16", path)
    one_line_error(code, out, err, "node '0' receives nothing", "16 nodes")


def test_validate_and_simulate_refuse_a_partial_broadcast_in_the_api():
    fig1, testbed = load_platform("fig1"), load_platform("testbed16")
    partial = Schedule.from_dict(schedule_doc({"1": ["2"]}))
    with pytest.raises(ScheduleError, match="node '3' receives nothing"):
        partial.validate(fig1)
    full = plan(fig1, "1")
    full.validate(fig1)
    with pytest.raises(ScheduleError, match="node '0' receives nothing"):
        full.validate(testbed)
    with pytest.raises(ScheduleError, match="node '0' receives nothing"):
        simulate(testbed, full)
    multicast = plan(fig1, "1", ["2", "3"])
    multicast.validate(fig1, members=["3", "2"])
    with pytest.raises(ScheduleError, match="node '5' receives nothing"):
        multicast.validate(fig1, members=["2", "5"])


def test_a_string_is_not_a_list_of_children(capsys, tmp_path):
    path = write_json(tmp_path / "s.json", schedule_doc({"1": "2345678"}))
    code, out, err = run(capsys, "simulate", "fig1", path)
    one_line_error(code, out, err, "children['1']", "must be a list of node ids", "'2345678'")


@pytest.mark.parametrize(
    ("extra", "flow_extra", "message"),
    [
        ({"buffer": 5}, {}, "buffer: unknown field"),
        ({"model": "quantum"}, {}, "unknown model 'quantum'"),
        ({}, {"buffer": 5}, "flows[0].buffer: is 5 but a bcast moves one buffer"),
        ({}, {"segments": 2}, "flows[0].segments: unknown field"),
        ({"hypercube": {"positions": ["1", "2"], "dim": 1}}, {}, "hypercube.dim: unknown field"),
    ],
)
def test_unknown_keys_in_a_schedule_are_errors(capsys, tmp_path, extra, flow_extra, message):
    doc = schedule_doc({"1": ["2", "3", "4", "5", "6", "7", "8"]}, **extra)
    doc["flows"][0].update(flow_extra)
    path = write_json(tmp_path / "s.json", doc)
    code, out, err = run(capsys, "simulate", "fig1", path)
    one_line_error(code, out, err, message)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nbytes": "lots"}, "nbytes"),
        ({"nbytes": 1.5}, "nbytes: must be an integer"),
        ({"nbytes": 10**400}, "nbytes"),
        ({"params": [1, 2]}, "params: must be an object"),
        ({"order": {"1": [["x", "2"]]}}, "order['1'][0][0]"),
        ({"flows": {"0": {}}}, "flows: must be a list"),
        ({"collective": ["bcast"]}, "unknown collective"),
        ({"version": True}, "unsupported schedule version"),
    ],
)
def test_bad_schedule_fields_name_the_culprit(change, message):
    doc = schedule_doc({"1": ["2"]}, collective="multicast")
    doc.update(change)
    with pytest.raises(ScheduleError) as info:
        Schedule.from_dict(doc)
    assert message in str(info.value)


def test_too_many_segments_are_refused_not_run(capsys):
    args = ["plan", "fig1", "--root", "1", "--size", "1GiB", "--segment-size", "1"]
    code, out, err = run(capsys, *args)
    one_line_error(code, out, err, "segment", "messages")


# -- 2. values that slip past the checks ---------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ('{"name": "postal", "recv_overhead": "-1s"}', "recv_overhead: must be a finite number"),
        ('{"name": "postal", "gap": "nan"}', "gap: must be a number"),
        ('{"name": "postal", "gap": "1e400"}', "gap: must be a finite number"),
        ('{"name": "postal", "gap": "inf"}', "gap: must be a finite number"),
        ('{"name": "postal", "gap": 1e400}', "gap: must be a finite number"),
        ('{"name": "postal", "overhead": [1]}', "overhead: must be a time"),
        ('{"name": "postal", "overhead": "2e20s"}', "overhead: must be at most"),
        ('{"name": ["tini"]}', "name must be a string"),
        ('{"name": {"a": 1}}', "name must be a string"),
    ],
)
def test_model_parameters_go_through_the_one_validator(capsys, model, message):
    code, out, err = run(capsys, "plan", "park-fig2", "--root", "A", "--model", model)
    one_line_error(code, out, err, message)


def test_model_parameters_as_strings_with_units_still_work(capsys):
    code, out, _ = run(
        capsys, "plan", "park-fig2", "--root", "A", "--json",
        "--model", '{"name": "postal", "gap": "40ms", "overhead": "20ms"}',
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert doc["model"] == {"name": "postal", "overhead": 0.02, "gap": 0.04}
    assert all(0 <= t < 10 for t in doc["arrival"].values())


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"id": "1", "t_ini": [1]}, "nodes[0].t_ini: must be a time"),
        ({"id": "1", "t_ini": {"a": 1}}, "nodes[0].t_ini: must be a time"),
        ({"id": "1", "t_ini": None}, "nodes[0].t_ini: must be a time"),
        ({"id": "1", "t_ini": 1e308}, "nodes[0].t_ini: must be at most"),
        ({"id": "1", "t_ini": "1e400"}, "nodes[0].t_ini: must be a finite number"),
        ({"id": "1", "t_byte": "-1ns"}, "nodes[0].t_byte: must be a finite number >= 0"),
        ({"id": "1", "site": ["a"]}, "nodes[0].site: must be a string"),
        ({"id": ["1"]}, "nodes[0].id: must be a string"),
    ],
)
def test_a_list_or_object_where_a_number_goes(capsys, tmp_path, node, message):
    path = write_json(tmp_path / "p.json", {"nodes": [node, {"id": "2"}]})
    out_file = tmp_path / "s.json"
    code, out, err = run(capsys, "plan", path, "--root", "2", "-o", out_file)
    one_line_error(code, out, err, message)
    assert not out_file.exists()


@pytest.mark.parametrize(
    "model", [{"name": ["tini"]}, {"name": "postal", "gap": [1]}, ["tini"], 7, {"name": None}]
)
def test_a_bad_model_in_a_platform_file(capsys, tmp_path, model):
    path = write_json(tmp_path / "p.json", {"model": model, "nodes": [{"id": "1"}, {"id": "2"}]})
    code, out, err = run(capsys, "plan", path, "--root", "1")
    one_line_error(code, out, err, "p.json: model")


def test_huge_finite_costs_never_give_an_infinite_time(capsys, tmp_path):
    nodes = [{"id": str(i), "t_ini": "1e12s", "t_byte": 1e12} for i in range(3)]
    path = write_json(tmp_path / "p.json", {"nodes": nodes})
    code, out, err = run(capsys, "plan", path, "--root", "0", "--size", str(2**53), "--json")
    assert code == 0 and err == ""
    times = json.loads(out)["arrival"].values()
    assert all(np.isfinite(t) and t >= 0 for t in times)
    assert max(times) == pytest.approx(2 * (1e12 + 2**53 * 1e12))


def test_no_numpy_warning_from_a_zero_bandwidth_diagonal():
    doc = {
        "model": "postal",
        "nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}],
        "latency": [[0, 1e-3, 2e-3], [1e-3, 0, 1e-3], [2e-3, 1e-3, 0]],
        "bandwidth": [[0, 1e6, 1e6], [1e6, 0, 1e6], [1e6, 1e6, 0]],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = Platform.from_dict(doc)
        for method in ("fnf", "spoc", "hlot", "gap_aware", "binomial"):
            for nbytes in (0, 1000):
                simulate(p, plan(p, "a", method=method, nbytes=nbytes))
    assert np.isinf(p.bandwidth.diagonal()).all()
    assert Platform.from_dict(p.to_dict()).to_dict() == p.to_dict()


def test_a_binary_schedule_file(capsys, tmp_path):
    path = tmp_path / "s.json"
    path.write_bytes(bytes(range(256)) * 4)
    code, out, err = run(capsys, "simulate", "fig1", path)
    one_line_error(code, out, err, "s.json: not a text file")


def test_a_negative_seed(capsys, tmp_path):
    code, out, err = run(
        capsys, "reproduce", "banikazemi-table2", "--seed", "-1", "--trials", "1", "--out", tmp_path
    )
    one_line_error(code, out, err, "--seed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("sizes", "message"),
    [("a,b", "--sizes: cannot read 'a'"), ("1,,2", "--sizes"), ("", "--sizes")],
)
def test_probe_sizes_are_checked_before_any_mpi_work(capsys, monkeypatch, sizes, message):
    import hetcoll.jobs.ranks as ranks

    def no_mpi_work(*args, **kwargs):  # pragma: no cover - the check must come first
        raise AssertionError("the probe started")

    monkeypatch.setattr(ranks, "probe_job", no_mpi_work)
    code, out, err = run(capsys, "probe", "--sizes", sizes)
    one_line_error(code, out, err, message)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--time-scale", "nan"), ("--time-scale", "inf"), ("--timeout", "-1"), ("--tolerance", "nan")],
)
def test_probe_numbers_are_finite(capsys, option, value):
    code, out, err = run(capsys, "probe", option, value)
    one_line_error(code, out, err, option)


@pytest.mark.mpi
def test_probe_bad_sizes_under_four_ranks_print_one_line(tmp_path):
    import subprocess
    from pathlib import Path

    mpiexec = Path(sys.executable).with_name("mpiexec")
    proc = subprocess.run(
        [mpiexec, "-n", "4", sys.executable, "-m", "mpi4py", "-m", "hetcoll", "probe",
         "--sizes", "a,b"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert lines == ["hetcoll: error: --sizes: cannot read 'a' as a size"], proc.stderr


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep-object.json", '{"nodes": ' + '{"a": ' * 5000 + "1" + "}" * 5001),
        ("deep.yaml", "nodes: " + "[" * 3000 + "]" * 3000 + "\n"),
        ("deep-block.yaml", "".join(" " * i + "- \n" for i in range(0, 6000, 2))),
        ("digits.json", '{"nodes": [{"id": "1", "t_ini": ' + "1" * 5000 + "}]}"),
        ("digits.yaml", "nodes: [{id: '1', t_ini: " + "1" * 5000 + "}]\n"),
    ],
)
def test_deeply_nested_or_huge_documents(capsys, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run(capsys, "plan", path, "--root", "1")
    one_line_error(code, out, err, f"{name}: ")


def test_deep_model_objects_and_schedules(capsys, tmp_path):
    code, out, err = run(capsys, "plan", "fig1", "--root", "1", "--model", "{" * 3000)
    one_line_error(code, out, err, "--model")
    path = tmp_path / "s.json"
    path.write_text('{"format": "hetcoll-schedule", "params": ' + "[" * 50_000 + "]" * 50_000 + "}")
    code, out, err = run(capsys, "simulate", "fig1", path)
    one_line_error(code, out, err, "nested deeper than")


# -- the Python API: the project's exceptions, naming the culprit ---------------------------------


def test_model_specs_raise_model_errors():
    for spec, message in [
        ({"name": ["tini"]}, "name must be a string"),
        ({"name": "postal", "gap": "nan"}, "gap: must be a number"),
        ({"name": "postal", 3: 1}, "parameter names are strings"),
        (["postal"], "expected a name or an object"),
    ]:
        with pytest.raises(ModelError, match=message.replace("[", r"\[")):
            get_model(spec)


def test_platform_objects_go_through_the_same_validator():
    from hetcoll import Link, Node

    p = Platform((Node("a", "100us"), Node("b")), model="tini")
    assert p.t_ini[0] == pytest.approx(1e-4)
    with pytest.raises(PlatformError, match=r"nodes\[0\]\.t_ini: must be a time"):
        Platform((Node("a", [1]),))
    with pytest.raises(PlatformError, match=r"nodes\[1\]: must be a Node"):
        Platform((Node("a"), {"id": "b"}))
    with pytest.raises(PlatformError, match=r"links\[0\]\.bandwidth: must be > 0"):
        Platform((Node("a"), Node("b")), (Link("a", "b", 0, "0GBps"),), model="hockney")
    with pytest.raises(PlatformError, match=r"latency\[0\]\[1\]: must be at most"):
        Platform((Node("a"), Node("b")), latency=[[0, 1e300], [1, 0]], model="postal")
    with pytest.raises(HetcollError):
        load_platform({"nodes": "ab"})
