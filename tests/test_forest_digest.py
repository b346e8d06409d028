"""``forest``'s schedules byte for byte: the SHA-1 of ``Schedule.to_dict`` on the random
link graphs of ``benchmarks/simulated/bench_packing.py`` (8 and 16 nodes, seed 0; the
16-node reduce-scatter is timetabled as its broadcast's play-out run backwards,
``planners/forestreverse.py``), at 1 and 64 MiB per rank.  A change meant to make the
planning faster (the garbage collector paused, work shared between play-outs) must leave
them all as they are; a change that alters a schedule on purpose says so and re-pins it."""

from __future__ import annotations

import hashlib
import json

import pytest

from hetcoll import plan
from hetcoll.generators import capacitated_graph_platform

MiB = 2**20

PINNED = {
    (8, "allgather", 1): "099b70e13e29e7841b9b6fea9afd4cad52ae5ab0",
    (8, "allgather", 64): "bb85a041713c8dbae523c2751513b5584b141b27",
    (8, "reduce_scatter", 1): "b2b517991c596fb60098bc6ba4e03598ac468c21",
    (8, "reduce_scatter", 64): "e55d2348f154edfb354a4d2031d62772f1ddf268",
    (16, "allgather", 1): "2840ad71203478b0544863762a72847f067fc903",
    (16, "allgather", 64): "c8cc475bcf4f49c34c7cab265f82bbf3bd2706d0",
    (16, "reduce_scatter", 1): "3aefc37211c3efaed6e985e2f4bfec8da4e6a70f",
    (16, "reduce_scatter", 64): "81ba9747ba2b37e8a308ced4008f0fb539b700bd",
}


@pytest.mark.parametrize("case", sorted(PINNED), ids=lambda c: "-".join(map(str, c)))
def test_schedule_digest(case):
    n, op, mib = case
    p = capacitated_graph_platform(n, 0.3, seed=0)
    s = plan(p, None, method="forest", collective=op, nbytes=mib * MiB)
    text = json.dumps(s.to_dict(), sort_keys=True)
    assert hashlib.sha1(text.encode()).hexdigest() == PINNED[case]
