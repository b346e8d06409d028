"""The default ``HetComm`` natively on this host against every MPICH algorithm forced
through its control variables, paired in one job: ``Allreduce`` and ``Allgather`` at
8 B-64 MiB.

One launch (``ranks/mpich_algorithms.py`` is the MPI side) first measures the tuning file
``hetcoll tune --candidates 0 --mpich-algorithms`` writes for these ranks and sizes and
gives it to a ``HetComm`` on a flat platform.  Then per collective and size, on the same
buffers:

- ``--rounds`` **selection rounds**: plain mpi4py under MPICH's own selection (``auto``),
  under each algorithm the installed MPICH accepts forced for the call through ``MPI_T``
  (:meth:`hetcoll.runtime.mpich_cvars.Algorithms.forcing`, the algorithm's variable and
  its ``..._POSIX_INTRA_ALGORITHM`` set to ``mpir``, restored after the call) and the
  tuned ``HetComm``, each once a round, the order rotated every round and reversed every
  other round.  They choose the **best forced** algorithm: the least median time.
- ``--confirm`` fresh **confirmation rounds**, the same way, of the HetComm, the best
  forced algorithm, the *same call plain* (the algorithm the HetComm's tuning file forces
  at that size, or MPICH's own selection where the file keeps it, forced around mpi4py's
  method exactly as the benchmark forces every algorithm) and ``auto``.

A variant's time in a round is a program's loop of its calls (each followed by the check of
its result and the write of the next input; at least ``--repeat`` calls, as many as take
about 20 ms of MPICH's own): the seconds per call the slowest rank spent in the calls, what a
program's loop sees and what the tune measures (its rounds are loops of calls too).

What the verdict means.  The best of seven to nine noisy algorithms by their times is
partly the luckiest of them (the winner's curse): compared on the rounds that chose it,
it would look faster than it is.  So the choice and the comparison are made on different
rounds: the confirmation rounds' times of the best forced algorithm are an unbiased
sample of its speed, as HetComm's are of its own, and the tuning file was chosen in the
job's tune, earlier, on rounds of its own.  Per size, HetComm / the other variant per
confirmation round gives a sign test (two variants of equal speed, their order rotated,
each win a round with probability 1/2, whatever the load does to both): HetComm is
**slower** when it lost so many rounds that equal speeds would do it with probability
at most ``ALPHA`` divided by the number of sizes (Bonferroni: with HetComm as fast as the
best forced algorithm at every size, the chance that the table calls any size slower is
at most ``ALPHA``), **faster** the same way round, **tie** otherwise (a difference, if
any, the rounds do not resolve).  With 15 rounds and 12 sizes: slower when it lost at
least 13 of the 15.  Beside the median ratio, its distribution-free confidence interval
at the same level (the order statistics the test uses).  The never-slower target: no
size slower than the best forced algorithm.  *HetComm / same call plain* is what the
HetComm's dispatch costs on top of the call it makes (where it is above 1, the loss is
ours, not the tuning's choice); where the best forced algorithm is another, HetComm /
best forced beyond HetComm / same call plain is the tuning's choice.  A verdict is of
one host at one load: a busy host widens the intervals and turns differences into ties,
and it does not bias them.

Prints the table with the load average before and after and, under it, for each size
HetComm was slower than the best forced algorithm, what the job's tune measured there;
writes ``results/bench_mpich_algorithms.json``.  Run: ``.venv/bin/python
benchmarks/mpi/bench_mpich_algorithms.py [--ranks 4] [--rounds 5] [--confirm 15]
[--repeat 5] [--sizes 8,512,32KiB,1MiB,16MiB,64MiB]``.
"""

from __future__ import annotations

import argparse
import json
import math
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
#: the verdicts' family-wise level: with HetComm as fast as the variant it is compared
#: with at every size, the chance that the table calls any size slower (and, apart, faster)
ALPHA = 0.05


def measure(ranks: int, rounds: int, repeat: int, sizes, confirm: int) -> dict[str, Any]:
    """The one launch's document (``ranks/mpich_algorithms.py``)."""
    from hetcoll.jobs import run_program

    args = [",".join(map(str, sizes)), str(repeat), str(rounds), str(confirm)]
    return run_program(ranks, PROGRAM, args, timeout=3600)


def sign_bound(n: int, alpha: float) -> int | None:
    """The least ``k`` with P(X >= k) <= ``alpha`` for X ~ Binomial(``n``, 1/2): one
    side faster in at least ``k`` of ``n`` paired rounds is evidence, at level ``alpha``,
    that it is faster (the sign test: two variants of equal speed, their order in the
    rounds rotated, each win a round with probability 1/2); None when even ``n`` of ``n``
    is not (too few rounds).

    >>> sign_bound(15, 0.05 / 12), sign_bound(5, 0.05), sign_bound(4, 0.05)
    (13, 5, None)
    """
    tail = 0.0
    for k in range(n, -1, -1):
        tail += math.comb(n, k) / 2**n
        if tail > alpha:
            return k + 1 if k < n else None
    return 0


