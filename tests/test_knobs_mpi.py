"""A HetComm's KnobWarnings under mpiexec (mpi_programs/knobs.py): a spin on an
oversubscribed host, knobs a tuning file measured slower, segments the model predicts slower
under emulation; every rank says the same, once, and nothing without knobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "knobs.py"
pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def got(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("knobs") / "knobs.json"
    proc = run_mpi(3, [PROGRAM, out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "KnobWarning" not in proc.stderr  # recorded, never printed
    return json.loads(out.read_text())


def one_each(per_rank: list[list[str]]) -> str:
    """Every rank said the same one message: that message."""
    assert all(len(x) == 1 for x in per_rank) and len({x[0] for x in per_rank}) == 1, per_rank
    return per_rank[0][0]


def test_nothing_without_knobs(got):
    assert got["no knobs"] == [[], [], []]


def test_spin_on_an_oversubscribed_host(got):
    if got["ranks_on_host"] > got["cores"]:
        text = one_each(got["spin"])
        assert text.startswith(f"spin=1 ms with 3 ranks on this host and {got['cores']} usable")
    else:
        assert got["spin"] == [[], [], []]


def test_knobs_a_tuning_file_measured_slower(got):
    seg = one_each(got["segment measured slower"])
    assert seg == (
        "segment_size=4 KiB: hetcoll tune measured bcast of 1 MiB with fnf 0.25x as fast as "
        "without it"
    )
    spin = [[m for m in x if "hetcoll tune measured" in m] for x in got["spin measured slower"]]
    assert one_each(spin) == (
        "spin=5 ms: hetcoll tune measured bcast of 1 MiB with fnf 0.50x as fast as without it"
    )


def test_segments_the_model_predicts_slower_once_over_two_calls(got):
    text = one_each(got["emulated segments"])
    assert text.startswith("segment_size=4 KiB: the model predicts this bcast of 256 KiB with")


def test_hetcoll_run_says_it_once_as_a_hetcoll_warning(tmp_path):
    """The command line prints a KnobWarning as one ``hetcoll: warning:`` line (rank 0),
    and nothing without the knob."""
    from hetcoll.platform import Platform, nodes_from_costs, save_platform

    slow = tmp_path / "slow.json"
    save_platform(Platform(nodes_from_costs([1e-3] * 3, [1e-12] * 3), name="slow"), slow)
    base = ["hetcoll", "run", "--platform", slow, "--emulate", "--algo", "chain"]
    base += ["--size", "256KiB", "--repeat", "1"]
    for extra, lines in (([], 0), (["--segment-size", "4KiB"], 1)):
        proc = run_mpi(3, [*base, *extra], timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        said = [x for x in proc.stderr.splitlines() if "segment_size" in x]
        assert len(said) == lines, proc.stderr
        assert all(x.startswith("hetcoll: warning: segment_size=4 KiB: the model") for x in said)
        assert "KnobWarning" not in proc.stderr
