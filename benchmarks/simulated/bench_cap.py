"""Planning and simulating at the message cap: every planner family, time and peak memory.

A schedule sends at most ``hetcoll.schedule.MAX_TRANSFERS`` messages (segments times the
messages of each segment, relay hops included), and a request that simulates several
schedules (``auto``, ``compare``, ``switch_aware``) at most that many in all; an eighth of
that under shared contention (``MAX_SHARED_TRANSFERS``), whose messages cost about eight
times as much to simulate.  Each case
here plans and simulates as close to that cap as its planner allows: 1 KiB segments, as
many as fit (the message size follows).  Target: under about 10 s and 2 GB per case on a
2-core machine.

Every case runs in a fresh process, so that "MB" (the growth of the peak resident set
during plan + simulate) is its own; "CPU" is the process's CPU time (what other processes
on a shared machine do not add), "wall" the elapsed time, with the load average printed
beside them.  A case over ``--timeout`` CPU seconds (the process's own, so that a loaded
machine does not call a slow case a hang; elapsed time is capped too, at ``WALL_FACTOR``
times that) or ``--memory`` GB is stopped and reported; a case that raises is a failure
(exit status 1).

    python benchmarks/simulated/bench_cap.py                  # results/bench_cap.json
    python benchmarks/simulated/bench_cap.py --only graph     # the cases naming "graph"

To time another version of hetcoll at the same sizes, put its ``src`` first and read the
sizes from an earlier run::

    PYTHONPATH=/other/src python benchmarks/simulated/bench_cap.py \\
        --sizes results/bench_cap.json --out results/bench_cap_other.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

SEGMENT = 1024
SHARED = json.dumps({"name": "hockney", "contention": "shared"})
#: (case, platform, planner, operation, model): one or more planners of every family
CASES = [
    ("fig1 fnf", "fig1", "fnf", "bcast", None),
    ("fig1 spoc", "fig1", "spoc", "bcast", None),
    ("fig1 binomial", "fig1", "binomial", "bcast", None),
    ("fig1 chain", "fig1", "chain", "bcast", None),
    ("fig1 fnf_joint", "fig1", "fnf_joint", "multi_multicast", None),
    ("park hlot", "park-fig2", "hlot", "bcast", None),
    ("park gap_aware", "park-fig2", "gap_aware", "bcast", None),
    ("park mpich-gx", "park-fig2", "mpich-gx", "bcast", None),
    ("switch16 labs", "switch16", "labs", "bcast", None),
    ("switch16 two_vbbs", "switch16", "two_vbbs", "bcast", None),
    ("switch16 switch_aware", "switch16", "switch_aware", "bcast", None),
    ("graph6 chain", "graph6", "chain", "bcast", None),
    ("graph6 binomial_graph", "graph6", "binomial_graph", "bcast", None),
    ("graph6 grow_tree", "graph6", "grow_tree", "bcast", None),
    ("graph6 prune_degree", "graph6", "prune_degree", "bcast", None),
    ("graph6 lp_prune", "graph6", "lp_prune", "bcast", None),
    ("graph6 throughput_tree", "graph6", "throughput_tree", "bcast", None),
    ("graph6 multi_tree", "graph6", "multi_tree", "bcast", None),
    ("graph6 multi_tree uni", "graph6", "multi_tree", "bcast", "one_port_uni"),
    ("graph6 grow_tree_multiport", "graph6", "grow_tree_multiport", "bcast", "multi_port"),
    ("graph6 hockney shared", "graph6", "fnf", "bcast", SHARED),
    ("fig1 auto", "fig1", "auto", "bcast", None),
    ("fig1 compare", "fig1", "compare", "bcast", None),
    ("graph6 compare", "graph6", "compare", "bcast", None),
]  # fmt: skip


def make_platform(name: str):
    from hetcoll import load_platform
    from hetcoll.generators import random_graph_platform

    if name.startswith("graph"):  # a random 6-node graph of one-port links (Beaumont et al.)
        return random_graph_platform(int(name[5:]), 0.5, seed=1)
    return load_platform(name)


def _model(model):
    return None if model is None else json.loads(model) if model.startswith("{") else model


def _groups(p):
    """Two multicasts of a multiple multicast: from the first and the last node to all."""
    return [(p.ids[0], None), (p.ids[-1], None)]


def run(p, planner: str, operation: str, model, nbytes: int):
    """Plan and simulate once; the messages simulated."""
    from hetcoll import plan, plan_multiple, simulate
    from hetcoll.compare import compare

    if planner == "compare":
        c = compare(p, operation, root=p.ids[0], model=model, nbytes=nbytes, segment_size=SEGMENT)
        return sum(len(x.prediction.transfers) for x in c.ranked)
    if operation == "multi_multicast":
        s = plan_multiple(
            p, _groups(p), method=planner, model=model, nbytes=nbytes, segment_size=SEGMENT
        )
    else:
        s = plan(p, p.ids[0], method=planner, model=model, nbytes=nbytes, segment_size=SEGMENT)
    return len(simulate(p, s, model).transfers)


def size_case(p, planner: str, operation: str, model) -> int:
    """The largest message in 1 KiB segments the planner accepts: from the messages per
    segment (one segment's plan), then down while the cap refuses it."""
    from hetcoll.errors import HetcollError
    from hetcoll.models import get_model
    from hetcoll.schedule import transfer_budget

    cost_model = p.model if model is None else get_model(model)
    budget = transfer_budget(getattr(cost_model, "contention", "exclusive"))
    if planner == "compare":
        from hetcoll.compare import candidates

        n = len(candidates(operation, cost_model.name, len(p), True)[0])
        per = n * (len(p) - 1)
    elif planner in ("auto", "switch_aware"):
        per = len(p) - 1
    else:
        from hetcoll import plan, plan_multiple

        if operation == "multi_multicast":
            s = plan_multiple(p, _groups(p), method=planner, model=model, nbytes=1)
        else:
            s = plan(p, p.ids[0], method=planner, model=model, nbytes=1)
        per = s.transfers
    chunks = budget // per
    while chunks > 0:
        try:
            _refused(p, planner, operation, model, chunks * SEGMENT)
            return chunks * SEGMENT
        except HetcollError as exc:
            if "more than" not in str(exc):
                raise
            chunks = chunks * 95 // 100
    raise SystemExit(f"{planner}: no size fits")


def _refused(p, planner, operation, model, nbytes) -> None:
    """Raise what the cap raises for this size (planning only: the checks come first)."""
    from hetcoll import plan, plan_multiple
    from hetcoll.compare import compare

    if planner in ("compare", "auto"):
        import hetcoll.compare as hc

        real = hc.simulate
        hc.simulate = _stop  # the budget is checked before any simulation
        try:
            if planner == "compare":
                compare(p, operation, root=p.ids[0], model=model, nbytes=nbytes,
                        segment_size=SEGMENT, algos=None)  # fmt: skip
            else:
                plan(p, p.ids[0], method="auto", model=model, nbytes=nbytes, segment_size=SEGMENT)
        except _Stop:
            pass
        finally:
            hc.simulate = real
    elif operation == "multi_multicast":
        plan_multiple(p, _groups(p), method=planner, model=model, nbytes=nbytes,
                      segment_size=SEGMENT)  # fmt: skip
    elif planner != "switch_aware":
        plan(p, p.ids[0], method=planner, model=model, nbytes=nbytes, segment_size=SEGMENT)
    else:  # it simulates as it plans: its check comes before
        import importlib

        sa = importlib.import_module("hetcoll.planners.switch_aware")  # the module

        real = sa.check_simulations

        def check(*args, **kwargs):
            real(*args, **kwargs)
            raise _Stop

        sa.check_simulations = check
        try:
            plan(p, p.ids[0], method=planner, model=model, nbytes=nbytes, segment_size=SEGMENT)
        except _Stop:
            pass
        finally:
            sa.check_simulations = real


class _Stop(Exception):
    pass


def _stop(*args, **kwargs):
    raise _Stop


def run_case(spec: dict) -> dict:
    p = make_platform(spec["platform"])
    model = _model(spec["model"])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    c0, t0 = time.process_time(), time.perf_counter()
    transfers = run(p, spec["planner"], spec["operation"], model, spec["nbytes"])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"transfers": transfers, "wall_s": wall, "cpu_s": cpu, "peak_mb": peak - before}


