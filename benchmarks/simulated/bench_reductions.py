"""Reduce, gather, scatter and their compositions: ``rooted_ls`` against the exact optimum
and against every broadcast tree planner run backwards, on random platforms (simulated).

    python benchmarks/simulated/bench_reductions.py [--quick | --full] [--trials T] [--out PATH]

The default (what ``make bench`` runs) draws 5 platforms per row (2 at 64 members);
``--full`` 20 (5 at 64), ``--quick`` 3 at 4, 8 and 16 members only.

Targets (``tini`` and ``postal`` platforms with per-node send, per-byte and combine costs):
``rooted_ls`` never slower than the best reversed planner, and within 2 % of the exact
optimum (``rooted_exact``) on average at up to 8 members (the table says how often it is
exact).  Larger member sets (16, 64) compare with the reversed planners only.  Each row:
the mean and largest gap to the optimum (%), how often ``rooted_ls`` is exact, how often
it is slower than the best reversed planner (must be 0), the best reversed planner's and
binomial's time over ours (means), and the median planning time of ``rooted_ls``.
Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from hetcoll import Platform, plan, simulate
from hetcoll.errors import HetcollError
from hetcoll.files import make_output_dir, write_atomic
from hetcoll.planners import REGISTRY, applicable
from hetcoll.platform import Node
from hetcoll.report import format_table
from hetcoll.rng import as_rng, spawn_seeds

US = 1e-6
COLLECTIVES = ("reduce", "gather", "scatter", "allreduce", "allgather")
FREE = ("allreduce", "allgather")
TOLERANCE = 1e-9  # relative: equal times computed along different paths


def random_platform(n: int, model: str, seed) -> Platform:
    """``n`` nodes with send costs from four classes (10-80 µs), 1 or 3 ns/B, combine costs
    0, 2 or 8 ns/B; ``postal``: latencies 5-50 µs, 100 MB/s or 1 GB/s per pair."""
    rng = as_rng(seed)
    nodes = tuple(
        Node(
            str(i),
            float(rng.choice([10, 20, 40, 80])) * US,
            float(rng.choice([1, 3])) * 1e-9,
            gamma=float(rng.choice([0, 2, 8])) * 1e-9,
        )
        for i in range(n)
    )
    if model == "tini":
        return Platform(nodes, model="tini")
    latency = rng.uniform(5, 50, (n, n)) * US
    np.fill_diagonal(latency, 0)
    bandwidth = rng.choice([1e8, 1e9], (n, n))
    return Platform(nodes, latency=latency, bandwidth=bandwidth, model=model)


def reversed_planners(collective: str, model: str, n: int) -> list[str]:
    """Every broadcast tree planner that serves the collective run backwards."""
    return [name for name in applicable(collective, model, n) if REGISTRY[name].reverses()]


def one_case(n: int, model: str, collective: str, nbytes: int, seed) -> dict:
    p = random_platform(n, model, seed)
    root = None if collective in FREE else "0"

    def time_of(method: str) -> float | None:
        try:
            sched = plan(p, root, method=method, collective=collective, nbytes=nbytes)
        except HetcollError:
            return None
        return simulate(p, sched).makespan

    t0 = time.process_time()
    ours = time_of("rooted_ls")
    cpu = time.process_time() - t0
    baselines = {m: time_of(m) for m in reversed_planners(collective, model, n)}
    baselines = {m: t for m, t in baselines.items() if t is not None}
    best_name = min(baselines, key=lambda m: (baselines[m], m))
    exact = time_of("rooted_exact") if n <= 8 else None
    return {
        "n": n,
        "model": model,
        "collective": collective,
        "ours": ours,
        "exact": exact,
        "best_reversed": baselines[best_name],
        "best_reversed_planner": best_name,
        "binomial": baselines.get("binomial"),
        "reversed": baselines,
        "cpu_s": cpu,
    }


def summarise(cases: list[dict]) -> dict:
    ours = np.array([c["ours"] for c in cases])
    best = np.array([c["best_reversed"] for c in cases])
    binom = np.array([c["binomial"] for c in cases])
    row = {
        "n": cases[0]["n"],
        "model": cases[0]["model"],
        "collective": cases[0]["collective"],
        "trials": len(cases),
        "slower_than_best_reversed": int(np.sum(ours > best * (1 + TOLERANCE))),
        "best_reversed_over_ours": float(np.mean(best / ours)),
        "binomial_over_ours": float(np.mean(binom / ours)),
        "cpu_median_s": statistics.median(c["cpu_s"] for c in cases),
    }
    if cases[0]["exact"] is not None:
        exact = np.array([c["exact"] for c in cases])
        gap = 100 * (ours / exact - 1)
        row.update(
            mean_gap_pct=float(gap.mean()),
            max_gap_pct=float(gap.max()),
            exact_pct=float(100 * np.mean(ours <= exact * (1 + TOLERANCE))),
            best_reversed_gap_pct=float(np.mean(100 * (best / exact - 1))),
        )
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer trials and sizes")
    ap.add_argument("--full", action="store_true", help="20 platforms per row (5 at 64)")
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nbytes", type=int, default=4096, help="bytes per member")
    ap.add_argument("--out", default="results/bench_reductions.json")
    args = ap.parse_args(argv)
    trials = args.trials or (3 if args.quick else 20 if args.full else 5)
    sizes = (4, 8, 16) if args.quick else (4, 6, 8, 16, 64)
    rows, cases = [], []
    seeds = iter(spawn_seeds(args.seed, 10_000))
    for n in sizes:
        for model in ("tini", "postal"):
            for collective in COLLECTIVES:
                batch = [
                    one_case(n, model, collective, args.nbytes, next(seeds))
                    for _ in range(trials if n <= 16 else max(trials // 4, 2))
                ]
                cases += batch
                rows.append(summarise(batch))
    print(table(rows, args.nbytes))
    verdicts = targets(rows)
    for line in verdicts["lines"]:
        print(line)
    doc = {
        "benchmark": "bench_reductions",
        "nbytes": args.nbytes,
        "seed": args.seed,
        "rows": rows,
        "targets": verdicts,
        "cases": cases,
    }
    make_output_dir(str(Path(args.out).parent))
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


def table(rows: list[dict], nbytes: int) -> str:
    def pct(x):
        return "-" if x is None else f"{x:.2f}"

    body = [
        [
            r["n"],
            r["model"],
            r["collective"],
            r["trials"],
            pct(r.get("mean_gap_pct")),
            pct(r.get("max_gap_pct")),
            pct(r.get("exact_pct")),
            pct(r.get("best_reversed_gap_pct")),
            r["slower_than_best_reversed"],
            f"{r['best_reversed_over_ours']:.3f}",
            f"{r['binomial_over_ours']:.3f}",
            f"{r['cpu_median_s'] * 1e3:.0f}",
        ]
        for r in rows
    ]
    headers = [
        "n",
        "model",
        "collective",
        "trials",
        "gap %",
        "max gap %",
        "exact %",
        "best rev. gap %",
        "slower than best rev.",
        "best rev./ours",
        "binomial/ours",
        "ms (cpu)",
    ]
    return format_table(
        headers,
        body,
        title=f"rooted_ls on random tini/postal platforms, {nbytes} B per member "
        "(gaps to rooted_exact; reversed: every broadcast tree planner run backwards)",
    )


def targets(rows: list[dict]) -> dict:
    small = [r for r in rows if "mean_gap_pct" in r]
    worst_mean = max((r["mean_gap_pct"] for r in small), default=0.0)
    slower = sum(r["slower_than_best_reversed"] for r in rows)
    trials = sum(r["trials"] for r in small)
    exact = sum(r["exact_pct"] * r["trials"] / 100 for r in small)
    ok_gap, ok_rev = worst_mean <= 2.0, slower == 0
    lines = [
        f"target: within 2 % of the optimum on average at n <= 8: largest mean gap "
        f"{worst_mean:.2f} % -> {'OK' if ok_gap else 'MISSED'}",
        f"        exact in {exact:.0f} of {trials} cases ({100 * exact / max(trials, 1):.1f} %)",
        f"target: never slower than the best reversed planner: {slower} slower -> "
        f"{'OK' if ok_rev else 'MISSED'}",
    ]
    return {
        "largest_mean_gap_pct": worst_mean,
        "exact_cases": exact,
        "cases_with_exact": trials,
        "slower_than_best_reversed": slower,
        "met": ok_gap and ok_rev,
        "lines": lines,
    }


if __name__ == "__main__":
    raise SystemExit(main())
