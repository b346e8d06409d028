"""``runtime/forced.py``'s one-step ``Allreduce`` and ``Allgather`` without MPI ranks: made
from synthetic entries, every call follows the rule of its size (a remembered size, a new
one, and new ones once :data:`~hetcoll.runtime.forced.REMEMBERED` are remembered), makes
its rule's stores around the call and undoes them, also when the call raises."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pytest
from mpi4py import MPI

from hetcoll.runtime import forced


class Cell:
    """A control variable's memory: what a store writes (``value``)."""

    def __init__(self) -> None:
        self.value = 0


def _make(name: str, stored: set[int]):
    """A one-step function of ``name`` on four rules (first sizes 0, 100, 1000, 10**6)
    whose entries ``stored`` store 7 and 9 into two cells; each call records its rule and
    what the cells held during it."""
    bounds = [0, 100, 1000, 10**6]
    cells = (Cell(), Cell())
    during: list[tuple] = []

    def call_of(k: int):
        def call(*args):
            during.append((k, cells[0].value, cells[1].value))
            if args[0] is RAISE:
                raise RuntimeError("the MPI call failed")

        return call

    entries = []
    for k in range(len(bounds) + 1):
        stores = (cells[0], 7, 0, cells[1], 9, 0) if k in stored else (None, 0, 0) * 2
        entries.append((f"rule {k}", call_of(k), *stores))
    state: dict = {}
    make = forced._allreduce if name == "Allreduce" else forced._allgather
    return make(bounds, entries, state, None), bounds, state, during, cells


RAISE = np.zeros(3)


@pytest.mark.parametrize("name", ["Allreduce", "Allgather"])
def test_every_size_follows_its_rule_before_and_after_the_dictionary_fills(name):
    one, bounds, state, during, cells = _make(name, stored={1, 3})
    sizes = [0, 99, 100, 999, 1000, 10**6 - 1, 10**6, *range(2000, 2000 + 2 * forced.REMEMBERED)]
    sizes += sizes[:10]  # remembered ones, and ones past the dictionary again
    for n in sizes:
        buf = np.zeros(n, dtype=np.uint8)
        one(buf, buf)
        k = bisect_right(bounds, n)
        assert state["last_choice"] == f"rule {k}"
        stores = (7, 9) if k in (1, 3) else (0, 0)
        assert during[-1] == (k, *stores)
        assert (cells[0].value, cells[1].value) == (0, 0)
    assert len(during) == len(sizes)


@pytest.mark.parametrize("name", ["Allreduce", "Allgather"])
def test_the_stores_are_undone_when_the_call_raises(name):
    one, _, _, during, cells = _make(name, stored={1})
    with pytest.raises(RuntimeError):
        one(RAISE, np.zeros(3))  # 24 bytes: rule 1
    assert during == [(1, 7, 9)] and (cells[0].value, cells[1].value) == (0, 0)


def test_allreduce_in_place_and_an_operators_argument_reach_the_call():
    got = []
    entries = [("own", lambda *a: got.append(a), None, 0, 0, None, 0, 0)] * 2
    one = forced._allreduce([0], entries, {}, None)
    recv = np.zeros(4)
    one(None, recv)
    one(recv, recv, MPI.MAX)
    assert got == [(MPI.IN_PLACE, recv, MPI.SUM), (recv, recv, MPI.MAX)]


@pytest.mark.parametrize("name", ["Allreduce", "Allgather"])
def test_a_calls_algo_goes_to_the_class_method_and_the_call_has_plain_parameters(name):
    """A call naming ``algo`` (by keyword, as the class's method takes it) runs the
    class's method; the one-step function's parameters are plain ones with defaults, no
    keyword-only or variable ones: CPython specializes a call of such a function (a
    keyword-only ``algo`` left every call on the generic path, some tens of ns more)."""
    import inspect

    slow_calls = []

    def slow(*args, **kwargs):
        slow_calls.append((args, kwargs))

    entries = [("own", lambda *a: None, None, 0, 0, None, 0, 0)] * 2
    make = forced._allreduce if name == "Allreduce" else forced._allgather
    one = make([0], entries, {}, slow)
    buf = np.zeros(4)
    one(buf, buf, algo="ring")
    assert slow_calls[-1][1] == {"algo": "ring"}
    if name == "Allreduce":
        op = MPI.Op.Create(lambda a, b, t: None, commute=False)
        one(buf, buf, op)
        op.Free()
        assert len(slow_calls) == 2
    kinds = {p.kind for p in inspect.signature(one).parameters.values()}
    assert kinds == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
