"""Planner options from the command line (``--option KEY=VALUE``) and the Python API: the
same spelling for every planner, listed by ``hetcoll planners NAME``, unknown ones warned
about (a :class:`~hetcoll.errors.PlannerWarning`, as scipy's ``OptimizeWarning``) and ignored."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli import one_line_error, run
from hetcoll import load_platform, plan, simulate
from hetcoll.errors import PlannerWarning
from hetcoll.planners.optimal import optimal_time
from hetcoll.platform import Platform, nodes_from_costs, save_platform

US = 1e-6


def test_planners_name_lists_the_options_with_their_defaults(capsys):
    code, out, _ = run(capsys, "planners", "optimal")
    assert code == 0
    assert "max_pairs=1000000000" in out and "max_states=10000000" in out
    code, out, _ = run(capsys, "planners", "hlot", "--json")
    doc = json.loads(out)["planner"]
    assert doc["options"] == ["order"] and doc["option_defaults"] == {"order": "longest"}
    code, out, _ = run(capsys, "planners", "binomial")
    assert "options:    none" in out


def test_planners_unknown_name(capsys):
    one_line_error(*run(capsys, "planners", "fnff"), "unknown planner 'fnff'", "fnf")


def test_option_reaches_the_planner(capsys):
    """A limit given on the command line is the planner's: fig1 needs 21 table entries."""
    one_line_error(
        *run(
            capsys, "plan", "fig1", "--root", "1", "--algo", "optimal", "--option", "max_states=20"
        ),
        "max_states=20",
    )
    code, out, err = run(
        capsys,
        "plan",
        "fig1",
        "--root",
        "1",
        "--algo",
        "optimal",
        "--option",
        "max_states=21",
        "--json",
    )
    assert code == 0 and err == ""
    assert json.loads(out)["predicted_time"] == pytest.approx(400 * US)


def test_values_are_parsed_like_numbers(capsys):
    """``1e10`` is a whole number (max_pairs refuses floats), ``longest`` stays text."""
    code, _, err = run(
        capsys, "plan", "fig1", "--root", "1", "--algo", "optimal", "--option", "max_pairs=1e10"
    )
    assert code == 0, err
    code, _, err = run(
        capsys, "plan", "fig1", "--root", "1", "--algo", "hlot", "--option", "order=nearest"
    )
    one_line_error(code, "", err, "order")


def test_unknown_option_is_a_warning_not_an_error(capsys):
    code, out, err = run(
        capsys, "plan", "fig1", "--root", "1", "--algo", "optimal", "--option", "speed=3"
    )
    assert code == 0 and "400 µs" in out
    assert err == (
        "hetcoll: warning: planner 'optimal' ignores unknown option 'speed' "
        "(it accepts: max_pairs, max_states)\n"
    )


@pytest.mark.parametrize("bad", ["max_pairs", "=3", "two words=1"])
def test_malformed_option(capsys, bad):
    one_line_error(
        *run(capsys, "plan", "fig1", "--root", "1", "--algo", "optimal", "--option", bad),
        "--option",
        "KEY=VALUE",
    )


def test_compare_gives_each_planner_the_options_it_takes(capsys):
    code, out, err = run(
        capsys, "compare", "fig1", "--root", "1", "--option", "max_states=20", "--json"
    )
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert "max_states=20" in json.dumps(doc["skipped"]["optimal"])
    code, _, err = run(capsys, "compare", "fig1", "--root", "1", "--option", "speed=3")
    assert code == 0
    assert err == "hetcoll: warning: no compared planner takes option(s) 'speed'; ignored\n"


def test_python_api_warns_with_planner_warning():
    with pytest.warns(PlannerWarning, match="ignores unknown option 'speed'"):
        plan(load_platform("fig1"), "1", method="optimal", options={"speed": 3})


def test_32_members_in_8_classes_from_the_command_line(capsys, tmp_path):
    """The issue's case: once refused ("5.6e8 evaluations exceed max_pairs=2e8"), now
    planned with the default limits; the tree's simulated time is the optimum."""
    rng = np.random.default_rng(32)
    classes = rng.uniform(100, 1000, 8).round() * US
    costs = rng.permutation(np.repeat(classes, 4))
    path = tmp_path / "p32.json"
    save_platform(Platform(nodes_from_costs(costs), model="tini"), path)
    code, out, err = run(capsys, "plan", path, "--root", "0", "--algo", "optimal", "--json")
    assert code == 0, err
    makespan = json.loads(out)["predicted_time"]
    assert makespan == pytest.approx(optimal_time(costs[0], costs[1:]), rel=1e-12)
    fnf = plan(load_platform(str(path)), "0", method="fnf")
    assert makespan <= simulate(load_platform(str(path)), fnf).makespan + 1e-15
