"""Speed and quality of the hypercube embeddings (Figueira & Reddi) and of our local search.

    python benchmarks/simulated/bench_hypercube.py [--quick] [--out results/bench_hypercube.json]

Targets: ``eff_cube`` at 1024 nodes under 0.2 s; the local search (``eff_cube_ls``) at least
10 more points of gain over blind than ``eff_cube`` at 256 nodes, in under a second.  Gains
are on the paper's random topologies (each pair 1..5 links).  Times are the median (and max)
over the topologies of the process CPU time (wall time is printed too; on a shared machine
it is noisier).  Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from hetcoll.files import make_output_dir, write_atomic
from hetcoll.generators import random_link_costs
from hetcoll.planners import cube_embedding
from hetcoll.rng import spawn_seeds


def timed(func, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = func(*args, **kwargs)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def bench_embeddings(n: int, topologies: int, seed: int) -> list[dict]:
    """Time of every paper embedding at ``n`` nodes."""
    rows = []
    weights = [random_link_costs(n, 5, seed=s).astype(float) for s in spawn_seeds(seed, topologies)]
    for method in ("blind", "dim2_cube", "tsts_cube", "eff_cube"):
        cpu, wall = [], []
        for w in weights:
            _, c, t = timed(cube_embedding.EMBEDDINGS[method], w)
            cpu.append(c)
            wall.append(t)
        rows.append(
            {
                "method": method,
                "n": n,
                "topologies": topologies,
                "cpu_median_s": statistics.median(cpu),
                "cpu_max_s": max(cpu),
                "wall_median_s": statistics.median(wall),
            }
        )
    return rows


def bench_local_search(n: int, topologies: int, seed: int, max_links: int = 5) -> dict:
    """Gain over blind of eff_cube and of eff_cube + local search, and the search's time."""
    eff, ours, cpu, wall, evals, moves = [], [], [], [], [], []
    for s in spawn_seeds(seed, topologies):
        w = random_link_costs(n, max_links, seed=s).astype(float)
        blind = cube_embedding.cube_cost(w, *cube_embedding.blind_embedding(w))
        positions, folds = cube_embedding.eff_embedding(w)
        (better, stats), c, t = timed(cube_embedding.improve_embedding, w, positions, folds)
        eff.append(100 * (blind - cube_embedding.cube_cost(w, positions, folds)) / blind)
        ours.append(100 * (blind - cube_embedding.cube_cost(w, better, folds)) / blind)
        cpu.append(c)
        wall.append(t)
        evals.append(stats["evals"])
        moves.append(stats["moves"])
    extra = np.subtract(ours, eff)
    return {
        "n": n,
        "max_links": max_links,
        "topologies": topologies,
        "eff_gain": float(np.mean(eff)),
        "ls_gain": float(np.mean(ours)),
        "extra_gain": float(extra.mean()),
        "extra_gain_min": float(extra.min()),
        "cpu_median_s": statistics.median(cpu),
        "cpu_max_s": max(cpu),
        "wall_median_s": statistics.median(wall),
        "evals_mean": float(np.mean(evals)),
        "moves_mean": float(np.mean(moves)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer topologies")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/bench_hypercube.json")
    args = parser.parse_args()
    k = 3 if args.quick else 1
    embed_rows = bench_embeddings(1024, 10 // k, args.seed)
    ls_rows = [
        bench_local_search(64, 30 // k, args.seed),
        bench_local_search(256, 15 // k, args.seed),
        bench_local_search(1024, 6 // k, args.seed),
    ]

    print("embeddings at 1024 nodes (target: eff_cube < 0.2 s)")
    print(f"{'method':<10} {'cpu median':>11} {'cpu max':>9} {'wall median':>12}")
    for r in embed_rows:
        print(
            f"{r['method']:<10} {r['cpu_median_s']:>10.4f}s {r['cpu_max_s']:>8.4f}s "
            f"{r['wall_median_s']:>11.4f}s"
        )
    print()
    print("local search on eff_cube, max cost 5 links (target at 256: +10 points in < 1 s)")
    print(
        f"{'N':>5} {'topos':>5} {'eff %':>6} {'ls %':>6} {'extra':>6} {'min':>5} "
        f"{'cpu med':>8} {'cpu max':>8} {'wall med':>8} {'evals':>6} {'moves':>6}"
    )
    for r in ls_rows:
        print(
            f"{r['n']:>5} {r['topologies']:>5} {r['eff_gain']:>6.1f} {r['ls_gain']:>6.1f} "
            f"{r['extra_gain']:>+6.1f} {r['extra_gain_min']:>+5.1f} {r['cpu_median_s']:>7.3f}s "
            f"{r['cpu_max_s']:>7.3f}s {r['wall_median_s']:>7.3f}s {r['evals_mean']:>6.0f} "
            f"{r['moves_mean']:>6.0f}"
        )
    out = Path(args.out)
    make_output_dir(out.parent)
    doc = {"benchmark": "hypercube", "seed": args.seed, "embeddings": embed_rows}
    doc["local_search"] = ls_rows
    write_atomic(out, json.dumps(doc, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
