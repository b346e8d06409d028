"""How the commands show their results to people (``--json`` documents are built where the
results are: ``plan``/``simulate`` here, ``run``/``probe`` in :mod:`hetcoll.jobs`)."""

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
    if schedule.per_root:  # every member's block from its own trees
        doc["roots"] = list(dict.fromkeys(f.tree.root for f in schedule.flows))
    doc["members"] = list(schedule.participants)
    doc["schedule"] = schedule.to_dict()
    return doc


def switch_doc(platform, pred, model) -> dict[str, Any]:
    """On a switch platform under the switch model: the up*/down* root and every transfer
    with its hold interval and route (nothing elsewhere)."""
    from ..models import get_model

    name = (get_model(model) if model is not None else platform.model).name
    if platform.switches is None or name != "switch":
        return {}
    from ..contention import transfer_records

    return {
        "routing_root": platform.switches.ids[platform.switches.root],
        "transfers": transfer_records(platform, pred, model),
    }


def print_contention(report) -> None:
    """The overlaps and delays of a contention report, one line each."""
    tr = report.transfers
    if report.free:
        click.echo("contention: none (no two transfers share a directed link at a time)")
    else:
        click.echo(f"contention: {len(report.overlaps)} pairs of transfers share a directed link")
    for o in report.overlaps:
        a, b = tr[o.first], tr[o.second]
        click.echo(
            f"  {o.link[0]}->{o.link[1]}: {a.sender}->{a.receiver} and {b.sender}->{b.receiver}"
            f" from {format_time(o.start)} to {format_time(o.end)}"
        )
    pt = report.predicted.transfers
    for d in report.delays:
        a, b = pt[d.transfer], pt[d.by]
        click.echo(
            f"  delayed: {a.sender}->{a.receiver} waited for {d.link[0]}->{d.link[1]} "
            f"held by {b.sender}->{b.receiver}"
        )


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
    if schedule.per_root:
        roots = len({f.tree.root for f in schedule.flows})
        click.echo(
            f"{pred.algorithm}: {schedule.collective} of {format_size(schedule.nbytes)} per "
            f"member over {len(schedule.flows)} trees of {roots} roots on {platform_name}"
        )
    elif schedule.rooted:
        ends = {"reduce": "to", "gather": "to", "scatter": "from"}.get(schedule.collective, "via")
        click.echo(
            f"{pred.algorithm}: {schedule.collective} of {format_size(schedule.nbytes)} per "
            f"member {ends} {schedule.root} on {platform_name}"
        )
    else:
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
        label = f"[{f.kind}] " if schedule.rooted else ""
        arrow = "<-" if f.up else "->"
        for parent, kids in f.tree.children.items():
            click.echo(f"  {label}{parent} {arrow} {', '.join(kids)}")
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
    if op in CUBE_OPS or op.replace("-", "_") in ("reduce", "gather", "scatter", "reduce_scatter"):
        where = f" at {root}" if root else ""
        title = f"{op} of {format_size(size)} per member{where} on {platform}"
        if all("gain_vs_blind" in r for r in results):
            headers.append("gain vs blind")
            for row, r in zip(rows, results, strict=True):
                row.append(f"{r['gain_vs_blind']:.1f} %")
    else:
        title = f"{op} of {format_size(size)} from {root or 'several roots'} on {platform}"
    click.echo(format_table(headers, rows, title=title))
    for name, why in skipped.items():
        click.echo(f"(skipped {name}: {why})", err=True)


