"""MPICH's algorithm of ``Allreduce`` and ``Allgather``, chosen at run time through its
control variables (the MPI tool interface, ``MPI_T``).

MPICH picks each collective's algorithm by its control variables
``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM`` and ``MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM``
(``auto``: its own selection; ``ring``, ``recursive_doubling``, ...), and on one host, first,
by ``MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM`` / ``..._ALLGATHER_POSIX_...`` (``auto``,
shared-memory algorithms of its own, or ``mpir``: the algorithm above).  It reads them at
every call, and ``MPI_T`` writes them while the program runs (scope ``MPI_T_SCOPE_ALL_EQ``:
every process must hold the same value).  mpi4py does not wrap ``MPI_T``; this module calls
the MPI library mpi4py loaded through :mod:`ctypes` (the ``libmpi`` mapped into the
process, ``/proc/self/maps``).

:func:`algorithms` gives the process's :class:`Algorithms`, or None when this cannot work
(:func:`why_not` says why: not MPICH, no ``/proc/self/maps``, a control variable missing,
not an ``int``, or a write that does not read back), and then MPI's own selection runs.
An algorithm is forced for one call only (:meth:`Algorithms.forcing`): the two variables are
written before the call and restored after it, because they are the process's and not the
communicator's: left set, the next call on another communicator whose ranks set them
differently (sub-communicators that called different sizes) would run different algorithms
on its ranks.  Nor are they left set between two calls that force the same value on the
same communicator: the program's own calls in between (mpi4py's methods, another library's)
read them too, unseen by hetcoll, and would run the forced algorithm on the ranks whose last
call forced it and MPICH's own on the others (a hang or a wrong result).

The writes are made cheap instead: ``MPI_T_cvar_write`` through :mod:`ctypes` costs about
0.15 µs (a foreign call, MPICH's lock), a store into the variable's memory through a
:class:`ctypes.c_int` made once about 0.02 µs.  The variable's address is the pointer MPICH
keeps in the handle ``MPI_T_cvar_handle_alloc`` returned (its ``addr``), found by reading
the handle's first words, taken only if it lies in writable memory of the process
(``/proc/self/maps``) and, for every value of the variable, follows ``MPI_T_cvar_write`` and
is what ``MPI_T_cvar_read`` reads back after a store (:func:`_cell`); otherwise, or
``direct=False``, every write is ``MPI_T_cvar_write``.  The values are the names' positions
in the variables' descriptions (MPICH numbers its enumerations so;
``tests/test_runtime_mpich_cvars_mpi.py`` checks each against the variable set by name in
the environment).  Nothing is printed: a name the installed
MPICH does not know, or a write that fails, leaves the call to MPICH's own selection.
"""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

__all__ = ["COLLECTIVES", "Algorithms", "algorithms", "mpich_call", "why_not"]

#: the collectives whose MPICH algorithm can be forced
COLLECTIVES = ("allreduce", "allgather")
#: what is never forced: MPICH's own selection, its nonblocking call waited for, a
#: node-aware composition, an accelerator library
NOT_FORCED = ("auto", "nb", "smp", "ccl")
_NAME = re.compile(r"^\s*([a-z][a-z0-9_]*)\s+-\s", re.MULTILINE)


class _Variable:
    """One control variable: its handle, its names (value = position) and its value at start."""

    def __init__(self, lib: ctypes.CDLL, name: str, writable: list[tuple[int, int]]) -> None:
        index = ctypes.c_int()
        if lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index)) != 0:
            raise _Unusable(f"{name}: not a control variable of this MPI library")
        nlen, dlen = ctypes.c_int(256), ctypes.c_int(8192)
        text, desc = ctypes.create_string_buffer(256), ctypes.create_string_buffer(8192)
        verbosity, bind, scope = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        datatype, enum = ctypes.c_void_p(), ctypes.c_void_p()
        rc = lib.MPI_T_cvar_get_info(
            index,
            text,
            ctypes.byref(nlen),
            ctypes.byref(verbosity),
            ctypes.byref(datatype),
            ctypes.byref(enum),
            desc,
            ctypes.byref(dlen),
            ctypes.byref(bind),
            ctypes.byref(scope),
        )
        if rc != 0 or (datatype.value or 0) & 0xFFFFFFFF != MPI.INT.handle & 0xFFFFFFFF:
            raise _Unusable(f"{name}: not an int control variable (MPI_T_cvar_get_info)")
        self.names = _NAME.findall(desc.value.decode(errors="replace"))
        handle, count = ctypes.c_void_p(), ctypes.c_int()
        rc = lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle), ctypes.byref(count))
        if rc != 0 or count.value != 1:
            raise _Unusable(f"{name}: MPI_T_cvar_handle_alloc failed")
        self.name, self.handle, self._lib = name, handle, lib
        self.start = self.read()
        self.values = [ctypes.c_int(v) for v in range(len(self.names))]
        self.refs = [ctypes.byref(v) for v in self.values]
        self.start_ref = ctypes.byref(ctypes.c_int(self.start))
        if lib.MPI_T_cvar_write(handle, self.start_ref) != 0 or self.read() != self.start:
            raise _Unusable(f"{name}: cannot be written at run time (MPI_T_cvar_write)")
        #: the variable's memory (a store into it is a write), None where not found (_cell)
        self.cell = _cell(self, writable)

    def read(self) -> int:
        value = ctypes.c_int(-1)
        if self._lib.MPI_T_cvar_read(self.handle, ctypes.byref(value)) != 0:
            raise _Unusable(f"{self.name}: MPI_T_cvar_read failed")
        return value.value


