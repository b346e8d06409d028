"""A tuned ``HetComm``'s ``Allreduce`` and ``Allgather`` that force MPICH's algorithms,
dispatched in one step.

A ``HetComm`` natively on one host whose tuning file gives every call to MPI, some of them
with an MPICH algorithm forced (:mod:`hetcoll.runtime.mpich_cvars`), binds mpi4py's own
methods on the instance (:func:`~hetcoll.runtime.rooted.bind_mpi`) but these two, which
:func:`bind_forced` makes once from the file's rules: per rule (a range of sizes) its
choice, mpi4py's method and the stores into the control variables' memory that force the
rule's algorithm. A call is then the read of its size, a dictionary look-up of it (a size
not seen yet: a bisection of the rules' first sizes), the write of ``last_choice``, the
stores and mpi4py's method: nothing is derived again per call, no key is built and no other
Python function runs between the call and MPI's
(``benchmarks/mpi/bench_forced_dispatch.py`` prints what it costs beside the same algorithm
forced around mpi4py's method).  Its parameters are plain ones with defaults (``algo`` too,
which the class's method takes by keyword only): CPython specializes the call of such a
function, not of one with a keyword-only or variable parameter.  The rules' choices are the
class method's (:meth:`~hetcoll.runtime.collectives.Collectives._choose`, asked once per
rule).

The class's method serves what this does not: a buffer without ``nbytes`` (a buffer
spec), a call's ``algo``, a non-commutative operator (MPI's own, never forced), an
``Allgather`` in place.  As with :func:`~hetcoll.runtime.rooted.bind_mpi`, the call leaves
``last_schedule`` and the traces as they were.  The functions hold the instance's
``__dict__`` and a weak reference to the instance, not the instance: a dropped wrapper is
released when its last reference goes.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from .mpich_cvars import algorithms
from .subcomms import planned_class

__all__ = ["bind_forced", "buckets"]

#: what a rule's entry holds: its choice, the call, and two (memory, value, start) stores
Entry = tuple[Any, Callable, Any, int, int, Any, int, int]


def buckets(comm: Any, collective: str, method: Callable) -> tuple[list[int], list[Entry]]:
    """The rules' first sizes and, per range of sizes, what a call of ``collective`` in it
    runs: entry ``k`` serves sizes from ``bounds[k - 1]`` on (entry 0: below the first
    rule), ``(choice, call, memory, value, start, memory, value, start)``; ``memory`` None
    when nothing is stored (MPICH's own selection, or its variables written through
    ``MPI_T``: ``call`` is then the forcing wrapper); one store doubled when only one
    variable changes."""
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
        if not stores:
            entries.append((choice, call, None, 0, 0, None, 0, 0))
        else:
            first, last = stores[0], stores[-1]
            entries.append((choice, call, *first, *last))
    return bounds, entries


def bind_forced(comm: Any, names: tuple[str, ...]) -> None:
    """Bind on ``comm`` (a ``HetComm``) the one-step ``Allreduce`` and ``Allgather``
    (``names``) of its tuning file's rules (module doc)."""
    plain = MPI.Intracomm(comm)  # mpi4py's methods, with no reference to comm
    state, ref = comm.__dict__, weakref.ref(comm)
    for name in names:
        bounds, entries = buckets(comm, name.lower(), getattr(plain, name))
        make = _allreduce if name == "Allreduce" else _allgather
        state[name] = make(bounds, entries, state, _slow(ref, name))


def _slow(ref: weakref.ref, name: str) -> Callable:
    """The class's method ``name`` of the instance ``ref`` refers to."""

    def slow(*args: Any, **kwargs: Any) -> Any:
        comm = ref()
        return getattr(planned_class(comm), name)(comm, *args, **kwargs)

    return slow


#: the sizes a one-step function remembers the entry of (then it bisects for the others)
REMEMBERED = 1024


def _entries(bounds: list[int], entries: list[Entry]) -> tuple[dict, Callable[[int], Entry]]:
    """A size's entry: a dictionary of the sizes seen (at most :data:`REMEMBERED`), else
    the bisection of the rules' first sizes (which also fills the dictionary)."""
    seen: dict[int, Entry] = {}

    def entry(n: int) -> Entry:
        found = entries[bisect_right(bounds, n)]
        if len(seen) < REMEMBERED:
            seen[n] = found
        return found

    return seen, entry


def _allreduce(bounds, entries, state, slow) -> Callable:
    SUM, IN_PLACE = MPI.SUM, MPI.IN_PLACE
    seen, entry = _entries(bounds, entries)
    get = seen.get

    def Allreduce(sendbuf: Any, recvbuf: Any, op: MPI.Op = SUM, algo=None) -> None:
        try:
            n = recvbuf.nbytes
        except AttributeError:
            return slow(sendbuf, recvbuf, op, algo=algo)
        if algo is not None or (op is not SUM and not op.is_commutative):
            return slow(sendbuf, recvbuf, op, algo=algo)
        choice, call, c1, on1, off1, c2, on2, off2 = get(n) or entry(n)
        state["last_choice"] = choice
        if sendbuf is None:
            sendbuf = IN_PLACE
        if c1 is None:
            return call(sendbuf, recvbuf, op)
        c1.value = on1
        c2.value = on2
        try:
            return call(sendbuf, recvbuf, op)
        finally:
            c1.value = off1
            c2.value = off2

    return Allreduce


def _allgather(bounds, entries, state, slow) -> Callable:
    seen, entry = _entries(bounds, entries)
    get = seen.get

    def Allgather(sendbuf: Any, recvbuf: Any, algo=None) -> None:
        try:
            n = sendbuf.nbytes
        except AttributeError:  # None, IN_PLACE, a buffer spec
            return slow(sendbuf, recvbuf, algo=algo)
        if algo is not None:
            return slow(sendbuf, recvbuf, algo=algo)
        choice, call, c1, on1, off1, c2, on2, off2 = get(n) or entry(n)
        state["last_choice"] = choice
        if c1 is None:
            return call(sendbuf, recvbuf)
        c1.value = on1
        c2.value = on2
        try:
            return call(sendbuf, recvbuf)
        finally:
            c1.value = off1
            c2.value = off2

    return Allgather
