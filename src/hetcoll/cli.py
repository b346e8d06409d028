"""The ``hetcoll`` command line.

Exit codes: 0 success; 1 an operation ran and failed (e.g. data mismatch after a collective);
2 bad input, with one line ``hetcoll: error: ...`` on stderr and nothing written.
With ``--json`` one JSON document goes to stdout and everything for humans to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from .errors import HetcollError, PlannerError, ScheduleError
from .report import dump_json, format_table, json_document
from .units import format_bandwidth, format_size, format_time, parse_size

__all__ = ["main", "cli"]


class _Size(click.ParamType):
    name = "bytes"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SIZE = _Size()


class _Model(click.ParamType):
    """A model name (``postal``) or a JSON object with parameters
    (``'{"name": "postal", "gap": 2e-6}'``), validated by :func:`hetcoll.models.get_model`."""

    name = "model"

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or not value.lstrip().startswith("{"):
            return value
        try:
            spec = json.loads(value)
        except json.JSONDecodeError as exc:
            self.fail(f"not a model name or a JSON object: {exc}", param, ctx)
        if not isinstance(spec, dict):
            self.fail("a model object must be a JSON object", param, ctx)
        return spec


MODEL = _Model()
JSON_OPT = click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")


def _ids(text: str | None, what: str) -> list[str] | None:
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in ids):
        raise PlannerError(f"{what}: expected comma-separated node ids, got {text!r}")
    return ids


def _platform(path: str):
    from .platform import load_platform

    return load_platform(path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hetcoll", prog_name="hetcoll")
def cli() -> None:
    """Plan, simulate and run collectives on heterogeneous networks."""


# -- planners ------------------------------------------------------------------------------------


@cli.command("planners")
@JSON_OPT
def planners_cmd(as_json: bool) -> None:
    """List the registered planners with their papers and complexity."""
    from .planners import REGISTRY

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
    from .planners import plan_hypercube

    return plan_hypercube(
        platform, op, members, method=algo, model=model, nbytes=size, op=reduce_op
    )


def _make_schedule(platform, algo, root, members, groups, size, segment_size, model):
    from .planners import plan, plan_multiple

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
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the schedule here.")
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
    from .platform import write_atomic
    from .simulate import simulate

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
    if output:
        write_atomic(output, schedule.to_json() + "\n")
    if as_json:
        dump_json(json_document("plan", _prediction_doc(schedule, pred)))
    else:
        _print_prediction(schedule, pred, platform)


# -- simulate ------------------------------------------------------------------------------------


def _read_schedule(path: str):
    from .schedule import Schedule

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScheduleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(data, dict) and "schedule" in data and "format" not in data:
        data = data["schedule"]  # the output of `hetcoll plan --json`
    try:
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
    from .simulate import simulate

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
    type=click.Path(dir_okay=False),
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
def export_cmd(platform, output, fmt) -> None:
    """Write PLATFORM for other tools: SimGrid XML, networkx JSON, or hetcoll JSON/YAML."""
    from .export import SIMGRID_CONFIG, to_node_link, to_simgrid
    from .platform import platform_text, write_atomic

    p = _platform(platform)
    fmt = fmt or _EXPORT_SUFFIX.get(Path(output).suffix.lower())
    if fmt is None:
        raise HetcollError(
            f"{output}: cannot tell the format from the suffix; give --format "
            "simgrid, networkx, json or yaml"
        )
    if fmt == "simgrid":
        write_atomic(output, to_simgrid(p))
        click.echo(f"wrote {output}; in SimGrid use {' '.join(SIMGRID_CONFIG)}", err=True)
    elif fmt == "networkx":
        write_atomic(output, json.dumps(to_node_link(p), indent=1) + "\n")
    else:
        write_atomic(output, platform_text(p, fmt))


# -- compare -------------------------------------------------------------------------------------


def compare_planners(p, root, member_list, groups, size, segment_size, model, algos=None):
    """Simulate every applicable planner; rows sorted by predicted time, ratio to the best."""
    from .models import get_model
    from .planners import applicable
    from .simulate import simulate

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
    from .planners import hypercube_planners
    from .simulate import simulate

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
    from .planners import get_planner

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


# -- reproduce -----------------------------------------------------------------------------------


@cli.command("reproduce")
@click.argument("name")
@click.option("--trials", type=int, default=None, help="Trials per point (default: the paper's).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workers", type=int, default=None, help="Worker processes (default: all cores).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for the JSON and PNG files (default: results/NAME).",
)
@click.option("--no-plot", is_flag=True, help="Skip the PNG figures.")
@JSON_OPT
def reproduce_cmd(name, trials, seed, workers, out_dir, no_plot, as_json) -> None:
    """Reproduce a paper's experiment (hetcoll reproduce list: the choices)."""
    from .experiments import EXPERIMENTS, Config, get_experiment

    if name == "list":
        rows = [[e.name, e.paper, e.summary] for e in EXPERIMENTS.values()]
        click.echo(format_table(["experiment", "reference", "what"], rows))
        return
    exp = get_experiment(name)
    if trials is not None and trials <= 0:
        raise HetcollError(f"--trials: must be >= 1, got {trials}")
    if workers is not None and workers <= 0:
        raise HetcollError(f"--workers: must be >= 1, got {workers}")
    config = Config(trials=trials, seed=seed, workers=workers, progress=not as_json)
    result = exp.func(config)
    out = Path(out_dir or Path("results") / name)
    written = _write_result(result, out, plot=not no_plot)
    if as_json:
        dump_json(
            json_document(
                "experiment", {"experiment": name, "seed": seed, "files": written, **result.data}
            )
        )
        return
    for table in result.tables:
        click.echo(table)
        click.echo()
    for f in written:
        click.echo(f"wrote {f}", err=True)


