"""The figure functions of each experiment (registered into :data:`hetcoll.plots.FIGURES`)."""

from __future__ import annotations

from . import figures_figueira  # noqa: F401  (registers figueira-cost)
