"""The schedule checks' shortcuts (a timetable's order lists 10^5 sends): ``count`` for a
plain int in range, ``_order`` for an OrderedSend of plain values, answer exactly as the
checks they skip: the same value, the same refusal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetcoll._fields import count
from hetcoll.errors import ScheduleError
from hetcoll.units import MAX_SIZE, check_quantity


def _reference(value, kind, where, positive=False):
    """``count`` without its shortcut."""
    if isinstance(value, bool) or not isinstance(value, int):
        what = "a positive integer" if positive else "an integer >= 0"
        raise ScheduleError(f"{where}: must be {what}, got {value!r}")
    return int(check_quantity(value, kind, where, error=ScheduleError, positive=positive))


EDGES = [-(2**70), -1, 0, 1, 2, MAX_SIZE - 1, MAX_SIZE, MAX_SIZE + 1, 2**70]


@given(
    value=st.one_of(st.integers(), st.sampled_from(EDGES)),
    kind=st.sampled_from(["size", "count"]),
    positive=st.booleans(),
)
def test_count_answers_as_its_validator(value, kind, positive):
    try:
        want = _reference(value, kind, "x", positive)
    except ScheduleError as exc:
        with pytest.raises(ScheduleError) as got:
            count(value, kind, "x", positive)
        assert str(got.value) == str(exc)
    else:
        got = count(value, kind, "x", positive)
        assert got == want and type(got) is int


def test_count_still_refuses_what_is_not_a_plain_int():
    for value in (True, 1.0, "3", None):
        with pytest.raises(ScheduleError):
            count(value, "count", "x")


@given(
    flow=st.integers(-2, 5),
    child=st.one_of(st.sampled_from(["a", "", "b7"]), st.integers(-1, 3), st.booleans()),
    lag=st.one_of(st.integers(-1, 4), st.sampled_from([MAX_SIZE, MAX_SIZE + 1]), st.none()),
    slot=st.one_of(st.none(), st.integers(-1, 9), st.sampled_from([MAX_SIZE + 1, 1.0])),
)
def test_an_ordered_send_is_checked_as_its_json_list(flow, child, lag, slot):
    """``_order`` keeps an OrderedSend that passes its checks as it is: the same answer
    (the same entries, the same refusal) as when given the send's JSON list."""
    from hetcoll.patterns import OrderedSend
    from hetcoll.schedule import _order

    send = OrderedSend(flow, child, 0 if lag is None else lag, slot)
    try:
        want = _order({"r": [send.to_list()]}, 3)
    except ScheduleError as exc:
        with pytest.raises(ScheduleError) as got:
            _order({"r": [send]}, 3)
        assert str(got.value) == str(exc)
    else:
        got = _order({"r": [send]}, 3)
        assert got == want
        assert [type(x) for x in (got["r"][0].flow, got["r"][0].lag)] == [int, int]
