"""A broadcast of M segments costs the engine work linear in M (mpi_programs/many_segments.py):
no look asks MPI about more than a bounded number of requests, on the native fast path, the
native loop of large chunks and the executor alike (a look over every receive in flight made
a call of M segments cost O(M^2): 16 384 one-byte segments took 96 s on four ranks).
Counts, not times: the requests each look asks about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.inflight import ALL, HEAD, WIDE
from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "many_segments.py"
#: a chain rank has one peer it receives from, one send and one call header in flight
MOST = max(ALL, 2 + HEAD + WIDE)


@pytest.mark.mpi
@pytest.mark.parametrize("path", ["fast", "large", "executor"])
def test_no_look_asks_about_more_than_a_bounded_number_of_requests(path, tmp_path):
    out = tmp_path / "out"
    proc = run_mpi(4, [PROGRAM, path, out], module=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(4):
        cases = json.loads(Path(f"{out}.{r}").read_text())["cases"]
        for m, looks, asked, most, right in cases:
            assert right, (r, m)
            if r == 0:
                continue  # the root only sends
            assert looks > 0, (r, m, "no look counted")
            assert most <= MOST, (r, m, most)  # before: every receive in flight, up to m
            assert asked <= MOST * looks
