"""Each paper's evaluation as a reproducible experiment: ``hetcoll reproduce NAME``.

An experiment is a function ``run(config) -> Result``: pure in ``(seed, params)``, its
independent trials spread over processes by :func:`run_trials`.  A :class:`Result` carries a
JSON-ready ``data`` dict, the human ``tables`` and the names of the figures that
:mod:`hetcoll.plots` draws from that data (plots never compute costs).
"""

from __future__ import annotations

from . import (  # noqa: F401  (registers them)
    allreduce_star,
    banikazemi,
    banikazemi_reduce,
    beaumont,
    figueira,
    hsu,
    park,
    testbed,
)
from ._base import EXPERIMENTS, Config, Experiment, Result, experiment, get_experiment, run_trials

__all__ = [
    "EXPERIMENTS",
    "Config",
    "Experiment",
    "Result",
    "experiment",
    "get_experiment",
    "run_trials",
]