def compare(het: Any, other: Any, alpha: float) -> dict[str, Any]:
    """HetComm's times against another variant's, paired per confirmation round: the
    median ratio, the rounds it lost (``lost``) of those not tied (``rounds``), the
    sign test's ``verdict`` at level ``alpha`` each way (``slower``, ``faster`` or
    ``tie``: within noise) and the distribution-free confidence interval of the median
    ratio at the same level (``low``, ``high``; the order statistics the test uses: the
    ratio's median is above ``low`` exactly when the verdict is ``slower``); None bounds
    when the rounds are too few.

    >>> c = compare([1.1] * 14 + [0.9], [1.0] * 15, 0.05 / 12)
    >>> c["verdict"], c["lost"], c["rounds"], round(c["ratio"], 2), round(c["low"], 2)
    ('slower', 14, 15, 1.1, 1.1)
    >>> compare([1.1] * 12 + [0.9] * 3, [1.0] * 15, 0.05 / 12)["verdict"]
    'tie'
    >>> compare([0.9] * 15, [1.0] * 15, 0.05 / 12)["verdict"]
    'faster'
    """
    ratio = np.asarray(het, dtype=float) / np.asarray(other, dtype=float)
    lost, won = int((ratio > 1).sum()), int((ratio < 1).sum())
    n = lost + won
    k = sign_bound(n, alpha)
    verdict, low, high = "tie", None, None
    if k is not None:
        untied = np.sort(ratio[ratio != 1])
        low, high = float(untied[n - k]), float(untied[k - 1])
        verdict = "slower" if lost >= k else "faster" if won >= k else "tie"
    return {
        "ratio": float(np.median(ratio)),
        "lost": lost,
        "rounds": n,
        "verdict": verdict,
        "low": low,
        "high": high,
    }


