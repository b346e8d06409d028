"""The optimum's edge loads (``n_uv`` of least link time): plain column generation against
smoothed prices, side by side.  Prints a table and writes ``results/bench_edge_loads.json``.

:func:`hetcoll.planners.steady.edge_loads_certified` runs a second column generation after
the packing, until its Lagrangian certificate closes to ``LOAD_TOL``.  With
``smoothing=0`` it prices at the master's duals (plain); the default (0.9) smooths them as
the packing does (Wentges).  For each random 50-node platform (one-port, root ``"0"``,
1 MB slices) both run in turn, ``--repeat`` times, alternating which goes first; the table
shows the median CPU seconds of each, their ratio, the master solves (deterministic: HiGHS
is), and the link time and certified gap each reaches (the same minimum).  CPU time, not
elapsed: on a shared machine other processes do not add to it; the load average is
printed beside it.

    python benchmarks/simulated/bench_edge_loads.py            # densities 0.12, 0.3; seeds 0-1
    python benchmarks/simulated/bench_edge_loads.py --full     # seeds 0-4, 3 runs of each
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from hetcoll.generators import random_graph_platform
from hetcoll.planners import steady
from hetcoll.report import format_table


def one(prob, pack, smoothing: float) -> dict:
    """CPU seconds, master solves, link time and gap of one run."""
    solves = [0]
    real = steady._Master.solve

    def counted(self):
        solves[0] += 1
        return real(self)

    steady._Master.solve = counted
    try:
        c0 = time.process_time()
        n, gap = steady.edge_loads_certified(prob, pack, smoothing)
        cpu = time.process_time() - c0
    finally:
        steady._Master.solve = real
    return {"cpu_s": cpu, "solves": solves[0], "link_time": float(prob.T @ n), "gap": gap}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50, help="nodes (50)")
    ap.add_argument("--densities", default="0.12,0.3", help="comma-separated (0.12,0.3)")
    ap.add_argument("--full", action="store_true", help="5 platforms per density, 3 runs")
    ap.add_argument("--seeds", type=int, default=None, help="platforms per density (2; full 5)")
    ap.add_argument("--repeat", type=int, default=None, help="runs of each, alternating (1; 3)")
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_edge_loads.json")
    args = ap.parse_args(argv)
    args.seeds = args.seeds or (5 if args.full else 2)
    args.repeat = args.repeat or (3 if args.full else 1)
    load = [os.getloadavg()[0]]
    rows, cases = [], []
    for density in (float(d) for d in args.densities.split(",")):
        for seed in range(args.seeds):
            p = random_graph_platform(args.n, density, seed=seed)
            prob = steady.steady_problem(p, "0", 10**6)
            pack = steady.pack_arborescences(prob)
            runs: dict[float, list[dict]] = {0.0: [], 0.9: []}
            for r in range(args.repeat):
                for sm in (0.0, 0.9) if r % 2 == 0 else (0.9, 0.0):
                    runs[sm].append(one(prob, pack, sm))
            plain, smooth = runs[0.0], runs[0.9]
            t0 = statistics.median(x["cpu_s"] for x in plain)
            t1 = statistics.median(x["cpu_s"] for x in smooth)
            cases.append({"density": density, "seed": seed, "plain": plain, "smoothed": smooth})
            rows.append([f"{density:g}", seed, f"{t0:.2f}", f"{t1:.2f}", f"{t0 / t1:.2f}",
                         plain[0]["solves"], smooth[0]["solves"],
                         f"{plain[0]['link_time']:.7g}", f"{smooth[0]['link_time']:.7g}",
                         f"{plain[0]['gap']:.1e}", f"{smooth[0]['gap']:.1e}"])  # fmt: skip
            print(f"  density {density:g} seed {seed} done", file=sys.stderr, flush=True)
    load.append(os.getloadavg()[0])
    head = ["density", "seed", "plain CPU s", "smoothed CPU s", "ratio", "plain solves",
            "smoothed solves", "plain link time", "smoothed link time", "plain gap",
            "smoothed gap"]  # fmt: skip
    title = (f"edge_loads on random {args.n}-node platforms, median of {args.repeat} "
             f"(load average {load[0]:.1f} -> {load[1]:.1f} on {os.cpu_count()} CPUs)")  # fmt: skip
    print(format_table(head, rows, title=title))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": "edge_loads", "n": args.n, "load": load, "cases": cases}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
