"""Planner speed: ``optimal`` against the number of participants, ``fnf`` and ``spoc`` up to
100 000 nodes.  Prints tables and writes ``results/bench_planners.json``.

Costs are drawn (seeded) from the 8 classes {100, ..., 800} µs of Banikazemi et al. (1998,
Sec. 6.3).  Only the planner call is timed (``prepare`` and building the Schedule included,
generating the platform and simulating excluded), with ``time.perf_counter``, best of a few
runs.

    python benchmarks/simulated/bench_planners.py            # optimal up to a 10 s solve
    python benchmarks/simulated/bench_planners.py --full     # optimal up to a 60 s solve
    python benchmarks/simulated/bench_planners.py --quick    # a smoke run in well under a minute

The default (what ``make bench`` runs, a few minutes) sweeps ``optimal`` until a solve takes
10 s or the sweep's solves 60 s, times 3 draws of 24 participants and ``fnf``/``spoc`` up to
100 000 nodes; ``--full`` lets a solve take 60 s and the sweep 400 s (each solve is run
``--repeat`` times: over half an hour on a shared 2-core machine) and times 5 draws.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import sys
import time
from pathlib import Path

import numpy as np

from hetcoll import __version__
from hetcoll.errors import PlannerError
from hetcoll.files import write_atomic
from hetcoll.planners import fnf, optimal, spoc
from hetcoll.planners.optimal import _ClassDP
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.report import format_table

CLASSES = np.arange(1, 9) * 100e-6


def best_time(func, repeat: int) -> tuple[float, float]:
    """Least wall-clock and least CPU seconds of ``repeat`` calls (one call if the first
    takes over 1 s).  The CPU time shows what other processes on a shared machine add."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        func()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
        if wall > 1.0:
            break
    return wall, cpu


def machine() -> dict:
    """What a benchmark's JSON records of the machine it ran on."""
    return {
        "cpus": os.cpu_count(),
        "python": host.python_version(),
        "numpy": np.__version__,
        "processor": host.processor() or host.machine(),
    }


def random_platform(n: int, seed: int) -> Platform:
    costs = np.random.default_rng(seed).choice(CLASSES, size=n)
    return Platform(nodes_from_costs(costs), model="tini")


def work(p: Platform, root: str = "0") -> int:
    """(multiset, sub-multiset) evaluations ``optimal`` needs: a size-independent measure."""
    costs = list(p.t_ini)
    r = p.index(root)
    return _ClassDP.work_for(costs[r], costs[:r] + costs[r + 1 :])


def solve(p: Platform, repeat: int) -> dict:
    wall, cpu = best_time(lambda: optimal(p, "0", max_pairs=10**13), repeat)
    return {
        "n": len(p),
        "classes_used": len(set(p.t_ini.tolist())),
        "pairs": work(p),
        "seconds": wall,
        "cpu_seconds": cpu,
    }


def sweep_optimal(sizes, limit: float, budget: float, repeat: int) -> tuple[list, int | None]:
    """Time ``optimal`` on one seeded draw per size; stop after the first solve over ``limit``
    seconds, or when the predicted time (pairs x the last rate) exceeds 1.5 x ``limit``, or
    when the total would exceed ``budget``."""
    rows, largest, spent, rate = [], None, 0.0, None
    for n in sizes:
        p = random_platform(n, seed=n)
        pairs = work(p)
        predicted = pairs * rate if rate else 0.0
        if predicted > 1.5 * limit or spent + predicted > budget:
            rows.append({"n": n, "pairs": pairs, "seconds": None, "predicted": predicted})
            print(f"  optimal N={n}: predicted {predicted:.0f} s, not run", file=sys.stderr)
            break
        try:
            row = solve(p, repeat)
        except PlannerError as exc:  # beyond max_states (memory): the sweep ends here
            rows.append({"n": n, "pairs": pairs, "seconds": None, "refused": str(exc)})
            print(f"  optimal N={n}: refused ({exc})", file=sys.stderr)
            break
        spent += row["seconds"]
        rate = row["seconds"] / row["pairs"]
        rows.append(row)
        print(f"  optimal N={n}: {row['seconds']:.3f} s", file=sys.stderr)
        if row["seconds"] > limit:
            break
        largest = n
    return rows, largest


