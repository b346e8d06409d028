"""Plan with every applicable planner, simulate each, rank them: the one comparison service.

``auto`` (the planner that keeps the fastest), ``hetcoll compare`` (trees and hypercubes)
and the demo and jobs layer all go through :func:`compare`, so they agree on which planners
are candidates (:meth:`~hetcoll.planners.PlannerInfo.unfit`, from the registry's metadata),
on how a request is planned (:func:`plan_request`) and on the ranking: predicted time, then
name, so every MPI rank that compares picks the same winner.

Examples
--------
>>> from hetcoll import load_platform
>>> c = compare(load_platform("fig1"), "bcast", root="1")
>>> c.best.algorithm, round(c.best.predicted_time * 1e6)
('fnf', 400)
>>> round(c.row("binomial")["ratio"], 3)
1.75
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ModelError, PlannerError, ScheduleError
from .planners._registry import warn_unused_options
from .planners._shared import simulated
from .platform import Platform
from .program import Program
from .schedule import Schedule, check_simulations, transfer_budget
from .simulator import Prediction
from .simulator.predict import gc_paused
from .slicesizes import bounded, past_the_valley, single_trees, size_bounds

__all__ = [
    "CUBE_OPERATIONS",
    "MIN_SLICE",
    "NEAR",
    "OPERATIONS",
    "ROOTED_OPERATIONS",
    "SLICE_STEP",
    "TREE_OPERATIONS",
    "Candidate",
    "Comparison",
    "busiest_messages",
    "SizeComparison",
    "candidates",
    "compare",
    "compare_sizes",
    "critical_messages",
    "plan_request",
    "same_trees",
    "slice_choices",
]

TREE_OPERATIONS = ("bcast", "multicast", "multi_multicast")
#: what a schedule records of where it came from, not of what it runs
_PROVENANCE = ("algorithm", "params", "model")
CUBE_OPERATIONS = ("allreduce", "allgather", "barrier")
#: what ``prune`` applies to: one tree's bounds (:func:`hetcoll.bounds.slice_bound`) hold
#: for one root's broadcast or multicast, not for several groups planned together
PRUNED_OPERATIONS = ("bcast", "multicast")
#: the rooted family (trees up, down, or both; allreduce and allgather also by hypercube)
ROOTED_OPERATIONS = ("reduce", "gather", "scatter", "allreduce", "allgather", "reduce_scatter")
#: every operation compare() takes
OPERATIONS = (*TREE_OPERATIONS, "reduce", "gather", "scatter", "reduce_scatter", *CUBE_OPERATIONS)

Groups = Sequence[tuple[str, Iterable[str] | None]]
#: a candidate is pruned when its lower bound exceeds the fastest time by more than this
#: (relative: rounding in the bound's sums must never prune the winner)
_MARGIN = 1e-9
#: :func:`compare`'s ``bound``: a candidate this close to the lower bound (relative) ends
#: the search before the planners that search their own slicing (``forest``)
NEAR = 1e-3


def plan_request(
    platform: Platform,
    operation: str,
    method: str,
    *,
    root: str | None = None,
    members: Iterable[str] | None = None,
    groups: Groups | None = None,
    model: Any = None,
    nbytes: int = 0,
    segment_size: int | None = None,
    op: Any = None,
    options: Mapping[str, Any] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Schedule:
    """Plan ``operation`` with planner ``method`` through the right front door.

    ``bcast``/``multicast``: :func:`~hetcoll.planners.plan` from ``root`` (to ``members``);
    ``multi_multicast``: :func:`~hetcoll.planners.plan_multiple` of ``groups``;
    ``allreduce``/``allgather``/``barrier`` with a hypercube planner:
    :func:`~hetcoll.planners.plan_hypercube` over ``members`` (``op``: an allreduce's
    operator); the rooted family (``reduce``, ``gather``, ``scatter``, ``reduce_scatter``,
    and ``allreduce``/``allgather`` with a tree planner): :func:`~hetcoll.planners.plan`
    with ``collective`` (``root`` None: the planner chooses; ``sizes``: per-member blocks).
    """
    from .planners import REGISTRY, plan, plan_hypercube, plan_multiple

    info = REGISTRY.get(method)
    cube = info is not None and info.kind == "hypercube"
    if operation in ROOTED_OPERATIONS and not cube:
        if operation in ("reduce", "gather", "scatter") and root is None:
            raise PlannerError(f"a {operation} needs a root")
        rooted = {"collective": operation, "sizes": sizes}
    elif operation in CUBE_OPERATIONS:
        if root is not None:
            raise PlannerError(f"a hypercube {operation} has no root (planner {method!r})")
        if segment_size is not None:
            raise PlannerError(
                f"segment_size: an {operation} over a hypercube is not pipelined (planner "
                f"{method!r})"
            )
        return plan_hypercube(
            platform,
            operation,
            members,
            method=method,
            model=model,
            nbytes=nbytes,
            op=op,
            options=options,
        )
    elif operation == "multi_multicast":
        return plan_multiple(
            platform,
            groups or (),
            method=method,
            model=model,
            nbytes=nbytes,
            segment_size=segment_size,
            options=options,
        )
    elif operation not in TREE_OPERATIONS:
        raise PlannerError(
            f"unknown operation {operation!r}; choose from: " + ", ".join(OPERATIONS)
        )
    elif root is None:
        raise PlannerError(f"a {operation} needs a root")
    else:
        rooted = {}  # a broadcast or multicast tree
    return plan(
        platform,
        root,
        members,
        method=method,
        model=model,
        nbytes=nbytes,
        segment_size=segment_size,
        options=options,
        **rooted,
    )


def _participants(platform: Platform, operation: str, root, members, groups: Groups | None) -> int:
    """How many nodes one planner call covers (a multiple multicast: its largest group)."""
    if operation == "multi_multicast":
        sizes = [len(platform) if m is None else len({r, *m}) for r, m in groups or ()]
        return max(sizes, default=0)
    if members is None:
        return len(platform)
    members = [members] if isinstance(members, str) else list(members)
    return len({*members, *([root] if root is not None else [])})


def candidates(
    operation: str, model: str, members: int, pipelined: bool | None = None
) -> tuple[list[str], dict[str, str]]:
    """The registered planners that are candidates for ``operation`` on ``members`` nodes
    under cost model ``model`` (sorted by name), and the reasons of those that plan the
    operation but are left out (:meth:`~hetcoll.planners.PlannerInfo.unfit`; ``pipelined``:
    whether the message goes in several slices)."""
    from .planners import REGISTRY

    names, left_out = [], {}
    for name, info in sorted(REGISTRY.items()):
        why = info.unfit(operation, model, members, pipelined)
        if why is None:
            names.append(name)
        elif (
            info.serves(operation)
            and info.kind != "select"
            and not (info.pipelined and pipelined is False and not info.own_slices)
        ):
            left_out[name] = why  # (a planner for sliced messages is by design no candidate)
    return names, left_out


@dataclass(frozen=True)
class Candidate:
    """One planner's schedule and its prediction (with the slice size it was planned for);
    ``charge``: seconds added for ranking, :func:`compare`'s ``message_cost`` times the
    busiest rank's messages (:func:`busiest_messages`)."""

    algorithm: str
    schedule: Schedule
    prediction: Prediction
    segment_size: int | None = None
    charge: float = 0.0

    @property
    def predicted_time(self) -> float:
        return self.prediction.makespan

    @property
    def charged_time(self) -> float:
        """The predicted time plus the charge: what the ranking compares."""
        return self.prediction.makespan + self.charge


