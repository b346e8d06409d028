"""A star of NICs emulated over MPI: measured against predicted (model ``nic``).

8 ranks on the built-in ``star8`` (4 NICs at 25 Gbit/s, 4 at 10 Gbit/s, 5 us each), every
cost multiplied by ``--time-scale`` (default 100: 8 ranks on 2 cores keep up with the
emulated NICs, also through ``forest``'s hundreds of messages per rank and call, which at
20 they do not); allgather (``M`` = the whole result, ``M / 8`` per rank) and allreduce
(int64 sum of an ``M``-byte vector) at ``M`` = 1 and 16 MiB, through the hypercube
planners ``blind`` (recursive doubling in rank order) and ``eff_cube``, the packed trees
of ``forest`` (several sends of a rank in flight at once) and ``auto`` (as the wrapper's
``algo="auto"`` runs it: the best hypercube plan); measured (least and
median of ``--repeat`` calls started together) over the simulator's prediction, and how
far the ranks fell behind the model on a busy host in the least call (``late``, the most
any rank reported; a measured time above the prediction by no more than that is the
host's doing: docs/runtime.md).  Under
``nic`` a rank's sends may be in flight together, and its sending and receiving NICs are
each paced through a token bucket (:mod:`hetcoll.runtime.emulation`).

Prints the table with the load average and writes ``results/bench_nic_emulation.json``.
Run: ``.venv/bin/python benchmarks/mpi/bench_nic_emulation.py [--repeat 5]
[--time-scale 100] [--sizes 1MiB,16MiB]``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hetcoll.jobs import Run, entries, launch
from hetcoll.platform import load_platform
from hetcoll.report import format_table
from hetcoll.units import parse_size

RANKS = 8


def measure(repeat: int, scale: float, sizes: list[int]) -> tuple[list[list], list[dict]]:
    p = load_platform("star8")
    runs = []
    cases = []
    for op in ("allgather", "allreduce"):
        for m in sizes:
            each = m // RANKS if op == "allgather" else m
            runs.append(
                Run(
                    p,
                    op,
                    "blind",
                    baselines=("eff_cube", "forest", "auto"),
                    native=False,
                    sizes=(each,),
                    repeat=repeat,
                    time_scale=scale,
                    timeout=600.0,
                )
            )
            cases.append((op, m))
    out = launch(runs, RANKS, timeout=3600)["runs"]
    rows, records = [], []
    for (op, m), run in zip(cases, out, strict=True):
        for r in entries(run["documents"][0]):
            pred = r["predicted_time"]
            rows.append(
                [
                    op,
                    f"{m >> 20} MiB",
                    r["algorithm"],
                    f"{pred * 1e3:.2f}",
                    f"{r['measured_time'] * 1e3:.2f}",
                    f"{r['median_time'] * 1e3:.2f}",
                    f"{r['measured_time'] / pred:.3f}",
                    f"{r['median_time'] / pred:.3f}",
                    f"{r.get('late', 0.0) * 1e3:.1f}",
                ]
            )
            records.append({"collective": op, "M": m, **r})
    return rows, records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("REPEAT", "5")))
    ap.add_argument("--time-scale", type=float, default=100.0)
    ap.add_argument("--sizes", default="1MiB,16MiB", help="result sizes M, comma-separated")
    ap.add_argument("--json", type=Path, default=Path("results/bench_nic_emulation.json"))
    args = ap.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    before = os.getloadavg()[0]
    rows, records = measure(args.repeat, args.time_scale, sizes)
    after = os.getloadavg()[0]
    print(
        format_table(
            [
                "op",
                "M",
                "planner",
                "pred ms",
                "min ms",
                "median ms",
                "min/pred",
                "med/pred",
                "late ms",
            ],
            rows,
            title=(
                f"star8 emulated (model nic, x{args.time_scale:g}), {RANKS} ranks, "
                f"{args.repeat} calls each (load average {before:.1f} before, {after:.1f} after)"
            ),
        )
    )
    doc = {
        "load_average": [before, after],
        "repeat": args.repeat,
        "time_scale": args.time_scale,
        "runs": records,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