def _write_result(result, out: Path, plot: bool) -> list[str]:
    from .platform import write_atomic

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{result.name}.json"
    write_atomic(path, json.dumps(json_document("experiment", result.data), indent=1) + "\n")
    written = [str(path)]
    if plot and result.figures:
        from .plots import draw_figures

        written += [str(p) for p in draw_figures(result, out)]
    return written


# -- runtime: run, probe, demo (MPI) ---------------------------------------------------------------


def _positive(value, name: str) -> None:
    if value is not None and not value > 0:
        raise HetcollError(f"{name}: must be > 0, got {value}")


CUBE_OPS = ("allreduce", "allgather", "barrier")


@cli.command("run")
@click.option("--platform", "platform_file", required=True, help="Platform file or name.")
@click.option(
    "--op",
    type=click.Choice(["bcast", *CUBE_OPS]),
    default="bcast",
    show_default=True,
    help="bcast (a tree planner) or a hypercube collective (a hypercube planner).",
)
@click.option("--root", default=None, help="Bcast: source node id (default: the first node).")
@click.option(
    "--algo", default=None, help="Planner to measure (default: fnf; eff_cube for hypercubes)."
)
@click.option(
    "--size",
    type=SIZE,
    default=None,
    help="Message size (bcast, default 4 B) or each rank's contribution (default 8 B).",
)
@click.option("--segment-size", type=SIZE, default=None, help="Bcast: pipeline in segments.")
@click.option("--repeat", type=int, default=10, show_default=True, help="Repetitions.")
@click.option("--emulate", is_flag=True, help="Impose the platform's costs on this machine.")
@click.option(
    "--time-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="With --emulate: multiply every modelled cost.",
)
@click.option(
    "--timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds one collective may take before the job is stopped.",
)
@JSON_OPT
def run_cmd(
    platform_file, op, root, algo, size, segment_size, repeat, emulate, time_scale, timeout, as_json
) -> None:
    """Measure a collective under mpiexec, next to the simulator's prediction.

    \b
    mpiexec -n 16 python -m mpi4py -m hetcoll run --platform testbed16 --emulate
    mpiexec -n 8 python -m mpi4py -m hetcoll run --platform net.json --op barrier --emulate

    Bcast: latency as Banikazemi et al. (1998), Sec. 7.1.2 measure it; baselines: native
    MPI_Bcast and the binomial tree through the same runtime.  Allreduce (int64 sum),
    allgather, barrier: every rank starts at an agreed time, the call lasts until the last
    rank returns; baselines: MPI's own and the blind hypercube.  Rank 0 prints.
    """
    from .planners import get_planner, hypercube_planners

    p = _platform(platform_file)
    cube = op in CUBE_OPS
    an_op = f"a {op}" if op == "barrier" else f"an {op}"
    algo = algo or ("eff_cube" if cube else "fnf")
    info = get_planner(algo)
    if cube and info.kind != "hypercube":
        raise PlannerError(
            f"--algo: {algo!r} does not plan {an_op}; choose from: "
            + ", ".join(hypercube_planners())
        )
    if not cube and "bcast" not in info.collectives:
        raise PlannerError(f"--algo: {algo!r} does not plan a bcast (try --op allreduce)")
    if root is not None:
        if cube:
            raise HetcollError(f"--root: {an_op} has no root")
        p.index(root)
    if cube and segment_size is not None:
        raise HetcollError(f"--segment-size: {an_op} over a hypercube is not pipelined")
    if op == "barrier" and size:
        raise HetcollError(f"--size: a barrier moves no data, got {size} bytes")
    if repeat < 1:
        raise HetcollError(f"--repeat: must be >= 1, got {repeat}")
    _positive(time_scale, "--time-scale")
    _positive(timeout, "--timeout")
    _positive(segment_size, "--segment-size")
    if cube:
        nbytes = 0 if op == "barrier" else (8 if size is None else size)
        args = (nbytes, repeat, emulate, time_scale, timeout, as_json)
        return _run_cube(p, platform_file, op, algo, *args)
    size = 4 if size is None else size
    from .runtime.commands import run_measurement

    doc = run_measurement(
        p,
        root=root,
        algo=algo,
        nbytes=size,
        segment_size=segment_size,
        repeat=repeat,
        emulate=emulate,
        time_scale=time_scale,
        timeout=timeout,
    )
    if doc is None:
        return
    doc["platform"] = platform_file
    if as_json:
        dump_json(json_document("measurement", doc))
        return
    rows = [
        [
            algo,
            format_time(doc["measured_time"]),
            format_time(doc["predicted_time"]),
            f"{doc['ratio']:.3f}" if doc["ratio"] else "-",
        ],
    ]
    b = doc["baselines"]["binomial"]
    rows.append(
        [
            "binomial",
            format_time(b["measured_time"]),
            format_time(b["predicted_time"]),
            f"{b['measured_time'] / b['predicted_time']:.3f}",
        ]
    )
    rows.append(["native", format_time(doc["baselines"]["native"]["measured_time"]), "-", "-"])
    how = f"emulated, costs x{time_scale:g}" if emulate else "not emulated"
    title = (
        f"bcast of {format_size(size)} from {doc['root']} on {platform_file}: "
        f"{doc['ranks']} ranks, {how}, {repeat} repetitions"
    )
    click.echo(
        format_table(
            ["algorithm", "measured", "predicted", "measured/predicted"], rows, title=title
        )
    )
    click.echo(f"method: {doc['method']}")


