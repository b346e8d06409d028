"""Park et al. (2004): broadcast on a grid whose links have very different latencies.

``park-fig2`` is a latency matrix built to give the paper's Fig. 2 times (binomial 1420,
MST 1150, HLOT 600; 1 unit = 1 ms).  Under eq. (4) (non-blocking sends, no overhead) the
shortest-path tree is optimal; with LogP overhead and gap (eq. 2) the flat tree's many sends
from the root cost more, and our ``gap_aware`` planner stays the fastest.
Run:  python examples/grid_broadcast.py
"""

import hetcoll
from hetcoll.units import format_time

platform = hetcoll.load_platform("park-fig2")
eq2 = {"name": "postal", "overhead": 20e-3, "gap": 40e-3}

print(f"{'planner':10s} {'eq. (4)':>9s} {'eq. (2)':>9s}")
for method in ("binomial", "flat", "mst", "hlot", "spt", "mpich-gx", "gap_aware"):
    times = [
        hetcoll.simulate(platform, hetcoll.plan(platform, "A", method=method, model=m), m).makespan
        for m in ("postal", eq2)
    ]
    print(f"{method:10s} {format_time(times[0]):>9s} {format_time(times[1]):>9s}")

tree = hetcoll.plan(platform, "A", method="hlot").tree
print("HLOT:", "; ".join(f"{p} -> {', '.join(c)}" for p, c in tree.children.items()))
