"""The message cap: a schedule sends at most ``MAX_TRANSFERS`` messages (segments times the
messages of each segment, relay hops included) and a request that simulates several schedules
at most that many in all; one more is refused in one line, the documentation states the
code's value.  What the machine does at the cap: ``benchmarks/simulated/bench_cap.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _cli import one_line_error, run
from hetcoll import Schedule, ScheduleError, load_platform, plan
from hetcoll.errors import PlannerError
from hetcoll.patterns import Flow, Tree
from hetcoll.schedule import MAX_TRANSFERS

REPO = Path(__file__).resolve().parents[1]


def one_edge(nbytes: int, relays=()) -> Schedule:
    """A multicast from 1 to 2 in 1-byte segments: ``nbytes`` segments of one message each
    (two with a relay)."""
    tree = Tree("1", {"1": ("2",)})
    return Schedule(
        "multicast", "test", nbytes, (Flow(tree, nbytes, segment_size=1, relays=relays),)
    )


def test_a_schedule_at_the_cap_is_accepted_one_more_message_is_not():
    assert one_edge(MAX_TRANSFERS).transfers == MAX_TRANSFERS
    with pytest.raises(ScheduleError, match=f"{MAX_TRANSFERS + 1} messages, more than"):
        one_edge(MAX_TRANSFERS + 1)


def test_relay_hops_count_as_messages():
    half = MAX_TRANSFERS // 2
    assert one_edge(half, relays=(("1", "3", "2"),)).transfers == MAX_TRANSFERS
    with pytest.raises(ScheduleError, match="use segments of at least 2 bytes"):
        one_edge(half + 1, relays=(("1", "3", "2"),))


def test_one_message_over_the_cap_is_one_cli_line(tmp_path, capsys):
    """A schedule file one message over the cap: exit 2, one line, nothing simulated."""
    path = tmp_path / "s.json"
    doc = one_edge(MAX_TRANSFERS).to_dict()
    doc["nbytes"] = doc["flows"][0]["nbytes"] = MAX_TRANSFERS + 1
    path.write_text(json.dumps(doc))
    one_line_error(*run(capsys, "simulate", "fig1", path), f"more than {MAX_TRANSFERS} per")


def test_plan_one_segment_over_the_cap_is_one_cli_line(capsys):
    """A chain over fig1's 8 nodes sends 7 messages per segment: one segment more than fit
    is refused before anything is planned, and the error names the segment size that fits."""
    segments = MAX_TRANSFERS // 7 + 1
    args = ["plan", "fig1", "--root", "1", "--algo", "chain", "--segment-size", "1"]
    one_line_error(*run(capsys, *args, "--size", segments), "messages", "segments of at least 2")
    with pytest.raises(ScheduleError):
        plan(load_platform("fig1"), "1", method="chain", nbytes=segments, segment_size=1)


def test_compare_is_within_the_cap_in_all(capsys):
    """Every candidate is simulated: the request's messages in all are capped, not each
    schedule's; naming one planner fits where comparing all does not."""
    segments = MAX_TRANSFERS // 7  # one schedule of 7 messages per segment fits exactly
    args = ["compare", "fig1", "--root", "1", "--size", segments, "--segment-size", "1"]
    one_line_error(*run(capsys, *args), "comparing planners", "name one planner")


def test_switch_aware_is_within_the_cap_in_all():
    p = load_platform("switch16")
    with pytest.raises(PlannerError, match="switch_aware simulates"):
        plan(p, "w0", method="switch_aware", nbytes=MAX_TRANSFERS // 15, segment_size=1)


def test_the_documented_cap_is_the_code_s():
    readme = (REPO / "README.md").read_text()
    stated = re.findall(r"at most 2\^(\d+) messages", readme)
    assert stated and all(2 ** int(k) == MAX_TRANSFERS for k in stated), stated
    shared = re.findall(r"2\^(\d+) when simulated under\s+shared contention", readme)
    assert shared and all(2 ** int(k) == MAX_TRANSFERS // 8 for k in shared), shared


def test_shared_contention_simulates_an_eighth_of_the_cap(tmp_path, capsys):
    """Max-min fair share costs about eight times as much per simulated message: a schedule
    one message over MAX_SHARED_TRANSFERS is planned, but not simulated there (one line);
    the same schedule under exclusive contention is within the cap."""
    from hetcoll import simulate
    from hetcoll.generators import random_graph_platform
    from hetcoll.schedule import MAX_SHARED_TRANSFERS

    assert MAX_SHARED_TRANSFERS == MAX_TRANSFERS // 8
    p = random_graph_platform(6, 0.5, seed=1)
    shared = {"name": "hockney", "contention": "shared"}
    segments = MAX_SHARED_TRANSFERS // 5 + 1  # 5 receivers, one message each per segment
    s = plan(p, "0", method="fnf", model=shared, nbytes=segments, segment_size=1)
    assert MAX_SHARED_TRANSFERS < s.transfers <= MAX_TRANSFERS
    with pytest.raises(ScheduleError, match="under shared contention; use segments of at least"):
        simulate(p, s, shared)
    (tmp_path / "p.json").write_text(json.dumps(p.to_dict()))
    args = ["compare", tmp_path / "p.json", "--root", "0", "--model", json.dumps(shared)]
    args += ["--algos", "fnf", "--size", segments, "--segment-size", "1"]
    one_line_error(*run(capsys, *args), f"more than {MAX_SHARED_TRANSFERS} in all")