def _run_cube(p, platform_file, op, algo, nbytes, repeat, emulate, time_scale, timeout, as_json):
    from .runtime.commands import run_cube_measurement

    doc = run_cube_measurement(
        p,
        collective=op,
        algo=algo,
        nbytes=nbytes,
        repeat=repeat,
        emulate=emulate,
        time_scale=time_scale,
        timeout=timeout,
    )
    if doc is None:
        return
    doc["platform"] = platform_file
    if as_json:
        dump_json(json_document("measurement", doc))
        return

    def row(name, d, pred):
        ratio = f"{d['measured_time'] / pred:.3f}" if pred else "-"
        return [
            name,
            format_time(d["measured_time"]),
            format_time(d["median_time"]),
            format_time(pred) if pred is not None else "-",
            ratio,
        ]

    b, native = doc["baselines"]["blind"], doc["baselines"]["native"]
    rows = [
        row(algo, doc, doc["predicted_time"]),
        row("blind", b, b["predicted_time"]),
        row("native", native, None),
    ]
    how = f"emulated, costs x{time_scale:g}" if emulate else "not emulated"
    what = op if op == "barrier" else f"{op} of {format_size(nbytes)} per rank"
    title = (
        f"{what} on {platform_file}: {doc['ranks']} ranks, {how}, {repeat} repetitions; "
        f"embedding {' '.join(doc['embedding'])}"
    )
    headers = ["algorithm", "measured (min)", "median", "predicted", "min/predicted"]
    click.echo(format_table(headers, rows, title=title))
    click.echo(f"method: {doc['method']}", err=True)


