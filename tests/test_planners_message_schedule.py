"""The one-port list schedule of a whole message (:func:`hetcoll.planners.message_schedule.
message_transfers`) is byte for byte the one it has always been: the digests below are of
its transfers and span as listed by the straightforward event loop it replaced (a scan of
every child's queue of ``(place, tree, slice)`` tuples at every instant, each free node
in order of most work left), on random Fig. 4 platforms of 3 to 50 nodes, 1 to 2 048
slices.  A change of order, of a tie or of a float would change them."""

from __future__ import annotations

import hashlib

import pytest

from hetcoll.generators import random_graph_platform
from hetcoll.planners.message_schedule import message_transfers
from hetcoll.planners.multitree import _shares
from hetcoll.planners.pipelined import _start
from hetcoll.planners.steady import pack_arborescences

L = 10**6

#: (nodes, density, seed, slices, transfers, the digest of repr((transfers, span)))
CASES = [
    (3, 0.6, 1, 2, 4, "9a4c9ad867bb1231"),
    (5, 0.3, 1, 64, 256, "27097d70274a098f"),
    (8, 0.6, 0, 7, 49, "f920efe1a0796ef4"),
    (12, 0.12, 0, 2048, 22528, "c6bf1eb5f27fc720"),
    (12, 0.6, 1, 300, 3300, "542c3fbde67dd576"),
    (20, 0.3, 0, 64, 1216, "8d89e4bea231c6eb"),
    (30, 0.12, 0, 300, 8700, "efbfc910d0404c13"),
    (30, 0.12, 1, 2048, 59392, "6b4862458ddac65e"),
    (50, 0.12, 0, 300, 14700, "e7002852ca6b22c8"),
    (50, 0.12, 1, 64, 3136, "3e16364e64749bf4"),
]


@pytest.mark.parametrize(("n", "density", "seed", "total", "count", "digest"), CASES)
def test_the_message_list_schedule_is_unchanged(n, density, seed, total, count, digest):
    p = random_graph_platform(n, density, seed=seed, model="one_port")
    _req, g = _start(p, "0", None, None, total * L, L)
    packing = pack_arborescences(g.problem())
    parts = _shares(total, list(packing.weights))
    trees = [packing.trees[i] for i in range(len(parts)) if parts[i] > 0]
    share = [x for x in parts if x > 0]
    transfers, span = message_transfers(g, trees, share)
    assert len(transfers) == count
    assert hashlib.sha256(repr((transfers, span)).encode()).hexdigest()[:16] == digest
