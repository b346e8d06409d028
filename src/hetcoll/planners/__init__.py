"""Planners: pure functions ``(platform, root, members, model, **options) -> Schedule``.

Use them directly (``hetcoll.planners.fnf(platform, "1")``) or through the front door
:func:`plan`, which looks the method up in :data:`REGISTRY` like
``scipy.optimize.minimize(method=...)``.  ``hetcoll planners`` lists them with their papers.
Hypercube planners (allreduce, allgather, barrier; no root) have their own front doors:
:func:`plan_allreduce`, :func:`plan_allgather`, :func:`plan_barrier`.  ``auto`` (the best
of them all by simulation) is registered one layer up, in :mod:`hetcoll.selection`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import PlannerError
from ..platform import Platform
from ..schedule import Schedule
from ._registry import REGISTRY, PlannerInfo, get_planner, register

# importing a planner module registers its planners
from .butterfly import balanced
from .butterflypipe import butterfly_pipelined
from .chains import postorder_doubling, two_vbbs
from .classic import binomial, chain, flat
from .fnf import fnf
from .forestplan import forest
from .gap_aware import gap_aware
from .hypercube import (
    hypercube_planners,
    plan_allgather,
    plan_allreduce,
    plan_barrier,
    plan_hypercube,
)
from .joint import fnf_joint
from .labs import binomial_like, labs
from .latency import hlot, mst, spt
from .multilevel import magpie, mpich_g2, mpich_gx
from .multitree import multi_tree
from .optimal import optimal
from .pipelined import (
    binomial_graph,
    grow_tree,
    grow_tree_multiport,
    lp_grow,
    lp_prune,
    prune_degree,
    prune_degree_multiport,
    prune_simple,
    throughput_tree,
)
from .recursive import bruck, halving, rabenseifner
from .rings import ring
from .rooted import ROOTED, from_broadcast
from .rooted_exact import rooted_exact
from .rooted_search import rooted_ls
from .siteexchange import site_exchange
from .sitepairs import site_pairs
from .sites import sites
from .spoc import spoc
from .switch_aware import switch_aware

__all__ = [
    "REGISTRY",
    "PlannerInfo",
    "get_planner",
    "plan",
    "plan_multiple",
    "plan_hypercube",
    "plan_allreduce",
    "plan_allgather",
    "plan_barrier",
    "hypercube_planners",
    "register",
    "applicable",
    "balanced",
    "binomial",
    "butterfly_pipelined",
    "bruck",
    "binomial_like",
    "binomial_graph",
    "grow_tree",
    "grow_tree_multiport",
    "lp_grow",
    "lp_prune",
    "prune_degree",
    "prune_degree_multiport",
    "prune_simple",
    "throughput_tree",
    "chain",
    "flat",
    "fnf",
    "forest",
    "fnf_joint",
    "gap_aware",
    "halving",
    "hlot",
    "labs",
    "magpie",
    "mpich_g2",
    "mpich_gx",
    "mst",
    "multi_tree",
    "optimal",
    "postorder_doubling",
    "rabenseifner",
    "ring",
    "rooted_exact",
    "rooted_ls",
    "site_exchange",
    "site_pairs",
    "sites",
    "spoc",
    "spt",
    "switch_aware",
    "two_vbbs",
]


def plan(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    *,
    method: str = "fnf",
    model: Any = None,
    nbytes: int = 0,
    segment_size: int | None = None,
    options: Mapping[str, Any] | None = None,
    collective: str | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Schedule:
    """Plan a broadcast (``members`` None) or multicast from ``root`` with planner ``method``,
    or a rooted ``collective``.

    Parameters
    ----------
    platform : Platform
    root : str
        The source node id.
    members : iterable of str, optional
        The nodes that must receive (the root is added); None for every node.
    method : str
        A name from :data:`REGISTRY` (``hetcoll planners``), e.g. ``"fnf"``, or ``"auto"``.
    model : optional
        Cost model to plan for; defaults to the platform's.
    nbytes : int
        Message size in bytes.
    segment_size : int, optional
        Pipeline the message in segments of this many bytes.
    options : mapping, optional
        Planner-specific options; unknown ones raise a warning and are ignored.
    collective : str, optional
        ``reduce``, ``gather``, ``scatter`` (to or from ``root``), ``allreduce``,
        ``allgather`` or ``reduce_scatter`` (``root`` None: the planner chooses, or the
        member of lowest rank): ``nbytes`` is each member's vector (reductions) or block.
        A planner of rooted collectives plans it; a broadcast tree planner's tree serves
        run backwards (:func:`hetcoll.planners.rooted.from_broadcast`).
    sizes : mapping, optional
        Each member's block in bytes (gather, scatter, allgather, reduce_scatter: the
        v-variants); default ``nbytes`` each.

    Returns
    -------
    Schedule

    Raises
    ------
    UnknownPlannerError, UnknownNodeError, PlannerError

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> plan(load_platform("fig1"), "1", method="fnf").tree.children["1"]
    ('6', '2', '4', '7')
    """
    info = get_planner(method)
    if collective is not None and collective not in ("bcast", "multicast"):
        return _plan_rooted(
            info, platform, collective, root, members, model, nbytes, segment_size, sizes, options
        )
    collective = "bcast" if members is None else "multicast"
    if collective not in info.collectives and not (
        collective == "multicast" and "bcast" in info.collectives
    ):
        raise PlannerError(f"planner {method!r} does not plan a {collective}")
    opts = info.known_options(options)
    return info.func(
        platform, root, members, model, nbytes=nbytes, segment_size=segment_size, **opts
    )


def _plan_rooted(
    info: PlannerInfo,
    platform: Platform,
    collective: str,
    root: str | None,
    members: Iterable[str] | None,
    model: Any,
    nbytes: int,
    segment_size: int | None,
    sizes: Mapping[str, int] | None,
    options: Mapping[str, Any] | None,
) -> Schedule:
    """:func:`plan` of a rooted collective: its own planner, or a broadcast tree backwards."""
    if collective not in ROOTED:
        raise PlannerError(
            f"unknown collective {collective!r}; choose from: bcast, multicast, "
            + ", ".join(ROOTED)
        )
    opts = info.known_options(options)
    if collective in info.collectives:
        return info.func(
            platform,
            root,
            members,
            model,
            nbytes=nbytes,
            segment_size=segment_size,
            collective=collective,
            sizes=sizes,
            **opts,
        )
    if not info.reverses():
        raise PlannerError(f"planner {info.name!r} does not plan a {collective}")
    return from_broadcast(
        info,
        platform,
        collective,
        root,
        members,
        model,
        nbytes=nbytes,
        segment_size=segment_size,
        sizes=sizes,
        options=opts,
    )


def plan_multiple(
    platform: Platform,
    groups: Sequence[tuple[str, Iterable[str] | None]],
    *,
    method: str = "fnf",
    model: Any = None,
    nbytes: int = 0,
    segment_size: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> Schedule:
    """Multiple multicast: one tree per ``(root, members)`` group, all run at the same time.

    A tree planner (``fnf``, ...) plans each group on its own, as Banikazemi et al. (1998,
    Sec. 4 and 6.2) do, and the simulator makes the trees share every node's sending
    capacity; a joint planner (``fnf_joint``) plans them together.
    """
    if isinstance(groups, str | Mapping) or not isinstance(groups, Sequence):
        raise PlannerError(f"groups: must be a list of (root, members) pairs, got {groups!r}")
    if not groups:
        raise PlannerError("multiple multicast: no groups given")
    for k, group in enumerate(groups):
        if isinstance(group, str) or not isinstance(group, Sequence) or len(group) != 2:
            raise PlannerError(f"groups[{k}]: must be a (root, members) pair, got {group!r}")
    info = get_planner(method)
    if info.kind == "joint":
        return info.func(
            platform,
            groups,
            model,
            nbytes=nbytes,
            segment_size=segment_size,
            **info.known_options(options),
        )
    parts = [
        plan(
            platform,
            root,
            members,
            method=method,
            model=model,
            nbytes=nbytes,
            segment_size=segment_size,
            options=options,
        )
        for root, members in groups
    ]
    return Schedule.concurrent(parts, algorithm=method)


def applicable(
    collective: str, model_name: str, n_members: int, pipelined: bool | None = None
) -> list[str]:
    """Registered planners that are candidates for ``collective`` of ``n_members`` under the
    model, by the one rule of :meth:`PlannerInfo.unfit` (sorted by name; ``pipelined``:
    whether the message goes in several slices, None: either).

    Examples
    --------
    >>> applicable("bcast", "hockney", 8, pipelined=False)[:5]
    ['binomial', 'binomial_like', 'chain', 'flat', 'fnf']
    >>> "multi_tree" in applicable("bcast", "one_port", 8, pipelined=True)
    True
    >>> "optimal" in applicable("bcast", "tini", 8), "optimal" in applicable("bcast", "tini", 25)
    (True, False)
    """
    return [
        name
        for name, info in sorted(REGISTRY.items())
        if info.unfit(collective, model_name, n_members, pipelined) is None
    ]
