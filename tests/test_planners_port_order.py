"""The multi-port list schedule's send order made in numpy (planners/port_order.py) is
the one the per-transfer listing gives (message_schedule.send_order), key for key and
entry for entry."""

from __future__ import annotations

import pytest

from hetcoll.generators import random_graph_platform
from hetcoll.planners._shared import packing as shared_packing
from hetcoll.planners.message_schedule import send_order
from hetcoll.planners.multitree import _shares
from hetcoll.planners.pipelined import _start
from hetcoll.planners.port_order import listed_send_order
from hetcoll.planners.port_schedule import multi_port_transfers
from hetcoll.planners.steady import model_problem

L = 10**6


@pytest.mark.parametrize(("n", "density", "seed", "total"), [(12, 0.3, 1, 64), (30, 0.12, 0, 96)])
def test_the_send_order_is_the_listings(n, density, seed, total):
    p = random_graph_platform(n, density, seed=seed, model="multi_port")
    req, g = _start(p, "0", None, None, total * L, L)
    packing = shared_packing(model_problem(p, req.root, L, req.model))
    share = _shares(total, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(share)) if share[i] > 0]
    mm = [x for x in share if x > 0]
    transfers, _span = multi_port_transfers(g, trees, mm)
    name = [f"r{x}" for x in range(g.k)]
    listing: dict[int, list[tuple[int, int, int, None]]] = {}
    for _t, u, v, i, _q in transfers:
        listing.setdefault(u, []).append((i, v, 0, None))
    # every tree a flow, then only every other tree (in reverse: flows renumbered)
    for flow_of in (
        {i: i for i in range(len(trees))},
        {i: len(trees) - i for i in range(0, len(trees), 2)},
    ):
        want = send_order(listing, flow_of, name, True)
        got = listed_send_order(transfers, flow_of, name)
        assert list(got) == list(want)  # the nodes in the same order
        assert got == want
        for sends in got.values():  # one entry object per distinct send
            assert len({id(x) for x in sends}) == len(set(sends))
    assert listed_send_order([], {0: 0}, name) == {}
