"""How ``plan``, ``simulate`` and ``compare`` show their results: JSON documents and text."""

from __future__ import annotations

from typing import Any

import click

from ..report import dump_json, format_table, json_document
from ..units import format_bandwidth, format_size, format_time
from ._requests import CUBE_OPS


def prediction_doc(schedule, pred) -> dict[str, Any]:
    doc = pred.to_dict()
    if schedule.hypercube is not None:
        cube = schedule.hypercube
        doc["embedding"] = list(cube.positions)
        doc["folds"] = [list(f) for f in cube.folds]
        doc["dims"] = cube.dims
        doc["combine"] = cube.combine
        doc["members"] = list(schedule.participants)
        doc["schedule"] = schedule.to_dict()
        return doc
    doc["root"] = schedule.root
    doc["roots"] = [schedule.roots[b] for b in schedule.buffers]
    doc["members"] = list(schedule.participants)
    doc["schedule"] = schedule.to_dict()
    return doc


def print_prediction(schedule, pred, platform_name: str) -> None:
    if schedule.hypercube is not None:
        cube = schedule.hypercube
        click.echo(
            f"{pred.algorithm}: {schedule.collective} ({cube.combine}) of "
            f"{format_size(schedule.nbytes)} per member over a {cube.dims}-cube on "
            f"{platform_name}"
        )
        click.echo(f"predicted time: {format_time(pred.makespan)}")
        click.echo("embedding (node at each position): " + " ".join(cube.positions))
        if cube.folds:
            click.echo("folded: " + ", ".join(f"{e} -> {p}" for e, p in cube.folds))
        return
    click.echo(
        f"{pred.algorithm}: {schedule.collective} of {format_size(schedule.nbytes)} "
        f"from {', '.join(schedule.roots[b] for b in schedule.buffers)} on {platform_name}"
    )
    click.echo(
        f"predicted time: {format_time(pred.makespan)}"
        + (
            f"   throughput: {format_bandwidth(pred.throughput)}"
            if schedule.flows[0].segment_size
            else ""
        )
    )
    for f in schedule.flows:
        for parent, kids in f.tree.children.items():
            click.echo(f"  {parent} -> {', '.join(kids)}")
    order = sorted(pred.arrival, key=lambda k: (pred.arrival[k], k))
    click.echo("arrivals: " + ", ".join(f"{k}@{format_time(pred.arrival[k])}" for k in order))


def print_comparison(platform, op, root, size, results, skipped, as_json) -> None:
    if as_json:
        dump_json(
            json_document(
                "comparison",
                {
                    "platform": platform,
                    "operation": op,
                    "root": root,
                    "nbytes": size,
                    "results": results,
                    "best": results[0]["algorithm"],
                    "skipped": skipped,
                },
            )
        )
        return
    rows = [
        [r["algorithm"], format_time(r["predicted_time"]), f"{r['ratio']:.3f}"] for r in results
    ]
    headers = ["planner", "predicted", "ratio to best"]
    if op in CUBE_OPS:
        title = f"{op} of {format_size(size)} per member on {platform}"
        if all("gain_vs_blind" in r for r in results):
            headers.append("gain vs blind")
            for row, r in zip(rows, results, strict=True):
                row.append(f"{r['gain_vs_blind']:.1f} %")
    else:
        title = f"{op} of {format_size(size)} from {root or 'several roots'} on {platform}"
    click.echo(format_table(headers, rows, title=title))
    for name, why in skipped.items():
        click.echo(f"(skipped {name}: {why})", err=True)
