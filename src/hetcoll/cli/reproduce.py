"""hetcoll reproduce: each paper's experiment as a command."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import HetcollError
from ..report import dump_json, format_table, json_document
from ._base import JSON_OPT, OUTPUT_DIR, cli

# -- reproduce -----------------------------------------------------------------------------------


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
@JSON_OPT
def reproduce_cmd(name, trials, seed, workers, out_dir, no_plot, full, as_json) -> None:
    """Reproduce a paper's experiment (hetcoll reproduce list: the choices)."""
    from ..experiments import EXPERIMENTS, Config, get_experiment
    from ..files import check_output_dir

    if name == "list":
        rows = [[e.name, e.paper, e.summary] for e in EXPERIMENTS.values()]
        click.echo(format_table(["experiment", "reference", "what"], rows))
        return
    exp = get_experiment(name)
    if trials is not None and trials <= 0:
        raise HetcollError(f"--trials: must be >= 1, got {trials}")
    if workers is not None and workers <= 0:
        raise HetcollError(f"--workers: must be >= 1, got {workers}")
    out = Path(out_dir or Path("results") / name)
    check_output_dir(out)  # before the experiment runs, not after
    params = {"full": True} if full else {}
    config = Config(trials=trials, seed=seed, workers=workers, progress=not as_json, params=params)
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


def _write_result(result, out: Path, plot: bool) -> list[str]:
    from ..files import make_output_dir, write_atomic

    make_output_dir(out)
    path = out / f"{result.name}.json"
    write_atomic(path, json.dumps(json_document("experiment", result.data), indent=1) + "\n")
    written = [str(path)]
    if plot and result.figures:
        from ..plots import draw_figures

        written += [str(p) for p in draw_figures(result, out)]
    return written
