"""The default ``HetComm`` natively on this host against every MPICH algorithm forced
through its control variable, paired: ``Allreduce`` and ``Allgather`` at 8 B-64 MiB.

MPICH reads ``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM`` and
``MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM`` from the environment at ``MPI_Init``, so each
algorithm forced so, independently of hetcoll, is a launch of its own
(``ranks/mpich_algorithms.py`` is the MPI side): launch ``k`` forces the ``k``-th
allreduce algorithm and the ``k``-th allgather algorithm of :data:`ALGORITHMS`
(the names the installed MPICH accepts; ``auto`` is MPICH's own selection), with the
``..._POSIX_INTRA_ALGORITHM=mpir`` variant so that the shared-memory path of one host does
not take over.  The ``auto`` launch, with no control variable set, also runs the default
``HetComm`` (on a flat platform, natively) beside plain mpi4py, call by call, given the
tuning file ``hetcoll tune --candidates 0 --mpich-algorithms`` writes, measured first in
that launch (each MPICH algorithm forced per call through ``MPI_T`` against MPICH's own
selection; ``ranks/mpich_algorithms.py``).  A round runs
every launch once, the order reversed from one round to the next, so that the comparison
stays paired: per size and round the ratio HetComm / the fastest forced algorithm of the
round (and the algorithm that was fastest), reported as the median and the min-max over
the rounds; and HetComm / MPICH's own selection (``auto``) in the same job, the calls
alternated (the closest pairing: what the wrapper costs over the call it passes on).  A
time is the median over ``--repeat`` calls of the slowest rank's.

The target (the never-slower rule): the ratio at most 1 beyond noise at every size.
Prints the table with the load average before and after and writes
``results/bench_mpich_algorithms.json``.  Run: ``.venv/bin/python
benchmarks/mpi/bench_mpich_algorithms.py [--ranks 4] [--rounds 3] [--repeat 5]
[--sizes 8,512,32KiB,1MiB,16MiB,64MiB]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hetcoll.errors import HetcollError
from hetcoll.report import format_table
from hetcoll.units import format_size, parse_size

HERE = Path(__file__).parent
PROGRAM = HERE / "ranks" / "mpich_algorithms.py"
MIB = 1 << 20
#: the intra-communicator algorithms MPICH 5.0 accepts for each collective (``auto``: its
#: own selection), less ``nb`` (the nonblocking call waited for), ``smp`` (a node-aware
#: composition: one node here) and ``ccl`` (an accelerator library)
ALGORITHMS = {
    "allreduce": (
        "auto",
        "recursive_doubling",
        "reduce_scatter_allgather",
        "ring",
        "recursive_multiplying",
        "k_reduce_scatter_allgather",
        "tree",
        "recexch",
    ),
    "allgather": (
        "auto",
        "recursive_doubling",
        "brucks",
        "ring",
        "k_brucks",
        "recexch_doubling",
        "recexch_halving",
    ),
}
SIZES = (8, 512, 32 << 10, MIB, 16 * MIB, 64 * MIB)
MOST_RANKS = 8


def launches() -> list[dict[str, str]]:
    """The control variables of each launch: the ``k``-th algorithm of each collective
    (the shorter list's last launches leave it at ``auto``); the first launch sets none.

    >>> [sorted(env) for env in launches()[:2]][1][0]
    'MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM'
    >>> launches()[0]
    {}
    """
    most = max(len(a) for a in ALGORITHMS.values())
    out = []
    for k in range(most):
        env: dict[str, str] = {}
        for collective, names in ALGORITHMS.items():
            name = names[k] if k < len(names) else "auto"
            if name != "auto":
                upper = collective.upper()
                env[f"MPIR_CVAR_{upper}_INTRA_ALGORITHM"] = name
                env[f"MPIR_CVAR_{upper}_POSIX_INTRA_ALGORITHM"] = "mpir"
        out.append(env)
    return out


def _forced(env: dict[str, str], collective: str) -> str:
    """The algorithm a launch's ``env`` forces for ``collective`` (``auto`` if none)."""
    return env.get(f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM", "auto")


def _launch(ranks: int, env: dict[str, str], sizes, repeat: int, hetcomm: bool) -> dict:
    from hetcoll.runtime.launch import run_mpi

    with tempfile.TemporaryDirectory(prefix="hetcoll-bench-") as tmp:
        out = Path(tmp) / "result.json"
        args = [str(PROGRAM), ",".join(map(str, sizes)), str(repeat), "1" if hetcomm else "0"]
        proc = run_mpi(ranks, [*args, str(out)], timeout=1800, module=False, env=env)
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise HetcollError(f"launch with {env or 'no control variable'} failed: {tail}")
        return json.loads(out.read_text())


def measure(ranks: int, rounds: int, repeat: int, sizes) -> dict[str, Any]:
    """Every launch once per round, the order reversed every other round; per collective
    and size the rounds' times of every forced algorithm and of HetComm."""
    envs = launches()
    rounds_out = []
    ok = True
    for r in range(rounds):
        order = list(range(len(envs))) if r % 2 == 0 else list(range(len(envs)))[::-1]
        docs: dict[int, dict] = {}
        for k in order:
            print(f"round {r + 1}/{rounds}: launch {envs[k] or 'auto'}", file=sys.stderr)
            docs[k] = _launch(ranks, envs[k], sizes, repeat, hetcomm=k == 0)
            ok &= docs[k]["ok"]
        one: dict[str, Any] = {}
        for collective in ALGORITHMS:
            forced = {}
            for k, env in enumerate(envs):
                name = _forced(env, collective)
                if k == 0 or name != "auto":
                    forced[name] = docs[k]["times"][collective]["mpi"]
            one[collective] = {
                "forced": forced,
                "hetcomm": docs[0]["times"][collective]["hetcomm"],
                "choices": docs[0]["choices"][collective],
            }
        one["load"] = [docs[k]["load"] for k in order]
        rounds_out.append(one)
    return {"ranks": ranks, "sizes": list(sizes), "repeat": repeat, "rounds": rounds_out, "ok": ok}


def summary(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per collective and size: the median over the rounds of each variant's time, and the
    paired ratios HetComm / the round's fastest forced algorithm (median, min, max) and
    the median of HetComm / MPICH's ``auto`` (the same job, call by call).

    >>> rounds = [{"allreduce": {"forced": {"auto": [2.0], "ring": [1.0]}, "hetcomm": [2.0],
    ...            "choices": [{"algorithm": "mpi"}]}}] * 3
    >>> s = summary({"sizes": [8], "rounds": rounds})[0]
    >>> s["best"], s["ratio"], s["ratio_min"]
    ('ring', 2.0, 2.0)
    """
    out = []
    for collective in ALGORITHMS:
        runs = [r[collective] for r in doc["rounds"] if collective in r]
        if not runs:
            continue
        for i, m in enumerate(doc["sizes"]):
            names = list(runs[0]["forced"])
            forced = np.array([[r["forced"][n][i] for n in names] for r in runs])
            het = np.array([r["hetcomm"][i] for r in runs])
            ratio = het / forced.min(axis=1)
            same_job = het / forced[:, names.index("auto")]
            wins = [names[j] for j in forced.argmin(axis=1)]
            out.append(
                {
                    "collective": collective,
                    "M": m,
                    "hetcomm": float(np.median(het)),
                    "forced": {n: float(np.median(forced[:, j])) for j, n in enumerate(names)},
                    "best": max(set(wins), key=lambda n: (wins.count(n), -names.index(n))),
                    "ratio": float(np.median(ratio)),
                    "ratio_min": float(ratio.min()),
                    "ratio_max": float(ratio.max()),
                    "ratio_auto": float(np.median(same_job)),
                    "hetcomm_ran": _ran(runs[0]["choices"][i]),
                }
            )
    return out


def _ran(choice: dict[str, Any]) -> str:
    """What HetComm ran for a call: ``mpi`` (MPICH's own selection), ``mpi:ring`` (an
    MPICH algorithm its tuning file forces) or a planner."""
    return choice["algorithm"] + (f":{choice['mpich']}" if choice.get("mpich") else "")


def table(doc: dict[str, Any], rows: list[dict[str, Any]], load: tuple[float, float]) -> str:
    body = [
        [
            r["collective"],
            format_size(r["M"]),
            f"{r['hetcomm'] * 1e3:.3f}",
            f"{r['forced']['auto'] * 1e3:.3f}",
            r["best"],
            f"{r['forced'][r['best']] * 1e3:.3f}",
            f"{r['ratio']:.2f} ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})",
            f"{r['ratio_auto']:.2f}",
            r["hetcomm_ran"],
            "yes" if r["ratio_min"] > 1.0 else "no",
        ]
        for r in rows
    ]
    return format_table(
        [
            "op",
            "M",
            "HetComm ms",
            "MPICH auto ms",
            "best forced",
            "its ms",
            "default / best forced (min-max)",
            "HetComm / auto",
            "HetComm ran",
            "slower in every round",
        ],
        body,
        title=(
            f"natively, {doc['ranks']} ranks on this host: HetComm (default, with the tuning "
            "file of MPICH's algorithms measured in the job) against every MPICH algorithm "
            f"forced by its control variable, {len(doc['rounds'])} paired "
            f"rounds, median of {doc['repeat']} calls (load average {load[0]:.1f} before, "
            f"{load[1]:.1f} after)"
        ),
    )


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
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
    doc.update(load_average=[before, after], summary=rows)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
