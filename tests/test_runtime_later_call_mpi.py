"""A message of a peer's LATER call that arrives while a rank is still in the current one
(mpi_programs/later_call.py, 3 ranks): the rank raises
:class:`~hetcoll.errors.MismatchError` in the current call, naming the later call, keeps
the message, and delivers it bit for bit in the call it belongs to, on the native fast path
and on the executor.  Were the kept message dropped, the later call would wait for it until
its timeout (the job fails); were it taken for the current call, that call would not raise."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import rank_events
from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "later_call.py"
pytestmark = pytest.mark.mpi
AGREED = [["call4", "ok"], ["call4 data", True], ["close", "ok"]]


@pytest.mark.parametrize("mode", ["fast", "executor"])
def test_a_message_of_a_later_call_is_kept_for_it_and_delivered_bit_identical(mode, tmp_path):
    out = tmp_path / "out"
    proc = run_mpi(3, [PROGRAM, mode, out], module=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ev = rank_events(out, 3)
    for r in range(3):
        assert ev[r][:3] == [["call1", "ok"], ["call1 data", True], ["premise", True]], ev[r]
    # rank 2: call 2 met rank 1's call-3 message, kept it, and call 3 delivered it
    two = ev[2][3:]
    assert two[0][:2] == ["call2", "MismatchError"], two
    assert "rank 1 sent data of its call 3 while this rank is in its call 2" in two[0][2], two
    assert two[1:] == [["call2 data", False], ["call3", "ok"], ["call3 data", True], *AGREED]
    # rank 1 found the disagreement itself, then ran ahead as call 3's root
    one = [e[:2] for e in ev[1][3:]]
    first = [["call2", "MismatchError"], ["call2 data", False], ["call3", "ok"]]
    assert one == [*first, ["call3 data", True], *AGREED], one
    # rank 0 (call 2's root: it only sent) learns of it in call 2 or after call 3's data
    zero = [e[:2] for e in ev[0][3:]]
    assert zero[:3] in (
        [["call2", "MismatchError"], ["call2 data", True], ["call3", "ok"]],
        [["call2", "ok"], ["call2 data", True], ["call3", "MismatchError"]],
    ), zero
    assert zero[3:] == [["call3 data", True], *AGREED], zero


def test_a_later_call_message_cut_by_the_current_receive_raises_in_its_own_call(tmp_path):
    """Call 3's message (300 bytes) arrives during call 2, whose receive holds 100: MPI cuts
    it, so rank 2 cannot deliver call 3 and raises there (its buffer untouched) instead of
    delivering a part; every other rank has call 3's data and the job ends."""
    out = tmp_path / "out"
    proc = run_mpi(3, [PROGRAM, "cut", out], module=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ev = rank_events(out, 3)
    two = ev[2]
    assert [e[:2] for e in two[3:5]] == [["call2", "MismatchError"], ["call2 data", False]]
    assert two[5][:2] == ["call3", "MismatchError"], two
    assert "cut it (100 of 300 bytes): its data are lost" in two[5][2], two
    assert two[6] == ["call3 data", False], two
    for r in (0, 1):
        assert ["call3 data", True] in ev[r], ev[r]
    for r in range(3):
        assert ["call4 data", True] in ev[r], ev[r]
