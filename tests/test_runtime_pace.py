"""runtime/segments.py's Pace: how an idle rank of a pipelined call looks again by default
(docs/runtime.md, Waiting).  A virtual machine: its clock, yields, naps and the count of
the time the thread waited for a core are numbers the test sets; no wall time."""

from __future__ import annotations

import pytest

from hetcoll.runtime import segments
from hetcoll.runtime.clocks import NATIVE, Host
from hetcoll.runtime.segments import Pace, paced, run_delay

EVERY = 1_000_000  # ns per period


class Machine:
    """A clock that moves only when the test or a look moves it, and the thread's wait."""

    def __init__(self, waits: bool = True) -> None:
        self.t = 10**9
        self.wait = 0
        self.waits = waits
        self.done: list[str] = []

    def clock(self) -> int:
        return self.t

    def give(self) -> None:
        self.done.append("yield")
        self.t += 1_000

    def sleep(self, seconds: float) -> None:
        assert seconds == 0
        self.done.append("nap")
        self.t += 70_000

    def waited(self) -> int | None:
        return self.wait if self.waits else None

    def pace(self) -> Pace:
        return Pace(
            every=EVERY,
            often=8,
            first=2,
            most=8,
            clock=self.clock,
            give=self.give,
            sleep=self.sleep,
            waited=self.waited,
        )

    def period(self, pace: Pace, waited: int) -> str:
        """One period that waited ``waited`` ns for a core, then a look: what it did."""
        self.t = pace.mark + EVERY
        self.wait += waited
        pace()
        return self.done[-1]


def test_a_new_rank_naps_until_periods_in_a_row_show_its_core_free_then_yields():
    """``first`` (2) clear periods in a row: a wait for a core within 1/8 of the time."""
    m = Machine()
    pace = m.pace()
    pace()
    pace()
    assert m.done == ["nap", "nap"]  # within the first period: naps
    assert m.period(pace, EVERY // 8) == "nap"  # 1/8 exactly: clear, one in a row
    assert m.period(pace, EVERY // 2) == "nap"  # half of it waiting for a core: busy
    assert m.period(pace, 0) == "nap"  # clear, one in a row again
    assert m.period(pace, EVERY // 8) == "yield"  # two in a row: yields from now
    for _ in range(5):
        pace()
    assert m.done[-5:] == ["yield"] * 5
    assert m.period(pace, 0) == "yield"  # clear again: still yields
    assert pace.periods == [4, 1]  # judged: four periods napping, one yielding


def test_yielding_that_meets_other_work_naps_for_ever_longer_then_yields_again():
    """A busy period while yielding: naps until ``span`` clear periods in a row have
    passed (a busy one starts the count again), ``span`` doubling each time up to ``most``
    (8); a clear period of yields halves it, down to ``first`` (2)."""
    m = Machine()
    pace = m.pace()
    busy, clear = EVERY // 8 + 1, EVERY // 8
    assert [m.period(pace, clear) for _ in range(2)] == ["nap", "yield"]

    def naps_after_busy() -> int:
        """Clear periods napped after a busy period of yields, before yielding again."""
        assert m.period(pace, busy) == "nap"
        assert m.period(pace, clear) == "nap"
        assert m.period(pace, busy) == "nap"  # a busy period: the count starts again
        n = 0
        while m.period(pace, clear) == "nap":
            n += 1
        return n + 1  # the last clear period, where it began to yield

    assert [naps_after_busy() for _ in range(4)] == [2, 4, 8, 8]
    assert pace.span == 8
    assert m.period(pace, clear) == "yield"  # a clear period of yields: halves the span
    assert pace.span == 4
    assert naps_after_busy() == 4
    assert [m.period(pace, clear) for _ in range(3)] == ["yield"] * 3
    assert pace.span == 2  # halved down to first


def test_without_the_kernels_count_a_rank_always_naps():
    m = Machine(waits=False)
    pace = m.pace()
    for _ in range(3):
        assert m.period(pace, 0) == "nap"
    assert "yield" not in m.done


def test_a_period_measured_across_two_threads_starts_again(monkeypatch):
    """The counts of two threads are not comparable: the period restarts, no verdict."""
    m = Machine()
    pace = m.pace()
    assert [m.period(pace, 0) for _ in range(2)] == ["nap", "yield"]
    monkeypatch.setattr(segments, "get_ident", lambda: -1)  # another thread's look
    assert m.period(pace, EVERY) == "yield"  # its wait is not judged: still yields
    assert pace.who == -1
    assert m.period(pace, EVERY) == "nap"  # the same thread again: busy


def test_the_pace_is_the_default_only_natively_with_a_core_per_rank():
    virtual = Host(lambda: 0, lambda s: None, lambda reqs: None)
    assert paced(NATIVE, 2, 2) and paced(NATIVE, 1, 8)
    assert not paced(NATIVE, 3, 2)
    assert not paced(virtual, 1, 8)


def test_run_delay_is_the_kernels_count_or_none():
    first = run_delay()
    if first is None:
        pytest.skip("the kernel does not count the time a thread waits for a core")
    assert isinstance(first, int) and 0 <= first <= run_delay()
