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
    (8, "allgather", 1): "0aa01f2c3622bedbd4b7c5cbd0e9cefd38766563",
    (8, "allgather", 64): "3550c7634f291d0d88e09f70ed0d32b677308932",
    (8, "reduce_scatter", 1): "f4605c02d4530bf83872a2c8919ba69b0ec10aeb",
    (8, "reduce_scatter", 64): "fd272016623efeffbb5932772f363e2e30a7b5fa",
    (16, "allgather", 1): "36e232453ba16866752db36dfc0763145841ad4f",
    (16, "allgather", 64): "e78fb7bd80e928ea4481ab9f4d51e328a8c330fc",
    (16, "reduce_scatter", 1): "4ec9dfbdac641f7127249fccd0018412d129f51b",
    (16, "reduce_scatter", 64): "b9c6a4d6527881d3425aa366d3ed9d81ceaf1ddd",
}


@pytest.mark.parametrize("case", sorted(PINNED), ids=lambda c: "-".join(map(str, c)))
def test_schedule_digest(case):
    n, op, mib = case
    p = capacitated_graph_platform(n, 0.3, seed=0)
    s = plan(p, None, method="forest", collective=op, nbytes=mib * MiB)
    text = json.dumps(s.to_dict(), sort_keys=True)
    assert hashlib.sha1(text.encode()).hexdigest() == PINNED[case]
