"""FairShares (the event loop's max-min rates, kept up to date as flows start and end,
each solve resuming at the first round of the last solve that a change alters) against
:func:`hetcoll.simulator.max_min_rates` from scratch: after every step of random event
sequences over random flow classes, every flow's rate equal bit for bit, each solve
returning only the classes whose rate it changed."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.simulator import max_min_rates
from hetcoll.simulator.fairshare import FairShares


@st.composite
def scenarios(draw):
    """Classes over a few resources (star-like pairs or longer routes, some sharing
    resources, some with caps, some crossing nothing) and a sequence of starts and ends,
    some several before one solve."""
    n_res = draw(st.integers(1, 7))
    capacity = draw(
        st.lists(
            st.sampled_from([1.0, 3.0, 10 / 3, 0.1, 0.7, 1e9 / 7, 3.125e9, math.inf]),
            min_size=n_res,
            max_size=n_res,
        )
    )
    n_cls = draw(st.integers(1, 8))
    paths = [
        tuple(draw(st.lists(st.integers(0, n_res - 1), max_size=3, unique=True)))
        for _ in range(n_cls)
    ]
    caps = draw(
        st.lists(
            st.sampled_from([math.inf, math.inf, 0.5, 1 / 3, 2.5]), min_size=n_cls, max_size=n_cls
        )
    )
    steps = draw(
        st.lists(st.tuples(st.integers(0, n_cls - 1), st.booleans(), st.booleans()), max_size=60)
    )
    return paths, caps, capacity, steps


def scratch(paths, caps, capacity, mult) -> dict[int, float]:
    """Each class's rate by max_min_rates over its flows one by one (None when some flows
    of a class disagree: the test then fails)."""
    flows = [k for k, m in enumerate(mult) for _ in range(m)]
    if not flows:
        return {}
    rates = max_min_rates(
        [np.array(paths[k], dtype=np.int64) for k in flows],
        np.array([caps[k] for k in flows]),
        np.array(capacity),
    )
    out: dict[int, float] = {}
    for k, r in zip(flows, rates.tolist(), strict=True):
        assert out.setdefault(k, r).hex() == r.hex()
    return out


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_incremental_rates_equal_the_rates_from_scratch_bit_for_bit(problem):
    paths, caps, capacity, steps = problem
    shares = FairShares(paths, caps, capacity)
    mult = [0] * len(paths)
    rate: dict[int, float] = {}
    for k, start, solve_now in steps:
        if start or mult[k] == 0:
            shares.add(k)
            mult[k] += 1
        else:
            shares.remove(k)
            mult[k] -= 1
        if not solve_now:
            continue
        for j in shares.solve():  # only the classes whose rate changed (or is 0)
            assert j not in rate or rate[j].hex() != shares.rate[j].hex() or rate[j] == 0
            rate[j] = shares.rate[j]
        want = scratch(paths, caps, capacity, mult)
        got = {j: rate[j] for j in want}
        assert {j: r.hex() for j, r in got.items()} == {j: r.hex() for j, r in want.items()}
