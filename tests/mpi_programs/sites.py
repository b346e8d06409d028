"""MPI test program: the planner ``sites`` on two sites of two hosts (4 ranks; 6 ranks:
three hosts per site and two WAN senders per site, ``senders=2``) run by the engine,
against numpy's results.

``mpiexec -n 4 python -m mpi4py sites.py OUT`` (or ``-n 6``): allgather (blocks of 0, 1
and odd sizes, equal and uneven), reduce-scatter and allreduce (int64 sums bit for bit,
float64 sums the same bits on every rank), whole and in segments, in the trees' order and
in a timetable (planners/sitesorder.py; a reduce-scatter also as an allgather's timetable
run backwards, an allreduce as both, or its reduce phase as its own reduce trees' play-out
run backwards), some blocks in half segments (``ends``), and each plan's WAN senders.
Rank ``r`` runs host ``r`` of the multi-site platform (its switches route, no rank of
their own).  Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import functools
import sys

import numpy as np
from _report import Recorder
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.generators import hosts, multisite_platform, star_platform
from hetcoll.planners.sites import sites as plan_sites
from hetcoll.planners.sitesorder import allreduce_timetable, reversed_timetable, timetable
from hetcoll.platform import Node, Platform
from hetcoll.runtime.rank_ops import ByteRanges
from hetcoll.runtime.reduce import RangeReduceHandler

WORLD = MPI.COMM_WORLD


def two_sites(per_site: int) -> Platform:
    site = star_platform(per_site, ("25Gbps", "10Gbps"), "5us")
    return multisite_platform({"a": site, "b": site}, [("a", "b", "1ms", "5Gbps")])


def allgather(hc, sched, nodes, sizes, records: Recorder, label) -> None:
    me = WORLD.rank
    offsets = sched.block_offsets()
    rng = np.random.default_rng(7 + me)
    mine = rng.integers(0, 256, size=sizes[nodes[me]], dtype=np.uint8)
    buf = np.zeros(sum(sizes.values()), np.uint8)
    at = offsets[nodes[me]]
    buf[at : at + len(mine)] = mine
    hc.run(sched, ByteRanges(sched.program().chunks, {0: memoryview(buf)}))
    blocks = WORLD.allgather(mine)
    ok = all(
        np.array_equal(buf[offsets[v] : offsets[v] + sizes[v]], blocks[r])
        for r, v in enumerate(nodes)
    )
    records.case(label, ok)


def reduction(hc, sched, nodes, collective, count, records: Recorder, label) -> None:
    """``count`` elements: the allreduce's vector, the reduce-scatter's input."""
    me = WORLD.rank
    rng = np.random.default_rng(11 + me)
    for dtype, mpitype in ((np.int64, MPI.INT64_T), (np.float64, MPI.DOUBLE)):
        vec = (rng.integers(-9, 9, size=count) * (1.5 if dtype is np.float64 else 1)).astype(dtype)
        work = np.frombuffer(vec.tobytes(), np.uint8).copy()
        hc.run(sched, RangeReduceHandler(sched.program(), work, MPI.SUM, mpitype, 8))
        total = np.zeros(count, dtype)
        WORLD.Allreduce(vec, total, MPI.SUM)
        got = np.frombuffer(work.tobytes(), dtype)
        if collective == "reduce_scatter":
            lo = sched.block_offsets()[nodes[me]] // 8
            hi = lo + count // len(nodes)
            got, total = got[lo:hi], total[lo:hi]
        if dtype is np.int64:
            ok = np.array_equal(got, total)
        elif collective == "reduce_scatter":  # each rank its own block
            ok = np.allclose(got, total)
        else:
            first = WORLD.bcast(got, 0)
            ok = np.array_equal(got, first) and np.allclose(got, total)
        records.case(f"{label} {dtype.__name__}", ok)


def main(out: str) -> None:
    assert WORLD.size in (4, 6), "run on 4 or 6 ranks"
    p = two_sites(WORLD.size // 2)
    nodes = hosts(p)
    k = len(nodes)
    # 6 ranks: two WAN senders per site (each site's slow members), every plan below
    two = k == 6
    sites = functools.partial(plan_sites, senders=2) if two else plan_sites
    # the engine's ranks are the hosts (a platform of them alone: it only runs schedules)
    ranks = Platform(tuple(Node(v, 1e-6, 1e-9) for v in nodes), model="tini")
    records = Recorder(out)
    with HetComm(WORLD, ranks, timeout=60) as hc:
        for block, seg in ((0, None), (1, None), (37, None), (4000, 256), (4001, 1000)):
            sched = sites(p, nbytes=block, segment_size=seg)
            allgather(hc, sched, nodes, dict.fromkeys(nodes, block), records,
                      f"allgather block={block} seg={seg}")  # fmt: skip
        sched = timetable(p, sites(p, nbytes=4001, segment_size=1000))
        allgather(hc, sched, nodes, dict.fromkeys(nodes, 4001), records, "allgather timetable")
        uneven = dict(zip(nodes, (5, 0, 300, 17, 1, 64)[:k], strict=True))
        sched = sites(p, sizes=uneven, segment_size=64)
        allgather(hc, sched, nodes, uneven, records, "allgather uneven")
        sched = timetable(p, sched)
        allgather(hc, sched, nodes, uneven, records, "allgather uneven timetable")
        for collective in ("reduce_scatter", "allreduce"):  # 1024 int64 / float64 a rank
            each = 1024 * k * 8 if collective == "allreduce" else 1024 * 8
            sched = timetable(p, sites(p, nbytes=each, collective=collective, segment_size=2048,
                                       align=8))  # fmt: skip
            reduction(hc, sched, nodes, collective, 1024 * k, records, f"{collective} timetable")
        sched = reversed_timetable(p, sites(p, nbytes=1024 * 8, segment_size=2048, align=8))
        reduction(hc, sched, nodes, "reduce_scatter", 1024 * k, records,
                  "reduce_scatter reversed")  # fmt: skip
        sched = sites(p, nbytes=4096 * 8, collective="allreduce", segment_size=2048, align=8)
        reduction(hc, allreduce_timetable(p, sched), nodes, "allreduce", 4096, records,
                  "allreduce reversed then forwards")  # fmt: skip
        site = {v: p.node(v).site for v in nodes}
        crossers = {u for fl in sched.flows for u, kids in fl.tree.children.items()
                    for c in kids if site[u] != site[c]}  # fmt: skip
        records.case("WAN senders per site", sched.params["senders"] == (2 if two else 1)
                     and len(crossers) == (4 if two else 2))  # fmt: skip
        reduction(hc, allreduce_timetable(p, sched, own=True), nodes, "allreduce", 4096, records,
                  "allreduce own reduce trees backwards then forwards")  # fmt: skip
        for half in (1, 2):  # some blocks (each site's last member's, leader's) in half segments
            sched = timetable(p, sites(p, nbytes=4001, segment_size=1000, ends=half))
            allgather(hc, sched, nodes, dict.fromkeys(nodes, 4001), records,
                      f"allgather ends={half}")  # fmt: skip
            for collective in ("reduce_scatter", "allreduce"):
                each = 1024 * k * 8 if collective == "allreduce" else 1024 * 8
                sched = sites(p, nbytes=each, collective=collective, segment_size=2048, align=8,
                              ends=half)  # fmt: skip
                reduction(hc, timetable(p, sched), nodes, collective, 1024 * k, records,
                          f"{collective} ends={half}")  # fmt: skip
        for count, seg in ((1, None), (13, None), (1000, 800), (4096, 2048)):
            for collective in ("reduce_scatter", "allreduce"):
                each = count * 8 if collective == "allreduce" else count // k * 8
                sched = sites(p, nbytes=each, collective=collective, segment_size=seg, align=8)
                n = count if collective == "allreduce" else count // k * k
                if n:
                    reduction(hc, sched, nodes, collective, n, records,
                              f"{collective} count={n} seg={seg}")  # fmt: skip
    records.write()


if __name__ == "__main__":
    main(sys.argv[1])
