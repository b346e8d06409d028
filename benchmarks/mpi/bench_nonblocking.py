"""Persistent and nonblocking collectives without emulation (4 ranks): the per-call cost of a
1-byte persistent ``Bcast`` (``Start`` + ``Wait``) next to MPI's ``Bcast`` and
``Bcast_init``, and the overlap of 8 MiB ``Ibcast``/``Iallreduce`` with computation,
measured as OSU's ``osu_ibcast``/``osu_iallreduce`` do, next to MPI's own.

Targets (on an idle host): the persistent 1-byte ``Bcast`` within 1.1x of MPI's ``Bcast``
and ``Bcast_init``; call + compute + wait within 1.25x of the compute alone.  Measured for
a default ``HetComm`` (``algo="auto"``: natively on one host a 1-byte ``Bcast`` is MPI's own
choice, so its persistent and nonblocking forms are MPI's own requests) and one planned
with ``binomial`` (hetcoll's schedule on the program's or the progress thread).  Rounds
alternate the variants; medians of round-by-round ratios.  Prints tables, writes
``results/bench_nonblocking.json``.
Run: ``.venv/bin/python benchmarks/mpi/bench_nonblocking.py [--ranks 4] [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hetcoll.jobs import run_program
from hetcoll.report import format_table

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    before = os.getloadavg()
    data = run_program(
        args.ranks, HERE / "ranks" / "nonblocking.py", [str(args.rounds)], timeout=1800
    )
    data["load_average"] = before, os.getloadavg()
    p = data["persistent"]
    rows = [[k, f"{v['median_s'] * 1e6:.1f} us"] for k, v in p.items() if isinstance(v, dict)]
    print(
        format_table(
            ["1-byte Bcast, per call", "median"],
            rows,
            title=f"{args.ranks} ranks (load {before[0]:.1f} before)",
        )
    )
    names = [k.split(" / ")[0] for k in p if k.endswith(" / MPI Bcast")]
    rows = [[k, f"{p[f'{k} / MPI Bcast']:.2f}", f"{p[f'{k} / MPI Bcast_init']:.2f}"] for k in names]
    print(
        format_table(
            ["1-byte Bcast", "/ MPI Bcast", "/ MPI Bcast_init"],
            rows,
            title="the ratios to MPI's own (target: persistent Bcast within 1.1x of both)",
        )
    )
    rows = [
        [
            k,
            f"{v['pure_s'] * 1e3:.2f} ms",
            f"{v['compute_s'] * 1e3:.2f} ms",
            f"{v['total_s'] * 1e3:.2f} ms",
            f"{v['total_over_compute']:.2f}",
        ]
        for k, v in data["overlap"].items()
    ]
    print(
        format_table(
            ["call", "call + wait", "compute", "call + compute + wait", "total / compute"],
            rows,
            title=f"overlap, {args.ranks} ranks (load {before[0]:.1f} before)",
        )
    )
    Path("results").mkdir(exist_ok=True)
    Path("results/bench_nonblocking.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
