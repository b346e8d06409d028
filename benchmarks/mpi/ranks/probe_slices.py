"""MPI side of bench_probe_slices.py: ``ranks/probe_slices.py SIZES OUT``.

Without emulation: hetcoll's probe of these ranks (``hetcoll.runtime.probe``, at the given
comma-separated round-trip sizes, the pipeline measured: its default natively); rank 0
writes the probed platform and the probe's ``fit["pipeline"]`` record.
"""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.probe import probe

world = MPI.COMM_WORLD
flat = Platform(nodes_from_costs([1e-6] * world.size), name="flat")
with HetComm(world, flat, "chain", timeout=600) as hc:
    res = probe(hc, sizes=[int(s) for s in sys.argv[1].split(",")], pipeline=True)
if world.rank == 0:
    out = {
        "platform": res.platform.to_dict(),
        "pipeline": res.fit["pipeline"],
        "reliable": bool(res.reliability.get("reliable")),
        "seconds": res.seconds,
    }
    with open(sys.argv[2], "w") as fh:
        json.dump(out, fh)
