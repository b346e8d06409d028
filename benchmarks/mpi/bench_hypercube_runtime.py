"""Hypercube collectives over MPI: measured against predicted, and against MPI's own.

1. **Emulated** (8 ranks; ``--full``: 8 and 16): barrier and allreduce (8 B int64 sum) on a random
   Figueira & Reddi network (1..5 links x 2 ms per pair), for every hypercube planner;
   measured (least and median of ``REPEAT`` calls started together) over predicted.
2. **Not emulated** (4 and 8 ranks): ``Allreduce`` of a 1 MiB int64 array (sum) through
   hetcoll (eff_cube and blind embeddings; the costs do not matter here) against native
   ``MPI_Allreduce`` of the same communicator; ratio of medians.

Prints the tables and writes ``results/bench_hypercube_runtime.json``.
Run: ``.venv/bin/python benchmarks/mpi/bench_hypercube_runtime.py [--quick] [--full]
[--repeat 15]`` (``--quick``: 5 calls; ``REPEAT`` in the environment sets the default).
``--full`` adds the 16-rank emulated cube that docs/hypercube.md's figures cover (a larger
cube than the default's), oversubscribing a 2-core host on purpose; the default stays within
8 ranks.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hetcoll.generators import figueira_platform
from hetcoll.jobs import Run, entries, launch
from hetcoll.planners import hypercube_planners
from hetcoll.report import format_table

MIB = 1 << 20


def job(n: int, runs: list[Run]) -> list[list[dict]]:
    """Per run, its entries (planners, then native) of its one size."""
    out = launch(runs, n, timeout=1800)["runs"]
    return [entries(run["documents"][0]) for run in out]


def emulated(repeat: int, sizes: tuple[int, ...]) -> tuple[list[list], list[dict]]:
    rows, records = [], []
    for n in sizes:
        p = figueira_platform(n, 5, base_latency=2e-3, seed=n)
        first, *others = hypercube_planners()
        ops = ("barrier", "allreduce")
        runs = [
            Run(p, op, first, baselines=tuple(others), native=False, repeat=repeat) for op in ops
        ]
        for op, measured in zip(ops, job(n, runs), strict=True):
            for r in measured:
                pred = r["predicted_time"]
                rows.append(
                    [
                        n,
                        op,
                        r["algorithm"],
                        f"{pred * 1e3:.1f}",
                        f"{r['measured_time'] * 1e3:.2f}",
                        f"{r['median_time'] * 1e3:.2f}",
                        f"{r['measured_time'] / pred:.3f}",
                        f"{r['median_time'] / pred:.3f}",
                    ]
                )
                records.append({"ranks": n, "collective": op, **r})
    return rows, records


def native(repeat: int) -> tuple[list[list], list[dict]]:
    rows, records = [], []
    for n in (4, 8):
        p = figueira_platform(n, 5, seed=n)
        run = Run(
            p,
            "allreduce",
            "eff_cube",
            baselines=("blind",),
            sizes=(MIB,),
            emulate=False,
            repeat=repeat,
            settle=20e-3,
        )
        (measured,) = job(n, [run])
        by = {r["algorithm"]: r for r in measured}
        nat = by["native"]
        for name in ("eff_cube", "blind", "native"):
            r = by[name]
            rows.append(
                [
                    n,
                    name,
                    f"{r['measured_time'] * 1e3:.2f}",
                    f"{r['median_time'] * 1e3:.2f}",
                    f"{r['median_time'] / nat['median_time']:.2f}",
                ]
            )
            ratio = r["median_time"] / nat["median_time"]
            records.append({"ranks": n, **r, "ratio_to_native": ratio})
    return rows, records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 calls each")
    ap.add_argument("--full", action="store_true", help="emulated on 8 and 16 ranks")
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("REPEAT", "15")))
    ap.add_argument("--json", type=Path, default=Path("results/bench_hypercube_runtime.json"))
    args = ap.parse_args(argv)
    repeat = 5 if args.quick else args.repeat
    load = os.getloadavg()[0]
    e_rows, e_records = emulated(repeat, (8, 16) if args.full else (8,))
    print(
        format_table(
            ["N", "op", "planner", "pred ms", "min ms", "median ms", "min/pred", "med/pred"],
            e_rows,
            title=(
                f"hypercube collectives, emulated (1..5 links x 2 ms), {repeat} calls each "
                f"(load average {load:.1f})"
            ),
        )
    )
    n_rows, n_records = native(repeat)
    print()
    print(
        format_table(
            ["N", "algorithm", "min ms", "median ms", "median / native"],
            n_rows,
            title=f"Allreduce of 1 MiB int64 (sum), not emulated, {repeat} calls each",
        )
    )
    doc = {"load_average": load, "repeat": repeat, "emulated": e_records, "native": n_records}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
