"""The MPI side of a job: what every rank does (``hetcoll run``, ``hetcoll probe`` and
``python -m mpi4py -m hetcoll.jobs SPEC OUT``, which :func:`hetcoll.jobs.launch` starts).

For each :class:`~hetcoll.jobs.Run` every rank opens one :class:`~hetcoll.runtime.HetComm`,
probes first if asked, and measures the run's planners (and MPI's own collective) size by
size with :mod:`hetcoll.runtime.measure`.  Rank 0 then plans and simulates the same
planners with the comparison service (:func:`hetcoll.compare.compare`) and writes one
result document per size (:mod:`hetcoll.jobs.document`).  The engine itself never plans
for a prediction: what it runs and what is predicted meet here.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np
from mpi4py import MPI

from ..choice import best_cube, charged_message_cost
from ..compare import Comparison, compare, same_trees
from ..errors import HetcollError, ModelError, PlannerError
from ..hetcomm import HetComm
from ..platform import Platform, load_platform
from ..runtime.clocks import end_job
from ..runtime.measure import (
    CubeMeasurement,
    Measurement,
    measure_bcast,
    measure_cube,
    round_trips,
)
from ..units import check_quantity
from .document import BCAST_METHOD, CUBE_METHOD, versions
from .spec import DEFAULT, Run, runs_from_spec

__all__ = ["main", "measure", "probe_job", "run_job"]

Measured = dict[str, Measurement | CubeMeasurement]


def measure(run: Run, comm: MPI.Comm | None = None) -> dict[str, Any] | None:
    """Measure ``run`` on every rank of ``comm`` (collective).

    Returns, on rank 0, ``{"documents": [one per size], "probe": {...} or None}``; None on
    the other ranks.
    """
    comm = comm or MPI.COMM_WORLD
    platform = load_platform(run.platform)
    root = str(run.root if run.root is not None else platform.ids[0])
    if not run.cube:
        platform.index(root)
    default = DEFAULT in _names(run)  # a default wrapper: per call, its own choice
    with HetComm(
        comm,
        platform,
        run.planner if not run.cube else ("auto" if default else "fnf"),
        cube_algo=run.planner if run.cube and not default else None,
        options=run.options,
        emulate=run.emulate,
        timeout=run.timeout,
        time_scale=run.time_scale,
        segment_size=run.segment_size,
    ) as hc:
        probed = _probe(hc, run, platform) if run.probe else None
        measured = _measure_cube(hc, run) if run.cube else _measure_bcast(hc, run, root)
        ranks = hc.size
    if comm.rank != 0:
        return None
    docs = [
        _document(run, platform, ranks, root, nbytes, found)
        for nbytes, found in zip(run.message_sizes, measured, strict=True)
    ]
    if probed is not None:
        probed["same_tree_as_truth"] = _same_trees(run, platform, probed["_platform"], root)
        del probed["_platform"]
    return {"documents": docs, "probe": probed}


def _names(run: Run) -> list[str]:
    return [run.planner, *run.baselines]


def _measure_bcast(hc: HetComm, run: Run, root_id: str) -> list[Measured]:
    if not run.message_sizes:
        return []
    root = hc.rank_of[root_id]
    rtt = round_trips(hc, root)
    out = []
    for nbytes in run.message_sizes:
        found: Measured = {}
        for name in dict.fromkeys(_names(run)):
            found[name] = measure_bcast(
                hc,
                root,
                nbytes,
                run.repeat,
                algo=name,
                segment_size=run.segment_size,
                rtt=rtt,
                settle=run.settle_time,
            )
        if run.native and run.emulate and _mpi_runs(run, hc.platform, root_id, nbytes):
            # MPI's own as the baseline: MPICH's algorithm, emulated
            found["mpi"] = measure_bcast(
                hc, root, nbytes, run.repeat, algo="mpi", rtt=rtt, settle=run.settle_time
            )
        if run.native:  # un-emulated: the baseline natively, for information under emulation
            found["native"] = measure_bcast(
                hc, root, nbytes, run.repeat, native=True, rtt=rtt, settle=run.settle_time
            )
        out.append(found)
    return out


def _measure_cube(hc: HetComm, run: Run) -> list[Measured]:
    out = []
    for nbytes in run.message_sizes:
        mpi = run.native and run.emulate and _mpi_runs(run, hc.platform, None, nbytes)
        extra = (["mpi"] if mpi else []) + (["native"] if run.native else [])
        names = list(dict.fromkeys([*_names(run), *extra]))
        rounds: dict[str, list[CubeMeasurement]] = {name: [] for name in names}
        for k in range(run.rounds):  # the order reversed from one round to the next
            for name in names if k % 2 == 0 else names[::-1]:
                native = name == "native"
                m = measure_cube(
                    hc,
                    run.operation,
                    nbytes,
                    run.repeat,
                    algo=None if native or name == DEFAULT else name,
                    native=native,
                    loop=run.loop if k == 0 else 0,
                    settle=run.settle_time,
                    warm_up=k == 0,
                )
                if name == DEFAULT:  # what the wrapper chose for the call (the same each time)
                    m.method = hc.last_choice.algorithm
                rounds[name].append(m)
        out.append({name: _merged(found) for name, found in rounds.items()})
    return out


def _merged(rounds: list[CubeMeasurement]) -> CubeMeasurement:
    """One algorithm's measurements of every round as one: the least and the median over
    all calls, the lateness of the least, each round's least in ``per_round``."""
    m = replace(rounds[0], per_repeat=[t for r in rounds for t in r.per_repeat])
    best = min(rounds, key=lambda r: r.measured_time)
    m.measured_time, m.late = best.measured_time, best.late
    m.median_time = float(np.median(m.per_repeat))
    m.per_round = [r.measured_time for r in rounds]
    return m