def busiest_messages(run: Prediction | Program) -> int:
    """The most messages one rank sends and receives in ``run``: a simulated run (each
    transfer of a :class:`~hetcoll.simulator.Prediction` counts at its sender and at its
    receiver) or a :class:`~hetcoll.program.Program` not simulated (each of a rank's ops is
    one send or one receive: the same count).

    >>> from hetcoll import load_platform, plan, simulate
    >>> p = load_platform("fig1")
    >>> busiest_messages(simulate(p, plan(p, "1", method="flat")))
    7
    >>> busiest_messages(plan(p, "1", method="flat").program())
    7
    """
    ops = getattr(run, "ops", None)
    if ops is not None:
        return max((len(mine) for mine in ops.values()), default=0)
    counts: dict[Any, int] = {}
    cols = getattr(run.transfers, "columns", None)
    pairs = zip(cols[0], cols[1], strict=True) if cols is not None else (
        (t.sender, t.receiver) for t in run.transfers
    )  # fmt: skip
    for a, b in pairs:
        counts[a] = counts.get(a, 0) + 1
        counts[b] = counts.get(b, 0) + 1
    return max(counts.values(), default=0)


def critical_messages(run: Prediction) -> int:
    """The messages on ``run``'s critical chain: the transfer that arrives last (the first
    of them on a tie), the one that set its start (its ``blocked_by``: its data, its
    receiver's posting, its sender's or its receiver's port, a link), and so back to one
    that nothing held back.  Each of them, made longer, makes the run longer by as much.

    >>> from hetcoll import load_platform, plan, simulate
    >>> p = load_platform("fig1")
    >>> critical_messages(simulate(p, plan(p, "1", method="flat")))  # the root's sends
    7
    """
    transfers = run.transfers
    cols = getattr(transfers, "columns", None)
    if cols is not None:
        arrival, by = cols[5], cols[7]
    else:
        arrival = [t.arrival for t in transfers]
        by = [-1 if t.blocked_by is None else t.blocked_by for t in transfers]
    if not arrival:
        return 0
    k = max(range(len(arrival)), key=arrival.__getitem__)
    count = 0
    while k >= 0:  # a transfer's blocker started before it: the walk ends
        count += 1
        k = by[k]
    return count


