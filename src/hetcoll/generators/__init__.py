"""Random and structured platform generators, one module per family of papers.

Every generator is a pure function of its parameters and ``seed`` (through
:func:`hetcoll.rng.as_rng`) returning a :class:`~hetcoll.platform.Platform`.
"""

from __future__ import annotations

from .beaumont import random_graph_platform, tiers_platform
from .capacitated import capacitated_graph_platform
from .grid import drift, drift_series, eight_sites, grid_platform
from .hnow import classes_tini, two_class_tini
from .stars import hosts, multisite_platform, star_platform
from .switched import switch_platform
from .testbed import testbed
from .topology import figueira_platform, random_link_costs

__all__ = [
    "capacitated_graph_platform",
    "classes_tini",
    "drift",
    "drift_series",
    "eight_sites",
    "figueira_platform",
    "grid_platform",
    "hosts",
    "multisite_platform",
    "random_graph_platform",
    "random_link_costs",
    "star_platform",
    "switch_platform",
    "testbed",
    "tiers_platform",
    "two_class_tini",
]
