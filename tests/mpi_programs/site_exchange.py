"""MPI test program: the planner ``site_exchange`` (each site's partial sums swapped by the
sites' owners over the WAN at once) on 4 ranks as two sites of two hosts, two sites of
one and three hosts and three sites of 2, 1 and 1, run by the engine with the handler of
``HetComm``'s per-root allreduce (:class:`hetcoll.runtime.perroot.PerRootReduce`, told
its node), against mpi4py's results.

``mpiexec -n 4 python -m mpi4py site_exchange.py OUT``: allreduce of int64 (bit for bit
mpi4py's sum) and float64 (the same bits on every rank, close to mpi4py's sum) of 1 to
131072 elements, whole and in segments, heaps of 3 and chains, every place crossing the WAN
or the leaders alone (in one size of segments or ramped), and the plan chosen by the
planner for a 1 MiB vector.  Rank ``r`` runs host ``r`` of the multi-site platform (its
switches route, no rank of their own).  Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners.siteexchange import exchange_flows, ramp, site_exchange
from hetcoll.planners.sites import site_groups
from hetcoll.platform import Node, Platform
from hetcoll.runtime.perroot import PerRootReduce
from hetcoll.schedule import Schedule

WORLD = MPI.COMM_WORLD


def platforms() -> dict[str, Platform]:
    """Two sites of two hosts; of one and three; three sites of 2, 1 and 1."""
    two = star_platform(2, ("25Gbps", "10Gbps"), "5us")
    one = star_platform(1, ("10Gbps",), "5us")
    three = star_platform(3, ("25Gbps", "10Gbps"), "5us")
    return {
        "two sites": multisite_platform({"a": two, "b": two}, [("a", "b", "1ms", "5Gbps")]),
        "one and three": multisite_platform({"a": one, "b": three}, [("a", "b", "1ms", "5Gbps")]),
        "three sites": multisite_platform(
            {"a": two, "b": one, "c": one},
            [("a", "b", "1ms", "5Gbps"), ("b", "c", "2ms", "1Gbps")],
        ),
    }


def reduction(hc, sched, nodes, count, records: Recorder, label) -> None:
    """An allreduce of ``count`` elements of each rank's random vector."""
    me = WORLD.rank
    rng = np.random.default_rng(11 + me)
    program = sched.program()
    for dtype, mpitype in ((np.int64, MPI.INT64_T), (np.float64, MPI.DOUBLE)):
        if dtype is np.int64:
            vec = rng.integers(-(1 << 40), 1 << 40, size=count, dtype=np.int64)
        else:
            vec = rng.standard_normal(count) * 10.0 ** rng.integers(-8, 8, size=count)
        work = np.frombuffer(vec.tobytes(), np.uint8).copy()
        handler = PerRootReduce(program, work, MPI.SUM, mpitype, 8, len(nodes), None, nodes[me])
        hc.run(sched, handler)
        total = np.zeros(count, dtype)
        WORLD.Allreduce(vec, total, MPI.SUM)
        got = np.frombuffer(work.tobytes(), dtype)
        if dtype is np.int64:
            ok = np.array_equal(got, total)
        else:
            first = WORLD.bcast(got, 0)
            ok = got.tobytes() == first.tobytes() and np.allclose(got, total, rtol=1e-12)
        records.case(f"{label} {dtype.__name__}", bool(ok))


def cases(hc, p: Platform, name: str, records: Recorder) -> None:
    nodes = hosts(p)
    for count, seg in ((1, None), (13, None), (1000, 800), (4096, 2048), (4096, 512)):
        for fanout in (3, 1):
            sched = site_exchange(p, nbytes=count * 8, segment_size=seg, align=8, fanout=fanout)
            reduction(hc, sched, nodes, count, records,
                      f"{name}: count={count} seg={seg} fanout={fanout}")  # fmt: skip
    for count, seg in ((4096, 2048), (1000, 96)):  # the leaders alone cross, a chain
        sched = site_exchange(p, nbytes=count * 8, segment_size=seg, align=8, crossers=1)
        reduction(hc, sched, nodes, count, records, f"{name}: count={count} seg={seg} leaders")
    groups = site_groups(p, nodes)
    for count, cuts in (
        (1000, ramp(8000, 8, 1000, 16, 8)),
        (4096, ramp(32768, 1024, 8192, 512, 8)),
    ):
        flows = exchange_flows(groups, count * 8, 8, 1, max(cuts), 1, cuts)  # the leaders' ramp
        sched = Schedule("allreduce", "site_exchange", count * 8, tuple(flows))
        reduction(hc, sched, nodes, count, records, f"{name}: count={count} leaders, ramp")
    chosen = site_exchange(p, nbytes=1 << 20, align=8)  # 131072 elements
    reduction(hc, chosen, nodes, 1 << 17, records, f"{name}: 1 MiB chosen")


def main(out: str) -> None:
    assert WORLD.size == 4, "run on 4 ranks"
    records = Recorder(out)
    for name, p in platforms().items():
        # the engine's ranks are the hosts (a platform of them alone: it only runs schedules)
        ranks = Platform(tuple(Node(v, 1e-6, 1e-9) for v in hosts(p)), model="tini")
        with HetComm(WORLD, ranks, timeout=60) as hc:
            cases(hc, p, name, records)
    records.write()


if __name__ == "__main__":
    main(sys.argv[1])