# -- the documents (rank 0) -------------------------------------------------------------------


def _predictions(
    run: Run, platform: Platform, root: str, nbytes: int, chosen: str | None = None
) -> Comparison:
    """The run's planners planned and simulated as the wrapper plans them: a hypercube
    call's ``algo="auto"`` runs the best hypercube plan, charged the wrapper's cost per
    message (``Planning.cube``), not the best of every planner; a broadcast's ``auto``
    planner is charged that cost too (``Planning._charged``: under emulation it slices
    more coarsely than the planner alone would); :data:`DEFAULT` the plan the wrapper
    ``chosen`` (MPI's algorithm is predicted apart)."""
    mine = [] if chosen in (None, "mpi") else [chosen]
    names = list(dict.fromkeys(n for n in [*_names(run), *mine] if n != DEFAULT))
    op = "sum" if run.operation == "allreduce" else None
    given = (run.options or {}).get("message_cost")  # as HetComm._message_cost
    cost = (
        check_quantity(given, "time", "message_cost")
        if given is not None
        else charged_message_cost(None, emulated=run.emulate, time_scale=run.time_scale)
    )
    cube_auto = None
    if run.cube and "auto" in names:
        cube_auto = best_cube(platform, run.operation, nbytes, None, op, None, cost)
    found = compare(
        platform,
        run.operation,
        root=None if run.cube else root,
        nbytes=nbytes,
        segment_size=None if run.cube else run.segment_size,
        op=op,
        algos=list(dict.fromkeys(cube_auto if n == "auto" and cube_auto else n for n in names)),
        options=run.options or None,  # the planner's options, as the wrapper ran it
    )
    for name in names:
        if name in found.skipped:
            raise PlannerError(f"{name}: {found.skipped[name]}")
    if cube_auto is not None:
        found.ranked.append(replace(found.get(cube_auto), algorithm="auto"))
    if not run.cube and "auto" in names and given is None and cost:
        charged = compare(
            platform,
            run.operation,
            root=root,
            nbytes=nbytes,
            segment_size=run.segment_size,
            algos=["auto"],
            options={**(run.options or {}), "message_cost": cost},
        ).get("auto")
        found.ranked = [charged if c.algorithm == "auto" else c for c in found.ranked]
    return found


