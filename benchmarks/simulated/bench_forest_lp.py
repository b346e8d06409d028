"""The per-root packing's column generation alone (``pack_forest``): iterations, columns,
trees, certified gap and CPU seconds on the random link graphs of ``bench_packing.py``.
Prints a table and writes ``results/bench_forest_lp.json``.

    python benchmarks/simulated/bench_forest_lp.py                  # 16, 32 nodes
    python benchmarks/simulated/bench_forest_lp.py --full           # 16, 32, 64 nodes
    python benchmarks/simulated/bench_forest_lp.py --nodes 64 --ops allgather
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_packing import link_graph

from hetcoll.planners.forest import pack_forest
from hetcoll.report import format_table

MiB = 2**20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="nodes 16,32,64")
    ap.add_argument("--nodes", default=None, help="comma-separated (16,32; full 16,32,64)")
    ap.add_argument("--ops", default="allgather,reduce_scatter,allreduce", help="operations")
    ap.add_argument("--density", type=float, default=0.3, help="link probability (0.3)")
    ap.add_argument("--seed", type=int, default=0, help="the graph's seed (0)")
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_forest_lp.json")
    args = ap.parse_args(argv)
    load = [os.getloadavg()[0]]
    rows, records = [], []
    nodes = args.nodes or ("16,32,64" if args.full else "16,32")
    for n in (int(x) for x in nodes.split(",")):
        p = link_graph(n, args.density, args.seed)
        for op in args.ops.split(","):
            c0 = time.process_time()
            f = pack_forest(p, op, [MiB] * n, slice_size=MiB)
            cpu = time.process_time() - c0
            load.append(os.getloadavg()[0])
            r = {"n": n, "op": op, "iterations": f.iterations, "columns": len(f.columns),
                 "trees": len(f.trees), "gap": f.gap, "time": f.time, "bound": f.bound,
                 "cpu_s": cpu}  # fmt: skip
            records.append(r)
            rows.append([n, op, f.iterations, len(f.columns), len(f.trees), f"{f.gap:.1e}",
                         f"{cpu:.2f}"])  # fmt: skip
    print(format_table(["nodes", "op", "iterations", "columns", "trees", "gap", "CPU s"], rows))
    print(f"load average {min(load):.1f}-{max(load):.1f}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"load": [min(load), max(load)], "records": records}
    args.out.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
