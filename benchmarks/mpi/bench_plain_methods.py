"""What a call costs through the default ``HetComm``, where every call is MPI's own,
against the same C call of mpi4py on ``MPI.COMM_WORLD``, paired in one job.

One launch (``ranks/plain_methods.py`` is the MPI side) times ``Allreduce``, ``Allgather``
and ``Bcast`` in ``--rounds`` paired rounds of a program's loop of ``--calls`` calls (each
call's method looked up on the object, a check between calls) through ``world``
(``MPI.COMM_WORLD``), ``hetcomm`` (the default ``HetComm``), ``view`` (a plain
``MPI.Intracomm`` on its handle) and ``bound`` (a ``HetComm`` given a plain communicator's
bound methods on the instance and a ``__getattr__``: a Python layer between the call and
C).  Per collective and size it prints each variant's median µs per call (the slowest
rank's), its median ratio to ``world`` round by round (min-max), and in how many rounds it
was slower; then the same without communication, each rank alone on ``MPI.COMM_SELF``
(process time, each round's least of 5 loops, the slowest rank's).  Prints the load
average before and after and writes
``results/bench_plain_methods.json``.  Run: ``.venv/bin/python
benchmarks/mpi/bench_plain_methods.py [--ranks 2] [--rounds 30] [--calls 1000]
[--sizes 8,512]``.
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
PROGRAM = HERE / "ranks" / "plain_methods.py"
SIZES = (8, 512)
MOST_RANKS = 4


def rows(doc: dict[str, Any], key: str = "times") -> list[list[str]]:
    """Per collective, size and variant: median µs, median ratio to ``world`` (min-max),
    rounds slower than ``world``.

    >>> doc = {"sizes": [8], "variants": ["world", "x"], "rounds": 3,
    ...        "times": {"bcast": {"world": [[2e-6, 2e-6, 2e-6]], "x": [[1e-6, 3e-6, 2e-6]]}}}
    >>> rows(doc)[1]
    ['bcast', '8 B', 'x', '2.000', '1.000 (0.500-1.500)', '1/3']
    """
    out = []
    for collective, per in doc[key].items():
        for k, m in enumerate(doc["sizes"]):
            base = np.array(per["world"][k])
            for v in doc["variants"]:
                a = np.array(per[v][k])
                r = a / base
                out.append(
                    [
                        collective,
                        format_size(m),
                        v,
                        f"{np.median(a) * 1e6:.3f}",
                        f"{np.median(r):.3f} ({r.min():.3f}-{r.max():.3f})",
                        f"{int((a > base).sum())}/{len(a)}",
                    ]
                )
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="result sizes M")
    ap.add_argument("--json", type=Path, default=Path("results/bench_plain_methods.json"))
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
    if any(m < 1 or m > 1 << 26 for m in args.sizes):
        ap.error(f"--sizes: from 1 B to 64 MiB, got {args.sizes}")
    return args


def main(argv: list[str] | None = None) -> int:
    from hetcoll.jobs import run_program

    args = _args(argv)
    before = os.getloadavg()[0]
    job = [",".join(map(str, args.sizes)), str(args.calls), str(args.rounds)]
    doc = run_program(args.ranks, PROGRAM, job, timeout=3600)
    after = os.getloadavg()[0]
    if not doc["ok"]:
        print("a result differed from the expected one", file=sys.stderr)
        return 1
    title = (
        f"natively, {doc['ranks']} ranks on this host, one job: the same C call through four "
        f"objects, {doc['rounds']} paired rounds of loops of {doc['calls']} calls, µs per "
        f"call and ratio to COMM_WORLD (load average {before:.1f} before, {after:.1f} after)"
    )
    head = ["op", "M", "via", "µs", "/ world (min-max)", "slower"]
    print(format_table(head, rows(doc), title=title))
    alone = "each rank alone on COMM_SELF, process time per call (no communication)"
    print(format_table(head, rows(doc, "alone"), title=alone))
    doc.update(load_average=[before, after])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
