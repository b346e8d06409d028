"""Figueira & Reddi, "Topology-Based Hypercube Structures for Global Communication in
Heterogeneous Networks": Fig. 6, the average cost gain over blind hypercubes, and Fig. 7,
barriers on emulated networks (in miniature)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..planners import cube_embedding
from ..report import format_table
from ..rng import spawn_seeds
from ._base import Config, Result, experiment, run_trials

__all__ = ["barrier_gain", "cost_gain", "cost_trial"]

PAPER = "Figueira & Reddi"
SIZES = tuple(2**k for k in range(3, 11))  # 8 .. 1024
MAX_LINKS = (5, 20)
METHODS = ("dim2_cube", "tsts_cube", "eff_cube")
OURS = "eff_cube_ls"


def cost_trial(task: tuple[int, int, int, bool]) -> dict[str, float]:
    """One random topology: the cost (in links) of each embedding.

    ``task`` is ``(seed, n, max_links, with_ours)``; the topology is
    :func:`hetcoll.generators.random_link_costs` ``(n, max_links, seed)``.  Pure.
    """
    from ..generators import random_link_costs

    seed, n, max_links, with_ours = task
    w = random_link_costs(n, max_links, seed=seed).astype(float)
    out = {"blind": cube_embedding.cube_cost(w, *cube_embedding.blind_embedding(w))}
    for name in METHODS:
        positions, folds = cube_embedding.EMBEDDINGS[name](w)
        out[name] = cube_embedding.cube_cost(w, positions, folds)
        if name == "eff_cube" and with_ours:
            better, _ = cube_embedding.improve_embedding(w, positions, folds)
            out[OURS] = cube_embedding.cube_cost(w, better, folds)
    return out


def _gain(blind: np.ndarray, cost: np.ndarray) -> np.ndarray:
    return 100.0 * (blind - cost) / blind


@experiment(
    "figueira-cost",
    paper=f"{PAPER}, Sec. 5.1, Fig. 6",
    summary="average gain over blind of Dim2, TSTS, Eff_Cube (and ours), N = 8..1024",
)
def cost_gain(config: Config) -> Result:
    """Fig. 6: for each N and maximum cost (5 and 20 links), the average gain in cost over
    the blind hypercube on random topologies (1000 per point in the paper).

    ``config.params``: ``sizes`` (default 8, 16, ..., 1024), ``max_links`` (5, 20) and
    ``ours_trials`` (default 50): our local search (``eff_cube_ls``) runs on the first
    ``ours_trials`` topologies of each point only (it costs about a second per topology at
    1024 nodes), and is compared with ``eff_cube`` on those same topologies.
    """
    trials = config.trials or 1000
    sizes = tuple(int(n) for n in config.params.get("sizes", SIZES))
    max_links = tuple(int(m) for m in config.params.get("max_links", MAX_LINKS))
    ours_trials = int(config.params.get("ours_trials", 50))
    points = [(m, n) for m in max_links for n in sizes]
    seeds = spawn_seeds(config.seed, len(points) * trials)
    tasks = [
        (seeds[k * trials + t], n, m, t < ours_trials)
        for k, (m, n) in enumerate(points)
        for t in range(trials)
    ]
    # the biggest cubes first, so that the last chunks to finish are short ones
    order = sorted(range(len(tasks)), key=lambda i: (-tasks[i][1], i))
    done = run_trials(
        cost_trial,
        [tasks[i] for i in order],
        workers=config.workers,
        executor=config.executor,
        progress=config.progress,
        description="figueira-cost",
        chunksize=8,
    )
    results: list[dict[str, float]] = [{}] * len(tasks)
    for i, r in zip(order, done, strict=True):
        results[i] = r
    data_points = [
        _summarise(m, n, results[k * trials : (k + 1) * trials]) for k, (m, n) in enumerate(points)
    ]
    data: dict[str, Any] = {
        "paper": f"{PAPER}, Sec. 5.1, Fig. 6",
        "generator": "random_link_costs: each pair's cost uniform in 1..max_links, symmetric",
        "trials": trials,
        "ours_trials": min(ours_trials, trials),
        "seed": config.seed,
        "sizes": list(sizes),
        "max_links": list(max_links),
        "methods": [*METHODS, OURS],
        "points": data_points,
        "paper_reading": {
            "dim2_cube": "about 10 % for every N",
            "tsts_cube": "about 10 % up to 16 nodes, then falling",
            "eff_cube": "about 10 % at 8 nodes, rising to about 30 % at 1024",
        },
        "paper_values": _paper_values(sizes),
    }
    tables = [_table(data, m) for m in max_links]
    return Result("figueira-cost", data, tables, ["figueira-cost"])


#: The gains over blind (%) Sec. 5.1 quotes for Fig. 6, by method: ``{N: gain}``.
PAPER_FIG6 = {
    "dim2_cube": dict.fromkeys(SIZES, 10.0),  # "about 10 % independently of the number of nodes"
    "tsts_cube": {8: 10.0, 16: 10.0},  # "about 10 % for small networks" (up to 16 nodes)
    "eff_cube": {8: 10.0, 1024: 30.0},  # "starts at about 10 % for 8 nodes", "around 30 %"
}


def _paper_values(sizes: tuple[int, ...]) -> dict[str, list[list[float]]]:
    """The paper's quoted gains at the sizes of this run: ``{method: [[N, gain %], ...]}``."""
    return {
        method: [[n, gain] for n, gain in sorted(quoted.items()) if n in sizes]
        for method, quoted in PAPER_FIG6.items()
    }


