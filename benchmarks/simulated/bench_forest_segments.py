"""``forest``'s choice of segment size: the quick search (default) against the full one,
side by side in one run, and what ``auto`` then chooses for the all-to-all collectives.

For each case, ``forest`` plans the collective twice, ``search="full"`` (every halving
simulated while the time falls, under windows per edge; every segment count played out
otherwise) and ``search="quick"`` (a few cheap points, a halving only where it is predicted
to gain 1 % or more, a stop within 1 % of the packing's bound: ``forestplan._descend``).
Each schedule is simulated; the table gives each search's CPU seconds of planning (the
process's own time: other processes on a shared machine do not add to it), the
simulations and play-outs it ran, the quick plan's time over the full plan's, and the
time over the lower bound of :func:`hetcoll.allbounds.collective_bound`.

The cases: stars of NICs (model ``nic``: the built-in ``star8``, an 8-node star of
100/25/10 Gbit/s NICs; ``--full``: a 16-node star of 25/10 Gbit/s NICs) at a result size
of 64 MiB, and random bandwidth-only link graphs (``multi_port``, ``bench_packing.py``'s)
of 8 and 16 nodes (``--full``: 8 to 64) at 1 MiB per rank.  With ``--auto``, ``auto``'s
choice and its time over the bound on ``star8`` and the 100/25/10 star at 8 B, 64 KiB,
1 MiB, 64 MiB and 256 MiB (``hetcoll reproduce allreduce-star`` prints every planner's).

Prints the tables and writes ``results/bench_forest_segments.json``.
Run: ``.venv/bin/python benchmarks/simulated/bench_forest_segments.py [--full] [--auto]
[--nodes 8,16,32,64]``.
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

import hetcoll.planners.forestplan as forestplan
from hetcoll import load_platform, plan, simulate
from hetcoll.allbounds import collective_bound
from hetcoll.generators import star_platform
from hetcoll.report import format_table
from hetcoll.units import format_size

MiB = 2**20
OPS = ("allreduce", "allgather", "reduce_scatter")
AUTO_SIZES = (8, 64 << 10, MiB, 64 * MiB, 256 * MiB)


def stars(n16: bool) -> dict:
    out = {
        "star8": load_platform("star8"),
        "star8 100/25/10": star_platform(8, ("100Gbps", "25Gbps", "10Gbps"), "5us"),
    }
    if n16:
        out["star16 25/10"] = star_platform(16, ("25Gbps", "10Gbps"), "5us")
    return out


class Counter:
    """Counts the simulations and play-outs ``forest`` runs."""

    def __init__(self) -> None:
        self.sims = self.plays = 0
        import hetcoll.simulator as sim

        self._sim, self._play = sim.simulate, forestplan.per_root_order
        sim.simulate = self._counted_sim
        forestplan.per_root_order = self._counted_play

    def _counted_sim(self, *a, **k):
        self.sims += 1
        return self._sim(*a, **k)

    def _counted_play(self, *a, **k):
        self.plays += 1
        return self._play(*a, **k)

    def close(self) -> None:
        import hetcoll.simulator as sim

        sim.simulate, forestplan.per_root_order = self._sim, self._play


def each(p, op: str, m: int) -> int:
    """What ``forest`` takes: an allreduce's vector, else each member's block."""
    return m if op == "allreduce" else m // len(p)


def one(name: str, p, op: str, m: int) -> dict:
    bound = collective_bound(p, op, m).lower_bound
    out = {"case": name, "op": op, "M": m, "bound": bound}
    align = {"align": 8} if op == "allreduce" else {}
    for search in ("full", "quick"):
        count = Counter()
        c0 = time.process_time()
        try:
            s = plan(p, None, method="forest", collective=op, nbytes=each(p, op, m),
                     options={**align, "search": search})  # fmt: skip
        finally:
            count.close()
        cpu = time.process_time() - c0
        t = simulate(p, s).makespan
        seg = s.params["segment_size"]
        out[search] = {"cpu_s": cpu, "time": t, "simulations": count.sims,
                       "play_outs": count.plays, "segment_size": seg}  # fmt: skip
    out["quick_over_full"] = out["quick"]["time"] / out["full"]["time"]
    out["cpu_ratio"] = out["quick"]["cpu_s"] / out["full"]["cpu_s"]
    return out


def auto_rows(platforms: dict) -> tuple[list[list], list[dict]]:
    rows, records = [], []
    for name in ("star8", "star8 100/25/10"):
        p = platforms[name]
        for op in OPS:
            for m in AUTO_SIZES:
                bound = collective_bound(p, op, m).lower_bound
                c0 = time.process_time()
                s = plan(p, None, method="auto", collective=op, nbytes=each(p, op, m))
                cpu = time.process_time() - c0
                ratio = simulate(p, s).makespan / bound
                chosen = s.params["chosen"]
                records.append({"case": name, "op": op, "M": m, "chosen": chosen,
                                "time_over_bound": ratio, "cpu_s": cpu})  # fmt: skip
                rows.append([name, op, format_size(m), chosen, f"{ratio:.3f}", f"{cpu:.2f}"])
    return rows, records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also star16, graphs of 32, 64")
    ap.add_argument("--nodes", default=None, help="link-graph sizes (8,16; full 8,16,32,64)")
    ap.add_argument("--auto", action="store_true", help="also auto's choice on the stars")
    ap.add_argument("--out", type=Path, default=Path("results/bench_forest_segments.json"))
    args = ap.parse_args(argv)
    load = [os.getloadavg()[0]]
    platforms = stars(args.full)
    cases = [(name, p, op, 64 * MiB) for name, p in platforms.items() for op in OPS]
    nodes = args.nodes or ("8,16,32,64" if args.full else "8,16")
    for n in (int(x) for x in nodes.split(",")):
        p = link_graph(n, 0.3, 0)
        cases += [(f"graph{n}", p, op, MiB * n) for op in ("allgather", "reduce_scatter")]
    records, rows = [], []
    for name, p, op, m in cases:
        r = one(name, p, op, m)
        records.append(r)
        load.append(os.getloadavg()[0])
        full, quick = r["full"], r["quick"]
        rows.append([
            name, op, format_size(m), f"{full['cpu_s']:.2f}", f"{quick['cpu_s']:.2f}",
            f"{r['cpu_ratio']:.2f}", f"{full['simulations']}/{full['play_outs']}",
            f"{quick['simulations']}/{quick['play_outs']}", f"{r['quick_over_full']:.4f}",
            f"{full['time'] / r['bound']:.4f}", f"{quick['time'] / r['bound']:.4f}",
        ])  # fmt: skip
        print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    print(format_table(
        ["case", "op", "M", "full CPU s", "quick CPU s", "quick/full CPU", "full sims/plays",
         "quick sims/plays", "quick/full time", "full/bound", "quick/bound"],
        rows, title="forest's segment search: full against quick (planning CPU seconds)",
    ))  # fmt: skip
    doc = {"records": records}
    if args.auto:
        arows, doc["auto"] = auto_rows(platforms)
        load.append(os.getloadavg()[0])
        print(format_table(["platform", "op", "M", "auto's choice", "time/bound", "CPU s"],
                           arows, title="auto (every candidate, forest included)"))  # fmt: skip
    print(f"load average {min(load):.1f}-{max(load):.1f}")
    doc["load"] = [min(load), max(load)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
