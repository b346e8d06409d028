"""Allreduce and allgather on stars of NICs with two and three speeds: every plan's
simulated time over the lower bound, by message size (``hetcoll reproduce
allreduce-star``).

The setting of the bandwidth-optimal collectives (ForestColl, Zhao et al. 2024; the cut
bound of Zhao & Krishnamurthy 2023): one non-blocking switch whose nodes have full-duplex
NICs of a few speeds (model ``nic``), where MPICH's ring and recursive doubling ignore the
unequal NICs.  On the built-in ``star8`` (4 NICs at 25 Gbit/s, 4 at 10 Gbit/s, 5 us each),
an 8-node star of 100/25/10 Gbit/s NICs (3, 3 and 2 nodes) and two 4-node stars of 25/10
Gbit/s NICs joined by a WAN link of 1 ms and 5 Gbit/s (``two-site``:
:func:`hetcoll.generators.multisite_platform`, a link graph under ``hockney`` with shared
links; its 8 hosts are the members, its switches route), for result sizes ``M`` of 8 B to
256 MiB (an allreduce's vector; an allgather's result, ``M / 8`` per node), every planner
below is planned and simulated, and its time divided by the lower bound of
:func:`hetcoll.allbounds.collective_bound` (``hetcoll optimum --op``; on ``two-site``
:func:`hetcoll.allbounds.members_bound`, the hosts alone): no schedule of the operation is
faster, so a ratio of 1 is optimal.  The per-root planners (:data:`EVERY_NODE`) plan on
every node of a platform, so they are n/a on ``two-site``.

- hetcoll's plans: ``auto`` (every applicable planner simulated, the fastest kept),
  ``forest`` (the optimal per-root packing), ``balanced`` (the butterfly with shares
  proportional to the bandwidths; allreduce only) and ``eff_cube`` (a hypercube embedded
  for the platform);
- MPI's algorithms, registered as planners: ``ring`` (MPICH's ring), ``rabenseifner``
  (reduce-scatter by recursive halving + allgather by doubling; allreduce), ``bruck``
  (allgather), ``blind`` (recursive doubling in rank order) and ``binomial`` (MPICH's
  binomial reduce or gather to rank 0, then a binomial broadcast).

Everything is simulated and deterministic: the same numbers on every run.
``config.params``: ``quick`` (the built-in star only, at 64 B and 64 KiB: the test
suite's size), or ``platforms`` (names of :data:`PLATFORMS`) and ``sizes`` (bytes, each a
multiple of 8 from 8 B to 256 MiB).
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ..generators import hosts, multisite_platform, star_platform
from ..platform import Platform, load_platform
from ..report import format_table
from ..units import format_size, format_time
from ._base import Config, Result, experiment, run_trials

__all__ = [
    "COLLECTIVES",
    "HETCOLL",
    "BASELINES",
    "PLATFORMS",
    "SIZES",
    "allreduce_star",
    "platform",
    "point",
]

PAPER = "Zhao et al. 2024 (ForestColl); Zhao & Krishnamurthy 2023 (the bounds)"
COLLECTIVES = ("allreduce", "allgather")
#: hetcoll's plans, per collective
HETCOLL = {
    "allreduce": ("auto", "forest", "balanced", "eff_cube"),
    "allgather": ("auto", "forest", "eff_cube"),
}
#: MPI's algorithms as registered planners, per collective
BASELINES = {
    "allreduce": ("ring", "rabenseifner", "blind", "binomial"),
    "allgather": ("ring", "bruck", "blind", "binomial"),
}
#: the platforms by name: (description, how to build it)
PLATFORMS = {
    "star8": "built-in star8: 4 NICs at 25 Gbit/s, 4 at 10 Gbit/s, 5 us each",
    "star8-3speeds": "8-node star: 3 NICs at 100 Gbit/s, 3 at 25, 2 at 10, 5 us each",
    "two-site": "two 4-node stars of 25/10 Gbit/s NICs (5 us) joined by a 1 ms, 5 Gbit/s WAN",
}
#: the two-site platform's WAN link: latency, bandwidth
WAN = ("1ms", "5Gbps")
#: the planners that plan on every node of a platform (not on a multi-site platform's hosts
#: alone, its switches routing): n/a on ``two-site``
EVERY_NODE = ("forest", "balanced", "ring", "rabenseifner", "bruck")
#: result sizes M: 8 B to 256 MiB, a factor 8 apart, and 256 MiB
SIZES = (*(8 * 8**k for k in range(9)), 256 << 20)
QUICK = {"platforms": ("star8",), "sizes": (64, 64 << 10)}
#: a per-root planner's shares and segments in whole elements of an allreduce (int64)
ELEMENT = 8


def platform(name: str) -> Platform:
    """The platform called ``name`` in :data:`PLATFORMS`."""
    if name == "star8":
        return load_platform("star8")
    if name == "star8-3speeds":
        return star_platform(8, ("100Gbps", "25Gbps", "10Gbps"), "5us", name=name)
    if name == "two-site":
        site = star_platform(4, ("25Gbps", "10Gbps"), "5us")
        return multisite_platform({"a": site, "b": site}, [("a", "b", *WAN)], name=name)
    raise ArgumentError(
        f"platforms: unknown platform {name!r}; choose from: {', '.join(PLATFORMS)}"
    )


def _planners(collective: str) -> tuple[str, ...]:
    return HETCOLL[collective] + BASELINES[collective]


def point(task: tuple[str, str, int]) -> dict[str, Any]:
    """``(platform name, collective, M)``: the lower bound (and the optimum where known)
    and every planner's simulated time (seconds; None where it does not plan on the
    platform's hosts alone: :data:`EVERY_NODE` on ``two-site``)."""
    from ..allbounds import collective_bound, members_bound
    from ..compare import plan_request
    from ..simulator import simulate

    name, collective, m = task
    p = platform(name)
    members = hosts(p) if name == "two-site" else None
    each = m if collective == "allreduce" else m // len(members or p)
    if members is None:
        found = collective_bound(p, collective, m)
    else:
        found = members_bound(p, collective, m, members)
    times: dict[str, float | None] = {}
    for algo in _planners(collective):
        if members is not None and algo in EVERY_NODE:
            times[algo] = None
            continue
        per_root = collective == "allreduce" and algo in (
            "forest",
            "balanced",
            "ring",
            "rabenseifner",
        )
        sched = plan_request(
            p,
            collective,
            algo,
            members=members,
            nbytes=each,
            options={"align": ELEMENT} if per_root else None,
        )
        times[algo] = simulate(p, sched).makespan
    return {
        "platform": name,
        "collective": collective,
        "M": m,
        "bound": found.lower_bound,
        "optimum": found.optimum,
        "times": times,
    }


