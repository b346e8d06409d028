"""The multi-port list schedule's critical links (``port_schedule.critical_links``): a port
with time to spare holds for a saturated link that frees during the send it would start
instead, so that the link that sets the message's rate does not idle; the schedule still
runs as listed, justified too."""

from __future__ import annotations

from functools import partial

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import plan, simulate
from hetcoll.bounds import lower_bound
from hetcoll.generators import random_graph_platform
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.multitree import _shares, _timetable_schedule
from hetcoll.planners.pipelined import _start
from hetcoll.planners.port_justify import port_justified
from hetcoll.planners.port_order import listed_send_order
from hetcoll.planners.port_schedule import critical_links, multi_port_transfers
from hetcoll.planners.steady import model_problem, unbounded

L = 10**6


def test_on_the_size_benchmarks_worst_platform_1024_slices_reach_95_percent():
    # benchmarks/simulated/bench_sizes.py --model multi_port, seed 2 (n = 50, density
    # 0.12), 1 024 slices: the slack challenger's justified list schedule ends at 93.5 %
    # of the bound without its critical links (the link 48 -> 28 idles while its port
    # sends elsewhere), at 95.8 % with them
    p = random_graph_platform(50, 0.12, seed=2, model="multi_port")
    s = plan(p, "0", method="multi_tree", nbytes=1024 * L, segment_size=L)
    run = simulate(p, s).makespan
    assert lower_bound(p, "0", 1024 * L).seconds / run > 0.955
    assert run == s.params["period"]


def test_a_critical_link_is_saturated_and_longer_than_its_port():
    p = random_graph_platform(50, 0.12, seed=2, model="multi_port")
    req, g = _start(p, "0", None, None, 1024 * L, L)
    packing = shared_packing(model_problem(p, req.root, L, req.model))
    share = _shares(1024, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(share)) if share[i] > 0]
    mm = [x for x in share if x > 0]
    marked = critical_links(g, trees, mm)
    assert marked is not None
    port = np.zeros(g.k)
    link = np.zeros(len(g.T))
    for tree, s in zip(trees, mm, strict=True):
        np.add.at(port, g.src[tree], s * g.send[tree])
        link[tree] += s * g.T[tree]
    busiest = max(port.max(), link.max())
    for e in np.flatnonzero(marked).tolist():
        assert link[e] >= 0.97 * busiest and link[e] > port[g.src[e]]


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(3, 12),
    density=st.sampled_from([0.15, 0.3, 0.6]),
    seed=st.integers(0, 10**6),
    total=st.integers(2, 40),
    patience=st.sampled_from([0.0, 0.25]),
)
def test_with_critical_links_the_schedules_run_as_listed(n, density, seed, total, patience):
    # any links marked critical (here a random half): the list schedule and its justified
    # form still take the simulator's send rule, so each one's self-timed run ends at its
    # span exactly, and justifying never ends later
    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    req, g = _start(p, "0", None, None, total * L, L)
    prob = model_problem(p, req.root, L, req.model)
    if unbounded(prob):
        return
    packing = shared_packing(prob)
    share = _shares(total, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(share)) if share[i] > 0]
    mm = [x for x in share if x > 0]
    if len(trees) < 2:
        return
    critical = np.random.default_rng(seed).random(len(g.T)) < 0.5
    listed = multi_port_transfers(g, trees, mm, patience, critical=critical)
    assert listed is not None
    justified = port_justified(g, *listed, (patience,), critical=critical)
    assert justified[1] <= listed[1]
    optimum = packing.throughput * L
    for transfers, span in (listed, justified):
        order = partial(listed_send_order, transfers)
        s = _timetable_schedule(req, g, mm, trees, (order, span, span), total, optimum, None)
        assert simulate(p, s).makespan == span