@dataclass
class Comparison:
    """Candidates ranked by predicted time (then name), and the planners left out.

    ``skipped`` maps a planner to why it is not ranked: the applicability rule left it out,
    or it declined the request (:class:`~hetcoll.errors.PlannerError`).
    """

    operation: str
    nbytes: int
    ranked: list[Candidate]
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def best(self) -> Candidate:
        return self.ranked[0]

    def get(self, algorithm: str) -> Candidate:
        for c in self.ranked:
            if c.algorithm == algorithm:
                return c
        raise KeyError(algorithm)

    def rows(self) -> list[dict[str, Any]]:
        """``hetcoll compare``'s rows: algorithm, predicted time, throughput, ratio to the
        best; for a hypercube also the embedding and, with ``blind`` among the candidates,
        the gain over it in % (Figueira & Reddi's measure)."""
        best = self.best.predicted_time
        blind = next((c.predicted_time for c in self.ranked if c.algorithm == "blind"), None)
        out = []
        for c in self.ranked:
            t = c.predicted_time
            row: dict[str, Any] = {
                "algorithm": c.algorithm,
                "predicted_time": t,
                "throughput": c.prediction.throughput,
            }
            if c.schedule.hypercube is not None:
                row["embedding"] = list(c.schedule.hypercube.positions)
            row["ratio"] = t / best if best > 0 else 1.0
            if c.schedule.hypercube is not None and blind is not None:
                row["gain_vs_blind"] = 100 * (blind - t) / blind if blind else 0.0
            out.append(row)
        return out

    def row(self, algorithm: str) -> dict[str, Any]:
        return next(r for r in self.rows() if r["algorithm"] == algorithm)

    def same_schedules(self) -> dict[str, list[str]]:
        """Candidates that run the very same schedule (trees, order, embedding), grouped
        under the first name of each group (name order): measuring one measures them all.

        Examples
        --------
        >>> from hetcoll import load_platform
        >>> c = compare(load_platform("fig1"), "bcast", root="1", algos=["flat", "hlot", "fnf"])
        >>> c.same_schedules()
        {'flat': ['flat', 'hlot'], 'fnf': ['fnf']}
        """
        groups: dict[str, list[str]] = {}
        first: dict[str, str] = {}
        for c in sorted(self.ranked, key=lambda c: c.algorithm):
            doc = c.schedule.to_dict()
            what = json.dumps({k: v for k, v in doc.items() if k not in _PROVENANCE})
            head = first.setdefault(what, c.algorithm)
            groups.setdefault(head, []).append(c.algorithm)
        return groups


