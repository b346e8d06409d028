"""Faults and misuse with 4-8 ranks (mpi_programs/faults.py), each with a timeout so a hang
fails instead of blocking: ranks that disagree on a datatype, an operator or a later call learn
it; a late rank at construction and a caught timeout end the job instead of hanging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _mpi import last_words
from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "faults.py"
pytestmark = pytest.mark.mpi


def run(mode: str, n: int, tmp_path: Path, timeout: float = 120):
    out = tmp_path / "out"
    proc = run_mpi(n, [PROGRAM, mode, out], module=False, timeout=timeout)
    ranks = {}
    for r in range(n):
        path = Path(f"{out}.{r}")
        if proc.returncode == 0 and path.exists():
            ranks[r] = json.loads(path.read_text())["events"]
    return proc, ranks


@pytest.mark.parametrize(("mode", "n"), [("dtype", 4), ("dtype", 8), ("op", 5)])
def test_float64_against_int64_or_max_against_sum_raises_on_every_rank(mode, n, tmp_path):
    """Rank 1 reduces float64 where the others reduce int64 of the same byte count (or
    with MAX where they SUM): every rank raises MismatchError, none keeps garbage."""
    proc, ranks = run(mode, n, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(ranks) == list(range(n))
    for events in ranks.values():
        assert events[0][:2] == ["Allreduce", "MismatchError"], events
        assert "planned different schedules" in events[0][2]
        assert events[1:] == [["after", "ok"], ["after data", True]]  # still usable


@pytest.mark.parametrize(("mode", "n"), [("root", 4), ("size", 5), ("root", 8)])
def test_a_disagreement_on_a_later_call_reaches_every_rank(mode, n, tmp_path):
    """Call 2 differs on rank 1 (default check): no rank hangs or gets wrong data, and
    every rank raises MismatchError - in call 2 where a message shows it, else once its
    next call completed or at close() (a rank that only sent cannot know before)."""
    proc, ranks = run(mode, n, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(ranks) == list(range(n))
    for r, events in ranks.items():
        names = [e[0] for e in events]
        assert ["call1 data", True] in events, (r, events)
        raised = [e for e in events if e[1] == "MismatchError"]
        assert len(raised) == 1, (r, events)  # exactly once, somewhere
        assert raised[0][0] in ("call2", "call3", "close")
        if "call3 data" in names:
            assert ["call3 data", True] in events, (r, events)
    # the rank whose call differs and its receivers learn it in the call itself
    if mode == "size":
        assert ranks[1][2][:2] == ["call2", "MismatchError"]


@pytest.mark.parametrize("n", [4, 7])
def test_check_always_raises_on_every_rank_in_the_call_itself(n, tmp_path):
    proc, ranks = run("always", n, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r, events in ranks.items():
        assert events[2][:2] == ["call2", "MismatchError"], (r, events)
        assert ["call3 data", True] in events and events[-1] == ["close", "ok"], (r, events)


def test_a_late_rank_at_construction_times_out_instead_of_hanging(tmp_path):
    proc, _ = run("startup", 4, tmp_path, timeout=60)
    assert proc.returncode == 3, proc.stderr[-2000:]  # on_timeout="abort": MPI_Abort(3)
    said = last_words(tmp_path / "out", 4)
    assert "hetcoll: error: rank " in said, (said, proc.stderr[-2000:])
    assert "creating its private communicator" in said
    assert "timed out after 2 s" in said


def test_a_caught_timeout_ends_the_job_with_abort(tmp_path):
    """on_timeout="raise": the survivors raise CollectiveTimeoutError and end the job with
    hc.abort() (docs/runtime.md): the job ends with their code long before the stuck rank
    would (it sleeps 30 s; returning instead would leave MPI_Finalize waiting for it)."""
    proc, _ = run("raise", 4, tmp_path, timeout=25)
    assert proc.returncode == 5, proc.stderr[-2000:]
    said = last_words(tmp_path / "out", 4)
    assert "caught CollectiveTimeoutError" in said, (said, proc.stderr[-2000:])
    assert "Bcast(root=3, 10 B, binomial) timed out after 2 s" in said
