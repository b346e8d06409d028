"""Banikazemi et al. (1998), Fig. 1: why a binomial tree in rank order is slow on mixed nodes.

Eight workstations; nodes 1 and 6 start a message in 100 µs, the others in 300 µs.
Run:  python examples/fig1_broadcast.py
"""

import hetcoll
from hetcoll.units import format_time

platform = hetcoll.load_platform("fig1")

for method in ("binomial", "spoc", "fnf"):
    schedule = hetcoll.plan(platform, "1", method=method)
    prediction = hetcoll.simulate(platform, schedule)
    print(f"{method:8s} {format_time(prediction.makespan):>8s}")
    for parent, children in schedule.tree.children.items():
        print(f"    {parent} -> {', '.join(children)}")

# A multicast to a subset, and two multicasts at once sharing the nodes' send capacity.
one = hetcoll.plan(platform, "3", ["8", "1", "5"], method="fnf")
print("multicast 3 -> {1, 5, 8}:", format_time(hetcoll.simulate(platform, one).makespan))
two = hetcoll.plan_multiple(platform, [("1", ["2", "3", "4"]), ("6", ["5", "7", "8"])])
print("two multicasts at once: ", format_time(hetcoll.simulate(platform, two).makespan))
