"""The engine's communicator is an ``MPI.Intracomm``, and the communicators made from it
are wrappers like it.

:class:`SubComms` is the base of :class:`~.comm.ScheduleComm` (and so of
:class:`hetcoll.HetComm`).  It subclasses ``MPI.Intracomm`` on the user's own handle
(``MPI.Intracomm.__new__(cls, comm)`` copies the handle; mpi4py 4 allows Python subclasses
of its communicator classes, and never frees a handle when an object is collected), so:

- ``isinstance(hc, MPI.Intracomm)`` (and ``MPI.Comm``) holds, as libraries that type-check
  their communicator ask; ``hc == comm`` (the same handle);
- everything hetcoll does not plan (``Alltoall``, ``Scan``, ``Ibcast``, ``Get_rank``,
  point to point, attributes, ...) is mpi4py's own method on the user's communicator, with
  no Python layer in between (a collective, through a one-line method of
  :mod:`.rooted` that sets ``last_call`` to None);
- ``Dup``, ``Dup_with_info``, ``Clone``, ``Split``, ``Split_type``, ``Create`` and
  ``Create_group`` return a wrapper of the same class and settings on the new
  communicator, each of its ranks the platform node its rank had here (the matching
  sub-platform: the same network, planned for the new communicator's nodes; ``nodes=``),
  or ``MPI.COMM_NULL`` where MPI gives it.  ``Idup``/``Idup_with_info`` return plain
  mpi4py communicators: a wrapper is built collectively, which a non-blocking call cannot
  wait for.

Why a subclass and not a proxy: a proxy (``__getattr__``) fails ``isinstance`` checks, and
adds a Python frame to every call passed through.  The cost of the subclass: mpi4py's
``Dup``-like methods make ``type(self)()`` objects, so every one of them is overridden
here, and ``rank``/``size`` (read-only properties of ``MPI.Comm``) are shadowed by plain
attributes set once (the hot paths read them at every call).

A wrapper's class may be a *variant* of the class it was made as (:func:`variant`, the same
name; ``isinstance`` holds), in two cases.  A wrapper of a user's own subclass of
``MPI.Intracomm`` gets a ``__getattr__`` that serves that subclass's attributes (its
``base``'s); no other class has one, because a class with ``__getattr__`` takes CPython's
slow attribute look-up on every attribute (a call of a C method costs tens of ns more:
``benchmarks/mpi/bench_plain_methods.py``).  A wrapper that gives every call
to MPI (:func:`hetcoll.runtime.rooted.bind_mpi`) gets mpi4py's own methods (the C-level
``MPI.Intracomm`` functions) as its class's, so ``hc.Allgather(...)`` is looked up and
called as ``comm.Allgather(...)`` is, on the same handle; where its tuning file forces
MPICH's algorithms, ``Allreduce`` and ``Allgather`` are the one-step methods of
:mod:`hetcoll.runtime.forced`, its class's too.  :func:`planned_class` is the
class that plans (a call with ``algo=``: ``planned_class(hc).Bcast(hc, ..., algo=...)``).
The variant is chosen in ``__new__``, before any attribute is set (:meth:`SubComms.
_mpi_from_start`), and :func:`settle` changes it afterwards only where the guess was wrong:
CPython 3.11 looks methods up slowly on an instance whose class changed once it had
attributes (tens of ns a call).
"""

from __future__ import annotations

import functools
from typing import Any

from mpi4py import MPI

from ..errors import HetcollError

__all__ = ["SubComms", "planned_class", "settle", "variant"]


def planned_class(comm: Any) -> type:
    """The class ``comm`` was made as, whose methods plan (``type(comm)`` but for a
    variant: :func:`variant`)."""
    return getattr(type(comm), "_planned_class", type(comm))


def forwards(comm: Any) -> bool:
    """Whether a wrapper of ``comm`` serves attributes of its class beyond mpi4py's (a
    user's subclass of an mpi4py communicator class)."""
    return type(comm).__module__ != MPI.__name__


def _forward(self: Any, name: str) -> Any:
    # mpi4py's own methods are inherited: this serves a user's subclass's
    if name.startswith("__") or "base" not in self.__dict__:
        raise AttributeError(name)
    return getattr(self.__dict__["base"], name)


def variant(
    cls: type, *, forward: bool = False, mpi: tuple[str, ...] = (), forced: tuple[str, ...] = ()
) -> type:
    """``cls`` (a wrapper's class as made, :func:`planned_class`) with a ``__getattr__``
    that serves its ``base``'s attributes where ``forward``, mpi4py's own
    ``MPI.Intracomm`` methods ``mpi`` and the one-step methods ``forced``
    (``Allreduce``, ``Allgather``: :mod:`hetcoll.runtime.forced`) as class attributes: a
    subclass of the same name and layout (an instance's ``__class__`` may be set to it),
    made once per arguments.  ``cls`` itself when there is nothing to add."""
    if not forward and not mpi and not forced:
        return cls
    return _made_variant(cls, forward, tuple(mpi), tuple(forced))


@functools.cache
def _made_variant(cls: type, forward: bool, mpi: tuple[str, ...], forced: tuple[str, ...]) -> type:
    """The one variant class per arguments (cached: every wrapper of the same arguments
    must share its class, and a class is made once)."""
    from .forced import METHODS

    space: dict[str, Any] = {name: getattr(MPI.Intracomm, name) for name in mpi}
    space.update({name: METHODS[name] for name in forced})
    if forward:
        space["__getattr__"] = _forward
    space.update(
        _planned_class=cls,
        __module__=cls.__module__,
        __qualname__=cls.__qualname__,
        __doc__=cls.__doc__,
    )
    return type(cls.__name__, (cls,), space)


