"""``auto`` natively against MPI's own broadcast, 1 B to 64 MiB, at 2 and 4 ranks.

Without emulation, a default ``HetComm`` (``algo="auto"``, no tuning file) and mpi4py's
own ``comm.Bcast`` run side by side in one job per rank count (``ranks/auto_native.py``:
rounds of both, the order reversed every other round, a warm-up round not kept; small
messages timed over many calls back to back).  Per size: the median time of each and the
round-by-round ratio HetComm / MPI (median and range), what the wrapper chose, and the
verdict: *slower* only when every round's ratio is above 1 (a sign test: with the default
21 rounds, a chance of 1 in 2 million for two equal calls), so noise either way is not
called slower.  Data checked byte for byte on every rank after every sample.

Run: ``.venv/bin/python benchmarks/mpi/bench_auto_native.py [--ranks 2,4] [--rounds 21]
[--sizes 1,1KiB,64KiB,1MiB,16MiB,64MiB] [--json PATH]``; prints a table and a verdict
line, writes ``results/bench_auto_native.json``.  The host's load average is in the title.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hetcoll.jobs import run_program
from hetcoll.report import format_table
from hetcoll.units import format_size, format_time, parse_size

HERE = Path(__file__).parent
SIZES = "1,1KiB,64KiB,1MiB,16MiB,64MiB"


def paired(samples: dict[str, list[float]]) -> dict[str, Any]:
    """Median times and the round-by-round ratio ``hetcomm / mpi``: its median, range and
    whether it is ``slower`` (every round's ratio above 1).

    >>> p = paired({"hetcomm": [2.0, 3.0, 2.0], "mpi": [2.0, 2.0, 4.0]})
    >>> p["ratio_median"], p["ratio_range"], p["slower"]
    (1.0, [0.5, 1.5], False)
    >>> paired({"hetcomm": [3.0, 3.0], "mpi": [2.0, 2.0]})["slower"]
    True
    """
    ours, mpi = np.asarray(samples["hetcomm"]), np.asarray(samples["mpi"])
    ratio = ours / mpi
    return {
        "hetcomm": float(np.median(ours)),
        "mpi": float(np.median(mpi)),
        "ratio_median": float(np.median(ratio)),
        "ratio_range": [float(ratio.min()), float(ratio.max())],
        "slower": bool((ratio > 1).all()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,4", help="comma-separated rank counts")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--sizes", default=SIZES, help="comma-separated sizes (units allowed)")
    ap.add_argument("--json", type=Path, default=Path("results/bench_auto_native.json"))
    args = ap.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    load = [os.getloadavg()[0]]
    t0 = time.monotonic()
    rows, records = [], []
    for ranks in (int(r) for r in args.ranks.split(",")):
        doc = run_program(
            ranks,
            HERE / "ranks" / "auto_native.py",
            [",".join(map(str, sizes)), str(args.rounds)],
            timeout=600,
        )
        for nbytes in sizes:
            per = doc["sizes"][str(nbytes)]
            p = paired(per["samples"])
            choice = per["choice"] or {}
            rows.append(
                [
                    ranks,
                    format_size(nbytes),
                    per["calls"],
                    format_time(p["mpi"]),
                    format_time(p["hetcomm"]),
                    f"{p['ratio_median']:.3f}",
                    f"{p['ratio_range'][0]:.2f}-{p['ratio_range'][1]:.2f}",
                    f"{choice.get('algorithm', '-')} ({choice.get('source', '-')})",
                    "SLOWER" if p["slower"] else "no",
                ]
            )
            records.append(
                {
                    "ranks": ranks,
                    "nbytes": nbytes,
                    "calls": per["calls"],
                    **p,
                    "choice": per["choice"],
                    "samples": per["samples"],
                    "correct": doc["correct"],
                }
            )
    load.append(os.getloadavg()[0])
    title = (
        f"default HetComm / mpi4py Bcast, natively, paired over {args.rounds} rounds "
        f"(load average {load[0]:.1f}-{load[1]:.1f}, {time.monotonic() - t0:.0f} s)"
    )
    headers = ["ranks", "size", "calls", "MPI", "HetComm", "ratio", "range", "chose", "slower"]
    print(format_table(headers, rows, title))
    slower = [r for r in records if r["slower"]]
    correct = all(r["correct"] for r in records)
    print(
        f"verdict: {'PASS' if not slower and correct else 'FAIL'}: slower than MPI_Bcast "
        f"(every round) at {len(slower)} of {len(records)} sizes; data "
        f"{'correct' if correct else 'WRONG'} on every rank"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    doc_out = {"rounds": args.rounds, "load": load, "records": records}
    args.json.write_text(json.dumps(doc_out, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
