"""Planning speed of ``butterfly_pipelined`` on stars of NICs (model ``nic``): for stars of
``N`` NICs of 100/25/10 Gbit/s (``--speeds 2``: 25/10 Gbit/s), 5 us each
(``star_platform``, as ``bench_star_baselines.py`` builds them), the allreduce planned at
result sizes ``M``: the kept schedule's predicted time, its time over the shares' fluid
time ``T*`` (``params["bound"]``), its segments, the CPU seconds planning took, and the CPU
seconds of one simulation of the kept schedule alone (``simulate``: the shared-contention
event loop of :mod:`hetcoll.simulator.events`, max-min rates by
:class:`~hetcoll.simulator.fairshare.FairShares`).

CPU is process time (``time.process_time``), not wall clock: other processes on a shared
machine do not add to it, but it still varies with the machine's load; compare an old
checkout on the same host, interleaved:
``PYTHONPATH=/path/to/old/src python benchmarks/simulated/bench_butterfly_speed.py``.

Prints a table and writes ``results/bench_butterfly_speed.json``.
Run: ``.venv/bin/python benchmarks/simulated/bench_butterfly_speed.py [--n 16,32,64]
[--sizes 256KiB,1MiB,64MiB] [--speeds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from hetcoll import plan, simulate
from hetcoll.generators import star_platform
from hetcoll.report import format_table
from hetcoll.units import parse_size

SPEEDS = {"2": ("25Gbps", "10Gbps"), "3": ("100Gbps", "25Gbps", "10Gbps")}


def measure(n: int, speeds: tuple[str, ...], m: int) -> dict:
    """Plan ``butterfly_pipelined`` on ``star_platform(n, speeds, "5us")`` at ``m`` bytes
    (8-byte elements) and simulate the kept schedule once more: times and CPU seconds."""
    p = star_platform(n, speeds, "5us")
    started = time.process_time()
    s = plan(
        p,
        None,
        method="butterfly_pipelined",
        collective="allreduce",
        nbytes=m,
        options={"align": 8},
    )
    planning = time.process_time() - started
    started = time.process_time()
    run = simulate(p, s)
    simulating = time.process_time() - started
    return {
        "n": n,
        "speeds": list(speeds),
        "M": m,
        "time": run.makespan,
        "estimate": s.params["estimate"],
        "bound": s.params["bound"],
        "segments": s.params.get("segments"),
        "segment_size": s.params.get("segment_size"),
        "transfers": len(run.transfers),
        "plan_cpu_seconds": planning,
        "simulate_cpu_seconds": simulating,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="16,32,64", help="star sizes, comma-separated")
    ap.add_argument("--sizes", default="256KiB,1MiB,64MiB", help="result sizes M")
    ap.add_argument("--speeds", choices=sorted(SPEEDS), default="3", help="NIC speeds")
    ap.add_argument("--json", type=Path, default=Path("results/bench_butterfly_speed.json"))
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    speeds = SPEEDS[args.speeds]
    records, rows = [], []
    for n in (int(x) for x in args.n.split(",")):
        for m in (parse_size(x) for x in args.sizes.split(",")):
            m -= m % (8 * n)  # whole elements, whole blocks
            r = measure(n, speeds, m)
            records.append(r)
            rows.append(
                [
                    n,
                    f"{m / 2**20:g} MiB",
                    f"{r['time'] * 1e3:.6f}",
                    f"{r['time'] / r['bound']:.4f}",
                    r["segments"] if r["segments"] is not None else r["segment_size"],
                    r["transfers"],
                    f"{r['plan_cpu_seconds']:.2f}",
                    f"{r['simulate_cpu_seconds']:.2f}",
                ]
            )
            print(f"N={n} M={m}: plan {r['plan_cpu_seconds']:.2f} CPU s", flush=True)
    title = f"butterfly_pipelined on stars of {'/'.join(speeds)} (load average {load:.1f})"
    head = ["N", "M", "ms", "/ T*", "segments", "transfers", "plan CPU s", "simulate CPU s"]
    print(format_table(head, rows, title=title))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"load_average": load, "runs": records}, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
