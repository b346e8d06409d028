"""The default ``HetComm`` natively on this host against every MPICH algorithm forced
through its control variables, paired in one job: ``Allreduce`` and ``Allgather`` at
8 B-64 MiB.

One launch (``ranks/mpich_algorithms.py`` is the MPI side) first measures the tuning file
``hetcoll tune --candidates 0 --mpich-algorithms`` writes for these ranks and sizes, gives
it to a ``HetComm`` on a flat platform, then times, per collective and size, in
``--rounds`` paired rounds: plain mpi4py under MPICH's own selection (``auto``), under each
algorithm the installed MPICH accepts forced for the call through ``MPI_T``
(:meth:`hetcoll.runtime.mpich_cvars.Algorithms.forcing`, the algorithm's variable and its
``..._POSIX_INTRA_ALGORITHM`` set to ``mpir``, restored after the call), and the tuned
``HetComm``; the order rotated every round and reversed every other round.  A variant's
time in a round is the median over ``--repeat`` calls of the slowest rank's.

Per size: the best forced algorithm (the lowest median over the rounds) and, round by
round, HetComm / its time, reported as the median and the min-max over the rounds, and
whether HetComm lost to it in every round; HetComm / the round's fastest forced algorithm,
whichever it was (median; biased against HetComm, the least of several noisy times); and
HetComm / MPICH's own selection (median).  The target (the never-slower rule): the
median ratio at most 1 beyond noise, never slower in every round.  Prints the table with
the load average before and after and writes ``results/bench_mpich_algorithms.json``.
Run: ``.venv/bin/python benchmarks/mpi/bench_mpich_algorithms.py [--ranks 4] [--rounds 5]
[--repeat 5] [--sizes 8,512,32KiB,1MiB,16MiB,64MiB]``.
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
PROGRAM = HERE / "ranks" / "mpich_algorithms.py"
MIB = 1 << 20
SIZES = (8, 512, 32 << 10, MIB, 16 * MIB, 64 * MIB)
MOST_RANKS = 8
COLLECTIVES = ("allreduce", "allgather")


def measure(ranks: int, rounds: int, repeat: int, sizes) -> dict[str, Any]:
    """The one launch's document (``ranks/mpich_algorithms.py``)."""
    from hetcoll.jobs import run_program

    args = [",".join(map(str, sizes)), str(repeat), str(rounds)]
    return run_program(ranks, PROGRAM, args, timeout=3600)


