"""A tuned ``HetComm``'s ``Allreduce`` and ``Allgather`` that force MPICH's algorithms,
dispatched in one step.

A ``HetComm`` natively on one host whose tuning file gives every call to MPI, some of them
with an MPICH algorithm forced (:mod:`hetcoll.runtime.mpich_cvars`), has mpi4py's own
methods as its class's (:func:`~hetcoll.runtime.rooted.bind_mpi`) but these two, which are
:data:`METHODS`, its class's too (:func:`~hetcoll.runtime.subcomms.variant`), working from
tables :func:`bind_forced` makes once from the file's rules and sets on the instance: per
rule (a range of sizes) its choice, mpi4py's method and the stores into the control
variables' memory that force the rule's algorithm.  A call is then one dictionary look-up
of its size's entry (in one ``try``: a buffer without ``nbytes`` or a size not seen yet
leaves it, and a size not seen is found by a bisection of the rules' first sizes), the
write of ``last_choice``, the stores of the variables that change (one an allgather's, two
an allreduce's, and as many after the call) and mpi4py's method: nothing is derived again
per call, no key is built and no other Python function runs between the call and MPI's
(``benchmarks/mpi/bench_forced_dispatch.py`` prints what it costs beside the same
algorithm forced around mpi4py's method, which stores as many).

Why the class's and not functions on the instance: CPython 3.11 specializes the look-up
``hc.Allgather`` of a class's function on an instance that keeps its attributes in the
compact form it shares with its class (``tests/test_runtime_instance_dict_mpi.py``), as it
does mpi4py's methods, and the method's ``self.last_choice = choice`` and
``self._forced_allgather`` are then stores and loads at a known place; a function in the
instance's dictionary is looked up on CPython's generic path, and the dictionary it needs
once made keeps every other look-up off the fast one.  Their parameters are plain ones with
defaults (``algo`` too, which the planning class's method takes by keyword only): CPython
specializes the call of such a function, not of one with a keyword-only or variable
parameter.  The rules' choices are the planning class's
(:meth:`~hetcoll.runtime.collectives.Collectives._choose`, asked once per rule).

The planning class's method (:func:`~hetcoll.runtime.subcomms.planned_class`) serves what
this does not: a buffer without ``nbytes`` (a buffer spec), a call's ``algo``, a
non-commutative operator (MPI's own, never forced), an ``Allgather`` in place.  As with
:func:`~hetcoll.runtime.rooted.bind_mpi`, the call leaves ``last_schedule`` and the traces
as they were.  The tables hold mpi4py's methods of a plain ``MPI.Intracomm`` on the same
handle, not the instance: no reference cycle, a dropped wrapper is released when its last
reference goes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from .mpich_cvars import algorithms

__all__ = ["METHODS", "bind_forced", "buckets", "tables"]

#: what a rule's entry holds: its choice, the call, and None (no store) or the stores
#: ``(memory, value, start, memory, value, start)``, the second memory None when only one
#: variable changes
Entry = tuple[Any, Callable, Any]
#: the sizes a wrapper remembers the entry of (then it bisects for the others)
REMEMBERED = 1024
#: the instance attribute of each collective's remembered sizes (size -> entry)
SEEN = {"allreduce": "_forced_allreduce", "allgather": "_forced_allgather"}


def buckets(comm: Any, collective: str, method: Callable) -> tuple[list[int], list[Entry]]:
    """The rules' first sizes and, per range of sizes, what a call of ``collective`` in it
    runs: entry ``k`` serves sizes from ``bounds[k - 1]`` on (entry 0: below the first
    rule), ``(choice, call, stores)``; ``stores`` None when nothing is stored (MPICH's own
    selection, or its variables written through ``MPI_T``: ``call`` is then the forcing
    wrapper), else ``(memory, value, start, memory, value, start)``, the second memory
    None when only one variable changes (an allgather's: its shared-memory variable starts
    at ``mpir``)."""
    rules = comm.planning.tuning.rules[collective]
    bounds = [r.from_bytes for r in rules]
    op = MPI.SUM if collective == "allreduce" else None
    found = algorithms()
    entries: list[Entry] = []
    for nbytes in (max(bounds[0] - 1, 0), *bounds):
        choice = comm._choose(collective, nbytes, op=op)
        call, stores = method, []
        if choice.mpich is not None and found is not None:
            if found.direct:
                stores = found.stores(collective, choice.mpich)
            else:
                call = found.forcing(collective, choice.mpich, method)
        second = stores[1] if len(stores) > 1 else (None, 0, 0)
        entries.append((choice, call, (*stores[0], *second) if stores else None))
    return bounds, entries


def tables(comm: Any, names: tuple[str, ...], method: Callable | None = None) -> dict:
    """The attributes :func:`bind_forced` sets on ``comm``: per collective of ``names``
    its remembered sizes (empty) under :data:`SEEN`, and ``_forced_rules``, per
    collective its rules' first sizes and entries (:func:`buckets`) of mpi4py's method
    (or of ``method``: ``benchmarks/mpi/ranks/forced_dispatch.py`` times the Python work
    alone with a C function that does nothing)."""
    plain = MPI.Intracomm(comm)  # mpi4py's methods, with no reference to comm
    out: dict[str, Any] = {"_forced_rules": {}}
    for name in names:
        collective = name.lower()
        call = getattr(plain, name) if method is None else method
        out["_forced_rules"][collective] = buckets(comm, collective, call)
        out[SEEN[collective]] = {}
    return out


def bind_forced(comm: Any, names: tuple[str, ...]) -> None:
    """Give ``comm`` (a ``HetComm``) the tables of the one-step ``Allreduce`` and
    ``Allgather`` (``names``) of its tuning file's rules (module doc); its class's methods
    ``names`` must be those of :data:`METHODS` (:func:`~hetcoll.runtime.subcomms.settle`)."""
    for key, value in tables(comm, names).items():
        setattr(comm, key, value)


def planned_class(comm: Any) -> type:
    """The class ``comm`` was made as (:func:`hetcoll.runtime.subcomms.planned_class`,
    which imports this module's :data:`METHODS`)."""
    return getattr(type(comm), "_planned_class", type(comm))


def _entry(comm: Any, collective: str, n: int) -> Entry:
    """The entry of a size not remembered: the bisection of the rules' first sizes, kept
    while fewer than :data:`REMEMBERED` sizes are."""
    bounds, entries = comm._forced_rules[collective]
    found = entries[bisect_right(bounds, n)]
    seen = getattr(comm, SEEN[collective])
    if len(seen) < REMEMBERED:
        seen[n] = found
    return found


def _run(comm: Any, entry: Entry, args: tuple) -> Any:
    """``entry``'s call of ``args`` inside its stores (a size not remembered: the one-step
    method's steps, once more)."""
    choice, call, stores = entry
    comm.last_choice = choice
    if stores is None:
        return call(*args)
    c1, on1, off1, c2, on2, off2 = stores
    c1.value = on1
    if c2 is not None:
        c2.value = on2
    try:
        return call(*args)
    finally:
        c1.value = off1
        if c2 is not None:
            c2.value = off2


def _missed_allreduce(self: Any, sendbuf: Any, recvbuf: Any, op: MPI.Op, algo: Any) -> Any:
    """An ``Allreduce`` without ``nbytes``, with ``algo``, of an operator never forced or
    of a size not remembered."""
    n = getattr(recvbuf, "nbytes", None)
    if n is None or algo is not None or not (op is MPI.SUM or op.is_commutative):
        return planned_class(self).Allreduce(self, sendbuf, recvbuf, op, algo=algo)
    args = (MPI.IN_PLACE if sendbuf is None else sendbuf, recvbuf, op)
    return _run(self, _entry(self, "allreduce", n), args)


def _missed_allgather(self: Any, sendbuf: Any, recvbuf: Any, algo: Any) -> Any:
    """An ``Allgather`` without ``nbytes`` (None, IN_PLACE, a buffer spec), with
    ``algo``, or of a size not remembered."""
    n = getattr(sendbuf, "nbytes", None)
    if n is None or algo is not None:
        return planned_class(self).Allgather(self, sendbuf, recvbuf, algo=algo)
    return _run(self, _entry(self, "allgather", n), (sendbuf, recvbuf))


_SUM, _IN_PLACE = MPI.SUM, MPI.IN_PLACE


def Allreduce(self: Any, sendbuf: Any, recvbuf: Any, op: MPI.Op = _SUM, algo=None) -> None:
    """The one-step ``Allreduce`` (module doc)."""
    try:  # one look-up: a buffer without nbytes or a size not remembered: _missed_...
        choice, call, stores = self._forced_allreduce[recvbuf.nbytes]
    except (AttributeError, KeyError):
        return _missed_allreduce(self, sendbuf, recvbuf, op, algo)
    if algo is not None or (op is not _SUM and not op.is_commutative):
        return planned_class(self).Allreduce(self, sendbuf, recvbuf, op, algo=algo)
    self.last_choice = choice
    if sendbuf is None:
        sendbuf = _IN_PLACE
    if stores is None:
        return call(sendbuf, recvbuf, op)
    c1, on1, off1, c2, on2, off2 = stores
    c1.value = on1
    if c2 is None:
        try:
            return call(sendbuf, recvbuf, op)
        finally:
            c1.value = off1
    c2.value = on2
    try:
        return call(sendbuf, recvbuf, op)
    finally:
        c1.value = off1
        c2.value = off2


def Allgather(self: Any, sendbuf: Any, recvbuf: Any, algo=None) -> None:
    """The one-step ``Allgather`` (module doc)."""
    try:  # one look-up: a buffer without nbytes or a size not remembered: _missed_...
        choice, call, stores = self._forced_allgather[sendbuf.nbytes]
    except (AttributeError, KeyError):
        return _missed_allgather(self, sendbuf, recvbuf, algo)
    if algo is not None:
        return planned_class(self).Allgather(self, sendbuf, recvbuf, algo=algo)
    self.last_choice = choice
    if stores is None:
        return call(sendbuf, recvbuf)
    c1, on1, off1, c2, on2, off2 = stores
    c1.value = on1
    if c2 is None:
        try:
            return call(sendbuf, recvbuf)
        finally:
            c1.value = off1
    c2.value = on2
    try:
        return call(sendbuf, recvbuf)
    finally:
        c1.value = off1
        c2.value = off2


#: the one-step methods, a wrapper's class's where its tuning file forces MPICH's
#: algorithms (:func:`~hetcoll.runtime.subcomms.variant`)
METHODS: dict[str, Callable] = {"Allreduce": Allreduce, "Allgather": Allgather}
