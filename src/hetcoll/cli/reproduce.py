"""hetcoll reproduce: each paper's experiment as a command."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..errors import HetcollError
from ..report import dump_json, format_table, json_document
from ._base import JSON_OPT, OUTPUT_DIR, _sizes, cli

# -- reproduce -----------------------------------------------------------------------------------

#: the most trials per point: ten times the largest count a paper used (10 000)
MAX_TRIALS = 100_000


def max_workers() -> int:
    """The most worker processes ``--workers`` may ask for: 4 per core."""
    return 4 * (os.cpu_count() or 1)


@cli.command("reproduce")
@click.argument("name")
@click.option("--trials", type=int, default=None, help="Trials per point (default: the paper's).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--workers", type=int, default=None, help="Worker processes (default: all cores).")
@click.option(
    "--out",
    "out_dir",
    type=OUTPUT_DIR,
    default=None,
    help="Directory for the JSON and PNG files (default: results/NAME).",
)
@click.option("--no-plot", is_flag=True, help="Skip the PNG figures.")
@click.option(
    "--full",
    is_flag=True,
    help="The paper's whole grid where the default is a CI-sized one (beaumont-*).",
)
@click.option(
    "--sizes",
    default=None,
    help="Comma-separated message sizes (8,4KiB,1MiB) where the experiment sweeps sizes "
    "(allreduce-star; default its own).",
)
@click.option(
    "--measure",
    is_flag=True,
    help="Also measure under emulation where the experiment can (allreduce-star: an MPI "
    "job of 8 ranks emulating star8; minutes).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "mpi"]),
    default="local",
    show_default=True,
    help="Where the trials run: local processes, or the ranks of `mpiexec -n N python -m "
    "mpi4py.futures -m hetcoll reproduce NAME --executor mpi` (same output).",
)
@JSON_OPT
def reproduce_cmd(
    name, trials, seed, workers, out_dir, no_plot, full, sizes, measure, executor, as_json
) -> None:
    """Reproduce a paper's experiment (hetcoll reproduce list: the choices)."""
    from ..experiments import EXPERIMENTS, Config, get_experiment
    from ..files import check_output_dir

    if name == "list":
        if as_json:
            doc = [
                {"experiment": e.name, "reference": e.paper, "what": e.summary}
                for e in EXPERIMENTS.values()
            ]
            dump_json(json_document("experiments", {"experiments": doc}))
            return
        rows = [[e.name, e.paper, e.summary] for e in EXPERIMENTS.values()]
        click.echo(format_table(["experiment", "reference", "what"], rows))
        return
    exp = get_experiment(name)
    if trials is not None and not 1 <= trials <= MAX_TRIALS:
        raise HetcollError(f"--trials: must be from 1 to {MAX_TRIALS}, got {trials}")
    most = max_workers()
    if workers is not None and not 1 <= workers <= most:
        raise HetcollError(
            f"--workers: must be from 1 to {most} (4 per core of this machine), got {workers}"
        )
    params: dict[str, Any] = {"full": True} if full else {}
    if sizes is not None:
        if "sizes" not in exp.takes:
            raise HetcollError(f"--sizes: {name} sweeps no message sizes")
        params["sizes"] = list(_sizes(sizes, "--sizes"))
    if measure:
        if "measure" not in exp.takes:
            which = ", ".join(e.name for e in EXPERIMENTS.values() if "measure" in e.takes)
            raise HetcollError(f"--measure: {name} has no measured form; {which} has")
        if executor == "mpi":
            raise HetcollError("--measure: not with --executor mpi (it starts MPI ranks itself)")
        params["measure"] = True
    out = Path(out_dir or Path("results") / name)
    check_output_dir(out)  # before the experiment runs, not after
    if executor == "mpi" and exp.launches_mpi:
        raise HetcollError(
            f"--executor mpi: {name} starts MPI ranks of its own; run it without --executor"
        )
    if executor == "mpi" and workers is not None:
        raise HetcollError("--workers: not with --executor mpi (the MPI ranks are the workers)")
    with _trial_executor(executor) as pool:
        config = Config(
            trials=trials,
            seed=seed,
            workers=workers if pool is None else pool.num_workers,
            progress=not as_json,
            params=params,
            executor=pool,
        )
        result = exp.func(config)
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


@contextlib.contextmanager
def _trial_executor(kind: str) -> Iterator[Any]:
    """None (local processes) or the ``mpi4py.futures`` pool of the ranks this command was
    started with: ``mpiexec -n N python -m mpi4py.futures -m hetcoll reproduce ...``, rank 0
    running the command and ranks 1..N-1 the trials."""
    if kind == "local":
        yield None
        return
    how = (
        "--executor mpi: start the command as `mpiexec -n N python -m mpi4py.futures -m "
        "hetcoll reproduce NAME --executor mpi` with N >= 2 (rank 0 runs it, the other "
        "ranks the trials)"
    )
    try:
        from mpi4py import MPI
        from mpi4py.futures import MPIPoolExecutor, _core
    except ImportError:  # pragma: no cover - mpi4py is a dependency
        raise HetcollError(f"{how}; mpi4py is not installed") from None
    # the shared pool exists only under `python -m mpi4py.futures`; without it the executor
    # would try to spawn processes, which a plain `hetcoll` or `mpiexec hetcoll` cannot do
    if _core.SharedPool is None or MPI.COMM_WORLD.size < 2:
        raise HetcollError(how)
    with MPIPoolExecutor() as pool:
        yield pool


def _write_result(result, out: Path, plot: bool) -> list[str]:
    from ..files import make_output_dir, write_atomic

    make_output_dir(out)
    path = out / f"{result.name}.json"
    write_atomic(path, json.dumps(json_document("experiment", result.data), indent=1) + "\n")
    written = [str(path)]
    if plot and result.figures:
        from ..figures import draw_figures

        written += [str(p) for p in draw_figures(result, out)]
    return written
