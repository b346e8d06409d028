"""``forest``'s ramped cuts (:func:`hetcoll.planners.forestplan._ramped`): a flow's first
segments a quarter and a half of the others, so that a segment reaches the links deep in
its tree sooner; the flows' ``cuts`` (bcast and reduce flows may have them), played out
and replayed by the simulator exactly, the fastest of every cut kept
(``tests/test_forest_depths.py``: the 64-node graph where the ramps win)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.errors import ScheduleError
from hetcoll.patterns import Flow, Tree
from hetcoll.planners.forestplan import MIN_SEGMENT, RAMP, _ramped

TREE = Tree("a", {"a": ("b", "c"), "b": ("d",)})


@pytest.mark.parametrize("kind", ["bcast", "reduce"])
def test_bcast_and_reduce_flows_take_cuts(kind):
    """Segments of several sizes in order, summing to ``nbytes``, the largest the
    ``segment_size``: the segments, the message count and JSON follow them; a gather's
    cuts, or cuts that do not sum, are refused in one line."""
    f = Flow(TREE, 64, 8, 0, 32, kind=kind, cuts=(8, 16, 32, 8))
    assert f.segments() == [(8, 8), (16, 16), (32, 32), (64, 8)]
    assert f.chunks == 4 and f.transfers == 4 * 3
    assert Flow.from_dict(f.to_dict()) == f
    with pytest.raises(ScheduleError, match="cuts"):
        Flow(TREE, 64, 0, 0, 32, kind=kind, cuts=(8, 16, 32))
    with pytest.raises(ScheduleError, match="cuts"):
        Flow(TREE, 64, kind="gather", cuts=(32, 32))


@settings(max_examples=60, deadline=None)
@given(
    nbytes=st.integers(1, 1 << 22),
    count=st.integers(1, 300),
    align=st.sampled_from([1, 4, 8]),
    backwards=st.booleans(),
)
def test_a_ramp_starts_with_a_quarter_and_a_half_segment(nbytes, count, align, backwards):
    """Every byte once, in segments of the plain cut's size but the ramp's (each
    :data:`RAMP`'s fraction of a segment, whole elements, those under :data:`MIN_SEGMENT`
    left out) and the last; backwards: the same sizes in reverse order."""
    whole = [Flow(TREE, nbytes, 0)]
    (f,) = _ramped(whole, [count], align, backwards)
    sizes = [n for _, n in f.segments()]
    assert sum(sizes) == nbytes
    if not f.cuts:  # too short to ramp: cut as the plain cut does
        return
    sizes = sizes[::-1] if backwards else sizes
    seg = f.segment_size
    head = [h for h in (seg // align // d * align for d in RAMP) if h >= MIN_SEGMENT]
    assert head and sizes[: len(head)] == head
    assert all(n == seg for n in sizes[len(head) : -1]) and 0 < sizes[-1] <= seg
    assert all(n % align == 0 for n in sizes[:-1])
