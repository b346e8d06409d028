"""hetcoll: collective communication on heterogeneous networks.

Describe a platform, plan a collective with the algorithms of the literature, predict its
time with one simulator, and run it over MPI.

>>> import hetcoll
>>> p = hetcoll.load_platform("fig1")            # Banikazemi et al. 1998, Fig. 1
>>> s = hetcoll.plan(p, "1", method="fnf")
>>> round(hetcoll.simulate(p, s).makespan * 1e6, 6)
400.0
"""

from __future__ import annotations

from .errors import (
    HetcollError,
    KnobWarning,
    ModelError,
    PlannerError,
    PlatformError,
    ScheduleError,
    UnknownNodeError,
    UnknownPlannerError,
)
from .models import get_model
from .planners import (
    REGISTRY,
    plan,
    plan_allgather,
    plan_allreduce,
    plan_barrier,
    plan_multiple,
)
from .planners.cube_embedding import calc_cost
from .platform import Link, Node, Platform, load_platform, save_platform
from .program import Program
from .schedule import Flow, Hypercube, Schedule, Tree
from .selection import auto as _auto  # noqa: F401  (registers the planner "auto")
from .simulator import Prediction, simulate

__version__ = "0.1.0"


def __getattr__(name: str):
    # HetComm imports mpi4py.MPI (initialising MPI): load it only when it is used.
    if name == "HetComm":
        from .hetcomm import HetComm

        return HetComm
    raise AttributeError(f"module 'hetcoll' has no attribute {name!r}")


__all__ = [
    "REGISTRY",
    "Flow",
    "HetComm",
    "HetcollError",
    "Hypercube",
    "KnobWarning",
    "Link",
    "ModelError",
    "Node",
    "Platform",
    "PlannerError",
    "PlatformError",
    "Prediction",
    "Program",
    "Schedule",
    "ScheduleError",
    "Tree",
    "UnknownNodeError",
    "UnknownPlannerError",
    "__version__",
    "calc_cost",
    "get_model",
    "load_platform",
    "plan",
    "plan_allgather",
    "plan_allreduce",
    "plan_barrier",
    "plan_multiple",
    "save_platform",
    "simulate",
]
