"""One MPI job that measures several things at once (what ``demo`` and ``reproduce`` launch).

``mpiexec -n N python -m mpi4py -m hetcoll.runtime.job SPEC.json OUT.json``: every rank reads
the same spec; rank 0 writes the results.  A spec is ``{"runs": [RUN, ...]}`` and a run::

    {"platform": <platform dict or file or built-in name>, "emulate": true,
     "time_scale": 1.0, "root": "0", "sizes": [4, 1024], "repeat": 5,
     "planners": ["binomial", "spoc", "fnf"], "native": true, "timeout": 60,
     "probe": {"sizes": [0, 4096, 16384], "repeat": 4, "rounds": 3}}

With ``probe`` the run first probes the (emulated) platform, then plans from the probed
platform too and reports whether each planner's tree is the same as from the true one.

A run with ``"collective": "barrier"`` (or ``"allreduce"``, ``"allgather"``) measures the
hypercube collective instead (:func:`~hetcoll.runtime.measure.measure_cube`) for each of
its hypercube ``planners``, with ``"repeat"`` timed calls, ``"loop"`` calls back to back
(default 0: none), ``"sizes"`` (default ``[0]``) and ``"native"``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from mpi4py import MPI

from ..hetcomm import HetComm
from ..planners import plan
from ..platform import load_platform
from ..simulate import simulate
from .measure import Measurement, measure_bcast, measure_cube, round_trips

__all__ = ["run_spec", "main"]


def _open(spec: dict[str, Any], comm: MPI.Comm, platform, **kwargs: Any) -> HetComm:
    """The run's wrapper, with the spec's emulation, timeout and time scale."""
    return HetComm(
        comm,
        platform,
        emulate=bool(spec.get("emulate", True)),
        timeout=float(spec.get("timeout", 60.0)),
        time_scale=float(spec.get("time_scale", 1.0)),
        **kwargs,
    )


def _header(hc: HetComm, platform, **extra: Any) -> dict[str, Any]:
    return {
        "platform": platform.name,
        "ranks": hc.size,
        "emulate": hc.emulate,
        "time_scale": hc.time_scale,
        **extra,
        "results": [],
    }


def run_one(spec: dict[str, Any], comm: MPI.Comm) -> dict[str, Any]:
    if spec.get("collective", "bcast") != "bcast":
        return run_cube(spec, comm)
    platform = load_platform(spec["platform"])
    scale = float(spec.get("time_scale", 1.0))
    hc = _open(spec, comm, platform, algo="binomial")
    out = _header(hc, platform)
    try:
        root_id = str(spec.get("root", platform.ids[0]))
        root = hc.rank_of[root_id]
        if spec.get("probe"):
            from .probe import probe

            t0 = time.monotonic()
            res = probe(hc, **spec["probe"])
            true_p = platform
            probed = res.platform
            same = {}
            for name in spec["planners"]:
                a = plan(true_p, root_id, method=name, nbytes=int(spec["sizes"][0]))
                b = plan(probed, root_id, method=name, nbytes=int(spec["sizes"][0]))
                same[name] = a.to_dict()["flows"] == b.to_dict()["flows"]
            err = (abs(probed.t_ini * 1.0 - true_p.t_ini * scale) / (true_p.t_ini * scale)).max()
            out["probe"] = {
                **res.to_dict(),
                "seconds": time.monotonic() - t0,
                "t_ini_max_rel_error": float(err),
                "same_tree_as_truth": same,
            }
        rtt = round_trips(hc, root)
        for nbytes in spec["sizes"]:
            nbytes = int(nbytes)
            repeat = int(spec.get("repeat", 5))
            for name in spec["planners"]:
                m = _from_root(
                    hc, root, measure_bcast(hc, root, nbytes, repeat, algo=name, rtt=rtt)
                )
                sched = hc.schedule(root, None, nbytes, algo=name)
                pred = simulate(platform, sched).makespan * scale
                out["results"].append(
                    {
                        "algorithm": name,
                        "nbytes": nbytes,
                        "measured_time": m.measured_time,
                        "clock_time": m.clock_time,
                        "ack_time": m.ack_time,
                        "predicted_time": pred,
                        "per_repeat": m.per_repeat,
                        "tree": {p: list(c) for p, c in sched.tree.children.items()},
                    }
                )
            if spec.get("native", True):
                m = _from_root(
                    hc, root, measure_bcast(hc, root, nbytes, repeat, native=True, rtt=rtt)
                )
                out["results"].append(
                    {
                        "algorithm": "native",
                        "nbytes": nbytes,
                        "measured_time": m.measured_time,
                        "clock_time": m.clock_time,
                        "ack_time": m.ack_time,
                        "predicted_time": None,
                    }
                )
    finally:
        hc.close()
    return out


def run_cube(spec: dict[str, Any], comm: MPI.Comm) -> dict[str, Any]:
    """A hypercube collective per planner (and native): measured and predicted times."""
    platform = load_platform(spec["platform"])
    scale = float(spec.get("time_scale", 1.0))
    collective = spec["collective"]
    planners = list(spec["planners"])
    hc = _open(spec, comm, platform, cube_algo=planners[0])
    out = _header(hc, platform, collective=collective)
    repeat, loop = int(spec.get("repeat", 10)), int(spec.get("loop", 0))
    settle = float(spec.get("settle", 5e-3))
    try:
        for nbytes in spec.get("sizes", [0]):
            nbytes = int(nbytes)
            runs = [(name, False) for name in planners]
            if spec.get("native", True):
                runs.append(("native", True))
            for name, native in runs:
                m = measure_cube(
                    hc,
                    collective,
                    nbytes,
                    repeat,
                    algo=None if native else name,
                    native=native,
                    loop=loop,
                    settle=settle,
                )
                row = {"algorithm": name, **m.to_dict(), "predicted_time": None}
                if not native:
                    sched = hc.schedule(nbytes=nbytes, algo=name, collective=collective)
                    row["predicted_time"] = simulate(platform, sched).makespan * scale
                    row["embedding"] = list(sched.hypercube.positions)
                    row["folds"] = [list(f) for f in sched.hypercube.folds]
                out["results"].append(row)
    finally:
        hc.close()
    return out


def _from_root(hc: HetComm, root: int, m: Measurement) -> Measurement:
    """Only the root knows the measurement; rank 0 writes the results: share it."""
    m.measured_time, m.ack_time, m.clock_time, m.per_repeat = hc.comm.bcast(
        (m.measured_time, m.ack_time, m.clock_time, m.per_repeat), root=root
    )
    return m


def run_spec(spec: dict[str, Any], comm: MPI.Comm | None = None) -> dict[str, Any]:
    comm = comm or MPI.COMM_WORLD
    t0 = time.monotonic()
    runs = [run_one(r, comm) for r in spec["runs"]]
    return {"runs": runs, "seconds": time.monotonic() - t0}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec_path, out_path = argv
    with open(spec_path) as fh:
        spec = json.load(fh)
    result = run_spec(spec)
    if MPI.COMM_WORLD.rank == 0:
        from ..platform import write_atomic
        from ..report import to_jsonable

        write_atomic(out_path, json.dumps(to_jsonable(result)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
