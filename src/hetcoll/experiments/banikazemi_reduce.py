"""The structure of Banikazemi et al.'s Sec. 7.2 for the rooted family: the factor of
improvement (FoI) over MPICH's binomial tree of a reduce and a gather planned for a
heterogeneous network of workstations, on the 64-node HNOW."""

from __future__ import annotations

from dataclasses import replace

from ..generators import two_class_tini
from ..planners import plan
from ..platform import Platform
from ..report import format_table
from ..rng import as_rng, spawn_seeds
from ..simulator import simulate
from ._base import Config, Result, experiment, run_trials
from .banikazemi import PAPER, SIM_T_BYTE, SIM_T_FAST

__all__ = ["reduce_foi"]

GAMMA_FAST = 4e-8  # combining 1 KiB on a fast node: about a tenth of its startup
SPEEDS = (2, 4, 6)
MEMBERS = (8, 16, 32, 64)
PLANNERS = ("binomial", "spoc", "fnf", "rooted_ls")
COLLECTIVES = ("reduce", "gather")


@experiment(
    "banikazemi-reduce",
    paper=f"{PAPER}, Sec. 7.2 (its structure, for reduce and gather)",
    summary="64-node HNOW: FoI over binomial of reduce and gather trees vs members",
)
def reduce_foi(config: Config) -> Result:
    """Reduce and gather of 1 KiB per member to a random root among ``m`` random members of
    the 64-node HNOW of Sec. 7.2.1 (25 % fast nodes, ``t_fast`` = 400 µs, speed factors 2,
    4, 6, 12.5 ns/B), with a combine cost per node (``gamma`` = 40 ns/B on a fast node,
    ``speed`` times that on a slow one: the paper's nodes have none, so without it a
    reduce is a gather).  The FoI of a planner is binomial's mean time over its own
    (``rooted_ls``: ours; ``spoc``, ``fnf``: the paper's trees run backwards).  Trials per
    point: ``--trials`` (default 20: 4 platforms x 5 member sets).
    """
    trials = config.trials or 20
    tasks, keys = [], []
    for collective in COLLECTIVES:
        for speed in SPEEDS:
            for m in MEMBERS:
                tasks.append((collective, speed, m, trials))
                keys.append((collective, speed, m))
    seeds = spawn_seeds(config.seed, len(tasks))
    means = run_trials(
        _point,
        [(*t, s) for t, s in zip(tasks, seeds, strict=True)],
        workers=config.workers,
        executor=config.executor,
        progress=config.progress,
        description="banikazemi-reduce",
        chunksize=1,
    )
    points = []
    for (collective, speed, m), latency in zip(keys, means, strict=True):
        base = latency["binomial"]
        points.append(
            {
                "collective": collective,
                "speed_factor": speed,
                "members": m,
                "latency": latency,
                "foi": {p: base / t for p, t in latency.items()},
            }
        )
    data = {
        "setup": {
            "nodes": 64,
            "fast_fraction": 0.25,
            "t_fast": SIM_T_FAST,
            "t_byte": SIM_T_BYTE,
            "gamma_fast": GAMMA_FAST,
            "nbytes": 1024,
            "trials": trials,
            "seed": config.seed,
        },
        "points": points,
    }
    return Result("banikazemi-reduce", data, [_table(points)], [])


def hnow(speed: float, seed) -> Platform:
    """The 64-node HNOW with combine costs: 16 fast nodes at random ranks."""
    p = two_class_tini(
        64, 0.25, t_fast=SIM_T_FAST, speed_factor=speed, t_byte=SIM_T_BYTE, seed=seed
    )
    fast = p.t_ini.min()
    nodes = tuple(replace(n, gamma=GAMMA_FAST * (1 if n.t_ini == fast else speed)) for n in p.nodes)
    return Platform(nodes, model="tini", name=f"hnow64 x{speed}")


def _point(task: tuple) -> dict:
    """Mean time of each planner over ``trials`` (platform, root, members) draws."""
    collective, speed, m, trials, seed = task
    rng = as_rng(seed)
    configs = max(1, min(4, trials))
    totals = dict.fromkeys(PLANNERS, 0.0)
    for k in range(trials):
        if k % max(1, trials // configs) == 0:
            platform = hnow(speed, rng)
        members = sorted(rng.choice(64, size=m, replace=False).tolist())
        root = platform.ids[int(rng.choice(members))]
        ids = [platform.ids[i] for i in members]
        for name in PLANNERS:
            sched = plan(platform, root, ids, method=name, collective=collective, nbytes=1024)
            totals[name] += simulate(platform, sched).makespan
    return {name: t / trials for name, t in totals.items()}


def _table(points: list[dict]) -> str:
    rows = [
        [
            p["collective"],
            p["speed_factor"],
            p["members"],
            f"{p['latency']['binomial'] * 1e3:.2f}",
            *(f"{p['foi'][name]:.2f}" for name in PLANNERS[1:]),
        ]
        for p in points
    ]
    return format_table(
        [
            "collective",
            "speed factor",
            "members",
            "binomial (ms)",
            "FoI spoc",
            "FoI fnf",
            "FoI rooted_ls",
        ],
        rows,
        title="64-node HNOW, 25 % fast, 1 KiB per member, combine 40 ns/B (fast) x speed "
        "(slow): factor of improvement over binomial",
    )
