"""The shared-contention event loop's fast form: max-min rates from the flows' incidence
(one column per resource a flow crosses) and flow state in arrays with only the next end
in the heap give the runs of the one-flow-at-a-time loop (``_flows_reference.py``) bit for
bit, on random stars of NICs and a two-site platform of routed links."""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from _flows_reference import ReferenceFlows
from hetcoll import plan, simulate
from hetcoll.generators import star_platform
from hetcoll.generators.stars import multisite_platform
from hetcoll.planners.butterflypipe import butterfly_pipelined
from hetcoll.simulator import events, max_min_rates
from hetcoll.simulator.fairshare import max_min_flat

SPEEDS = ("100Gbps", "40Gbps", "25Gbps", "10Gbps")


@st.composite
def two_resource_flows(draw):
    """Flows from a sender's resource ``u`` to a receiver's ``n + u`` (``nic``'s form)."""
    n = draw(st.integers(2, 6))
    capacity = np.array(
        draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 8.0]), min_size=2 * n, max_size=2 * n))
    )
    pairs = draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=12)
    )
    k = len(pairs)
    caps = np.array(draw(st.lists(st.sampled_from([math.inf, 0.5, 4.0]), min_size=k, max_size=k)))
    return [np.array([u, n + v], dtype=np.int64) for u, v in pairs], caps, capacity


@given(two_resource_flows())
def test_rates_column_by_column_equal_the_incidence_lists_bit_for_bit(problem):
    paths, caps, capacity = problem
    crossed = np.concatenate(paths)
    flow_of = np.repeat(np.arange(len(paths)), 2)
    fast = max_min_flat(flow_of, crossed, caps, capacity, width=2)
    assert fast.tobytes() == max_min_rates(paths, caps, capacity).tobytes()


def runs(platform, schedule):
    """The prediction of the event loop as it is and of the reference loop."""
    now = simulate(platform, schedule)
    with patch.object(events, "_Flows", ReferenceFlows):
        before = simulate(platform, schedule)
    return now, before


def same(a, b) -> None:
    assert repr(a.makespan) == repr(b.makespan)
    assert a.transfers == b.transfers


@settings(max_examples=12, deadline=None)
@given(
    st.integers(3, 6),
    st.lists(st.sampled_from(SPEEDS), min_size=1, max_size=3, unique=True),
    st.sampled_from(["0us", "5us"]),
    st.integers(1, 64),
    st.sampled_from(["butterfly_pipelined", "forest", "ring"]),
)
def test_the_loop_runs_stars_of_nics_as_the_reference_does(n, speeds, latency, kib, method):
    p = star_platform(n, tuple(speeds), latency)
    m = kib * 1024 // (8 * n) * 8 * n
    if method == "butterfly_pipelined":
        s = butterfly_pipelined(p, nbytes=m, segment_size=max(8, m // 24 // 8 * 8), align=8)
    else:
        s = plan(p, None, method=method, collective="allreduce", nbytes=m, options={"align": 8})
    same(*runs(p, s))


def test_the_loop_runs_routes_of_several_links_as_the_reference_does():
    """Two sites: routes of two to four links (no common width, the incidence lists)."""
    a = star_platform(3, ("25Gbps", "10Gbps"), "5us")
    b = star_platform(2, ("10Gbps",), "5us")
    p = multisite_platform({"a": a, "b": b}, [("a", "b", "1ms", "1Gbps")])
    for method in ("flat", "binomial"):
        same(*runs(p, plan(p, p.ids[0], method=method, nbytes=1 << 20)))


def test_flows_that_begin_or_end_at_one_instant_share_one_solve():
    """A flat broadcast from one of four NICs (``nic``: sends concurrent): its three flows
    begin together, one solve of three flows (not one per begin: 1, 2, 3 flows), and end
    together, one solve of none (not one per end: 2, 1, 0 flows); the run that of the
    reference loop, bit for bit."""
    from hetcoll.simulator.fairshare import FairShares

    p = star_platform(4, ("25Gbps", "10Gbps"), "5us")
    s = plan(p, p.ids[0], method="flat", nbytes=1 << 20)
    flows: list[int] = []
    solve = FairShares.solve

    def counted(self):
        flows.append(len(self.active))
        return solve(self)

    with patch.object(FairShares, "solve", counted):
        simulate(p, s)
    assert flows == [3, 0]
    same(*runs(p, s))