def case_24(repeat: int, draws: int) -> list[dict]:
    """24 participants from 8 classes: seeded typical draws and the worst case, 3 per class
    (source in the cheapest and in the dearest class)."""
    out = []
    for seed in range(draws):
        row = solve(random_platform(24, seed=1000 + seed), repeat)
        out.append({"case": f"random draw (seed {1000 + seed})", **row})
    worst = np.repeat(CLASSES, 3)
    for label, order in (("3 per class, source 100 µs", worst), ("... source 800 µs", worst[::-1])):
        row = solve(Platform(nodes_from_costs(order), model="tini"), repeat)
        out.append({"case": label, **row})
    return out


def sweep_heuristics(sizes, repeat: int) -> list[dict]:
    rows = []
    for n in sizes:
        p = random_platform(n, seed=n)
        row = {"n": n}
        for name, func in (("fnf", fnf), ("spoc", spoc)):
            row[name], row[f"{name}_cpu"] = best_time(lambda f=func, p=p: f(p, "0"), repeat)
        rows.append(row)
        print(f"  fnf/spoc N={n}: {row['fnf']:.4f} s / {row['spoc']:.4f} s", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, short limits")
    ap.add_argument("--full", action="store_true", help="optimal up to a 60 s solve")
    ap.add_argument("--limit", type=float, default=None, help="s per optimal solve (10; full 60)")
    ap.add_argument("--budget", type=float, default=None, help="s for the sweep (60; full 400)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_planners.json")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "full" if args.full else "default"
    limit = args.limit or {"quick": 5.0, "default": 10.0, "full": 60.0}[mode]
    budget = args.budget or {"quick": 20.0, "default": 60.0, "full": 400.0}[mode]
    opt_sizes = [4, 8, 12, 16, 20, 24] + ([] if args.quick else list(range(26, 61, 2)))
    big_sizes = [10, 100, 1000, 10_000] + ([] if args.quick else [100_000])

    print("timing optimal ...", file=sys.stderr)
    sweep, largest = sweep_optimal(opt_sizes, limit, budget, args.repeat)
    print("timing 24 participants from 8 classes ...", file=sys.stderr)
    c24 = case_24(args.repeat, draws={"quick": 2, "default": 3, "full": 5}[mode])
    print("timing fnf and spoc ...", file=sys.stderr)
    heur = sweep_heuristics(big_sizes, args.repeat)

    def sec(x):
        return "-" if x is None else f"{x:.4g}"

    print(
        format_table(
            ["N", "classes used", "pairs", "optimal (s)", "CPU (s)", "not run"],
            [
                [
                    r["n"],
                    r.get("classes_used", ""),
                    f"{r['pairs']:.3g}",
                    sec(r["seconds"]),
                    sec(r.get("cpu_seconds")),
                ]
                + (
                    [r.get("refused") or f"(predicted {r['predicted']:.0f} s, not run)"]
                    if r["seconds"] is None
                    else [""]
                )  # a column of its own: a row of another width broke the table
                for r in sweep
            ],
            title=f"optimal, one seeded draw from 8 classes per N (limit {limit:g} s per solve)",
        )
    )
    print(f"largest N solved within {limit:g} s: {largest}\n")
    print(
        format_table(
            ["case", "pairs", "optimal (s)", "CPU (s)"],
            [
                [r["case"], f"{r['pairs']:.3g}", sec(r["seconds"]), sec(r["cpu_seconds"])]
                for r in c24
            ],
            title="24 participants, costs from 8 classes",
        )
    )
    print()
    print(
        format_table(
            ["N", "fnf (s)", "fnf CPU (s)", "spoc (s)", "spoc CPU (s)"],
            [
                [r["n"], sec(r["fnf"]), sec(r["fnf_cpu"]), sec(r["spoc"]), sec(r["spoc_cpu"])]
                for r in heur
            ],
            title="heuristics, costs from 8 classes (planner call: prepare + tree + Schedule)",
        )
    )
    doc = {
        "benchmark": "planners",
        "hetcoll": __version__,
        "machine": machine(),
        "mode": mode,
        "load_average": os.getloadavg(),
        "limit_seconds": limit,
        "optimal_vs_n": sweep,
        "optimal_largest_n_within_limit": largest,
        "optimal_24_from_8_classes": c24,
        "heuristics_vs_n": heur,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
