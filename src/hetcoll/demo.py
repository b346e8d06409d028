"""``hetcoll demo``: the whole flow on one machine, predicted against measured.

Starts ``--ranks`` local MPI ranks with this environment's ``mpiexec`` (one job,
:func:`hetcoll.jobs.launch`), which emulate the built-in ``testbed16`` platform (Banikazemi et
al. 1998, Sec. 7.1.1: 16 nodes, 8 fast, slow/fast 2.15): they probe it, then measure a
broadcast planned by every applicable planner (:func:`hetcoll.compare.compare`'s candidates;
Sec. 7.1.2 method) and MPI's own algorithm for the call (MPICH's, :mod:`hetcoll.mpich`) run
through the same engine under the same emulation: the baseline, and the speed-ups are over
it.  The un-emulated ``MPI_Bcast`` is measured too but only reported apart (it pays this
machine's costs, not the platform's).  This process prints predicted against measured and
draws the trees and the comparison from the results (matplotlib, here only: the ranks
never import it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from .errors import HetcollError
from .files import write_atomic
from .platform import load_platform
from .report import dump_json, format_table, json_document
from .units import format_size, format_time

__all__ = ["run_demo", "trees_figure", "comparison_figure"]


def run_demo(
    *,
    ranks: int,
    platform: str,
    nbytes: int,
    repeat: int,
    time_scale: float,
    out_dir: Path,
    plot: bool,
    as_json: bool,
) -> dict[str, Any]:
    from .compare import compare, same_trees
    from .jobs import Run, entries, launch
    from .platform import Platform

    t0 = time.monotonic()
    p = load_platform(platform)
    if len(p) != ranks:
        raise HetcollError(
            f"platform {platform!r} has {len(p)} nodes; the demo runs one rank per node "
            f"(--ranks {len(p)})"
        )
    found = compare(p, "bcast", root=p.ids[0], nbytes=nbytes)
    names = sorted(c.algorithm for c in found.ranked)
    groups = found.same_schedules()  # planners that build the same tree: measure it once
    head = {name: first for first, group in groups.items() for name in group}
    main = head[found.best.algorithm]  # what auto would pick, next to every other tree
    run = Run(
        p.to_dict(),
        "bcast",
        main,
        baselines=tuple(n for n in groups if n != main),
        root=p.ids[0],
        sizes=(nbytes,),
        repeat=repeat,
        emulate=True,
        time_scale=time_scale,
        timeout=120,
        probe={"sizes": [0, 4096, 16384], "repeat": 4, "rounds": 3},
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    _say(
        f"starting {ranks} ranks (emulating {p.name or platform}, costs x{time_scale:g})...",
        as_json,
    )
    result = launch([run], ranks, timeout=600)
    (measured,) = result["runs"]
    rows = {e["algorithm"]: e for e in entries(measured["documents"][0])}
    for name in names:
        if head[name] != name:
            rows[name] = {**rows[head[name]], "algorithm": name, "same_tree_as": head[name]}
    for c in found.ranked:  # the trees' predicted arrivals, for the figure
        rows[c.algorithm]["arrival"] = {k: v * time_scale for k, v in c.prediction.arrival.items()}
    probe = measured["probe"]
    probe["same_tree_as_truth"] = same_trees(
        p,
        Platform.from_dict(probe["platform"]),
        names,
        root=p.ids[0],
        nbytes=nbytes,
        scale=time_scale,
    )
    data = {
        "platform": platform,
        "platform_name": p.name,
        "ranks": ranks,
        "nbytes": nbytes,
        "repeat": repeat,
        "time_scale": time_scale,
        "nodes": list(p.ids),
        "fast": [i for i, t in enumerate(p.t_ini) if t == p.t_ini.min()],
        "chosen": found.best.algorithm,
        "probe": _probe_summary(probe),
        # MPI's own, emulated (MPICH's algorithm for the call run through the same engine)
        # is the baseline; the un-emulated MPI_Bcast is kept apart, for information only
        "results": [rows[n] for n in [*names, "mpi"]],
        "baseline": "mpi",
        "native_unemulated": {
            k: rows["native"][k] for k in ("measured_time", "clock_time", "ack_time")
        },
        "mpi_seconds": result["seconds"],
        "versions": result["versions"],
    }
    written = [out_dir / "demo.json"]
    if plot:
        written += [trees_figure(data, out_dir), comparison_figure(data, out_dir)]
    data["seconds"] = time.monotonic() - t0
    write_atomic(written[0], json.dumps(json_document("demo", data), indent=1) + "\n")
    if as_json:
        dump_json(json_document("demo", {**data, "files": [str(w) for w in written]}))
    else:
        click.echo(_table(data))
        native = data["native_unemulated"]["measured_time"]
        click.echo(
            f"(MPI_Bcast without emulation: {format_time(native)}; this machine's own cost, "
            "not comparable with the emulated times above)"
        )
        pr = data["probe"]
        reliable = "" if pr["reliable"] else " (UNRELIABLE: the host was too busy)"
        click.echo(
            f"probe: {pr['seconds']:.1f} s, largest t_ini error {pr['t_ini_max_rel_error']:.1%}"
            f"{reliable}; same tree from the probed platform as from the true one: "
            + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in pr["same_tree"].items())
        )
        click.echo(f"total {data['seconds']:.1f} s")
        for w in written:
            click.echo(f"wrote {w}", err=True)
    return data


def _say(text: str, quiet: bool) -> None:
    if not quiet:
        click.echo(text, err=True)


def _probe_summary(probe: dict[str, Any]) -> dict[str, Any]:
    return {
        "seconds": probe["seconds"],
        "t_ini_max_rel_error": probe["t_ini_max_rel_error"],
        "same_tree": probe["same_tree_as_truth"],
        "forecast_winners": probe["forecast_winners"],
        "reliable": probe["reliability"]["reliable"],
        "reliability": probe["reliability"],
        "platform": probe["platform"],
    }


def _table(data: dict[str, Any]) -> str:
    rows = []
    for r in data["results"]:
        pred = r["predicted_time"]
        name = r["algorithm"]
        if name == "mpi":
            name = f"MPI ({r.get('mpich', 'MPICH')})"
        if r.get("same_tree_as"):  # measured once, under the first name of its tree
            rows.append([name, format_time(pred), f"= {r['same_tree_as']}", "", ""])
            continue
        s = r.get("speedup_vs_mpi")
        rows.append(
            [
                name,
                format_time(pred) if pred is not None else "-",
                format_time(r["measured_time"]),
                f"{r['measured_time'] / pred:.3f}" if pred else "-",
                f"{s:.2f}x" if s is not None else "-",
            ]
        )
    title = (
        f"broadcast of {format_size(data['nbytes'])} on {data['platform']} "
        f"({data['ranks']} ranks, emulated, costs x{data['time_scale']:g}, "
        f"best of {data['repeat']}; baseline: MPI's own algorithm, emulated)"
    )
    headers = ["planner", "predicted", "measured", "measured/predicted", "speed-up vs MPI"]
    return format_table(headers, rows, title)


def trees_figure(data: dict[str, Any], out_dir: Path) -> Path:
    """Each planner's tree: a node at (its predicted arrival, its rank), edges to children."""
    from .plots import color, figure, save

    ids = data["nodes"]
    index = {k: i for i, k in enumerate(ids)}
    trees = [r for r in data["results"] if r.get("tree") and not r.get("same_tree_as")]
    also = {}
    for r in data["results"]:
        if r.get("same_tree_as"):
            also.setdefault(r["same_tree_as"], []).append(r["algorithm"])
    ncols = min(3, len(trees))
    nrows = -(-len(trees) // ncols)
    fig, axes = figure(ncols, nrows, size=(4.2 * ncols, 3.4 * nrows))
    fast = set(data["fast"])
    for ax, r in zip(axes.flat, trees, strict=False):
        t = {k: v * 1e3 for k, v in r["arrival"].items()}
        for parent, kids in r["tree"].items():
            for c in kids:
                ax.plot(
                    [t[parent], t[c]],
                    [index[parent], index[c]],
                    color=color(r["algorithm"]),
                    lw=1.2,
                    alpha=0.7,
                )
        xs = [t[n] for n in ids]
        ys = list(range(len(ids)))
        ax.scatter(xs, ys, c=["#d62728" if i in fast else "#4c4c4c" for i in ys], s=22, zorder=3)
        name = " = ".join([r["algorithm"], *also.get(r["algorithm"], [])])
        ax.set_title(f"{name}: {format_time(r['predicted_time'])}", fontsize=9)
        ax.set_xlabel("predicted arrival (ms)")
        ax.set_ylabel("rank (red: fast)")
        ax.invert_yaxis()
    for ax in list(axes.flat)[len(trees) :]:
        ax.set_visible(False)
    return save(fig, out_dir / "demo-trees.png")


def comparison_figure(data: dict[str, Any], out_dir: Path) -> Path:
    """Predicted against measured broadcast latency per planner (bars, ms)."""
    import numpy as np

    from .plots import color, figure, save

    rows = data["results"]
    names = [r["algorithm"] for r in rows]
    pred = [(r["predicted_time"] or np.nan) * 1e3 for r in rows]
    meas = [r["measured_time"] * 1e3 for r in rows]
    fig, axes = figure(1, 1, size=(1.1 * len(rows) + 3, 3.6))
    ax = axes[0, 0]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, pred, 0.4, color=[color(n) for n in names], alpha=0.45, label="predicted")
    ax.bar(x + 0.2, meas, 0.4, color=[color(n) for n in names], label="measured")
    ax.set_xticks(x, names)
    ax.set_ylabel("broadcast latency (ms)")
    ax.set_title(
        f"{data['platform']}: predicted (light) vs measured, {data['ranks']} ranks, emulated "
        "(mpi: MPI's own algorithm, emulated)",
        fontsize=9,
    )
    ax.legend()
    return save(fig, out_dir / "demo-comparison.png")
