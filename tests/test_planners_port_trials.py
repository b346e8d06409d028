"""The multi-port list schedules that :func:`hetcoll.planners.port_slots.message_trees` tries
stop once they are sure to end after the fastest before them (``beat``), and the choice is
the one of running every one of them to its end."""

from __future__ import annotations

import math

import pytest

from hetcoll import plan
from hetcoll.generators import random_graph_platform
from hetcoll.planners import multitree, port_slots
from hetcoll.planners.port_slots import TRIAL_SLICES

L = 10**6


def _recorded(monkeypatch) -> list[tuple]:
    """Every list schedule ``message_trees`` asks for: ``(share, patience, beat, what the
    call gave, the same run without beat)``."""
    calls: list[tuple] = []
    real = port_slots.multi_port_transfers

    def recorded(g, trees, share, patience=0.0, beat=math.inf, critical=None):
        out = real(g, trees, share, patience, beat=beat, critical=critical)
        whole = real(g, trees, share, patience, critical=critical)
        calls.append((tuple(share), patience, beat, out, whole))
        return out

    monkeypatch.setattr(port_slots, "multi_port_transfers", recorded)
    return calls


@pytest.mark.parametrize(("n", "seed", "slices"), [(30, 0, 2048), (20, 1, 96)])
def test_a_way_is_stopped_only_when_it_ends_after_the_fastest(monkeypatch, n, seed, slices):
    calls = _recorded(monkeypatch)
    p = random_graph_platform(n, 0.12, seed=seed, model="multi_port")
    plan(p, "0", method="multi_tree", nbytes=slices * L, segment_size=L)
    assert calls
    stopped = 0
    for _share, _patience, beat, out, whole in calls:
        if out is None:  # stopped: its run ends after the fastest before it
            stopped += 1
            assert whole[1] > beat
        else:  # run to its end: the very schedule
            assert out == whole and out[1].hex() == whole[1].hex()
    # the trials of 512 slices (port_slots.TRIAL_SLICES) at n = 30, seed 0 end at 8.41,
    # 8.45, 8.82 and 8.89 s (two packings, two patiences each): all but the first stop
    assert stopped >= (2 if (n, seed) == (30, 0) else 0)


def test_the_way_kept_is_the_first_of_the_fastest(monkeypatch):
    # the choice of message_trees is the least span over the ways run to their end (ties:
    # the first), whatever was stopped
    calls = _recorded(monkeypatch)
    seen = []
    real_first = port_slots._first

    def first(g, splits, ways, beat=math.inf):
        got = real_first(g, splits, ways, beat)
        seen.append((len(ways), got[0]))
        return got

    monkeypatch.setattr(port_slots, "_first", first)
    # (without the gap and slack packings, which challenge the way kept:
    # tests/test_planners_port_gaps, tests/test_planners_port_slack)
    monkeypatch.setattr(multitree, "gap_problem", lambda prob: None)
    monkeypatch.setattr(multitree, "shared_slack", lambda *args: None)
    p = random_graph_platform(30, 0.12, seed=0, model="multi_port")
    plan(p, "0", method="multi_tree", nbytes=2048 * L, segment_size=L)
    trials = [c for c in calls if sum(c[0]) == TRIAL_SLICES]
    assert len(trials) == 4 and seen[0] == (4, 0)
    spans = [c[4][1] for c in trials]
    assert seen[0][1] == min(range(4), key=spans.__getitem__)


def test_a_message_over_trial_slices_is_trialled_over_trial_slices(monkeypatch):
    # more than TRIAL (1 024) slices: every way's trial lists TRIAL_SLICES (512) slices, and
    # only the message's list schedules list all of them
    calls = _recorded(monkeypatch)
    p = random_graph_platform(12, 0.3, seed=5, model="multi_port")
    plan(p, "0", method="multi_tree", nbytes=1025 * L, segment_size=L)
    assert {sum(c[0]) for c in calls} == {512, 1025}
