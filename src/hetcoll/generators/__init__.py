"""Random and structured platform generators, one module per family of papers.

Every generator is a pure function of its parameters and ``seed`` (through
:func:`hetcoll.rng.as_rng`) returning a :class:`~hetcoll.platform.Platform`.
"""

from __future__ import annotations

from .hnow import classes_tini, two_class_tini
from .topology import figueira_platform, random_link_costs

__all__ = ["classes_tini", "figueira_platform", "random_link_costs", "two_class_tini"]
