"""Switch networks (Hsu et al. 2005): planning time and predicted broadcast time of LABS,
TWO-VBBS (our reconstruction), switch_aware (ours) and FNF at 256 and 4096 workstations.

Random irregular networks (:func:`hetcoll.generators.switch_platform`: 8-port switches,
density 4, 8 speed types), 2048-flit messages, a broadcast from ``w0``.  The planner call
is timed (``prepare`` and building the Schedule included; generating the platform and
simulating excluded), wall and CPU seconds, best of ``--repeat`` runs; the predicted time is
the simulator's (event-driven, links held while the flits are in the network) and the summed
per-step maxima; each planner's gain over the better of LABS and TWO-VBBS on each topology
(mean, least, most).
Prints a table and writes ``results/bench_switch.json``.

    python benchmarks/simulated/bench_switch.py          # 256 and 4096 workstations, 1 topology
    python benchmarks/simulated/bench_switch.py --full   # 3 topologies each, best of 3 runs
    python benchmarks/simulated/bench_switch.py --quick  # 256 only, one topology
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

from hetcoll import __version__, plan, simulate
from hetcoll.files import write_atomic
from hetcoll.generators import switch_platform
from hetcoll.report import format_table
from hetcoll.steps import step_time

PLANNERS = ("labs", "two_vbbs", "switch_aware", "fnf")


def best_time(func, repeat: int):
    """The result of the first call, and the least wall and CPU seconds over ``repeat``
    calls (one when a call takes over 5 s)."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = func()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
        out = result if out is None else out
        if wall > 5.0:
            break
    return out, wall, cpu


def measure(n: int, seed: int, repeat: int, flits: int) -> dict:
    p = switch_platform(n, seed=seed, types=8)
    row = {"workstations": n, "switches": len(p.switches), "seed": seed, "planners": {}}
    for name in PLANNERS:
        s, wall, cpu = best_time(lambda name=name: plan(p, "w0", method=name, nbytes=flits), repeat)
        row["planners"][name] = {
            "plan_seconds": wall,
            "plan_cpu_seconds": cpu,
            "event": simulate(p, s).makespan,
            "steps": step_time(p, s),
            "chosen": s.params.get("chosen"),
        }
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 4096])
    ap.add_argument("--topologies", type=int, default=None, help="per size (1; full 3)")
    ap.add_argument("--repeat", type=int, default=None, help="best of (1; full 3)")
    ap.add_argument("--flits", type=int, default=2048)
    ap.add_argument("--quick", action="store_true", help="256 workstations, one topology")
    ap.add_argument("--full", action="store_true", help="3 topologies per size, best of 3")
    ap.add_argument("--out", default="results/bench_switch.json")
    args = ap.parse_args(argv)
    args.topologies = args.topologies or (3 if args.full else 1)
    args.repeat = args.repeat or (3 if args.full else 1)
    if args.quick:
        args.sizes, args.topologies, args.repeat = [256], 1, 1
    rows = [
        measure(n, seed, args.repeat, args.flits)
        for n in args.sizes
        for seed in range(1, args.topologies + 1)
    ]
    table = []
    summary = []
    for n in args.sizes:
        mine = [r for r in rows if r["workstations"] == n]
        for name in PLANNERS:
            plan_s = [r["planners"][name]["plan_seconds"] for r in mine]
            cpu_s = [r["planners"][name]["plan_cpu_seconds"] for r in mine]
            event = [r["planners"][name]["event"] for r in mine]
            steps = [r["planners"][name]["steps"] for r in mine]
            best = [
                min(r["planners"]["labs"]["event"], r["planners"]["two_vbbs"]["event"])
                for r in mine
            ]
            gains = [100 * (b - e) / b for b, e in zip(best, event, strict=True)]
            vs = float(np.mean(gains))
            entry = {
                "workstations": n,
                "planner": name,
                "plan_seconds_median": float(np.median(plan_s)),
                "plan_cpu_seconds_median": float(np.median(cpu_s)),
                "event_mean": float(np.mean(event)),
                "steps_mean": float(np.mean(steps)),
                "gain_vs_better_of_labs_two_vbbs_percent": vs,
                "gain_least_percent": float(min(gains)),
                "gain_most_percent": float(max(gains)),
            }
            summary.append(entry)
            table.append(
                [
                    n,
                    name,
                    f"{entry['plan_seconds_median']:.3f}",
                    f"{entry['plan_cpu_seconds_median']:.3f}",
                    f"{entry['event_mean'] * 1e3:.2f}",
                    f"{entry['steps_mean'] * 1e3:.2f}",
                    f"{vs:+.1f}",
                    f"{min(gains):+.1f} .. {max(gains):+.1f}",
                ]
            )
    print(
        format_table(
            [
                "N",
                "planner",
                "plan s (median)",
                "cpu s",
                "event-driven ms",
                "per-step maxima ms",
                "vs better of labs/two_vbbs %",
                "(least .. most)",
            ],
            table,
            title=(
                f"Switch networks: {args.topologies} random topologies per size (density 4, 8 "
                f"speed types), {args.flits}-flit broadcast from w0; TWO-VBBS reconstructed"
            ),
        )
    )
    doc = {
        "benchmark": "bench_switch",
        "hetcoll": __version__,
        "python": sys.version.split()[0],
        "machine": host.machine(),
        "cpus": os.cpu_count(),
        "args": vars(args),
        "rows": rows,
        "summary": summary,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
