"""The exact ``optimal`` planner from 16 to 64 members in 2 to 8 cost classes: time and
(multiset, sub-multiset) evaluations, next to the full recurrence's (every entry the
minimum over every sub-multiset).  Prints a table and writes ``results/bench_optimal.json``.

Each instance is the worst case of its size: the members spread evenly over ``K`` classes
(100, 200, ... µs; the first classes get one more when ``K`` does not divide ``N``), the
source in the dearest class (it then needs a table of its own).  ``optimal`` is timed from
the planner call (prepare, programme, tree, Schedule), best of ``--repeat``; the full
recurrence (``certify=False``: every entry the minimum over every sub-multiset, as the
planner computed it before) is timed side by side where it makes at most ``--full-limit``
evaluations; the speed-up is the ratio of CPU times (the machine may be shared).  Two
targets are also timed from the command line
(``hetcoll plan FILE --algo optimal``, a fresh process: import included).

    python benchmarks/simulated/bench_optimal.py            # 16..40 x 2..8 (make bench)
    python benchmarks/simulated/bench_optimal.py --full     # 16..64 x 2..8
    python benchmarks/simulated/bench_optimal.py --quick    # 16..32 x 2..4, a smoke run

The default covers the command-line targets (32 members in 8 classes, 48 in 4) and the
sizes up to 40; ``--full`` adds 48, 56 and 64 members in every class count (each of their
8-class cases takes minutes of CPU, best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hetcoll import __version__
from hetcoll.errors import PlannerError
from hetcoll.files import write_atomic
from hetcoll.planners.optimal import _ClassDP, optimal
from hetcoll.platform import Platform, nodes_from_costs, save_platform
from hetcoll.report import format_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_planners import best_time, machine

US = 1e-6
#: the command-line targets: (members, classes, seconds)
TARGETS = ((32, 8, 10.0), (48, 4, 2.0))


def worst_case(n: int, k: int) -> np.ndarray:
    """``n`` costs over ``k`` classes as evenly as possible, the source (first) dearest."""
    classes = np.arange(1, k + 1) * 100 * US
    costs = classes[np.arange(n) % k]
    return np.concatenate([[classes[-1]], np.sort(costs)[: n - 1]])


def platform_of(costs: np.ndarray) -> Platform:
    return Platform(nodes_from_costs(costs), model="tini")


def case(n: int, k: int, repeat: int, full_limit: float) -> dict:
    costs = worst_case(n, k)
    row = {"members": n, "classes": k, "full_evaluations": _ClassDP.work_for(costs[0], costs[1:])}
    try:
        dp = _ClassDP.of(costs[0], costs[1:])
    except PlannerError as exc:
        return row | {"refused": str(exc)}
    row |= {"states": dp.n_states, "evaluations": dp.evaluations, "latency": dp.value}
    p = platform_of(costs)
    row["seconds"], row["cpu_seconds"] = best_time(lambda: optimal(p, "0"), repeat)
    if row["full_evaluations"] <= full_limit:
        t0, c0 = time.perf_counter(), time.process_time()
        full = _ClassDP.of(costs[0], costs[1:], certify=False)
        row["full_seconds"] = time.perf_counter() - t0
        row["full_cpu_seconds"] = time.process_time() - c0
        if full.value != dp.value:  # never: tests/test_planners_optimal.py checks it entry by entry
            raise AssertionError(f"N={n} K={k}: {dp.value} != full {full.value}")
    return row


def _speedup(row: dict) -> str:
    if "refused" in row:
        return "refused: max_states"
    if "full_seconds" not in row:
        return "-"
    return f"{row['full_cpu_seconds'] / row['cpu_seconds']:.1f}"


def from_the_command_line(n: int, k: int) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``hetcoll plan FILE --algo optimal`` in a fresh
    process."""
    exe = Path(sys.executable).with_name("hetcoll")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.json"
        save_platform(platform_of(worst_case(n, k)), path)
        t0, c0 = time.perf_counter(), _children_cpu()
        subprocess.run(
            [str(exe), "plan", str(path), "--root", "0", "--algo", "optimal", "--json"],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=600,
        )
        return time.perf_counter() - t0, _children_cpu() - c0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="16..32 members, 2..4 classes")
    ap.add_argument("--full", action="store_true", help="16..64 members")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument(
        "--full-limit", type=float, default=3e8, help="time the full recurrence up to this work"
    )
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_optimal.json")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "full" if args.full else "default"
    sizes = {"quick": (16, 24, 32), "default": (16, 24, 32, 40)}.get(
        mode, (16, 24, 32, 40, 48, 56, 64)
    )
    class_counts = (2, 4) if args.quick else (2, 4, 6, 8)
    rows = []
    for n in sizes:
        for k in class_counts:
            rows.append(case(n, k, args.repeat, args.full_limit))
            r = rows[-1]
            print(f"  N={n} K={k}: {r.get('seconds', 'refused')}", file=sys.stderr)
    cli = []
    for n, k, t in () if args.quick else TARGETS:
        wall, cpu = from_the_command_line(n, k)
        cli.append(
            {"members": n, "classes": k, "target_seconds": t, "seconds": wall, "cpu_seconds": cpu}
        )

    doc = {
        "benchmark": "optimal",
        "hetcoll": __version__,
        "machine": machine(),
        "mode": mode,
        "load_average": os.getloadavg(),
        "cases": rows,
        "command_line": cli,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)

    def num(x, fmt=".3g"):
        return "-" if x is None else format(x, fmt)

    print(
        format_table(
            [
                "N",
                "K",
                "states",
                "evaluations",
                "full recurrence",
                "optimal (s)",
                "CPU (s)",
                "full CPU (s)",
                "CPU speed-up",
            ],
            [
                [
                    r["members"],
                    r["classes"],
                    num(r.get("states")),
                    num(r.get("evaluations")),
                    num(r["full_evaluations"]),
                    num(r.get("seconds"), ".3f"),
                    num(r.get("cpu_seconds"), ".3f"),
                    num(r.get("full_cpu_seconds"), ".3f"),
                    _speedup(r),
                ]
                for r in rows
            ],
            title="optimal, worst case of each size (even classes, source dearest)",
        )
    )
    if cli:
        print()
        print(
            format_table(
                ["N", "K", "hetcoll plan (s)", "CPU (s)", "target (s)"],
                [
                    [
                        c["members"],
                        c["classes"],
                        f"{c['seconds']:.2f}",
                        f"{c['cpu_seconds']:.2f}",
                        c["target_seconds"],
                    ]
                    for c in cli
                ],
                title="from the command line (fresh process, import included)",
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
