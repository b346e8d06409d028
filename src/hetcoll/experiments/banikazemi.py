"""Banikazemi, Moorthy & Panda, "Efficient Collective Communication on Heterogeneous Networks
of Workstations", ICPP 1998: Fig. 1, Table 2 and the Section 7.2 simulations."""

from __future__ import annotations

import numpy as np

from ..planners import REGISTRY, plan
from ..platform import load_platform
from ..rng import spawn_seeds
from ..simulator import simulate
from ..units import format_time
from ._base import Config, Result, experiment, run_trials

__all__ = ["fig1", "sim", "table2"]

PAPER = "Banikazemi, Moorthy & Panda, ICPP 1998"


@experiment(
    "banikazemi-fig1",
    paper=f"{PAPER}, Sec. 3, Fig. 1",
    summary="eight workstations, two fast: binomial 700 µs, SPOC 500 µs, optimum 400 µs",
)
def fig1(config: Config) -> Result:
    """Fig. 1: broadcast from node 1; nodes 1 and 6 have t_ini = 100 µs, the others 300 µs."""
    platform = load_platform("fig1")
    paper = {"binomial": 700e-6, "spoc": 500e-6, "fnf": 400e-6, "optimal": 400e-6}
    rows, data = [], []
    for name in ("binomial", "spoc", "fnf", "optimal"):
        if name not in REGISTRY:
            continue
        pred = simulate(platform, plan(platform, "1", method=name))
        data.append(
            {
                "algorithm": name,
                "predicted_time": pred.makespan,
                "paper_time": paper[name],
                "sends": [list(s) for s in pred.sends()],
            }
        )
        rows.append(
            [
                name,
                format_time(pred.makespan),
                format_time(paper[name]),
                " ".join(f"{a}->{b}" for a, b in pred.sends()),
            ]
        )
    from ..report import format_table

    table = format_table(
        ["algorithm", "simulated", "paper", "sends in start order"],
        rows,
        title="Banikazemi et al. 1998, Fig. 1 (broadcast from node 1)",
    )
    return Result(
        "banikazemi-fig1",
        {"platform": "fig1", "root": "1", "results": data},
        [table],
        ["banikazemi-fig1"],
    )


# -- Section 7.2: simulated 64-node HNOW -------------------------------------------------------

SIM_PLANNERS = ("binomial", "spoc", "fnf")
SIM_DESTINATIONS = (2, 4, 8, 16, 32, 48, 63)
#: Per-byte cost: the Myrinet flit pipeline of Sec. 7.2.1 moves one 1-byte flit per 12.5 ns.
SIM_T_BYTE = 12.5e-9
SIM_T_FAST = 400e-6

#: (panel, what varies, values, fixed settings) — the paper's Figs. 7, 8 and 9, plus larger
#: messages than the paper's to show where the trend goes.
SIM_PANELS = (
    ("speed_factor", "speed factor", (2, 4, 6), {"fast": 0.25, "size": 1024}),
    ("fast_fraction", "fast nodes", (0.10, 0.25, 0.50), {"speed": 4, "size": 1024}),
    ("message_size", "message size (B)", (64, 1024, 4096, 65536), {"fast": 0.25, "speed": 4}),
    ("source", "source", ("random", "fast", "slow"), {"fast": 0.25, "speed": 4, "size": 1024}),
)
#: The factors of improvement Sec. 7.2 quotes: 1 KB, 25 % fast, speed factor 4 (the series
#: of that setting in each single-multicast panel, at the most destinations): SPOC 2.3, FNF
#: 3.3; multiple multicast with 50 % fast nodes: 2.4 (the paper's FNF, and our joint FNF).
SIM_PAPER_FOI = {"spoc": 2.3, "fnf": 3.3}
SIM_PAPER_MULTIPLE_FOI = 2.4
SIM_MULTI_SOURCES = (4, 16, 32, 64)
SIM_MULTI_DESTINATIONS = (8, 16, 32, 63)


