"""PNG figures drawn from the JSON an experiment wrote; plots never compute costs.

``matplotlib.figure.Figure`` objects (no pyplot state, no display), axes labelled with units,
one fixed colour per planner across every figure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "COLORS",
    "color",
    "figure",
    "register_builder",
    "size_gap_figure",
    "FIGURES",
    "BUILDERS",
]

#: One colour per planner, the same in every figure.
COLORS: dict[str, str] = {
    "binomial": "#7f7f7f",
    "flat": "#bcbd22",
    "chain": "#8c564b",
    "spoc": "#1f77b4",
    "fnf": "#d62728",
    "optimal": "#2ca02c",
    "auto": "#9467bd",
    "native": "#17becf",
    "mpi": "#17becf",
    "mst": "#9edae5",
    "spt": "#e377c2",
    "hlot": "#98df8a",
    "magpie": "#c49c94",
    "mpich-g2": "#ff7f0e",
    "mpich-gx": "#393b79",
    "gap_aware": "#252525",
    "blind": "#525252",
    "dim2_cube": "#6baed6",
    "tsts_cube": "#fdae6b",
    "eff_cube": "#e7298a",
    "eff_cube_ls": "#1b9e77",
    "forest": "#00a651",
    "sites": "#6a3d9a",
    "site_pairs": "#cab2d6",
    "site_exchange": "#8c510a",
    "balanced": "#b8860b",
    "ring": "#0057b7",
    "rabenseifner": "#d95f02",
    "bruck": "#66a61e",
}
_SPARE = ["#aec7e8", "#ffbb78", "#c5b0d5", "#f7b6d2", "#dbdb8d", "#c7c7c7", "#8c6d31"]

#: figure name -> function(data, out_dir) -> list of written paths
FIGURES: dict[str, Callable[[dict[str, Any], Path], list[Path]]] = {}

#: figure name -> function(data) -> {file name: Figure}: the figures built from the data
#: alone, not yet written (tests inspect their artists); each is in FIGURES as well
BUILDERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def color(name: str) -> str:
    """The colour of planner ``name`` (a stable spare colour for names not in :data:`COLORS`)."""
    if name in COLORS:
        return COLORS[name]
    return _SPARE[sum(map(ord, name)) % len(_SPARE)]


def figure(ncols: int = 1, nrows: int = 1, size: tuple[float, float] | None = None):
    """A new Agg-backed ``Figure`` and its axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size or (5.0 * ncols, 3.6 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def save(fig, path: Path) -> Path:
    """Write ``fig`` as PNG by :func:`hetcoll.files.open_output` (atomically over a file)."""
    from .files import open_output

    with open_output(path, binary=True) as fh:
        fig.savefig(fh, dpi=110, format="png")
    return path


def register_builder(name: str):
    """Decorator: ``func(data) -> {file name: Figure}`` builds figure ``name`` from result
    data; :func:`hetcoll.figures.draw_figures` writes each Figure as that file (PNG)."""

    def deco(func):
        def draw(data: dict[str, Any], out_dir: Path) -> list[Path]:
            return [save(fig, Path(out_dir) / fname) for fname, fig in func(data).items()]

        BUILDERS[name] = func
        FIGURES[name] = draw
        return func

    return deco


def size_gap_figure(rows: list[dict[str, Any]], title: str = ""):
    """Each planner's predicted time over the lower bound against the message size (log
    axes, a line at 1: the bound), the chosen planner's as a thick line; ``rows`` are
    ``hetcoll compare --sizes --json``'s (:meth:`hetcoll.compare.SizeComparison.to_dict`).
    Sizes whose bound is 0 are left out."""
    fig, axes = figure(size=(6.4, 4.2))
    ax = axes[0][0]
    rows = [r for r in rows if r["lower_bound"] > 0]
    names = sorted({name for r in rows for name in r["planners"]})
    for name in names:
        pts = [
            (r["nbytes"], r["planners"][name]["predicted_time"] / r["lower_bound"])
            for r in rows
            if name in r["planners"]
        ]
        xs, ys = zip(*pts, strict=True) if pts else ((), ())
        ax.plot(xs, ys, marker=".", lw=0.8, color=color(name), label=name, alpha=0.7)
    chosen = [(r["nbytes"], r["gap"]) for r in rows]
    if chosen:
        xs, ys = zip(*chosen, strict=True)
        ax.plot(xs, ys, lw=2.5, color="black", label="chosen (fastest)")
    ax.axhline(1.0, color="black", ls="--", lw=1, label="lower bound")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("predicted time / lower bound")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    return fig
