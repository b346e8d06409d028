"""Beaumont, Marchal & Robert, "Broadcast Trees for Heterogeneous Platforms" (LIP RR-2004-46,
2004), Sec. 5: each heuristic's pipelined throughput relative to the optimal multi-tree
throughput, on random platforms (Fig. 4 one-port, Fig. 5 multi-port) and TIERS-like ones
(Table 3).

The optimum is the corrected LP (2), solved as an arborescence packing
(:func:`hetcoll.planners.steady.pack_arborescences`, certified by its dual bound; a time
limit per solve, instances over it are counted and left out).  A heuristic's throughput is
the simulator's (:attr:`Prediction.throughput`: the busiest resource of its one-slice
program, which for a pipelined tree is the closed form of Sec. 3.1 / 3.2, tested against a
long simulated run).  ``multi_tree`` is measured in ``benchmarks/simulated/bench_pipelined.py``
(its steady state needs long simulated runs).

The default grid is CI-sized (at most 30 nodes, a few trials); ``{"full": true}`` in the
parameters (``hetcoll reproduce beaumont-fig4 --full``) runs the paper's: sizes 10-50,
densities 0.04-0.20, 10 platforms per point, 100 TIERS platforms of 30 and of 65 nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import HetcollError
from ..generators import random_graph_platform, tiers_platform
from ..planners import plan
from ..planners.steady import pack_arborescences, steady_problem
from ..report import format_table
from ..rng import spawn_seeds
from ..simulator import simulate
from ._base import Config, Result, experiment, run_trials

__all__ = ["ONE_PORT", "MULTI_PORT", "PAPER_FIG4", "PAPER_TABLE3", "FULL", "grid_platforms"]

PAPER = "Beaumont, Marchal & Robert 2004 (LIP RR-2004-46)"
SLICE = 10**6
#: one-port planners of Fig. 4 and Table 3 (the paper's), then ours
ONE_PORT = (
    "prune_simple",
    "prune_degree",
    "grow_tree",
    "lp_prune",
    "lp_grow",
    "binomial_graph",
    "throughput_tree",
)
#: Fig. 5 (multi-port), then ours
MULTI_PORT = (
    "grow_tree_multiport",
    "prune_degree_multiport",
    "lp_grow",
    "lp_prune",
    "binomial_graph",
    "throughput_tree",
)
#: what Sec. 5.2.1 says of Fig. 4 at 40-50 nodes (relative performance; the figure's curves
#: are not printed in the text): "within 70 %", "60 %", "falls down to 20 %", binomial "very
#: poor" (Table 3: 5-11 %)
PAPER_FIG4 = {
    "prune_degree": 0.70,
    "grow_tree": 0.70,
    "lp_prune": 0.60,
    "lp_grow": 0.60,
    "prune_simple": 0.20,
    "binomial_graph": 0.08,
}
#: Table 3 (TIERS, one-port): mean relative performance at 30 and 65 nodes
PAPER_TABLE3 = {
    30: {
        "prune_simple": 0.46,
        "prune_degree": 0.82,
        "grow_tree": 0.75,
        "lp_grow": 0.82,
        "lp_prune": 0.82,
        "binomial_graph": 0.11,
    },
    65: {
        "prune_simple": 0.30,
        "prune_degree": 0.73,
        "grow_tree": 0.71,
        "lp_grow": 0.73,
        "lp_prune": 0.74,
        "binomial_graph": 0.05,
    },
}

SMALL = {"sizes": [10, 20, 30], "densities": [0.08, 0.12, 0.2], "trials": 3, "tiers": [30]}
FULL = {
    "sizes": [10, 20, 30, 40, 50],
    "densities": [0.04, 0.08, 0.12, 0.16, 0.20],
    "trials": 10,
    "tiers": [30, 65],
    "tiers_trials": 100,
}
KNOWN = {"full", "sizes", "densities", "trials", "tiers", "tiers_trials", "time_limit"}


def _params(config: Config, name: str) -> dict[str, Any]:
    unknown = sorted(set(config.params) - KNOWN)
    if unknown:
        raise HetcollError(
            f"{name}: unknown parameter {unknown[0]!r} (expected: {', '.join(sorted(KNOWN))})"
        )
    base = dict(FULL if config.params.get("full") else SMALL)
    base.setdefault("tiers_trials", base["trials"])
    base["time_limit"] = 120.0
    base.update({k: v for k, v in config.params.items() if k != "full"})
    if config.trials is not None:
        base["trials"] = base["tiers_trials"] = config.trials
    return base


# -- one trial: a pure function of (seed, params) ----------------------------------------------


def _trial(task: tuple[int, str, int, float, str, tuple[str, ...], float]) -> dict[str, Any]:
    """Ratios to the one-port optimum of every planner on one generated platform."""
    seed, kind, n, density, model, planners, limit = task
    if kind == "tiers":
        p = tiers_platform(n, seed=seed, model=model)
    else:
        p = random_graph_platform(n, density, seed=seed, model=model)
    root = p.ids[0]
    pack = pack_arborescences(steady_problem(p, root, SLICE, "one_port"), time_limit=limit)
    if pack.gap > 1e-6:
        return {"timeout": True}
    best = pack.throughput * SLICE
    out = {}
    for name in planners:
        s = plan(p, root, method=name, nbytes=SLICE, segment_size=SLICE)
        out[name] = simulate(p, s).throughput / best
    return {"timeout": False, "ratios": out, "density": len(p.links) / (n * (n - 1) / 2)}


def _summarise(rows: list[dict[str, Any]], planners: tuple[str, ...]) -> dict[str, Any]:
    ok = [r for r in rows if not r["timeout"]]
    stats = {}
    for name in planners:
        vals = np.array([r["ratios"][name] for r in ok]) if ok else np.zeros(0)
        stats[name] = {
            "mean": float(vals.mean()) if len(vals) else None,
            "std": float(vals.std()) if len(vals) else None,
            "min": float(vals.min()) if len(vals) else None,
        }
    density = float(np.mean([r["density"] for r in ok])) if ok else None
    return {
        "trials": len(rows),
        "timeouts": len(rows) - len(ok),
        "stats": stats,
        "measured_density": density,
    }


def grid_platforms(sizes, densities, trials: int, seed: int = 0) -> list[tuple[int, float, int]]:
    """The random platforms of the Fig. 4 / Fig. 5 grid as ``(n, density, platform_seed)``,
    ``trials`` per point, in the experiment's order: ``random_graph_platform(n, density,
    seed=platform_seed)`` is the platform that ``hetcoll reproduce beaumont-fig4 --seed
    seed`` uses (so a benchmark can revisit exactly those platforms)."""
    cases = [(n, d) for n in sizes for d in densities]
    return [
        (n, d, s)
        for (n, d), cs in zip(cases, spawn_seeds(seed, len(cases)), strict=True)
        for s in spawn_seeds(cs, trials)
    ]


def _grid(config: Config, params, model: str, planners, label: str):
    """Every (size, density) point: the summaries by size (all densities) and by density."""
    cases = [(n, d) for n in params["sizes"] for d in params["densities"]]
    tasks = [
        (s, "random", n, d, model, planners, params["time_limit"])
        for n, d, s in grid_platforms(
            params["sizes"], params["densities"], params["trials"], config.seed
        )
    ]
    out = run_trials(
        _trial,
        tasks,
        workers=config.workers,
        progress=config.progress,
        description=label,
        executor=config.executor,
    )
    t = params["trials"]
    by_case = {case: out[i * t : (i + 1) * t] for i, case in enumerate(cases)}
    by_size = [
        {
            "n": n,
            **_summarise([r for (m, _), rs in by_case.items() if m == n for r in rs], planners),
        }
        for n in params["sizes"]
    ]
    by_density = [
        {
            "density": d,
            **_summarise([r for (_, e), rs in by_case.items() if e == d for r in rs], planners),
        }
        for d in params["densities"]
    ]
    return by_size, by_density


def _table(points, key: str, planners, title: str, paper: dict[str, float] | None = None) -> str:
    rows = []
    for pt in points:
        rows.append(
            [pt[key], pt["trials"] - pt["timeouts"]]
            + [_pct(pt["stats"][name]["mean"]) for name in planners]
        )
    if paper:
        rows.append(["paper", ""] + [_pct(paper.get(name)) for name in planners])
    return format_table([key, "platforms", *planners], rows, title=title)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.0f}%"


@experiment(
    "beaumont-fig4",
    paper=f"{PAPER}, Fig. 4",
    summary="one-port heuristics / optimal multi-tree throughput vs platform size and density",
)
def fig4(config: Config) -> Result:
    """Fig. 4: relative throughput of the one-port heuristics on random platforms (Table 2),
    (a) against the number of nodes (all densities) and (b) against the density (all
    sizes)."""
    params = _params(config, "beaumont-fig4")
    by_size, by_density = _grid(config, params, "one_port", ONE_PORT, "fig. 4")
    data = {
        "experiment": "beaumont-fig4",
        "paper": f"{PAPER}, Fig. 4",
        "params": params,
        "seed": config.seed,
        "planners": list(ONE_PORT),
        "model": "one_port",
        "by_size": by_size,
        "by_density": by_density,
        "paper_values": PAPER_FIG4,
    }
    tables = [
        _table(
            by_size,
            "n",
            ONE_PORT,
            "Fig. 4(a): throughput / optimal multi-tree throughput, one-port, by size "
            "(mean over densities; paper: its text at 40-50 nodes)",
            PAPER_FIG4,
        ),
        _table(
            by_density,
            "density",
            ONE_PORT,
            "Fig. 4(b): by density (mean over sizes)",
        ),
    ]
    return Result("beaumont-fig4", data, tables, figures=["beaumont-fig4"])


@experiment(
    "beaumont-fig5",
    paper=f"{PAPER}, Fig. 5",
    summary="multi-port heuristics / one-port optimum vs platform size",
)
def fig5(config: Config) -> Result:
    """Fig. 5: multi-port throughput of the heuristics (send_u = 0.8 min T_uv) relative to
    the one-port optimum, against the number of nodes (ratios above 1 are expected: the
    multi-port model is less constrained)."""
    params = _params(config, "beaumont-fig5")
    by_size, by_density = _grid(config, params, "multi_port", MULTI_PORT, "fig. 5")
    data = {
        "experiment": "beaumont-fig5",
        "paper": f"{PAPER}, Fig. 5",
        "params": params,
        "seed": config.seed,
        "planners": list(MULTI_PORT),
        "model": "multi_port",
        "by_size": by_size,
        "by_density": by_density,
        "paper_values": {"binomial_graph": None, "grow_tree_multiport": 1.0},
    }
    tables = [
        _table(
            by_size,
            "n",
            MULTI_PORT,
            "Fig. 5: multi-port throughput / one-port optimum, by size (paper: the adapted "
            "growing tree is much better than binomial; ratios above 1 occur)",
        )
    ]
    return Result("beaumont-fig5", data, tables, figures=["beaumont-fig5"])


@experiment(
    "beaumont-table3",
    paper=f"{PAPER}, Table 3",
    summary="one-port heuristics / optimum on TIERS-like platforms of 30 and 65 nodes",
)
def table3(config: Config) -> Result:
    """Table 3: the one-port heuristics on TIERS-like hierarchical platforms."""
    params = _params(config, "beaumont-table3")
    sizes = params["tiers"]
    seeds = spawn_seeds(config.seed, len(sizes))
    t = params["tiers_trials"]
    tasks = [
        (s, "tiers", n, 0.0, "one_port", ONE_PORT, params["time_limit"])
        for n, ns in zip(sizes, seeds, strict=True)
        for s in spawn_seeds(ns, t)
    ]
    out = run_trials(
        _trial,
        tasks,
        workers=config.workers,
        progress=config.progress,
        description="table 3",
        executor=config.executor,
    )
    points = [
        {"n": n, **_summarise(out[i * t : (i + 1) * t], ONE_PORT)} for i, n in enumerate(sizes)
    ]
    data = {
        "experiment": "beaumont-table3",
        "paper": f"{PAPER}, Table 3",
        "params": params,
        "seed": config.seed,
        "planners": list(ONE_PORT),
        "model": "one_port",
        "points": points,
        "paper_values": {str(k): v for k, v in PAPER_TABLE3.items()},
    }
    rows = []
    for pt in points:
        paper = PAPER_TABLE3.get(pt["n"], {})
        rows.append(
            [pt["n"], f"{pt['measured_density']:.3f}" if pt["measured_density"] else ""]
            + [
                f"{_pct(pt['stats'][k]['mean'])} (+-{_pct(pt['stats'][k]['std'])})"
                + (f" [{_pct(paper[k])}]" if k in paper else "")
                for k in ONE_PORT
            ]
        )
    table = format_table(
        ["nodes", "density", *ONE_PORT],
        rows,
        title="Table 3: TIERS-like platforms, one-port: mean (+-std) [paper's value]",
    )
    return Result("beaumont-table3", data, [table], figures=["beaumont-table3"])
