"""Planning commands: planners, plan, simulate, export, compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..errors import HetcollError, PlannerError, ScheduleError
from ..report import dump_json, format_table, json_document
from ..units import format_bandwidth, format_size, format_time
from ._base import JSON_OPT, MODEL, OUTPUT, SIZE, _ids, _platform, cli

# -- planners ------------------------------------------------------------------------------------


@cli.command("planners")
@JSON_OPT
def planners_cmd(as_json: bool) -> None:
    """List the registered planners with their papers and complexity."""
    from ..planners import REGISTRY

    infos = [REGISTRY[k] for k in sorted(REGISTRY)]
    if as_json:
        dump_json(json_document("planners", {"planners": [i.to_dict() for i in infos]}))
        return
    rows = [[i.name, ",".join(i.collectives), i.complexity, i.paper] for i in infos]
    click.echo(format_table(["planner", "operations", "complexity", "reference"], rows))


# -- plan ----------------------------------------------------------------------------------------


def _plan_options(func):
    for deco in reversed(
        [
            click.argument("platform"),
            click.option(
                "--op",
                "op",
                default="bcast",
                show_default=True,
                help="bcast, multicast, multi-multicast (trees) or allreduce, allgather, barrier "
                "(hypercubes).",
            ),
            click.option("--root", help="Source node id."),
            click.option("--members", help="Comma-separated ids of a multicast's members."),
            click.option(
                "--group",
                "groups",
                multiple=True,
                help="ROOT:ID,ID,... one multicast of a multi-multicast (repeat).",
            ),
            click.option(
                "--size",
                type=SIZE,
                default="0",
                show_default=True,
                help="Message size (bytes, or 4KiB, 1MB, ...).",
            ),
            click.option(
                "--segment-size",
                type=SIZE,
                default=None,
                help="Pipeline the message in segments of this size.",
            ),
            click.option(
                "--model",
                "model",
                type=MODEL,
                default=None,
                help="Cost model: a name or a JSON object (default: the platform's).",
            ),
            click.option(
                "--reduce-op",
                default=None,
                help="Operator of an allreduce: sum (default), prod, max, min, ... or user.",
            ),
            JSON_OPT,
        ]
    ):
        func = deco(func)
    return func


def _request(platform, op: str, root: str | None, members: str | None, groups: tuple[str, ...]):
    """Check the --op/--root/--members/--group combination; return (root, members, groups)."""
    op = op.replace("-", "_")
    if op == "multi_multicast":
        if not groups:
            raise PlannerError("--op multi-multicast needs one --group ROOT:ID,ID,... per source")
        parsed = []
        for g in groups:
            head, sep, tail = g.partition(":")
            if not sep or not head.strip():
                raise PlannerError(f"--group: expected ROOT:ID,ID,..., got {g!r}")
            parsed.append((head.strip(), _ids(tail, f"--group {head.strip()} members")))
        return None, None, parsed
    if op not in ("bcast", "multicast"):
        raise PlannerError(
            f"unknown operation {op!r} for a tree planner; choose from: bcast, multicast, "
            "multi-multicast"
        )
    if groups:
        raise PlannerError("--group is only for --op multi-multicast")
    if root is None:
        raise PlannerError(f"--op {op} needs --root ID")
    member_list = _ids(members, "--members")
    if op == "multicast" and member_list is None:
        raise PlannerError("--op multicast needs --members ID,ID,...")
    if op == "bcast" and member_list is not None:
        raise PlannerError("--op bcast sends to every node; use --op multicast with --members")
    return root, member_list, None


_CUBE_OPS = ("allreduce", "allgather", "barrier")


def _cube_request(op, root, members, groups, segment_size, reduce_op) -> list[str] | None:
    """Check the options of a hypercube operation; return its members (None = every node)."""
    if root is not None:
        raise PlannerError(f"--root: an {op} has no root")
    if groups:
        raise PlannerError("--group is only for --op multi-multicast")
    if segment_size is not None:
        raise PlannerError(f"--segment-size: an {op} over a hypercube is not pipelined")
    if reduce_op is not None and op != "allreduce":
        raise PlannerError(f"--reduce-op: only an allreduce takes an operator, not --op {op}")
    return _ids(members, "--members")


def _make_cube_schedule(platform, op, algo, members, size, model, reduce_op):
    from ..planners import plan_hypercube

    return plan_hypercube(
        platform, op, members, method=algo, model=model, nbytes=size, op=reduce_op
    )


def _make_schedule(platform, algo, root, members, groups, size, segment_size, model):
    from ..planners import plan, plan_multiple

    if groups is not None:
        return plan_multiple(
            platform, groups, method=algo, model=model, nbytes=size, segment_size=segment_size
        )
    return plan(
        platform, root, members, method=algo, model=model, nbytes=size, segment_size=segment_size
    )


def _prediction_doc(schedule, pred) -> dict[str, Any]:
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


def _print_prediction(schedule, pred, platform_name: str) -> None:
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


@cli.command("plan")
@_plan_options
@click.option(
    "--algo",
    default=None,
    help="Planner name (hetcoll planners); default fnf for trees, eff_cube for hypercubes.",
)
@click.option("-o", "--output", type=OUTPUT, help="Write the schedule here.")
def plan_cmd(
    platform,
    op,
    root,
    members,
    groups,
    size,
    segment_size,
    model,
    reduce_op,
    as_json,
    algo,
    output,
) -> None:
    """Plan a collective on PLATFORM and predict its time."""
    from ..files import write_atomic
    from ..simulate import simulate

    p = _platform(platform)
    if op in _CUBE_OPS:
        member_list = _cube_request(op, root, members, groups, segment_size, reduce_op)
        schedule = _make_cube_schedule(
            p, op, algo or "eff_cube", member_list, size, model, reduce_op
        )
    else:
        if reduce_op is not None:
            raise PlannerError(f"--reduce-op: only for --op allreduce, not {op}")
        root, member_list, group_list = _request(p, op, root, members, groups)
        schedule = _make_schedule(
            p, algo or "fnf", root, member_list, group_list, size, segment_size, model
        )
    pred = simulate(p, schedule, model)
    if output is not None:
        write_atomic(output, schedule.to_json() + "\n")
    if as_json:
        dump_json(json_document("plan", _prediction_doc(schedule, pred)))
    else:
        _print_prediction(schedule, pred, platform)


# -- simulate ------------------------------------------------------------------------------------


def _read_schedule(path: str):
    from ..files import parse_document, read_text
    from ..schedule import Schedule

    try:
        data = parse_document(read_text(path, ScheduleError), "json", ScheduleError)
        if isinstance(data, dict) and "schedule" in data and "format" not in data:
            data = data["schedule"]  # the output of `hetcoll plan --json`
        return Schedule.from_dict(data)
    except ScheduleError as exc:
        raise ScheduleError(f"{path}: {exc}") from None


@cli.command("simulate")
@click.argument("platform")
@click.argument("schedule_file", metavar="SCHEDULE.json")
@click.option(
    "--model",
    type=MODEL,
    default=None,
    help="Cost model: a name or a JSON object (default: the platform's).",
)
@JSON_OPT
def simulate_cmd(platform, schedule_file, model, as_json) -> None:
    """Predict the time of a saved schedule on PLATFORM."""
    from ..simulate import simulate

    p = _platform(platform)
    schedule = _read_schedule(schedule_file)
    schedule.validate(p)
    pred = simulate(p, schedule, model)
    if as_json:
        dump_json(json_document("simulation", _prediction_doc(schedule, pred)))
    else:
        _print_prediction(schedule, pred, platform)


# -- export --------------------------------------------------------------------------------------

_EXPORT_SUFFIX = {".xml": "simgrid", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}


@cli.command("export")
@click.argument("platform")
@click.option(
    "-o",
    "--output",
    required=True,
    type=OUTPUT,
    help="File to write (the format follows its suffix unless --format is given).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["simgrid", "networkx", "json", "yaml"]),
    default=None,
    help="simgrid (platform XML 4.1), networkx (node-link JSON), "
    "json or yaml (hetcoll's own format).",
)
@click.option(
    "--model",
    type=MODEL,
    default=None,
    help="Cost model the export follows (SimGrid) or records as the default (others); "
    "default: the platform's.",
)
def export_cmd(platform, output, fmt, model) -> None:
    """Write PLATFORM for other tools: SimGrid XML, networkx JSON, or hetcoll JSON/YAML."""
    from ..export import SIMGRID_CONFIG, to_node_link, to_simgrid
    from ..files import write_atomic
    from ..platform import platform_text

    p = _platform(platform)
    if model is not None:
        p = p.with_model(model)
    fmt = fmt or _EXPORT_SUFFIX.get(Path(output).suffix.lower())
    if fmt is None:
        raise HetcollError(
            f"{output}: cannot tell the format from the suffix; give --format "
            "simgrid, networkx, json or yaml"
        )
    if fmt == "simgrid":
        write_atomic(output, to_simgrid(p))
        click.echo(
            f"wrote {output}; its <config> sets SimGrid's {' '.join(SIMGRID_CONFIG)}; a replay "
            "applies the hosts' hetcoll_exec_* properties (docs/simgrid.md)",
            err=True,
        )
    elif fmt == "networkx":
        write_atomic(output, json.dumps(to_node_link(p), indent=1) + "\n")
    else:
        write_atomic(output, platform_text(p, fmt))


# -- compare -------------------------------------------------------------------------------------


def compare_planners(p, root, member_list, groups, size, segment_size, model, algos=None):
    """Simulate every applicable planner; rows sorted by predicted time, ratio to the best."""
    from ..models import get_model
    from ..planners import applicable
    from ..simulate import simulate

    model_name = (get_model(model) if model else p.model).name
    n = len(p) if member_list is None and groups is None else len(member_list or []) + 1
    collective = "multi_multicast" if groups else "multicast" if member_list else "bcast"
    names = algos or applicable(collective, model_name, n)
    results, skipped = [], {}
    for name in names:
        try:
            schedule = _make_schedule(p, name, root, member_list, groups, size, segment_size, model)
        except PlannerError as exc:
            skipped[name] = str(exc)
            continue
        pred = simulate(p, schedule, model)
        results.append(
            {"algorithm": name, "predicted_time": pred.makespan, "throughput": pred.throughput}
        )
    if not results:
        raise PlannerError("no planner applies to this request: " + "; ".join(skipped.values()))
    best = min(r["predicted_time"] for r in results)
    for r in results:
        r["ratio"] = r["predicted_time"] / best if best > 0 else 1.0
    results.sort(key=lambda r: (r["predicted_time"], r["algorithm"]))
    return results, skipped


def compare_hypercube(p, op, member_list, size, model, reduce_op=None, algos=None):
    """Simulate every hypercube planner for ``op``; rows sorted by predicted time, with the
    ratio to the best and the gain over ``blind`` in % (Figueira & Reddi's measure)."""
    from ..planners import hypercube_planners
    from ..simulate import simulate

    names = algos or hypercube_planners()
    results, skipped = [], {}
    for name in names:
        try:
            schedule = _make_cube_schedule(p, op, name, member_list, size, model, reduce_op)
        except PlannerError as exc:
            skipped[name] = str(exc)
            continue
        pred = simulate(p, schedule, model)
        results.append(
            {
                "algorithm": name,
                "predicted_time": pred.makespan,
                "throughput": pred.throughput,
                "embedding": list(schedule.hypercube.positions),
            }
        )
    if not results:
        raise PlannerError("no planner applies to this request: " + "; ".join(skipped.values()))
    best = min(r["predicted_time"] for r in results)
    blind = next((r["predicted_time"] for r in results if r["algorithm"] == "blind"), None)
    for r in results:
        r["ratio"] = r["predicted_time"] / best if best > 0 else 1.0
        if blind is not None:
            r["gain_vs_blind"] = 100 * (blind - r["predicted_time"]) / blind if blind else 0.0
    results.sort(key=lambda r: (r["predicted_time"], r["algorithm"]))
    return results, skipped


@cli.command("compare")
@_plan_options
@click.option("--algos", default=None, help="Comma-separated planners (default: all applicable).")
def compare_cmd(
    platform, op, root, members, groups, size, segment_size, model, reduce_op, as_json, algos
) -> None:
    """Plan with every applicable planner and compare predicted times."""
    from ..planners import get_planner

    p = _platform(platform)
    names = _ids(algos, "--algos")
    for name in names or ():
        get_planner(name)
    if op in _CUBE_OPS:
        member_list = _cube_request(op, root, members, groups, segment_size, reduce_op)
        results, skipped = compare_hypercube(p, op, member_list, size, model, reduce_op, names)
        _print_comparison(platform, op, None, size, results, skipped, as_json)
        return
    if reduce_op is not None:
        raise PlannerError(f"--reduce-op: only for --op allreduce, not {op}")
    root, member_list, group_list = _request(p, op, root, members, groups)
    results, skipped = compare_planners(
        p, root, member_list, group_list, size, segment_size, model, names
    )
    _print_comparison(platform, op, root, size, results, skipped, as_json)


def _print_comparison(platform, op, root, size, results, skipped, as_json) -> None:
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
    if op in _CUBE_OPS:
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
