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
:func:`hetcoll.allbounds.members_bound`, the hosts alone; from a few MiB the WAN cut, which their
per-root packing meets): no schedule of the operation is faster, so a ratio of 1 is
optimal.  The per-root planners of :data:`EVERY_NODE` plan on every node of a platform, so
they are n/a on ``two-site``.

- hetcoll's plans: ``auto`` (every applicable planner simulated, the fastest kept),
  ``forest`` (the optimal per-root packing; on ``two-site`` the hosts', the switches
  routing: :mod:`hetcoll.planners.forestmembers`), ``sites`` (``two-site`` only: each site's
  leader streams the WAN, :mod:`hetcoll.planners.sites`; ``site_pairs``, there too: every
  host crosses the WAN to its counterpart, :mod:`hetcoll.planners.sitepairs`),
  ``balanced`` (the butterfly with shares proportional to the bandwidths; allreduce only)
  and ``eff_cube`` (a hypercube embedded for the platform);
- MPI's algorithms, registered as planners: ``ring`` (MPICH's ring), ``rabenseifner``
  (reduce-scatter by recursive halving + allgather by doubling; allreduce), ``bruck``
  (allgather), ``blind`` (recursive doubling in rank order) and ``binomial`` (MPICH's
  binomial reduce or gather to rank 0, then a binomial broadcast).

Everything is simulated and deterministic: the same numbers on every run.
``config.params``: ``quick`` (the built-in star only, at 64 B and 64 KiB: the test
suite's size), or ``platforms`` (names of :data:`PLATFORMS`) and ``sizes`` (bytes, each a
multiple of 8 from 8 B to 256 MiB).

