"""A user's knobs that hetcoll has reason to think slower than its default: one KnobWarning,
never a print (the MPI side, a HetComm's spin and tuning file, is in test_knobs_mpi.py)."""

from __future__ import annotations

import warnings

import pytest

from hetcoll import KnobWarning, Platform, plan, simulate
from hetcoll.hetcomm import Planning
from hetcoll.knobs import measured_slower, segment_verdict, spin_verdict
from hetcoll.platform import nodes_from_costs

NODES = [str(i) for i in range(6)]
#: a millisecond per message and almost nothing per byte: 256 segments cost 256 messages
SLOW_START = Platform(nodes_from_costs([1e-3] * 6, [1e-12] * 6))
#: nothing per message, a lot per byte: a chain of segments pipelines the bytes
SLOW_BYTES = Platform(nodes_from_costs([1e-7] * 6, [1e-8] * 6))


def call(seg, *, emulate=True, one_host=True, nbytes=1 << 20, algo=None):
    return {
        "collective": "bcast",
        "nbytes": nbytes,
        "nodes": NODES,
        "root": "0",
        "members": None,
        "groups": None,
        "algo": algo,
        "segment_size": seg,
        "op": None,
        "count": None,
        "builtin": True,
        "commutative": True,
        "emulate": emulate,
        "one_host": one_host,
    }


def planned(platform, c, algo="chain"):
    """What the engine does for a call: choose, then plan the choice; the warnings said."""
    planning = Planning(algo, None, None, {})
    planning.check(platform, NODES)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        choice = planning.choose(platform, c)
        if choice.algorithm != "mpi":
            planning.tree(platform, {**c, "algo": choice.algorithm})
            planning.tree(platform, {**c, "algo": choice.algorithm})  # a repeated call
    return choice, [w for w in said if issubclass(w.category, KnobWarning)]


def test_the_model_warns_once_about_segments_it_predicts_slower():
    choice, said = planned(SLOW_START, call(4096))
    assert choice.algorithm == "chain" and choice.segment_size == 4096
    assert len(said) == 1, [str(w.message) for w in said]
    text = str(said[0].message)
    seg = plan(SLOW_START, "0", method="chain", nbytes=1 << 20, segment_size=4096)
    whole = plan(SLOW_START, "0", method="chain", nbytes=1 << 20)
    ratio = simulate(SLOW_START, seg).makespan / simulate(SLOW_START, whole).makespan
    assert ratio > 10
    assert text.startswith("segment_size=4 KiB: the model predicts this bcast of 1 MiB with")
    assert f"{ratio:.2f}x as long as without segments" in text


@pytest.mark.parametrize(
    "platform, c, why",
    [
        (SLOW_BYTES, call(65536), "segments that pipeline are faster"),
        (SLOW_START, call(4096, emulate=False, one_host=True), "natively on one host"),
        (SLOW_START, call(None), "no segment size given"),
    ],
)
def test_no_warning_where_the_model_has_nothing_against_the_knob(platform, c, why):
    _, said = planned(platform, c)
    assert said == [], why


def test_across_hosts_natively_the_model_judges_too():
    _, said = planned(SLOW_START, call(4096, emulate=False, one_host=False))
    assert len(said) == 1


def test_a_segment_size_from_a_tuning_file_is_not_the_users():
    from hetcoll.tuning import Rule, Tuning

    planning = Planning(
        "auto", None, None, {}, tuning=Tuning(6, {"bcast": (Rule(0, "chain", 4096),)})
    )
    planning.check(SLOW_START, NODES)
    c = call(None)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        choice = planning.choose(SLOW_START, c)
        assert choice.source == "tuning" and choice.segment_size == 4096
        planning.tree(SLOW_START, {**c, "algo": "chain", "segment_size": 4096})
    assert [w for w in said if issubclass(w.category, KnobWarning)] == []


def test_spin_on_an_oversubscribed_host():
    assert spin_verdict(1e-3, 3, 2).startswith("spin=1 ms with 3 ranks on this host and 2 usable")
    assert spin_verdict(1e-3, 2, 2) is None  # a core each
    assert spin_verdict(0.0, 8, 2) is None  # no polling


def test_segment_verdict_is_the_margin():
    assert segment_verdict("bcast", 100, "fnf", 10, 1.25 + 1e-9, 1.0, 0.25) is not None
    assert segment_verdict("bcast", 100, "fnf", 10, 1.25, 1.0, 0.25) is None


ROWS = [
    {
        "collective": "bcast",
        "nbytes": 1 << 20,
        "plans": [
            {"algorithm": "mpi", "segment_size": None, "speedup_median": 1.0},
            {"algorithm": "fnf", "segment_size": None, "speedup_median": 1.2},
            {"algorithm": "fnf", "segment_size": 4096, "knob": True, "speedup_median": 0.3},
            {"algorithm": "fnf", "segment_size": 65536, "knob": True, "speedup_median": 1.5},
            {"algorithm": "fnf", "segment_size": None, "spin": 1e-3, "knob": True,
             "speedup_median": 0.9},
            {"algorithm": "fnf", "segment_size": None, "spin": 1e-5, "knob": True,
             "speedup_median": 1.3},
        ],
    }
]  # fmt: skip


def test_what_a_tuning_file_measured_against_a_knob():
    assert measured_slower(ROWS, segment_size=4096) == [
        "segment_size=4 KiB: hetcoll tune measured bcast of 1 MiB with fnf 0.25x as fast as "
        "without it"
    ]
    assert measured_slower(ROWS, spin=1e-3) == [
        "spin=1 ms: hetcoll tune measured bcast of 1 MiB with fnf 0.75x as fast as without it"
    ]
    assert measured_slower(ROWS, segment_size=65536) == []  # measured faster
    assert measured_slower(ROWS, spin=1e-5) == []
    assert measured_slower(ROWS, spin=2e-3) == []  # not measured
    assert measured_slower([], spin=1e-3) == [] and measured_slower(None, spin=1e-3) == []