def compare(
    platform: Platform,
    operation: str = "bcast",
    *,
    root: str | None = None,
    members: Iterable[str] | None = None,
    groups: Groups | None = None,
    model: Any = None,
    nbytes: int = 0,
    segment_size: int | None = None,
    op: Any = None,
    algos: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    slices: Sequence[int | None] | None = None,
    sizes: Mapping[str, int] | None = None,
    prune: bool = False,
    message_cost: float = 0.0,
    bound: float | Callable[[], float | None] | None = None,
) -> Comparison:
    """Plan ``operation`` with every candidate planner, simulate each, rank by time.

    Parameters
    ----------
    platform : Platform
    operation : str
        One of :data:`OPERATIONS`: ``bcast``, ``multicast``, ``multi_multicast``, the
        rooted family (``reduce``, ``gather``, ``scatter``, ``reduce_scatter``,
        ``allreduce``, ``allgather``: tree planners and, for the last two, hypercube
        planners side by side) or ``barrier``.
    root, members, groups, model, nbytes, segment_size, op, sizes
        The request, as :func:`plan_request` takes it.
    algos : sequence of str, optional
        Compare these planners instead of the candidates the registry gives.
    options : mapping, optional
        Planner options: each planner gets those it accepts; one
        :class:`~hetcoll.errors.PlannerWarning` names those that no compared planner takes.
    slices : sequence of int or None, optional
        Choose the slice size too: every candidate for each of these segment sizes (None:
        the message in one piece), instead of ``segment_size`` alone.  The pipelined
        planners are candidates for the sizes that cut the message (``PlannerInfo.unfit``).
    prune : bool
        With ``slices`` of a broadcast or multicast (largest first, as
        :func:`slice_choices` gives them), find the fastest without planning or
        simulating what cannot be it: the first size (in one piece) first, then the
        others lowest lower bound first (:func:`hetcoll.bounds.slice_bound`: its
        ``whole``, with the pipeline's fill and under ``multi_port`` the cap of whole
        port sends, when the slice divides each half of the message, and the ``seconds``
        of every larger slice, which hold for smaller ones too), up to the
        first whose bound exceeds the fastest time found; at each slice size after the
        first, the candidates simulated in the order of their own bounds
        (:meth:`~hetcoll.bounds.SliceBound.of`) while that bound does not exceed it; a
        slice size past the valley of the times found
        (:func:`~hetcoll.slicesizes.past_the_valley`: two sizes on one side of it, the
        nearer slower) is not planned.  The bounds never
        prune the winner; the valley is a heuristic (see there).  A planner's row is its
        fastest over the slice sizes where it was simulated.  Each slice size must fit
        the budget for one candidate (not for all of them together).  Other operations
        (``multi_multicast``: several groups planned together) are compared unpruned.
    message_cost : float
        Seconds each message costs beyond the model (a runtime's own work per message):
        candidates are ranked by their predicted time plus this times their busiest
        rank's messages (:func:`busiest_messages`, :attr:`Candidate.charge`), so a finer
        slicing wins only where its predicted gain exceeds what its extra messages cost.
        Pruning stays exact: a lower bound on a time is one on the charged time too.
    bound : float or callable, optional
        A lower bound (seconds) on the time of any schedule of the request, or a function
        of no arguments that returns it (or None: no bound), called once, when a planner
        it could skip is reached (``auto`` gives :func:`hetcoll.selection.everyone_bound`'s
        for an allgather, reduce-scatter or allreduce).  The planners that search their own
        slicing (:attr:`~hetcoll.planners.PlannerInfo.own_slices`: ``forest``, seconds of
        play-outs and simulations) are then planned after the others, and only while no
        candidate's charged time is within :data:`NEAR` (0.1 %) of the bound: none of them
        can be faster by more than that, so the search ends there.  Without pruning (a single
        slice size) only.

    Returns
    -------
    Comparison

    Raises
    ------
    PlannerError
        When no planner gives a schedule (the reasons are in the message).

    Notes
    -----
    One planner call and one simulation per candidate.
    """
    from .models import get_model

    cost_model = get_model(model) if model is not None else platform.model
    model_name = cost_model.name
    ranked = []
    skipped: dict[str, str] = {}
    per_size = []
    for size in [segment_size] if slices is None else list(slices):
        pipelined = (
            size is not None and nbytes > size
            if operation in TREE_OPERATIONS or operation in ROOTED_OPERATIONS
            else None
        )
        if algos is None:
            count = _participants(platform, operation, root, members, groups)
            names, left_out = candidates(operation, model_name, count, pipelined)
            for name, why in left_out.items():
                skipped.setdefault(name, why)
        else:
            names = list(algos)
        per_size.append((size, names))
    receivers = _receivers(platform, operation, root, members, groups)
    most = transfer_budget(getattr(cost_model, "contention", "exclusive"))
    prune = prune and operation in PRUNED_OPERATIONS and slices is not None
    prune = prune and len(per_size) > 1 and receivers > 0
    per_size = _within_budget(per_size, receivers, nbytes, slices is not None, most, prune)
    options = dict(options or {})
    warn_unused_options(options, sorted({n for _, names in per_size for n in names}))
    if prune:
        with gc_paused():  # (see _pruned)
            ranked = _pruned(
                platform, operation, root, members, model, nbytes, per_size, options, message_cost
            )
        for name in {n for _, names in per_size for n in names} - {c.algorithm for c in ranked}:
            skipped.setdefault(name, "declined, or a lower bound on its time exceeds the best")
        return _ranking(operation, nbytes, ranked, skipped)
    planned: set[str] = set()
    for size, names in per_size:
        if bound is not None:
            names = _costly_last(names)
        for name in names:
            if bound is not None and ranked and _costly(name):
                bound = bound() if callable(bound) else bound  # (computed once, when needed)
                if bound is not None and _near(ranked, bound):
                    skipped.setdefault(name, f"a candidate is within {NEAR:.1%} of the bound")
                    continue
            try:
                schedule = plan_request(
                    platform,
                    operation,
                    name,
                    root=root,
                    members=members,
                    groups=groups,
                    model=model,
                    nbytes=nbytes,
                    segment_size=size,
                    op=op,
                    options=_accepted(options, name),
                    sizes=sizes,
                )
                prediction = simulated(platform, schedule, model)  # (a planner's own, kept)
            except (PlannerError, ModelError) as exc:  # ModelError: a transfer the
                # platform cannot carry (a planner unaware of links, on a link platform)
                if name not in planned:
                    skipped.setdefault(name, str(exc))
                continue
            charge = message_cost * busiest_messages(prediction) if message_cost else 0.0
            ranked.append(Candidate(name, schedule, prediction, size, charge))
            planned.add(name)
            skipped.pop(name, None)
    return _ranking(operation, nbytes, ranked, skipped)