def _params(params: dict[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The platforms and sizes ``params`` ask for, checked."""
    base = QUICK if params.get("quick") else {"platforms": tuple(PLATFORMS), "sizes": SIZES}
    names = tuple(params.get("platforms", base["platforms"]))
    sizes = tuple(params.get("sizes", base["sizes"]))
    if not names or not sizes:
        raise ArgumentError("allreduce-star: give at least one platform and one size")
    for name in names:
        if name not in PLATFORMS:
            raise ArgumentError(
                f"platforms: unknown platform {name!r}; choose from: {', '.join(PLATFORMS)}"
            )
    for m in sizes:
        whole = isinstance(m, int | float) and not isinstance(m, bool) and float(m).is_integer()
        if not whole or not 8 <= m <= SIZES[-1] or m % 8:
            raise ArgumentError(
                f"sizes: each a multiple of 8 bytes from 8 B to 256 MiB (whole int64 "
                f"elements, whole blocks of 8 nodes), got {m!r}"
            )
    return names, tuple(int(m) for m in sizes)


@experiment(
    "allreduce-star",
    paper=PAPER,
    summary="stars of 2 and 3 NIC speeds: allreduce and allgather time / lower bound vs size",
    takes=("sizes",),
)
def allreduce_star(config: Config) -> Result:
    """Every planner's simulated time over the lower bound (module docstring)."""
    names, sizes = _params(config.params)
    tasks = [(name, c, m) for name in names for c in COLLECTIVES for m in sizes]
    points = run_trials(
        point,
        tasks,
        workers=config.workers,
        progress=config.progress,
        description="allreduce-star",
        executor=config.executor,
        chunksize=1,
    )
    data = {
        "setup": {
            "platforms": {name: PLATFORMS[name] for name in names},
            "sizes": list(sizes),
            "hetcoll": {c: list(HETCOLL[c]) for c in COLLECTIVES},
            "baselines": {c: list(BASELINES[c]) for c in COLLECTIVES},
        },
        "points": points,
    }
    tables = [table(points, name, c) for name in names for c in COLLECTIVES]
    return Result("allreduce-star", data, tables, ["allreduce-star"])


def table(points: list[dict[str, Any]], name: str, collective: str) -> str:
    """One platform's and collective's table: the lower bound's time per size, then each
    row time / bound (the bound's own row 1)."""
    rows = [p for p in points if p["platform"] == name and p["collective"] == collective]
    body = [
        ["lower bound (time)", *(format_time(p["bound"]) for p in rows)],
        ["bound", *("1.000" for _ in rows)],
    ]
    for algo in _planners(collective):
        mark = "" if algo in HETCOLL[collective] else " (MPI)"
        body.append([algo + mark, *(_ratio(p["times"][algo], p["bound"]) for p in rows)])
    return format_table(
        ["time / bound", *(format_size(p["M"]) for p in rows)],
        body,
        title=f"{collective} on {name} ({PLATFORMS[name]}), simulated; M = the whole "
        "result; (MPI): MPICH's algorithm as a planner; n/a: plans on every node, not on "
        "the hosts alone",
    )


def _ratio(time: float | None, bound: float) -> str:
    return "n/a" if time is None else f"{time / bound:.3f}"
