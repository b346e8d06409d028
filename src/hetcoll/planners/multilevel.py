"""Multi-level (topology-aware) broadcasts: MagPIe, MPICH-G2 and MPICH-GX (Park et al. 2004).

A multi-level broadcast splits the members by the slowest level first: the source sends once
to a *coordinator* of every other group of that level, then every coordinator (the source
too) repeats inside its own group one level down, and so on to single processes.  The levels
come from :func:`hetcoll.levels.levels` (labels in the platform file, or inferred from the
latency matrix), each with its own algorithm:

=============  ==========================================  ===========================
planner        levels, slowest first                       algorithm per level
=============  ==========================================  ===========================
``magpie``     WAN (clusters), LAN (processes)             flat, binomial
``mpich-g2``   WAN (sites), LAN (clusters), intra-TCP      flat, binomial, binomial,
               (hosts), vendor MPI (processes)             binomial
``mpich-gx``   heavy-WAN (regions), light-WAN (sites),     HLOT, flat, binomial,
               LAN (clusters), intra-TCP, vendor MPI       binomial, binomial
=============  ==========================================  ===========================

A coordinator sends its upper-level messages before its lower-level ones ("communications
are performed based on the order of levels", Park et al. Sec. 2).  Coordinators: the source
in its own group; in every other group its lowest rank (``coordinator="lowest"``, MPICH-G2's
choice: the first process of each subjob) or the member with the lowest latency from the
sending coordinator (``coordinator="closest"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Literal

import numpy as np

from ..errors import PlannerError
from ..levels import Levels, levels
from ..platform import Platform
from ..schedule import Schedule
from ._common import Request, prepare, tree_schedule
from ._registry import Option, register
from ._trees import Matrices, children_from_parents, longest_first, matrices, tree_edges
from .classic import binomial_edges
from .latency import hlot_parents

__all__ = ["magpie", "mpich_g2", "mpich_gx", "multilevel_edges", "LEVEL_PLANS"]

Edges = list[tuple[int, int]]
SubAlgorithm = Callable[[Sequence[int], int, Matrices], Edges]

_OPTIONS = ("lan", "ratio", "light_wan", "coordinator")


def _rotate(members: Sequence[int], source: int) -> list[int]:
    ordered = sorted(members)
    k = ordered.index(source)
    return ordered[k:] + ordered[:k]


def _flat(members: Sequence[int], source: int, mats: Matrices) -> Edges:
    return [(source, m) for m in _rotate(members, source)[1:]]


def _binomial(members: Sequence[int], source: int, mats: Matrices) -> Edges:
    order = _rotate(members, source)
    return [(order[a], order[b]) for a, b in binomial_edges(len(order))]


def _hlot(members: Sequence[int], source: int, mats: Matrices) -> Edges:
    parent, join = hlot_parents(mats.delay_array, source, members)
    n = len(mats.delay)
    kids = longest_first(source, children_from_parents(n, parent, join), mats.delay, mats.busy)
    return tree_edges(source, kids)


ALGORITHMS: dict[str, SubAlgorithm] = {"flat": _flat, "binomial": _binomial, "hlot": _hlot}

#: planner -> ((level, algorithm among that level's coordinators), ...), slowest level first;
#: level None: the individual processes of the finest group.
LEVEL_PLANS: dict[str, tuple[tuple[str | None, str], ...]] = {
    "magpie": (("cluster", "flat"), (None, "binomial")),
    "mpich-g2": (
        ("site", "flat"),
        ("cluster", "binomial"),
        ("host", "binomial"),
        (None, "binomial"),
    ),
    "mpich-gx": (
        ("region", "hlot"),
        ("site", "flat"),
        ("cluster", "binomial"),
        ("host", "binomial"),
        (None, "binomial"),
    ),
}


def multilevel_edges(
    lv: Levels,
    plan: Sequence[tuple[str | None, str]],
    source: int,
    members: Sequence[int],
    mats: Matrices,
    coordinator: str = "lowest",
) -> Edges:
    """``(parent, child)`` index pairs of a multi-level broadcast, in each sender's order.

    ``plan`` lists ``(level, algorithm)`` pairs slowest first (see :data:`LEVEL_PLANS`);
    ``algorithm`` is ``flat``, ``binomial`` or ``hlot``.  O(N^2) at most (HLOT).
    """
    if coordinator not in ("lowest", "closest"):
        raise PlannerError(f"coordinator: must be 'lowest' or 'closest', got {coordinator!r}")
    edges: Edges = []
    delay = mats.delay_array

    def build(group: list[int], src: int, depth: int) -> None:
        level, algo = plan[depth]
        if level is None:
            edges.extend(ALGORITHMS[algo](group, src, mats))
            return
        lab = lv.labels(level)
        parts: dict[int, list[int]] = {}
        for m in group:
            parts.setdefault(lab[m], []).append(m)
        coords = []
        for part in parts.values():
            if src in part:
                coords.append(src)
            elif coordinator == "lowest":
                coords.append(part[0])
            else:
                coords.append(min(part, key=lambda m: (delay[src, m], m)))
        edges.extend(ALGORITHMS[algo](coords, src, mats))
        for part, c in zip(parts.values(), coords, strict=True):
            build(part, c, depth + 1)

    build(sorted(members), source, 0)
    return edges


def _plan(req: Request, name: str, opts: dict[str, Any]) -> Schedule:
    coordinator = opts.pop("coordinator", "lowest")
    kwargs = {k: v for k, v in opts.items() if v is not None}
    try:
        lv = levels(req.platform, matrix=np.asarray(req.bound.delay_matrix(0)), **kwargs)
    except ValueError as exc:
        raise PlannerError(f"{name}: {exc}") from None
    mats = matrices(req)
    edges = multilevel_edges(lv, LEVEL_PLANS[name], req.root, req.members, mats, coordinator)
    params = {k: v for k, v in {**kwargs, "coordinator": coordinator}.items()}
    params["groups"] = {
        level: len(lv.groups(level, req.members))
        for level, _ in LEVEL_PLANS[name]
        if level is not None
    }
    return tree_schedule(req, name, edges, **params)


_DOC_PARAMS = """
    Parameters
    ----------
    platform, root, members, model, nbytes, segment_size
        As for every planner (:func:`hetcoll.plan`).
    lan, ratio, light_wan : float, optional
        Level inference settings of :func:`hetcoll.levels.levels` (LAN/WAN boundary 1 ms,
        gap ratio 3, light-WAN threshold inferred); labels in the platform win.
    coordinator : {"lowest", "closest"}
        Coordinator of each group: its lowest rank (default) or the member closest to the
        coordinator that sends to it.

    Returns
    -------
    Schedule
        A tree; ``params["groups"]`` counts the groups found at each level.