def _document(
    run: Run, platform: Platform, ranks: int, root: str, nbytes: int, found: Measured
) -> dict[str, Any]:
    chosen = found[DEFAULT].method if DEFAULT in found else None
    predicted = _predictions(run, platform, root, nbytes, chosen)
    entry = {name: _entry(run, platform, m, predicted) for name, m in found.items()}
    own = "mpi" if run.emulate else "native"  # MPI's own: MPICH's algorithm, predicted
    for name in (own, DEFAULT) if chosen == "mpi" else (own,):
        if name in entry:
            e = entry[name]
            e.update(_mpi_prediction(run, platform, root, nbytes))
            e["ratio"] = e["measured_time"] / e["predicted_time"] if e["predicted_time"] else None
    if chosen is not None:
        entry[DEFAULT]["chosen"] = chosen
    base = entry.get("mpi" if run.emulate else "native")
    for name, e in entry.items():  # speed-up over MPI's own: emulated ones only under emulation
        fair = base is not None and (name != "native" or not run.emulate)
        e["speedup_vs_mpi"] = base["measured_time"] / e["measured_time"] if fair else None
    if run.emulate and "native" in entry:
        entry["native"]["emulated"] = False  # not comparable with the emulated times
    doc: dict[str, Any] = {
        "operation": run.operation,
        "platform": platform.name,
        "ranks": ranks,
        "root": root,
        "nbytes": nbytes,
        "segment_size": run.segment_size,
        "repeat": run.repeat,
        "emulate": run.emulate,
        "time_scale": run.time_scale,
        "algorithm": run.planner,
        **entry[run.planner],
        "baselines": {name: entry[name] for name in found if name != run.planner},
        "method": CUBE_METHOD if run.cube else BCAST_METHOD,
        "versions": versions(),
    }
    for name in run.baselines:  # a baseline that is the main planner: the same measurement
        doc["baselines"].setdefault(name, entry[name])
    if run.cube:  # no root, not pipelined
        del doc["root"], doc["segment_size"]
    return doc


def _mpi_runs(run: Run, platform: Platform, root: str | None, nbytes: int) -> bool:
    """Whether the platform carries MPICH's algorithm for the call (a one_port platform
    without a link between two ranks it sends between does not: no emulated MPI then)."""
    return (
        _mpi_prediction(run, platform, root or platform.ids[0], nbytes)["predicted_time"]
        is not None
    )


def _mpi_prediction(run: Run, platform: Platform, root: str, nbytes: int) -> dict[str, Any]:
    """MPICH's algorithm for the call (:mod:`hetcoll.mpich`) and its predicted time."""
    from ..mpich import native, predict

    nodes = list(platform.ids)
    n = 0 if run.operation == "barrier" else nbytes
    count = n // 8 if run.operation == "allreduce" and n % 8 == 0 else None
    found = native(
        run.operation, nodes, n, root=nodes.index(root) if not run.cube else 0, count=count
    )
    try:
        pred = predict(platform, found.program) * run.time_scale
    except ModelError:  # direct sends between nodes the platform does not link
        pred = None
    return {"mpich": found.algorithm, "predicted_time": pred}


def _entry(
    run: Run, platform: Platform, m: Measurement | CubeMeasurement, predicted: Comparison
) -> dict[str, Any]:
    """One algorithm's fields: measured, predicted (x time_scale), ratio, lateness, details."""
    native = m.method in ("native", "mpi")
    pred = None if native else predicted.get(m.method).predicted_time * run.time_scale
    out: dict[str, Any] = {
        "measured_time": m.measured_time,
        "predicted_time": pred,
        "ratio": m.measured_time / pred if pred else None,
        "late": m.late,
    }
    if isinstance(m, Measurement):
        out.update(clock_time=m.clock_time, ack_time=m.ack_time, per_repeat=m.per_repeat)
    else:
        out.update(median_time=m.median_time, loop=m.loop, loop_time=m.loop_time)
        out.update(per_repeat=m.per_repeat, per_round=m.per_round)
    if native:
        return out
    schedule = predicted.get(m.method).schedule
    if schedule.hypercube is None:
        if len(schedule.flows) == 1:
            out["tree"] = {p: list(c) for p, c in schedule.tree.children.items()}
        else:  # several trees (two_vbbs: one per half of the message)
            out["flows"] = [f.to_dict() for f in schedule.flows]
        return out
    out["embedding"] = list(schedule.hypercube.positions)
    out["folds"] = [list(f) for f in schedule.hypercube.folds]
    if run.loop > 0:
        out["loop_predicted_time"] = _loop_time(platform, schedule, run.loop) * run.time_scale
    return out