``measure`` (``hetcoll reproduce allreduce-star --measure``) also measures the same
figures under emulation (:func:`measure`): one MPI job of 8 ranks emulating ``star8``'s
NICs (model ``nic``: each rank's sending and receiving NIC paced through a token bucket,
every cost multiplied by :data:`TIME_SCALE` so that 8 ranks on 2 cores keep up) runs what
a default ``HetComm`` runs for each call (its choice among hetcoll's plans and MPI's
algorithm, named per size) beside MPI's algorithms run as schedules through the same
engine and emulation (:data:`MEASURED`: the baselines above and MPICH's own selection,
``mpi``; MPI's own library cannot be emulated), the algorithms in turn and in alternating
order round by round (a round: one call each, 20 up to 1 MiB, where a call lasts
milliseconds and a busy host's noise is of their order).  Each measured time (the least
call, divided by the time scale) over the bound is shown next to its simulated time over
the bound, and the paired speed-up of the default over the fastest MPI algorithm of each
round (its median and range over the rounds); sizes up to 64 MiB (default
:data:`MEASURE_SIZES`).
"""

from __future__ import annotations

import os
from statistics import median
from typing import Any

from ..errors import ArgumentError
from ..generators import hosts, multisite_platform, star_platform
from ..jobs.spec import DEFAULT
from ..platform import Platform, load_platform
from ..report import format_table
from ..units import format_size, format_time
from ._base import Config, Result, experiment, run_trials

__all__ = [
    "COLLECTIVES",
    "HETCOLL",
    "BASELINES",
    "MEASURED",
    "MEASURE_SIZES",
    "PLATFORMS",
    "SIZES",
    "TIME_SCALE",
    "allreduce_star",
    "measure",
    "measure_runs",
    "measured_points",
    "measured_table",
    "platform",
    "point",
]

PAPER = "Zhao et al. 2024 (ForestColl); Zhao & Krishnamurthy 2023 (the bounds)"
COLLECTIVES = ("allreduce", "allgather")
#: hetcoll's plans, per collective
HETCOLL = {
    "allreduce": (
        "auto",
        "forest",
        "sites",
        "site_pairs",
        "site_exchange",
        "balanced",
        "eff_cube",
    ),
    "allgather": ("auto", "forest", "sites", "site_pairs", "eff_cube"),
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
EVERY_NODE = ("balanced", "ring", "rabenseifner", "bruck")
#: the planners of a multi-site platform's hosts only: n/a on the stars
SITES_ONLY = ("sites", "site_pairs", "site_exchange")
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
    platform's hosts alone: :data:`EVERY_NODE` on ``two-site``; or only there:
    :data:`SITES_ONLY` on the stars)."""
    from ..allbounds import collective_bound
    from ..compare import plan_request
    from ..simulator import simulate

    name, collective, m = task
    p = platform(name)
    members = hosts(p) if name == "two-site" else None
    each = m if collective == "allreduce" else m // len(members or p)
    if members is None:
        found = collective_bound(p, collective, m)
    else:
        found = _members_bound(p, collective, m, members)
    times: dict[str, float | None] = {}
    for algo in _planners(collective):
        if algo in (EVERY_NODE if members is not None else SITES_ONLY):
            times[algo] = None
            continue
        per_root = collective == "allreduce" and algo in (
            "forest",
            "sites",
            "site_pairs",
            "site_exchange",
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
        "steady": found.packing if found.trees else None,
        "times": times,
    }


def _members_bound(p, collective: str, m: int, members: list[str]):
    """:func:`hetcoll.allbounds.members_bound` with the hosts' steady-state packing, or
    without it where its LP does not solve."""
    from ..allbounds import members_bound
    from ..errors import PlannerError

    try:
        return members_bound(p, collective, m, members, packing=True)
    except PlannerError:
        return members_bound(p, collective, m, members)


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
    if params.get("measure") and "sizes" in params:
        _check_measured(tuple(sizes))
    return names, tuple(int(m) for m in sizes)


@experiment(
    "allreduce-star",
    paper=PAPER,
    summary="stars of 2 and 3 NIC speeds: allreduce and allgather time / lower bound vs size",
    takes=("sizes", "measure"),
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
    if config.params.get("measure"):
        found = measure(tuple(config.params.get("sizes", MEASURE_SIZES)))
        data["measured"] = found
        tables += [
            measured_table(found["points"], c, _measured_title(found, c)) for c in COLLECTIVES
        ]
    return Result("allreduce-star", data, tables, ["allreduce-star"])


def table(points: list[dict[str, Any]], name: str, collective: str) -> str:
    """One platform's and collective's table: the lower bound's time per size, then each
    row time / bound (the bound's own row 1; ``steady-state``: the per-root packing's
    steady-state time with the whole vector as its message, no per-message latency
    beyond its one, which can be far below a finite message's bound)."""
    rows = [p for p in points if p["platform"] == name and p["collective"] == collective]
    body = [
        ["lower bound (time)", *(format_time(p["bound"]) for p in rows)],
        ["bound", *("1.000" for _ in rows)],
        ["steady-state", *(_ratio(p.get("steady"), p["bound"]) for p in rows)],
    ]
    for algo in _planners(collective):
        mark = "" if algo in HETCOLL[collective] else " (MPI)"
        body.append([algo + mark, *(_ratio(p["times"][algo], p["bound"]) for p in rows)])
    return format_table(
        ["time / bound", *(format_size(p["M"]) for p in rows)],
        body,
        title=f"{collective} on {name} ({PLATFORMS[name]}), simulated; M = the whole "
        "result; (MPI): MPICH's algorithm as a planner; n/a: plans on every node, not on "
        "the hosts alone (sites: on the hosts of several sites only)",
    )


def _ratio(time: float | None, bound: float) -> str:
    return "n/a" if time is None else f"{time / bound:.3f}"


# -- measured under emulation (``measure``) ---------------------------------------------------

#: what runs beside the default wrapper when measured: MPI's algorithms as registered
#: planners (:data:`BASELINES`) and MPICH's own selection through the engine (``mpi``)
MEASURED = {c: (*BASELINES[c], "mpi") for c in COLLECTIVES}
#: the platform measured, on as many ranks as it has nodes
MEASURED_PLATFORM = "star8"
#: result sizes measured by default (a 64 MiB point takes minutes of emulated calls)
MEASURE_SIZES = (8, 64 << 10, 1 << 20, 16 << 20)
#: the largest result size measured
MEASURE_MAX = 64 << 20
#: every cost of the emulation multiplied by this: 8 ranks on 2 cores keep up with it
TIME_SCALE = 100.0
#: up to this result size a call lasts milliseconds, which a busy host's noise can double:
#: each round measures the least of more calls (``repeat_small``)
SMALL = 1 << 20


def measure_runs(
    sizes: tuple[int, ...],
    *,
    rounds: int,
    repeat: int,
    time_scale: float,
    timeout: float,
    repeat_small: int | None = None,
) -> tuple[list[Any], list[tuple[str, int]]]:
    """The job's runs (one per collective and result size ``M``) and their ``(collective,
    M)``: the default wrapper beside :data:`MEASURED` on :data:`MEASURED_PLATFORM`,
    ``repeat`` calls per round, ``repeat_small`` (default ``repeat``) up to :data:`SMALL`."""
    from ..jobs import Run

    p = platform(MEASURED_PLATFORM)
    runs, cases = [], []
    for collective in COLLECTIVES:
        for m in sizes:
            each = m if collective == "allreduce" else m // len(p)
            runs.append(
                Run(
                    p,
                    collective,
                    DEFAULT,
                    baselines=BASELINES[collective],  # and "mpi": native=True, emulated
                    native=True,
                    sizes=(each,),
                    repeat=repeat if m > SMALL or repeat_small is None else repeat_small,
                    rounds=rounds,
                    time_scale=time_scale,
                    timeout=timeout,
                )
            )
            cases.append((collective, m))
    return runs, cases


def measured_points(
    cases: list[tuple[str, int]], result: dict[str, Any], bounds: dict[tuple[str, int], float]
) -> list[dict[str, Any]]:
    """One point per ``(collective, M)`` of ``cases`` from the job's ``result``
    (:func:`hetcoll.jobs.launch`'s): per algorithm (``default`` first, then
    :data:`MEASURED`) the measured time (the least call) and the predicted one in model
    seconds (divided by the time scale), how late the ranks ran in the least call, each
    round's least (seconds as measured); ``chosen``, the plan the default ran; ``bound``
    from ``bounds``; per round the fastest MPI algorithm (``best``) and its time over the
    default's (``speedup``), paired."""
    from ..jobs import entries

    points = []
    for (collective, m), run in zip(cases, result["runs"], strict=True):
        (doc,) = run["documents"]
        scale = doc["time_scale"]
        found = {e["algorithm"]: e for e in entries(doc)}
        names = (DEFAULT, *MEASURED[collective])
        mine = found[DEFAULT]["per_round"]
        best, speedup = [], []
        for k, t in enumerate(mine):
            fastest = min(MEASURED[collective], key=lambda a: found[a]["per_round"][k])
            best.append(fastest)
            speedup.append(found[fastest]["per_round"][k] / t)
        pred = {a: found[a]["predicted_time"] for a in names}
        points.append(
            {
                "platform": MEASURED_PLATFORM,
                "collective": collective,
                "M": m,
                "time_scale": scale,
                "bound": bounds[collective, m],
                "chosen": found[DEFAULT]["chosen"],
                "times": {a: found[a]["measured_time"] / scale for a in names},
                "predicted": {a: None if pred[a] is None else pred[a] / scale for a in names},
                "late": {a: found[a]["late"] / scale for a in names},
                "per_round": {a: found[a]["per_round"] for a in names},
                "best": best,
                "speedup": speedup,
            }
        )
    return points


def speedup_summary(point: dict[str, Any]) -> str:
    """The paired speed-up of a measured point: ``median [min-max]`` over its rounds."""
    s = point["speedup"]
    return f"{median(s):.2f} [{min(s):.2f}-{max(s):.2f}]"


def measured_table(points: list[dict[str, Any]], collective: str, title: str = "") -> str:
    """One collective's measured points: per algorithm and size its measured time over
    the bound and, in brackets, its simulated one; the plan the default ran; the paired
    speed-up of the default over the fastest MPI algorithm of each round."""
    rows = [p for p in points if p["collective"] == collective]
    body = [
        ["lower bound (time)", *(format_time(p["bound"]) for p in rows)],
        ["default ran", *(p["chosen"] for p in rows)],
    ]
    for algo in (DEFAULT, *MEASURED[collective]):
        label = algo if algo == DEFAULT else f"{algo} (MPI)"
        body.append([label, *(_both(p, algo) for p in rows)])
    body.append(["fastest MPI / default", *(speedup_summary(p) for p in rows)])
    return format_table(
        ["measured (simulated) / bound", *(format_size(p["M"]) for p in rows)],
        body,
        title=title
        or f"{collective} on {MEASURED_PLATFORM}, measured under emulation; default: what a "
        "default HetComm runs; (MPI): MPICH's algorithm run by the same engine; last row: "
        "paired per round, median [min-max]",
    )


def _measured_title(found: dict[str, Any], collective: str) -> str:
    load = "load average {:.1f} before, {:.1f} after".format(*found["load_average"])
    return (
        f"{collective} on {found['platform']}, measured under emulation "
        f"(x{found['time_scale']:g}, {found['ranks']} ranks, {found['rounds']} rounds of "
        f"{found['repeat']} call(s), {found['repeat_small']} up to {format_size(SMALL)}, "
        f"{load}); default: what a default HetComm runs; (MPI): MPICH's algorithm run by "
        "the same engine; last row: paired per round, median [min-max]"
    )


def _both(point: dict[str, Any], algo: str) -> str:
    pred = point["predicted"][algo]
    sim = "n/a" if pred is None else f"{pred / point['bound']:.3f}"
    return f"{point['times'][algo] / point['bound']:.3f} ({sim})"


def measure(
    sizes: tuple[int, ...] = MEASURE_SIZES,
    *,
    rounds: int = 3,
    repeat: int = 1,
    repeat_small: int = 20,
    time_scale: float = TIME_SCALE,
    timeout: float = 7200.0,
) -> dict[str, Any]:
    """Measure :data:`MEASURED_PLATFORM` under emulation (module doc): one job of 8 ranks,
    ``rounds`` rounds of ``repeat`` calls (``repeat_small`` up to :data:`SMALL`);
    ``{"platform", "ranks", "rounds", "repeat", "repeat_small", "time_scale",
    "load_average": [before, after], "points": [...]}`` (:func:`measured_points`)."""
    from ..allbounds import collective_bound
    from ..jobs import launch

    _check_measured(sizes)
    p = platform(MEASURED_PLATFORM)
    runs, cases = measure_runs(
        sizes,
        rounds=rounds,
        repeat=repeat,
        repeat_small=repeat_small,
        time_scale=time_scale,
        timeout=timeout,
    )
    bounds = {(c, m): collective_bound(p, c, m).lower_bound for c, m in cases}
    before = os.getloadavg()[0]
    result = launch(runs, len(p), timeout=timeout)
    after = os.getloadavg()[0]
    return {
        "platform": MEASURED_PLATFORM,
        "ranks": len(p),
        "rounds": rounds,
        "repeat": repeat,
        "repeat_small": repeat_small,
        "time_scale": time_scale,
        "load_average": [before, after],
        "versions": result["versions"],
        "points": measured_points(cases, result, bounds),
    }


def _check_measured(sizes: tuple[int, ...]) -> None:
    for m in sizes:
        if m > MEASURE_MAX:
            raise ArgumentError(
                f"sizes: measured up to {format_size(MEASURE_MAX)} (emulated calls of "
                f"{format_size(m)} take too long), got {m}"
            )
