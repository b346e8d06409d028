"""A training-like loop: the default ``HetComm`` against plain mpi4py, paired.

Each step broadcasts the weights (50 MiB) from rank 0, sums the gradients (8 MiB,
``Allreduce``) and makes the small calls of a training loop (``allreduce`` of a float, an
8-byte ``Bcast``, ``Barrier``).  Configurations (``ranks/training.py`` is the MPI side):

- **native, 4 and 8 ranks**: ``MPI.COMM_WORLD`` against ``HetComm(MPI.COMM_WORLD,
  probed)``, where ``probed`` is what ``hetcoll probe`` finds on these ranks (the user's
  flow); the target is "never slower than plain mpi4py beyond noise";
- **emulated, 8 ranks, ``examples/net.json``** (fast and slow nodes alternating, costs
  times ``--time-scale``, default 10: emulation is faithful where the modelled costs dwarf
  the host's own, docs/runtime.md): the
  default ``HetComm`` against MPI's own algorithm under the same emulation (MPICH's, run
  through the same engine: ``HetComm(..., "mpi", emulate=True)``), never the un-emulated
  communicator; the target is "faster where the plan is predicted faster".

Paired: every round runs ``--steps`` steps of both variants back to back, in alternating
order; per call the ratio HetComm / baseline of each round, reported as the median and the
min-max over the rounds (5 or more), and the medians of the times.  The load average
(``os.getloadavg``) before and after each job is in the table's title and the JSON: on a
busy host the spreads are wide and only the paired ratios mean anything.  The total per
step is what the program sees: the slowest rank's own time per step.  A call's row is its
slowest rank's time in that call, which includes waiting for the ranks the previous call
left late: after a tree broadcast (whose root and inner nodes return long before the last
leaf) the root waits for that leaf inside the ``Allreduce``, so MPI's own ``Allreduce``
shows 1.14-1.26x its baseline's, and 0.97-1.05 with ``--separate`` (an untimed barrier
between the calls) while the broadcast's row is the same: the wait is the broadcast's,
booked to the next call, and the step is no slower for it.  The per-call rows only show
where the time went.

Run: ``.venv/bin/python benchmarks/mpi/bench_training.py [--quick] [--rounds N] [--algo A]
[--json PATH]`` (``--quick``: 1 MiB of weights, 256 KiB of gradients, 4 ranks natively and 8
emulated; ``--algo fnf``: a plan for every call, what the wrapper ran by default before MPI's
own became a candidate; ``--tuning FILE``: HetComm follows what ``hetcoll tune`` measured on
as many ranks, natively; ``--separate``: per-call times without that wait; ``--measured
FILE``: a third variant, the same HetComm charging the engine's cost per message a tuning
file measured (``hetcoll tune``'s ``message_cost``, none of its rules) instead of the
constant (natively: instead of nothing), paired with the others: its ratio to the baseline
and to the default's; ``--ranks N``: only the configurations of N ranks).
Prints a table, writes ``results/bench_training.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hetcoll.jobs import run_program
from hetcoll.report import format_table
from hetcoll.tuning import load_tuning
from hetcoll.units import format_size, format_time

HERE = Path(__file__).parent
NET = HERE.parents[1] / "examples" / "net.json"
MIB = 1 << 20
CALLS = ("total", "Bcast", "Allreduce", "small")


def summary(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per call (and the total per step): median seconds per step of each variant, and the
    paired ratios HetComm / baseline (median, min, max) over the rounds.  The total is the
    slowest rank's own time per step (``step``; the sum of the per-call maxima in a file
    that lacks it), the per-call rows each call's slowest rank (module doc).

    >>> t = {"baseline": [{"Bcast": 2.0, "Allreduce": 1.0, "small": 1.0}] * 2,
    ...      "hetcomm": [{"Bcast": 1.0, "Allreduce": 1.0, "small": 1.0},
    ...                  {"Bcast": 3.0, "Allreduce": 1.0, "small": 1.0}]}
    >>> s = summary({"times": t, "steps": 1})
    >>> s["Bcast"]["ratio"], s["Bcast"]["ratio_min"], s["total"]["ratio_max"]
    (1.0, 0.5, 1.25)
    >>> t = {k: [{**r[0], "step": 3.5}] for k, r in t.items()}
    >>> summary({"times": t, "steps": 1})["total"]["hetcomm"]
    3.5
    """

    def total(r: dict[str, float]) -> float:
        return r["step"] if "step" in r else sum(r[c] for c in CALLS[1:])

    out = {}
    for call in CALLS:
        per = {}
        for name, rounds in doc["times"].items():
            per[name] = (
                np.array([total(r) if call == "total" else r[call] for r in rounds]) / doc["steps"]
            )
        ratio = per["hetcomm"] / per["baseline"]
        out[call] = {
            "baseline": float(np.median(per["baseline"])),
            "hetcomm": float(np.median(per["hetcomm"])),
            "ratio": float(np.median(ratio)),
            "ratio_min": float(ratio.min()),
            "ratio_max": float(ratio.max()),
        }
    return out


def _ran(doc: dict[str, Any], call: str) -> str:
    """What HetComm ran for a call (its choice)."""
    key = {"Bcast": "Bcast", "Allreduce": "Allreduce"}.get(call)
    if key is None:
        names = ("allreduce(float)", "Bcast(8 B)", "Barrier")
        return ", ".join(_name(doc["choices"][n]) for n in names)
    return _name(doc["choices"][key])


def _name(c: dict[str, Any]) -> str:
    return "MPI" if c["algorithm"] == "mpi" else f"plan ({c['plan'] or c['algorithm']})"


