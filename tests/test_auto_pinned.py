"""``auto``'s choice and predicted time, pinned: on random Fig. 4 platforms of 10 to 40
nodes under each graph model, messages of 64 KiB to 1 GiB, the planner it chooses, the
slice, the chosen time (``float.hex``, exact), a digest of every candidate's time and one
of the chosen schedule's JSON document.  Work removed from ``auto``'s search (pruning,
sharing, faster simulation or schedule building) must leave every one of them as it is.
(The two one-port ``multi_tree`` rows were re-taken when its whole-message list schedules
of up to ``justify.MOST`` transfers became justified, ``planners/justify.py``: the n = 30
one from 17.683 to 17.651 s; the n = 40 one's list schedule is longer, its time the same,
the other slice sizes' times and so the candidates' and the schedule's digests not; and
again when ``MOST`` went from 60 000 to 85 000 transfers, which justifies its 2 048-slice
list schedule: from 3.2890 to 3.1929 s, for a bound of 3.0595 s.  And the candidates' digests
of those two, so the schedules' (whose params hold the candidates' times), when the
slice sizes came to be visited lowest bound first, the bound with the pipeline's fill:
the largest slices are no longer planned there, so throughput_tree, lp_grow, lp_prune
and the other single pipelined trees, slower than multi_tree at every slice, are no
longer candidates listed; the choice, slice, time and schedule but its params are as
they were.  And when the slack packing's trees became ``multi_tree`` candidates,
``planners/slack_packing.py``: the n = 30 one from 17.651 to 17.568 s, the n = 40 one from
3.1929 to 3.1085 s.  And when the periodic timetables of one-port ``multi_tree`` got
their start-up list scheduled, ``planners/startup.py``: the n = 30 one's 128 KiB slices
(8 192 of them) came to 17.5632 s, under its 512 KiB slices' 17.5681 s, which it chose
before; and to 17.5530 s when the kept period's start-up was also list scheduled with the
paths to the priced ports first, ``startup.AHEAD``.)"""

from __future__ import annotations

import hashlib
import json

import pytest

from hetcoll import plan
from hetcoll.generators import random_graph_platform

#: (model, nodes, seed, bytes, chosen, slice, its time as float.hex, the schedule's digest,
#: the candidates' times' digest)
CASES = [
    ("one_port", 10, 0, 2**16, "grow_tree", 8192, "0x1.73be47206e28ep-9",
     "2209ee58f27d3ffb", "995543e02ace30ef"),
    ("one_port", 20, 1, 2**24, "gap_aware", 8192, "0x1.59da38a40889dp-1",
     "a0737bd7d404ff3b", "0ae9ef488586b6f0"),
    ("one_port", 30, 0, 2**30, "multi_tree", 131072, "0x1.18d8f33360513p+4",
     "c6a7c447d7aa3158", "8eba1d51c1369446"),
    ("one_port", 40, 5, 2**28, "multi_tree", 131072, "0x1.8de4a457103eap+1",
     "2655541c89b436ea", "76806e56adadbca8"),
    ("one_port_uni", 12, 3, 2**20, "hlot", 8192, "0x1.9712a25ba00a2p-5",
     "b6b498f5a0c1ea2b", "a3f50da567f7a5fb"),
    ("multi_port", 12, 4, 2**20, "grow_tree", 8192, "0x1.54f21e706e2b6p-5",
     "7c817e50e89d71f7", "6b044ab157d57b5f"),
]  # fmt: skip


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("model", "n", "seed", "size", "chosen", "segment", "time", "schedule", "candidates"), CASES
)
def test_autos_choice_and_time_are_pinned(
    model, n, seed, size, chosen, segment, time, schedule, candidates
):
    p = random_graph_platform(n, 0.12, seed=seed, model=model)
    s = plan(p, "0", method="auto", nbytes=size)
    times = s.params["candidates"]
    assert (s.params["chosen"], s.params["segment_size"]) == (chosen, segment)
    assert times[chosen].hex() == time
    assert _digest(repr(sorted((k, v.hex()) for k, v in times.items()))) == candidates
    assert _digest(json.dumps(s.to_dict(), sort_keys=True)) == schedule
