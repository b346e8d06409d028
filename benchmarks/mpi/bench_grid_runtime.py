"""Grid schedules under postal emulation: measured against predicted (Park et al. eq. 2-4).

8 ranks emulate a grid of 4 sites x 2 processes with millisecond latencies (the paper's
latencies, 20-150 ms, scaled down 10x to keep the run short), under eq. (4) (no overhead or
gap) and eq. (2) (o = 1 ms, g = 2 ms, o_r = 0.5 ms).  Each planner's broadcast is measured
with the Sec. 7.1.2 ack method (best of ``REPEAT``); prints measured/predicted and writes
``results/bench_grid_runtime.json``.
Run: ``.venv/bin/python benchmarks/mpi/bench_grid_runtime.py [--repeat 5]`` (``REPEAT`` in
the environment sets the same default).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hetcoll.generators import grid_platform
from hetcoll.jobs import Run, entries, launch
from hetcoll.report import format_table

PLANNERS = ["flat", "binomial", "spt", "hlot", "mpich-g2", "mpich-gx", "gap_aware"]
MODELS = {
    "eq. 4": {"name": "postal"},
    "eq. 2": {"name": "postal", "overhead": 1e-3, "gap": 2e-3, "recv_overhead": 0.5e-3},
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("REPEAT", "5")))
    ap.add_argument("--json", type=Path, default=Path("results/bench_grid_runtime.json"))
    args = ap.parse_args(argv)
    repeat = args.repeat
    lat = {
        "intra": (0.5e-3, 1e-3),
        "lan": (1e-3, 2e-3),
        "light": (2e-3, 5e-3),
        "heavy": (2e-3, 15e-3),
    }
    base = grid_platform(layout=[[2]] * 4, latency=lat, access=0.2e-3, seed=5)
    runs = [
        Run(
            base.with_model(model).to_dict(),
            "bcast",
            PLANNERS[0],
            baselines=tuple(PLANNERS[1:]),
            native=False,
            root=base.ids[-1],
            sizes=(8,),
            repeat=repeat,
        )
        for model in MODELS.values()
    ]
    load = os.getloadavg()[0]
    results = [run["documents"][0] for run in launch(runs, 8, timeout=900)["runs"]]
    rows, records = [], []
    for label, doc in zip(MODELS, results, strict=True):
        for r in entries(doc):
            ratio = r["measured_time"] / r["predicted_time"]
            rows.append(
                [
                    label,
                    r["algorithm"],
                    f"{r['predicted_time'] * 1e3:.3f}",
                    f"{r['measured_time'] * 1e3:.3f}",
                    f"{ratio:.3f}",
                ]
            )
            records.append({"model": label, **r, "ratio": ratio})
    print(
        format_table(
            ["model", "planner", "predicted ms", "measured ms", "measured/predicted"],
            rows,
            title=f"grid schedules, 8 emulated ranks (load average {load:.1f})",
        )
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"load_average": load, "results": records}, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
