"""Random irregular switch-based networks of heterogeneous workstations (Hsu et al. 2005, Sec. 6).

"In our experiments, network topology is generated randomly based on given parameters":
``N`` workstations (16..256), a *density* (average workstations per switch, 4 in the paper),
8-port switches, and workstation speed types drawn from a distribution over Table 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..platform import Node, Platform
from ..rng import as_rng
from ..switches import DEFAULT_PORTS, SPEED_TYPES, SwitchNetwork
from ..units import check_quantity

__all__ = ["switch_platform", "speed_shares", "SPEED_DISTRIBUTIONS"]

#: Named speed-type distributions of Sec. 6 (type -> share).
SPEED_DISTRIBUTIONS: dict[str, dict[int, float]] = {
    # Fig. 7: 25 % of the slowest type, 25 % of the fastest, the rest spread over 2..7
    "extremes": {1: 0.25, **{t: 0.5 / 6 for t in range(2, 8)}, 8: 0.25},
    # Fig. 8: the bell distribution
    "bell": {1: 0.05, 2: 0.10, 3: 0.15, 4: 0.20, 5: 0.20, 6: 0.15, 7: 0.10, 8: 0.05},
}


def speed_shares(speeds: str | Mapping[int, float] = "uniform", types: int = 8) -> dict[int, float]:
    """Type -> share of the workstations: ``"uniform"`` over types ``1..types`` (Sec. 6.1:
    2, 4, 6 or 8 speed types, the fastest ones), ``"extremes"`` (25 % type 1, 25 % type 8:
    Fig. 7), ``"bell"`` (5/10/15/20/20/15/10/5 %: Fig. 8) or an explicit mapping."""
    if isinstance(speeds, str):
        if speeds == "uniform":
            if isinstance(types, bool) or not isinstance(types, int) or not 1 <= types <= 8:
                raise ArgumentError(f"types: must be an integer 1..8, got {types!r}")
            return {t: 1.0 / types for t in range(1, types + 1)}
        if speeds not in SPEED_DISTRIBUTIONS:
            raise ArgumentError(
                f"speeds: unknown distribution {speeds!r}; choose from: uniform, "
                + ", ".join(SPEED_DISTRIBUTIONS)
            )
        return dict(SPEED_DISTRIBUTIONS[speeds])
    if not isinstance(speeds, Mapping) or not speeds:
        raise ArgumentError(f"speeds: must be a name or a mapping type -> share, got {speeds!r}")
    shares = {}
    for t, w in speeds.items():
        if isinstance(t, bool) or t not in SPEED_TYPES:
            raise ArgumentError(f"speeds: unknown speed type {t!r} (1..8)")
        shares[int(t)] = float(check_quantity(w, "factor", f"speeds[{t}]"))
    total = sum(shares.values())
    if total <= 0:
        raise ArgumentError("speeds: the shares sum to 0")
    return {t: w / total for t, w in sorted(shares.items())}


def _quotas(n: int, shares: dict[int, float]) -> list[int]:
    """Exactly ``n`` types in the given shares (largest remainders; ties: the faster type)."""
    exact = {t: n * w for t, w in shares.items()}
    counts = {t: math.floor(x) for t, x in exact.items()}
    left = n - sum(counts.values())
    for t in sorted(exact, key=lambda t: (-(exact[t] - counts[t]), t))[:left]:
        counts[t] += 1
    return [t for t in sorted(counts) for _ in range(counts[t])]


def switch_platform(
    n: int,
    *,
    density: float = 4.0,
    ports: int = DEFAULT_PORTS,
    speeds: str | Mapping[int, float] = "uniform",
    types: int = 8,
    seed: int | np.random.Generator | None = None,
    model: Any = "switch",
) -> Platform:
    """A random irregular switch network of ``n`` heterogeneous workstations.

    Parameters
    ----------
    n : int
        Workstations (``"w0"`` .. in rank order).
    density : float
        Average workstations per switch: ``ceil(n / density)`` switches (``"s0"`` ..).
    ports : int
        Ports per switch (8 in the paper).
    speeds, types
        The speed-type distribution (:func:`speed_shares`); the types are dealt in exact
        proportions (largest remainders) and shuffled over the workstations.
    seed
        Through :func:`hetcoll.rng.as_rng`.
    model
        The platform's default cost model.

    Notes
    -----
    Each workstation goes to a switch chosen uniformly among those with room (at most
    ``ports - 2`` workstations when there are several switches, so that every switch keeps
    two ports for links); the switches are joined by a random spanning tree (each, in a
    random order, to a random earlier one with a free port), then the free ports are paired
    at random (a configuration model; self links and duplicates are dropped), so most ports
    are used and the graph has cycles, as in the irregular networks of Kesavan et al. and
    Libeskind-Hadas et al.  O(n) time.

    Examples
    --------
    >>> p = switch_platform(16, seed=1)
    >>> len(p), len(p.switches), p.model.name
    (16, 4, 'switch')
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ArgumentError(f"n must be an integer >= 1, got {n!r}")
    n = int(n)
    density = float(check_quantity(density, "factor", "density", positive=True))
    if isinstance(ports, bool) or not isinstance(ports, int | np.integer) or ports < 3:
        raise ArgumentError(f"ports must be an integer >= 3, got {ports!r}")
    ports = int(ports)
    shares = speed_shares(speeds, types)
    rng = as_rng(seed)
    s = max(1, math.ceil(n / density))
    cap = ports if s == 1 else ports - 2
    if s * cap < n:
        raise ArgumentError(
            f"density: {n} workstations on {s} switches of {ports} ports leave no room for "
            f"links (at most {cap} workstations per switch); lower the density"
        )
    kinds = np.array(_quotas(n, shares))
    kinds = rng.permutation(kinds)
    load = np.zeros(s, dtype=np.intp)
    attach = np.empty(n, dtype=np.intp)
    for w in range(n):
        room = np.flatnonzero(load < cap)
        attach[w] = room[rng.integers(len(room))]
        load[attach[w]] += 1
    free = ports - load
    links: list[tuple[int, int]] = []
    order = rng.permutation(s)
    for k in range(1, s):
        earlier = order[:k]
        open_ = earlier[free[earlier] > 0]
        a = int(open_[rng.integers(len(open_))])
        b = int(order[k])
        links.append((min(a, b), max(a, b)))
        free[a] -= 1
        free[b] -= 1
    linked = set(links)
    stubs = rng.permutation(np.repeat(np.arange(s), free))
    for a, b in zip(stubs[0::2].tolist(), stubs[1::2].tolist(), strict=False):
        key = (min(a, b), max(a, b))
        if a != b and key not in linked:
            linked.add(key)
            links.append(key)
    ids = tuple(f"s{i}" for i in range(s))
    net = SwitchNetwork(
        ids,
        (ports,) * s,
        tuple((ids[a], ids[b]) for a, b in links),
        tuple(ids[a] for a in attach.tolist()),
        [SPEED_TYPES[int(t)] for t in kinds],
        tuple(int(t) for t in kinds),
    )
    nodes = tuple(Node(f"w{i}") for i in range(n))
    return Platform(nodes, model=model, name=f"switch-{n}", switches=net)
