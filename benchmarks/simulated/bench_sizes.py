"""Broadcast at every message size against the lower bound: the best single pipelined tree
and ``multi_tree``, each as ``bound / predicted time`` (1 at the bound), per message size.
Prints a table and writes ``results/bench_sizes.json``.

Platforms: :func:`hetcoll.generators.random_graph_platform` (Beaumont et al.'s Fig. 4
generator, density 0.12), root ``"0"``, slices of 1 MB, messages of 16 to 1 024 slices
(``--slices 16,64,256,1024,8192`` for the long ones).  The bound is
:func:`hetcoll.bounds.lower_bound` (size over the certified optimum, or one byte's fastest
reach), valid for every slicing; "whole" is
:func:`hetcoll.bounds.whole_slice_bound`, valid for the schedules whose every message
carries exactly one slice, as every planner here sends: the same under ``one_port``, above
it under ``multi_port`` where a port sends whole slices (``bound_whole`` in the JSON; the
``multi_tree`` column's worst / mean of ``bound_whole / time`` beside it).  "single" is the
fastest of the
single-tree pipelined planners (:data:`SINGLE`) at the same slice ("over the cap" when each
sends more than ``MAX_TRANSFERS`` messages, from about 5 300 slices at n = 50, while a
``multi_tree`` timetable or send order may send four times as many, which the simulator's
shortcuts run); ``multi_tree`` plans for
the message it is given (a timetable of several trees, or its best single tree when that is
predicted faster); "cpu" is multi_tree's planning plus simulation (process time).

``--model multi_port`` runs the same sweep with a port per link (there ``multi_tree`` also
runs the multi-port packing's trees over the whole message, up to
``MAX_TIMETABLE_TRANSFERS`` transfers, and keeps them when they are simulated faster).
``--latency SECONDS`` is the per-link latency sweep instead: each link of the platform
gets a latency drawn uniformly within half to one and a half times ``SECONDS`` (seeded),
messages of 1 KiB to 1 GiB (:data:`LATENCY_SIZES`), and the slice chosen by the planner:
``auto``'s choice (planner and slice) and its time, and the best single pipelined tree
and ``multi_tree`` each at its best slice of ``auto``'s, against the bound; "cpu" is
``auto``'s planning.

    python benchmarks/simulated/bench_sizes.py                 # n = 10, 30, 50; 1 platform
    python benchmarks/simulated/bench_sizes.py --full          # n = 10, 30, 50; 3 platforms
    python benchmarks/simulated/bench_sizes.py --quick         # n = 10, 30; 1 platform
    python benchmarks/simulated/bench_sizes.py --model one_port_uni
    python benchmarks/simulated/bench_sizes.py --model multi_port
    python benchmarks/simulated/bench_sizes.py --latency 50us --sizes 10,30
    python benchmarks/simulated/bench_sizes.py --auto --sizes 50 --seeds 3

``--auto``: ``auto``'s planning CPU (process time) for a 1 GiB broadcast (:data:`AUTO_SIZE`)
on each platform, the slice and planner it chooses, its time against the bound; with
``--latency`` on the latency sweep's platforms (each slice size's steady-state problem then
solved anew):

    python benchmarks/simulated/bench_sizes.py --auto --latency 50us --sizes 50 --seeds 3

``--gap`` (one-port): where the whole-message list schedule of ``multi_tree``'s packing (its
own trees, not the slack packing's it may keep instead) loses time against the bound
(:func:`hetcoll.planners.message_gaps.message_gaps`): the list schedule and its justified
form, the middle's rate (the slope between the message's first half and the whole), the
seconds the start-up and the drain add to it, and the critical ports' idle time in the first
tenth of the run, the middle and the last tenth, split into the time some transfer of the
port was waiting (its slice already at the sender) and the time it was starved (no slice for
it held anywhere); and where it keeps a periodic timetable instead (longer messages), its
slices per period, and its period's middle rate and start-up and drain the same way; then
the kept run's distance to the fluid bound split exactly by the packing's dual prices
(:func:`~hetcoll.planners.message_gaps.priced_idle`: the priced ports' idle seconds in the
first tenth, the middle and the last tenth) and the start-up its lags cost those ports
(:func:`~hetcoll.planners.message_gaps.priced_lags`):

    python benchmarks/simulated/bench_sizes.py --gap --sizes 50 --seeds 3 --slices 1024,8192
"""

