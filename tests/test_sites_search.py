"""The multi-site planners' shared parts (planners/sites.py): the segment search
``halvings`` that ``sites``, ``site_pairs`` and ``site_exchange`` run, and the check of
their operands (``operands``), each planner named in its errors."""

from __future__ import annotations

import math

import pytest

from hetcoll.errors import PlannerError
from hetcoll.generators import multisite_platform, star_platform
from hetcoll.planners.siteexchange import site_exchange
from hetcoll.planners.sitepairs import site_pairs
from hetcoll.planners.sites import halvings, sites
from hetcoll.schedule import Flow, Tree

TREE = Tree("a", {"a": ("b",)})


def run(times, cuts=(None, 8, 4, 2, 1), budget=None):
    """The cuts ``halvings`` tries with ``times`` (by cut) as each attempt's result."""
    tried = []

    def build(cut):
        return [Flow(TREE, 16, 0, 0, cut)]

    def attempt(cut, flows, fastest):
        tried.append((cut, fastest))
        return times[cut]

    return halvings(cuts, build, attempt, budget), tried


def test_two_steps_without_gain_stop_the_search():
    """Whole 5, then 4, 4 (no gain), 6 (no gain again): stop before 1; the first of
    equals kept, each attempt told the fastest before it."""
    got, tried = run({None: 5.0, 8: 4.0, 4: 4.0, 2: 6.0, 1: 1.0})
    assert got == (4.0, 8)
    assert tried == [(None, math.inf), (8, 5.0), (4, 4.0), (2, 4.0)]


def test_a_gain_resets_the_count():
    got, tried = run({None: 5.0, 8: 6.0, 4: 3.0, 2: 7.0, 1: 2.0})
    assert got == (2.0, 1) and len(tried) == 5


def test_untried_steps_count_and_none_stops():
    """``math.inf``: a step proved no faster counts as no gain; None stops at once."""
    got, tried = run({None: 5.0, 8: math.inf, 4: 1.0, 2: None, 1: 0.5})
    assert got == (1.0, 4) and [c for c, _ in tried] == [None, 8, 4, 2]


def test_the_budget_stops_segmented_steps_only():
    """A flow of 16 bytes has 1 transfer whole, 2 in 8-byte segments, 4 at 4 bytes: a
    budget of 3 stops there; the whole step is never held to it."""
    got, tried = run({None: 5.0, 8: 4.0, 4: 1.0, 2: 0.5, 1: 0.1}, budget=3)
    assert got == (4.0, 8) and [c for c, _ in tried] == [None, 8]
    got, tried = run({None: 5.0}, cuts=(None,), budget=0)
    assert got == (5.0, None)


def two_sites():
    a = star_platform(2, ("10Gbps",))
    return multisite_platform({"a": a, "b": a}, [("a", "b", "1ms", "1Gbps")])


PLANNERS = [(sites, "sites"), (site_pairs, "site_pairs"), (site_exchange, "site_exchange")]


@pytest.mark.parametrize(("planner", "name"), PLANNERS)
def test_bad_operands_name_the_planner(planner, name):
    """A negative size, a member without a site, members in one site, another collective:
    a PlannerError naming the planner (a negative size was planned as 0 bytes by
    site_exchange and failed in a Flow's check under site_pairs and sites)."""
    p = two_sites()
    with pytest.raises(PlannerError, match=f"^{name}: nbytes must be >= 0"):
        planner(p, nbytes=-8, collective="allreduce")
    with pytest.raises(PlannerError, match=f"^{name}: member 'a/switch' has no site"):
        planner(p, members=["a/0", "a/switch", "b/0"], nbytes=64, collective="allreduce")
    with pytest.raises(PlannerError, match=f"^{name}: the members must be in at least two"):
        planner(p, members=["a/0", "a/1"], nbytes=64, collective="allreduce")
    with pytest.raises(PlannerError, match=f"^{name} plans .*allreduce.*, not a bcast"):
        planner(p, nbytes=64, collective="bcast")
    with pytest.raises(PlannerError, match="sizes: an allreduce has one vector"):
        planner(p, nbytes=64, collective="allreduce", sizes={"a/0": 8})


def test_negative_blocks_refused():
    p = two_sites()
    blocks = {"a/0": 8, "a/1": -8, "b/0": 8, "b/1": 8}
    for planner, name in PLANNERS[:2]:
        with pytest.raises(PlannerError, match=f"^{name}: sizes must be >= 0"):
            planner(p, nbytes=8, sizes=blocks)
