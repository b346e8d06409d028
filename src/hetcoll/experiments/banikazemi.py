"""Banikazemi, Moorthy & Panda, "Efficient Collective Communication on Heterogeneous Networks
of Workstations", ICPP 1998: Fig. 1, Table 2 and the Section 7.2 simulations."""

from __future__ import annotations

from ..planners import REGISTRY, plan
from ..platform import load_platform
from ..simulate import simulate
from ..units import format_time
from ._base import Config, Result, experiment

__all__ = ["fig1"]

PAPER = "Banikazemi, Moorthy & Panda, ICPP 1998"


@experiment(
    "banikazemi-fig1",
    paper=f"{PAPER}, Sec. 3, Fig. 1",
    summary="eight workstations, two fast: binomial 700 µs, SPOC 500 µs, optimum 400 µs",
)
def fig1(config: Config) -> Result:
    """Fig. 1: broadcast from node 1; nodes 1 and 6 have t_ini = 100 µs, the others 300 µs."""
    platform = load_platform("fig1")
    paper = {"binomial": 700e-6, "spoc": 500e-6, "fnf": 400e-6, "optimal": 400e-6}
    rows, data = [], []
    for name in ("binomial", "spoc", "fnf", "optimal"):
        if name not in REGISTRY:
            continue
        pred = simulate(platform, plan(platform, "1", method=name))
        data.append(
            {
                "algorithm": name,
                "predicted_time": pred.makespan,
                "paper_time": paper[name],
                "sends": [list(s) for s in pred.sends()],
            }
        )
        rows.append(
            [
                name,
                format_time(pred.makespan),
                format_time(paper[name]),
                " ".join(f"{a}->{b}" for a, b in pred.sends()),
            ]
        )
    from ..report import format_table

    table = format_table(
        ["algorithm", "simulated", "paper", "sends in start order"],
        rows,
        title="Banikazemi et al. 1998, Fig. 1 (broadcast from node 1)",
    )
    return Result("banikazemi-fig1", {"platform": "fig1", "root": "1", "results": data}, [table])