def _summarise(max_links: int, n: int, rows: list[dict[str, float]]) -> dict[str, Any]:
    blind = np.array([r["blind"] for r in rows])
    point: dict[str, Any] = {
        "max_links": max_links,
        "n": n,
        "trials": len(rows),
        "blind_cost": float(blind.mean()),
        "gain": {},
        "gain_std": {},
        "cost": {},
    }
    for name in METHODS:
        cost = np.array([r[name] for r in rows])
        g = _gain(blind, cost)
        point["gain"][name] = float(g.mean())
        point["gain_std"][name] = float(g.std())
        point["cost"][name] = float(cost.mean())
    sub = [r for r in rows if OURS in r]
    if sub:
        b = np.array([r["blind"] for r in sub])
        ours = _gain(b, np.array([r[OURS] for r in sub]))
        eff = _gain(b, np.array([r["eff_cube"] for r in sub]))
        point["ours"] = {
            "trials": len(sub),
            "gain": float(ours.mean()),
            "gain_std": float(ours.std()),
            "eff_cube_gain": float(eff.mean()),
            "extra_gain": float((ours - eff).mean()),
        }
    return point


def _table(data: dict[str, Any], max_links: int) -> str:
    rows = []
    for p in data["points"]:
        if p["max_links"] != max_links:
            continue
        row = [p["n"], f"{p['blind_cost']:.2f}"]
        row += [f"{p['gain'][name]:.1f}" for name in METHODS]
        ours = p.get("ours")
        row += [f"{ours['gain']:.1f}", f"{ours['extra_gain']:+.1f}"] if ours else ["", ""]
        rows.append(row)
    return format_table(
        ["N", "blind cost", "dim2 %", "tsts %", "eff %", "ours %", "ours-eff"],
        rows,
        title=(
            f"Figueira & Reddi Fig. 6, max cost {max_links} links: average gain over blind "
            f"({data['trials']} topologies per N; ours on the first {data['ours_trials']}). "
            "Paper: dim2 ~10 %, tsts ~10 % then falling, eff ~10 % -> ~30 % at 1024."
        ),
    )


# -- Fig. 7: barriers on emulated networks ---------------------------------------------------------

BARRIER_SIZES = (8, 16)
BARRIER_METHODS = (*METHODS, OURS)
#: Sec. 5.2 / Fig. 7, read from the text: best gains over blind at 128 nodes
PAPER_FIG7 = {"dim2_cube": "up to ~20 %", "tsts_cube": "up to ~15 %", "eff_cube": "up to ~40 %"}


