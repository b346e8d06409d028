"""Random per-root schedules (allgather, reduce-scatter, allreduce) for the tests: random
spanning trees per root, one to three flows per root sharing its block, seeded."""

from __future__ import annotations

import numpy as np

from hetcoll.schedule import Flow, Schedule, Tree


def random_tree(nodes, root, rng) -> Tree:
    """A random spanning tree of ``nodes`` rooted at ``root``: each node hangs below a
    random earlier node of a random order."""
    rest = [v for v in nodes if v != root]
    order = [root] + [rest[i] for i in rng.permutation(len(rest))]
    return Tree.from_edges(
        root, [(order[rng.integers(0, k)], order[k]) for k in range(1, len(order))]
    )


def _shares(block, rng):
    k = int(rng.integers(1, 4))
    cuts = sorted(int(x) for x in rng.integers(0, block + 1, size=k - 1))
    edges = [0, *cuts, block]
    return [(edges[i], edges[i + 1] - edges[i]) for i in range(k)]


def random_per_root(nodes, collective, block, seed, seg=None, step=1) -> Schedule:
    """Every member's block of ``block`` bytes (in member order) over random trees of its
    own; ``allreduce``: the vector of ``block`` bytes cut into one share per member (at
    multiples of ``step`` bytes), reduced then broadcast."""
    rng = np.random.default_rng(seed)
    flows = []
    n = len(nodes)
    if collective == "allreduce":
        bounds = [block * i // n // step * step for i in range(n)] + [block]
        for kind in ("reduce", "bcast"):
            for i, r in enumerate(nodes):
                for lo, m in _shares((bounds[i + 1] - bounds[i]) // step, rng):
                    tree = random_tree(nodes, r, rng)
                    flows.append(Flow(tree, m * step, bounds[i] + lo * step, 0, seg, kind=kind))
        return Schedule("allreduce", "random", block, tuple(flows))
    kind = "bcast" if collective == "allgather" else "reduce"
    for i, r in enumerate(nodes):
        for lo, m in _shares(block // step, rng):
            tree = random_tree(nodes, r, rng)
            m = m * step + (block % step if lo + m == block // step else 0)
            flows.append(Flow(tree, m, i * block + lo * step, 0, seg, kind=kind))
    return Schedule(collective, "random", block, tuple(flows))
