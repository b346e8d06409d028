"""What a tuned ``HetComm`` adds to a call that forces an MPICH algorithm: the same
algorithm forced around mpi4py's method, the ``HetComm``'s call and its class's method,
paired in one job, microseconds per call.

One launch (``ranks/forced_dispatch.py`` is the MPI side) gives a ``HetComm`` a tuning file
forcing ``recursive_doubling`` (``Allreduce``) and ``ring`` (``Allgather``) at each size,
then times, in ``--rounds`` paired rounds, loops of ``--calls`` calls back to back of:
``plain``, mpi4py's method in the stores that force the algorithm (what the tune and
``bench_mpich_algorithms.py`` force); ``hetcomm``, the ``HetComm``'s one-step method
(:mod:`hetcoll.runtime.forced`); ``class``, the planning class's method of the same
``HetComm`` (the look-up of a call given to MPI, then the forcing wrapper).  Then the Python work
alone: the same three with a C function that does nothing in place of mpi4py's method,
out of reach of the ranks' scheduling.  Per size the
medians over the rounds of each (µs per call, the slowest rank's) and, round by round,
``hetcomm`` and ``class`` minus ``plain`` (median over the rounds, µs) and over ``plain``
(median, min-max).  Prints the table with the load average before and after and writes
``results/bench_forced_dispatch.json``.  Run: ``.venv/bin/python
benchmarks/mpi/bench_forced_dispatch.py [--ranks 2] [--rounds 30] [--calls 500]
[--sizes 8,512,32KiB]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hetcoll.errors import HetcollError
from hetcoll.report import format_table
from hetcoll.units import format_size, parse_size

HERE = Path(__file__).parent
PROGRAM = HERE / "ranks" / "forced_dispatch.py"
SIZES = (8, 512, 32 << 10)
MOST_RANKS = 4


def measure(ranks: int, rounds: int, calls: int, sizes) -> dict[str, Any]:
    """The one launch's document (``ranks/forced_dispatch.py``)."""
    from hetcoll.jobs import run_program

    args = [",".join(map(str, sizes)), str(calls), str(rounds)]
    return run_program(ranks, PROGRAM, args, timeout=3600)


def summary(doc: dict[str, Any], key: str = "times") -> list[dict[str, Any]]:
    """Per collective and size: each variant's median seconds per call over the rounds and,
    round by round, ``hetcomm`` and ``class`` against ``plain``: the median difference
    (seconds) and the median, min and max ratio; the least time over the rounds minus
    ``plain``'s least (seconds).

    >>> times = {"allreduce": {"plain": [[2.0, 1.0, 3.0]], "hetcomm": [[2.5, 1.0, 3.3]],
    ...                        "class": [[3.0, 2.0, 4.5]]}}
    >>> s = summary({"sizes": [8], "times": times})[0]
    >>> s["hetcomm_over"], s["class_over"], s["hetcomm_ratio"], s["class_ratio_min"]
    (0.3, 1.0, 1.1, 1.5)
    >>> s["hetcomm_over_least"], s["class_over_least"]
    (0.0, 1.0)
    """
    out = []
    for collective, runs in doc[key].items():
        for i, m in enumerate(doc["sizes"]):
            plain = np.array(runs["plain"][i])
            row: dict[str, Any] = {"collective": collective, "M": m}
            for v in ("plain", "hetcomm", "class"):
                row[v] = float(np.median(runs[v][i]))
            for v in ("hetcomm", "class"):
                t = np.array(runs[v][i])
                ratio = t / plain
                row[f"{v}_over"] = round(float(np.median(t - plain)), 12)
                row[f"{v}_ratio"] = round(float(np.median(ratio)), 12)
                row[f"{v}_ratio_min"] = round(float(ratio.min()), 12)
                row[f"{v}_ratio_max"] = round(float(ratio.max()), 12)
                row[f"{v}_over_least"] = round(float(t.min() - plain.min()), 12)
            out.append(row)
    return out


def table(
    doc: dict[str, Any], rows: list[dict[str, Any]], load: tuple[float, float], alone=False
) -> str:
    def us(x: float) -> str:
        return f"{x * 1e6:.2f}"

    def ratio(r: dict[str, Any], v: str) -> str:
        return f"{r[f'{v}_ratio']:.3f} ({r[f'{v}_ratio_min']:.3f}-{r[f'{v}_ratio_max']:.3f})"

    body = [
        [
            r["collective"],
            format_size(r["M"]),
            doc["algorithms"][r["collective"]],
            us(r["plain"]),
            us(r["hetcomm"]),
            us(r["hetcomm_over"]),
            ratio(r, "hetcomm"),
            us(r["hetcomm_over_least"]),
            us(r["class"]),
            us(r["class_over"]),
            ratio(r, "class"),
            us(r["class_over_least"]),
        ]
        for r in rows
    ]
    return format_table(
        [
            "op",
            "M",
            "forced",
            "plain forced µs",
            "HetComm µs",
            "HetComm - plain µs",
            "HetComm / plain (min-max)",
            "least: HetComm - plain µs",
            "class method µs",
            "class - plain µs",
            "class / plain (min-max)",
            "least: class - plain µs",
        ],
        body,
        title=(
            f"natively, {doc['ranks']} ranks on this host, one job: a tuned HetComm's forced "
            f"call against the same algorithm forced around mpi4py's method, {doc['rounds']} "
            f"paired rounds of {doc['calls']} calls back to back, µs per call (load average "
            f"{load[0]:.1f} before, {load[1]:.1f} after)"
            if not alone
            else "the Python work alone, the same variants with a C function that does "
            "nothing in place of mpi4py's method, each rank's least of 5 loops (the slowest "
            "rank's), "
            "µs per call"
        ),
    )


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="result sizes M")
    ap.add_argument("--json", type=Path, default=Path("results/bench_forced_dispatch.json"))
    args = ap.parse_args(argv)
    if not 2 <= args.ranks <= MOST_RANKS:
        ap.error(f"--ranks: from 2 to {MOST_RANKS}, got {args.ranks}")
    for name in ("rounds", "calls"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}: at least 1, got {getattr(args, name)}")
    try:
        args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    except (HetcollError, ValueError) as exc:
        ap.error(f"--sizes: {exc}")
    if any(m < 1 or m > 1 << 20 for m in args.sizes):
        ap.error(f"--sizes: from 1 B to 1 MiB, got {args.sizes}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    before = os.getloadavg()[0]
    doc = measure(args.ranks, args.rounds, args.calls, args.sizes)
    after = os.getloadavg()[0]
    if not doc["ok"]:
        print("a result differed from the expected one", file=sys.stderr)
        return 1
    rows, alone = summary(doc), summary(doc, "dispatch")
    print(table(doc, rows, (before, after)))
    print(table(doc, alone, (before, after), alone=True))
    doc.update(load_average=[before, after], summary=rows, summary_dispatch=alone)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
