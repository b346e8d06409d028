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
    (8, "allgather", 1): "b37687c53e76dd932ff445d857bbd967b9643bbd",
    (8, "allgather", 64): "aa929754e3521f83453049ed7d21f767b6c1f1a4",
    (8, "reduce_scatter", 1): "4dcb0c05120d85dd6179e62d97d6e818519b1de8",
    (8, "reduce_scatter", 64): "9b57015a0fd353bec5d0bca4d19ef405785f7f81",
    (16, "allgather", 1): "7416aedf62f892b31578a5b428b00629aa20bdc3",
    (16, "allgather", 64): "6d910c4b1a63bd6c4115d2aa2ae5faa0ebedefa3",
    (16, "reduce_scatter", 1): "e9c6dbce16fe8806eac6788c28697bd4682fc737",
    (16, "reduce_scatter", 64): "a31b490822abbfa7ef1cb9611c31c518cdf4a375",
}


@pytest.mark.parametrize("case", sorted(PINNED), ids=lambda c: "-".join(map(str, c)))
def test_schedule_digest(case):
    n, op, mib = case
    p = capacitated_graph_platform(n, 0.3, seed=0)
    s = plan(p, None, method="forest", collective=op, nbytes=mib * MiB)
    text = json.dumps(s.to_dict(), sort_keys=True)
    assert hashlib.sha1(text.encode()).hexdigest() == PINNED[case]
