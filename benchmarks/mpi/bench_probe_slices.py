"""The slice ``auto`` picks from a probed platform, with and without the pipeline's
per-message cost, measured against native ``MPI_Bcast``.

Natively (no emulation), by default on 4 ranks beside ``--load`` busy processes (``python
-c "while True: pass"``, so that the ranks outnumber the cores as on a shared host), one
MPI job probes the ranks (``hetcoll.runtime.probe`` at ``PROBE_SIZES``, the pipeline
measured: ``runtime/pipeline_cost.py``), and the ``auto`` planner plans each broadcast size
twice: on the probed platform (``pipeline``: every node's ``t_ini`` holds the cost per
message the chain of every rank paid) and on the same platform without that cost
(``ping-pong``: the round trips' fit alone, what the probe wrote before).  A second job
measures native ``comm.Bcast`` and both choices side by side (``ranks/bcast_large.py
measure``: one call of each per round, the order reversed every other round, a warm-up
round not kept; data checked byte for byte on every rank after every call).  Per size:
each choice's planner and slice, its predicted time, and the median and quartiles of its
round-by-round ratio to native.

Run: ``.venv/bin/python benchmarks/mpi/bench_probe_slices.py [--ranks 4] [--load 2]
[--sizes 8,16] [--rounds 11] [--json PATH]`` (sizes in MiB); prints a table, writes
``results/bench_probe_slices.json``.  The host's load average is in the title.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hetcoll.jobs import run_program
from hetcoll.planners import plan
from hetcoll.platform import Platform
from hetcoll.report import format_table
from hetcoll.runtime.pipeline_cost import with_message_cost
from hetcoll.simulator import simulate
from hetcoll.units import format_size, format_time

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bcast_large import paired
from bench_probe import busy, stop

HERE = Path(__file__).parent
MIB = 1 << 20
#: round trips up to the largest broadcast measured (the size curve is measured within)
PROBE_SIZES = (0, 64 << 10, MIB, 4 * MIB, 16 * MIB)
ROOT = "0"


def auto_choice(platform: Platform, nbytes: int) -> dict[str, Any]:
    """The ``auto`` planner's choice for a broadcast of ``nbytes`` from the first node: the
    planner it chose, the slice (None: the message whole) and the predicted time (s)."""
    s = plan(platform, ROOT, method="auto", nbytes=nbytes)
    return {
        "algo": s.params["chosen"],
        "segment_size": s.params.get("segment_size"),
        "predicted": simulate(platform, s).makespan,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--load", type=int, default=2, help="busy processes beside the job")
    ap.add_argument("--sizes", default="8,16", help="comma-separated sizes in MiB")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--json", type=Path, default=Path("results/bench_probe_slices.json"))
    args = ap.parse_args(argv)
    sizes = [int(x) * MIB for x in args.sizes.split(",")]
    t0 = time.monotonic()
    procs = busy(args.load)
    try:
        load = [os.getloadavg()[0]]
        probed = run_program(
            args.ranks,
            HERE / "ranks" / "probe_slices.py",
            [",".join(map(str, PROBE_SIZES))],
            timeout=1800,
        )
        cost = probed["pipeline"]["message_cost"]
        with_cost = Platform.from_dict(probed["platform"])
        platforms = {"ping-pong": with_message_cost(with_cost, -cost), "pipeline": with_cost}
        spec: dict[str, Any] = {
            "rounds": args.rounds,
            "platforms": {k: p.to_dict() for k, p in platforms.items()},
            "sizes": [
                {
                    "nbytes": n,
                    "variants": [
                        {"name": name, "platform": name, **auto_choice(p, n)}
                        for name, p in platforms.items()
                    ],
                }
                for n in sizes
            ],
        }
        with tempfile.TemporaryDirectory(prefix="bench-probe-slices-") as tmp:
            path = Path(tmp) / "spec.json"
            path.write_text(json.dumps(spec))
            measured = run_program(
                args.ranks, HERE / "ranks" / "bcast_large.py", ["measure", path], timeout=3600
            )
        load.append(os.getloadavg()[0])
    finally:
        stop(procs)
    rows, records = [], []
    for per in spec["sizes"]:
        got = measured["sizes"][str(per["nbytes"])]
        summary = paired(got["samples"])
        rows.append([format_size(per["nbytes"]), "native", "MPI_Bcast", "", "", "", "1", ""])
        rows[-1][5] = format_time(summary["native"]["median"])
        for v in per["variants"]:
            s = summary[v["name"]]
            seg = v["segment_size"]
            rows.append(
                [
                    "",
                    f"auto ({v['name']})",
                    v["algo"],
                    "whole" if seg is None else format_size(seg),
                    format_time(v["predicted"]),
                    format_time(s["median"]),
                    f"{s['ratio_median']:.2f}",
                    "{:.2f}-{:.2f}".format(*s["ratio_quartiles"]),
                ]
            )
        records.append({**per, "correct": got["correct"], "summary": summary})
    pipe = probed["pipeline"]
    title = (
        f"{args.ranks} ranks natively beside {args.load} busy processes (load average "
        f"{load[0]:.1f}-{load[1]:.1f}); pipeline's cost per message "
        f"{format_time(cost)} (chain periods "
        + ", ".join(
            f"{format_size(s)}: {format_time(m)} measured / {format_time(p)} predicted"
            for s, m, p in zip(
                pipe["segment_sizes"], pipe["period"], pipe["predicted"], strict=True
            )
        )
        + f"); probe reliable: {probed['reliable']}, {probed['seconds']:.0f} s; data correct: "
        f"{all(r['correct'] for r in records)}"
    )
    headers = [
        "size",
        "variant",
        "planner",
        "slice",
        "predicted",
        "median",
        "/ native",
        "quartiles",
    ]
    print(format_table(headers, rows, title))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "ranks": args.ranks,
        "busy_processes": args.load,
        "load": load,
        "probe": probed,
        "sizes": records,
        "seconds": time.monotonic() - t0,
    }
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0 if all(r["correct"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
