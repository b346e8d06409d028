"""Large broadcasts without emulation: hetcoll's ``multi_tree`` and its best single pipelined
tree next to native ``MPI_Bcast``.

For each rank count, one MPI job probes the host and a second one measures:

1. **The platform planned for.**  Without emulation the network is this host's shared
   memory: every pair of ranks is the same medium, and what a probe sees between pairs is
   scheduling noise (docs/runtime.md: tens of percent on a loaded 2-core host) that would
   steer a heterogeneity-aware planner to arbitrary trees.  So hetcoll's probe
   (``hetcoll.runtime.probe``, every pair ping-pongs *through the engine*, so the engine's
   per-message cost is in it) measures round trips at ``PROBE_SIZES``, and
   :func:`fit_costs` turns the median pair into one latency and one bandwidth:
   :func:`host_platform` is the complete one-port graph with those costs (``host``).  On it
   the optimum is one chain (every node receives each slice once at the full rate), so
   ``multi_tree`` returns a single tree there.  To run a real multi-tree schedule too, a
   second platform keeps the host's latency and mean bandwidth but spreads the link
   bandwidths as Beaumont et al.'s Table 2 (N(100, 20) MB/s, seed ``STRUCTURED_SEED``;
   :func:`structured_platform`): ``multi_tree`` packs several trees there.  Run without
   emulation, that platform's schedules measure what their structure costs on this host.
2. **The choices** (:func:`choose`): hetcoll's own comparison service
   (:func:`hetcoll.compare.compare`) plans every candidate tree planner at the slice sizes
   ``auto`` tries (:func:`hetcoll.compare.slice_choices`: the message in one piece, then 8,
   32, 128, ... slices, as many as fit the comparison's message budget) and simulates
   each; the best single pipelined tree is the fastest predicted candidate with one tree
   and more than one slice (ties: by name), ``multi_tree`` the fastest of its slice sizes.
3. **Measured side by side** (``ranks/bcast_large.py measure``): native ``comm.Bcast`` and
   each choice, one call each per round (order reversed every other round, a warm-up round
   not kept), and as a reference the chain on ``host`` in 8 slices (the largest slice
   ``auto`` tries, :func:`fixed`); per variant the median and best latency and the median
   and quartiles of the round-by-round ratios to native; the data is checked byte for byte
   on every rank after every call.

Run: ``.venv/bin/python benchmarks/mpi/bench_bcast_large.py [--full] [--json PATH]``
(default: 4 ranks, 8 MiB, 5 rounds; ``--full``: 4 and 8 ranks, 8-64 MiB, 21 rounds).
Prints a table, writes ``results/bench_bcast_large.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from hetcoll.compare import compare, slice_choices
from hetcoll.generators import random_graph_platform
from hetcoll.generators.beaumont import MEAN_BW
from hetcoll.jobs import run_program
from hetcoll.planners import plan
from hetcoll.platform import Link, Node, Platform
from hetcoll.report import format_table
from hetcoll.simulator import simulate

HERE = Path(__file__).parent
MIB = 1 << 20
PROBE_SIZES = (0, 64 * 1024, MIB, 4 * MIB)
STRUCTURED_SEED = 0
ROOT = "0"
#: multi_tree's own timetable at its shortest period (without it, multi_tree returns its
#: best single tree where that is predicted faster, and there is no multi-tree run to time)
MULTI_TREE = {"slices_per_period": 16}


# -- pure parts (tests/test_benchmarks_bcast_large.py) ---------------------------------------------


def fit_costs(rtt: np.ndarray, sizes: tuple[int, ...]) -> tuple[float, float]:
    """One latency (s) and bandwidth (bytes/s) from probed round trips (``N x N x sizes``).

    Per size the median over ordered pairs ``u != v`` of half the round trip, then a least
    squares line ``a + L / B`` over the sizes; the latency is clipped at 0.

    >>> rtt = np.zeros((2, 2, 2)); rtt[0, 1] = rtt[1, 0] = [2e-5, 2e-5 + 2 * 1e6 / 1e9]
    >>> [round(x, 9) for x in fit_costs(rtt, (0, 10**6))]
    [1e-05, 1000000000.0]
    """
    n = rtt.shape[0]
    off = ~np.eye(n, dtype=bool)
    one_way = np.array([np.nanmedian(rtt[:, :, s][off]) / 2 for s in range(len(sizes))])
    slope, intercept = np.polyfit(np.asarray(sizes, dtype=float), one_way, 1)
    if slope <= 0:
        raise ValueError(f"probe: round trips do not grow with the size ({one_way.tolist()})")
    return max(float(intercept), 0.0), float(1.0 / slope)


def host_platform(n: int, latency: float, bandwidth: float) -> Platform:
    """The complete one-port graph of ``n`` nodes, every link ``latency + L / bandwidth``."""
    nodes = tuple(Node(str(i)) for i in range(n))
    links = tuple(
        Link(str(u), str(v), latency, bandwidth) for u in range(n) for v in range(u + 1, n)
    )
    return Platform(nodes, links, model="one_port", name=f"host n={n}")


def structured_platform(
    n: int, latency: float, bandwidth: float, seed: int = STRUCTURED_SEED
) -> Platform:
    """The complete graph of Table 2's bandwidths (N(100, 20) MB/s, ``seed``) scaled so that
    their mean is ``bandwidth``, every link with ``latency``: the host's costs, spread."""
    table2 = random_graph_platform(n, 1.0, seed=seed)
    nodes = tuple(Node(nd.id) for nd in table2.nodes)
    links = tuple(
        Link(lk.u, lk.v, latency, lk.bandwidth * bandwidth / MEAN_BW) for lk in table2.links
    )
    return Platform(nodes, links, model="one_port", name=f"table2 n={n} seed={seed}")


