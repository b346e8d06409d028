"""The examples in the grid modules' docstrings run (paper values, generator shapes)."""

from __future__ import annotations

import doctest

import pytest

import hetcoll.generators.grid
import hetcoll.levels
import hetcoll.planners.gap_aware
import hetcoll.planners.latency
import hetcoll.planners.multilevel

MODULES = [
    hetcoll.planners.latency,
    hetcoll.planners.gap_aware,
    hetcoll.planners.multilevel,
    hetcoll.levels,
    hetcoll.generators.grid,
]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0 or module is hetcoll.planners.multilevel
