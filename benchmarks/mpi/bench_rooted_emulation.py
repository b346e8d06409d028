"""The rooted family under emulation: measured against predicted, and a planned ``Reduce``
against MPICH's own algorithm emulated, in the same job.

Two platforms: 16 ranks of ``testbed16`` (Banikazemi et al.'s testbed, ``tini``;
oversubscribed on a small host on purpose, ``--full`` only) and 8 ranks of a platform with
two node speeds (send costs of 20 and 80 us, 2 and 8 ns/B) and a combine cost (1 and 3
ns/B).  For ``Reduce`` (int64 sum), ``Gather``, ``Scatter`` (root 0, ``rooted_algo``
``rooted_ls``) and ``Allreduce`` (``cube_algo`` ``eff_cube``) of 4 B, 64 KiB and 1 MiB per
rank, each call starts at an agreed time on the shared clock and lasts until the last rank
returns (as :func:`hetcoll.runtime.measure.measure_cube` times a hypercube); the
measurement is the median of ``--repeat`` calls, the prediction the simulator's makespan of
the schedule the call ran times the case's time scale.  Every cost of a case is multiplied
(:func:`case_scale`) so that its prediction is at least ``--target`` seconds, at least
``1 / --host-share`` times the host's own time for the same call (measured first, median of
``--repeat``, with every emulated cost made negligible: the real messages, copies and
wake-ups of ranks that share the host's cores), and by at least ``--time-scale``: the
host's time adds to the emulated costs (a rank wakes late by milliseconds on a busy host,
and the last of a flat tree's messages really arrives after its modelled arrival), so the
emulated costs must dominate it for measured / predicted to test the model; where they do,
the ratio does not depend on the scale.  The
baseline is MPICH's binomial ``Reduce`` (``hetcoll.mpich_rooted``) run through the same
engine and emulation, interleaved with the planned one call by call; MPICH's default for a
reduce of more than 2048 bytes is Rabenseifner's reduce-scatter + gather, which is not
modelled, so at 64 KiB and 1 MiB the baseline is MPICH's binomial algorithm (its
``MPIR_CVAR_REDUCE_INTRA_ALGORITHM=binomial``), not its default.

Run: ``.venv/bin/python benchmarks/mpi/bench_rooted_emulation.py [--full] [--repeat 5]
[--target 0.05] [--host-share 0.05] [--json PATH]``; prints a table, writes
``results/bench_rooted_emulation.json``.
The host's load (``os.getloadavg``) is in the title: a busy host delays every rank, and the
measured times grow with it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

SIZES = (4, 64 << 10, 1 << 20)
CALLS = ("Reduce", "Gather", "Scatter", "Allreduce")
PLANNED = ("rooted_ls", "eff_cube")  # the planner of a rooted call, of an Allreduce
#: the time scale of the host's own run of a call: every emulated cost negligible
NEGLIGIBLE = 1e-6


def case_scale(least: float, target: float, host: float, share: float, predicted: float) -> float:
    """The factor on every cost of a case whose schedule is ``predicted`` seconds unscaled
    and takes the host ``host`` seconds with negligible costs: the least factor, at least
    ``least``, that makes the prediction at least ``target`` seconds and the host's time at
    most ``share`` of it."""
    return max(least, target / predicted, host / (share * predicted))


def two_speeds(n: int = 8):
    """Eight nodes of two speeds and two combine costs."""
    from hetcoll.platform import Node, Platform

    nodes = tuple(
        Node(
            str(i),
            (80e-6 if i % 4 == 0 else 20e-6),
            (8e-9 if i % 4 == 0 else 2e-9),
            gamma=(3e-9 if i % 2 else 1e-9),
        )
        for i in range(n)
    )
    return Platform(nodes, model="tini", name="two speeds, combine costs")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also 16 ranks of testbed16")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per case (median)")
    ap.add_argument("--time-scale", type=float, default=1.0, help="the least factor on every cost")
    ap.add_argument(
        "--target",
        type=float,
        default=0.05,
        help="scale each case's costs so that its prediction is at least this many seconds",
    )
    ap.add_argument(
        "--host-share",
        type=float,
        default=0.05,
        help="scale each case's costs so that the host's own time is at most this share of "
        "the prediction",
    )
    ap.add_argument("--calls", default=",".join(CALLS), help="comma-separated calls to time")
    ap.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="comma-separated bytes per rank"
    )
    ap.add_argument(
        "--only",
        choices=("two_speeds", "testbed16"),
        help="run one platform's job only (testbed16 without --full)",
    )
    ap.add_argument("--json", type=Path, default=Path("results/bench_rooted_emulation.json"))
    ap.add_argument("--rank-side", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank_side:
        name, settings, out = args.rank_side
        rank_side(name, json.loads(settings), Path(out))
        return 0
    from hetcoll.jobs import run_program
    from hetcoll.report import format_table

    jobs = [("two_speeds", 8)] + ([("testbed16", 16)] if args.full else [])
    if args.only:
        jobs = [(args.only, 8 if args.only == "two_speeds" else 16)]
    calls = args.calls.split(",")
    if not set(calls) <= set(CALLS):
        ap.error(f"--calls: choose from {', '.join(CALLS)}")
    sizes = [int(x) for x in args.sizes.split(",")]
    settings = json.dumps(
        {
            "repeat": args.repeat,
            "time_scale": args.time_scale,
            "target": args.target,
            "host_share": args.host_share,
            "calls": calls,
            "sizes": sizes,
        }
    )
    load = os.getloadavg()
    results: dict[str, Any] = {"load_before": load, "jobs": {}}
    rows = []
    for name, ranks in jobs:
        got = run_program(ranks, Path(__file__), ["--rank-side", name, settings], timeout=3600)
        results["jobs"][name] = got
        for r in got["rows"]:
            rows.append(
                [
                    f"{name} ({ranks})",
                    r["call"],
                    r["algorithm"],
                    r["nbytes"],
                    f"{r['time_scale']:.3g}",
                    f"{r['host'] * 1e3:.3f}",
                    f"{r['measured'] * 1e3:.3f}",
                    f"{r['predicted'] * 1e3:.3f}",
                    f"{r['measured'] / r['predicted']:.3f}",
                ]
            )
    results["load_after"] = os.getloadavg()
    title = (
        "rooted collectives under emulation, median of "
        f"{args.repeat} (load {load[0]:.1f} before, {results['load_after'][0]:.1f} after)"
    )
    heads = ["platform", "call", "algorithm", "bytes", "scale", "host ms", "measured ms"]
    heads += ["predicted ms", "ratio"]
    print(format_table(heads, rows, title=title))
    for name, job in results["jobs"].items():
        for nbytes, pair in job["reduce_vs_mpich"].items():
            print(
                f"{name}: Reduce {nbytes} B: planned {pair['plan'] * 1e3:.3f} ms, MPICH's "
                f"binomial {pair['mpich'] * 1e3:.3f} ms (measured, interleaved): "
                f"{pair['mpich'] / pair['plan']:.2f}x; predicted {pair['predicted_speedup']:.2f}x"
            )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


# -- on every rank --------------------------------------------------------------------------------


def rank_side(name: str, settings: dict[str, Any], out: Path) -> None:
    import numpy as np
    from mpi4py import MPI

    from hetcoll import HetComm
    from hetcoll.platform import load_platform
    from hetcoll.runtime.measure import _NS
    from hetcoll.simulator import simulate

    platform = two_speeds() if name == "two_speeds" else load_platform(name)
    repeat, least, target = (
        int(settings["repeat"]),
        float(settings["time_scale"]),
        float(settings["target"]),
    )
    share = float(settings.get("host_share", 0.05))
    rows, versus = [], {}
    calls, sizes = settings["calls"], settings["sizes"]

    def wrapper(scale: float) -> HetComm:
        return HetComm(
            MPI.COMM_WORLD,
            platform,
            "fnf",
            rooted_algo="rooted_ls",
            cube_algo="eff_cube",
            emulate=True,
            time_scale=scale,
            timeout=600,
        )

    def call_of(hc, call: str, nbytes: int):
        n, me = hc.size, hc.rank
        k = max(nbytes // 8, 1) if call in ("Reduce", "Allreduce") else nbytes
        dtype = np.int64 if call in ("Reduce", "Allreduce") else np.uint8
        if call in ("Reduce", "Allreduce"):
            send, recv = np.full(k, me + 1, dtype), np.zeros(k, dtype)
        elif call == "Gather":
            send, recv = np.full(k, me, dtype), np.zeros(k * n, dtype)
        else:
            send, recv = np.arange(k * n, dtype=np.int64).astype(dtype), np.zeros(k, dtype)
        if call == "Reduce":
            return lambda algo=None: hc.Reduce(send, recv, MPI.SUM, 0, algo=algo)
        if call == "Gather":
            return lambda algo=None: hc.Gather(send, recv, 0, algo=algo)
        if call == "Scatter":
            return lambda algo=None: hc.Scatter(send, recv, 0, algo=algo)
        return lambda algo=None: hc.Allreduce(send, recv, MPI.SUM)

    def timed(hc, once, algo) -> float:
        """Seconds from the agreed start to the last rank's return."""
        hc._sync()
        t0 = hc.start_together(5e-3)
        once(algo)
        mine = (hc.now() - t0) / _NS
        return float(max(hc.comm.allgather(mine)))

    with wrapper(1.0) as hc:  # the schedules' times at scale 1, to choose each case's scale
        base = {}
        for call in calls:
            for nbytes in sizes:
                once = call_of(hc, call, nbytes)
                for algo in [None, "mpich"] if call == "Reduce" else [None]:
                    once(algo)
                    base[call, nbytes, algo] = simulate(platform, hc.last_schedule).makespan
    for call in calls:
        for nbytes in sizes:
            algos = [None, "mpich"] if call == "Reduce" else [None]
            with wrapper(NEGLIGIBLE) as hc:  # the host's own time for the call
                once = call_of(hc, call, nbytes)
                for algo in algos:
                    once(algo)
                host = {a: [timed(hc, once, a) for _ in range(repeat)] for a in algos}
            host_time = max(float(np.median(t)) for t in host.values())
            fastest = min(base[call, nbytes, a] for a in algos)
            scale = case_scale(least, target, host_time, share, fastest)
            with wrapper(scale) as hc:
                once = call_of(hc, call, nbytes)
                for algo in algos:
                    once(algo)  # warm up: plan, agree, first touch
                got: dict[Any, list[float]] = {a: [] for a in algos}
                for _ in range(repeat):  # interleaved: the plan and MPICH's, call by call
                    for algo in algos:
                        got[algo].append(timed(hc, once, algo))
            for algo in algos:
                rows.append(
                    {
                        "call": call,
                        "algorithm": "mpich binomial" if algo else PLANNED[call == "Allreduce"],
                        "nbytes": nbytes,
                        "time_scale": scale,
                        "host": float(np.median(host[algo])),
                        "measured": float(np.median(got[algo])),
                        "predicted": base[call, nbytes, algo] * scale,
                        "all": got[algo],
                    }
                )
            if call == "Reduce":
                plan, mpich = rows[-2], rows[-1]
                versus[nbytes] = {
                    "plan": plan["measured"],
                    "mpich": mpich["measured"],
                    "predicted_speedup": mpich["predicted"] / plan["predicted"],
                }
    if MPI.COMM_WORLD.rank == 0:
        out.write_text(json.dumps({"rows": rows, "reduce_vs_mpich": versus}))


if __name__ == "__main__":
    sys.exit(main())