from __future__ import annotations

import argparse
import json
import platform as host
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from hetcoll import __version__, plan, simulate
from hetcoll.bounds import lower_bound, whole_slice_bound
from hetcoll.compare import compare, slice_choices
from hetcoll.errors import PlannerError, ScheduleError
from hetcoll.files import make_output_dir, write_atomic
from hetcoll.generators import random_graph_platform
from hetcoll.planners.message_gaps import message_gaps, priced_idle, priced_lags
from hetcoll.planners.multitree import MESSAGE_TRANSFERS
from hetcoll.platform import Platform
from hetcoll.report import format_table
from hetcoll.units import format_size, parse_time

SLICE = 10**6
DENSITY = 0.12
#: the single-tree pipelined planners compared with multi_tree
SINGLE = ("throughput_tree", "grow_tree", "prune_degree", "lp_grow", "binomial_graph")
#: the per-link latency sweep's message sizes: 1 KiB, 64 KiB, 1 MiB, 64 MiB, 1 GiB
LATENCY_SIZES = (2**10, 2**16, 2**20, 2**26, 2**30)
#: the message of the ``--auto`` sweep (bytes)
AUTO_SIZE = 2**30
#: the idle parts of a critical port that ``--gap`` prints (first tenth, middle, last tenth)
GAP_PARTS = ("head", "middle", "tail")


def instance(n: int, seed: int, model: str, slices: list[int]) -> list[dict]:
    """One platform's rows: per message size, the bound and each planner's time."""
    p = random_graph_platform(n, DENSITY, seed=seed, model=model)
    rows = []
    for k in slices:
        size = k * SLICE
        bound = lower_bound(p, "0", size)
        whole = whole_slice_bound(p, "0", size, SLICE)
        times = {}
        for name in SINGLE:
            try:
                s = plan(p, "0", method=name, nbytes=size, segment_size=SLICE)
            except ScheduleError:  # over the message cap of a single tree: not a choice
                continue
            times[name] = simulate(p, s).makespan
        single = min(times, key=lambda a: (times[a], a)) if times else None
        t0 = time.process_time()
        try:
            s = plan(p, "0", method="multi_tree", nbytes=size, segment_size=SLICE)
        except ScheduleError:  # over the simulator's cap
            s, multi = None, None
        else:
            multi = simulate(p, s).makespan
        cpu = time.process_time() - t0
        rows.append(
            {
                "n": n,
                "seed": seed,
                "model": model,
                "slices": k,
                "bound": bound.seconds,
                "bound_whole": whole,
                "single": single,
                "single_time": times[single] if single else None,
                "times": times,
                "multi_tree_time": multi,
                "multi_tree_trees": int(s.params.get("trees", 1)) if s else None,
                "multi_tree_cpu": cpu,
            }
        )
    return rows