def table(docs: list[dict[str, Any]]) -> str:
    rows = []
    for doc in docs:
        s = summary(doc)
        where = f"{doc['mode']} {doc['ranks']} ranks"
        for call in CALLS:
            x = s[call]
            rows.append(
                [
                    where if call == "total" else "",
                    call + ("/step" if call == "total" else ""),
                    format_time(x["baseline"]),
                    format_time(x["hetcomm"]),
                    f"{x['ratio']:.2f} ({x['ratio_min']:.2f}-{x['ratio_max']:.2f})",
                    "" if call == "total" else _ran(doc, call),
                ]
            )
    d0 = docs[0]
    loads = [f"{d['load'][0][0]:.1f}-{d['load'][1][0]:.1f}" for d in docs]
    title = (
        f"training-like loop, HetComm(algo={d0.get('algo', 'auto')!r}"
        f"{', tuning=' + repr(d0['tuning']) if d0.get('tuning') else ''})"
        f"{', calls separated by barriers' if d0.get('separate') else ''}: Bcast "
        f"{format_size(d0['weights'])}, Allreduce "
        f"{format_size(d0['grads'])}, small calls; {d0['steps']} steps x {d0['rounds']} paired "
        f"rounds; baseline: mpi4py natively, MPI's own algorithm emulated under emulation; "
        f"load average {', '.join(loads)}"
    )
    headers = ["configuration", "call", "baseline", "HetComm", "ratio (min-max)", "HetComm ran"]
    return format_table(headers, rows, title)


def measured_table(doc: dict[str, Any]) -> str:
    """The measured cost's variant beside the constant's: per call the paired ratios
    measured / baseline and measured / constant (median, min-max) and what each ran."""
    rows = []
    for call in CALLS:
        cells = [call + ("/step" if call == "total" else "")]
        for other in ("baseline", "hetcomm"):
            r = _ratios(doc, call, "measured", other)
            cells.append(f"{np.median(r):.2f} ({r.min():.2f}-{r.max():.2f})")
        if call != "total":
            cells += [_ran(doc, call), _ran({"choices": doc["measured_choices"]}, call)]
        rows.append(cells)
    cost = doc["message_cost"]
    other = "the constant (200 us)" if doc["mode"] == "emulated" else "none (native default)"
    title = (
        f"{doc['mode']} {doc['ranks']} ranks: HetComm charging the measured cost per message "
        f"({cost * 1e6:.1f} us real) against {other}, paired"
    )
    headers = ["call", "measured / baseline", "measured / constant", "constant ran", "measured ran"]
    return format_table(headers, [r + [""] * (5 - len(r)) for r in rows], title)


def _ratios(doc: dict[str, Any], call: str, a: str, b: str) -> np.ndarray:
    """Round-by-round ratios of variant ``a`` over ``b`` for a call (or the step)."""

    def per(name: str) -> np.ndarray:
        rounds = doc["times"][name]
        if call == "total":
            return np.array([r.get("step", sum(r[c] for c in CALLS[1:])) for r in rounds])
        return np.array([r[call] for r in rounds])

    return per(a) / per(b)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["native", "emulated"], default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument(
        "--time-scale",
        type=float,
        default=10.0,
        help="emulation: multiply the platform's costs (ms-scale costs dwarf this host's noise)",
    )
    ap.add_argument(
        "--algo",
        default="auto",
        help="HetComm's algo (default auto: MPI's own unless a plan is predicted faster; "
        "fnf: a plan for every call, the wrapper's former default)",
    )
    ap.add_argument(
        "--tuning",
        default=None,
        help="a tuning file HetComm follows (written by hetcoll tune on as many ranks; only "
        "the native configuration of that rank count runs)",
    )
    ap.add_argument(
        "--separate",
        action="store_true",
        help="an untimed barrier between the calls: a call's time holds no wait for ranks "
        "the previous one left late (the total then omits that overlap)",
    )
    ap.add_argument(
        "--measured",
        default=None,
        help="a tuning file whose measured message_cost a third variant charges (its rules "
        "unused), beside HetComm with the constant",
    )
    ap.add_argument(
        "--ranks", type=int, default=None, help="only the configurations of this many ranks"
    )
    ap.add_argument("--json", default="results/bench_training.json")
    args = ap.parse_args(argv)
    weights, grads = (MIB, 256 << 10) if args.quick else (50 * MIB, 8 * MIB)
    configs = (
        [("native", 4, "probe")] if args.quick else [("native", 4, "probe"), ("native", 8, "probe")]
    )
    configs.append(("emulated", 8, str(NET)))
    configs = [c for c in configs if args.only in (None, c[0]) and args.ranks in (None, c[1])]
    if args.tuning:
        ranks = load_tuning(args.tuning).ranks
        configs = [("native", ranks, "probe")]
    docs = []
    for mode, ranks, platform in configs:
        print(f"{mode} {ranks} ranks ...", file=sys.stderr, flush=True)
        doc = run_program(
            ranks,
            HERE / "ranks" / "training.py",
            [
                mode,
                platform,
                weights,
                grads,
                args.steps,
                args.rounds,
                args.time_scale,
                args.algo,
                args.tuning or "-",
                "1" if args.separate else "0",
                args.measured or "-",
            ],
            timeout=3600,
        )
        if not doc["ok"]:
            print(f"{mode} {ranks} ranks: a result differed from mpi4py's", file=sys.stderr)
            return 1
        doc["summary"] = summary(doc)
        docs.append(doc)
    print(table(docs))
    for doc in docs:
        if "measured" in doc["times"]:
            print(measured_table(doc))
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"runs": docs}, indent=1) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
