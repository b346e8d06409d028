"""Broadcast at every message size against the lower bound: the best single pipelined tree
and ``multi_tree``, each as ``bound / predicted time`` (1 at the bound), per message size.
Prints a table and writes ``results/bench_sizes.json``.

Platforms: :func:`hetcoll.generators.random_graph_platform` (Beaumont et al.'s Fig. 4
generator, density 0.12), root ``"0"``, slices of 1 MB, messages of 16 to 1 024 slices
(``--slices 16,64,256,1024,8192`` for the long ones).  The bound is
:func:`hetcoll.bounds.lower_bound` (size over the certified optimum, or one byte's fastest
reach).  "single" is the fastest of the
single-tree pipelined planners (:data:`SINGLE`) at the same slice ("over the cap" when each
sends more than ``MAX_TRANSFERS`` messages, from about 5 300 slices at n = 50, while a
``multi_tree`` timetable may send four times as many); ``multi_tree`` plans for
the message it is given (a timetable of several trees, or its best single tree when that is
predicted faster); "cpu" is multi_tree's planning plus simulation (process time).

    python benchmarks/simulated/bench_sizes.py                 # n = 10, 30, 50; 1 platform
    python benchmarks/simulated/bench_sizes.py --full          # n = 10, 30, 50; 3 platforms
    python benchmarks/simulated/bench_sizes.py --quick         # n = 10, 30; 1 platform
    python benchmarks/simulated/bench_sizes.py --model one_port_uni
"""

from __future__ import annotations

import argparse
import json
import platform as host
import sys
import time
from pathlib import Path

import numpy as np

from hetcoll import __version__, plan, simulate
from hetcoll.bounds import lower_bound
from hetcoll.errors import ScheduleError
from hetcoll.files import write_atomic
from hetcoll.generators import random_graph_platform
from hetcoll.report import format_table

SLICE = 10**6
DENSITY = 0.12
#: the single-tree pipelined planners compared with multi_tree
SINGLE = ("throughput_tree", "grow_tree", "prune_degree", "lp_grow", "binomial_graph")


def instance(n: int, seed: int, model: str, slices: list[int]) -> list[dict]:
    """One platform's rows: per message size, the bound and each planner's time."""
    p = random_graph_platform(n, DENSITY, seed=seed, model=model)
    rows = []
    for k in slices:
        size = k * SLICE
        bound = lower_bound(p, "0", size)
        times = {}
        for name in SINGLE:
            try:
                s = plan(p, "0", method=name, nbytes=size, segment_size=SLICE)
            except ScheduleError:  # over the message cap of a single tree: not a choice
                continue
            times[name] = simulate(p, s).makespan
        single = min(times, key=lambda a: (times[a], a)) if times else None
        t0 = time.process_time()
        s = plan(p, "0", method="multi_tree", nbytes=size, segment_size=SLICE)
        multi = simulate(p, s).makespan
        cpu = time.process_time() - t0
        rows.append(
            {
                "n": n,
                "seed": seed,
                "model": model,
                "slices": k,
                "bound": bound.seconds,
                "single": single,
                "single_time": times[single] if single else None,
                "times": times,
                "multi_tree_time": multi,
                "multi_tree_trees": int(s.params.get("trees", 1)),
                "multi_tree_cpu": cpu,
            }
        )
    return rows


def table(rows: list[dict]) -> list[list[str]]:
    """Per (n, slices): the worst and mean bound / time of each, multi_tree <= single."""
    out = []
    keys = sorted({(r["n"], r["slices"]) for r in rows})
    for n, k in keys:
        rs = [r for r in rows if (r["n"], r["slices"]) == (n, k)]
        single = [r["bound"] / r["single_time"] for r in rs if r["single_time"]]
        multi = [r["bound"] / r["multi_tree_time"] for r in rs]
        ok = sum(
            r["single_time"] is None or r["multi_tree_time"] <= r["single_time"] * (1 + 1e-9)
            for r in rs
        )
        trees = [r["multi_tree_trees"] for r in rs]
        out.append(
            [
                str(n),
                str(k),
                f"{np.mean([r['bound'] for r in rs]):.4g}",
                f"{100 * min(single):.1f}% / {100 * np.mean(single):.1f}%"
                if single
                else "over the cap",
                f"{100 * min(multi):.1f}% / {100 * np.mean(multi):.1f}%",
                f"{min(trees)}-{max(trees)}",
                f"{ok}/{len(rs)}",
                f"{max(r['multi_tree_cpu'] for r in rs):.2f}",
            ]
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10, 30; one platform each")
    ap.add_argument("--sizes", type=str, default=None, help="nodes, e.g. 10,30,50")
    ap.add_argument("--slices", type=str, default="16,64,256,1024", help="slices per message")
    ap.add_argument("--full", action="store_true", help="3 platforms per size")
    ap.add_argument("--seeds", type=int, default=None, help="platforms per size (1; full 3)")
    ap.add_argument("--model", default="one_port", choices=["one_port", "one_port_uni"])
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_sizes.json")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else None
    sizes = sizes or ([10, 30] if args.quick else [10, 30, 50])
    seeds = args.seeds or (3 if args.full else 1)
    slices = [int(x) for x in args.slices.split(",")]
    rows: list[dict] = []
    for n in sizes:
        for seed in range(seeds):
            rows += instance(n, seed, args.model, slices)
    print(
        f"bound / predicted time (worst / mean over {seeds} platform(s)), model {args.model}, "
        f"density {DENSITY}, slices of {SLICE} B"
    )
    head = ["n", "slices", "bound s", "single", "multi_tree", "trees", "mt<=single", "mt cpu s"]
    print(format_table(head, table(rows)))
    doc = {
        "benchmark": "bench_sizes",
        "hetcoll": __version__,
        "python": sys.version.split()[0],
        "machine": host.machine(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "rows": rows,
    }
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
