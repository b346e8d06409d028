"""Benchmark: hetcoll's ``gap_aware`` planner against flat, HLOT and the shortest-path tree
under Park et al.'s eq. (2) (postal model with overhead and gap), plus planner run times.

For every instance family, size N and (overhead, gap) setting it plans a broadcast from node
0 with each planner, simulates it, and reports for ``gap_aware``:

- ``better``: the fraction of instances where it is strictly faster than all of flat, hlot
  and spt (it is never slower: ``violations`` must be 0);
- ``gain``: mean of ``min(flat, hlot, spt) / gap_aware - 1`` (and per baseline);
- ``max``: the largest such gain.

Families: ``uniform`` (i.i.d. latencies U(1, 100) ms, asymmetric) and ``grid``
(:func:`hetcoll.generators.grid_platform`, 4 sites x 2 clusters, all WAN heavy).

    python benchmarks/simulated/bench_grid.py          # full table, results/bench_grid.json
    python benchmarks/simulated/bench_grid.py --quick  # a smaller run
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hetcoll import Node, Platform, plan, simulate
from hetcoll.experiments import run_trials
from hetcoll.files import write_atomic
from hetcoll.generators import grid_platform
from hetcoll.report import format_table
from hetcoll.rng import spawn_seeds

BASELINES = ("flat", "hlot", "spt")
PLANNERS = (*BASELINES, "gap_aware")
#: (overhead, gap) in seconds: eq. (4), then eq. (2) with growing per-message costs
SETTINGS = [(0.0, 0.0), (1e-4, 2e-4), (1e-3, 2e-3), (5e-3, 1e-2)]


def _platform(family: str, n: int, seed: int, overhead: float, gap: float) -> Platform:
    model = {"name": "postal", "overhead": overhead, "gap": gap}
    if family == "grid":
        return grid_platform(4, 2, max(1, n // 8), seed=seed, model=model)
    rng = np.random.default_rng(seed)
    w = rng.uniform(1e-3, 100e-3, (n, n))
    np.fill_diagonal(w, 0.0)
    return Platform(tuple(Node(str(i)) for i in range(n)), latency=w, model=model)


def _trial(task):
    family, n, overhead, gap, seed = task
    p = _platform(family, n, seed, overhead, gap)
    root = p.ids[0]
    times, runtimes = {}, {}
    for name in PLANNERS:
        t0 = time.perf_counter()
        s = plan(p, root, method=name)
        runtimes[name] = time.perf_counter() - t0
        times[name] = simulate(p, s).makespan
    return {"times": times, "runtimes": runtimes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and trials")
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", default="results/bench_grid.json")
    args = ap.parse_args(argv)
    sizes = [16, 32] if args.quick else [16, 32, 64, 128]
    trials = args.trials or (5 if args.quick else 20)

    cases = [
        (family, n, o, g) for family in ("uniform", "grid") for n in sizes for o, g in SETTINGS
    ]
    tasks = [
        (*case, s)
        for case, cs in zip(cases, spawn_seeds(args.seed, len(cases)), strict=True)
        for s in spawn_seeds(cs, trials)
    ]
    out = run_trials(_trial, tasks, workers=args.workers, progress=True, description="bench")

    records, rows = [], []
    for i, (family, n, o, g) in enumerate(cases):
        block = out[i * trials : (i + 1) * trials]
        mine = np.array([b["times"]["gap_aware"] for b in block])
        base = {k: np.array([b["times"][k] for b in block]) for k in BASELINES}
        best = np.minimum.reduce(list(base.values()))
        gain = best / mine - 1
        rec = {
            "family": family,
            "n": n,
            "overhead": o,
            "gap": g,
            "trials": trials,
            "violations": int(np.sum(mine > best)),
            "better": float(np.mean(mine < best)),
            "gain_mean": float(np.mean(gain)),
            "gain_max": float(np.max(gain)),
            "gain_over": {k: float(np.mean(v / mine - 1)) for k, v in base.items()},
            "runtime_ms": {
                k: 1e3 * float(np.mean([b["runtimes"][k] for b in block])) for k in PLANNERS
            },
        }
        records.append(rec)
        rows.append(
            [
                family,
                n,
                f"{o * 1e3:g}/{g * 1e3:g}",
                rec["violations"],
                f"{100 * rec['better']:.0f}",
                f"{100 * rec['gain_mean']:.1f}",
                f"{100 * rec['gain_max']:.1f}",
                *(f"{100 * rec['gain_over'][k]:.1f}" for k in BASELINES),
                f"{rec['runtime_ms']['gap_aware']:.1f}",
                f"{rec['runtime_ms']['spt']:.2f}",
            ]
        )
    print(
        format_table(
            [
                "family",
                "N",
                "o/g ms",
                "viol",
                "better %",
                "gain %",
                "max %",
                "vs flat %",
                "vs hlot %",
                "vs spt %",
                "gap_aware ms",
                "spt ms",
            ],
            rows,
            title=(
                f"gap_aware vs min(flat, hlot, spt) under eq. (2), {trials} instances per row "
                "(gain = T_best_baseline / T_gap_aware - 1; eq. (4) rows: o/g = 0/0)"
            ),
        )
    )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"benchmark": "bench_grid", "records": records}, indent=1))
    print(f"wrote {path}")
    return 0 if all(r["violations"] == 0 for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