def gap_instance(n: int, seed: int, slices: list[int]) -> list[dict]:
    """One one-port platform, per message of ``k`` slices (at least 2): the whole
    message's list schedules (``multi_tree``'s, while it list schedules the message whole:
    up to ``MESSAGE_TRANSFERS`` transfers), their spans and the bound, the justified
    schedule's rate between the message's first ``k // 2`` slices and all ``k`` (the
    middle's) and the seconds its start-up and drain add to that rate, the mean idle
    seconds of its critical ports at the start, in the middle and at the end; and the
    periodic timetable ``multi_tree`` keeps, if it keeps one (:func:`periodic_gap`)."""
    p = random_graph_platform(n, DENSITY, seed=seed, model="one_port")
    rows = []
    for k in slices:
        bound = lower_bound(p, "0", k * SLICE).seconds
        row: dict = {"n": n, "seed": seed, "slices": k, "bound": bound, "list": None}
        if k * (n - 1) <= MESSAGE_TRANSFERS:
            whole = message_gaps(p, "0", k * SLICE, SLICE)
            half = message_gaps(p, "0", k // 2 * SLICE, SLICE)
            rate = (bound - lower_bound(p, "0", k // 2 * SLICE).seconds) / (
                whole["justified"] - half["justified"]
            )
            ports = [prof for _port, prof in whole["ports"]]
            row |= {
                "list": whole["list"],
                "justified": whole["justified"],
                "rate": rate,
                "start_drain": whole["justified"] - bound / rate,
                "ports": len(ports),
                **{part: float(np.mean([x[part] for x in ports])) for part in GAP_PARTS},
                "waiting": float(np.mean([x["waiting"] for x in ports])),
                "starved": float(
                    np.mean([sum(x[part] for part in GAP_PARTS) - x["waiting"] for x in ports])
                ),
            }
        rows.append(row | {"periodic": periodic_gap(p, k)})
    return rows


def periodic_gap(p: Platform, k: int) -> dict | None:
    """The periodic timetable ``multi_tree`` keeps for a message of ``k`` slices (None when
    it keeps the whole message's list schedule or one tree): its slices per period and
    simulated time; then that period's dense timetable (``slices_per_period``) at ``k //
    2`` and ``k`` slices: its time, its middle's rate (the slope between the two) and the
    seconds its start-up and drain add to that rate; ``priced``, the kept run's
    :func:`~hetcoll.planners.message_gaps.priced_idle`, and ``lags``, its
    :func:`~hetcoll.planners.message_gaps.priced_lags`."""
    kept = plan(p, "0", method="multi_tree", nbytes=k * SLICE, segment_size=SLICE)
    per = int(kept.params.get("slices_per_period", k))
    if kept.params.get("trees", 1) == 1 or per >= k:
        return None
    run = simulate(p, kept)
    priced = priced_idle(p, "0", kept, prediction=run)
    runs = {}
    for x in (k // 2, k):
        s = plan(
            p,
            "0",
            method="multi_tree",
            nbytes=x * SLICE,
            segment_size=SLICE,
            options={"slices_per_period": per},
        )
        runs[x] = (simulate(p, s).makespan, lower_bound(p, "0", x * SLICE).seconds)
    rate = (runs[k][1] - runs[k // 2][1]) / (runs[k][0] - runs[k // 2][0])
    return {
        "slices_per_period": per,
        "kept": run.makespan,
        "dense": runs[k][0],
        "rate": rate,
        "start_drain": runs[k][0] - runs[k][1] / rate,
        "priced": priced,
        "lags": priced_lags(p, "0", kept),
    }


def gap_table(rows: list[dict]) -> list[list[str]]:
    """Per (n, slices): the worst / mean bound / span of the list schedule and the justified
    one, the middle's rate, the mean seconds the start-up and drain add, the critical
    ports (fewest-most), their mean idle seconds at the start, middle and end and the same
    idle time split into waiting and starved ("-" where
    ``multi_tree`` does not list schedule the message whole); then the periodic timetables
    kept: their slices per period, bound / time, middle's rate and start-up and drain, the
    priced ports' mean idle seconds at the start, middle and end, and their lags' seconds."""

    def pct(xs: list[float]) -> str:
        return f"{100 * min(xs):.1f}% / {100 * np.mean(xs):.1f}%" if xs else "-"

    out = []
    for n, k in sorted({(r["n"], r["slices"]) for r in rows}):
        rs = [r for r in rows if (r["n"], r["slices"]) == (n, k)]
        ls = [r for r in rs if r["list"] is not None]
        ps = [(r["bound"], r["periodic"]) for r in rs if r["periodic"] is not None]
        counts = [r["ports"] for r in ls]
        line = [str(n), str(k), f"{np.mean([r['bound'] for r in rs]):.4g}"]
        line += [
            pct([r["bound"] / r["list"] for r in ls]),
            pct([r["bound"] / r["justified"] for r in ls]),
            pct([r["rate"] for r in ls]),
            f"{np.mean([r['start_drain'] for r in ls]):.3f}" if ls else "-",
            f"{min(counts)}-{max(counts)}" if ls else "-",
            " / ".join(f"{np.mean([r[part] for r in ls]):.3f}" for part in GAP_PARTS)
            if ls
            else "-",
            " / ".join(f"{np.mean([r[part] for r in ls]):.3f}" for part in ("waiting", "starved"))
            if ls
            else "-",
        ]
        pers = sorted({x["slices_per_period"] for _b, x in ps})
        line += [
            ",".join(str(x) for x in pers) or "-",
            pct([b / x["kept"] for b, x in ps]),
            pct([x["rate"] for _b, x in ps]),
            f"{np.mean([x['start_drain'] for _b, x in ps]):.3f}" if ps else "-",
            " / ".join(f"{np.mean([x['priced'][part] for _b, x in ps]):.3f}" for part in GAP_PARTS)
            if ps
            else "-",
            f"{np.mean([x['lags'] for _b, x in ps]):.3f}" if ps else "-",
        ]
        out.append(line)
    return out


def with_latency(p: Platform, latency: float, seed: int) -> Platform:
    """``p`` with each link's latency drawn uniformly in ``[latency / 2, 3 latency / 2]``."""
    rng = np.random.default_rng(seed)
    links = tuple(replace(lk, latency=latency * float(rng.uniform(0.5, 1.5))) for lk in p.links)
    return Platform(p.nodes, links, model=p.model, name=f"{p.name} latency {latency:g} s")


def latency_instance(n: int, seed: int, model: str, latency: float, sizes) -> list[dict]:
    """One platform with per-link latency: per message size, ``auto``'s choice, its time
    and planning CPU, each family's best time at its best slice, and the bound."""
    p = with_latency(random_graph_platform(n, DENSITY, seed=seed, model=model), latency, seed)
    rows = []
    for size in sizes:
        t0 = time.process_time()
        s = plan(p, "0", method="auto", nbytes=size)
        cpu = time.process_time() - t0
        cands = s.params["candidates"]
        single, single_time = _fastest(p, size, SINGLE)
        rows.append(
            {
                "n": n,
                "seed": seed,
                "model": model,
                "latency": latency,
                "nbytes": size,
                "bound": lower_bound(p, "0", size).seconds,
                "chosen": s.params["chosen"],
                "segment_size": s.params.get("segment_size"),
                "auto_time": cands[s.params["chosen"]],
                "single": single,
                "single_time": single_time,
                "multi_tree_time": _fastest(p, size, ("multi_tree",))[1],
                "auto_cpu": cpu,
            }
        )
    return rows


def auto_instance(n: int, seed: int, model: str, latency: float | None = None) -> list[dict]:
    """One platform's ``auto`` of :data:`AUTO_SIZE` bytes: its choice, time and CPU (with
    ``latency``: on :func:`with_latency`'s platform)."""
    p = random_graph_platform(n, DENSITY, seed=seed, model=model)
    if latency is not None:
        p = with_latency(p, latency, seed)
    t0 = time.process_time()
    s = plan(p, "0", method="auto", nbytes=AUTO_SIZE)
    cpu = time.process_time() - t0
    return [
        {
            "n": n,
            "seed": seed,
            "model": model,
            "latency": latency,
            "nbytes": AUTO_SIZE,
            "bound": lower_bound(p, "0", AUTO_SIZE).seconds,
            "chosen": s.params["chosen"],
            "segment_size": s.params.get("segment_size"),
            "auto_time": s.params["candidates"][s.params["chosen"]],
            "auto_cpu": cpu,
        }
    ]


def auto_table(rows: list[dict]) -> list[list[str]]:
    """Per platform: auto's choice, bound / time and planning CPU."""
    return [
        [
            str(r["n"]),
            str(r["seed"]),
            f"{r['chosen']} {format_size(r['segment_size'])}" if r["segment_size"] else r["chosen"],
            f"{r['auto_time']:.6g}",
            f"{100 * r['bound'] / r['auto_time']:.1f}%",
            f"{r['auto_cpu']:.2f}",
        ]
        for r in rows
    ]


def _fastest(p: Platform, size: int, names: tuple[str, ...]) -> tuple[str | None, float | None]:
    """The fastest of ``names`` at its best slice size of ``auto``'s (pruned among them
    alone, so exactly their best): ``(planner, seconds)``, ``(None, None)`` in one piece."""
    if len(slice_choices(size)) == 1:
        return None, None
    try:
        found = compare(
            p, root="0", nbytes=size, algos=names, slices=slice_choices(size)[1:], prune=True
        )
    except PlannerError:  # none of them plans it
        return None, None
    return found.best.algorithm, found.best.predicted_time


def latency_table(rows: list[dict]) -> list[list[str]]:
    """Per (n, size): auto's choices, the worst / mean bound / time of auto, the best single
    pipelined tree and multi_tree (each at its best slice), auto's worst planning CPU."""

    def ratio(rs: list[dict], key: str) -> str:
        x = [r["bound"] / r[key] for r in rs if r[key]]
        return f"{100 * min(x):.1f}% / {100 * np.mean(x):.1f}%" if x else "-"

    out = []
    for n, size in sorted({(r["n"], r["nbytes"]) for r in rows}):
        rs = [r for r in rows if (r["n"], r["nbytes"]) == (n, size)]
        chosen = sorted(
            {
                r["chosen"] + (f" {format_size(r['segment_size'])}" if r["segment_size"] else "")
                for r in rs
            }
        )
        out.append(
            [
                str(n),
                format_size(size),
                f"{np.mean([r['bound'] for r in rs]):.4g}",
                ", ".join(chosen),
                ratio(rs, "auto_time"),
                ratio(rs, "single_time"),
                ratio(rs, "multi_tree_time"),
                f"{max(r['auto_cpu'] for r in rs):.2f}",
            ]
        )
    return out


def table(rows: list[dict]) -> list[list[str]]:
    """Per (n, slices): the worst and mean bound / time of each, multi_tree <= single."""
    out = []
    keys = sorted({(r["n"], r["slices"]) for r in rows})
    for n, k in keys:
        rs = [r for r in rows if (r["n"], r["slices"]) == (n, k)]
        single = [r["bound"] / r["single_time"] for r in rs if r["single_time"]]
        multi = [r["bound"] / r["multi_tree_time"] for r in rs if r["multi_tree_time"]]
        whole = [r["bound_whole"] / r["multi_tree_time"] for r in rs if r["multi_tree_time"]]
        ok = sum(
            r["single_time"] is None
            or (
                r["multi_tree_time"] is not None
                and r["multi_tree_time"] <= r["single_time"] * (1 + 1e-9)
            )
            for r in rs
        )
        trees = [r["multi_tree_trees"] for r in rs if r["multi_tree_trees"]]
        out.append(
            [
                str(n),
                str(k),
                f"{np.mean([r['bound'] for r in rs]):.4g}",
                f"{100 * min(single):.1f}% / {100 * np.mean(single):.1f}%"
                if single
                else "over the cap",
                f"{100 * min(multi):.1f}% / {100 * np.mean(multi):.1f}%"
                if multi
                else "over the cap",
                f"{100 * min(whole):.2f}% / {100 * np.mean(whole):.2f}%" if whole else "-",
                f"{min(trees)}-{max(trees)}" if trees else "-",
                f"{ok}/{len(rs)}",
                f"{max(r['multi_tree_cpu'] for r in rs):.2f}",
            ]
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10, 30; one platform each")
    ap.add_argument("--sizes", type=str, default=None, help="nodes, e.g. 10,30,50")
    ap.add_argument("--slices", type=str, default="16,64,256,1024", help="slices per message")
    ap.add_argument("--full", action="store_true", help="3 platforms per size")
    ap.add_argument("--seeds", type=int, default=None, help="platforms per size (1; full 3)")
    ap.add_argument(
        "--model", default="one_port", choices=["one_port", "one_port_uni", "multi_port"]
    )
    ap.add_argument(
        "--latency",
        type=parse_time,
        default=None,
        help="per-link latency sweep (e.g. 50us): sizes 1 KiB-1 GiB, the slice auto's",
    )
    ap.add_argument(
        "--auto",
        action="store_true",
        help="auto's planning CPU for a 1 GiB broadcast (--latency too)",
    )
    ap.add_argument(
        "--gap",
        action="store_true",
        help="one-port: where the whole message's list schedule idles (start, middle, end)",
    )
    ap.add_argument("--out", type=Path, default=Path("results") / "bench_sizes.json")
    args = ap.parse_args(argv)
    if args.gap and (args.model != "one_port" or args.auto or args.latency is not None):
        ap.error("--gap: one_port only, without --auto or --latency")
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else None
    sizes = sizes or ([10, 30] if args.quick else [10, 30, 50])
    seeds = args.seeds or (3 if args.full else 1)
    slices = [int(x) for x in args.slices.split(",")]
    rows: list[dict] = []
    latency = args.latency
    for n in sizes:
        for seed in range(seeds):
            if args.gap:
                rows += gap_instance(n, seed, slices)
            elif args.auto:
                rows += auto_instance(n, seed, args.model, latency)
            elif latency is None:
                rows += instance(n, seed, args.model, slices)
            else:
                rows += latency_instance(n, seed, args.model, latency, LATENCY_SIZES)
    if args.gap:
        print(
            f"multi_tree's whole-message list schedule, one_port, density {DENSITY}, slices "
            f"of {SLICE} B: bound / span (worst / mean over {seeds} platform(s)), the middle's "
            "rate, seconds added by start-up and drain, critical ports' mean idle seconds (and "
            "how many of them some transfer of the port was waiting, its slice already at the "
            "sender, or starved); "
            "the periodic timetable kept (slices per period), its middle's rate and start-up "
            "and drain (its period's dense timetable), the kept run's priced ports' idle "
            "seconds weighted by the packing's prices, and the start-up its lags cost them"
        )
        head = ["n", "slices", "bound s", "list", "justified", "middle rate", "start+drain s"]
        head += ["ports", "idle start / middle / end s", "waiting / starved s", "period"]
        head += ["periodic", "its middle"]
        head += ["its start+drain s", "priced idle start / middle / end s", "lags s"]
        print(format_table(head, gap_table(rows)))
    elif args.auto:
        print(
            f"auto, {format_size(AUTO_SIZE)} broadcast, model {args.model}, density {DENSITY}"
            + (f", link latencies {latency:g} s x U(0.5, 1.5)" if latency is not None else "")
            + ": its choice, predicted time, bound / time, planning CPU (process time)"
        )
        head = ["n", "seed", "auto's choice", "time s", "bound / time", "cpu s"]
        print(format_table(head, auto_table(rows)))
    elif latency is None:
        print(
            f"bound / predicted time (worst / mean over {seeds} platform(s)), model "
            f"{args.model}, density {DENSITY}, slices of {SLICE} B; mt / whole: multi_tree "
            "against the bound of whole slices"
        )
        head = ["n", "slices", "bound s", "single", "multi_tree", "mt / whole", "trees"]
        head += ["mt<=single", "mt cpu s"]
        print(format_table(head, table(rows)))
    else:
        print(
            f"bound / predicted time (worst / mean over {seeds} platform(s)), model "
            f"{args.model}, density {DENSITY}, link latencies {latency:g} s x U(0.5, 1.5), "
            "slices chosen by auto"
        )
        head = ["n", "size", "bound s", "auto's choice", "auto", "single", "multi_tree", "cpu s"]
        print(format_table(head, latency_table(rows)))
    doc = {
        "benchmark": "bench_sizes",
        "hetcoll": __version__,
        "python": sys.version.split()[0],
        "machine": host.machine(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "rows": rows,
    }
    make_output_dir(args.out.parent)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
