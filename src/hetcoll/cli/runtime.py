"""MPI commands: run and probe (under mpiexec) and demo (starts its own ranks)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import HetcollError, PlannerError
from ..report import dump_json, format_table, json_document
from ..units import format_size, format_time
from ._base import (
    JSON_OPT,
    MODEL,
    NON_NEGATIVE,
    OPTION_OPT,
    OUTPUT,
    OUTPUT_DIR,
    POSITIVE,
    SIZE,
    _platform,
    _positive,
    _sizes,
    cli,
    knob_warnings,
    planner_warnings,
)
from ._reports import print_bcast_measurement, print_cube_measurement, warn_unreliable

# -- runtime: run, probe, demo (MPI) ---------------------------------------------------------------


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
    type=POSITIVE,
    default=1.0,
    show_default=True,
    help="With --emulate: multiply every modelled cost.",
)
@click.option(
    "--timeout",
    type=POSITIVE,
    default=60.0,
    show_default=True,
    help="Seconds one collective may take before the job is stopped.",
)
@OPTION_OPT
@JSON_OPT
def run_cmd(
    platform_file,
    op,
    root,
    algo,
    size,
    segment_size,
    repeat,
    emulate,
    time_scale,
    timeout,
    planner_options,
    as_json,
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
    p = _platform(platform_file)
    algo = algo or ("eff_cube" if op in CUBE_OPS else "fnf")
    _check_run(p, op, root, algo, size, segment_size, repeat, time_scale, timeout)
    options = _run_options(algo, planner_options)
    from ..jobs import Run
    from ..jobs.ranks import measure

    cube = op in CUBE_OPS
    run = Run(
        p,
        op,
        algo,
        baselines=("blind",) if cube else ("binomial",),
        options=options,
        root=root,
        sizes=None if size is None else (size,),  # default: 4 B, 8 B per rank, or 0
        segment_size=segment_size,
        repeat=repeat,
        emulate=emulate,
        time_scale=time_scale,
        timeout=timeout,
    )
    from mpi4py import MPI

    with knob_warnings(MPI.COMM_WORLD.rank == 0):
        result = measure(run)
    if result is None:  # rank 0 reports
        return
    doc = result["documents"][0]
    doc["platform"] = platform_file
    if as_json:
        dump_json(json_document("measurement", doc))
    elif cube:
        print_cube_measurement(doc, platform_file)
    else:
        print_bcast_measurement(doc, platform_file)


def _run_options(algo: str, options: dict) -> dict:
    """The ``--option`` values the measured planner takes; rank 0 warns about the others
    (the baselines get only the options they take)."""
    import warnings

    from mpi4py import MPI

    from ..planners import get_planner

    if MPI.COMM_WORLD.rank == 0:
        with planner_warnings():
            return get_planner(algo).known_options(options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_planner(algo).known_options(options)


def _check_run(p, op, root, algo, size, segment_size, repeat, time_scale, timeout) -> None:
    """Every ``hetcoll run`` option that does not fit, as one error, before MPI starts."""
    from ..planners import get_planner, hypercube_planners

    cube = op in CUBE_OPS
    an_op = f"a {op}" if op == "barrier" else f"an {op}"
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


@cli.command("probe")
@click.option("-o", "--output", type=OUTPUT, help="Write the platform here.")
@click.option(
    "--emulate",
    "emulate_file",
    default=None,
    help="Emulate this platform while probing (to check the probe).",
)
@click.option(
    "--sizes",
    default=None,
    help="Comma-separated message sizes: span the sizes your program sends (default "
    "0,4KiB,64KiB,1MiB,4MiB,16MiB,64MiB; with --emulate 0,4KiB,16KiB, as emulated costs "
    "are slow).",
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
    "--serial/--parallel",
    default=None,
    help="One pair at a time, or disjoint pairs at once (default: one at a time where a "
    "host has more ranks than cores, natively).",
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
    type=NON_NEGATIVE,
    default=0.05,
    show_default=True,
    help="Merge nodes whose costs agree within this fraction (0: only those whose rounds overlap).",
)
@click.option(
    "--spread",
    type=NON_NEGATIVE,
    default=0.05,
    show_default=True,
    help="A round trip counts once two rounds agree within this fraction.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Extra rounds for the round trips that did not agree yet.",
)
@click.option(
    "--estimate",
    type=click.Choice(["robust", "min", "forecast"]),
    default="robust",
    show_default=True,
    help="Fit the least round trip below 1 MiB and the trimmed mean from there on "
    "(robust), the least everywhere (min), or the NWS forecast (drift).",
)
@click.option("--time-scale", type=POSITIVE, default=1.0, show_default=True)
@click.option("--timeout", type=POSITIVE, default=60.0, show_default=True)
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
    spread,
    retries,
    estimate,
    time_scale,
    timeout,
    as_json,
) -> None:
    """Measure every pair of ranks and write a platform file (run under mpiexec).

    \b
    mpiexec -n 8 python -m mpi4py -m hetcoll probe -o platform.json
    """
    from ..models import get_model
    from ..platform import save_platform

    emulated = _platform(emulate_file) if emulate_file else None
    if sizes is None:
        sizes = "0,4KiB,16KiB" if emulated is not None else "0,4KiB,64KiB,1MiB,4MiB,16MiB,64MiB"
    size_list = _sizes(sizes, "--sizes")
    if repeat < 1 or rounds < 1:
        raise HetcollError("--repeat and --rounds: must be >= 1")
    if tolerance < 0:
        raise HetcollError(f"--tolerance: must be >= 0, got {tolerance}")
    if spread < 0 or retries < 0:
        raise HetcollError("--spread and --retries: must be >= 0")
    _positive(time_scale, "--time-scale")
    _positive(timeout, "--timeout")
    get_model(model)
    from mpi4py import MPI  # initialises MPI: after every check of the options

    if MPI.COMM_WORLD.size < 2:
        raise HetcollError(
            "probe measures between MPI ranks: run it under mpiexec with 2 or more ranks, "
            "e.g. .venv/bin/mpiexec -n 4 .venv/bin/python -m mpi4py -m hetcoll probe -o "
            "platform.json"
        )
    from ..jobs.ranks import probe_job

    doc = probe_job(
        emulated,
        time_scale=time_scale,
        timeout=timeout,
        sizes=size_list,
        repeat=repeat,
        rounds=rounds,
        serial=serial,
        model=model,
        tolerance=tolerance,
        spread=spread,
        retries=retries,
        estimate=estimate,
    )
    if doc is None:
        return
    probed = doc.pop("_platform")
    warn_unreliable(doc["reliability"])
    if output is not None:
        save_platform(probed, output)
        doc["output"] = output
    if as_json:
        dump_json(json_document("probe", doc))
        return
    spread = doc["fit"].get("node_spread")
    rows = []
    for k, n in enumerate(probed.nodes):
        row = [n.id, n.host or "", format_time(n.t_ini), f"{n.t_byte:.3g} s/B"]
        if spread:
            (a, b), (c, d) = spread["t_ini"][k], spread["t_byte"][k]
            row += [f"{format_time(a)}-{format_time(b)}", f"{c:.3g}-{d:.3g}"]
        rows.append(row)
    head = ["node", "host", "t_ini", "t_byte"] + (
        ["t_ini rounds", "t_byte rounds"] if spread else []
    )
    click.echo(format_table(head, rows, title=f"{probed.name} ({doc['seconds']:.1f} s)"))
    classes = doc["fit"]["classes"]
    click.echo(
        f"{classes} speed classes"
        if classes > 1
        else "one speed class: the nodes' measurements do not separate (homogeneous as far "
        "as this probe can tell)"
    )
    pipe = doc["fit"].get("pipeline")
    if pipe is not None:
        click.echo(
            f"a pipeline's cost per message beyond the round trips: "
            f"{format_time(pipe['message_cost'])} (in every t_ini)"
        )
    if probed.size_curve is not None:
        click.echo(
            "per-byte cost by message size, times t_byte (size_curve): "
            + ", ".join(f"from {format_size(a)} {m:.2f}" for a, m in probed.size_curve.to_list())
        )
    if doc.get("t_ini_max_rel_error") is not None:
        click.echo(
            f"largest t_ini error against the emulated platform: {doc['t_ini_max_rel_error']:.1%}"
        )
    if output:
        click.echo(f"wrote {output}", err=True)


@cli.command("demo")
@click.option("--ranks", type=int, default=16, show_default=True, help="Local MPI ranks.")
@click.option("--platform", "platform_file", default="testbed16", show_default=True)
@click.option("--size", type=SIZE, default="4", show_default=True, help="Message size.")
@click.option("--repeat", type=int, default=5, show_default=True, help="Repetitions.")
@click.option(
    "--time-scale",
    type=POSITIVE,
    default=4.0,
    show_default=True,
    help="Multiply the emulated costs (ms-scale costs dwarf this machine's noise).",
)
@click.option(
    "--out",
    "out_dir",
    type=OUTPUT_DIR,
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
    from ..demo import run_demo

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
