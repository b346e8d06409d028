"""The one result document of a measurement (``hetcoll run --json``, demo, experiments,
benchmarks).

One document per operation and message size::

    {"operation": "bcast", "platform": "testbed16", "ranks": 16, "root": "0",
     "nbytes": 4, "segment_size": null, "repeat": 5, "emulate": true, "time_scale": 4.0,
     "algorithm": "fnf", "measured_time": ..., "predicted_time": ..., "ratio": ...,
     "late": ..., <details>,
     "baselines": {"binomial": {"measured_time": ..., "predicted_time": ..., ...},
                   "native": {"measured_time": ..., "predicted_time": null, ...}},
     "method": "...", "versions": {"hetcoll": ..., "mpi4py": ..., "mpi": ..., ...}}

Every entry (the main planner's fields at the top level, each baseline's under its name)
has ``measured_time`` and ``predicted_time`` (seconds, the prediction times
``time_scale``; None for MPI's own), ``ratio`` (measured / predicted) and ``late`` (how far
the ranks fell behind on a busy host in the repetition measured: a measured time above the
prediction by no more than that is the host's doing).  Details: a broadcast's
``clock_time``, ``ack_time``, ``per_repeat`` and ``tree``; a hypercube's ``median_time``,
``loop_time``/``loop_predicted_time`` (``loop`` calls back to back), ``per_repeat``,
``per_round`` (each round's least, the rounds measured in turn), ``embedding`` and
``folds``; what a default wrapper ran (the entry ``default``), ``chosen``.
"""

from __future__ import annotations

import platform as _platform
from typing import Any

__all__ = ["BCAST_METHOD", "CUBE_METHOD", "entries", "versions"]

BCAST_METHOD = (
    "Banikazemi et al. 1998, Sec. 7.1.2: per recipient, broadcast then that recipient acks "
    "with its receipt time; latency = max over recipients of the receipt time on the shared "
    "clock (clock_time), or across hosts of (time to ack - RTT/2 - time the recipient kept "
    "forwarding) (ack_time); minimum over repetitions"
)

CUBE_METHOD = (
    "every rank starts at an agreed time (shared clock); the call lasts until the last rank "
    "returns; minimum (measured_time) and median over repetitions"
)

#: the fields of a document that describe the run, not one algorithm's measurement
HEADER = (
    "operation",
    "platform",
    "ranks",
    "root",
    "nbytes",
    "segment_size",
    "repeat",
    "emulate",
    "time_scale",
    "algorithm",
    "baselines",
    "method",
    "versions",
)


def entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every algorithm measured in ``doc``, main first then the baselines in order, each as
    ``{"algorithm": name, "nbytes": n, <its fields>}``.

    Examples
    --------
    >>> doc = {"algorithm": "fnf", "nbytes": 4, "measured_time": 2.0, "predicted_time": 1.0,
    ...        "baselines": {"native": {"measured_time": 1.5, "predicted_time": None}}}
    >>> [(e["algorithm"], e["measured_time"]) for e in entries(doc)]
    [('fnf', 2.0), ('native', 1.5)]
    """
    main = {k: v for k, v in doc.items() if k not in HEADER}
    out = [{"algorithm": doc["algorithm"], "nbytes": doc["nbytes"], **main}]
    for name, fields in doc.get("baselines", {}).items():
        out.append({"algorithm": name, "nbytes": doc["nbytes"], **fields})
    return out


def versions() -> dict[str, str | None]:
    """hetcoll's, Python's, NumPy's, mpi4py's and the MPI library's versions (the last
    only once ``mpi4py.MPI`` is imported: reading it initialises MPI)."""
    import sys

    import numpy

    from .. import __version__

    out: dict[str, str | None] = {
        "hetcoll": __version__,
        "python": _platform.python_version(),
        "numpy": numpy.__version__,
        "mpi4py": None,
        "mpi": None,
    }
    try:
        import mpi4py

        out["mpi4py"] = mpi4py.__version__
    except ImportError:  # pragma: no cover - a dependency
        pass
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        out["mpi"] = " ".join(mpi.Get_library_version().strip().splitlines()[0].split())
    return out
