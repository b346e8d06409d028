"""The multi-port list schedule and ``multi_tree``'s multi-port schedules, pinned exactly:
their data structures and the planner's bookkeeping may change, never the schedules (the
digests were taken from the code before each speed-up)."""

from __future__ import annotations

import hashlib

import pytest

from hetcoll import plan, simulate
from hetcoll.generators import random_graph_platform
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.multitree import _shares
from hetcoll.planners.pipelined import _start
from hetcoll.planners.port_schedule import multi_port_transfers
from hetcoll.planners.port_slots import PATIENCE, slot_problem
from hetcoll.planners.steady import model_problem

L = 10**6


def _digest(found) -> str:
    """A digest of a value's ``repr``: every start, node, tree and slice, exactly."""
    return hashlib.sha256(repr(found).encode()).hexdigest()[:16]


#: per platform (Fig. 4 generator, model multi_port, root "0") and message, the digests
#: of the list schedule of the optimal multi-port packing's split, then of the packing on
#: whole port sends (when it differs), each without patience and then with PATIENCE
LISTED = {
    (12, 0.3, 1, 64): (
        "bdabfa2140e6abf7",
        "84089876e13dc150",
        "41f9eaebffd1adfd",
        "e33dee0d8e272ca1",
    ),
    (30, 0.12, 0, 96): (
        "5f886654bc7554f2",
        "eafa67db88892d4c",
        "c62c0f40c6b25238",
        "9ed8bfbaf14a1b34",
    ),
    (50, 0.12, 2, 48): (
        "a9eb4f9b8bfd729c",
        "e19c36ac17c424de",
        "004609758d13ff1a",
        "5ecaa565c68b89f5",
    ),
}


@pytest.mark.parametrize("case", sorted(LISTED))
def test_the_list_schedules_are_pinned_transfer_by_transfer(case):
    n, density, seed, total = case
    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    req, g = _start(p, "0", None, None, total * L, L)
    prob = model_problem(p, req.root, L, req.model)
    slots = slot_problem(prob)
    found = []
    for packs in [prob] if slots is None else [prob, slots]:
        packing = shared_packing(packs)
        share = _shares(total, list(packing.weights))
        trees = [packing.trees[i] for i in range(len(share)) if share[i] > 0]
        mm = [x for x in share if x > 0]
        for patience in (0.0, PATIENCE):
            found.append(_digest(multi_port_transfers(g, trees, mm, patience)))
    assert tuple(found) == LISTED[case]


#: sha256 (first 16 hex digits) of ``plan(...).to_json()`` and the simulated makespan of
#: multi_tree under multi_port on the size benchmark's platforms (density 0.12); a change
#: that makes one faster re-pins it on purpose and says so here
PLANNED = {
    # each the slack packing's trees (port_slots.SLACK_CAP), faster than the schedule kept
    # without them: a single tree in 4.2202466510433405 s
    (30, 0, 256): ("07bdb5fdb6979767", 4.216814302737585),  # 3 trees
    # 22 trees, after a trial, in 12.774162717372503 s; then the slack packing's in
    # 12.701956804600034 s, before its list schedule held ports for critical links
    (50, 2, 1536): ("ac28fdea2d1000d8", 12.261035167015448),  # 26 trees, after a trial
    # 43 trees, justified (port_justify: 7.100838248483972 s before), in 6.901309992711563 s
    (50, 0, 1024): ("8a4e1f84b38c4084", 6.75230697609164),  # 51 trees, justified
}


@pytest.mark.parametrize("case", sorted(PLANNED))
def test_the_multi_port_schedules_are_unchanged(case):
    n, seed, slices = case
    p = random_graph_platform(n, 0.12, seed=seed, model="multi_port")
    s = plan(p, "0", method="multi_tree", nbytes=slices * L, segment_size=L)
    assert (_digest(s.to_json()), simulate(p, s).makespan) == PLANNED[case]


def test_a_send_order_lists_each_distinct_entry_once():
    # the multi-port message's send order (no slots): each (flow, child) entry is one
    # immutable object listed again, not one object per send (490 000 at n = 50)
    p = random_graph_platform(12, 0.3, seed=1, model="multi_port")
    s = plan(p, "0", method="multi_tree", nbytes=64 * L, segment_size=L)
    entries = [x for seq in s.order.values() for x in seq]
    assert len(entries) == 704 and all(x.slot is None for x in entries)
    assert len({id(x) for x in entries}) == len(set(entries)) < 100
