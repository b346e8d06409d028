"""MPI side of ``benchmarks/mpi/bench_probe_fit.py``: probe these ranks natively
(``hetcoll probe``'s default sizes, 0 B to 16 MiB), then measure round trips at larger
sizes the same way (through the engine, every pair, least of the repeats) and write the
fitted platform's prediction next to each measurement.

``mpiexec -n K python -m mpi4py probe_fit.py SIZES PROBE_SIZES OUT`` (comma-separated
bytes; PROBE_SIZES ``default``: the probe's own)
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.probe import DEFAULT_SIZES, _measure_round, probe

WORLD = MPI.COMM_WORLD


def predicted_rtt(p: Platform, u: int, v: int, n: int) -> float:
    """A round trip of ``n`` bytes as the simulator prices it: one transfer each way under
    the fitted platform's model (its size curve included)."""
    bound = p.model.bind(p)
    return bound.delay(u, v, n) + bound.delay(v, u, n)


def main(sizes: str, probe_sizes: str, out: str) -> None:
    big = tuple(int(s) for s in sizes.split(","))
    psizes = DEFAULT_SIZES if probe_sizes == "default" else tuple(map(int, probe_sizes.split(",")))
    load = os.getloadavg()
    placeholder = Platform(nodes_from_costs([0.0] * WORLD.size), name="placeholder")
    with HetComm(WORLD, placeholder, "flat", timeout=600) as hc:
        res = probe(hc, sizes=psizes, name=f"probed {WORLD.size} ranks")
        rounds = [_measure_round(hc, big, 3, False) for _ in range(6)]
    # the first three rounds are the measurement, the next three the same again: how far
    # two measurements a few seconds apart differ is the floor any prediction's error has
    measured = np.nanmin(np.stack(rounds[:3]), axis=0)
    again = np.nanmin(np.stack(rounds[3:]), axis=0)
    rows = []
    for u in range(WORLD.size):
        for v in range(u + 1, WORLD.size):
            for k, n in enumerate(big):
                pred = predicted_rtt(res.platform, u, v, n)
                rows.append(
                    {
                        "u": u,
                        "v": v,
                        "nbytes": n,
                        "measured": float(measured[u, v, k]),
                        "again": float(again[u, v, k]),
                        "predicted": float(pred),
                    }
                )
    if WORLD.rank == 0:
        doc = {
            "ranks": WORLD.size,
            "sizes": list(big),
            "rows": rows,
            "classes": res.fit["classes"],
            "probe_seconds": res.seconds,
            "load": [load, os.getloadavg()],
            "reliable": res.reliability["reliable"],
            "probe_sizes": list(psizes),
            "size_curve": res.fit.get("size_curve"),
            # the fit against the probe's own round trips (what it was fitted to)
            "probed": [
                {
                    "u": u,
                    "v": v,
                    "nbytes": n,
                    "measured": float(res.rtt[u, v, k]),
                    "predicted": predicted_rtt(res.platform, u, v, n),
                }
                for u in range(WORLD.size)
                for v in range(u + 1, WORLD.size)
                for k, n in enumerate(psizes)
            ],
        }
        with open(out, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