@experiment(
    "figueira-barrier",
    paper=f"{PAPER}, Sec. 5.2, Fig. 7",
    summary="repeated barriers on 8 and 16 emulated ranks: measured gain over blind vs predicted",
    launches_mpi=True,
)
def barrier_gain(config: Config) -> Result:
    """Fig. 7 in miniature: hypercube barriers on 8 and 16 MPI ranks emulating random
    pairwise-cost networks, measured gain over the blind hypercube next to the predicted one.

    As the paper does, each planner runs on the topology that gave it the best predicted
    gain among ``draws`` random ones (:func:`hetcoll.generators.figueira_platform`: each
    pair's cost uniform in 1..``max_links`` links times ``base_latency``), next to blind on
    the same topology.  Each barrier is timed ``config.trials`` times (default 20; every
    rank starts at an agreed time, the barrier ends when the last rank leaves; median) and
    ``loop`` barriers are timed back to back (the paper ran 10,000 in a row).  Predicted:
    the simulator, i.e. ``calc_cost`` for one barrier, and the simulated loop of ``loop``
    back-to-back calls (:meth:`~hetcoll.program.Program.repeated`) for the loop.

    ``config.params``: ``sizes`` (8, 16), ``max_links`` (5), ``base_latency`` (2e-3 s: 2-10
    ms per pair, large against the ~0.7 ms it takes 16 ranks woken at once to share this
    machine's 2 cores), ``draws`` (20), ``loop`` (30), ``methods``.  Launches one job of
    ``N`` ranks per size (:func:`hetcoll.jobs.launch`).
    """
    from ..generators import figueira_platform
    from ..jobs import Run, entries, launch
    from ..planners import plan_barrier
    from ..simulator import simulate

    params = config.params
    sizes = tuple(int(n) for n in params.get("sizes", BARRIER_SIZES))
    max_links = int(params.get("max_links", 5))
    base = float(params.get("base_latency", 2e-3))
    draws = int(params.get("draws", 20))
    loop = int(params.get("loop", 30))
    methods = tuple(params.get("methods", BARRIER_METHODS))
    trials = config.trials or 20
    seeds = spawn_seeds(config.seed, len(sizes) * draws)
    points: list[dict[str, Any]] = []
    mpi_seconds = 0.0
    for k, n in enumerate(sizes):
        # predicted gain of every planner on every draw; each keeps its best draw
        gains: dict[str, list[float]] = {m: [] for m in methods}
        for d in range(draws):
            p = figueira_platform(n, max_links, base_latency=base, seed=seeds[k * draws + d])
            blind = simulate(p, plan_barrier(p, method="blind")).makespan
            for m in methods:
                cost = simulate(p, plan_barrier(p, method=m)).makespan
                gains[m].append(float(_gain(np.array(blind), np.array(cost))))
        best = {m: int(np.argmax(g)) for m, g in gains.items()}
        chosen = sorted(set(best.values()))
        runs = [
            Run(
                figueira_platform(n, max_links, base_latency=base, seed=seeds[k * draws + d]),
                "barrier",
                "blind",
                baselines=tuple(m for m in methods if best[m] == d),
                native=False,
                repeat=trials,
                loop=loop,
                emulate=True,
                timeout=120,
            )
            for d in chosen
        ]
        result = launch(runs, n, timeout=1800)
        mpi_seconds += result["seconds"]
        for d, run in zip(chosen, result["runs"], strict=True):
            (doc,) = run["documents"]
            rows = {e["algorithm"]: _barrier_row(e) for e in entries(doc)}
            for m in methods:
                if best[m] != d:
                    continue
                b, x = rows["blind"], rows[m]
                points.append(
                    {
                        "n": n,
                        "method": m,
                        "draw": d,
                        "blind": b,
                        "planner": x,
                        "predicted_gain": _pct(b["predicted"], x["predicted"]),
                        "measured_gain": _pct(b["median"], x["median"]),
                        "loop_predicted_gain": _pct(b["loop_predicted"], x["loop_predicted"]),
                        "loop_measured_gain": _pct(b["loop"], x["loop"]),
                        "mean_predicted_gain": float(np.mean(gains[m])),
                    }
                )
    points.sort(key=lambda p: (p["n"], methods.index(p["method"])))
    data: dict[str, Any] = {
        "paper": f"{PAPER}, Sec. 5.2, Fig. 7",
        "sizes": list(sizes),
        "methods": list(methods),
        "max_links": max_links,
        "base_latency": base,
        "draws": draws,
        "trials": trials,
        "loop": loop,
        "seed": config.seed,
        "points": points,
        "paper_reading": PAPER_FIG7,
        "mpi_seconds": mpi_seconds,
    }
    return Result("figueira-barrier", data, [_barrier_table(data)], ["figueira-barrier"])


def _pct(blind: float, cost: float) -> float:
    return 100.0 * (blind - cost) / blind


def _barrier_row(e: dict[str, Any]) -> dict[str, Any]:
    """One embedding's times (seconds): predicted and measured, one barrier and the loop."""
    return {
        "predicted": e["predicted_time"],
        "median": e["median_time"],
        "min": e["measured_time"],
        "loop_predicted": e["loop_predicted_time"],
        "loop": e["loop_time"],
        "embedding": e["embedding"],
        "folds": e["folds"],
        "late": e["late"],
    }


def _barrier_table(data: dict[str, Any]) -> str:
    rows = []
    for p in data["points"]:
        b, x = p["blind"], p["planner"]
        rows.append(
            [
                p["n"],
                p["method"],
                f"{b['predicted'] * 1e3:.1f} / {b['median'] * 1e3:.2f}",
                f"{x['predicted'] * 1e3:.1f} / {x['median'] * 1e3:.2f}",
                f"{p['predicted_gain']:.1f}",
                f"{p['measured_gain']:.1f}",
                f"{p['loop_predicted_gain']:.1f}",
                f"{p['loop_measured_gain']:.1f}",
                f"{p['mean_predicted_gain']:.1f}",
            ]
        )
    return format_table(
        [
            "N",
            "planner",
            "blind ms pred/meas",
            "planner ms pred/meas",
            "pred gain %",
            "meas gain %",
            "loop pred %",
            "loop meas %",
            f"mean of {data['draws']} %",
        ],
        rows,
        title=(
            f"Figueira & Reddi Fig. 7 in miniature: barriers on emulated random networks "
            f"(1..{data['max_links']} links x {data['base_latency'] * 1e3:g} ms per pair), "
            f"each planner on its best of {data['draws']} topologies, next to blind; one "
            f"barrier: median of {data['trials']} (predicted = calc_cost); loop: "
            f"{data['loop']} back to back.  Paper (128 nodes): Eff ~40 %, Dim2 ~20 %, "
            "TSTS ~15 %."
        ),
    )
