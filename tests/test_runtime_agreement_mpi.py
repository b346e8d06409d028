"""``check="always"`` with 4-6 ranks (mpi_programs/agreement.py): whatever the call —
a broadcast from a root other than rank 0, a hypercube allreduce (every rank sends first),
a multicast whose non-members have nothing to do, pipelined segments (small, and large
ones on the bare-segment loop), emulation — a
disagreement raises :class:`~hetcoll.errors.MismatchError` on every rank in the call itself,
no rank keeps wrong data, and the wrapper works for the next call."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import last_words, rank_events
from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "agreement.py"
pytestmark = pytest.mark.mpi


@pytest.mark.parametrize(
    ("mode", "n"),
    [
        ("size", 4),
        ("dtype", 5),
        ("emulated", 4),
        ("members", 4),
        ("segments", 6),
        ("large", 4),
        ("last", 3),
        ("last", 8),
    ],
)
def test_check_always_raises_on_every_rank_in_the_call(mode, n, tmp_path):
    out = tmp_path / "out"
    proc = run_mpi(n, [PROGRAM, mode, out], module=False, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r, events in rank_events(out, n).items():
        assert events[:3] == [["call1", "ok"], ["call1 data", True], ["trace", True]], (r, events)
        assert events[3][:2] == ["call2", "MismatchError"], (r, events)
        assert events[4:] == [["call3", "ok"], ["call3 data", True], ["close", "ok"]], (r, events)


def test_check_always_a_rank_that_never_calls_ends_in_a_timeout(tmp_path):
    """The round cannot finish without the missing rank: every other rank (their data all
    arrived: the missing rank is a leaf) times out in the agreement check of the call after
    ``timeout`` and ends the job (``on_timeout="raise"``, then ``hc.abort``) long before the
    missing rank would come (30 s)."""
    proc = run_mpi(4, [PROGRAM, "deadlock", tmp_path / "out"], module=False, timeout=25)
    assert proc.returncode == 5, proc.stderr[-3000:]
    said = last_words(tmp_path / "out", 4)
    assert "caught CollectiveTimeoutError" in said, (said, proc.stderr[-3000:])
    assert "the agreement check of Bcast(root=0, 1 B, binomial) timed out after 2 s" in said
