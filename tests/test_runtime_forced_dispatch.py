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


class Planned:
    """The planning class's methods: each call recorded (what the one-step methods leave to
    them)."""

    def __init__(self) -> None:
        self.slow_calls: list = []

    def Allreduce(self, *args, **kwargs):
        self.slow_calls.append((args, kwargs))

    def Allgather(self, *args, **kwargs):
        self.slow_calls.append((args, kwargs))


class Forcing(Planned):
    """A wrapper's class with the one-step methods (as ``subcomms.variant`` makes it)."""

    _planned_class = Planned
    Allreduce = forced.METHODS["Allreduce"]
    Allgather = forced.METHODS["Allgather"]


def _wrapper(name: str, bounds: list[int], entries: list) -> Forcing:
    """A wrapper whose one-step ``name`` has the tables of ``bounds`` and ``entries``."""
    comm = Forcing()
    comm.last_choice = None
    comm._forced_rules = {name.lower(): (bounds, entries)}
    setattr(comm, forced.SEEN[name.lower()], {})
    return comm


def _make(name: str, stored: set[int]):
    """A one-step method of ``name`` on four rules (first sizes 0, 100, 1000, 10**6)
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
        stores = (cells[0], 7, 0, cells[1], 9, 0) if k in stored else None
        entries.append((f"rule {k}", call_of(k), stores))
    comm = _wrapper(name, bounds, entries)
    return getattr(comm, name), bounds, comm, during, cells


RAISE = np.zeros(3)


@pytest.mark.parametrize("name", ["Allreduce", "Allgather"])
def test_every_size_follows_its_rule_before_and_after_the_dictionary_fills(name):
    one, bounds, comm, during, cells = _make(name, stored={1, 3})
    sizes = [0, 99, 100, 999, 1000, 10**6 - 1, 10**6, *range(2000, 2000 + 2 * forced.REMEMBERED)]
    sizes += sizes[:10]  # remembered ones, and ones past the dictionary again
    for n in sizes:
        buf = np.zeros(n, dtype=np.uint8)
        one(buf, buf)
        k = bisect_right(bounds, n)
        assert comm.last_choice == f"rule {k}"
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
    entries = [("own", lambda *a: got.append(a), None)] * 2
    one = _wrapper("Allreduce", [0], entries).Allreduce
    recv = np.zeros(4)
    one(None, recv)  # a size not seen yet
    one(recv, recv, MPI.MAX)
    one(None, recv)  # remembered
    in_place = (MPI.IN_PLACE, recv, MPI.SUM)
    assert got == [in_place, (recv, recv, MPI.MAX), in_place]


@pytest.mark.parametrize("name", ["Allreduce", "Allgather"])
def test_a_calls_algo_goes_to_the_class_method_and_the_call_has_plain_parameters(name):
    """A call naming ``algo`` (by keyword, as the class's method takes it) runs the
    class's method; the one-step function's parameters are plain ones with defaults, no
    keyword-only or variable ones: CPython specializes a call of such a function (a
    keyword-only ``algo`` left every call on the generic path, some tens of ns more)."""
    import inspect

    entries = [("own", lambda *a: None, None)] * 2
    comm = _wrapper(name, [0], entries)
    one = getattr(comm, name)
    buf = np.zeros(4)
    one(buf, buf, algo="ring")  # a size not seen yet
    one(buf, buf)
    one(buf, buf, algo="ring")  # remembered
    assert [c[1] for c in comm.slow_calls] == [{"algo": "ring"}] * 2
    if name == "Allreduce":
        op = MPI.Op.Create(lambda a, b, t: None, commute=False)
        one(buf, buf, op)
        one(np.zeros(9), np.zeros(9), op)  # a size not seen yet
        op.Free()
        assert len(comm.slow_calls) == 4
    one(b"ab", bytearray(4))  # no nbytes: the planning class's
    assert comm.slow_calls[-1][0][0] == b"ab"
    kinds = {p.kind for p in inspect.signature(forced.METHODS[name]).parameters.values()}
    assert kinds == {inspect.Parameter.POSITIONAL_OR_KEYWORD}


class CountingCell:
    """A control variable's memory that counts the stores into it."""

    def __init__(self) -> None:
        self.stores: list[int] = []

    @property
    def value(self) -> int:
        return self.stores[-1] if self.stores else 0

    @value.setter
    def value(self, v: int) -> None:
        self.stores.append(v)


@pytest.mark.parametrize("name", ["Allreduce", "Allgather"])
def test_a_rule_that_changes_one_variable_stores_it_once_before_and_once_after(name):
    """An entry with one store (an allgather's: its shared-memory variable starts at
    ``mpir``) makes two stores a call, as ``Algorithms.forcing`` does around mpi4py's
    method, not four; a new size and a remembered one alike, also when the call raises."""
    cell, during = CountingCell(), []

    def call(*args):
        during.append(cell.value)
        if args[0] is RAISE:
            raise RuntimeError("the MPI call failed")

    own, ring = ("own", call, None), ("ring", call, (cell, 5, 0, None, 0, 0))
    one = getattr(_wrapper(name, [0, 16], [own, own, ring]), name)
    buf = np.zeros(4)  # 32 bytes: the forced rule
    one(buf, buf)  # a size not seen yet
    one(buf, buf)  # remembered
    with pytest.raises(RuntimeError):
        one(RAISE, RAISE)  # 24 bytes, the forced rule
    assert during == [5, 5, 5] and cell.stores == [5, 0] * 3


def test_buckets_store_only_the_variables_that_change():
    """The entries :func:`~hetcoll.runtime.forced.buckets` makes from a tuning file's rules
    (a HetComm of 4 ranks, faked): an allgather's forced rule stores one variable (the
    second memory None), an allreduce's two, MPICH's own none; the memories and values
    are those ``Algorithms.stores`` gives."""
    from types import SimpleNamespace

    from hetcoll.choice import Choice
    from hetcoll.runtime.mpich_cvars import algorithms
    from hetcoll.tuning import Tuning, rules_from

    found = algorithms()
    if found is None or not found.direct:
        pytest.skip("MPICH's control variables' memory is not known here")
    forcing = {"allreduce": "recursive_doubling", "allgather": "ring"}
    winners = {c: [(8, "mpi", None), (1024, "mpi", None, n)] for c, n in forcing.items()}
    tuning = Tuning(4, rules_from(winners))
    for collective, name in forcing.items():

        def choose(c, nbytes, op=None, collective=collective):
            rule = tuning.lookup(c, nbytes)
            return Choice("mpi", source="tuning", mpich=rule.mpich)

        comm = SimpleNamespace(planning=SimpleNamespace(tuning=tuning), _choose=choose)
        bounds, entries = forced.buckets(comm, collective, print)
        assert bounds == [r.from_bytes for r in tuning.rules[collective]]
        assert [e[0].mpich for e in entries] == [None, None, name]
        assert entries[0][2] is None and entries[1][2] is None
        want = found.stores(collective, name)
        assert len(want) == (1 if collective == "allgather" else 2)
        second = want[1] if len(want) > 1 else (None, 0, 0)
        assert entries[2][2] == (*want[0], *second)