def _costly(name: str) -> bool:
    """Whether planner ``name`` searches its own slicing (``own_slices``: ``forest``)."""
    from .planners import REGISTRY

    info = REGISTRY.get(name)
    return info is not None and info.own_slices


def _near(ranked: list[Candidate], bound: float) -> bool:
    """Whether a candidate's charged time is within :data:`NEAR` of ``bound``."""
    return any(c.charged_time <= bound * (1.0 + NEAR) for c in ranked)


def _costly_last(names: Sequence[str]) -> list[str]:
    """``names`` with the planners that search their own slicing last (each part in the
    order given)."""
    return sorted(names, key=_costly)


def _ranking(
    operation: str, nbytes: int, ranked: list[Candidate], skipped: dict[str, str]
) -> Comparison:
    """The candidates ranked by time, then name, then slice (every rank picks the same)."""
    for c in ranked:
        skipped.pop(c.algorithm, None)
    if not ranked:
        raise PlannerError(
            "no planner applies to this request: "
            + ("; ".join(f"{k}: {v}" for k, v in skipped.items()) or "none is registered")
        )
    ranked.sort(key=lambda c: (c.charged_time, c.algorithm, c.segment_size or 0))
    return Comparison(operation, nbytes, ranked, skipped)


@dataclass(frozen=True)
class SizeComparison:
    """One message size of :func:`compare_sizes`: each planner's best time over the slice
    sizes (``best[name] = (seconds, segment_size)``, None: in one piece), the fastest of
    them (``chosen``, what ``auto`` returns), and the lower bound on any broadcast of that
    size (:func:`hetcoll.bounds.lower_bound`, seconds)."""

    nbytes: int
    best: dict[str, tuple[float, int | None]]
    chosen: str
    bound: float

    @property
    def time(self) -> float:
        """The chosen planner's predicted time (seconds)."""
        return self.best[self.chosen][0]

    @property
    def gap(self) -> float | None:
        """``time / bound`` (1 at the bound); None when the bound is 0."""
        return self.time / self.bound if self.bound > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "nbytes": self.nbytes,
            "chosen": self.chosen,
            "predicted_time": self.time,
            "segment_size": self.best[self.chosen][1],
            "lower_bound": self.bound,
            "gap": self.gap,
            "planners": {
                name: {"predicted_time": t, "segment_size": seg}
                for name, (t, seg) in self.best.items()
            },
        }


