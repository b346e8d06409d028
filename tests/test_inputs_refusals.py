"""Hostile input, each refused in one line (or answered), never a traceback, a hang or a
silent change: sizes that a float cannot hold, warnings that are not hetcoll's, planner
options of the wrong type, unbounded counts, models SimGrid export does not encode, a bad
clock shift, a schedule's order naming an unknown node."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _cli import one_line_error, run
from hetcoll import load_platform, plan
from hetcoll.errors import ArgumentError, HetcollError, PlannerError, ScheduleError
from hetcoll.schedule import Schedule
from hetcoll.units import check_quantity

# -- sizes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["9007199254740993", "9007199254740993B", "1e999999999"])
def test_a_size_a_float_cannot_hold_is_refused(text):
    """2**53 + 1 used to be read through a float (2**53) and accepted."""
    with pytest.raises(ArgumentError, match="must be at most 9007199254740992"):
        check_quantity(text, "size", "size")


def test_sizes_up_to_the_cap_are_exact():
    assert check_quantity("9007199254740992", "size", "size") == 2**53
    assert check_quantity("8388608GiB", "size", "size") == 2**53
    assert check_quantity("1.5KiB", "size", "size") == 1536


def test_cli_refuses_two_to_the_53_plus_one(capsys):
    one_line_error(
        *run(capsys, "plan", "fig1", "--root", "1", "--size", "9007199254740993"),
        "--size",
        "9007199254740993",
    )


# -- warnings that are not hetcoll's ------------------------------------------------------------


def test_a_foreign_warning_is_shown_once_and_returns():
    """Re-shown inside the recording, it was appended to the list being read: an endless
    loop whose memory grew without bound."""
    code = (
        "import warnings\n"
        "from hetcoll.cli._base import planner_warnings\n"
        "with planner_warnings():\n"
        "    warnings.warn('not ours', RuntimeWarning)\n"
        "print('returned')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and done.stdout == "returned\n"
    assert done.stderr.count("not ours") == 1


def test_multi_tree_on_links_that_take_no_time(tmp_path, capsys):
    """Infinite bandwidth, no latency: one tree carries any rate (no division by zero)."""
    path = tmp_path / "free.json"
    path.write_text(
        json.dumps(
            {
                "model": "one_port",
                "nodes": [{"id": i} for i in "abc"],
                "links": [
                    {"u": "a", "v": "b", "bandwidth": "inf"},
                    {"u": "b", "v": "c", "bandwidth": "inf"},
                ],
            }
        )
    )
    code, out, err = run(
        capsys, "plan", path, "--root", "a", "--algo", "multi_tree", "--size", "1MiB",
        "--segment-size", "64KiB", "--json",
    )  # fmt: skip
    assert code == 0 and err == ""
    assert json.loads(out)["predicted_time"] == 0
    one_line_error(
        *run(capsys, "optimum", path, "--root", "a", "--segment-size", "64KiB"), "unbounded"
    )


# -- planner options: one check, from the registry's types ------------------------------------


@pytest.mark.parametrize("value", ["1.5", "abc", "nan", "0", "-1", "true", "1e9"])
def test_slices_per_period_of_the_wrong_kind(capsys, value):
    one_line_error(
        *run(
            capsys, "plan", "park-fig2", "--root", "A", "--model", "one_port", "--algo",
            "multi_tree", "--size", "1MiB", "--segment-size", "64KiB", "--option",
            f"slices_per_period={value}",
        ),
        "slices_per_period: must be an integer >= 1 and <= 4096",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("algo", "option", "needle"),
    [
        ("magpie", "lan=abc", "lan: must be a time in seconds > 0"),
        ("mpich-gx", "light_wan=maybe", "light_wan: must be a time in seconds >= 0"),
        ("mpich-g2", "ratio=1", "ratio: must be a number > 1"),
        ("mpich-gx", "coordinator=highest", "coordinator: must be 'lowest' or 'closest'"),
        ("labs", "rearrange=3", "rearrange: must be true or false"),
        ("hlot", "order=2", "order: must be 'longest' or 'join'"),
        ("gap_aware", "starts=-1", "starts: must be an integer >= 0"),
        ("optimal", "max_pairs=1.5", "max_pairs: must be an integer >= 0"),
    ],
)
def test_every_option_is_checked_by_its_type(capsys, algo, option, needle):
    one_line_error(
        *run(capsys, "plan", "park-fig2", "--root", "A", "--algo", algo, "--option", option),
        needle,
    )


def test_options_are_checked_from_the_api_too():
    p = load_platform("park-fig2")
    with pytest.raises(PlannerError, match="lan: must be a time"):
        plan(p, "A", method="magpie", options={"lan": float("nan")})
    s = plan(p, "A", method="magpie", options={"lan": "100ms"})  # units read once, here
    assert s.params["lan"] == pytest.approx(0.1)


# -- unbounded counts -------------------------------------------------------------------------


def test_reproduce_trials_and_workers_are_bounded(capsys):
    one_line_error(
        *run(capsys, "reproduce", "banikazemi-fig1", "--trials", "1000000000"),
        "--trials: must be from 1 to 100000",
    )
    one_line_error(*run(capsys, "reproduce", "banikazemi-fig1", "--workers", "100000"), "--workers")


def test_run_trials_forks_no_more_workers_than_tasks(monkeypatch):
    from hetcoll.experiments import _base

    made = []

    class Pool:
        def __init__(self, max_workers):
            made.append(max_workers)

        def map(self, func, tasks, chunksize=1):
            return map(func, tasks)

        def shutdown(self, cancel_futures=False):
            pass

    monkeypatch.setattr(_base, "ProcessPoolExecutor", Pool)
    assert _base.run_trials(abs, [-1, -2], workers=48) == [1, 2]
    assert made == [2]


def test_optimum_lp_has_a_default_time_limit():
    from hetcoll.planners import steady

    assert 0 < steady.LP_TIME_LIMIT <= 120


# -- SimGrid export of models it has no encoding for -----------------------------------------


@pytest.mark.parametrize(
    ("platform", "model"),
    [("switch16", None), ("park-fig2", "one_port"), ("park-fig2", "one_port_uni"),
     ("park-fig2", "multi_port")],
)  # fmt: skip
def test_export_refuses_models_simgrid_cannot_encode(tmp_path, capsys, platform, model):
    out = tmp_path / "x.xml"
    args = ["export", platform, "-o", out] + (["--model", model] if model else [])
    one_line_error(*run(capsys, *args), "SimGrid export: no encoding for model")
    assert not out.exists()


# -- HETCOLL_CLOCK_SHIFT -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["nan", "inf", "0,1e300", "0,abc", "1e13"])
def test_a_bad_clock_shift_is_one_hetcoll_error(monkeypatch, text):
    from hetcoll.runtime.emulation import clock_shift

    monkeypatch.setenv("HETCOLL_CLOCK_SHIFT", text)
    for rank in (0, 1):  # every rank refuses the same text
        with pytest.raises(ArgumentError, match="HETCOLL_CLOCK_SHIFT"):
            clock_shift(rank)
    monkeypatch.setenv("HETCOLL_CLOCK_SHIFT", "0,2.5")
    assert clock_shift(1) == 2_500_000_000


# -- minor -------------------------------------------------------------------------------------


def test_reproduce_list_json(capsys):
    code, out, _ = run(capsys, "reproduce", "list", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["kind"] == "experiments"
    assert "banikazemi-fig1" in [e["experiment"] for e in doc["experiments"]]


def test_an_order_naming_an_unknown_node_is_refused():
    p = load_platform("park-fig2").with_model("one_port")
    opts = {"slices_per_period": 16}  # the timetable (a short message may get one tree)
    doc = plan(
        p, "A", method="multi_tree", nbytes=2**20, segment_size=2**16, options=opts
    ).to_dict()
    assert doc["order"]
    doc["order"]["ZZ"] = []
    with pytest.raises(ScheduleError, match="order: 'ZZ' sends nothing"):
        Schedule.from_dict(doc)


def test_refusals_are_hetcoll_errors():
    assert issubclass(ArgumentError, HetcollError) and issubclass(PlannerError, HetcollError)