class _Unusable(Exception):
    pass


#: the handle's first words searched for the variable's address (MPICH's handle holds
#: ``addr`` first, or second after an object kind when built with error checking)
HANDLE_WORDS = 3


def _writable() -> list[tuple[int, int]]:
    """The process's writable memory, ``(start, end)`` per mapping (``/proc/self/maps``)."""
    out = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            span, perms = line.split()[:2]
            if perms.startswith("rw"):
                start, end = (int(x, 16) for x in span.split("-"))
                out.append((start, end))
    return out


def _cell(var: _Variable, writable: list[tuple[int, int]]) -> ctypes.c_int | None:
    """The ``int`` in memory that is ``var`` (module doc), None when no word of its handle
    points at one: a candidate must lie in writable memory, follow every value
    ``MPI_T_cvar_write`` writes, and be read back by ``MPI_T_cvar_read`` after a store (the
    stores only once it has followed every write); the variable is left at its start."""
    lib, found = var._lib, None
    for k in range(HANDLE_WORDS):
        addr = ctypes.c_size_t.from_address(var.handle.value + k * ctypes.sizeof(ctypes.c_size_t))
        p = addr.value
        if p % 4 or not any(a <= p and p + 4 <= b for a, b in writable):
            continue
        cell = ctypes.c_int.from_address(p)
        follows = all(
            lib.MPI_T_cvar_write(var.handle, ref) == 0 and cell.value == v
            for v, ref in enumerate(var.refs)
        )
        for v in range(len(var.refs)) if follows else ():
            cell.value = v
            follows = follows and var.read() == v
        lib.MPI_T_cvar_write(var.handle, var.start_ref)
        if follows and cell.value == var.start:
            found = cell
            break
    if var.read() != var.start:
        raise _Unusable(f"{var.name}: not restored after its address was searched")
    return found


class Algorithms:
    """MPICH's allreduce and allgather algorithms, forced per call (module doc)."""

    def __init__(self, lib: ctypes.CDLL, direct: bool = True) -> None:
        self._write = lib.MPI_T_cvar_write
        self._vars = {}
        writable = _writable()
        for collective in COLLECTIVES:
            upper = collective.upper()
            intra = _Variable(lib, f"MPIR_CVAR_{upper}_INTRA_ALGORITHM", writable)
            posix = _Variable(lib, f"MPIR_CVAR_{upper}_POSIX_INTRA_ALGORITHM", writable)
            if "mpir" not in posix.names:
                raise _Unusable(f"{posix.name}: no 'mpir' among its values")
            self._vars[collective] = (intra, posix)
        #: whether :meth:`forcing` stores into the variables' memory (module doc), else
        #: writes them with ``MPI_T_cvar_write``
        self.direct = direct and all(v.cell is not None for p in self._vars.values() for v in p)

    def names(self, collective: str) -> tuple[str, ...]:
        """The algorithms of ``collective`` that can be forced, in MPICH's order."""
        intra = self._vars[collective][0]
        return tuple(n for n in intra.names if n not in NOT_FORCED)

    def current(self, collective: str) -> tuple[str, str]:
        """The names the two variables of ``collective`` hold now (the algorithm, then the
        shared-memory one; ``?`` for a value without a name)."""
        out = []
        for var in self._vars[collective]:
            value = var.read()
            out.append(var.names[value] if 0 <= value < len(var.names) else "?")
        return out[0], out[1]

    def force(self, collective: str, name: str) -> bool:
        """Set ``collective``'s algorithm to ``name`` (and the shared-memory variable to
        ``mpir``) until :meth:`restore`; False (the variables as they were at start) when
        ``name`` is not one of :meth:`names` or a write fails."""
        intra, posix = self._vars[collective]
        if name not in self.names(collective):
            return False
        ok = self._write(intra.handle, intra.refs[intra.names.index(name)]) == 0
        ok = ok and self._write(posix.handle, posix.refs[posix.names.index("mpir")]) == 0
        if not ok:
            self.restore(collective)
        return ok

    def restore(self, collective: str) -> None:
        """The variables of ``collective`` back to their values at start."""
        for var in self._vars[collective]:
            self._write(var.handle, var.start_ref)

    def _changed(self, collective: str, name: str | None) -> list[tuple[_Variable, int]]:
        """The variables forcing ``name`` changes and the values it writes into them: only
        those that change (the allgather's shared-memory one starts at ``mpir``); none when
        ``name`` is None or unknown to this MPICH."""
        if name is None or name not in self.names(collective):
            return []
        intra, posix = self._vars[collective]
        wanted = ((intra, intra.names.index(name)), (posix, posix.names.index("mpir")))
        return [(v, k) for v, k in wanted if v.start != k]

    def stores(self, collective: str, name: str | None) -> list[tuple[ctypes.c_int, int, int]]:
        """What forcing ``name`` stores, ``(memory, value, start)`` per variable that
        changes (``value`` stored before the call, ``start`` after it): for a caller that
        makes the stores itself around the call (:mod:`hetcoll.runtime.forced`); empty when
        nothing changes or ``name`` is unknown; :class:`ValueError` when the variables'
        memory is not known (``direct`` off: :meth:`forcing` writes through ``MPI_T``)."""
        wanted = self._changed(collective, name)
        if wanted and not self.direct:
            raise ValueError("the control variables' memory is not known: use forcing()")
        return [(v.cell, k, v.start) for v, k in wanted]

    def forcing(self, collective: str, name: str | None, call: Callable) -> Callable:
        """``call`` (an mpi4py method) run with ``collective``'s algorithm forced to
        ``name`` and restored after it; ``call`` itself when ``name`` is None or unknown to
        this MPICH (its own selection then runs)."""
        wanted = self._changed(collective, name)
        if not wanted:
            return call
        if self.direct:
            return _stored(call, self.stores(collective, name))
        write = self._write
        changes = [(v.handle, v.refs[k], v.start_ref) for v, k in wanted]
        if len(changes) == 1:
            ((h, on, off),) = changes

            def forced_one(*args: Any) -> Any:
                if write(h, on):  # failed: MPICH's own selection
                    write(h, off)
                    return call(*args)
                try:
                    return call(*args)
                finally:
                    write(h, off)

            return forced_one
        (h1, on1, off1), (h2, on2, off2) = changes

        def forced(*args: Any) -> Any:
            if write(h1, on1) or write(h2, on2):  # failed: MPICH's own selection
                write(h1, off1)
                write(h2, off2)
                return call(*args)
            try:
                return call(*args)
            finally:
                write(h1, off1)
                write(h2, off2)

        return forced


