"""MPI's bandwidth baselines on stars of NICs (model ``nic``), simulated, against the
allreduce optimum of a single switch.

On stars of ``N`` nodes with two or three NIC speeds (``star_platform``: 25/10 Gbit/s,
100/25/10 Gbit/s), every MPICH algorithm of allgather (ring, Bruck, recursive doubling)
and allreduce (ring, recursive doubling, Rabenseifner's reduce-scatter + allgather) as
:mod:`hetcoll.mpich` lowers them, and hetcoll's hypercube planners (``blind``,
``eff_cube``), a binomial reduce + broadcast (``binomial``), the per-root ``ring`` (MPICH's
ring as a planner), ``forest`` (the optimal packing) and, for the allreduce, the butterfly
with bandwidth-balanced shares in its phases (``balanced``) and pipelined
(``butterfly_pipelined``), simulated at result sizes ``M``, with the CPU seconds the
per-root planners take to plan.  Each time is divided by
a lower bound: an allreduce's ``T* = max(M / b_min,
2 (N - 1) M / sum_i b_i)`` (what any allreduce on a non-blocking switch with per-node
full-duplex NICs needs), an allgather's ``(N - 1) / N M / b_min`` (the slowest NIC
receives every other block).

Prints a table per collective and writes ``results/bench_star_baselines.json``.
Run: ``.venv/bin/python benchmarks/simulated/bench_star_baselines.py [--n 8,16]
[--sizes 1MiB,64MiB]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from hetcoll import plan, simulate
from hetcoll.generators import star_platform
from hetcoll.mpich import native, predict
from hetcoll.planners import plan_hypercube
from hetcoll.report import format_table
from hetcoll.units import parse_size

SPEEDS = {"2 speeds": ("25Gbps", "10Gbps"), "3 speeds": ("100Gbps", "25Gbps", "10Gbps")}
MPICH = {
    "allgather": ("ring", "brucks", "recursive_doubling"),
    "allreduce": ("ring", "recursive_doubling", "reduce_scatter_allgather"),
}


def bound(collective: str, rates: list[float], m: int) -> float:
    n = len(rates)
    if collective == "allreduce":
        return max(m / min(rates), 2 * (n - 1) * m / sum(rates))
    return (n - 1) / n * m / min(rates)


def times(p, collective: str, m: int, planning: dict[str, float]) -> dict[str, float]:
    """Each algorithm's simulated time; ``planning`` gets hetcoll's per-root planners' CPU
    seconds to plan."""
    n = len(p)
    each = m // n if collective == "allgather" else m
    out = {}
    for algo in MPICH[collective]:
        if algo == "recursive_doubling" and n & (n - 1):
            continue
        count = each // 8 if collective == "allreduce" else None
        nat = native(collective, list(p.ids), each, count=count, algorithm=algo)
        out[f"mpich {algo}"] = predict(p, nat.program)
    for cube in ("blind", "eff_cube"):
        out[cube] = simulate(p, plan_hypercube(p, collective, method=cube, nbytes=each)).makespan
    tree = plan(p, None, method="binomial", collective=collective, nbytes=each)
    out["binomial (reduce/gather + bcast)"] = simulate(p, tree).makespan
    align = 8 if collective == "allreduce" else 1
    names = ["ring", "forest"]  # hetcoll's per-root planners
    if collective == "allreduce":
        names += ["balanced", "butterfly_pipelined"]
    for name in names:
        how = {"align": align}
        started = time.process_time()
        s = plan(p, None, method=name, collective=collective, nbytes=each, options=how)
        planning[name] = time.process_time() - started
        out[name] = simulate(p, s).makespan
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="8,16", help="star sizes, comma-separated")
    ap.add_argument("--sizes", default="1MiB,64MiB", help="result sizes M, comma-separated")
    ap.add_argument("--json", type=Path, default=Path("results/bench_star_baselines.json"))
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    started = time.process_time()
    records, rows = [], {c: [] for c in MPICH}
    for n in (int(x) for x in args.n.split(",")):
        for label, speeds in SPEEDS.items():
            p = star_platform(n, speeds, "5us")
            rates = [node.bandwidth for node in p.nodes]
            for m in (parse_size(s) for s in args.sizes.split(",")):
                m -= m % (8 * n)  # whole elements, whole blocks
                for collective in MPICH:
                    low = bound(collective, rates, m)
                    planning: dict[str, float] = {}
                    for name, t in times(p, collective, m, planning).items():
                        spent = planning.get(name)
                        rows[collective].append(
                            [
                                n,
                                label,
                                f"{m / 2**20:g} MiB",
                                name,
                                f"{t * 1e3:.3f}",
                                f"{t / low:.3f}",
                                "" if spent is None else f"{spent:.1f}",
                            ]
                        )
                        records.append(
                            {
                                "n": n,
                                "speeds": list(speeds),
                                "M": m,
                                "collective": collective,
                                "algorithm": name,
                                "time": t,
                                "bound": low,
                                "plan_cpu_seconds": spent,
                            }
                        )
    for collective, body in rows.items():
        print(
            format_table(
                ["N", "star", "M", "algorithm", "ms", "/ bound", "plan CPU s"],
                body,
                title=f"{collective} on stars (model nic), simulated (load average {load:.1f})",
            )
        )
        print()
    cpu = time.process_time() - started
    doc = {"load_average": load, "cpu_seconds": cpu, "runs": records}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json} ({cpu:.1f} CPU s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
