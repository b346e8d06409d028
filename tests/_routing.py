"""Helpers for the routing tests: routes on demand compared with the reference's."""

from __future__ import annotations

import numpy as np


def assert_pairs_are_the_reference(routes, u, v, lat, bw, paths) -> None:
    """``routes.pairs(u, v)``: every pair's latency, bandwidth and route (its links, in
    order) exactly the reference's (``hetcoll.routing.reference.dijkstra_routes``)."""
    got_lat, got_bw, res, off = routes.pairs(u, v)
    pairs = list(zip(np.asarray(u).tolist(), np.asarray(v).tolist(), strict=True))
    assert got_lat.tolist() == [lat[a][b] for a, b in pairs]
    assert got_bw.tolist() == [bw[a][b] for a, b in pairs]
    for i, (a, b) in enumerate(pairs):
        assert tuple(res[off[i] : off[i + 1]].tolist()) == paths[a][b], (a, b)
