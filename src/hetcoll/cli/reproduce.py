"""hetcoll reproduce: each paper's experiment as a command."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import HetcollError
from ..report import dump_json, format_table, json_document
from ._base import JSON_OPT, cli

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
    from ..experiments import EXPERIMENTS, Config, get_experiment

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
    from ..platform import write_atomic

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{result.name}.json"
    write_atomic(path, json.dumps(json_document("experiment", result.data), indent=1) + "\n")
    written = [str(path)]
    if plot and result.figures:
        from ..plots import draw_figures

        written += [str(p) for p in draw_figures(result, out)]
    return written