def _sim_point(task: tuple) -> dict:
    """Mean latency of each planner over ``trials`` random (platform, source, members) draws.

    Each of ``configs`` random platforms (which nodes are fast) gets ``trials / configs``
    random participant sets, as the paper's 10 x 10 design.  ``sources`` > 1: a multiple
    multicast, one random destination set of ``dest`` nodes per source.
    """
    from ..generators import two_class_tini
    from ..planners import plan_multiple
    from ..rng import as_rng

    fast, speed, size, dest, sources, source, trials, seed = task
    rng = as_rng(seed)
    configs = max(1, min(10, trials))
    # several multicasts at once: also our joint FNF (planners/joint.py)
    planners = SIM_PLANNERS + (("fnf_joint",) if sources > 1 else ())
    totals = dict.fromkeys(planners, 0.0)
    for k in range(trials):
        if k % max(1, trials // configs) == 0:
            platform = two_class_tini(
                64, fast, t_fast=SIM_T_FAST, speed_factor=speed, t_byte=SIM_T_BYTE, seed=rng
            )
        ids = platform.ids
        if source == "random":
            roots = rng.choice(64, size=sources, replace=False)
        else:  # a single source drawn among the fast (or slow) nodes
            speed_of = platform.t_ini
            pool = np.flatnonzero(
                speed_of == (speed_of.min() if source == "fast" else speed_of.max())
            )
            roots = rng.choice(pool, size=1)
        groups = []
        for r in roots:
            others = np.delete(np.arange(64), r)
            members = rng.choice(others, size=dest, replace=False)
            groups.append((ids[r], [ids[m] for m in sorted(members)]))
        for name in planners:
            if sources == 1:
                root, members = groups[0]
                schedule = plan(
                    platform, root, None if dest == 63 else members, method=name, nbytes=size
                )
            else:
                schedule = plan_multiple(platform, groups, method=name, nbytes=size)
            totals[name] += simulate(platform, schedule).makespan
    return {name: total / trials for name, total in totals.items()}


def _foi(latency: dict) -> dict:
    return {name: latency["binomial"] / t for name, t in latency.items() if name != "binomial"}


@experiment(
    "banikazemi-sim",
    paper=f"{PAPER}, Sec. 7.2, Figs. 7-10",
    summary="64-node HNOW: factor of improvement of SPOC/FNF over binomial vs destinations",
)
def sim(config: Config) -> Result:
    """Sec. 7.2: single multicast on a 64-node HNOW (t_fast = 400 µs; speed factor 2/4/6;
    10/25/50 % fast; 64 B - 4 KB, plus 64 KB; a random, fast or slow source), and multiple
    multicast (4-64 sources), where our ``fnf_joint`` plans the trees together.

    Latency per point is averaged over ``trials`` draws (default 100: 10 platforms x 10
    participant sets; 20 for multiple multicast); the factor of improvement (FoI) is the
    binomial tree's mean latency over the planner's.
    """
    trials = config.trials or 100
    multi_trials = config.trials or 20
    tasks, keys = [], []
    for panel, _, values, fixed in SIM_PANELS:
        for value in values:
            setting = {"fast": 0.25, "speed": 4, "size": 1024, "source": "random", **fixed}
            setting[
                {
                    "speed_factor": "speed",
                    "fast_fraction": "fast",
                    "message_size": "size",
                    "source": "source",
                }[panel]
            ] = value
            for dest in SIM_DESTINATIONS:
                tasks.append(
                    (
                        setting["fast"],
                        setting["speed"],
                        setting["size"],
                        dest,
                        1,
                        setting["source"],
                        trials,
                    )
                )
                keys.append((panel, value, dest))
    for fast in (0.25, 0.50):
        for sources in SIM_MULTI_SOURCES:
            for dest in SIM_MULTI_DESTINATIONS:
                tasks.append((fast, 4, 1024, dest, sources, "random", multi_trials))
                keys.append((f"multiple_{int(fast * 100)}", sources, dest))
    seeds = spawn_seeds(config.seed, len(tasks))
    means = run_trials(
        _sim_point,
        [(*t, s) for t, s in zip(tasks, seeds, strict=True)],
        workers=config.workers,
        executor=config.executor,
        progress=config.progress,
        description="banikazemi-sim",
        chunksize=1,
    )
    panels: dict[str, dict] = {}
    for (panel, value, dest), latency in zip(keys, means, strict=True):
        p = panels.setdefault(panel, {"panel": panel, "series": {}})
        p["series"].setdefault(str(value), []).append(
            {"destinations": dest, "latency": latency, "foi": _foi(latency)}
        )
    labels = {name: label for name, label, _, _ in SIM_PANELS}
    for fast in (25, 50):
        labels[f"multiple_{fast}"] = f"sources (multiple multicast, {fast} % fast)"
    for name, p in panels.items():
        p["series_label"] = labels[name]
    data = {
        "setup": {
            "nodes": 64,
            "t_fast": SIM_T_FAST,
            "t_byte": SIM_T_BYTE,
            "trials": trials,
            "multiple_trials": multi_trials,
            "seed": config.seed,
            "fixed": {"fast": 0.25, "speed_factor": 4, "size": 1024},
        },
        "panels": list(panels.values()),
        "paper": {
            "foi_1KB_25pct_sf4": SIM_PAPER_FOI,
            "foi_multiple_50pct_sf4": SIM_PAPER_MULTIPLE_FOI,
        },
        "paper_points": _sim_paper_points(),
    }
    return Result("banikazemi-sim", data, _sim_tables(data), ["banikazemi-sim"])


def _sim_paper_points() -> list[dict]:
    """Where the paper's quoted factors go in the figures: panel, planner, destinations."""
    paper_setting = {"speed": 4, "fast": 0.25, "size": 1024, "source": "random"}
    varied = {
        "speed_factor": "speed",
        "fast_fraction": "fast",
        "message_size": "size",
        "source": "source",
    }
    most = max(SIM_DESTINATIONS)
    points = []
    for panel, _, values, _ in SIM_PANELS:
        series = paper_setting[varied[panel]]
        if series in values:
            for planner, foi in SIM_PAPER_FOI.items():
                points.append(
                    {
                        "panel": panel,
                        "series": str(series),
                        "planner": planner,
                        "destinations": most,
                        "foi": foi,
                        "setting": "1 KB, 25 % fast, speed factor 4",
                    }
                )
    for planner in ("fnf", "fnf_joint"):
        points.append(
            {
                "panel": "multiple_50",
                "series": str(max(SIM_MULTI_SOURCES)),
                "planner": planner,
                "destinations": max(SIM_MULTI_DESTINATIONS),
                "foi": SIM_PAPER_MULTIPLE_FOI,
                "setting": "multiple multicast, 50 % fast, speed factor 4",
            }
        )
    return points


def _sim_tables(data: dict) -> list[str]:
    from ..report import format_table

    tables = []
    for p in data["panels"]:
        series = list(p["series"])
        names = list(p["series"][series[0]][0]["foi"])
        label = {"spoc": "SPOC", "fnf": "FNF", "fnf_joint": "joint"}
        headers = ["dest."] + [f"{label[h]} {s}" for s in series for h in names]
        rows = []
        for i, point in enumerate(p["series"][series[0]]):
            row = [point["destinations"]]
            for s in series:
                foi = p["series"][s][i]["foi"]
                row += [f"{foi[h]:.2f}" for h in names]
            rows.append(row)
        tables.append(
            format_table(
                headers,
                rows,
                title=f"Factor of improvement over binomial "
                f"vs destinations, by {p['series_label']}",
            )
        )
    return tables


# -- Section 6.3, Table 2: FNF against the optimum ---------------------------------------------

#: Participants -> (L_FNF, L_opt) in µs, Banikazemi et al. 1998, Table 2 (10 000 cases each).
TABLE2_PAPER = {
    2: (453.37, 453.37),
    3: (705.60, 705.60),
    4: (805.70, 805.70),
    5: (871.01, 871.01),
    6: (914.90, 913.15),
    7: (947.56, 942.26),
    8: (976.90, 967.27),
    9: (984.29, 977.12),
}
TABLE2_COSTS = tuple(k * 100e-6 for k in range(1, 9))
#: Trials per seed (the draws of one seed are one block of the table's sums).
TABLE2_CHUNK = 1000
#: Distinct cases per FNF task: enough to amortise a task's overhead.
TABLE2_FNF_BLOCK = 500


def _table2_draw(task: tuple[int, int, int]) -> np.ndarray:
    """The costs of ``trials`` random broadcasts among ``n`` participants, ``(trials, n)``.

    Every participant's t_ini is drawn uniformly from :data:`TABLE2_COSTS` (choosing the
    source and members of a random 9-node system at random is the same as i.i.d. costs);
    participant 0 is the source.
    """
    from ..rng import as_rng

    n, trials, seed = task
    return as_rng(seed).choice(np.asarray(TABLE2_COSTS), size=(trials, n))


def _table2_cases(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct cases among rows of ``costs`` and each row's case: a case is the
    source's cost and the sorted costs of the others, all a latency depends on (nodes of
    equal cost are interchangeable, and FNF breaks ties among them by rank only)."""
    key = np.concatenate([costs[:, :1], np.sort(costs[:, 1:], axis=1)], axis=1)
    cases, inverse = np.unique(key, axis=0, return_inverse=True)
    return cases, inverse.reshape(-1)


def _table2_fnf(cases: np.ndarray) -> list[float]:
    """FNF's simulated latency for each case (a row: source cost, then the others')."""
    from ..planners import fnf
    from ..platform import Platform, nodes_from_costs

    out = []
    for row in np.asarray(cases).tolist():
        platform = Platform(nodes_from_costs(row), model="tini")
        out.append(simulate(platform, fnf(platform, "0")).makespan)
    return out


def _table2_optimal(cases: np.ndarray) -> np.ndarray:
    """The optimal latency of each case: one programme over every count vector for all
    (:func:`~hetcoll.planners.optimal.optimal_times`, bit for bit
    :func:`~hetcoll.planners.optimal.optimal_time` of each case, itself the simulated time of
    the optimal schedule, tests/test_planners_optimal.py)."""
    from ..planners.optimal import optimal_times

    values = np.asarray(TABLE2_COSTS)
    klass = np.searchsorted(values, cases)
    if not np.array_equal(values[klass], cases):  # pragma: no cover - drawn from values
        raise AssertionError("table2: a cost outside TABLE2_COSTS")
    counts = np.zeros((len(cases), len(values)), dtype=np.int64)
    for col in klass[:, 1:].T:
        counts[np.arange(len(cases)), col] += 1
    return optimal_times(values, klass[:, 0], counts)


def _table2_sums(n: int, t_fnf: list[float], t_opt: list[float]) -> dict:
    """One seed's block of trials: the sums the means and errors come from, accumulated
    trial by trial in draw order."""
    out = {"n": n, "trials": len(t_fnf), "fnf": 0.0, "opt": 0.0, "fnf_sq": 0.0, "opt_sq": 0.0}
    out.update(equal=0, fnf_below_opt=0)
    for f, o in zip(t_fnf, t_opt, strict=True):
        out["fnf"] += f
        out["opt"] += o
        out["fnf_sq"] += f * f
        out["opt_sq"] += o * o
        out["equal"] += f <= o * (1 + 1e-9)
        out["fnf_below_opt"] += f < o * (1 - 1e-9)
    return out


def _table2_chunk(task: tuple[int, int, int]) -> dict:
    """``trials`` random broadcasts among ``n`` participants (:func:`_table2_draw`): their
    sums, on their own (:func:`table2` shares the work of equal cases across seeds)."""
    costs = _table2_draw(task)
    cases, inverse = _table2_cases(costs)
    t_fnf = np.asarray(_table2_fnf(cases))[inverse].tolist()
    t_opt = _table2_optimal(cases)[inverse].tolist()
    return _table2_sums(task[0], t_fnf, t_opt)


def _table2_blocks(tasks: list[tuple[int, int, int]], config: Config) -> list[dict]:
    """The sums of every seed's block, each case of one size planned and simulated once.

    Draws per seed as a trial-by-trial run does, then the distinct cases of each size (a
    few thousand of the 10 000 trials of 8 or 9 participants, 64 of 2): FNF simulated per
    case through the executor, the optima of every case in one programme.  Per trial the
    latencies are those of a trial-by-trial run, bit for bit, and the sums are accumulated
    in the same order.
    """
    draws = [_table2_draw(t) for t in tasks]
    by_size: dict[int, list[int]] = {}
    for i, (n, _, _) in enumerate(tasks):
        by_size.setdefault(n, []).append(i)
    fnf_tasks, plan = [], []
    for n, idx in by_size.items():
        cases, inverse = _table2_cases(np.concatenate([draws[i] for i in idx]))
        first = len(fnf_tasks)
        fnf_tasks += [
            cases[lo : lo + TABLE2_FNF_BLOCK] for lo in range(0, len(cases), TABLE2_FNF_BLOCK)
        ]
        plan.append((n, idx, cases, inverse, first, len(fnf_tasks)))
    fnf_parts = run_trials(
        _table2_fnf,
        fnf_tasks,
        workers=config.workers,
        executor=config.executor,
        progress=config.progress,
        description="banikazemi-table2",
        chunksize=1,
    )
    blocks: list[dict] = [{} for _ in tasks]
    for n, idx, cases, inverse, lo, hi in plan:
        t_fnf = np.concatenate([np.asarray(p, dtype=float) for p in fnf_parts[lo:hi]])
        t_opt = _table2_optimal(cases)
        start = 0
        for i in idx:
            rows = inverse[start : start + len(draws[i])]
            start += len(draws[i])
            blocks[i] = _table2_sums(n, t_fnf[rows].tolist(), t_opt[rows].tolist())
    return blocks


@experiment(
    "banikazemi-table2",
    paper=f"{PAPER}, Sec. 6.3, Table 2",
    summary="FNF vs the optimal tree, t_ini uniform in {100..800} µs, 2-9 participants",
)
def table2(config: Config) -> Result:
    """Table 2: mean latency of FNF and of the optimal tree over random broadcasts.

    For 2 to 9 participants, ``trials`` (default 10 000, the paper's) random cases each:
    every participant's message initiation cost uniform in {100, 200, ..., 800} µs, a random
    source, ``t_byte = 0``.  Reports the means, FNF's relative gap, the paper's values, the
    deviation from them and how often FNF's latency equals the optimum.  Equal cases (same
    source cost, same multiset of the others') are planned and simulated once per size.
    """
    trials = config.trials or 10_000
    tasks = []
    for n in sorted(TABLE2_PAPER, reverse=True):  # the dearest rows first: better balance
        done = 0
        while done < trials:
            k = min(TABLE2_CHUNK, trials - done)
            tasks.append((n, k))
            done += k
    seeds = spawn_seeds(config.seed, len(tasks))
    parts = _table2_blocks([(n, k, s) for (n, k), s in zip(tasks, seeds, strict=True)], config)
    rows = []
    for n, (paper_fnf, paper_opt) in TABLE2_PAPER.items():
        mine = [p for p in parts if p["n"] == n]
        count = sum(p["trials"] for p in mine)
        total = {key: sum(p[key] for p in mine) for key in mine[0] if key not in ("n", "trials")}
        fnf_mean, opt_mean = total["fnf"] / count, total["opt"] / count
        rows.append(
            {
                "participants": n,
                "trials": count,
                "fnf_mean": fnf_mean,
                "opt_mean": opt_mean,
                "fnf_sem": _sem(total["fnf"], total["fnf_sq"], count),
                "opt_sem": _sem(total["opt"], total["opt_sq"], count),
                "gap_pct": 100 * (fnf_mean - opt_mean) / opt_mean,
                "paper_fnf": paper_fnf * 1e-6,
                "paper_opt": paper_opt * 1e-6,
                "paper_gap_pct": 100 * (paper_fnf - paper_opt) / paper_opt,
                "fnf_dev_pct": 100 * (fnf_mean / (paper_fnf * 1e-6) - 1),
                "opt_dev_pct": 100 * (opt_mean / (paper_opt * 1e-6) - 1),
                "fnf_optimal_pct": 100 * total["equal"] / count,
                "fnf_below_opt": total["fnf_below_opt"],
            }
        )
    data = {
        "setup": {
            "t_ini": list(TABLE2_COSTS),
            "t_byte": 0.0,
            "trials": trials,
            "seed": config.seed,
        },
        "rows": rows,
    }
    return Result("banikazemi-table2", data, [_table2_table(data)], ["banikazemi-table2"])


def _sem(total: float, total_sq: float, count: int) -> float:
    """Standard error of a mean from the sum and the sum of squares."""
    if count < 2:
        return float("nan")
    var = max(0.0, (total_sq - total * total / count) / (count - 1))
    return float(np.sqrt(var / count))


def _table2_table(data: dict) -> str:
    from ..report import format_table

    def us(x: float) -> str:
        return f"{x * 1e6:.2f}"

    rows = [
        [
            r["participants"],
            us(r["fnf_mean"]),
            us(r["opt_mean"]),
            f"{r['gap_pct']:.2f}",
            us(r["paper_fnf"]),
            us(r["paper_opt"]),
            f"{r['paper_gap_pct']:.2f}",
            f"{r['fnf_dev_pct']:+.2f}",
            f"{r['opt_dev_pct']:+.2f}",
            f"{r['fnf_optimal_pct']:.1f}",
        ]
        for r in data["rows"]
    ]
    setup = data["setup"]
    return format_table(
        [
            "nodes",
            "L_FNF µs",
            "L_opt µs",
            "gap %",
            "paper L_FNF",
            "paper L_opt",
            "paper gap %",
            "dev FNF %",
            "dev opt %",
            "FNF = opt %",
        ],
        rows,
        title=f"Banikazemi et al. 1998, Table 2: FNF vs optimal tree, t_ini uniform in "
        f"{{100..800}} µs ({setup['trials']} trials per row, seed {setup['seed']})",
    )