def summary(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per collective and size: the median over the rounds of each variant's time; the
    best forced algorithm (the lowest median) and, round by round, HetComm / its time
    (median, min, max; ``lost_every_round``: above 1 in every round); HetComm / the round's
    fastest forced algorithm, whichever it was (``ratio_fastest``, median: biased against
    HetComm, the least of several noisy times); HetComm / MPICH's ``auto`` (median).

    >>> times = {"allreduce": {"auto": [[2.0, 1.0, 3.0]], "ring": [[1.0, 4.0, 2.0]],
    ...                        "tree": [[3.0, 1.0, 2.5]], "hetcomm": [[2.0, 1.5, 3.0]]}}
    >>> s = summary({"sizes": [8], "times": times,
    ...              "choices": {"allreduce": [{"algorithm": "mpi"}]}})[0]
    >>> s["best"], s["ratio"], s["ratio_min"], s["lost_every_round"], s["ratio_fastest"]
    ('ring', 1.5, 0.375, False, 1.5)
    """
    out = []
    for collective in COLLECTIVES:
        runs = doc["times"].get(collective)
        if not runs:
            continue
        names = [v for v in runs if v not in ("auto", "hetcomm")]
        for i, m in enumerate(doc["sizes"]):
            forced = np.array([runs[n][i] for n in names]).T  # rounds x algorithms
            het = np.array(runs["hetcomm"][i])
            auto = np.array(runs["auto"][i])
            medians = np.median(forced, axis=0)
            best = int(np.argmin(medians))
            ratio = het / forced[:, best]
            out.append(
                {
                    "collective": collective,
                    "M": m,
                    "hetcomm": float(np.median(het)),
                    "auto": float(np.median(auto)),
                    "forced": {n: float(medians[j]) for j, n in enumerate(names)},
                    "best": names[best],
                    "ratio": float(np.median(ratio)),
                    "ratio_min": float(ratio.min()),
                    "ratio_max": float(ratio.max()),
                    "lost_every_round": bool((ratio > 1.0).all()),
                    "ratio_fastest": float(np.median(het / forced.min(axis=1))),
                    "ratio_auto": float(np.median(het / auto)),
                    "hetcomm_ran": _ran(doc["choices"][collective][i]),
                }
            )
    return out


def tune_notes(doc: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """For each size HetComm lost in every round: what the job's tune measured there for
    the best forced algorithm (its speed-ups over MPICH's own per round, the calls per
    measurement, the winner and its confirmation rounds, the runner-up's there).

    >>> tune = {"allgather": [{"nbytes": 4, "calls": 2, "winner": {"algorithm": "mpi"},
    ...         "first": "mpi:ring", "confirmed": [1.2, 0.9], "speedup": {"ring": [1.5, 0.8]}}]}
    >>> row = {"collective": "allgather", "M": 16, "best": "ring", "lost_every_round": True}
    >>> print(tune_notes({"sizes": [16], "tune": tune}, [row])[0].replace("; ", ";\\n"))
    allgather 16 B: tune (4 B, 2 calls a measurement) measured ring 1.50 0.80 x MPI;
    picked mpi (the rounds' winner mpi:ring), the rounds' winner's confirmation 1.20 0.90
    >>> tune["allgather"][0].update(single_calls=True, runner_up={
    ...     "plan": "mpi:brucks", "speedup": [1.1, 1.3], "over_winner": [0.9, 1.1]})
    >>> print(tune_notes({"sizes": [16], "tune": tune}, [row])[0].replace("; ", ";\\n"))
    allgather 16 B: tune (4 B, 2 single calls a measurement) measured ring 1.50 0.80 x MPI;
    picked mpi (the rounds' winner mpi:ring), the rounds' winner's confirmation 1.20 0.90;
    runner-up mpi:brucks 1.10 1.30 x MPI, 0.90 1.10 x the winner
    """
    notes = []
    for r in rows:
        found = doc.get("tune", {}).get(r["collective"])
        if not r["lost_every_round"] or not found:
            continue
        t = found[doc["sizes"].index(r["M"])]
        winner = t["winner"]["algorithm"] + (
            f":{t['winner']['mpich']}" if t["winner"].get("mpich") else ""
        )
        seen = " ".join(f"{x:.2f}" for x in t["speedup"].get(r["best"], []))
        confirmed = " ".join(f"{x:.2f}" for x in t["confirmed"] or []) or "none"
        calls = "single calls" if t.get("single_calls") else "calls"
        note = (
            f"{r['collective']} {format_size(r['M'])}: tune ({format_size(t['nbytes'])}, "
            f"{t['calls']} {calls} a measurement) measured {r['best']} {seen} x MPI; "
            f"picked {winner}"
        )
        if t.get("first") and t["first"] != winner:
            note += f" (the rounds' winner {t['first']})"
        note += f", the rounds' winner's confirmation {confirmed}"
        rival = t.get("runner_up")
        if rival:
            over = " ".join(f"{x:.2f}" for x in rival["speedup"])
            beat = " ".join(f"{x:.2f}" for x in rival["over_winner"])
            note += f"; runner-up {rival['plan']} {over} x MPI, {beat} x the winner"
        notes.append(note)
    return notes


def _ran(choice: dict[str, Any]) -> str:
    """What HetComm ran for a call: ``mpi`` (MPICH's own selection), ``mpi:ring`` (an
    MPICH algorithm its tuning file forces) or a planner."""
    return choice["algorithm"] + (f":{choice['mpich']}" if choice.get("mpich") else "")


def table(doc: dict[str, Any], rows: list[dict[str, Any]], load: tuple[float, float]) -> str:
    body = [
        [
            r["collective"],
            format_size(r["M"]),
            r["hetcomm_ran"],
            f"{r['hetcomm'] * 1e3:.3f}",
            f"{r['auto'] * 1e3:.3f}",
            r["best"],
            f"{r['forced'][r['best']] * 1e3:.3f}",
            f"{r['ratio']:.2f} ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})",
            "yes" if r["lost_every_round"] else "no",
            f"{r['ratio_fastest']:.2f}",
            f"{r['ratio_auto']:.2f}",
        ]
        for r in rows
    ]
    return format_table(
        [
            "op",
            "M",
            "HetComm ran",
            "HetComm ms",
            "MPICH auto ms",
            "best forced",
            "its ms",
            "HetComm / best forced (min-max)",
            "lost every round",
            "HetComm / round's fastest",
            "HetComm / auto",
        ],
        body,
        title=(
            f"natively, {doc['ranks']} ranks on this host, one job: the tuned HetComm against "
            "MPICH's own selection and every MPICH algorithm forced per call (MPI_T), "
            f"{doc['rounds']} paired rounds, median of {doc['repeat']} calls "
            f"(load average {load[0]:.1f} before, {load[1]:.1f} after)"
        ),
    )


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--sizes",
        default=",".join(map(str, SIZES)),
        help="result sizes M (8 B-64 MiB), comma-separated",
    )
    ap.add_argument("--json", type=Path, default=Path("results/bench_mpich_algorithms.json"))
    args = ap.parse_args(argv)
    if not 2 <= args.ranks <= MOST_RANKS:
        ap.error(f"--ranks: from 2 to {MOST_RANKS}, got {args.ranks}")
    for name in ("rounds", "repeat"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}: at least 1, got {getattr(args, name)}")
    try:
        args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    except (HetcollError, ValueError) as exc:
        ap.error(f"--sizes: {exc}")
    if any(m < 1 or m > 64 * MIB for m in args.sizes):
        ap.error(f"--sizes: from 1 B to 64 MiB, got {args.sizes}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    before = os.getloadavg()[0]
    doc = measure(args.ranks, args.rounds, args.repeat, args.sizes)
    after = os.getloadavg()[0]
    if not doc["ok"]:
        print("a result differed from the expected one", file=sys.stderr)
        return 1
    rows = summary(doc)
    print(table(doc, rows, (before, after)))
    for note in tune_notes(doc, rows):
        print(note)
    doc.update(load_average=[before, after], summary=rows)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
