"""MPI side of ``benchmarks/mpi/bench_probe_fit.py``: probe these ranks natively
(``hetcoll probe``'s default sizes, 0 B to 64 MiB, or the given ones), then measure round
trips at larger sizes the same way (through the engine, every pair, pairs one at a time
where the probe measured them so, eight interleaved rounds of 4 round trips each, the
first a warm-up; estimated as the probe estimates a
series: the trimmed mean of the samples from 1 MiB on) and write the fitted platform's
prediction next to each measurement.

``mpiexec -n K python -m mpi4py probe_fit.py SIZES PROBE_SIZES ESTIMATE OUT``
(comma-separated bytes; PROBE_SIZES ``default``: the probe's own; ESTIMATE: the probe's
``estimate``)
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.probe import (
    DEFAULT_SIZES,
    _measure_round,
    pairs_one_at_a_time,
    pooled,
    probe,
    series_estimate,
)

WORLD = MPI.COMM_WORLD


def predicted_rtt(p: Platform, u: int, v: int, n: int) -> float:
    """A round trip of ``n`` bytes as the simulator prices it: one transfer each way under
    the fitted platform's model (its size curve included)."""
    bound = p.model.bind(p)
    return bound.delay(u, v, n) + bound.delay(v, u, n)


def main(sizes: str, probe_sizes: str, estimate: str, out: str) -> None:
    big = tuple(int(s) for s in sizes.split(","))
    psizes = DEFAULT_SIZES if probe_sizes == "default" else tuple(map(int, probe_sizes.split(",")))
    load = os.getloadavg()
    placeholder = Platform(nodes_from_costs([0.0] * WORLD.size), name="placeholder")
    with HetComm(WORLD, placeholder, "flat", timeout=600) as hc:
        res = probe(hc, sizes=psizes, estimate=estimate, name=f"probed {WORLD.size} ranks")
        serial = pairs_one_at_a_time(hc)  # as the probe measured them
        rounds = [_measure_round(hc, big, 4, serial) for _ in range(8)]
    # the even rounds are the measurement, the odd ones the same again, interleaved: how
    # far two measurements of the same round trips differ is the floor any prediction's
    # error has on this host
    measured = series_estimate(pooled(rounds[0::2]), big)
    again = series_estimate(pooled(rounds[1::2]), big)
    least = np.nanmin(pooled(rounds), axis=-1)  # the least round trip (--estimate min's)
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
                        "least": float(least[u, v, k]),
                        # every round trip, round by round (even: measured, odd: again)
                        "samples": [[float(x) for x in r[u, v, k]] for r in rounds],
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
            "pairs": res.fit["pairs"],
            "estimate": res.fit.get("estimate"),
            "node_spread": res.fit.get("node_spread"),
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
