"""Simulator speed and memory: simulated transfers per second, wall time and peak memory.

Cases:

- ``a``: 1 MiB in 1 KiB segments (1024 segments) on the built-in ``fig1``, root 1, FNF;
- ``b``: 1000- and 5000-node routed platforms (sparse ``links``, hockney): a random sparse
  network (a random recursive tree plus N/5 extra links: small diameter, cycles) and the
  issue's chain of N nodes, each planned with ``flat``, ``binomial`` and ``fnf`` (1 MiB);
- ``c``: a pipelined broadcast of about 100 000 transfers on a 256-node random routed
  platform, where routes share links (link contention);
- ``d``: FNF on 100 000 ``t_ini`` nodes, plan and simulate;
- ``slope``: the log-log slope of simulation CPU time against transfers, from pipelined
  broadcasts of 12 500 .. 100 000 transfers on the 256-node platform of ``c`` and of
  1024 .. 8192 segments on ``fig1``.

Every case runs in a fresh process (``--case SPEC``) so that its peak memory is its own:
"MB" is the growth of the process's peak resident set during the case (platform generation
excluded, routing included).  Times are wall-clock (``time.perf_counter``): "total" is plan
plus simulate, "CPU" the same in process CPU time (what other processes on a shared machine
do not add), "plan" includes binding the model (routing), "sim" is :func:`hetcoll.simulate`.
A reference loop timed before and after tells how fast the machine ran Python meanwhile.
A case that runs past ``--timeout`` seconds is stopped and reported as "> T s"; a case that
fails (an exception) makes the exit status 1.

    python benchmarks/simulated/bench_simulator.py             # all: results/bench_simulator.json
    python benchmarks/simulated/bench_simulator.py --quick     # smaller sizes, a smoke run
    python benchmarks/simulated/bench_simulator.py --timeout 300 --out results/before.json
    python benchmarks/simulated/bench_simulator.py --only slope --small-slopes  # old code

The script uses only the public API (``plan``, ``simulate``, ``Platform``), so the same file
measures an older checkout:
``PYTHONPATH=/path/to/old/src python benchmarks/simulated/bench_simulator.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform as host
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MiB = 1 << 20


# -- platforms ---------------------------------------------------------------------------------


def routed_platform(n: int, kind: str, seed: int = 1):
    """A hockney platform of ``n`` nodes on sparse links (seeded).

    ``kind="random"``: node ``i`` links to a random earlier node (a random recursive tree,
    depth about ``e ln n``) plus ``n // 5`` extra random links; ``kind="chain"``: a line.
    Latencies uniform in [1, 10] µs, bandwidths 1 or 10 Gbit/s.
    """
    from hetcoll import Link, Node, Platform

    rng = np.random.default_rng(seed)
    if kind == "chain":
        pairs = [(i, i + 1) for i in range(n - 1)]
    else:
        pairs = [(int(rng.integers(0, i)), i) for i in range(1, n)]
        seen = {frozenset(p) for p in pairs}
        while len(pairs) < n - 1 + n // 5:
            a, b = (int(x) for x in rng.integers(0, n, 2))
            if a != b and frozenset((a, b)) not in seen:
                seen.add(frozenset((a, b)))
                pairs.append((a, b))
    lat = rng.uniform(1e-6, 10e-6, len(pairs))
    bw = rng.choice([1.25e8, 1.25e9], len(pairs))
    links = tuple(
        Link(str(a), str(b), float(x), float(y))
        for (a, b), x, y in zip(pairs, lat, bw, strict=True)
    )
    return Platform(tuple(Node(str(i)) for i in range(n)), links, model="hockney")


def tini_platform(n: int, seed: int = 1):
    from hetcoll.platform import Platform, nodes_from_costs

    costs = np.random.default_rng(seed).choice(np.arange(1, 9) * 100e-6, size=n)
    return Platform(nodes_from_costs(costs), model="tini")


# -- cases -------------------------------------------------------------------------------------


def _pipelined_256(transfers: int) -> dict:
    seg = 4096
    edges = 255
    return {
        "platform": ("random", 256),
        "method": "binomial",
        "nbytes": math.ceil(transfers / edges) * seg,
        "segment_size": seg,
    }


def case_specs(quick: bool, small_slopes: bool = False) -> dict[str, dict]:
    big = 1000 if quick else 5000
    specs: dict[str, dict] = {
        "a fig1 1MiB/1KiB fnf": {
            "platform": ("fig1",),
            "root": "1",
            "method": "fnf",
            "nbytes": MiB,
            "segment_size": 1024,
        }
    }
    for kind in ("random", "chain"):
        for n in (1000, big) if not quick else (300, 1000):
            for method in ("flat", "binomial", "fnf"):
                specs[f"b {kind} {n} {method}"] = {
                    "platform": (kind, n),
                    "method": method,
                    "nbytes": MiB,
                }
    m = 25_000 if quick else 100_000
    specs[f"c 256 routed pipelined {m}"] = _pipelined_256(m)
    n = 10_000 if quick else 100_000
    specs[f"d fnf tini {n}"] = {
        "platform": ("tini", n),
        "method": "fnf",
        "nbytes": 0,
    }
    slope = (3125, 6250, 12_500) if quick else (12_500, 25_000, 50_000, 100_000)
    if small_slopes:  # sizes an older, quadratic simulator finishes
        slope = (1562, 3125, 6250, 12_500)
    for m in slope:
        specs[f"slope 256 routed {m}"] = _pipelined_256(m)
    segments = (256, 512, 1024) if quick else (1024, 2048, 4096, 8192)
    for segs in (128, 256, 512, 1024) if small_slopes else segments:
        specs[f"slope fig1 {segs} segments"] = {
            "platform": ("fig1",),
            "root": "1",
            "method": "fnf",
            "nbytes": segs * 1024,
            "segment_size": 1024,
        }
    return specs


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MiB


def run_case(spec: dict) -> dict:
    """Build the platform, then time plan and simulate; memory is the peak RSS growth."""
    from hetcoll import load_platform, plan, simulate

    kind = spec["platform"][0]
    if kind == "fig1":
        p = load_platform("fig1")
    elif kind == "tini":
        p = tini_platform(spec["platform"][1])
    else:
        p = routed_platform(spec["platform"][1], kind)
    root = spec.get("root", "0")
    before = _rss_mb()
    c0 = time.process_time()
    t0 = time.perf_counter()
    s = plan(
        p,
        root,
        method=spec["method"],
        nbytes=spec["nbytes"],
        segment_size=spec.get("segment_size"),
    )
    t1, c1 = time.perf_counter(), time.process_time()
    pred = simulate(p, s)
    t2 = time.perf_counter()
    sim_cpu = time.process_time() - c1
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {
        "nodes": len(p),
        "transfers": len(pred.transfers),
        "plan_s": t1 - t0,
        "simulate_s": t2 - t1,
        "total_s": t2 - t0,
        "cpu_s": cpu,
        "simulate_cpu_s": sim_cpu,
        "peak_mb": max(0.0, peak - before),
        "makespan": pred.makespan,
    }


def spawn(spec: dict, timeout: float, memory_gb: float) -> dict:
    """Run one case in a fresh interpreter; ``{"timeout": T}`` when it takes too long,
    ``{"memory": GB}`` when it needs more address space than ``memory_gb``."""
    cmd = [sys.executable, __file__, "--case", json.dumps(spec)]

    def limit() -> None:
        size = int(memory_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, preexec_fn=limit
        )
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        if "MemoryError" in last or "Cannot allocate" in last:
            return {"memory": memory_gb}
        return {"error": last}
    return json.loads(out.stdout.strip().splitlines()[-1])


def reference_loop() -> float:
    """CPU seconds of a fixed pure-Python loop (10 million additions): how fast this
    machine runs Python right now (about 0.4 s on an idle 2020s core)."""
    c0 = time.process_time()
    x = 0
    for i in range(10_000_000):
        x += i
    return time.process_time() - c0


def slope(rows: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(time) against log(transfers)."""
    pts = [(m, t) for m, t in rows if t and t > 0]
    if len(pts) < 2:
        return None
    x, y = np.log([m for m, _ in pts]), np.log([t for _, t in pts])
    return float(np.polyfit(x, y, 1)[0])