def print_size_comparison(platform, root, rows, as_json) -> None:
    """``compare --sizes``: a column per size, a row per planner (its best time), then the
    chosen planner, the lower bound and the gap (chosen / bound)."""
    if as_json:
        dump_json(
            json_document(
                "size_comparison",
                {"platform": platform, "root": root, "sizes": [r.to_dict() for r in rows]},
            )
        )
        return
    names = sorted(
        {n for r in rows for n in r.best},
        key=lambda n: (
            min(r.time and r.best[n][0] / r.time if n in r.best else float("inf") for r in rows),
            n,
        ),
    )
    table = []
    for name in names:
        cells = []
        for r in rows:
            t = r.best.get(name)
            cells.append(
                "-" if t is None else format_time(t[0]) + ("*" if name == r.chosen else "")
            )
        table.append([name, *cells])
    table.append(["chosen", *(r.chosen for r in rows)])
    table.append(["lower bound", *(format_time(r.bound) for r in rows)])
    table.append(
        ["gap (chosen / bound)", *("-" if r.gap is None else f"{r.gap:.3f}" for r in rows)]
    )
    headers = ["planner", *(format_size(r.nbytes) for r in rows)]
    title = f"bcast from {root} on {platform}: best time per size (* the fastest)"
    click.echo(format_table(headers, table, title=title))


# -- run, probe ---------------------------------------------------------------------------------


def _how(doc) -> str:
    how = f"emulated, costs x{doc['time_scale']:g}" if doc["emulate"] else "not emulated"
    return f"{doc['ranks']} ranks, {how}, {doc['repeat']} repetitions"


def _ratio(e) -> str:
    pred = e["predicted_time"]
    return f"{e['measured_time'] / pred:.3f}" if pred else "-"


def _predicted(e) -> str:
    return format_time(e["predicted_time"]) if e["predicted_time"] is not None else "-"


def _name(e) -> str:
    """An entry's label: MPI's own says which of MPICH's algorithms it is."""
    if e["algorithm"] == "mpi":
        return f"MPI ({e.get('mpich', 'MPICH')}, emulated)"
    if e["algorithm"] == "native":
        return "MPI (native)"
    return e["algorithm"]


def _speedup(e) -> str:
    s = e.get("speedup_vs_mpi")
    return f"{s:.2f}x" if s is not None else "-"


def _compared(doc) -> tuple[list, dict | None]:
    """The entries compared (emulated ones only under emulation) and the un-emulated one
    shown apart, if any."""
    from ..jobs import entries

    both = entries(doc)
    apart = next((e for e in both if e.get("emulated") is False), None)
    return [e for e in both if e is not apart], apart


def _apart(e) -> None:
    if e is not None:
        click.echo(
            f"MPI's own without emulation (not comparable with the emulated times): "
            f"{format_time(e['measured_time'])}"
        )


def print_bcast_measurement(doc, platform_file) -> None:
    shown, apart = _compared(doc)
    rows = [
        [_name(e), format_time(e["measured_time"]), _predicted(e), _ratio(e), _speedup(e)]
        for e in shown
    ]
    title = f"bcast of {format_size(doc['nbytes'])} from {doc['root']} on {platform_file}: " + _how(
        doc
    )
    headers = ["algorithm", "measured", "predicted", "measured/predicted", "speed-up vs MPI"]
    click.echo(format_table(headers, rows, title=title))
    _apart(apart)
    click.echo(f"method: {doc['method']}")


def print_cube_measurement(doc, platform_file) -> None:
    shown, apart = _compared(doc)
    rows = [
        [
            _name(e),
            format_time(e["measured_time"]),
            format_time(e["median_time"]),
            _predicted(e),
            _ratio(e),
            _speedup(e),
        ]
        for e in shown
    ]
    op = doc["operation"]
    what = op if op == "barrier" else f"{op} of {format_size(doc['nbytes'])} per rank"
    title = f"{what} on {platform_file}: {_how(doc)}; embedding {' '.join(doc['embedding'])}"
    headers = ["algorithm", "measured (min)", "median", "predicted", "min/predicted", "vs MPI"]
    click.echo(format_table(headers, rows, title=title))
    _apart(apart)
    click.echo(f"method: {doc['method']}", err=True)


def warn_unreliable(rel) -> None:
    """One line on stderr when the host was too busy for the probe to trust its numbers."""
    if rel["reliable"]:
        return
    u, v, size = rel["unconfirmed"][0]
    click.echo(
        f"hetcoll: warning: unreliable probe: {len(rel['unconfirmed'])} round trip(s) never "
        f"agreed within {rel['spread_allowed']:.0%} over {rel['max_rounds']} rounds (first: "
        f"{u}-{v}, {format_size(size)}); the host is busy, probe again",
        err=True,
    )