def _loop_time(platform: Platform, schedule, loop: int) -> float:
    """The simulator's time per call of ``loop`` calls back to back."""
    from ..simulator import simulate_program

    program = schedule.program().repeated(loop)
    _, done = simulate_program(platform.model.bind(platform), program)
    return max(max(t) for t in done.values()) / loop


# -- probing ----------------------------------------------------------------------------------


def _probe(hc: HetComm, run: Run, platform: Platform) -> dict[str, Any]:
    """Probe the (emulated) platform; the result, its accuracy and the probed platform."""
    from ..runtime.probe import probe, relative_errors

    t0 = time.monotonic()
    res = probe(hc, **run.probe)
    return {
        **res.to_dict(),
        "seconds": time.monotonic() - t0,
        **relative_errors(res.platform, platform, run.time_scale),
        "_platform": res.platform,
    }


def _same_trees(run: Run, true: Platform, probed: Platform, root: str) -> dict[str, bool]:
    nbytes = run.message_sizes[0] if run.message_sizes else 0
    names = list(dict.fromkeys(n for n in _names(run) if n != DEFAULT))
    return same_trees(
        true, probed, names, operation=run.operation, root=root, nbytes=nbytes, scale=run.time_scale
    )


def probe_job(
    platform: Platform | None, *, time_scale: float, timeout: float, **options: Any
) -> dict[str, Any] | None:
    """``hetcoll probe``: probe the communicator (emulating ``platform`` when given) with
    :func:`~hetcoll.runtime.probe.probe`'s ``options``; the result on rank 0, with the
    probed platform under ``"_platform"``."""
    from ..platform import nodes_from_costs
    from ..runtime.probe import probe, relative_errors

    world = MPI.COMM_WORLD
    emulate = platform is not None
    if platform is None:  # probe the real machine: a placeholder of the right size
        platform = Platform(nodes_from_costs([0.0] * world.size), name="placeholder")
    with HetComm(
        world, platform, "flat", emulate=emulate, timeout=timeout, time_scale=time_scale
    ) as hc:
        name = f"probed {hc.size} ranks" + (f" emulating {platform.name!r}" if emulate else "")
        res = probe(hc, name=name, **options)
        if hc.rank != 0:
            return None
    doc = res.to_dict()
    doc["emulated"] = platform.name if emulate else None
    if emulate:
        doc.update(relative_errors(res.platform, platform, time_scale))
    doc["versions"] = versions()
    doc["_platform"] = res.platform
    return doc


# -- a whole job --------------------------------------------------------------------------------


def run_job(spec: dict[str, Any], comm: MPI.Comm | None = None) -> dict[str, Any] | None:
    """Every run of ``spec`` in turn; the job's result on rank 0."""
    comm = comm or MPI.COMM_WORLD
    t0 = time.monotonic()
    runs = [measure(r, comm) for r in runs_from_spec(spec)]
    if comm.rank != 0:
        return None
    return {"runs": runs, "seconds": time.monotonic() - t0, "versions": versions()}


def main(argv: list[str] | None = None) -> int:
    """``python -m mpi4py -m hetcoll.jobs SPEC.json OUT.json``."""
    argv = sys.argv[1:] if argv is None else argv
    spec_path, out_path = argv
    with open(spec_path) as fh:
        spec = json.load(fh)
    try:
        result = run_job(spec)
    except HetcollError as exc:  # one line, and no rank is left waiting for this one
        end_job(2, str(exc))
    if result is not None:
        from ..files import write_atomic
        from ..report import to_jsonable

        write_atomic(out_path, json.dumps(to_jsonable(result)) + "\n")
    return 0
