"""``hetcoll tune``: measure MPI's own collectives and hetcoll's plans on the job's ranks,
print the speed-ups, write a tuning file (run under mpiexec)."""

from __future__ import annotations

import click

from ..errors import HetcollError
from ..report import dump_json, format_table, json_document
from ..units import format_size, format_time
from ._base import JSON_OPT, OUTPUT, POSITIVE, _platform, _positive, _sizes, cli

COLLECTIVES = ("bcast", "allreduce", "allgather", "barrier")


@cli.command("tune")
@click.option(
    "--platform",
    "platform_file",
    default=None,
    help="Platform to plan on (a file or name; default: probe these ranks first).",
)
@click.option(
    "--collectives",
    default="bcast,allreduce,barrier",
    show_default=True,
    help="Comma-separated: bcast, allreduce, allgather, barrier.",
)
@click.option(
    "--sizes",
    default="8,1KiB,64KiB,1MiB,16MiB,64MiB",
    show_default=True,
    help="Message sizes (per rank for allreduce and allgather).",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Paired rounds (every candidate and MPI's own once per round).",
)
@click.option(
    "--candidates",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Plans measured per size: the fastest distinct ones the simulator finds (and the "
    "fastest unsliced one when those are all sliced); 0: none, MPI's own only.",
)
@click.option(
    "--mpich-algorithms",
    is_flag=True,
    help="Natively, also measure each algorithm MPICH accepts for allreduce and allgather, "
    "forced through its control variable for the call; a winner's rule forces it in HetComm.",
)
@click.option(
    "--segment-sizes",
    default=None,
    help="Knobs to measure too: the best broadcast plan with each of these segment sizes "
    "(comma-separated); reported with their speed-up, and as slower when MPI's own wins.",
)
@click.option(
    "--spin",
    default=None,
    help="Knobs to measure too: every plan on a HetComm with each of these spin times "
    "(comma-separated, e.g. 1ms); reported, never written into the tuning file.",
)
@click.option(
    "--emulate",
    is_flag=True,
    help="Emulate --platform; MPI's own is then MPICH's algorithm, emulated.",
)
@click.option("--time-scale", type=POSITIVE, default=1.0, show_default=True)
@click.option("--timeout", type=POSITIVE, default=120.0, show_default=True)
@click.option("-o", "--output", type=OUTPUT, default=None, help="Write the tuning file here.")
@click.option(
    "--mpich-selection",
    type=OUTPUT,
    default=None,
    help="Also write MPICH's own selection file here (natively): its forced MPICH algorithms "
    "chosen by MPICH for a program started with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE "
    "set to it (hetcoll.runtime.mpich_selection).",
)
@JSON_OPT
def tune_cmd(
    platform_file,
    collectives,
    sizes,
    rounds,
    candidates,
    segment_sizes,
    mpich_algorithms,
    spin,
    emulate,
    time_scale,
    timeout,
    output,
    mpich_selection,
    as_json,
) -> None:
    """Measure MPI's own collective and hetcoll's best plans on these ranks (run under
    mpiexec) and write a tuning file for HetComm(..., tuning=FILE).

    \b
    mpiexec -n 8 python -m mpi4py -m hetcoll tune --platform platform.json -o tuning.json

    Per size: the time of MPI's own, of the best plan, and its speed-up over MPI (median
    of paired rounds, min-max), or "use MPI" when no plan was faster in 4 rounds of 5;
    and every plan or knob measured slower than MPI's own (also a warning on stderr).
    With --mpich-algorithms MPI's own with each MPICH algorithm forced ("mpi:ring") is a
    candidate too.
    """
    names = tuple(c.strip() for c in collectives.split(","))
    bad = [c for c in names if c not in COLLECTIVES]
    if bad or not names:
        raise HetcollError(
            f"--collectives: unknown {', '.join(bad) or 'none'}; choose from "
            + ", ".join(COLLECTIVES)
        )
    size_list = _sizes(sizes, "--sizes")
    segs = _sizes(segment_sizes, "--segment-sizes") if segment_sizes is not None else ()
    if any(x <= 0 for x in segs):
        raise HetcollError(f"--segment-sizes: each must be > 0, got {segment_sizes!r}")
    spins = _times(spin, "--spin") if spin is not None else ()
    _positive(time_scale, "--time-scale")
    _positive(timeout, "--timeout")
    if emulate and platform_file is None:
        raise HetcollError("--emulate: give the platform to emulate with --platform")
    if mpich_selection is not None and (emulate or not mpich_algorithms):
        raise HetcollError("--mpich-selection: natively, with --mpich-algorithms")
    p = _platform(platform_file) if platform_file else None
    from mpi4py import MPI  # initialises MPI: after every check of the options

    world = MPI.COMM_WORLD
    if world.size < 2:
        raise HetcollError(
            "tune measures MPI ranks: run it under mpiexec with 2 or more ranks, e.g. "
            ".venv/bin/mpiexec -n 4 .venv/bin/python -m mpi4py -m hetcoll tune -o tuning.json"
        )
    from ..jobs.tune import tune_job
    from ..tuning import Tuning, rules_from

    result = tune_job(
        p,
        collectives=names,
        sizes=size_list,
        rounds=rounds,
        count=candidates,
        emulate=emulate,
        time_scale=time_scale,
        timeout=timeout,
        segment_sizes=segs,
        spins=spins,
        mpich=mpich_algorithms,
    )
    if result is None:
        return
    winners: dict[str, list] = {}
    for row in result["rows"]:
        w = row["winner"]
        forced = (w["mpich"],) if w.get("mpich") else ()
        winners.setdefault(row["collective"], []).append(
            (row["nbytes"], w["algorithm"], w["segment_size"], *forced)
        )
    tuning = Tuning(
        world.size,
        rules_from(winners),
        emulate,
        result["platform"],
        result["rows"],
        result["message_cost"],
    )
    if output is not None:
        from ..files import write_atomic

        write_atomic(output, tuning.to_json())
    if mpich_selection is not None:
        import json

        from ..files import write_atomic
        from ..runtime.mpich_selection import builtin, selection

        write_atomic(mpich_selection, json.dumps(selection(tuning, builtin())))
    if as_json:
        dump_json(json_document("tuning", {**tuning.to_dict(), "output": output}))
    for coll in () if as_json else names:
        click.echo(_table(result, coll))
    if not as_json:
        click.echo(
            f"engine's cost per message of the busiest rank, beyond the model: "
            f"{format_time(tuning.message_cost)} (what auto charges each plan)"
        )
    for row in result["rows"]:  # the user's own knobs that cost time: said on stderr
        knobs = [s for s in row["slower"] if s["knob"]]
        if knobs:
            what = ", ".join(f"{s['plan']} ({s['speedup']:.2f}x)" for s in knobs)
            click.echo(
                f"hetcoll: warning: {row['collective']} {format_size(row['nbytes'])}: "
                f"measured slower than MPI's own: {what}",
                err=True,
            )
    if output and not as_json:
        click.echo(f"wrote {output}", err=True)


def _table(result, collective: str) -> str:
    rows = []
    for row in result["rows"]:
        if row["collective"] != collective:
            continue
        mpi, *plans = row["plans"]
        best = max(plans, key=lambda p: p["speedup_median"]) if plans else None
        w = row["winner"]
        cells = [format_size(row["nbytes"]), format_time(mpi["median"])]
        if best is None:
            cells += ["-", "-", "-", "use MPI"]
        else:
            s = best["speedup"]
            cells += [
                _label(best),
                format_time(best["median"]),
                f"{best['speedup_median']:.2f} ({min(s):.2f}-{max(s):.2f})",
                "use MPI" if w["algorithm"] == "mpi" and not w.get("mpich") else _label(w),
            ]
        cells.append(", ".join(f"{x['plan']} {x['speedup']:.2f}" for x in row["slower"]) or "-")
        rows.append(cells)
    kind = "emulated: MPI's own = MPICH's algorithm, emulated" if result["emulated"] else "native"
    title = (
        f"{collective} on {result['ranks']} ranks ({kind}; {result['rounds']} paired rounds, "
        "speed-up = MPI's time / the plan's)"
    )
    return format_table(
        ["size", "MPI", "best plan", "its time", "speed-up (min-max)", "choice", "slower than MPI"],
        rows,
        title,
    )


def _label(plan) -> str:
    from ..jobs.tune import label

    return label(plan)


def _times(text: str, what: str) -> tuple[float, ...]:
    """Comma-separated times (``20us,1ms``), each checked and > 0."""
    from ..units import check_quantity

    parts = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in parts):
        raise HetcollError(f"{what}: expected comma-separated times, got {text!r}")
    return tuple(check_quantity(t, "time", what, positive=True) for t in parts)
