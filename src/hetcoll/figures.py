"""Every experiment's figures: the hub that imports every module registering figure
functions into :data:`hetcoll.plots.FIGURES`, and the two ways to get them,
:func:`build_figures` (Figures, for tests) and :func:`draw_figures` (PNG files).

Figure functions live next to their experiment (``experiments/<paper>_figures.py`` or the
experiment module itself) and read only the experiment's result data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .experiments import (  # noqa: F401
    allreduce_star_figures,
    banikazemi_figures,
    beaumont_figures,
    figueira_figures,
    hsu_figures,
    park_figures,
    testbed,
)
from .plots import BUILDERS, FIGURES

__all__ = ["build_figures", "draw_figures"]


def build_figures(result) -> dict[str, Any]:
    """The Figures of every built figure a :class:`~hetcoll.experiments.Result` names, by
    file name, without writing them."""
    built: dict[str, Any] = {}
    for name in result.figures:
        if name in BUILDERS:
            built |= BUILDERS[name](result.data)
    return built


def draw_figures(result, out_dir: Path) -> list[Path]:
    """Draw every figure a :class:`~hetcoll.experiments.Result` names, from its data."""
    written: list[Path] = []
    for name in result.figures:
        written += FIGURES[name](result.data, Path(out_dir))
    return written