def choose(platform: Platform, nbytes: int) -> dict[str, dict[str, Any]]:
    """The best single pipelined tree and ``multi_tree``'s best slice, by prediction.

    Every candidate tree planner of :func:`hetcoll.compare.compare` at each slice size of
    :func:`hetcoll.compare.slice_choices`; ``single``: the fastest candidate other than
    ``multi_tree`` with one tree and more than one slice (ties: by name, then slice);
    ``multi_tree``: its fastest slice size (its timetable: :data:`MULTI_TREE`).  Each:
    ``algo``, ``segment_size``, ``predicted`` (s), ``trees``; ``multi_tree`` also
    ``same_as_single``: whether its trees and slices are those of ``single`` (then measuring
    both measures the run's noise).
    """
    ranked = compare(
        platform,
        "bcast",
        root=ROOT,
        nbytes=nbytes,
        slices=slice_choices(nbytes),
        options=MULTI_TREE,
    )
    out: dict[str, dict[str, Any]] = {}
    flows: dict[str, Any] = {}
    for c in ranked.ranked:
        pipelined = c.segment_size is not None and c.segment_size < nbytes
        if c.algorithm == "multi_tree":
            key = "multi_tree"
        elif pipelined and len(c.schedule.flows) == 1:
            key = "single"
        else:
            continue
        out.setdefault(
            key,
            {
                "algo": c.algorithm,
                "segment_size": c.segment_size,
                "predicted": c.predicted_time,
                "trees": len(c.schedule.flows),
            },
        )
        flows.setdefault(key, c.schedule.to_dict()["flows"])
    out["multi_tree"]["same_as_single"] = flows["multi_tree"] == flows["single"]
    return out


def fixed(platform: Platform, algo: str, nbytes: int, segment_size: int) -> dict[str, Any]:
    """``algo`` at a given slice size, in :func:`choose`'s form: a reference beside the
    choice (the largest slice ``auto`` tries, where the host's real cost per message is
    higher than the probe's least round trip says)."""
    s = plan(platform, ROOT, method=algo, nbytes=nbytes, segment_size=segment_size)
    return {
        "algo": algo,
        "segment_size": segment_size,
        "predicted": simulate(platform, s).makespan,
        "trees": len(s.flows),
    }


