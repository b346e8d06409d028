"""The figure functions of each experiment (registered into :data:`hetcoll.plots.FIGURES`)."""

from __future__ import annotations
