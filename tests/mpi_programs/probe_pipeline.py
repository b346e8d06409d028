"""MPI side of test_runtime_pipeline_cost_mpi.py: a native probe (small sizes, one round)
with the pipeline measured (the default natively) and without; rank r writes OUT.r."""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.probe import probe

world = MPI.COMM_WORLD
flat = Platform(nodes_from_costs([1e-6] * world.size), name="flat")
out = {}
with HetComm(world, flat, "chain", timeout=120) as hc:
    for key, pipeline in (("default", None), ("off", False)):
        res = probe(hc, sizes=(0, 4096), rounds=1, retries=0, pipeline=pipeline)
        out[key] = {"fit": res.fit, "t_ini": [float(x) for x in res.platform.t_ini]}
with open(f"{sys.argv[1]}.{world.rank}", "w") as fh:
    json.dump(out, fh)
