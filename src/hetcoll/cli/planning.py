"""Planning commands: planners, plan, simulate (no MPI).

The request options and their checks are in :mod:`._requests`, the output in
:mod:`._reports`; export, compare and optimum are in :mod:`.export` and :mod:`.analysis`.
"""

from __future__ import annotations

import click

from ..errors import HetcollError, ScheduleError
from ..report import dump_json, format_table, json_document
from ..units import format_time
from ._base import (
    JSON_OPT,
    MODEL,
    OPTION_OPT,
    OUTPUT,
    _platform,
    cli,
    planner_warnings,
)
from ._reports import (
    prediction_doc,
    print_contention,
    print_prediction,
    switch_doc,
)
from ._requests import parse_request, plan_options

# -- planners ------------------------------------------------------------------------------------


@cli.command("planners")
@click.argument("name", required=False)
@JSON_OPT
def planners_cmd(name: str | None, as_json: bool) -> None:
    """List the registered planners with their papers and complexity; with NAME, that
    planner's details and the options it takes (--option KEY=VALUE)."""
    from ..planners import REGISTRY, get_planner

    if name is not None:
        _planner_details(get_planner(name), as_json)
        return
    infos = [REGISTRY[k] for k in sorted(REGISTRY)]
    if as_json:
        dump_json(json_document("planners", {"planners": [i.to_dict() for i in infos]}))
        return
    rows = [[i.name, ",".join(i.collectives), i.complexity, i.paper] for i in infos]
    click.echo(format_table(["planner", "operations", "complexity", "reference"], rows))


def _planner_details(info, as_json: bool) -> None:
    defaults = info.option_defaults()
    if as_json:
        doc = info.to_dict() | {"option_defaults": defaults}
        dump_json(json_document("planner", {"planner": doc}))
        return
    lines = [
        f"{info.name}: {info.summary}",
        f"  operations: {', '.join(info.collectives)}",
        f"  models:     {', '.join(info.models) if info.models else 'any'}",
        f"  optimal:    {', '.join(info.exact_models) or 'never claimed'}",
        f"  complexity: {info.complexity}",
        f"  reference:  {info.paper}",
        "  options:    " + ("none" if not defaults else "(--option KEY=VALUE)"),
    ]
    lines += [
        f"    {k}={v!r}" if v is not None else f"    {k} (default: none)"
        for k, v in defaults.items()
    ]
    click.echo("\n".join(lines))


# -- plan ----------------------------------------------------------------------------------------


@cli.command("plan")
@plan_options
@click.option(
    "--algo",
    default=None,
    help="Planner name (hetcoll planners); default fnf for trees, eff_cube for hypercubes.",
)
@OPTION_OPT
@click.option("-o", "--output", type=OUTPUT, help="Write the schedule here.")
@click.option(
    "--check-contention",
    is_flag=True,
    help="Switch platforms: list the pairs of transfers that share a directed link in time, "
    "and who delayed whom.",
)
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
    planner_options,
    output,
    check_contention,
) -> None:
    """Plan a collective on PLATFORM and predict its time."""
    from ..compare import plan_request
    from ..files import write_atomic
    from ..simulator import simulate

    p = _platform(platform)
    if check_contention:
        _check_switch_model(p, model)
    req = parse_request(op, root, members, groups, segment_size, reduce_op)
    with planner_warnings():
        schedule = plan_request(
            p,
            req.operation,
            algo or req.default_planner,
            **req.nodes(),
            model=model,
            nbytes=size,
            segment_size=segment_size,
            op=req.reduce_op,
            options=planner_options,
        )
    pred = simulate(p, schedule, model)
    bound = _bound(p, schedule, model)
    report = None
    if check_contention:
        from ..contention import contention

        report = contention(p, schedule, model)
    if output is not None:
        write_atomic(output, schedule.to_json() + "\n")
    if as_json:
        doc = prediction_doc(schedule, pred)
        doc.update(switch_doc(p, pred, model))
        if bound is not None:
            doc["lower_bound"] = bound
            doc["gap"] = pred.makespan / bound if bound > 0 else None
        if report is not None:
            doc["contention"] = report.to_dict()
        dump_json(json_document("plan", doc))
    else:
        print_prediction(schedule, pred, platform)
        if bound:
            click.echo(
                f"lower bound: {format_time(bound)}   gap (time / bound): "
                f"{pred.makespan / bound:.3f}"
            )
        if report is not None:
            print_contention(report)


def _bound(platform, schedule, model) -> float | None:
    """A broadcast's or multicast's lower bound (:func:`hetcoll.bounds.lower_bound`, seconds:
    no schedule of its size is faster); None for the other collectives."""
    if schedule.collective not in ("bcast", "multicast") or len(schedule.buffers) != 1:
        return None
    from ..bounds import lower_bound

    root = schedule.root
    members = None
    if schedule.collective == "multicast":
        members = [m for m in schedule.members(0) if m != root]
    return lower_bound(platform, root, schedule.nbytes, members, model).seconds


def _check_switch_model(platform, model) -> None:
    """--check-contention needs a switch platform and model: say so before planning."""
    from ..models import get_model

    name = (get_model(model) if model is not None else platform.model).name
    if platform.switches is None or name != "switch":
        raise HetcollError(
            "--check-contention: needs a switch platform (with 'switches') and the 'switch' "
            f"model, got {'a platform without switches' if platform.switches is None else ''}"
            f"{' and ' if platform.switches is None and name != 'switch' else ''}"
            f"{'model ' + repr(name) if name != 'switch' else ''}"
        )


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
    from ..simulator import simulate

    p = _platform(platform)
    schedule = _read_schedule(schedule_file)
    schedule.validate(p)
    pred = simulate(p, schedule, model)
    if as_json:
        doc = prediction_doc(schedule, pred)
        doc.update(switch_doc(p, pred, model))
        dump_json(json_document("simulation", doc))
    else:
        print_prediction(schedule, pred, platform)
