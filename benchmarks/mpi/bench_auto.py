"""How wrong the model is, where ``auto`` decides between a plan and MPI's own: the
measurement behind :data:`hetcoll.choice.DEFAULT_MARGIN`.

Under emulation of ``examples/net.json`` (8 ranks, and its first 4 nodes on 4 ranks; costs
times ``--time-scale``), for a broadcast (8 B to 4 MiB), an allreduce (8 B to 1 MiB per
rank) and a barrier, the jobs layer measures hetcoll's best plan (``auto`` for a broadcast,
the fastest hypercube planner otherwise), the binomial tree and MPI's own algorithm (MPICH's
for the call, emulated) next to the simulator's predictions.  Reported:

- every measured / predicted ratio, and the largest relative error;
- per call, the plan's predicted speed-up over MPI and its measured one, and by how much
  the prediction overstated it (``predicted / measured``).  ``auto`` runs a plan when its
  predicted speed-up exceeds ``1 + margin``; a margin at least as large as the largest
  overstatement minus 1 (over the calls where a plan was predicted faster at all) never
  picks a plan that measured slower than MPI here;
- with the default margin: how many calls ``auto`` gives a plan, and the least measured
  speed-up over MPI among them (below 1: a plan chosen that measured slower).

Run: ``.venv/bin/python benchmarks/mpi/bench_auto.py [--time-scale S] [--json PATH]``; prints
a table, writes ``results/bench_auto.json``.  The host's load (``os.getloadavg``) is in
the title: a busy host delays every rank, and the errors grow with it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from hetcoll.choice import DEFAULT_MARGIN, best_cube
from hetcoll.jobs import Run, entries, launch
from hetcoll.platform import Platform, load_platform
from hetcoll.report import format_table
from hetcoll.units import format_size, format_time

NET = Path(__file__).resolve().parents[2] / "examples" / "net.json"
BCAST = (8, 64 << 10, 1 << 20, 4 << 20)
ALLREDUCE = (8, 64 << 10, 1 << 20)


def platforms() -> dict[int, Platform]:
    net = load_platform(NET)
    four = Platform(net.nodes[:4], model=net.model, name="net, first 4 nodes")
    return {4: four, 8: net}


def runs(p: Platform, scale: float, repeat: int) -> list[Run]:
    out = [
        Run(
            p.to_dict(),
            "bcast",
            "auto",
            baselines=("binomial",),
            sizes=BCAST,
            repeat=repeat,
            native=True,
            time_scale=scale,
            timeout=600,
        )
    ]
    for n in ALLREDUCE:
        algo = best_cube(p, "allreduce", n, None, "sum")
        out.append(
            Run(
                p.to_dict(),
                "allreduce",
                algo,
                sizes=(n,),
                repeat=repeat,
                native=True,
                time_scale=scale,
                timeout=600,
            )
        )
    algo = best_cube(p, "barrier", 0, None, None)
    out.append(
        Run(p.to_dict(), "barrier", algo, repeat=repeat, native=True, time_scale=scale, timeout=600)
    )
    return out


def rows_of(ranks: int, result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per call: the plan's and MPI's measured and predicted times."""
    out = []
    for run in result["runs"]:
        for doc in run["documents"]:
            by = {e["algorithm"]: e for e in entries(doc) if e["algorithm"] != "native"}
            plan, mpi = by[doc["algorithm"]], by["mpi"]
            pred = mpi["predicted_time"] / plan["predicted_time"]
            meas = mpi["measured_time"] / plan["measured_time"]
            out.append(
                {
                    "ranks": ranks,
                    "operation": doc["operation"],
                    "nbytes": doc["nbytes"],
                    "plan": doc["algorithm"],
                    "mpich": mpi.get("mpich"),
                    "ratios": {k: e["measured_time"] / e["predicted_time"] for k, e in by.items()},
                    "plan_time": plan["measured_time"],
                    "mpi_time": mpi["measured_time"],
                    "predicted_speedup": pred,
                    "measured_speedup": meas,
                    "overstated": pred / meas,
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-scale", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default="results/bench_auto.json")
    args = ap.parse_args(argv)
    rows, load = [], [os.getloadavg()[0]]
    for ranks, p in platforms().items():
        print(f"{ranks} ranks ...", file=sys.stderr, flush=True)
        rows += rows_of(ranks, launch(runs(p, args.time_scale, args.repeat), ranks, timeout=3600))
    load.append(os.getloadavg()[0])
    table = [
        [
            str(r["ranks"]),
            r["operation"],
            format_size(r["nbytes"]),
            r["plan"],
            format_time(r["plan_time"]),
            f"MPI ({r['mpich']})",
            format_time(r["mpi_time"]),
            f"{r['predicted_speedup']:.2f}",
            f"{r['measured_speedup']:.2f}",
            f"{r['overstated']:.2f}",
            " ".join(f"{k} {v:.2f}" for k, v in r["ratios"].items()),
        ]
        for r in rows
    ]
    errors = [abs(v - 1) for r in rows for v in r["ratios"].values()]
    contenders = [r for r in rows if r["predicted_speedup"] > 1.05]  # a plan might be chosen
    worst = max((r["overstated"] for r in contenders), default=1.0)
    chosen = [r for r in rows if r["predicted_speedup"] > 1 + DEFAULT_MARGIN]
    slowest = min((r["measured_speedup"] for r in chosen), default=None)
    title = (
        f"auto's model under emulation of {NET.name} (costs x{args.time_scale:g}, best of "
        f"{args.repeat}; load average {load[0]:.1f}-{load[1]:.1f})"
    )
    headers = [
        "ranks",
        "call",
        "size",
        "plan",
        "measured",
        "MPI",
        "measured",
        "speed-up pred",
        "speed-up meas",
        "pred/meas",
        "measured/predicted",
    ]
    print(format_table(headers, table, title))
    print(
        f"largest error of a prediction: {max(errors):.0%}; largest overstatement of a "
        f"plan's speed-up over MPI where one was predicted (> 1.05): {worst:.2f} (a margin of "
        f"{max(worst - 1, 0):.2f} covers it)"
    )
    print(
        f"with the default margin ({DEFAULT_MARGIN}): auto chooses a plan in {len(chosen)} of "
        f"{len(rows)} calls; the least measured speed-up of those over MPI: "
        + ("-" if slowest is None else f"{slowest:.2f}")
    )
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "rows": rows,
        "time_scale": args.time_scale,
        "load": load,
        "largest_error": max(errors),
        "largest_overstatement": worst,
        "margin": DEFAULT_MARGIN,
        "chosen": len(chosen),
        "chosen_least_speedup": slowest,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
