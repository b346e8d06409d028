"""What the ranks do between two calls, and how the calls are timed, change how MPICH's
algorithms rank: MPICH's own selection and each algorithm forced, with nothing, a read of
the result, a write of the input, a write of the result buffer or a temporary of the
result's size allocated and freed between two calls, in single calls between barriers or
in loops of calls, paired in one job.

One launch (``ranks/between_calls.py`` is the MPI side) measures, in ``--rounds`` paired
rounds, each mode (a way of timing and a step) and in it every variant once (``single``:
the median of ``--calls`` single calls between barriers, the slowest rank's; ``loop``: a
loop of ``--calls`` calls back to back, the slowest rank's time in the calls per call, as
the tune and ``bench_mpich_algorithms.py`` measure; the modes' and the variants' orders
rotated).  Per variant and mode it prints the median over the rounds of its time over
MPICH's own in the same round, and in how many rounds it was faster; under it MPICH's own
median time per mode.  ``write result`` is what a check that zeroes the result buffer
after every call measures (``bench_mpich_algorithms.py``'s reads the result and writes the
next input).  In single calls on 2 ranks at 32 KiB, writing the result buffer between
calls makes MPICH's own allreduce faster against ``recursive_doubling``,
``recursive_multiplying`` and ``recexch``; the other steps change nothing
(docs/runtime.md).  ``free temporary`` is what a check comparing the result through a
temporary array measures: on 2 ranks at 1 MiB it can make ``brucks`` faster than MPICH's
own allgather, where every other step finds it slower (docs/runtime.md).  ``--in-place``:
the calls in place, every step followed by the rank's contribution written into the buffer
(what a program writes before such a call).  Writes
``results/bench_between_calls.json``.  Run: ``.venv/bin/python
benchmarks/mpi/bench_between_calls.py [--ranks 2] [--collective allreduce] [--size 32KiB]
[--calls 50] [--rounds 30] [--in-place] [--ways single,loop] [--steps nothing]``.
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
PROGRAM = HERE / "ranks" / "between_calls.py"
MOST_RANKS = 4
#: the steps between calls (the rank program's BETWEEN) and the ways of timing (its WAYS)
STEPS = ("nothing", "read result", "write input", "write result", "free temporary")
WAYS = ("single", "loop")


def rows(doc: dict[str, Any]) -> list[list[str]]:
    """Per variant: per mode its median time over MPICH's own (paired per round) and the
    rounds it was faster; last, MPICH's own median in microseconds.

    >>> doc = {"variants": ["auto", "ring"], "modes": ["nothing"],
    ...        "times": {"nothing": {"auto": [2.0, 2.0, 2.0], "ring": [1.0, 3.0, 1.0]}}}
    >>> rows(doc)
    [['ring', '0.500 (2/3)'], ['auto us', '2000000.0']]
    """
    out = []
    for v in doc["variants"][1:]:
        row = [v]
        for mode in doc["modes"]:
            t = np.asarray(doc["times"][mode][v]) / np.asarray(doc["times"][mode]["auto"])
            row.append(f"{np.median(t):.3f} ({int((t < 1).sum())}/{len(t)})")
        out.append(row)
    auto = [f"{np.median(doc['times'][m]['auto']) * 1e6:.1f}" for m in doc["modes"]]
    return [*out, ["auto us", *auto]]


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--collective", choices=("allreduce", "allgather"), default="allreduce")
    ap.add_argument("--size", default="32KiB", help="result size M")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--in-place",
        action="store_true",
        help="calls in place, the contribution written into the buffer before each",
    )
    ap.add_argument(
        "--ways",
        default="single",
        help="how the calls are timed, comma-separated: single (each between barriers, "
        "the median), loop (back to back, as the tune and bench_mpich_algorithms.py)",
    )
    ap.add_argument(
        "--steps", default=",".join(STEPS), help="steps between calls, of " + ", ".join(STEPS)
    )
    ap.add_argument("--json", type=Path, default=Path("results/bench_between_calls.json"))
    args = ap.parse_args(argv)
    if not 2 <= args.ranks <= MOST_RANKS:
        ap.error(f"--ranks: from 2 to {MOST_RANKS}, got {args.ranks}")
    for name in ("calls", "rounds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}: at least 1, got {getattr(args, name)}")
    for name, known in (("ways", WAYS), ("steps", STEPS)):
        given = getattr(args, name).split(",")
        if not given or any(g not in known for g in given) or len(set(given)) < len(given):
            ap.error(f"--{name}: distinct ones of {', '.join(known)}, got {getattr(args, name)}")
    try:
        args.size = parse_size(args.size)
    except (HetcollError, ValueError) as exc:
        ap.error(f"--size: {exc}")
    if not 1 <= args.size <= 64 << 20:
        ap.error(f"--size: from 1 B to 64 MiB, got {args.size}")
    return args


def main(argv: list[str] | None = None) -> int:
    from hetcoll.jobs import run_program

    args = _args(argv)
    before = os.getloadavg()[0]
    place = "in-place" if args.in_place else "apart"
    cmd = [args.collective, str(args.size), str(args.calls), str(args.rounds), place]
    cmd += [args.ways, args.steps]
    doc = run_program(args.ranks, PROGRAM, cmd, timeout=1800)
    after = os.getloadavg()[0]
    if not doc["ok"]:
        print("a result differed from the expected one", file=sys.stderr)
        return 1
    print(
        format_table(
            ["variant", *doc["modes"]],
            rows(doc),
            title=(
                f"natively, {doc['ranks']} ranks, {args.collective} {format_size(args.size)}"
                f"{' in place' if args.in_place else ''}: "
                "time over MPICH's own (rounds faster) with each step between two calls; "
                f"{doc['rounds']} paired rounds, {doc['calls']} calls a measurement "
                f"(load average {before:.1f} before, {after:.1f} after)"
            ),
        )
    )
    doc["load_average"] = [before, after]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
