"""Every docstring example in the package runs and prints what it says (the papers' values)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import hetcoll

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(hetcoll.__path__, prefix="hetcoll.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    # importlib returns the module even where a package attribute of the same name is the
    # function it defines (hetcoll.planners.fnf)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_examples_are_there():
    """The papers' worked examples are doctests (Fig. 1 for the Banikazemi planners)."""
    attempted = 0
    for name in (
        "hetcoll.planners.fnf",
        "hetcoll.planners.spoc",
        "hetcoll.planners.classic",
        "hetcoll.simulator.predict",
        "hetcoll.planners.latency",
    ):
        attempted += doctest.testmod(importlib.import_module(name)).attempted
    assert attempted >= 8
