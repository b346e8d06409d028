"""MPI side of tests/test_jobs_tune_mpi.py: ``engine_cost`` (what ``hetcoll tune`` writes
as the tuning file's ``message_cost``) on every rank, under emulation of a 4-node
platform, and the charge a ``HetComm`` derives from a tuning file carrying it.

``mpiexec -n 4 python engine_cost.py OUT``: rank 0 writes every rank's figures as JSON.
"""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.jobs.tune import engine_cost
from hetcoll.platform import Platform, nodes_from_costs

SCALE = 0.05
world = MPI.COMM_WORLD
costs = [1e-3 * (1 + r % 2) for r in range(world.size)]
p = Platform(nodes_from_costs(costs, [1e-8] * world.size), model="tini", name="alternating")
with HetComm(world, p, "mpi", emulate=True, time_scale=SCALE, timeout=120) as hc:
    cost = engine_cost(hc, 5)
tuning = {
    "format": "hetcoll-tuning",
    "version": 1,
    "ranks": world.size,
    "emulated": True,
    "message_cost": cost,
    "rules": {},
}
with HetComm(world, p, emulate=True, time_scale=SCALE, tuning=tuning, timeout=120) as hc:
    charged = hc.planning.message_cost
every = world.gather({"cost": cost, "charged": charged, "scale": SCALE}, root=0)
if world.rank == 0:
    with open(sys.argv[1], "w") as fh:
        json.dump(every, fh)
