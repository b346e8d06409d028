"""``port_slots.message_trees`` list schedules the next challenger's message first where its
trial ends before the challenger's (the others then stop once sure to end after it): its
choice and schedule are those of the tournament with every list schedule run to its end."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import plan
from hetcoll.generators import random_graph_platform
from hetcoll.planners import multitree, port_justify, port_slots
from hetcoll.planners.port_justify import port_justified
from hetcoll.planners.port_schedule import critical_links, multi_port_transfers
from hetcoll.planners.port_slots import PATIENCE

L = 10**6


def _full(g, splits, trials, first, patient):
    """``message_trees``' choice with no list schedule stopped early: the way whose trial
    ends first (ties: the first), then each challenger whose best trial ends before the
    way kept's replaces it when its justified message ends sooner."""

    def run(split, way):  # (a trial's critical links: its own split's)
        index, patience, critical = way
        crit = critical_links(g, *split[index]) if critical else None
        return multi_port_transfers(g, *split[index], patience, critical=crit)

    def best(ways):
        marks = [run(trials if trials is not None else splits, w)[1] for w in ways]
        i = min(range(len(ways)), key=marks.__getitem__)
        return ways[i], marks[i]

    def message(way):
        index, patience, critical = way
        crit = critical_links(g, *splits[index]) if critical else None
        return (index, *port_justified(g, *run(splits, way), (patience,), critical=crit))

    if trials is not None and sum(splits[0][1]) <= sum(trials[0][1]):
        trials = None
    kept, mark = best([(i, p, False) for i in range(first) for p in (0.0, PATIENCE)])
    done = message(kept)
    for c in range(first, len(splits)):
        ways = [(c, p, False) for p in ((0.0, PATIENCE) if c >= patient else (0.0,))]
        if c >= patient and critical_links(g, *splits[c]) is not None:
            ways += [(c, p, True) for p in (0.0, PATIENCE)]
        way, theirs_mark = best(ways)
        if theirs_mark >= mark:
            continue
        theirs = message(way)
        if theirs[2] < done[2]:
            kept, mark, done = way, theirs_mark, theirs
    return done


def _compared(monkeypatch, p, slices, most, trial=8):
    """``(message_trees' answer, the full tournament's, how many challengers)`` of a
    multi-port broadcast of ``slices`` slices, with trials of ``trial`` slices past twice
    that and port_justify's MOST set to ``most``."""
    monkeypatch.setattr(multitree, "TRIAL", 2 * trial)
    monkeypatch.setattr(multitree, "TRIAL_SLICES", trial)
    monkeypatch.setattr(port_justify, "MOST", most)
    monkeypatch.setattr(port_slots, "MOST", most)
    seen = []
    real = port_slots.message_trees

    def recorded(g, splits, trials=None, first=None, patient=None):
        got = real(g, splits, trials, first, patient)
        full = _full(
            g,
            splits,
            trials,
            len(splits) if first is None else first,
            len(splits) if patient is None else patient,
        )
        seen.append((got, full, len(splits) - (len(splits) if first is None else first)))
        return got

    monkeypatch.setattr(multitree, "message_trees", recorded)
    plan(p, "0", method="multi_tree", nbytes=slices * L, segment_size=L)
    return seen


def _same(got, full) -> bool:
    """The same split, transfers and span, exactly."""
    return got[0] == full[0] and got[1] == full[1] and got[2].hex() == full[2].hex()


@pytest.mark.parametrize(
    ("n", "density", "seed", "slices", "trial", "outcome"),
    [
        (8, 0.3, 3, 48, 24, "next"),
        (12, 0.3, 1, 48, 16, "next"),
        (8, 0.3, 5, 96, 24, "got"),
    ],
)
def test_the_next_challenger_first_chooses_as_the_full_tournament(
    monkeypatch, n, density, seed, slices, trial, outcome
):
    # two challengers (the gap packing, its slack packing), the second's trial ending
    # before the first's: its message is list scheduled first, and on these platforms it
    # wins ("next": the others' messages stop once sure to end after it) or the first
    # challenger does ("got"); either way the full tournament's schedule, exactly
    outcomes, stopped = [], []
    real_ahead, real_transfers = port_slots._ahead, port_slots.multi_port_transfers

    def ahead(g, splits, kept, done, got, next_got):
        out = real_ahead(g, splits, kept, done, got, next_got)
        outcomes.append("next" if out[0] is next_got else "got" if out[0] is got else "kept")
        return out

    def transfers(g, trees, share, patience=0.0, beat=math.inf, critical=None):
        out = real_transfers(g, trees, share, patience, beat=beat, critical=critical)
        stopped.append(sum(share) == slices and out is None)
        return out

    monkeypatch.setattr(port_slots, "_ahead", ahead)
    monkeypatch.setattr(port_slots, "multi_port_transfers", transfers)
    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    seen = _compared(monkeypatch, p, slices, 0, trial)
    assert outcomes == [outcome]
    assert len(seen) == 1 and _same(*seen[0][:2])
    if outcome == "next":  # the first challenger's message stopped before its end
        assert any(stopped)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(4, 14),
    density=st.sampled_from([0.3, 0.5]),
    seed=st.integers(0, 10**6),
    slices=st.integers(20, 80),
    trial=st.sampled_from([8, 16]),
    most=st.sampled_from([0, 10**9]),
)
def test_message_trees_is_the_full_tournament(n, density, seed, slices, trial, most):
    # whichever list schedules stop early (the way kept's, the first challenger's behind
    # the next one's), the choice and its schedule are the full tournament's, exactly
    with pytest.MonkeyPatch.context() as monkeypatch:
        p = random_graph_platform(n, density, seed=seed, model="multi_port")
        for got, full, _challengers in _compared(monkeypatch, p, slices, most, trial):
            assert _same(got, full)