def paired(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per variant: median and best seconds, and the median and quartiles of its
    round-by-round ratios to ``native`` (the rounds alternate the variants, so a busy moment
    hits both of a pair)."""
    native = np.asarray(samples["native"])
    out = {}
    for name, s in samples.items():
        q1, q2, q3 = np.percentile(np.asarray(s) / native, [25, 50, 75])
        out[name] = {
            "median": float(np.median(s)),
            "best": float(np.min(s)),
            "ratio_median": float(q2),
            "ratio_quartiles": [float(q1), float(q3)],
        }
    return out


# -- the jobs ----------------------------------------------------------------------------------


def bench_ranks(ranks: int, sizes: list[int], rounds: int) -> dict[str, Any]:
    """Probe, choose, measure on ``ranks`` ranks (two MPI jobs)."""
    t0 = time.monotonic()
    probed = run_program(
        ranks,
        HERE / "ranks" / "bcast_large.py",
        ["probe", ",".join(map(str, PROBE_SIZES))],
        timeout=900,
    )
    latency, bandwidth = fit_costs(np.array(probed["rtt"]), tuple(probed["sizes"]))
    platforms = {
        "host": host_platform(ranks, latency, bandwidth),
        "table2": structured_platform(ranks, latency, bandwidth),
    }
    spec: dict[str, Any] = {
        "rounds": rounds,
        "platforms": {k: p.to_dict() for k, p in platforms.items()},
        "sizes": [],
    }
    for nbytes in sizes:
        variants = []
        for pname, p in platforms.items():
            for key, c in choose(p, nbytes).items():
                variants.append({"name": f"{pname} {key}", "platform": pname, **c})
        largest = slice_choices(nbytes)[1]  # 8 slices
        ref = fixed(platforms["host"], "chain", nbytes, largest)
        variants.append({"name": "host chain, 8 slices", "platform": "host", **ref})
        spec["sizes"].append({"nbytes": nbytes, "variants": variants})
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-bcast-large-") as tmp:
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(spec))
        measured = run_program(
            ranks, HERE / "ranks" / "bcast_large.py", ["measure", path], timeout=3600
        )
    return {
        "ranks": ranks,
        "probe": {k: probed[k] for k in ("sizes", "reliable", "seconds")},
        "latency": latency,
        "bandwidth": bandwidth,
        "sizes": [
            {
                **per,
                "correct": measured["sizes"][str(per["nbytes"])]["correct"],
                "samples": measured["sizes"][str(per["nbytes"])]["samples"],
                "summary": paired(measured["sizes"][str(per["nbytes"])]["samples"]),
            }
            for per in spec["sizes"]
        ],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "seconds": time.monotonic() - t0,
    }


def table(result: dict[str, Any]) -> str:
    rows = []
    for per in result["sizes"]:
        summ = per["summary"]
        nat = summ["native"]
        rows.append(
            [per["nbytes"] // MIB, "native", "MPI_Bcast", "", "", "", _ms(nat["median"]), "1", ""]
        )
        for v in per["variants"]:
            s = summ[v["name"]]
            same = " (= single)" if v.get("same_as_single") else ""
            rows.append(
                [
                    "",
                    v["name"] + same,
                    v["algo"],
                    f"{v['segment_size'] // 1024} KiB",
                    v["trees"],
                    _ms(v["predicted"]),
                    _ms(s["median"]),
                    f"{s['ratio_median']:.2f}",
                    "{:.2f}-{:.2f}".format(*s["ratio_quartiles"]),
                ]
            )
    la = result["load_average"]
    return format_table(
        [
            "MiB",
            "variant",
            "planner",
            "slice",
            "trees",
            "predicted",
            "median",
            "/ native (median of pairs)",
            "quartiles",
        ],
        rows,
        title=(
            f"{result['ranks']} ranks, no emulation; host: {result['latency'] * 1e6:.1f} us + "
            f"L / {result['bandwidth'] / 1e9:.2f} GB/s (probe reliable: "
            f"{result['probe']['reliable']}); data correct on every rank every call: "
            f"{all(p['correct'] for p in result['sizes'])}; load average "
            f"{la['before'][0]:.1f} -> {la['after'][0]:.1f}"
        ),
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="4 and 8 ranks, 8-64 MiB, 21 rounds")
    ap.add_argument("--ranks", type=str, default=None, help="comma-separated rank counts")
    ap.add_argument("--sizes", type=str, default=None, help="comma-separated sizes in MiB")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--json", type=Path, default=Path("results/bench_bcast_large.json"))
    args = ap.parse_args(argv)
    ranks = [4, 8] if args.full else [4]
    sizes = [8, 16, 32, 64] if args.full else [8]
    if args.ranks:
        ranks = [int(x) for x in args.ranks.split(",")]
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    rounds = args.rounds or (21 if args.full else 5)
    results = []
    for n in ranks:
        res = bench_ranks(n, [s * MIB for s in sizes], rounds)
        print(table(res), flush=True)
        print(flush=True)
        results.append(res)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": results}, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0 if all(p["correct"] for r in results for p in r["sizes"]) else 1


if __name__ == "__main__":
    sys.exit(main())
