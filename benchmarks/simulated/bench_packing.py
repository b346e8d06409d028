"""The ``forest`` planner against the optimum: allgather and reduce-scatter on random link
graphs.  Prints a table and writes ``results/bench_packing.json``.

For each random bandwidth-only link graph (``multi_port``, links of 1, 2.5, 10 or 40 GB/s,
no send costs; 8 to 64 nodes, density 0.3) and each size per rank (1 MiB, 64 MiB: each
member's block), the schedule ``forest`` plans is simulated, and its time divided by the
certified optimum of the operation (``hetcoll.allbounds``; the cut bound on these graphs);
the table shows that ratio, the trees, the messages and the planning time (CPU seconds:
other processes on a shared machine do not add to it; the load average is printed beside),
and beside it each baseline planner's time over the optimum and the best of them: MPICH's
algorithms in rank order, ``ring``, ``bruck`` (allgather), ``halving`` (reduce-scatter),
``rabenseifner``, ``binomial`` (reduce then broadcast) and ``balanced`` (hivemind's
butterfly: allreduce), ``n/a`` where one
does not plan the operation.  On these graphs most pairs of ranks have no link: a
baseline's message between them goes through the shortest path's relays, store and
forward, as the network would route MPI's.  ``--seeds`` takes a count or a list of seeds
(``0-5``); a second table gives, per nodes, operation and size, the worst and the mean
ratio over the seeds, the worst's seed, the worst planning time and how many seeds' plans
were slower than the best baseline.

    python benchmarks/simulated/bench_packing.py                       # 8, 16, 32 nodes
    python benchmarks/simulated/bench_packing.py --full                # 8, 16, 32, 64 nodes
    python benchmarks/simulated/bench_packing.py --nodes 8,16 --seeds 1
    python benchmarks/simulated/bench_packing.py --nodes 64 --sizes 1 --seeds 0-5
    python benchmarks/simulated/bench_packing.py --two-site --sizes 1,8

``--two-site``: instead of the random graphs, the two-site platform of ``hetcoll reproduce
allreduce-star`` (two 4-host stars of 25/10 Gbit/s NICs joined by a 1 ms, 5 Gbit/s WAN;
model ``hockney``, shared links; its 8 hosts the members, its switches routing), where no
optimum is known (per-message costs): each plan's time over the members' lower bound
(:func:`hetcoll.allbounds.members_bound` with the packing's bound: from a few MiB the WAN
cut after one crossing's latency), for hetcoll's ``sites`` (with its planning CPU seconds,
its WAN senders and segment size), ``site_pairs`` (every host crossing the WAN to its
counterpart), ``site_exchange`` (an allreduce's partial sums swapped by the sites in one
WAN hop) and ``forest`` (the hosts' per-root packing) and the
baselines that plan on the hosts alone (``blind``: recursive doubling in rank order,
``binomial``: reduce then broadcast).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from hetcoll import PlannerError, Platform, plan, simulate
from hetcoll.allbounds import collective_bound, members_bound
from hetcoll.compare import plan_request
from hetcoll.experiments.allreduce_star import platform as reproduce_platform
from hetcoll.generators import capacitated_graph_platform, hosts
from hetcoll.report import format_table

MiB = 2**20
#: the baseline planners simulated beside ``forest`` (time / optimum in the table)
BASELINES = ("ring", "bruck", "halving", "rabenseifner", "binomial", "balanced")
#: the operations each baseline plans here (``binomial``: its tree backwards, then forwards)
SERVES = {"bruck": ("allgather",), "halving": ("reduce_scatter",),
          "rabenseifner": ("allreduce",), "binomial": ("allreduce",),
          "balanced": ("allreduce",)}  # fmt: skip


def link_graph(n: int, density: float, seed: int) -> Platform:
    """A connected random graph: a random tree, plus each other pair with ``density``
    (:func:`hetcoll.generators.capacitated_graph_platform`)."""
    return capacitated_graph_platform(n, density, seed=seed)


def baseline(p: Platform, name: str, op: str, block: int, bound: float) -> float | None:
    """The baseline's simulated time over ``bound``, or None where it does not plan ``op``
    or refuses ``p``."""
    if op not in SERVES.get(name, (op,)):
        return None
    try:
        s = plan(p, None, method=name, collective=op, nbytes=block)
    except PlannerError:
        return None
    return simulate(p, s).makespan / bound


def one(p: Platform, op: str, block: int) -> dict:
    c0 = time.process_time()
    s = plan(p, None, method="forest", collective=op, nbytes=block)
    cpu = time.process_time() - c0
    t = simulate(p, s).makespan
    # the bound takes the whole result: N blocks, or an allreduce's vector (its nbytes)
    best = collective_bound(p, op, block if op == "allreduce" else block * len(p))
    baselines = {
        f"{name}_ratio": baseline(p, name, op, block, best.lower_bound) for name in BASELINES
    }
    known = [x for x in baselines.values() if x is not None]
    baselines["best_baseline_ratio"] = min(known) if known else None
    return {
        "time": t,
        "optimum": best.optimum,
        "lower_bound": best.lower_bound,
        "ratio": t / best.lower_bound,
        "trees": len(s.flows),
        "messages": s.transfers,
        "segment_size": s.params["segment_size"],
        "plan_cpu_s": cpu,
        **baselines,
    }


#: the plans on the two-site platform's hosts: hetcoll's, then the baselines that plan on
#: members (the others plan on every node, switches included)
TWO_SITE = ("sites", "site_pairs", "site_exchange", "forest", "blind", "binomial")


def two_site(op: str, block: int) -> dict:
    """``op`` with ``block`` bytes per host (an allreduce's vector) on the two-site
    platform (module docstring): each plan's time over the hosts' lower bound (None where
    a planner does not plan ``op``), and ``sites``' planning CPU seconds and choice."""
    p = reproduce_platform("two-site")
    members = hosts(p)
    m = block if op == "allreduce" else block * len(members)
    bound = members_bound(p, op, m, members, packing=True).lower_bound
    out: dict = {"lower_bound": bound}
    for name in TWO_SITE:
        per_root = op == "allreduce" and name in ("sites", "site_pairs", "site_exchange", "forest")
        options = {"align": 8} if per_root else None
        c0 = time.process_time()
        try:
            s = plan_request(p, op, name, members=members, nbytes=block, options=options)
        except PlannerError:
            out[f"{name}_ratio"] = None
            continue
        cpu = time.process_time() - c0
        out[f"{name}_ratio"] = simulate(p, s).makespan / bound
        if name == "sites":
            out.update(plan_cpu_s=cpu, senders=s.params["senders"],
                       segment_size=s.params["segment_size"])  # fmt: skip
    return out


def two_site_main(args, load: list[float]) -> int:
    """``--two-site``: the table and the JSON of :func:`two_site` per op and size."""
    rows, records = [], []
    for op in args.ops.split(","):
        for mib in (int(x) for x in args.sizes.split(",")):
            r = two_site(op, mib * MiB)
            r.update(op=op, mib_per_rank=mib)
            records.append(r)
            seg = r["segment_size"]
            rows.append([
                op, mib, f"{r['lower_bound'] * 1e3:.3f}",
                *(_ratio(r[f"{name}_ratio"]) for name in TWO_SITE),
                r["senders"], "whole" if seg is None else seg, f"{r['plan_cpu_s']:.2f}",
            ])  # fmt: skip
            load.append(os.getloadavg()[0])
    head = ["op", "MiB/rank", "bound ms", *(f"{name}/bound" for name in TWO_SITE)]
    head += ["sites senders", "sites segment", "sites plan CPU s"]
    print(format_table(head, rows, title="two-site (hockney, shared links), simulated"))
    print(f"load average {min(load):.1f}-{max(load):.1f}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"load": [min(load), max(load)], "two_site": records}
    args.out.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    return 0


def seed_list(text: str) -> list[int]:
    """``--seeds``: a count ``k`` (seeds 0 to ``k - 1``), or seeds and ranges, ``0-5`` or
    ``1,5,7-9`` (a range includes both ends)."""
    if text.isdigit():
        return list(range(int(text)))
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += range(int(lo), int(hi or lo) + 1)
    return list(dict.fromkeys(seeds))


def summary(records: list[dict]) -> list[list]:
    """Per nodes, operation and size, over the seeds: the worst and the mean time over the
    optimum, the seed of the worst, the worst planning CPU seconds, and how many seeds'
    plans were slower than the best baseline (the target is the worst, not one seed's)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["n"], r["op"], r["mib_per_rank"]), []).append(r)
    rows = []
    for (n, op, mib), rs in groups.items():
        worst = max(rs, key=lambda r: r["ratio"])
        slower = sum(
            1 for r in rs
            if r["best_baseline_ratio"] is not None and r["ratio"] > r["best_baseline_ratio"]
        )  # fmt: skip
        rows.append([
            n, op, mib, len(rs), f"{worst['ratio']:.4f}", worst["seed"],
            f"{sum(r['ratio'] for r in rs) / len(rs):.4f}",
            f"{max(r['plan_cpu_s'] for r in rs):.2f}", slower,
        ])  # fmt: skip
    return rows


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="nodes 8,16,32,64")
    ap.add_argument("--nodes", default=None, help="comma-separated (8,16,32; full 8,16,32,64)")
    ap.add_argument("--sizes", default="1,64", help="MiB per rank, comma-separated (1,64)")
    ap.add_argument("--ops", default="allgather,reduce_scatter", help="operations")
    ap.add_argument("--density", type=float, default=0.3, help="link probability (0.3)")
    ap.add_argument(
        "--seeds", type=seed_list, default=[0], help="graphs per size: a count, or 0-5, 1,5 (1)"
    )
    ap.add_argument("--two-site", action="store_true", help="the two-site platform instead")
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_packing.json")
    args = ap.parse_args(argv)
    load = [os.getloadavg()[0]]
    if args.two_site:
        return two_site_main(args, load)
    rows, records = [], []
    nodes = args.nodes or ("8,16,32,64" if args.full else "8,16,32")
    for n in (int(x) for x in nodes.split(",")):
        for seed in args.seeds:
            p = link_graph(n, args.density, seed)
            for op in args.ops.split(","):
                for mib in (int(x) for x in args.sizes.split(",")):
                    r = one(p, op, mib * MiB)
                    r.update(n=n, seed=seed, op=op, mib_per_rank=mib)
                    records.append(r)
                    rows.append([
                        n, seed, op, mib, f"{r['ratio']:.4f}", r["trees"], r["messages"],
                        f"{r['plan_cpu_s']:.2f}",
                        *(_ratio(r[b + "_ratio"]) for b in (*BASELINES, "best_baseline")),
                    ])  # fmt: skip
                    load.append(os.getloadavg()[0])
    print(
        format_table(
            ["nodes", "seed", "op", "MiB/rank", "time/optimum", "trees", "messages", "plan CPU s"]
            + [f"{b}/optimum" for b in (*BASELINES, "best baseline")],
            rows,
        )
    )
    print(f"load average {min(load):.1f}-{max(load):.1f}", file=sys.stderr)
    print(
        format_table(
            ["nodes", "op", "MiB/rank", "seeds", "worst", "worst seed", "mean",
             "worst plan CPU s", "slower than a baseline"],
            summary(records),
            title="over the seeds: time / optimum",
        )
    )  # fmt: skip
    worst = {mib: max(r["ratio"] for r in records if r["mib_per_rank"] == mib)
             for mib in {r["mib_per_rank"] for r in records}}  # fmt: skip
    print("worst time/optimum: " + ", ".join(f"{k} MiB {v:.4f}" for k, v in sorted(worst.items())))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"load": [min(load), max(load)], "records": records, "worst": worst,
           "seeds": args.seeds}  # fmt: skip
    args.out.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    np.seterr(all="raise")
    sys.exit(main())
