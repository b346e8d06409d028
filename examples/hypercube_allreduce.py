"""Figueira & Reddi: which node sits where in a hypercube matters on an irregular network.

A random 16-node topology (each pair 1 to 5 links apart, 35 µs a link); the allreduce of
8 bytes runs log2(16) exchange steps; each embedding's predicted time is the paper's
calc_cost, and the simulator agrees.
Run:  python examples/hypercube_allreduce.py
"""

import hetcoll
from hetcoll.generators import figueira_platform
from hetcoll.planners.cube_embedding import calc_cost
from hetcoll.units import format_time

platform = figueira_platform(16, max_links=5, seed=7)
blind = None
for method in ("blind", "dim2_cube", "tsts_cube", "eff_cube", "eff_cube_ls"):
    schedule = hetcoll.plan_allreduce(platform, method=method, nbytes=8)
    t = hetcoll.simulate(platform, schedule).makespan
    index = [platform.index(node) for node in schedule.hypercube.positions]
    paper = calc_cost(platform.latency, index)  # Sec. 5.1's pseudocode, on the matrix
    blind = blind or t
    print(
        f"{method:12s} {format_time(t):>7s} (calc_cost {format_time(paper):>7s})  "
        f"gain {100 * (1 - t / blind):4.1f} %  positions {' '.join(schedule.hypercube.positions)}"
    )