"""


@register(
    "magpie",
    collectives=("bcast", "multicast"),
    paper="Kielmann et al., PPoPP 1999 (MagPIe); Park et al. 2004, Sec. 2",
    complexity="O(N^2) (level inference)",
    summary="two levels: flat tree to cluster coordinators, binomial inside clusters",
    models=("postal",),
    options=_OPTIONS,
)
def magpie(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    lan: Annotated[float, Option(kind="time", above=0)] | None = None,
    ratio: Annotated[float, Option(above=1)] | None = None,
    light_wan: Annotated[float, Option(kind="time")] | None = None,
    coordinator: Literal["lowest", "closest"] = "lowest",
) -> Schedule:
    """MagPIe's two-level broadcast: flat over the WAN, binomial inside each cluster.

    The root sends to one coordinator per other cluster, then every coordinator runs
    MPICH's binomial tree inside its cluster.
    {params}
    Notes
    -----
    Levels: clusters only (sites and regions are ignored).  Model: designed for WAN
    latencies far above LAN ones.  O(N^2) for the level inference, O(N) after.

    References
    ----------
    T. Kielmann, R. F. H. Hofman, H. E. Bal, A. Plaat & R. A. F. Bhoedjang, "MagPIe: MPI's
    Collective Communication Operations for Clustered Wide Area Systems", PPoPP 1999; Park et
    al., ICCSA 2004, Sec. 2.

    Examples
    --------
    >>> from hetcoll.generators import grid_platform
    >>> p = grid_platform(sites=2, clusters=1, procs=4, seed=0)
    >>> magpie(p, "s0c0p0").tree.children["s0c0p0"]
    ('s1c0p0', 's0c0p2', 's0c0p1')
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    opts = {"lan": lan, "ratio": ratio, "light_wan": light_wan, "coordinator": coordinator}
    return _plan(req, "magpie", opts)


