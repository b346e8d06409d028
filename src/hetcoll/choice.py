"""``auto`` across hetcoll's plans and MPI's own collective: what runs for one call.

For a call (collective, size, root, ranks) :func:`choose` returns ``"mpi"`` (pass the call
to MPI; under emulation, run MPICH's algorithm for it as a program through the same
engine) or the planner to run, by the first of these rules that applies:

1. **given**: the wrapper's or the call's ``algo`` is not ``auto``: that planner;
2. **tuning**: a tuning file (:mod:`hetcoll.tuning`, written by ``hetcoll tune``) has a
   rule for the collective and size: what was measured fastest on these ranks;
3. **one host**: natively (not emulated) with every rank on one host, MPI's own: there the
   ranks share one memory and its bandwidth, which no platform model describes (a 50 MiB
   broadcast planned as a pipelined tree is predicted 1.6x faster than MPI's and measures
   1.65x slower, ``benchmarks/mpi/bench_training.py``); ``hetcoll tune`` measures instead;
4. **model**: the simulator's time of hetcoll's best plan (the ``auto`` planner for a
   broadcast, the fastest of the hypercube planners and the trees the engine runs for an
   allreduce or an allgather, a reduce or gather to rank 0 then a broadcast, the fastest
   hypercube planner for the barrier; for an allreduce and an allgather also ``forest``'s
   per-root schedule, and for an allreduce ``butterfly_pipelined``'s, on ranks that are
   every node of the platform) against its time for
   MPICH's algorithm (:mod:`hetcoll.mpich`) on the same platform; the plan runs only when it is
   predicted faster by more than ``margin``, ``t_plan * (1 + margin) < t_mpi``, and MPI
   otherwise.  The margin covers the model's error: a plan predicted a little faster may
   well be slower.

**How the default margin is set.**  From measured prediction error:
``benchmarks/mpi/bench_auto.py`` measures, under emulation of ``examples/net.json`` (4 and 8
ranks, broadcasts of 8 B to 4 MiB, allreduces of 8 B to 1 MiB, a barrier), hetcoll's best
plan and MPI's own algorithm next to their predictions, and prints by how much the
predicted speed-up of the plan over MPI overstated the measured one where a plan was
predicted faster, and, with :data:`DEFAULT_MARGIN`, the least measured speed-up among the
calls ``auto`` gives a plan (it must stay above 1).  ``benchmarks/mpi/bench_probe_fit.py``
checks a probed platform's predictions (its size curve included) at 1, 4, 16 and 64 MiB
natively.  The margin is the speed-up a plan must be predicted to have over what the model
cannot tell apart from MPI; on a busy host the errors grow (every rank is delayed), and
natively on one host the model does not apply at all (rule 3).

**The engine's own cost per message.**  hetcoll's engine does work per message (Python,
a header, a wake-up of the rank; under emulation a stamp and a sleep) that the platform's
model does not have, and that grows with the ranks per core: 8 ranks on 2 cores ran a
50 MiB broadcast in 100 KiB slices 2.1x slower than in 400 KiB slices, predicted 2.3 %
faster (``benchmarks/mpi/bench_training.py --only emulated``).  So ``choose`` charges
``message_cost`` seconds per message of the busiest rank (sends and receives,
:func:`hetcoll.compare.busiest_messages`; a forest plan's on its critical chain, below) to
hetcoll's plans, when ranking them (``auto`` slices finer only where the predicted gain
exceeds what the extra messages cost) and against MPI's own; under emulation MPI's
algorithm runs through the same engine and is charged alike.

**Which messages, by the plan's shape.**  The engine's work on a message delays the run
only where its rank is on the critical path; where the rank waits anyway, the work hides
in the wait.  A tree (a broadcast, a reduce, a gather, sliced or not) and MPI's
algorithms are charged their busiest rank's messages: in a tree one rank handles its
messages in a row on the critical path (the root's sends; in a pipeline each slice's
receive and forward at every relay), and MPI's exchanges (recursive doubling and halving,
rings, dissemination) keep every rank alike busy at every step.  ``forest``'s plans for
an allreduce or an allgather (:data:`PER_ROOT`: the trees of a packing, per root or a
reduce and a broadcast through one root, in slices; for an allreduce also the pipelined
butterfly, ``butterfly_pipelined``) are charged the messages on their critical
chain (:func:`hetcoll.compare.critical_messages`: each of them, made longer by the
engine's work, makes the run as much longer): their ranks' messages belong to several
trees at once, and the rank with the most of them is a fast node that waits for the slow
ones a good part of the run (on ``examples/net.json``, 8 ranks, an 8 MiB allreduce: 160
messages on rank 0, busy 26 ms of the 38 ms predicted, and 21 on the critical chain).
Charged its busiest rank's messages at the cost ``hetcoll tune`` measured there, forest was
predicted 0.85 of MPI's time, short of the margin, and MPI's own ran 1.29x slower than
forest; charged its critical chain it is predicted 0.66 and keeps forest
(``benchmarks/mpi/bench_training.py --measured FILE``).  The chain is a lower bound of what
the work adds (the messages of the critical chain alone); the busiest rank's count, which
follows a broadcast's measured slicing better (it counts the relays' receives, which the
chain misses), stays the charge of the trees.

``HetComm`` charges :func:`charged_message_cost`: the cost ``hetcoll tune``
measured on the user's own ranks when its tuning file was measured as the wrapper runs
(:func:`hetcoll.jobs.tune.engine_cost`: a flat broadcast sliced into many messages
against the same broadcast whole, the difference of their measured times beyond the
model's, per message of the busiest rank), else under emulation the constant
:data:`ENGINE_MESSAGE_COST`, a conservative figure for a host with more ranks than cores;
under emulation in model seconds (real seconds divided by the emulation's
``time_scale``: the modelled costs are stretched, the engine's own work is not).  Natively
without a tuning file nothing: a probed platform's costs hold the engine's own (the
probe's round trips run through it).  A number from one file or one constant, never a
rank's own timing, so that every rank derives the same schedule.

A non-commutative allreduce or reduce is MPI's: MPI orders it as it must, and hetcoll
would gather every contribution.  For ``reduce``, ``gather`` and ``scatter`` (``nbytes``
per rank, from or to ``root``) the best plan is the ``auto`` planner's tree and MPI's
time that of MPICH's binomial tree (:mod:`hetcoll.mpich_rooted`); a long reduce, which
MPICH runs as Rabenseifner's reduce-scatter + gather (not modelled), is MPI's natively
and the plan under emulation (as for any call whose MPI algorithm the model lacks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ModelError
from .platform import Platform
from .tuning import Tuning

__all__ = [
    "DEFAULT_MARGIN",
    "ENGINE_MESSAGE_COST",
    "Choice",
    "best_cube",
    "charged_message_cost",
    "choose",
    "engine_message_cost",
    "mpi_time",
    "tree_runs",
]

#: predicted speed-up a plan needs over MPI's own to be chosen (see the module doc)
DEFAULT_MARGIN = 0.25
#: real seconds hetcoll's engine spends per message of the busiest rank beyond the model
#: (module doc): a conservative figure for a host with more ranks than cores, where a
#: message waits for its rank's turn on a core
ENGINE_MESSAGE_COST = 200e-6


def engine_message_cost(time_scale: float = 1.0, measured: float | None = None) -> float:
    """The engine's real seconds per message (``measured`` by ``hetcoll tune``, else
    :data:`ENGINE_MESSAGE_COST`) in the model's seconds: under emulation every modelled
    cost is stretched ``time_scale`` times, the engine's own work is not.

    >>> engine_message_cost(10.0) == ENGINE_MESSAGE_COST / 10
    True
    >>> engine_message_cost(8.0, measured=4e-5) == 4e-5 / 8
    True
    """
    return (ENGINE_MESSAGE_COST if measured is None else measured) / time_scale


def charged_message_cost(
    tuning: Tuning | None, *, emulated: bool, time_scale: float = 1.0
) -> float:
    """The seconds per message of a plan's busiest rank (of a forest plan: on its critical
    chain) a wrapper charges (module doc): a tuning file's measured ``message_cost`` when
    the file was measured as the wrapper runs (``emulated`` alike), else the constant under
    emulation and nothing natively; under emulation divided by ``time_scale``.

    >>> from hetcoll.tuning import Tuning
    >>> t = Tuning(8, {}, emulated=True, message_cost=6e-5)
    >>> charged_message_cost(t, emulated=True, time_scale=8.0) == 6e-5 / 8
    True
    >>> charged_message_cost(t, emulated=False), charged_message_cost(None, emulated=False)
    (0.0, 0.0)
    >>> charged_message_cost(None, emulated=True) == ENGINE_MESSAGE_COST
    True
    """
    measured = None
    if tuning is not None and tuning.message_cost is not None and tuning.emulated == emulated:
        measured = tuning.message_cost
    if emulated:
        return engine_message_cost(time_scale, measured)
    return 0.0 if measured is None else measured


#: the rooted collectives ``auto`` weighs against MPICH's binomial trees
_ROOTED = ("reduce", "gather", "scatter")


@dataclass(frozen=True)
class Choice:
    """What runs for a call: ``algorithm`` (``"mpi"`` or a planner), the ``segment_size``
    it runs with, why (``source``: ``given``, ``tuning`` or ``model``) and, for ``model``,
    the predicted seconds of the plan (``predicted``, of the planner ``plan``) and of
    MPI's own (``mpi``), each with its charge for the engine's messages (``choose``'s
    ``message_cost``); ``mpich``: the MPICH algorithm a tuning file's rule forces on a call
    given to MPI (:mod:`hetcoll.runtime.mpich_cvars`; None: MPICH's own selection)."""

    algorithm: str
    segment_size: int | None = None
    source: str = "given"
    predicted: float | None = None
    mpi: float | None = None
    plan: str | None = None
    mpich: str | None = None

    @property
    def passes(self) -> bool:
        """Whether the call goes to MPI."""
        return self.algorithm == "mpi"

    def to_dict(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "segment_size": self.segment_size,
            "source": self.source,
            "predicted": self.predicted,
            "mpi": self.mpi,
            "plan": self.plan,
            "mpich": self.mpich,
        }


def choose(
    platform: Platform,
    collective: str,
    nbytes: int,
    nodes: Sequence[str],
    *,
    algo: str = "auto",
    root: str | None = None,
    segment_size: int | None = None,
    op: str | None = None,
    count: int | None = None,
    builtin: bool = True,
    commutative: bool = True,
    model: Any = None,
    margin: float = DEFAULT_MARGIN,
    tuning: Tuning | None = None,
    emulated: bool = False,
    one_host: bool = False,
    message_cost: float = 0.0,
) -> Choice:
    """What runs for one call (module doc): ``collective`` of ``nbytes`` (per rank) over
    ``nodes`` (node ids in rank order), from ``root`` for a broadcast; ``op``, ``count``,
    ``builtin``, ``commutative`` describe an allreduce's operator and elements.  Where the
    platform cannot carry MPI's algorithm (a transfer between nodes it does not link: the
    ``one_port`` models), MPI's own runs natively and the plan under emulation
    (``emulated``), which cannot emulate those transfers either.  ``one_host``: every rank
    runs on one host (rule 3 of the module doc).  ``message_cost``: seconds charged per
    message of the busiest rank (of a forest plan: on its critical chain) to the plans, and
    to MPI's own under emulation (module doc; :func:`engine_message_cost`).

    Deterministic: every rank that asks with the same arguments gets the same choice.
    """
    if algo != "auto":
        return Choice(algo, segment_size)
    if collective in ("allreduce", "reduce") and not commutative:
        return Choice("mpi", source="model")
    if tuning is not None:
        rule = tuning.lookup(collective, nbytes)
        if rule is not None:
            return Choice(rule.algorithm, rule.segment_size, "tuning", mpich=rule.mpich)
    if one_host and not emulated:
        return Choice("mpi", source="one host")
    name, t_plan = _best_plan(
        platform, collective, nbytes, nodes, root, segment_size, op, model, count, message_cost
    )
    try:
        t_mpi = mpi_time(
            platform,
            collective,
            nbytes,
            nodes,
            root=root,
            count=count,
            builtin=builtin,
            op=op,
            model=model,
            message_cost=message_cost if emulated else 0.0,
        )
    except ModelError:  # MPI's direct sends between nodes the platform does not link
        if emulated:  # cannot be emulated either: the plan runs
            return Choice(name, segment_size, "model", t_plan, None, name)
        return Choice("mpi", None, "model", t_plan, None, name)
    if t_plan * (1.0 + margin) < t_mpi:
        return Choice(name, segment_size, "model", t_plan, t_mpi, name)
    return Choice("mpi", None, "model", t_plan, t_mpi, name)


def mpi_time(
    platform: Platform,
    collective: str,
    nbytes: int,
    nodes: Sequence[str],
    *,
    root: str | None = None,
    count: int | None = None,
    builtin: bool = True,
    op: str | None = None,
    model: Any = None,
    message_cost: float = 0.0,
) -> float:
    """The simulator's time of MPICH's algorithm for the call (:mod:`hetcoll.mpich`), plus
    ``message_cost`` per message of its busiest rank."""
    from .compare import busiest_messages
    from .mpich import native, predict

    ranks = list(nodes)
    if collective in _ROOTED:  # MPICH's binomial trees (ModelError: not modelled)
        from .mpich_rooted import rooted_native
        from .simulator import simulate

        sched = rooted_native(
            collective,
            ranks,
            nbytes,
            root=ranks.index(root) if root is not None else 0,
            count=count,
            builtin=builtin,
        )
        return simulate(platform, sched, model).makespan + message_cost * busiest_messages(
            sched.program()
        )
    found = native(
        collective,
        ranks,
        0 if collective == "barrier" else nbytes,
        root=ranks.index(root) if root is not None else 0,
        count=count if count is not None else (nbytes if collective == "allreduce" else None),
        builtin=builtin,
        op=_cube_op(op),
    )
    return predict(platform, found.program, model) + message_cost * busiest_messages(found.program)


def _cube_op(op: str | None) -> str:
    from .patterns import REDUCE_OPS

    return op if op in REDUCE_OPS else "sum"


def best_cube(
    platform: Platform,
    collective: str,
    nbytes: int,
    members: Sequence[str] | None,
    op: str | None,
    model: Any = None,
    message_cost: float = 0.0,
) -> str:
    """The hypercube planner with the least predicted time for the call (plus
    ``message_cost`` per message of its busiest rank, as :func:`choose` charges)."""
    return _best_cube(platform, collective, nbytes, members, op, model, message_cost)[0]


def _best_cube(
    platform, collective, nbytes, members, op, model, message_cost=0.0
) -> tuple[str, float]:
    """The fastest hypercube planner for the call (``allreduce``, ``allgather``,
    ``barrier``) and its charged time."""
    from .compare import compare
    from .planners.hypercube import hypercube_planners

    cubes = set(hypercube_planners())
    found = compare(
        platform,
        collective,
        members=members,
        model=model,
        nbytes=0 if collective == "barrier" else nbytes,
        op=_cube_op(op) if collective == "allreduce" else None,
        algos=_candidates(platform, collective, members, model, cubes.__contains__),
        message_cost=message_cost,
    )
    best = next(c for c in found.ranked if c.algorithm in cubes)
    return best.algorithm, best.charged_time


#: the flows of an allreduce or allgather the engine runs on a tree
_TREE_FLOWS = {"allreduce": ("reduce", "bcast"), "allgather": ("gather", "bcast")}


def tree_runs(sched) -> bool:
    """Whether the engine runs ``sched`` as an allreduce or allgather on a tree: one reduce
    (gather) flow to a root, then one broadcast flow from it over the members, pieces of
    one buffer, no relays (what ``HetComm.Allreduce`` and ``Allgather`` run with a tree
    planner)."""
    flows = sched.flows
    return (
        sched.collective in _TREE_FLOWS
        and sched.hypercube is None
        and not sched.per_root
        and len(flows) == 2
        and (flows[0].kind, flows[1].kind) == _TREE_FLOWS[sched.collective]
        and flows[0].tree.root == flows[1].tree.root
        and not any(f.relay_of() for f in flows)
    )


def _best_all(
    platform, collective, nbytes, nodes, members, op, model, message_cost=0.0
) -> tuple[str, float]:
    """The fastest plan the engine runs for an allreduce or allgather: the fastest
    hypercube planner's, or a tree's (a reduce or gather to rank 0 then a broadcast,
    :func:`tree_runs`, ranked by :func:`compare` with that root, unsegmented) when it is
    predicted faster."""
    from .compare import compare

    cube = _best_cube(platform, collective, nbytes, members, op, model, message_cost)
    root = next(iter(nodes))  # rank 0: where HetComm's tree calls reduce or gather to
    found = compare(
        platform, collective, root=root, members=members, model=model, nbytes=nbytes,
        op=_cube_op(op) if collective == "allreduce" else None, message_cost=message_cost,
        algos=_candidates(platform, collective, members, model, _unsliced),
    )  # fmt: skip
    trees = [c for c in found.ranked if c.segment_size is None and tree_runs(c.schedule)]
    if trees and trees[0].charged_time < cube[1]:
        return trees[0].algorithm, trees[0].charged_time
    return cube


def _candidates(platform, collective, members, model, keep) -> list[str]:
    """The candidates :func:`hetcoll.compare.compare` would rank for the call, those that
    ``keep`` keeps (by name): a ranking of some kind of plan need not plan the others
    (``forest``, a planner of its own segments, is weighed once, by itself)."""
    from .compare import candidates
    from .models import get_model

    name = (get_model(model) if model is not None else platform.model).name
    count = len(platform) if members is None else len(list(members))
    return [n for n in candidates(collective, name, count, False)[0] if keep(n)]


def _unsliced(name: str) -> bool:
    """Whether planner ``name`` plans messages in one piece (a tree :func:`tree_runs`)."""
    from .planners import REGISTRY

    return not REGISTRY[name].pipelined


#: the per-root planners ``auto`` weighs for an allgather or allreduce, each for the
#: collectives it plans (the engine runs their schedules: :mod:`hetcoll.runtime.perroot`)
PER_ROOT = ("forest", "butterfly_pipelined")


def _per_root_plan(
    platform, collective, nbytes, nodes, count, model, message_cost=0.0
) -> tuple[str, float] | None:
    """``(planner, predicted seconds)`` of the fastest of :data:`PER_ROOT`'s schedules for
    the call (plus ``message_cost`` per message on its critical chain: module doc; ties:
    the first), as the engine plans them (an allreduce's shares cut at its elements), or
    None where the engine would run none: ranks on some of the platform's nodes only (they
    plan on every node), nothing to move, or no schedule for this platform (a model or
    platform form the planner does not take)."""
    from .compare import critical_messages
    from .errors import HetcollError
    from .planners import REGISTRY, plan
    from .simulator import simulate

    if nbytes <= 0 or len(nodes) < 2 or sorted(nodes) != sorted(platform.ids):
        return None
    align = -(-nbytes // count) if collective == "allreduce" and count else 1
    best = None
    for name in PER_ROOT:
        if collective not in REGISTRY[name].collectives:
            continue
        try:
            sched = plan(
                platform,
                None,
                None,
                method=name,
                model=model,
                nbytes=nbytes,
                collective=collective,
                options={"align": align} if align > 1 else None,
            )
            found = simulate(platform, sched, model)
        except HetcollError:  # the engine's call would raise too: not a candidate
            continue
        t = found.makespan + message_cost * critical_messages(found)
        if best is None or t < best[1]:
            best = (name, t)
    return best


def _near_bound(platform, collective, nbytes, nodes, model, seconds) -> bool:
    """Whether ``seconds`` is within :data:`hetcoll.compare.NEAR` of the lower bound on an
    ``allreduce`` or ``allgather`` of ``nbytes`` per rank on every node of ``platform``
    (:func:`hetcoll.selection.everyone_bound`; False where it is not computed)."""
    from .compare import NEAR
    from .selection import everyone_bound

    bound = everyone_bound(platform, collective, None, list(nodes), model, nbytes, None)
    low = bound() if bound is not None else None
    return low is not None and seconds <= low * (1.0 + NEAR)


def _best_plan(
    platform, collective, nbytes, nodes, root, segment_size, op, model, count=None, cost=0.0
):
    """``(planner, predicted seconds)`` of hetcoll's best plan for the call, ``cost``
    charged per message of the busiest rank, or of forest's critical chain (:func:`choose`'s
    ``message_cost``)."""
    members = None if list(nodes) == list(platform.ids) else list(nodes)
    if collective in _TREE_FLOWS:
        best = _best_all(platform, collective, nbytes, nodes, members, op, model, cost)
        if _near_bound(platform, collective, nbytes, nodes, model, best[1]):
            return best  # forest cannot gain 0.1 % (selection.auto stops there too)
        forest = _per_root_plan(platform, collective, nbytes, list(nodes), count, model, cost)
        return forest if forest is not None and forest[1] < best[1] else best
    if collective not in ("bcast", *_ROOTED):
        return _best_cube(platform, collective, nbytes, members, op, model, cost)
    from .compare import busiest_messages
    from .planners import plan
    from .simulator import simulate

    rooted = {"collective": collective} if collective in _ROOTED else {}
    sched = plan(
        platform,
        root,
        members,
        method="auto",
        model=model,
        nbytes=nbytes,
        segment_size=segment_size,
        options={"message_cost": cost} if cost else None,
        **rooted,
    )
    found = simulate(platform, sched, model)
    return "auto", found.makespan + cost * busiest_messages(found)
