"""The probe on an idle and on a busy host: its error against the emulated truth.

Emulates two platforms and probes them (``hetcoll probe``'s defaults: sizes 0, 4 KiB,
16 KiB, 4 round trips per size, 3 rounds), first alone, then with ``LOAD`` (default 2)
extra ``python -c "while True: pass"`` processes competing for the cores:

- ``six``: the 6-node, three-class platform of ``tests/test_cli_runtime_mpi.py``
  (t_ini 0.7/1.5/3 ms);
- ``testbed16`` (``--full`` only): the demo's (16 ranks, Banikazemi's testbed, costs x4:
  the paper's 16-node testbed, oversubscribing a 2-core host on purpose, as the demo does);
- ``real x6``: this machine itself, 6 ranks, not emulated: no truth to compare with, but
  whether the probe trusted its own round trips.

Per probe: the largest relative error of the probed ``t_ini`` and ``t_byte``, whether the
probe declared its measurement reliable (and how many pairs it measured again), whether
FNF and every other candidate planner build the same tree from the probed platform as
from the true one, and how long it took.  Prints a table, writes
``results/bench_probe.json``.  Run: ``.venv/bin/python benchmarks/mpi/bench_probe.py
[--trials 1] [--load 2] [--full]``: by default one trial of each platform within 8 ranks;
``--full`` is docs/runtime.md's run (three trials, ``testbed16`` too).  ``TRIALS`` and
``LOAD`` in the environment set the defaults of ``--trials`` and ``--load``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hetcoll.compare import compare
from hetcoll.jobs import Run, launch
from hetcoll.platform import Platform, load_platform, nodes_from_costs
from hetcoll.report import format_table

T_INI = np.array([0.7, 1.5, 0.7, 3.0, 1.5, 0.7]) * 1e-3
T_BYTE = np.array([5.0, 5.0, 5.0, 10.0, 5.0, 5.0]) * 1e-8
PROBE = {"sizes": [0, 4096, 16384], "repeat": 4, "rounds": 3}


def platforms(full: bool) -> list[tuple[str, Platform, float | None]]:
    """(label, platform, time scale of the emulation or None: the real machine)."""
    six = Platform(nodes_from_costs(T_INI, T_BYTE), model="tini", name="six")
    real = Platform(nodes_from_costs([0.0] * 6), name="this machine")
    out = [("six", six, 1.0), ("real x6", real, None)]
    return [*out, ("testbed16", load_platform("testbed16"), 4.0)] if full else out


def busy(n: int) -> list[subprocess.Popen]:
    """``n`` processes that keep a core busy each (ended by :func:`stop`, also when this
    script is terminated: SIGTERM exits through the ``finally`` that stops them)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def probe_once(p: Platform, scale: float | None) -> dict:
    """One job that only probes: the emulated platform, or the machine itself."""
    names = [c.algorithm for c in compare(p, "bcast", root=p.ids[0]).ranked]
    run = Run(
        p.to_dict(),
        "bcast",
        "fnf",
        baselines=tuple(n for n in names if n != "fnf") if scale else (),
        sizes=(),
        emulate=scale is not None,
        time_scale=scale or 1.0,
        timeout=120,
        probe=PROBE,
    )
    (result,) = launch([run], len(p), timeout=900)["runs"]
    return result["probe"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=None, help="probes per setting (1; full 3)")
    ap.add_argument("--load", type=int, default=int(os.environ.get("LOAD", "2")))
    ap.add_argument("--full", action="store_true", help="three trials, testbed16 too")
    ap.add_argument("--json", type=Path, default=Path("results/bench_probe.json"))
    args = ap.parse_args(argv)
    trials = args.trials or int(os.environ.get("TRIALS", "3" if args.full else "1"))
    load = args.load
    rows, records = [], []
    for extra in (0, load):
        procs = busy(extra)
        try:
            time.sleep(0.5 if extra else 0)
            for label, p, scale in platforms(args.full):
                for trial in range(trials):
                    avg = os.getloadavg()[0]
                    t0 = time.monotonic()
                    pr = probe_once(p, scale)
                    took = time.monotonic() - t0
                    rel = pr.get("reliability", {})
                    differ = sorted(k for k, v in pr["same_tree_as_truth"].items() if not v)
                    trees = "all" if not differ else "not " + ",".join(differ)
                    rows.append(
                        [
                            label,
                            len(p),
                            extra,
                            trial,
                            _pct(pr["t_ini_max_rel_error"]),
                            _pct(pr["t_byte_max_rel_error"]),
                            {True: "yes", False: "NO"}.get(rel.get("reliable"), "-"),
                            rel.get("remeasured", "-"),
                            trees if scale else "-",
                            f"{took:.1f}",
                            f"{avg:.1f}",
                        ]
                    )
                    records.append(
                        {
                            "platform": label,
                            "ranks": len(p),
                            "time_scale": scale,
                            "busy_processes": extra,
                            "trial": trial,
                            "t_ini_max_rel_error": pr["t_ini_max_rel_error"],
                            "t_byte_max_rel_error": pr["t_byte_max_rel_error"],
                            "reliability": rel,
                            "same_tree_as_truth": pr["same_tree_as_truth"],
                            "seconds": took,
                            "load_average": avg,
                        }
                    )
        finally:
            stop(procs)
    print(
        format_table(
            [
                "platform",
                "ranks",
                "busy",
                "trial",
                "t_ini err",
                "t_byte err",
                "reliable",
                "remeasured",
                "same trees",
                "s",
                "load",
            ],
            rows,
            title=(
                f"probe error against the emulated platform (real: no truth, reliability "
                f"only), {PROBE}, spread 5 %, 3 retries"
            ),
        )
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"probe": PROBE, "records": records}, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