#: elapsed seconds a case may take, in CPU seconds of its limit (a backstop: on a machine
#: shared by many processes a case gets a small share of a core)
WALL_FACTOR = 20


def spawn(args: list[str], timeout: float, memory_gb: float) -> dict:
    def limit() -> None:
        size = int(memory_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
        cpu = max(1, math.ceil(timeout))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))  # SIGXCPU at the soft one

    try:
        out = subprocess.run(
            [sys.executable, __file__, *args],
            capture_output=True,
            text=True,
            timeout=timeout * WALL_FACTOR,
            check=False,
            preexec_fn=limit,
        )
    except subprocess.TimeoutExpired:
        return {"timeout": timeout * WALL_FACTOR, "clock": "wall"}
    if out.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"timeout": timeout, "clock": "cpu"}
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        return {"memory": memory_gb} if "MemoryError" in last else {"error": last}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=120.0, help="CPU seconds per case (120)")
    ap.add_argument("--memory", type=float, default=6.0, help="GB of address space per case (6)")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--sizes", type=Path, help="message sizes from this earlier result file")
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_cap.json")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--size-of", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(json.loads(args.case))))
        return 0
    if args.size_of:
        spec = json.loads(args.size_of)
        p = make_platform(spec["platform"])
        model = _model(spec["model"])
        print(json.dumps({"nbytes": size_case(p, spec["planner"], spec["operation"], model)}))
        return 0

    from hetcoll.report import format_table

    known = json.loads(args.sizes.read_text())["cases"] if args.sizes else {}
    load = [os.getloadavg()[0]]
    results: dict[str, dict] = {}
    for name, platform, planner, operation, model in CASES:
        if args.only and args.only not in name:
            continue
        spec = {"platform": platform, "planner": planner, "operation": operation, "model": model}
        print(f"  {name} ...", file=sys.stderr, flush=True)
        if name in known:
            spec["nbytes"] = known[name]["nbytes"]
        else:
            sized = spawn(["--size-of", json.dumps(spec)], args.timeout, args.memory)
            if "nbytes" not in sized:
                results[name] = {**spec, **sized}
                continue
            spec["nbytes"] = sized["nbytes"]
        results[name] = {**spec, **spawn(["--case", json.dumps(spec)], args.timeout, args.memory)}
    load.append(os.getloadavg()[0])

    rows = []
    for name, r in results.items():
        if "transfers" in r:
            rows.append([name, r["nbytes"], r["transfers"], f"{r['cpu_s']:.2f}",
                         f"{r['wall_s']:.2f}", f"{r['peak_mb']:.0f}"])  # fmt: skip
        else:
            what = next(k for k in ("timeout", "memory", "error") if k in r)
            unit = {"timeout": f" {r.get('clock', '')} s", "memory": " GB"}.get(what, "")
            rows.append([name, r.get("nbytes", "-"), "-", f"{what}: {r[what]}{unit}", "", ""])
    print(
        format_table(
            ["case", "bytes", "messages", "CPU (s)", "wall (s)", "MB"],
            rows,
            title=f"plan + simulate at the cap, 1 KiB segments, one fresh process per case "
            f"(load average {load[0]:.1f} -> {load[1]:.1f} on {os.cpu_count()} CPUs)",
        )
    )
    doc = {"benchmark": "cap", "segment_size": SEGMENT, "load": load, "cases": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    failed = [name for name, r in results.items() if "error" in r]
    for name in failed:
        print(f"bench_cap: case {name!r} failed: {results[name]['error']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