@register(
    "mpich-g2",
    collectives=("bcast", "multicast"),
    paper="Karonis et al., IPDPS 2000 (MPICH-G2 levels); Park et al. 2004, Sec. 2 and 4",
    complexity="O(N^2) (level inference)",
    summary="four levels WAN/LAN/intra-TCP/vendor: flat across sites, binomial below",
    models=("postal",),
    options=_OPTIONS,
)
def mpich_g2(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    lan: Annotated[float, Option(kind="time", above=0)] | None = None,
    ratio: Annotated[float, Option(above=1)] | None = None,
    light_wan: Annotated[float, Option(kind="time")] | None = None,
    coordinator: Literal["lowest", "closest"] = "lowest",
) -> Schedule:
    """MPICH-G2's multi-level broadcast: flat over the WAN, binomial at every lower level.

    MPICH-G2's four levels mapped onto the platform: *WAN* = between sites (flat tree to one
    coordinator per site), *LAN* = between the clusters of a site (binomial among cluster
    coordinators), *intra-TCP* = between the hosts of a cluster (binomial among host
    coordinators; with no ``host`` labels every process is its own host), *vendor MPI* =
    inside a host (binomial).  The baseline of Park et al.'s evaluation ("MPICH-G2, based on
    the flat algorithm").
    {params}
    Notes
    -----
    O(N^2) for the level inference, O(N) after.

    References
    ----------
    N. Karonis, B. de Supinski, I. Foster, W. Gropp, E. Lusk & J. Bresnahan, "Exploiting
    hierarchy in parallel computer networks to optimize collective operation performance",
    IPDPS 2000; Park et al., ICCSA 2004, Sec. 2 and 4.
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    opts = {"lan": lan, "ratio": ratio, "light_wan": light_wan, "coordinator": coordinator}
    return _plan(req, "mpich-g2", opts)


@register(
    "mpich-gx",
    collectives=("bcast", "multicast"),
    paper="Park et al., ICCSA 2004, Sec. 3.3, Fig. 4 (MPICH-GX five levels)",
    complexity="O(N^2)",
    summary="five levels: HLOT on heavy WAN, flat on light WAN, binomial inside sites",
    models=("postal",),
    options=_OPTIONS,
)
def mpich_gx(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    lan: Annotated[float, Option(kind="time", above=0)] | None = None,
    ratio: Annotated[float, Option(above=1)] | None = None,
    light_wan: Annotated[float, Option(kind="time")] | None = None,
    coordinator: Literal["lowest", "closest"] = "lowest",
) -> Schedule:
    """MPICH-GX's five-level broadcast (Park et al. 2004, Sec. 3.3, Fig. 4).

    MPICH-G2's WAN level split in two: *heavy-WAN* between light-WAN regions, where HLOT
    (:func:`~hetcoll.planners.latency.hlot`) runs among the region coordinators and avoids
    the slowest links; *light-WAN* between the sites of one region (flat tree); then
    MPICH-G2's LAN, intra-TCP and vendor-MPI levels (binomial).
    {params}
    Notes
    -----
    Regions come from ``light_wan`` (the paper's explicit RSL parameter) or are inferred
    (:func:`hetcoll.levels.levels`; with no clear light band every site is its own region
    and HLOT spans all sites).  O(N^2).

    References
    ----------
    Park et al., "An Efficient Collective Communication Method for Grid Scale Networks",
    ICCSA 2004, Sec. 3.3, Fig. 4.
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    opts = {"lan": lan, "ratio": ratio, "light_wan": light_wan, "coordinator": coordinator}
    return _plan(req, "mpich-gx", opts)


for _f in (magpie, mpich_g2, mpich_gx):
    _f.__doc__ = _f.__doc__.replace("{params}", _DOC_PARAMS.rstrip() + "\n")