def settle(comm: Any, mpi: tuple[str, ...], forced: tuple[str, ...] = ()) -> None:
    """Give ``comm`` the variant of its class with mpi4py's own methods ``mpi`` and the
    one-step methods ``forced`` (none: its class as made, but for the forwarding), unless
    it already has it: ``__class__`` is set only when it changes (setting it, even to the
    same class, makes CPython keep the instance's attributes in a dict it looks methods up
    in slowly, tens of ns a call)."""
    made = variant(planned_class(comm), forward=forwards(comm.base), mpi=mpi, forced=forced)
    if type(comm) is not made:
        comm.__class__ = made


class SubComms(MPI.Intracomm):
    """An ``MPI.Intracomm`` on the user's handle whose derived communicators are wrappers
    like it (see the module docstring)."""

    # plain class attributes shadow MPI.Comm's read-only properties: the constructor sets
    # them once on the instance (the same values)
    rank = 0
    size = 1

    def __new__(cls, comm: Any = None, *args: Any, **kwargs: Any):
        if comm is not None and not isinstance(comm, MPI.Intracomm):
            raise HetcollError(
                f"comm: expected an mpi4py intracommunicator (MPI.Intracomm), got "
                f"{type(comm).__name__}"
            )
        # the class is chosen before any attribute is set: a later ``__class__`` change
        # turns the instance dict into one CPython looks methods up in slowly
        forward = comm is not None and forwards(comm)
        mpi, forced = cls._mpi_from_start(args, kwargs)
        made = variant(cls, forward=forward, mpi=mpi, forced=forced)
        self = super().__new__(made, comm)
        # how it was made: a derived communicator is made the same way (_derived)
        self._made_with = (args, kwargs)
        return self

    @classmethod
    def _mpi_from_start(cls, args: tuple, kwargs: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The methods a wrapper made with these arguments is likely to give to MPI, and
        the one-step methods it is likely to force MPICH's algorithms with (its class is
        made with them from the start: :func:`settle`); none by default."""
        return (), ()

    def _plain(self) -> MPI.Intracomm:
        """The user's communicator as a plain ``MPI.Intracomm`` (the same handle)."""
        return MPI.Intracomm(self)

    def _derived(self, new: MPI.Intracomm) -> Any:
        """A wrapper like this one on ``new`` (made from this communicator, collectively),
        its ranks on the nodes their ranks have here; ``new`` itself when it is null."""
        if new == MPI.COMM_NULL:
            return new
        try:
            mine, theirs = self._plain().Get_group(), new.Get_group()
            try:
                ranks = MPI.Group.Translate_ranks(theirs, list(range(new.Get_size())), mine)
            finally:
                mine.Free()
                theirs.Free()
            nodes = [self.nodes[r] for r in ranks]
            args, kwargs = self._made_with
            kwargs = {**kwargs, "nodes": nodes}
            if "platform" in kwargs:
                kwargs["platform"] = self.platform
            else:
                args = (self.platform, *args[1:])
            return planned_class(self)(new, *args, **kwargs)
        except BaseException:
            new.Free()
            raise

    def Dup(self, info: MPI.Info | None = None) -> Any:
        """A wrapper like this one on ``comm.Dup(info)``."""
        return self._derived(self._plain().Dup(info))

    def Dup_with_info(self, info: MPI.Info) -> Any:
        """A wrapper like this one on ``comm.Dup_with_info(info)``."""
        return self._derived(self._plain().Dup_with_info(info))

    def Clone(self) -> Any:
        """A wrapper like this one on ``comm.Clone()``."""
        return self._derived(self._plain().Clone())

    def Split(self, color: int = 0, key: int = 0) -> Any:
        """A wrapper like this one on ``comm.Split(color, key)`` (``MPI.COMM_NULL`` for
        ``MPI.UNDEFINED``)."""
        return self._derived(self._plain().Split(color, key))

    def Split_type(self, split_type: int, key: int = 0, info: MPI.Info = MPI.INFO_NULL) -> Any:
        """A wrapper like this one on ``comm.Split_type(split_type, key, info)``."""
        return self._derived(self._plain().Split_type(split_type, key, info))

    def Create(self, group: MPI.Group) -> Any:
        """A wrapper like this one on ``comm.Create(group)`` (``MPI.COMM_NULL`` outside
        ``group``)."""
        return self._derived(self._plain().Create(group))

    def Create_group(self, group: MPI.Group, tag: int = 0) -> Any:
        """A wrapper like this one on ``comm.Create_group(group, tag)`` (called by the
        members of ``group`` only, as in MPI)."""
        return self._derived(self._plain().Create_group(group, tag))

    def Idup(self, info: MPI.Info | None = None) -> tuple[MPI.Intracomm, MPI.Request]:
        """mpi4py's ``Idup`` on the user's communicator: a plain communicator (a wrapper is
        made collectively, which a non-blocking call cannot wait for)."""
        return self._plain().Idup(info)

    def Idup_with_info(self, info: MPI.Info) -> tuple[MPI.Intracomm, MPI.Request]:
        """mpi4py's ``Idup_with_info``: a plain communicator (see :meth:`Idup`)."""
        return self._plain().Idup_with_info(info)