def _stored(call: Callable, changes: list[tuple[ctypes.c_int, int, int]]) -> Callable:
    """``call`` with each ``(cell, value, start)``'s ``value`` stored before it and
    ``start`` after it (:meth:`Algorithms.forcing` where the variables' memory is known:
    a store cannot fail)."""
    if len(changes) == 1:
        ((cell, on, off),) = changes

        def stored_one(*args: Any) -> Any:
            cell.value = on
            try:
                return call(*args)
            finally:
                cell.value = off

        return stored_one
    (c1, on1, off1), (c2, on2, off2) = changes

    def stored(*args: Any) -> Any:
        c1.value = on1
        c2.value = on2
        try:
            return call(*args)
        finally:
            c1.value = off1
            c2.value = off2

    return stored


def _library() -> ctypes.CDLL:
    """The MPI library mpi4py loaded (its ``MPI_T`` functions)."""
    if not MPI.Get_library_version().startswith("MPICH"):
        raise _Unusable("the MPI library is not MPICH")
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "/" in line}
    except OSError:
        raise _Unusable("no /proc/self/maps to find the MPI library in") from None
    for path in sorted(paths):
        if re.search(r"/lib(p?mpi|mpich)[^/]*\.so", path):
            lib = ctypes.CDLL(path)
            if hasattr(lib, "MPI_T_cvar_write"):
                return lib
    raise _Unusable("no MPI library with MPI_T_cvar_write among the process's libraries")


@functools.cache
def _found() -> tuple[Algorithms | None, str | None]:
    """The process's :class:`Algorithms` and None, or None and why not (made once: the
    ``MPI_T`` session and the control variables are the process's, as MPI itself is)."""
    try:
        lib = _library()  # MPI_T_cvar_write without argtypes: the quickest ctypes call
        provided = ctypes.c_int()
        if lib.MPI_T_init_thread(MPI.Query_thread(), ctypes.byref(provided)) != 0:
            raise _Unusable("MPI_T_init_thread failed")
        return Algorithms(lib), None
    except (_Unusable, OSError, AttributeError) as exc:
        return None, str(exc)


def algorithms() -> Algorithms | None:
    """The process's :class:`Algorithms` (made on the first call: ``MPI_T_init_thread``),
    or None when MPICH's algorithms cannot be forced here (:func:`why_not`)."""
    return _found()[0]


def why_not() -> str | None:
    """Why :func:`algorithms` is None (None when it is not)."""
    return _found()[1]


def mpich_call(collective: str, choice: Any, call: Callable) -> Callable:
    """``call`` with the MPICH algorithm a choice names (its ``mpich``) forced
    (:meth:`Algorithms.forcing`); ``call`` itself when it names none or none can be forced."""
    name = getattr(choice, "mpich", None)
    found = None if name is None else algorithms()
    return call if found is None else found.forcing(collective, name, call)
