"""``auto`` stopping at the lower bound for the all-to-all collectives: its planning CPU
with the stop (a candidate within 0.1 % of :func:`hetcoll.allbounds.collective_bound` ends
the search before ``forest``) and without it, side by side in one run.

For each star of NICs (model ``nic``, 8 nodes: equal 25 Gbit/s NICs, 25/10 and
100/25/10 Gbit/s), each of allgather, reduce-scatter and allreduce and each result size
``M``, ``auto`` plans the collective twice: as it does (``plan(method="auto")``) and as it
did before the stop (the same comparison given no bound: every candidate, ``forest``
included).  The table gives both CPU seconds (the process's own time), their ratio,
whether ``forest`` was planned, the chosen planner and its time over the bound, and each
choice's time over the other's (1 where the stop changed nothing, at most 1.001 where it
did).

Prints the table and writes ``results/bench_auto_bound.json``.
Run: ``.venv/bin/python benchmarks/simulated/bench_auto_bound.py [--sizes 16MiB,256MiB]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from hetcoll import plan, simulate
from hetcoll.allbounds import collective_bound
from hetcoll.compare import compare
from hetcoll.generators import star_platform
from hetcoll.planners._shared import shared_work
from hetcoll.report import format_table
from hetcoll.units import format_size, parse_size

OPS = ("allgather", "reduce_scatter", "allreduce")
STARS = {
    "25": ("25Gbps",),
    "25/10": ("25Gbps", "10Gbps"),
    "100/25/10": ("100Gbps", "25Gbps", "10Gbps"),
}


def unstopped(p, op: str, nbytes: int) -> tuple[str, float]:
    """``auto``'s comparison without the bound: every candidate (its choice and time)."""
    with shared_work():
        found = compare(p, op, nbytes=nbytes, slices=[None], prune=True)
    return found.best.algorithm, found.best.predicted_time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16MiB,256MiB", help="result sizes M (comma-separated)")
    ap.add_argument("--out", type=Path, default=Path("results/bench_auto_bound.json"))
    args = ap.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    rows, doc = [], []
    for star, speeds in STARS.items():
        p = star_platform(8, speeds, "5us")
        for op in OPS:
            for m in sizes:
                nbytes = m if op == "allreduce" else m // len(p)
                t0 = time.process_time()
                s = plan(p, None, method="auto", collective=op, nbytes=nbytes)
                t_stop = time.process_time() - t0
                t0 = time.process_time()
                old, t_old_choice = unstopped(p, op, nbytes)
                t_full = time.process_time() - t0
                bound = collective_bound(p, op, m, time_limit=None).lower_bound
                t = simulate(p, s).makespan
                forest = "forest" in s.params["candidates"]
                rows.append([
                    star, op, format_size(m), f"{t_full:.2f}", f"{t_stop:.2f}",
                    f"{t_stop / t_full:.2f}", "yes" if forest else "no",
                    s.params["chosen"], f"{t / bound:.4f}", f"{t / t_old_choice:.5f}",
                ])  # fmt: skip
                doc.append({
                    "star": star, "op": op, "size": m, "cpu_without_stop": t_full,
                    "cpu": t_stop, "forest_planned": forest, "chosen": s.params["chosen"],
                    "chosen_without_stop": old, "time_over_bound": t / bound,
                    "time_over_without_stop": t / t_old_choice,
                })  # fmt: skip
    head = ["star", "op", "M", "CPU s before", "CPU s", "ratio", "forest", "chosen",
            "time/bound", "time/before"]  # fmt: skip
    print(format_table(head, rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": doc}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
