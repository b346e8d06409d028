"""Chunks over PACK on the wire (mpi_programs/segments.py): bare segments with one call
header per call and peer, on tags of the call's epoch, drained when a call is abandoned.
Data bit-identical for every root and size (a last chunk over and under PACK), the native
loop (runtime/segments.py) and the executor talking to each other, a disagreement on a
later call raised on every rank exactly once, and an abandoned call's leftovers never taken
as a later call's data (the epochs are shortened so a later call reuses its tags)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import last_words, rank_events
from hetcoll.runtime.launch import run_mpi
from hetcoll.runtime.transport import CONTROL_TAGS, PACK, Bare

PROGRAM = Path(__file__).with_name("mpi_programs") / "segments.py"


def run(mode: str, n: int, tmp_path: Path) -> dict[int, list]:
    out = tmp_path / "out"
    proc = run_mpi(n, [PROGRAM, mode, out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return rank_events(out, n)


@pytest.mark.mpi
@pytest.mark.parametrize(("mode", "n"), [("data", 4), ("data-mixed", 4), ("data", 5)])
def test_large_chunks_arrive_bit_identical_for_every_root(mode, n, tmp_path):
    ranks = run(mode, n, tmp_path)
    for r, events in ranks.items():
        assert len(events) == 2 * (5 * n + 3), (r, events)
        bad = [e for e in events if e[1] is not True]
        assert not bad, (r, bad)


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["size", "root", "size-mixed", "root-mixed"])
def test_a_later_disagreement_is_raised_everywhere_and_its_leftovers_are_drained(mode, tmp_path):
    """Call 2 differs on rank 1: every rank raises MismatchError once, in call 2 or at the
    latest after call 3 or at close; every other call's data are right, including call 6,
    which has call 2's tags (a bare chunk of call 2 nobody received would be taken for
    call 6's without the drain: the run then fails)."""
    ranks = run(mode, 4, tmp_path)
    for r, events in ranks.items():
        assert [e[0] for e in events] == [f"call{c}" for c in range(1, 9)] + ["close"]
        raised = [e for e in events if e[1] == "MismatchError"]
        assert len(raised) == 1, (r, events)
        assert raised[0][0] in ("call2", "call3", "close"), (r, events)
        assert "planned different schedules" in raised[0][2]
        for e in events:
            if e[1] == "ok":
                assert e[2] is True, (r, e)
        assert ["call6", "ok", True] in events, (r, events)
    # the rank that differs and its receivers learn it in the call itself
    assert ranks[1][1][:2] == ["call2", "MismatchError"]


def test_bare_tags_are_distinct_per_epoch_and_chunk_and_above_the_other_tags():
    bare = Bare(None, (1 << 29) - 1)
    tags = {bare.tag(seq, c) for seq in range(bare.epochs) for c in (0, 1, 7, bare.chunks - 1)}
    assert len(tags) == 4 * bare.epochs
    assert min(tags) == Bare.base > CONTROL_TAGS + (1 << 19)  # chunk tags: 32 + chunk
    assert max(tags) <= (1 << 29) - 1
    assert bare.tag(5, 3) == bare.tag(5 + bare.epochs, 3)  # an epoch comes back
    assert [bare.usable(PACK, 0), bare.usable(PACK + 1, 0)] == [False, True]
    assert not bare.usable(PACK + 1, bare.chunks)  # beyond the tags: keeps its header


@pytest.mark.mpi
def test_a_rank_missing_from_a_call_of_large_chunks_times_out_naming_the_op(tmp_path):
    proc = run_mpi(4, [PROGRAM, "timeout", tmp_path / "out"], module=False, timeout=60)
    assert proc.returncode == 5, proc.stderr[-2000:]
    said = last_words(tmp_path / "out", 4)
    assert "caught CollectiveTimeoutError" in said, (said, proc.stderr[-2000:])
    assert "timed out after 2 s" in said
    assert "waiting for op" in said and " of chunk " in said


@pytest.mark.mpi
def test_an_idle_rank_looks_again_through_rest_for_spin_then_naps(tmp_path):
    """runtime/segments.py: with ``spin`` given, an idle turn within ``spin`` of the rank's
    last completion goes through the loop's ``Rest`` (a yield), never a zero sleep; with
    ``spin=0``, and by default on a virtual host (the counting one here), every idle turn is
    a zero sleep.  The root enters each call 0.1 s late, so the others have idle turns
    (counted over the four ranks); the data stay bit-identical.  By default on this machine
    the loop looks again through the process's ``PACE`` exactly when each rank on the host
    has a usable core (``segments.paced``; zero sleeps otherwise)."""
    ranks = run("looks", 4, tmp_path)
    got = {
        k: [next(e for e in ev if e[0] == f"spin {k}") for ev in ranks.values()]
        for k in ("3600.0", "0.0", "None")
    }
    assert all(e[1] is True for es in got.values() for e in es), ranks
    forever = got["3600.0"]
    assert [e[3] for e in forever] == [0] * 4, forever  # no zero sleep within spin
    assert sum(e[2] for e in forever) > 0, forever
    for never in (got["0.0"], got["None"]):
        assert [e[2] for e in never] == [0] * 4, never  # no look through Rest
        assert sum(e[3] for e in never) > 0, never
    for events in ranks.values():
        _, ok, paced, on_host, cores = next(e for e in events if e[0] == "pace")
        assert ok is True and on_host == 4, events
        assert paced == [on_host <= cores], events  # one pipelined plan, paced or not
