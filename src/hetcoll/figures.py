"""The figure functions of each experiment (registered into :data:`hetcoll.plots.FIGURES`)."""

from __future__ import annotations

from .experiments import park_figures  # noqa: F401  (park-grid)