@cli.command("probe")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the platform here.")
@click.option(
    "--emulate",
    "emulate_file",
    default=None,
    help="Emulate this platform while probing (to check the probe).",
)
@click.option(
    "--sizes", default="0,4096,16384", show_default=True, help="Comma-separated message sizes."
)
@click.option("--repeat", type=int, default=4, show_default=True, help="Round trips per size.")
@click.option(
    "--rounds",
    type=int,
    default=3,
    show_default=True,
    help="Repeated probes fed to the forecaster.",
)
@click.option(
    "--serial", is_flag=True, help="One pair at a time (default: disjoint pairs at once)."
)
@click.option(
    "--model",
    type=MODEL,
    default="tini",
    show_default=True,
    help="Model of the written platform (a name or a JSON object).",
)
@click.option(
    "--tolerance",
    type=float,
    default=0.05,
    show_default=True,
    help="Merge nodes whose costs agree within this fraction (0: never).",
)
@click.option("--time-scale", type=float, default=1.0, show_default=True)
@click.option("--timeout", type=float, default=60.0, show_default=True)
@JSON_OPT
def probe_cmd(
    output,
    emulate_file,
    sizes,
    repeat,
    rounds,
    serial,
    model,
    tolerance,
    time_scale,
    timeout,
    as_json,
) -> None:
    """Measure every pair of ranks and write a platform file (run under mpiexec).

    \b
    mpiexec -n 8 python -m mpi4py -m hetcoll probe -o platform.json
    """
    from .models import get_model
    from .platform import save_platform

    emulated = _platform(emulate_file) if emulate_file else None
    size_list = tuple(parse_size(s) for s in sizes.split(",") if s.strip())
    if len(size_list) < 1:
        raise HetcollError("--sizes: give at least one size")
    if repeat < 1 or rounds < 1:
        raise HetcollError("--repeat and --rounds: must be >= 1")
    if tolerance < 0:
        raise HetcollError(f"--tolerance: must be >= 0, got {tolerance}")
    _positive(time_scale, "--time-scale")
    _positive(timeout, "--timeout")
    get_model(model)
    from .runtime.commands import run_probe

    doc = run_probe(
        platform=emulated,
        sizes=size_list,
        repeat=repeat,
        rounds=rounds,
        serial=serial,
        model=model,
        tolerance=tolerance,
        time_scale=time_scale,
        timeout=timeout,
    )
    if doc is None:
        return
    probed = doc.pop("_platform")
    if output:
        save_platform(probed, output)
        doc["output"] = output
    if as_json:
        dump_json(json_document("probe", doc))
        return
    rows = [[n.id, n.host or "", format_time(n.t_ini), f"{n.t_byte:.3g} s/B"] for n in probed.nodes]
    click.echo(
        format_table(
            ["node", "host", "t_ini", "t_byte"],
            rows,
            title=f"{probed.name} ({doc['seconds']:.1f} s)",
        )
    )
    if doc.get("t_ini_max_rel_error") is not None:
        click.echo(
            f"largest t_ini error against the emulated platform: {doc['t_ini_max_rel_error']:.1%}"
        )
    click.echo(f"forecast winners: {doc['forecast_winners']}", err=True)
    if output:
        click.echo(f"wrote {output}", err=True)


@cli.command("demo")
@click.option("--ranks", type=int, default=16, show_default=True, help="Local MPI ranks.")
@click.option("--platform", "platform_file", default="testbed16", show_default=True)
@click.option("--size", type=SIZE, default="4", show_default=True, help="Message size.")
@click.option("--repeat", type=int, default=5, show_default=True, help="Repetitions.")
@click.option(
    "--time-scale",
    type=float,
    default=4.0,
    show_default=True,
    help="Multiply the emulated costs (ms-scale costs dwarf this machine's noise).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="results/demo",
    show_default=True,
    help="Directory for the JSON and PNG files.",
)
@click.option("--no-plot", is_flag=True, help="Skip the PNG figures.")
@JSON_OPT
def demo_cmd(ranks, platform_file, size, repeat, time_scale, out_dir, no_plot, as_json) -> None:
    """Probe, plan with every planner, simulate and run each under emulation, compare.

    Starts its own ranks with this environment's mpiexec: run it directly (make demo).
    """
    from .demo import run_demo

    if ranks < 2:
        raise HetcollError(f"--ranks: must be >= 2, got {ranks}")
    if repeat < 1:
        raise HetcollError(f"--repeat: must be >= 1, got {repeat}")
    _positive(time_scale, "--time-scale")
    run_demo(
        ranks=ranks,
        platform=platform_file,
        nbytes=size,
        repeat=repeat,
        time_scale=time_scale,
        out_dir=Path(out_dir),
        plot=not no_plot,
        as_json=as_json,
    )


# -- entry point ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Console entry point: click, with every user error as one line and exit code 2."""
    try:
        rv = cli.main(args=argv, prog_name="hetcoll", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `hetcoll`: help, not an error
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click.UsageError as exc:
        return _fail(exc.format_message())
    except click.ClickException as exc:
        return _fail(exc.format_message())
    except HetcollError as exc:
        from .errors import CommunicationError

        # a communication error may be one rank's own: every rank says it
        return _fail(str(exc), everywhere=isinstance(exc, CommunicationError))
    except click.exceptions.Abort:
        click.echo("hetcoll: aborted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    code = rv if isinstance(rv, int) else 0
    return code


def _fail(message: str, everywhere: bool = False) -> int:
    first = " ".join(str(message).split())
    if everywhere or _mpi_rank() == 0:
        click.echo(f"hetcoll: error: {first}", err=True)
    return 2


def _mpi_rank() -> int:
    """This process's rank under mpiexec once MPI is initialised (0 otherwise).

    Under mpiexec every rank parses the same arguments and hits the same bad input: only
    rank 0 prints it, every rank exits 2."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        return mpi.COMM_WORLD.rank
    # before MPI is initialised: what the launcher told this process (MPICH, Open MPI, PMIx)
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
