"""Import hub: every module that registers figure functions into :data:`hetcoll.plots.FIGURES`.

Figure functions live next to their experiment (``experiments/<paper>_figures.py`` or the
experiment module itself) and read only the experiment's result data.
"""

from __future__ import annotations

from .experiments import (  # noqa: F401
    banikazemi_figures,
    beaumont_figures,
    figueira_figures,
    hsu_figures,
    park_figures,
    testbed,
)
