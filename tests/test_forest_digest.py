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
    (8, "allgather", 1): "23b6f2aada0b1bf1f7a6feca58dac3cdd181faec",
    (8, "allgather", 64): "bc0c10320909957296183e28ab2c4a6604fe7630",
    (8, "reduce_scatter", 1): "1fd9256c4d32123ebc5ad05ae8ff1973f4fc59f9",
    (8, "reduce_scatter", 64): "5e027114ed5402e46bc4f78e9c60b102fcada15d",
    (16, "allgather", 1): "08e8873c862d3c422b7aede13429700bdcf9bb02",
    (16, "allgather", 64): "6b298a2e0cfaf01207981cfdc824a51efa0bcb71",
    (16, "reduce_scatter", 1): "3ae3c1d7c49da1e4da241faeb95b23265df3a3a6",
    (16, "reduce_scatter", 64): "2830adceefb8f4a32eace2e05dc8e845c95d996a",
}


@pytest.mark.parametrize("case", sorted(PINNED), ids=lambda c: "-".join(map(str, c)))
def test_schedule_digest(case):
    n, op, mib = case
    p = capacitated_graph_platform(n, 0.3, seed=0)
    s = plan(p, None, method="forest", collective=op, nbytes=mib * MiB)
    text = json.dumps(s.to_dict(), sort_keys=True)
    assert hashlib.sha1(text.encode()).hexdigest() == PINNED[case]