def summary(doc: dict[str, Any], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Per collective and size: each variant's median over the selection rounds
    (``forced``), the best forced algorithm they chose (``best``), and over the fresh
    confirmation rounds HetComm against it (``vs_best``), against the same call it makes
    run plainly (``vs_same``: the forced algorithm its tuning file chose, MPICH's own
    selection for ``auto``; None when it ran no MPI call) and against MPICH's own
    selection (``vs_auto``), each :func:`compare`'s at level ``alpha`` over the number of
    rows (a family-wise level: with every pair of equal speed, some row says ``slower``
    with probability at most ``alpha``).

    >>> conf = {"best": "ring", "same": "auto", "times": {"hetcomm": [1.1] * 14 + [0.9],
    ...         "ring": [1.0] * 15, "auto": [1.2] * 15}}
    >>> times = {"auto": [[2.0]], "ring": [[1.0]], "tree": [[3.0]], "hetcomm": [[2.0]]}
    >>> s = summary({"sizes": [8], "times": {"allreduce": times},
    ...              "confirmed": {"allreduce": [conf]},
    ...              "choices": {"allreduce": [{"algorithm": "mpi"}]}})[0]
    >>> s["best"], s["vs_best"]["verdict"], s["vs_same"]["verdict"], s["hetcomm_ran"]
    ('ring', 'slower', 'faster', 'mpi')
    """
    rows = len(doc["sizes"]) * sum(1 for c in COLLECTIVES if doc["times"].get(c))
    level = alpha / max(rows, 1)
    out = []
    for collective in COLLECTIVES:
        runs = doc["times"].get(collective)
        if not runs:
            continue
        names = [v for v in runs if v not in ("auto", "hetcomm")]
        for i, m in enumerate(doc["sizes"]):
            conf = doc["confirmed"][collective][i]
            t = conf["times"]
            same = conf["same"]
            out.append(
                {
                    "collective": collective,
                    "M": m,
                    "forced": {n: float(np.median(runs[n][i])) for n in names},
                    "best": conf["best"],
                    "same": same,
                    "hetcomm": float(np.median(t["hetcomm"])),
                    "best_time": float(np.median(t[conf["best"]])),
                    "vs_best": compare(t["hetcomm"], t[conf["best"]], level),
                    "vs_same": compare(t["hetcomm"], t[same], level) if same else None,
                    "vs_auto": compare(t["hetcomm"], t["auto"], level),
                    "hetcomm_ran": _ran(doc["choices"][collective][i]),
                }
            )
    return out


def tune_notes(doc: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """For each size HetComm was slower than the best forced algorithm (the verdict of the
    confirmation rounds): what the job's tune measured there for
    the best forced algorithm (its speed-ups over MPICH's own per round, the calls per
    measurement, the winner and its confirmation rounds, the runner-up's there).

    >>> tune = {"allgather": [{"nbytes": 4, "calls": 2, "winner": {"algorithm": "mpi"},
    ...         "first": "mpi:ring", "confirmed": [1.2, 0.9], "speedup": {"ring": [1.5, 0.8]}}]}
    >>> row = {"collective": "allgather", "M": 16, "best": "ring",
    ...        "vs_best": {"verdict": "slower"}}
    >>> print(tune_notes({"sizes": [16], "tune": tune}, [row])[0].replace("; ", ";\\n"))
    allgather 16 B: tune (4 B, 2 calls a measurement) measured ring 1.50 0.80 x MPI;
    picked mpi (the rounds' winner mpi:ring), the rounds' winner's confirmation 1.20 0.90
    >>> tune["allgather"][0].update(runner_up={
    ...     "plan": "mpi:brucks", "speedup": [1.1, 1.3], "over_winner": [0.9, 1.1]})
    >>> print(tune_notes({"sizes": [16], "tune": tune}, [row])[0].replace("; ", ";\\n"))
    allgather 16 B: tune (4 B, 2 calls a measurement) measured ring 1.50 0.80 x MPI;
    picked mpi (the rounds' winner mpi:ring), the rounds' winner's confirmation 1.20 0.90;
    runner-up mpi:brucks 1.10 1.30 x MPI, 0.90 1.10 x the winner
    """
    notes = []
    for r in rows:
        found = doc.get("tune", {}).get(r["collective"])
        if r["vs_best"]["verdict"] != "slower" or not found:
            continue
        t = found[doc["sizes"].index(r["M"])]
        winner = t["winner"]["algorithm"] + (
            f":{t['winner']['mpich']}" if t["winner"].get("mpich") else ""
        )
        seen = " ".join(f"{x:.2f}" for x in t["speedup"].get(r["best"], []))
        confirmed = " ".join(f"{x:.2f}" for x in t["confirmed"] or []) or "none"
        note = (
            f"{r['collective']} {format_size(r['M'])}: tune ({format_size(t['nbytes'])}, "
            f"{t['calls']} calls a measurement) measured {r['best']} {seen} x MPI; "
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


def _versus(c: dict[str, Any] | None) -> str:
    """A comparison as the table gives it: median ratio, interval, rounds lost, verdict."""
    if c is None:
        return "-"
    if c["low"] is None:
        return f"{c['ratio']:.3f} (too few rounds)"
    return (
        f"{c['ratio']:.3f} [{c['low']:.3f}-{c['high']:.3f}] "
        f"{c['lost']}/{c['rounds']} {c['verdict']}"
    )


def _calls(doc: dict[str, Any]) -> str:
    """The calls in a loop, as the title gives them: one number or its range over sizes.

    >>> _calls({"calls": {"allreduce": [1000, 20], "allgather": [5]}}), _calls({"repeat": 5})
    ('5-1000', '5')
    """
    found = [n for per in doc.get("calls", {}).values() for n in per] or [doc["repeat"]]
    low, high = min(found), max(found)
    return f"{low}" if low == high else f"{low}-{high}"


def table(doc: dict[str, Any], rows: list[dict[str, Any]], load: tuple[float, float]) -> str:
    body = [
        [
            r["collective"],
            format_size(r["M"]),
            r["hetcomm_ran"],
            f"{r['hetcomm'] * 1e3:.4f}",
            r["best"],
            f"{r['best_time'] * 1e3:.4f}",
            _versus(r["vs_best"]),
            _versus(r["vs_same"]),
            f"{r['vs_auto']['ratio']:.3f}",
        ]
        for r in rows
    ]
    text = format_table(
        [
            "op",
            "M",
            "HetComm ran",
            "HetComm ms",
            "best forced",
            "its ms",
            "HetComm / best forced",
            "HetComm / same call plain",
            "HetComm / auto",
        ],
        body,
        title=(
            f"natively, {doc['ranks']} ranks on this host, one job: the tuned HetComm against "
            "MPICH's own selection and every MPICH algorithm forced per call (MPI_T); "
            f"best forced chosen in {doc['rounds']} selection rounds, compared in "
            f"{doc['confirm_rounds']} fresh paired rounds, each a loop of {_calls(doc)} calls "
            f"(load average {load[0]:.1f} before, {load[1]:.1f} after)"
        ),
    )
    slower = [r for r in rows if r["vs_best"]["verdict"] == "slower"]
    same = [r for r in rows if r["vs_same"] and r["vs_same"]["verdict"] == "slower"]
    return text + (
        f"\nratio [interval] rounds lost/rounds verdict: sign test, family-wise level "
        f"{ALPHA:g} over the {len(rows)} sizes; slower than the best forced algorithm at "
        f"{len(slower)} of {len(rows)}, than the same call plain at {len(same)}"
    )


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5, help="the fewest calls in a loop")
    ap.add_argument("--confirm", type=int, default=15, help="confirmation rounds")
    ap.add_argument(
        "--sizes",
        default=",".join(map(str, SIZES)),
        help="result sizes M (8 B-64 MiB), comma-separated",
    )
    ap.add_argument("--json", type=Path, default=Path("results/bench_mpich_algorithms.json"))
    args = ap.parse_args(argv)
    if not 2 <= args.ranks <= MOST_RANKS:
        ap.error(f"--ranks: from 2 to {MOST_RANKS}, got {args.ranks}")
    for name in ("rounds", "repeat", "confirm"):
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
    doc = measure(args.ranks, args.rounds, args.repeat, args.sizes, args.confirm)
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