def _fmt(x, spec=".3g") -> str:
    return "-" if x is None else format(x, spec)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case (300)")
    ap.add_argument("--memory", type=float, default=8.0, help="GB of address space per case (8)")
    ap.add_argument("--small-slopes", action="store_true", help="slopes from 8x fewer transfers")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_simulator.json")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:  # child process: the case's spec as JSON
        print(json.dumps(run_case(json.loads(args.case))))
        return 0

    from hetcoll import __version__
    from hetcoll.report import format_table

    results: dict[str, dict] = {}
    reference = [reference_loop()]
    for name, spec in case_specs(args.quick, args.small_slopes).items():
        if args.only and args.only not in name:
            continue
        print(f"  {name} ...", file=sys.stderr, flush=True)
        results[name] = spawn(spec, args.timeout, args.memory)
    reference.append(reference_loop())

    rows = []
    for name, r in results.items():
        if "timeout" in r:
            rows.append([name, "-", f"> {r['timeout']:g} s"] + [""] * 6)
        elif "memory" in r:
            rows.append([name, "-", f"out of memory (> {r['memory']:g} GB)"] + [""] * 6)
        elif "error" in r:
            rows.append([name, "-", "error: " + r["error"][:60]] + [""] * 6)
        else:
            sim_cpu = r.get("simulate_cpu_s", r["simulate_s"])
            rate = r["transfers"] / sim_cpu if sim_cpu > 0 else math.inf
            rows.append(
                [
                    name,
                    r["transfers"],
                    _fmt(r["total_s"], ".3f"),
                    _fmt(r.get("cpu_s"), ".3f"),
                    _fmt(r["plan_s"], ".3f"),
                    _fmt(r["simulate_s"], ".3f"),
                    _fmt(r.get("simulate_cpu_s"), ".3f"),
                    _fmt(rate, ".3g"),
                    _fmt(r["peak_mb"], ".0f"),
                ]
            )
    print(
        format_table(
            [
                "case",
                "transfers",
                "total (s)",
                "CPU (s)",
                "plan (s)",
                "sim (s)",
                "sim CPU (s)",
                "transfers/CPU s",
                "MB",
            ],
            rows,
            title="simulator: plan + simulate, one fresh process per case",
        )
    )
    slopes = {}
    for family in ("slope 256 routed", "slope fig1"):
        pts = [
            (r["transfers"], r.get("simulate_cpu_s", r["simulate_s"]))
            for name, r in results.items()
            if name.startswith(family) and "transfers" in r
        ]
        slopes[family] = slope(pts)
        print(
            f"log-log slope of simulate CPU time vs transfers, {family[6:]}: {_fmt(slopes[family])}"
        )
    print(
        "reference loop (10M additions, CPU s) before/after: "
        + " / ".join(f"{x:.2f}" for x in reference)
        + f"; load average {os.getloadavg()[0]:.1f}"
    )
    doc = {
        "benchmark": "simulator",
        "hetcoll": __version__,
        "machine": {
            "cpus": os.cpu_count(),
            "python": host.python_version(),
            "numpy": np.__version__,
            "processor": host.processor() or host.machine(),
        },
        "mode": "quick" if args.quick else "full",
        "load_average": os.getloadavg(),
        "timeout_seconds": args.timeout,
        "reference_loop_cpu_s": reference,
        "cases": results,
        "slopes": slopes,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        from hetcoll.files import write_atomic
    except ImportError:  # an older checkout (see the module docstring): plain replace
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, args.out)
    else:
        write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    failed = [name for name, r in results.items() if "error" in r]
    for name in failed:
        print(f"{name}: {results[name]['error']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