def compare_sizes(
    platform: Platform,
    sizes: Sequence[int],
    *,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    algos: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[SizeComparison]:
    """A broadcast (a multicast to ``members``) of each size in ``sizes``: every candidate
    planner at each slice size of :func:`slice_choices`, pruned by lower bounds as ``auto``
    prunes them (:func:`compare`'s ``prune``), each planner's best over the slice sizes
    where it was simulated, the fastest (``auto``'s choice), and the lower bound of that
    size.

    Complexity: :func:`compare` once per size plus one arborescence packing per slice size
    tried and one per size for the bound.

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> [r.chosen for r in compare_sizes(load_platform("fig1"), [1000], root="1")]
    ['fnf']
    """
    from .bounds import lower_bound

    members = list(members) if members is not None else None
    operation = "bcast" if members is None else "multicast"
    from .planners._shared import shared_work

    out = []
    for nbytes in sizes:
        with shared_work():  # (as auto)
            found = compare(
                platform,
                operation,
                root=root,
                members=members,
                model=model,
                nbytes=nbytes,
                algos=algos,
                options=options,
                slices=slice_choices(nbytes),
                prune=True,
            )
        best: dict[str, tuple[float, int | None]] = {}
        for c in found.ranked:  # ranked by time: the first of each planner is its best
            best.setdefault(c.algorithm, (c.predicted_time, c.segment_size))
        bound = lower_bound(platform, root, nbytes, members, model).seconds
        out.append(SizeComparison(int(nbytes), best, found.best.algorithm, bound))
    return out


def _receivers(platform: Platform, operation: str, root, members, groups: Groups | None) -> int:
    """How many messages one segment takes at least, over every tree of the request (each
    receiver gets it once; relays add more): 0 for a hypercube, which is not cut."""
    if operation not in TREE_OPERATIONS:
        return 0
    if operation == "multi_multicast":
        return sum((len(platform) if m is None else len({r, *m})) - 1 for r, m in groups or ())
    return _participants(platform, operation, root, members, groups) - 1


def _pruned(
    platform: Platform,
    operation: str,
    root: str | None,
    members: Iterable[str] | None,
    model: Any,
    nbytes: int,
    per_size: list[tuple[int | None, list[str]]],
    options: dict[str, Any],
    message_cost: float = 0.0,
) -> list[Candidate]:
    """:func:`compare`'s ``prune``: the first slice size, then the others lowest bound
    first (:func:`~hetcoll.slicesizes.size_bounds`) while it does not exceed the fastest
    (charged) time found, each candidate planned, simulated only while its lower bound does
    not exceed it (with a relative margin of ``1e-9`` for rounding: a tie may still win on
    its name), and a size past the valley of those visited
    (:func:`~hetcoll.slicesizes.past_the_valley`) not planned; at a slice size the
    planners of :func:`~hetcoll.slicesizes.single_trees` are planned last, and not at all
    where :func:`~hetcoll.planners.single_bounds.trees_exceed` proves that no spanning tree
    can beat the fastest time then (else every candidate is searched as if planned at once).
    The sizes with the lowest bounds are the likeliest to hold the winner: found early, it
    spares the planning of the sizes whose bound it beats (on the n = 50 platforms of
    ``bench_sizes.py --auto --latency 50us``, the largest slice's fill: 8 slices of
    128 MiB).

    :func:`compare` runs it with the cyclic garbage collector paused
    (:func:`~hetcoll.simulator.predict.gc_paused`): the planners of a long message build
    10^5 transfers, order entries and heap items each, which the collections their
    allocation triggers would scan again and again (a seventh of ``auto``'s time on a
    50-node platform), and nothing they make forms a cycle that must be freed before the
    search ends."""
    from .bounds import slice_bound
    from .models import get_model
    from .planners.single_bounds import trees_exceed

    # the planners' own model object (a run they kept is handed out for it: simulated)
    cost_model = get_model(model) if model is not None else platform.model
    ranked: list[Candidate] = []
    best = math.inf
    bounds: list[Any] = [None]
    for size, _names in per_size[1:]:
        try:
            bounds.append(
                slice_bound(platform, root, nbytes, size, members, model) if size else None
            )
        except (PlannerError, ModelError):
            bounds.append(None)
    lows = size_bounds([size for size, _ in per_size], bounds, nbytes)
    # the first size (the message in one piece) first, then the lowest bound first
    visit = [0, *sorted(range(1, len(per_size)), key=lambda k: (lows[k], k))]
    fastest: dict[int, float] = {}  # per slice size visited: its fastest charged time
    for k in visit:
        (size, names), bound = per_size[k], bounds[k]
        if k and lows[k] > best * (1 + _MARGIN):
            break  # and every size after it (their bounds are no lower)
        if k and past_the_valley(size, fastest):
            continue
        later = single_trees(names, operation) if k and bounded(bound) else []

        def planned(names: list[str], bound=bound, size=size) -> list[tuple[float, str, Any]]:
            out = []
            for name in names:
                try:
                    schedule = plan_request(
                        platform,
                        operation,
                        name,
                        root=root,
                        members=members,
                        model=model,
                        nbytes=nbytes,
                        segment_size=size,
                        options=_accepted(options, name),
                    )
                except (PlannerError, ModelError, ScheduleError):  # (ScheduleError: over a
                    continue  # message cap at a small slice)
                out.append((bound.of(schedule) if bound is not None else 0.0, name, schedule))
            return out

        runs: dict[str, Any] = {}  # each candidate simulated at this size: its prediction
        first = planned([n for n in names if n not in later])
        found, at_best = _simulated_in_order(
            platform, cost_model, first, best, k, message_cost, runs
        )
        if later and not trees_exceed(bound.problem, nbytes / size, at_best * (1 + _MARGIN)):
            # a single tree may win: the search as if every candidate were planned at once
            found, at_best = _simulated_in_order(
                platform, cost_model, [*first, *planned(later)], best, k, message_cost, runs
            )
        for c in found:
            ranked.append(Candidate(c[0], c[1], c[2], size, c[3]))
            if k:
                fastest[size] = min(fastest.get(size, math.inf), c[2].makespan + c[3])
        best = at_best
    return ranked


def _simulated_in_order(platform, cost_model, planned, best, k, message_cost, runs):
    """:func:`_pruned`'s simulations at one slice size: ``planned``'s ``(bound, name,
    schedule)`` in the order of their bounds (then name), each while its bound does not
    exceed the fastest charged time (from ``best``; at the first size, every one); the
    ``(name, schedule, prediction, charge)`` simulated and the fastest time after them.
    ``runs`` keeps each prediction by name, so that a second pass simulates no one
    twice (a planner's kept run is handed out once)."""
    found = []
    for low, name, schedule in sorted(planned, key=lambda x: (x[0], x[1])):
        if k and low > best * (1 + _MARGIN):
            break
        if name not in runs:
            try:
                runs[name] = simulated(platform, schedule, cost_model)
            except (PlannerError, ModelError):
                runs[name] = None
        prediction = runs[name]
        if prediction is None:
            continue
        charge = message_cost * busiest_messages(prediction) if message_cost else 0.0
        found.append((name, schedule, prediction, charge))
        best = min(best, prediction.makespan + charge)
    return found, best


def _within_budget(
    per_size: list[tuple[int | None, list[str]]],
    receivers: int,
    nbytes: int,
    keep_first: bool,
    most: int,
    each: bool = False,
) -> list[tuple[int | None, list[str]]]:
    """The (segment size, candidates) to simulate, at most ``most`` messages in all
    (:func:`~hetcoll.schedule.transfer_budget`; ``receivers`` per segment and candidate at
    least).  With a choice of slice sizes (``keep_first``: ``auto``) the sizes
    are kept in the order given while they fit (the first must); otherwise a request that
    does not fit is refused (:func:`~hetcoll.schedule.check_simulations`).  ``each``: the
    budget holds for each candidate alone (a pruned comparison simulates few of them)."""
    total, kept = 0, []
    for k, (size, names) in enumerate(per_size):
        count = 1 if each else len(names)
        if each:
            total = 0
        if k and keep_first:
            chunks = -(-nbytes // size) if size and nbytes else 1
            if total + count * chunks * receivers > most:
                break
        total += check_simulations(
            "comparing planners",
            count,
            nbytes,
            size,
            receivers,
            ", or name one planner",
            most,
        )
        kept.append((size, names))
    return kept


#: the smallest slice ``auto`` tries (bytes): below it every model's per-message costs
#: dwarf the bytes, and a message's slices (what its simulation grows with) would be many
MIN_SLICE = 4096
#: ``auto``'s slice counts: 8, then this many times more at each step
SLICE_STEP = 4


def slice_choices(nbytes: int) -> list[int | None]:
    """The slice sizes ``auto`` tries for a message of ``nbytes`` when none is given,
    largest first: the message in one piece, then 8, 32, 128, 512, ... slices (a geometric
    grid, :data:`SLICE_STEP`) of whole KiB down to :data:`MIN_SLICE`, so that the slice
    count grows with the message (a pipeline's best count grows about as its square root).
    ``auto`` prunes the grid by lower bounds (:func:`compare`'s ``prune``) and keeps the
    slice counts whose simulation fits the message budget
    (:func:`~hetcoll.schedule.transfer_budget`).

    Examples
    --------
    >>> slice_choices(1000)
    [None]
    >>> slice_choices(8 * 2**20)
    [None, 1048576, 262144, 65536, 16384, 4096]
    """
    out: list[int | None] = [None]
    parts = 8
    while True:
        size = -(-nbytes // parts)
        size = -(-size // 1024) * 1024
        if size < MIN_SLICE:
            return out
        if size < nbytes and size not in out:
            out.append(size)
        parts *= SLICE_STEP


def _accepted(options: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The options planner ``name`` takes (an unknown name is left to plan_request)."""
    from .planners import REGISTRY

    info = REGISTRY.get(name)
    if info is None:
        return options or None
    return {k: v for k, v in options.items() if k in info.options} or None


def same_trees(
    true: Platform,
    probed: Platform,
    algos: Sequence[str],
    *,
    operation: str = "bcast",
    root: str | None = None,
    nbytes: int = 0,
    scale: float = 1.0,
) -> dict[str, bool]:
    """Per planner: does it plan the same schedule on a probed platform as on the true one?

    ``scale``: the probe measured an emulation of the true platform with every cost times
    ``scale``; the probed costs are scaled back first (a planner with thresholds, like the
    multi-level ones' 1 ms LAN boundary, would otherwise see another platform).

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> p = load_platform("fig1")
    >>> same_trees(p, p, ["fnf", "spoc"], root="1")
    {'fnf': True, 'spoc': True}
    """
    probed = _unscaled(probed, scale)
    out = {}
    for name in algos:
        a, b = (
            plan_request(p, operation, name, root=root, nbytes=nbytes).to_dict()["flows"]
            for p in (true, probed)
        )
        out[name] = a == b
    return out


def _unscaled(platform: Platform, scale: float) -> Platform:
    """``platform`` with every node cost and latency divided by ``scale`` (bandwidths
    multiplied): a probed, sender-only platform as it was before the emulation scaled it."""
    if scale == 1.0:
        return platform
    from dataclasses import replace

    nodes = [
        replace(n, t_ini=n.t_ini / scale, t_byte=n.t_byte / scale, gamma=n.gamma / scale)
        for n in platform.nodes
    ]
    latency = None if platform.latency is None else platform.latency / scale
    bandwidth = None if platform.bandwidth is None else platform.bandwidth * scale
    return Platform(
        nodes,
        platform.links,
        latency,
        bandwidth,
        platform.model,
        platform.name,
        size_curve=platform.size_curve,  # relative costs: the same at every scale
    )
