"""The export command: a platform written for other tools (SimGrid, networkx) or as hetcoll's
own JSON/YAML (:mod:`hetcoll.export`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import HetcollError
from ._base import MODEL, OUTPUT, _platform, cli

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
