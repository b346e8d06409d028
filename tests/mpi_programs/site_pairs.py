"""MPI test program: the planner ``site_pairs`` (every host crossing the WAN to its
counterpart) on 4 ranks as two sites of two hosts and as three sites of 2, 1 and 1, run by
the engine, against numpy's results.

``mpiexec -n 4 python -m mpi4py site_pairs.py OUT``: allgather (blocks of 0, 1 and odd
sizes, equal and uneven), reduce-scatter and allreduce (int64 sums bit for bit, float64
sums the same bits on every rank), whole and in segments, in the trees' order and in a
timetable (planners/sitesorder.py; a reduce-scatter also as an allgather's timetable run
backwards, an allreduce as both), and the plan chosen by the planner for a 1 MiB
allreduce.  Rank ``r`` runs host ``r`` of the multi-site platform (its switches route, no
rank of their own).  Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

from _report import Recorder
from mpi4py import MPI
from sites import allgather, reduction

from hetcoll import HetComm
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners.sitepairs import site_pairs
from hetcoll.planners.sitesorder import allreduce_timetable, reversed_timetable, timetable
from hetcoll.platform import Node, Platform

WORLD = MPI.COMM_WORLD


def platforms() -> dict[str, Platform]:
    """Two sites of two hosts; three sites of 2, 1 and 1 (a chain of WAN links)."""
    two = star_platform(2, ("25Gbps", "10Gbps"), "5us")
    one = star_platform(1, ("10Gbps",), "5us")
    return {
        "two sites": multisite_platform({"a": two, "b": two}, [("a", "b", "1ms", "5Gbps")]),
        "three sites": multisite_platform(
            {"a": two, "b": one, "c": one},
            [("a", "b", "1ms", "5Gbps"), ("b", "c", "2ms", "1Gbps")],
        ),
    }


def cases(hc, p: Platform, name: str, records: Recorder) -> None:
    nodes = hosts(p)
    k = len(nodes)
    for block, seg in ((0, None), (1, None), (37, None), (4000, 256), (4001, 1000)):
        sched = site_pairs(p, nbytes=block, segment_size=seg)
        allgather(hc, sched, nodes, dict.fromkeys(nodes, block), records,
                  f"{name}: allgather block={block} seg={seg}")  # fmt: skip
    sched = timetable(p, site_pairs(p, nbytes=4001, segment_size=1000))
    allgather(hc, sched, nodes, dict.fromkeys(nodes, 4001), records,
              f"{name}: allgather timetable")  # fmt: skip
    uneven = dict(zip(nodes, (5, 0, 300, 17), strict=True))
    sched = site_pairs(p, sizes=uneven, segment_size=64)
    allgather(hc, sched, nodes, uneven, records, f"{name}: allgather uneven")
    sched = timetable(p, sched)
    allgather(hc, sched, nodes, uneven, records, f"{name}: allgather uneven timetable")
    for collective in ("reduce_scatter", "allreduce"):  # 1024 int64 / float64 a rank
        each = 1024 * k * 8 if collective == "allreduce" else 1024 * 8
        sched = timetable(p, site_pairs(p, nbytes=each, collective=collective, segment_size=2048,
                                        align=8))  # fmt: skip
        label = f"{name}: {collective} timetable"
        reduction(hc, sched, nodes, collective, 1024 * k, records, label)
    sched = reversed_timetable(p, site_pairs(p, nbytes=1024 * 8, segment_size=2048, align=8))
    reduction(hc, sched, nodes, "reduce_scatter", 1024 * k, records,
              f"{name}: reduce_scatter reversed")  # fmt: skip
    sched = site_pairs(p, nbytes=4096 * 8, collective="allreduce", segment_size=2048, align=8)
    reduction(hc, allreduce_timetable(p, sched), nodes, "allreduce", 4096, records,
              f"{name}: allreduce reversed then forwards")  # fmt: skip
    for count, seg in ((1, None), (13, None), (1000, 800), (4096, 2048)):
        for collective in ("reduce_scatter", "allreduce"):
            each = count * 8 if collective == "allreduce" else count // k * 8
            sched = site_pairs(p, nbytes=each, collective=collective, segment_size=seg, align=8)
            n = count if collective == "allreduce" else count // k * k
            if n:
                reduction(hc, sched, nodes, collective, n, records,
                          f"{name}: {collective} count={n} seg={seg}")  # fmt: skip
    chosen = site_pairs(p, nbytes=1 << 20, collective="allreduce", align=8)  # 131072 int64
    reduction(hc, chosen, nodes, "allreduce", 1 << 17, records, f"{name}: allreduce 1 MiB chosen")


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
