"""What ``hetcoll run`` and ``hetcoll probe`` do on every rank (the CLI stays thin)."""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from ..hetcomm import HetComm
from ..platform import Platform
from ..simulate import simulate
from .measure import measure_bcast, measure_cube, round_trips

__all__ = ["run_measurement", "run_cube_measurement", "run_probe", "METHOD", "CUBE_METHOD"]

METHOD = (
    "Banikazemi et al. 1998, Sec. 7.1.2: per recipient, broadcast then that recipient acks "
    "with its receipt time; latency = max over recipients of the receipt time on the shared "
    "clock (clock_time), or across hosts of (time to ack - RTT/2 - time the recipient kept "
    "forwarding) (ack_time); minimum over repetitions"
)


def run_measurement(
    platform: Platform,
    *,
    root: str | None,
    algo: str,
    nbytes: int,
    segment_size: int | None,
    repeat: int,
    emulate: bool,
    time_scale: float,
    timeout: float,
) -> dict[str, Any] | None:
    """Measure ``algo``, ``binomial`` and native ``MPI_Bcast``; the document on rank 0."""
    with HetComm(
        MPI.COMM_WORLD,
        platform,
        algo,
        emulate=emulate,
        timeout=timeout,
        time_scale=time_scale,
        segment_size=segment_size,
    ) as hc:
        root_id = platform.ids[0] if root is None else root
        platform.index(root_id)
        r = hc.rank_of[root_id]
        rtt = round_trips(hc, r)
        main = measure_bcast(hc, r, nbytes, repeat, rtt=rtt)
        binomial = measure_bcast(hc, r, nbytes, repeat, algo="binomial", rtt=rtt)
        native = measure_bcast(hc, r, nbytes, repeat, native=True, rtt=rtt)
        sched = hc.schedule(r, None, nbytes, segment_size)
        sched_bin = hc.schedule(r, None, nbytes, segment_size, algo="binomial")
        if hc.rank != r:
            doc = hc.bcast(None, r)  # the root has the numbers; rank 0 prints them
            return doc if hc.rank == 0 else None
        pred = simulate(platform, sched).makespan * time_scale
        pred_bin = simulate(platform, sched_bin).makespan * time_scale
        doc = {
            "algorithm": algo,
            "operation": "bcast",
            "platform": platform.name,
            "ranks": hc.size,
            "root": root_id,
            "nbytes": nbytes,
            "segment_size": segment_size,
            "repeat": repeat,
            "emulate": emulate,
            "time_scale": time_scale,
            "measured_time": main.measured_time,
            "predicted_time": pred,
            "clock_time": main.clock_time,
            "ack_time": main.ack_time,
            "ratio": main.measured_time / pred if pred > 0 else None,
            "baselines": {
                "native": {"measured_time": native.measured_time},
                "binomial": {
                    "measured_time": binomial.measured_time,
                    "predicted_time": pred_bin,
                },
            },
            "method": METHOD,
            "tree": {p: list(c) for p, c in sched.tree.children.items()},
        }
        hc.bcast(doc, r)
        return doc if hc.rank == 0 else None


CUBE_METHOD = (
    "every rank starts at an agreed time (shared clock); the call lasts until the last rank "
    "returns; minimum (measured_time) and median over repetitions"
)


def run_cube_measurement(
    platform: Platform,
    *,
    collective: str,
    algo: str,
    nbytes: int,
    repeat: int,
    emulate: bool,
    time_scale: float,
    timeout: float,
) -> dict[str, Any] | None:
    """Measure the hypercube ``collective`` of ``algo``, of ``blind`` and MPI's own; the
    document on rank 0."""
    with HetComm(
        MPI.COMM_WORLD,
        platform,
        cube_algo=algo,
        emulate=emulate,
        timeout=timeout,
        time_scale=time_scale,
    ) as hc:
        main = measure_cube(hc, collective, nbytes, repeat)
        blind = measure_cube(hc, collective, nbytes, repeat, algo="blind")
        native = measure_cube(hc, collective, nbytes, repeat, native=True)
        # planning may check agreement (collective): every rank, before rank 0 reports
        sched = hc.schedule(nbytes=nbytes, collective=collective)
        pred = hc.predict(nbytes=nbytes, collective=collective)
        pred_blind = hc.predict(nbytes=nbytes, collective=collective, algo="blind")
        if hc.rank != 0:
            return None
        return {
            "algorithm": algo,
            "operation": collective,
            "platform": platform.name,
            "ranks": hc.size,
            "nbytes": nbytes,
            "repeat": repeat,
            "emulate": emulate,
            "time_scale": time_scale,
            "measured_time": main.measured_time,
            "median_time": main.median_time,
            "predicted_time": pred,
            "ratio": main.measured_time / pred if pred > 0 else None,
            "baselines": {
                "native": {
                    "measured_time": native.measured_time,
                    "median_time": native.median_time,
                },
                "blind": {
                    "measured_time": blind.measured_time,
                    "median_time": blind.median_time,
                    "predicted_time": pred_blind,
                },
            },
            "method": CUBE_METHOD,
            "embedding": list(sched.hypercube.positions),
            "folds": [list(f) for f in sched.hypercube.folds],
        }


def run_probe(
    *,
    platform: Platform | None,
    sizes: tuple[int, ...],
    repeat: int,
    rounds: int,
    serial: bool,
    model: str,
    tolerance: float,
    time_scale: float,
    timeout: float,
) -> dict[str, Any] | None:
    """Probe the communicator (emulating ``platform`` when given); the result on rank 0."""
    from ..platform import nodes_from_costs
    from .probe import probe

    world = MPI.COMM_WORLD
    emulate = platform is not None
    if platform is None:  # probe the real machine: a placeholder of the right size
        platform = Platform(nodes_from_costs([0.0] * world.size), name="placeholder")
    with HetComm(
        world, platform, "flat", emulate=emulate, timeout=timeout, time_scale=time_scale
    ) as hc:
        name = f"probed {hc.size} ranks" + (f" emulating {platform.name!r}" if emulate else "")
        res = probe(
            hc,
            sizes=sizes,
            repeat=repeat,
            rounds=rounds,
            serial=serial,
            model=model,
            tolerance=tolerance,
            name=name,
        )
        if hc.rank != 0:
            return None
        doc = res.to_dict()
        doc["emulated"] = platform.name if emulate else None
        if emulate:
            true_ini = platform.t_ini * time_scale
            true_byte = platform.t_byte * time_scale
            doc["t_ini_max_rel_error"] = (
                float((abs(res.platform.t_ini - true_ini) / true_ini).max())
                if (true_ini > 0).all()
                else None
            )
            doc["t_byte_max_rel_error"] = (
                float((abs(res.platform.t_byte - true_byte) / true_byte).max())
                if (true_byte > 0).all()
                else None
            )
        doc["_platform"] = res.platform
        return doc
