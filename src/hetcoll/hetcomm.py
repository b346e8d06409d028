"""``HetComm``: hetcoll's collectives on an mpi4py communicator, planned by hetcoll's planners.

>>> from mpi4py import MPI                                     # doctest: +SKIP
>>> with HetComm(MPI.COMM_WORLD, "testbed16", "fnf") as hc:  # doctest: +SKIP
...     data = hc.bcast(data, root=0)
...     hc.Bcast(array, root=3, segment_size=64 * 1024)
...     hc.Allreduce(None, array, op=MPI.MAX)   # IN_PLACE, over a hypercube (cube_algo)
...     hc.Reduce(sendbuf, recvbuf, op=MPI.SUM, root=0)  # rooted_algo's tree
...     hc.Alltoall(sendbuf, recvbuf)           # not planned: MPI's own, unchanged
...     hc.barrier()

The engine (:mod:`hetcoll.runtime`) runs schedules and never plans; this module is the layer
above it that plans them: :class:`Planning` turns each call into a schedule with the planner
``algo`` (trees: ``Bcast``, multicasts), ``cube_algo`` (Figueira & Reddi's hypercubes:
``Allreduce``/``allreduce``, ``Allgather``/``allgather``, ``barrier``) or ``rooted_algo``
(``Reduce``, ``Gather``, ``Scatter``, their object forms, ``Gatherv``, ``Scatterv``,
``Reduce_scatter(_block)``; ``Allgatherv`` on a hypercube), and :class:`HetComm`
is the engine's communicator with it plugged in, plus :meth:`HetComm.predict` (the
simulator's time of a call).  Every rank plans the same schedule from the same platform
(planners are deterministic); a digest of each call travels with its data, so ranks that
call different collectives raise :class:`~hetcoll.errors.MismatchError` instead of
exchanging garbage.  A ``HetComm`` is an ``MPI.Intracomm`` on the user's own handle
(:mod:`hetcoll.runtime.subcomms`): what hetcoll does not plan (``Alltoall``, ``Scan``,
``Get_rank``, ...) is mpi4py's own method on it, and
``Split``/``Dup``/``Create`` give ``HetComm``s (docs/runtime.md lists both).  ``Ibcast``,
``Iallreduce``, ``Iallgather`` and ``Ibarrier`` run the planned schedules on a progress
thread (:mod:`hetcoll.runtime.nonblocking`), and so do the starts of ``Bcast_init``,
``Allreduce_init``, ... (:mod:`hetcoll.runtime.persistent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .choice import DEFAULT_MARGIN, Choice, charged_message_cost
from .errors import HetcollError, PlannerError
from .platform import Platform
from .runtime.forced import bind_forced
from .runtime.mpich_selection import started_with
from .runtime.persistent import Persistent
from .runtime.rooted import MPICH, PASSED, add_passthroughs, bind_mpi
from .runtime.subcomms import settle
from .runtime.vectors import VectorCollectives
from .schedule import Schedule

__all__ = ["HetComm", "Planning"]

#: names that choose per call rather than name one planner: ``auto`` (the model, a tuning
#: file) and ``mpi`` (MPI's own collective, always)
_CHOICES = ("auto", "mpi")


class Planning:
    """The planner :class:`HetComm` gives the engine: hetcoll's registry, by name.

    ``algo`` plans rooted collectives, ``cube_algo`` hypercube ones (default: ``algo`` when
    it names a hypercube planner, else ``eff_cube``); ``options`` go to the planners (a
    hypercube planner gets those it accepts).
    """

    def __init__(
        self,
        algo: str,
        cube_algo: str | None,
        model: Any,
        options: dict,
        margin: float = DEFAULT_MARGIN,
        tuning: Any = None,
        rooted_algo: str | None = None,
    ) -> None:
        self.algo = algo
        self.cube_algo = cube_algo
        self.rooted_algo = rooted_algo
        self.model = model
        self.options = {} if options is None else options  # checked in check()
        self.margin = margin
        self.tuning = tuning  # loaded in check()
        #: seconds charged per message of a plan's busiest rank (of a forest plan: on its
        #: critical chain; choice.py's module doc);
        #: HetComm sets it from its time scale once the ranks agree on it
        self.message_cost = 0.0
        #: whether a tuning file's MPICH algorithms can be forced (check(); every rank's)
        self.mpich_forced = False
        self._judged: set[int] = set()  # user's segment sizes the model judges (knobs.py)
        self._warned: set[tuple[int, int]] = set()  # (segment size, bytes) judged already

    def settings(self) -> dict[str, Any]:
        return {
            "algo": self.algo,
            "cube_algo": self.cube_algo,
            "options": self.options,
            "margin": self.margin,
            "tuning": None if self.tuning is None else self.tuning.to_dict(),
            "rooted_algo": self.rooted_algo,
            "mpich_forced": self.mpich_forced,
        }

    def check(self, platform: Platform, nodes: Sequence[str]) -> None:
        from .planners import get_planner
        from .planners._registry import warn_unused_options
        from .tuning import load_tuning
        from .units import check_quantity

        if self.algo != "mpi":
            get_planner(self.algo)
        if not isinstance(self.options, dict):
            raise HetcollError(f"options: must be a dict of planner options, got {self.options!r}")
        self.margin = check_quantity(self.margin, "factor", "margin")
        self.cube_algo = cube_planner(self.cube_algo, default=self.algo)
        if self.tuning is not None:
            self.tuning = load_tuning(self.tuning)
            if self.tuning.ranks != len(nodes):
                raise HetcollError(
                    f"tuning: measured on {self.tuning.ranks} ranks, but this communicator has "
                    f"{len(nodes)}; run hetcoll tune on {len(nodes)} ranks"
                )
        self.rooted_algo = rooted_planner(self.rooted_algo, default=self.algo)
        self.mpich_forced = _forces_mpich(self.tuning)
        named = [a for a in (self.algo, self.cube_algo, self.rooted_algo) if a not in _CHOICES]
        # message_cost is the choice's own (HetComm._message_cost), whoever plans
        mine = {k: v for k, v in self.options.items() if k != "message_cost"}
        warn_unused_options(mine, named or ["fnf"], who="planner of this HetComm")

    def passes_every_call(self, emulated: bool, one_host: bool) -> bool:
        """Whether every collective call that names no plan goes to MPI's own, whatever
        its size: ``auto`` for every family (``algo``, ``cube_algo``, ``rooted_algo``),
        no tuning file, natively with every rank on one host (rule 3 of
        :mod:`hetcoll.choice`).  (``"mpi"`` is left out: a wrapper made with it is how a
        program names its plans per call, ``hetcoll tune``'s.)"""
        families = (self.algo, self.cube_algo, self.rooted_algo)
        return one_host and not emulated and self.tuning is None and families == ("auto",) * 3

    def forced_methods(self, emulated: bool, one_host: bool) -> tuple[str, ...] | None:
        """The methods a wrapper that gives every call to MPI keeps as its class's, to
        force MPICH's algorithms a tuning file names (``Allreduce``, ``Allgather``; the
        others are bound as :meth:`passes_every_call` binds them), or None when some call
        may be planned: a tuning file whose rules are all ``"mpi"`` gives every call to
        MPI, as no file does natively on one host."""
        if self.passes_every_call(emulated, one_host):
            return ()
        families = (self.algo, self.cube_algo, self.rooted_algo)
        if not one_host or emulated or families != ("auto",) * 3:
            return None
        return _forced_names(self.tuning, self.mpich_forced)

    def choose(self, platform: Platform, call: dict[str, Any]):
        """What runs for a call (:func:`hetcoll.choice.choose` with the wrapper's ``algo``):
        ``collective``, ``nbytes``, ``nodes``, ``root``, ``segment_size``, ``op``, ``count``,
        ``builtin``, ``commutative``; a call's own ``algo`` (not None) runs as it is named
        (``"auto"``: hetcoll's best plan, ``"mpi"``: MPI's own)."""
        choice = self._choose(platform, call)
        user = call.get("segment_size")
        # the model judges a user's segment size (not a tuning file's) where auto trusts
        # the model: under emulation or across hosts (tree(), knobs.py)
        trusted = call.get("emulate", False) or not call.get("one_host", False)
        mine = user is not None and choice.segment_size == user and choice.source != "tuning"
        if mine and trusted and call["collective"] == "bcast":
            self._judged.add(user)
        return choice

    def _choose(self, platform: Platform, call: dict[str, Any]):
        if call["algo"] is not None:  # a call's own algo runs as named ("auto": the plan)
            from .choice import Choice

            return Choice(call["algo"], call.get("segment_size"))
        found = self._choose_auto(platform, call)
        if found.mpich is not None and not self._forcible(call["collective"], found.mpich):
            found = replace(found, mpich=None)  # MPICH's own selection runs
        return found

    def _forcible(self, collective: str, name: str) -> bool:
        """Whether the MPICH algorithm ``name`` of ``collective`` can be forced here."""
        from .runtime.mpich_cvars import algorithms

        found = algorithms() if self.mpich_forced else None
        return found is not None and name in found.names(collective)

    def _choose_auto(self, platform: Platform, call: dict[str, Any]):
        from .choice import choose

        tree = call["collective"] == "bcast"
        algo = self.algo if tree else self.cube_algo
        if call["collective"] in ("reduce", "gather", "scatter"):
            algo = self.rooted_algo
        return choose(
            platform,
            call["collective"],
            call["nbytes"],
            call["nodes"],
            algo=algo,
            root=call.get("root"),
            segment_size=call.get("segment_size"),
            op=call.get("op"),
            count=call.get("count"),
            builtin=call.get("builtin", True),
            commutative=call.get("commutative", True),
            model=self.model,
            margin=self.margin,
            tuning=self.tuning,
            emulated=call.get("emulate", False),
            one_host=call.get("one_host", False),
            message_cost=self.message_cost,
        )

    def plans_trees(self, algo: str) -> bool:
        """Whether ``algo`` is a registered planner of trees (not of hypercubes): an
        ``Allreduce`` or ``Allgather`` with it runs on its reduce (gather) and broadcast
        trees."""
        from .planners import REGISTRY

        info = REGISTRY.get(algo)
        return info is not None and info.kind not in ("hypercube", *PER_ROOT_KINDS)

    def plans_per_root(self, algo: str) -> bool:
        """Whether ``algo`` is a registered planner of per-root schedules (``forest``):
        ``Allgather``, ``Allreduce`` and ``Reduce_scatter(_block)`` with it run on every
        member's trees (:mod:`hetcoll.runtime.perroot`)."""
        return per_root_planner(algo)

    def per_root(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        """The per-root schedule of an ``allgather``, ``reduce_scatter`` or ``allreduce``:
        ``nbytes`` (each member's block, an allreduce's vector), ``sizes`` (node -> block
        bytes, or None), ``align`` (a reduction's element extent), ``algo``, ``members``
        (None or the platform's nodes in any order: the per-root planners plan on every
        node)."""
        from math import lcm

        from .planners import get_planner, plan

        algo = call["algo"]
        if call["members"] is not None and set(call["members"]) != set(platform.ids):
            raise PlannerError(
                f"{algo} plans on every node of the platform; this communicator runs on "
                f"{len(call['members'])} of its {len(platform)} nodes (give HetComm the "
                "members' own platform)"
            )
        options = self._accepted(algo)
        if call["align"] > 1 and "align" in get_planner(algo).options:
            options["align"] = lcm(int(options.get("align", 1)), call["align"])
        return plan(
            platform,
            None,
            None,
            method=algo,
            model=self.model,
            nbytes=call["nbytes"],
            collective=call["collective"],
            sizes=call["sizes"],
            options=options,
        )

    def native(self, platform: Platform, call: dict[str, Any]):
        """MPI's own algorithm for a call, as a program (:func:`hetcoll.mpich.native`)."""
        from .mpich import native

        nodes = list(call["nodes"])
        root = call.get("root")
        return native(
            call["collective"],
            nodes,
            call["nbytes"],
            root=nodes.index(root) if root is not None else 0,
            count=call.get("count"),
            builtin=call.get("builtin", True),
            op=call.get("op") or "sum",
        )

    def _accepted(self, algo: str) -> dict[str, Any]:
        """The options planner ``algo`` takes (the others were warned about in check())."""
        from .planners import get_planner

        accepted = set(get_planner(algo).options)
        return {k: v for k, v in self.options.items() if k in accepted}

    def _charged(self, algo: str) -> dict[str, Any]:
        """:meth:`_accepted`, with the cost per message charged for ``auto`` (as
        :meth:`choose` weighs it)."""
        options = self._accepted(algo)
        if algo == "auto" and self.message_cost:
            options.setdefault("message_cost", self.message_cost)
        return options

    def tree(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        from .planners import plan, plan_multiple

        algo = call["algo"] or self.algo
        if algo == "mpi":  # a call MPI cannot run (a multicast): hetcoll's choice
            algo = "auto"
        if algo == "auto" and call["groups"] is not None:
            algo = "fnf_joint"  # several multicasts share ports: plan them together
        common = {
            "method": algo,
            "model": self.model,
            "nbytes": call["nbytes"],
            "segment_size": call["segment_size"],
            "options": self._charged(algo),
        }
        if call["groups"] is not None:
            return plan_multiple(platform, call["groups"], **common)
        sched = plan(platform, call["root"], call["members"], **common)
        if call["segment_size"] in self._judged:
            self._judge_segments(platform, call, sched, {**common, "segment_size": None})
        return sched

    def _judge_segments(self, platform, call, sched, whole: dict[str, Any]) -> None:
        """Warn when the model predicts the user's segment size slower than the same
        planner without segments (:func:`hetcoll.knobs.segment_verdict`), once per size."""
        from . import knobs
        from .planners import plan
        from .simulator import simulate

        key = (call["segment_size"], call["nbytes"])
        if key in self._warned:
            return
        self._warned.add(key)
        t_seg = simulate(platform, sched, self.model).makespan
        other = plan(platform, call["root"], call["members"], **whole)
        t_whole = simulate(platform, other, self.model).makespan
        message = knobs.segment_verdict(
            "bcast",
            call["nbytes"],
            whole["method"],
            call["segment_size"],
            t_seg,
            t_whole,
            self.margin,
        )
        if message:
            knobs.warn(message)

    def cube(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        from .planners import plan_hypercube

        algo = self.cube_algo if call["algo"] is None else cube_planner(call["algo"])
        if per_root_planner(algo):  # what a per-root planner does not plan: a barrier,
            algo = "eff_cube"  # blocks of different sizes (Allgatherv, objects)
        if algo in _CHOICES:  # the best hypercube plan (MPI's own runs elsewhere)
            from .choice import best_cube

            algo = best_cube(
                platform,
                call["collective"],
                call["nbytes"],
                call["members"],
                call["op"],
                self.model,
                self.message_cost,
            )
        return plan_hypercube(
            platform,
            call["collective"],
            call["members"],
            method=algo,
            model=self.model,
            nbytes=call["nbytes"],
            op=call["op"],
            options=self._accepted(algo),
        )

    def rooted(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        """A rooted collective (``reduce``, ``gather``, ``scatter``): ``root``, ``members``,
        ``nbytes``, ``sizes`` (node -> bytes, or None), ``algo``."""
        from .planners import plan

        if call["algo"] == MPICH:  # MPI's own binomial tree, run by the engine (emulated)
            from .mpich_rooted import rooted_native

            nodes = list(call["members"] or platform.ids)
            return rooted_native(
                call["collective"],
                nodes,
                call["nbytes"],
                root=nodes.index(call["root"]),
                algorithm="binomial",
            )
        algo = self.rooted_algo if call["algo"] is None else rooted_planner(call["algo"])
        return plan(
            platform,
            call["root"],
            call["members"],
            method=algo,
            model=self.model,
            nbytes=call["nbytes"],
            collective=call["collective"],
            sizes=call["sizes"],
            options=self._charged(algo),
        )


def _forced_from_start(source: Any) -> tuple[str, ...] | None:
    """The methods a wrapper given the tuning file ``source`` natively on one host forces
    MPICH's algorithms with (:meth:`Planning.forced_methods`), or None when some call may be
    planned (a rule names a planner) or the file cannot be read (the constructor says why)."""
    from .tuning import load_tuning

    try:
        tuning = load_tuning(source)
    except HetcollError:
        return None
    return _forced_names(tuning, _forces_mpich(tuning))


def _forced_names(tuning: Any, can: bool) -> tuple[str, ...] | None:
    """The methods ``tuning`` forces MPICH's algorithms with (none unless this process
    ``can``), or None when a rule names a planner."""
    rules = tuning.rules
    if any(r.algorithm != "mpi" for rs in rules.values() for r in rs):
        return None
    forced = {c for c, rs in rules.items() if any(r.mpich for r in rs)} if can else set()
    return tuple(
        m for c, m in (("allreduce", "Allreduce"), ("allgather", "Allgather")) if c in forced
    )


def _forces_mpich(tuning: Any) -> bool:
    """Whether a tuning file's rules name MPICH algorithms and this process can force them
    (:func:`hetcoll.runtime.mpich_cvars.algorithms`): part of the settings every rank
    agrees on, so ranks that would run different algorithms raise at construction."""
    named = tuning is not None and any(r.mpich for rs in tuning.rules.values() for r in rs)
    if not named:
        return False
    from .runtime.mpich_cvars import algorithms

    return algorithms() is not None


def rooted_planner(name: str | None, default: str | None = None) -> str:
    """The planner of the rooted collectives: ``name``, else ``default`` when it is
    ``auto`` (per call, the best plan or MPI's own by the model: ``Reduce``, ``Gather``,
    ``Scatter``; the others MPI's) or ``mpi``, or one of the rooted family's own planners
    (``rooted_ls``, ``rooted_exact``), else ``rooted_ls``.  :class:`PlannerError` when
    ``name`` plans no reduce."""
    from .planners import REGISTRY, get_planner

    if name is None:
        if default in _CHOICES:
            return default
        info = REGISTRY.get(default) if default is not None else None
        return default if info is not None and "reduce" in info.collectives else "rooted_ls"
    if name in _CHOICES:
        return name
    if not get_planner(name).serves("reduce"):
        raise PlannerError(f"rooted_algo: {name!r} plans no reduce, gather or scatter")
    return name


#: registry kinds of the planners of per-root schedules (:mod:`hetcoll.perroot`)
PER_ROOT_KINDS = ("forest",)


def per_root_planner(name: str | None) -> bool:
    """Whether ``name`` is a registered planner of per-root schedules."""
    from .planners import REGISTRY

    info = REGISTRY.get(name) if name is not None else None
    return info is not None and info.kind in PER_ROOT_KINDS


def cube_planner(name: str | None, default: str | None = None) -> str:
    """The planner of ``Allreduce``, ``Allgather`` and ``Barrier``: ``name``, else
    ``default`` when it names a hypercube or per-root planner (``forest``: also the
    planner of ``Reduce_scatter(_block)``; a barrier and blocks of different sizes then
    run ``eff_cube``), else ``eff_cube``.  :class:`PlannerError` when ``name`` is neither."""
    from .planners import REGISTRY, get_planner, hypercube_planners

    if name is None:
        if default in _CHOICES:
            return default
        info = REGISTRY.get(default) if default is not None else None
        fits = info is not None and (info.kind == "hypercube" or per_root_planner(default))
        return default if fits else "eff_cube"
    if name in _CHOICES:
        return name
    if get_planner(name).kind != "hypercube" and not per_root_planner(name):
        raise PlannerError(
            f"cube_algo: {name!r} is not a hypercube or per-root planner; choose from: "
            + ", ".join([*hypercube_planners(), *_per_root_planners()])
        )
    return name


def _per_root_planners() -> list[str]:
    from .planners import REGISTRY

    return sorted(n for n, info in REGISTRY.items() if info.kind in PER_ROOT_KINDS)


@add_passthroughs
class HetComm(VectorCollectives, Persistent):
    """An mpi4py communicator whose collectives run hetcoll schedules.

    It is an ``MPI.Intracomm`` (``isinstance`` holds) on the user's handle: a subclass made
    with ``MPI.Intracomm.__new__(cls, comm)``, which mpi4py 4 allows, rather than a proxy,
    so libraries that check their communicator's type accept it and calls hetcoll does not
    plan cost no Python layer.  ``Dup``, ``Clone``, ``Split``, ``Split_type``, ``Create``
    and ``Create_group`` return a ``HetComm`` with the same settings on the new
    communicator, its ranks on their nodes here (``Idup``: a plain communicator).

    Parameters
    ----------
    comm : MPI.Comm
        The user's communicator; hetcoll works on a private ``comm.Idup()`` (freed by
        :meth:`close`, or at the end of a ``with`` block).  What HetComm does not implement
        goes to ``comm`` unchanged.
    platform : Platform or str
        The platform (or a file / built-in name).  By default rank ``r`` is platform node
        ``r``; ``nodes`` gives another mapping (one node id per rank), possibly of a part
        of the platform: the collectives are then planned for those nodes only.
    algo : str
        ``"auto"`` (default): per call, MPI's own collective unless hetcoll's best plan is
        predicted faster by more than ``margin``, or what the ``tuning`` file says
        (:mod:`hetcoll.choice`); a call MPI keeps goes to ``comm`` unchanged (under
        emulation: MPICH's algorithm for it, run through the engine, :mod:`hetcoll.mpich`).
        ``"mpi"``: always MPI's own.  Otherwise the planner of the rooted collectives
        (``Bcast``, multicasts; ``hetcoll planners``).  Where every call goes to MPI
        whatever its size (``auto`` throughout, no ``tuning`` or one whose rules are all
        ``"mpi"``, natively on one host), the wrapper's collectives are mpi4py's own
        methods, its class's (a variant of ``HetComm``, :mod:`hetcoll.runtime.subcomms`;
        but ``Allreduce`` and ``Allgather`` where the
        tuning file forces MPICH algorithms for them: functions made once from its rules
        that store the forcing values around mpi4py's method,
        :mod:`hetcoll.runtime.forced`): a call costs what it costs without hetcoll, one
        that names its plan goes through the class's method (``HetComm.Bcast(hc, buf,
        root, algo="fnf")``), and a bound call leaves ``last_call`` as it was
        (:func:`hetcoll.runtime.rooted.bind_mpi`); ``"mpi"`` keeps the wrapper's methods.
    cube_algo : str, optional
        The hypercube planner of ``Allreduce``/``allreduce``, ``Allgather``/``allgather``
        and ``Barrier``/``barrier`` (``blind``, ``dim2_cube``, ``tsts_cube``, ``eff_cube``,
        ``eff_cube_ls``, or ``auto``/``mpi`` as for ``algo``), or the per-root planner
        ``forest``: ``Allreduce``, ``Allgather`` and ``Reduce_scatter(_block)`` then run
        every rank's block over trees of its own (commutative operators; a barrier,
        ``Allgatherv`` and the object forms run ``eff_cube``).  Default: ``algo`` when it
        names a hypercube or per-root planner or is ``auto``/``mpi``, else ``eff_cube``.
    margin : float
        With ``auto``: the predicted speed-up over MPI's own a plan needs, beyond 1, to
        be run (default :data:`hetcoll.choice.DEFAULT_MARGIN`, the model's measured error).
    tuning : str or dict, optional
        A tuning file written by ``hetcoll tune`` (:mod:`hetcoll.tuning`): with ``auto``,
        its measured choice runs for the collectives and sizes it covers.
    rooted_algo : str, optional
        The planner of ``Reduce``/``reduce``, ``Gather``/``gather``,
        ``Scatter``/``scatter``, ``Gatherv``, ``Scatterv`` and ``Reduce_scatter(_block)``
        (docs/runtime.md, Rooted collectives), ``mpi``, or ``auto``: per call, for
        ``Reduce``, ``Gather`` and ``Scatter``, the best plan where predicted faster than
        MPICH's binomial tree by ``margin`` (:mod:`hetcoll.mpich_rooted`), MPI's own
        otherwise and for the other calls.  Default: ``algo`` when it is ``auto``,
        ``mpi`` or a planner of the rooted family (``rooted_ls``, ``rooted_exact``, a
        broadcast tree planner run backwards), else ``rooted_ls``.
    emulate : bool
        Impose the platform's costs on this machine (:mod:`hetcoll.runtime.emulation`).
    model : optional
        Cost model to plan and emulate with (default: the platform's).
    segment_size : int, optional
        Default segment size of :meth:`Bcast` (pipelining); None: one message.
    timeout : float
        Seconds each collective (and the construction) may take.  On expiry the error names
        the rank, the op and what it waited for; with ``on_timeout="abort"`` (default) the
        message goes to stderr and the job is aborted (nothing hangs), with ``"raise"``
        :class:`~hetcoll.errors.CollectiveTimeoutError` is raised and the wrapper is
        unusable: end the job with :meth:`abort` (``MPI_Finalize`` would wait for the stuck
        ranks forever).
    check : {"data", "always", "never"}
        How ranks that call different collectives are caught: ``"data"`` (default; also
        spelled ``"first"``) sends a digest of each call with its data (no extra message
        round); ``"always"`` also compares every rank's digest with each call (a
        dissemination round of tiny messages, ``log2 n`` latencies overlapped with the data:
        every rank raises in the call itself, and no rank leaves a call before every rank
        has entered it); ``"never"`` trusts the caller.
    options : mapping, optional
        Planner options.
    time_scale : float
        Emulation only: multiply every modelled cost.
    clock : {"auto", "shared", "sync"}
        Emulation only: how ranks agree on time.  ``auto``: the shared monotonic clock on one
        host, offsets estimated by ping-pong across hosts (``sync`` forces the estimate).
    spin, poll : float, optional
        Without emulation, how an idle rank waits: it polls (yielding the CPU) for ``spin``
        seconds, then sleeps ``poll`` seconds between looks (a pipelined call, chunks over
        16 KiB: by default yields while each rank on the host has a core and the kernel
        says nobody else wants it, else zero sleeps; polls for ``spin`` when it is given).
        Defaults suit an oversubscribed host (``HETCOLL_SPIN``/``HETCOLL_POLL`` override
        them); on dedicated cores or a host with no other busy process a long ``spin`` is
        fastest (``spin=1e-3``: a chain of 256 KiB segments in 0.5-0.8 of the time there,
        slower on a busy host: docs/runtime.md).
    """

    def __init__(
        self,
        comm,
        platform: Platform | str,
        algo: str = "auto",
        *,
        cube_algo: str | None = None,
        rooted_algo: str | None = None,
        model: Any = None,
        options: dict[str, Any] | None = None,
        margin: float = DEFAULT_MARGIN,
        tuning: Any = None,
        **engine: Any,
    ) -> None:
        self.planning = Planning(algo, cube_algo, model, options, margin, tuning, rooted_algo)
        super().__init__(comm, platform, self.planning, model=model, **engine)
        self.planning.message_cost = self._message_cost()
        self._check_knobs()
        kept = self.planning.forced_methods(self.emulate, self.one_host)
        if kept and self.size > 1 and started_with(self.planning.tuning, self.comm):
            kept = ()  # MPICH's selection file of this tuning forces them: no Python before
        if kept is not None:  # MPI's own methods, no Python call before them
            # but those that force a tuning file's MPICH algorithm: the one-step methods
            # (a look-up and the stores), their tables set before the class is
            forced = kept if self.size > 1 else ()
            if forced:
                bind_forced(self, forced)
            bind_mpi(self, keep=kept, forced=forced)
            self.last_choice = Choice("mpi", source="one host")  # every bound call's
        else:  # made with mpi4py's methods (_mpi_from_start), but some call may be planned
            settle(self, ())

    @classmethod
    def _mpi_from_start(cls, args: tuple, kwargs: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """mpi4py's own methods (:data:`~hetcoll.runtime.rooted.PASSED`) for a wrapper made
        with ``auto`` throughout and no emulation, no tuning file or one whose rules are all
        ``"mpi"``: every call goes to MPI when every rank is on one host
        (:meth:`Planning.forced_methods`), known only once the ranks have met; but
        ``Allreduce`` and ``Allgather`` where the file forces MPICH algorithms for them and
        this process can (the one-step methods, :mod:`hetcoll.runtime.forced`).
        ``__init__`` gives the class's own methods back where the guess was wrong
        (:func:`~hetcoll.runtime.subcomms.settle`)."""
        algo = kwargs.get("algo", args[1] if len(args) > 1 else "auto")
        default = (
            algo == "auto"
            and kwargs.get("cube_algo") in (None, "auto")
            and kwargs.get("rooted_algo") in (None, "auto")
            and not kwargs.get("emulate", False)
        )
        if not default or kwargs.get("tuning") is None:
            return (PASSED if default else ()), ()
        forced = _forced_from_start(kwargs["tuning"])
        if forced is None:
            return (), ()
        return tuple(name for name in PASSED if name not in forced), forced

    def _message_cost(self) -> float:
        """Seconds charged per message of a plan's busiest rank (of a forest plan: on its
        critical chain; :mod:`hetcoll.choice`):
        the ``message_cost`` planner option, else the engine's: what the tuning file
        measured on these ranks, or under emulation the constant, at the emulation's time
        scale (:func:`~hetcoll.choice.charged_message_cost`); natively without a measured
        cost none: a probed platform's costs hold the engine's already (the probe's round
        trips run through it).  The same on every rank: one file, one time scale."""
        from .units import check_quantity

        given = self.planning.options.get("message_cost")
        if given is not None:
            return check_quantity(given, "time", "message_cost")
        return charged_message_cost(
            self.planning.tuning, emulated=self.emulate, time_scale=self.time_scale
        )

    def _check_knobs(self) -> None:
        """Warn about the user's ``spin`` or ``segment_size`` where a tuning file measured
        it slower than the default, and about ``spin`` on an oversubscribed host
        (:mod:`hetcoll.knobs`; a broadcast's segments are judged per call by the model)."""
        from . import knobs

        said = []
        tuning = self.planning.tuning
        if self.spin_given and not self.emulate:
            said.append(knobs.spin_verdict(self.spin, self.ranks_on_host, knobs.usable_cores()))
            if tuning is not None:
                said += knobs.measured_slower(tuning.measurements, spin=self.spin)
        if self.segment_size is not None and tuning is not None:
            said += knobs.measured_slower(tuning.measurements, segment_size=self.segment_size)
        for message in said:
            if message:
                knobs.warn(message)

    @property
    def algo(self) -> str:
        return self.planning.algo

    @property
    def cube_algo(self) -> str:
        return self.planning.cube_algo

    @property
    def options(self) -> dict[str, Any]:
        return self.planning.options

    def __repr__(self) -> str:
        return (
            f"HetComm(rank={self.rank}/{self.size}, node={self.node!r}, algo={self.algo!r}, "
            f"cube_algo={self.cube_algo!r}, emulate={self.emulate})"
        )

    def predict(
        self,
        root: int = 0,
        nbytes: int = 0,
        segment_size: int | None = None,
        algo: str | None = None,
        *,
        collective: str = "bcast",
        op: Any = None,
    ) -> float:
        """The simulator's time (seconds, times ``time_scale``) of this wrapper's ``Bcast``,
        or of its hypercube ``collective`` (``"allreduce"``, ``"allgather"``, ``"barrier"``;
        ``nbytes`` per rank) as :meth:`schedule` gives it."""
        from .simulator import simulate

        sched = self.schedule(
            root, None, nbytes, segment_size, algo=algo, collective=collective, op=op
        )
        return simulate(self.platform, sched, self.model).makespan * self.time_scale
