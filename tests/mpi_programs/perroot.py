"""MPI test program: per-root schedules (allgather, reduce-scatter, allreduce as every
member's block over trees of its own) run by the engine, against numpy's results.

``mpiexec -n K python -m mpi4py perroot.py OUT``: random trees per root (seeded, the same
on every rank), several flows per root, segments, blocks of 0, 1 and odd sizes; int64 sums
bit for bit, float64 sums the same bits on every rank.  Rank 0 writes one JSON record per
case to OUT.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

from hetcoll import HetcollError, HetComm
from hetcoll.generators import star_platform
from hetcoll.planners.butterfly import balanced
from hetcoll.planners.butterflypipe import butterfly_pipelined
from hetcoll.planners.forestplan import forest
from hetcoll.planners.recursive import bruck, halving, rabenseifner
from hetcoll.planners.rings import ring
from hetcoll.platform import Node, Platform
from hetcoll.runtime.rank_ops import ByteRanges
from hetcoll.runtime.reduce import RangeReduceHandler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _perroot import random_per_root

WORLD = MPI.COMM_WORLD


def platform(n: int) -> Platform:
    nodes = tuple(Node(str(i), (1 if i % 3 else 4) * 1e-6, 1e-9, gamma=1e-9) for i in range(n))
    return Platform(nodes, model="tini", name="two speeds")


def run_case(hc, sched, collective: str, block: int, seed: int, label: str, records) -> None:
    """Run ``sched`` through the engine and record whether every rank got numpy's result."""
    n, me = WORLD.size, WORLD.rank
    nodes = [str(i) for i in range(n)]
    blk = block if collective == "allgather" else block // 8 * 8
    offsets = sched.block_offsets() if collective != "allreduce" else None
    rng = np.random.default_rng(seed * 100 + me)
    if collective == "allgather":
        mine = rng.integers(0, 256, size=block, dtype=np.uint8)
        buf = np.zeros(block * n, np.uint8)
        at = offsets[nodes[me]]
        buf[at : at + block] = mine
        hc.run(sched, ByteRanges(sched.program().chunks, {0: memoryview(buf)}))
        blocks = WORLD.allgather(mine)
        ok = all(
            np.array_equal(buf[offsets[v] : offsets[v] + block], blocks[r])
            for r, v in enumerate(nodes)
        )
        records.append((f"{label} allgather seed={seed} block={block}", ok))
        return
    count = blk * n // 8 if collective == "reduce_scatter" else blk // 8
    for dtype, mpitype in ((np.int64, MPI.INT64_T), (np.float64, MPI.DOUBLE)):
        vec = rng.integers(-9, 9, size=count) * (1.5 if dtype is np.float64 else 1)
        vec = vec.astype(dtype)
        work = np.frombuffer(vec.tobytes(), np.uint8).copy()
        prog = sched.program()
        hc.run(sched, RangeReduceHandler(prog, work, MPI.SUM, mpitype, 8))
        total = np.zeros(count, dtype)
        WORLD.Allreduce(vec, total, MPI.SUM)
        got = np.frombuffer(work.tobytes(), dtype)
        if collective == "allreduce":
            if dtype is np.int64:
                ok = np.array_equal(got, total)
            else:
                first = WORLD.bcast(got, 0)
                ok = np.array_equal(got, first) and np.allclose(got, total)
        else:
            lo = offsets[nodes[me]] // 8
            ok = np.allclose(got[lo : lo + blk // 8], total[lo : lo + blk // 8])
            if dtype is np.int64:
                ok = np.array_equal(got[lo : lo + blk // 8], total[lo : lo + blk // 8])
        records.append((f"{label} {collective} seed={seed} block={block} {dtype.__name__}", ok))


def main(out: str) -> None:
    n = WORLD.size
    records = []
    with HetComm(WORLD, platform(n), timeout=60) as hc:
        nodes = [str(i) for i in range(n)]
        for seed, block, seg in ((1, 0, None), (2, 1, None), (3, 37, 8), (4, 1000, 96)):
            for collective in ("allgather", "reduce_scatter", "allreduce"):
                step = 1 if collective == "allgather" else 8
                blk = block if collective == "allgather" else block // 8 * 8
                sched = random_per_root(nodes, collective, blk, seed, seg, step)
                run_case(hc, sched, collective, block, seed, "random", records)
        # forest's schedules carry each rank's send order (slots of a play-out): the
        # engine must keep it without deadlock and deliver the same data
        for collective in ("allgather", "reduce_scatter", "allreduce"):
            if n < 2:
                break
            align = 1 if collective == "allgather" else 8
            sched = forest(
                platform(n), nbytes=4000, collective=collective, align=align, segment_size=400
            )
            run_case(hc, sched, collective, 4000, 5, "forest", records)
            # the ring's order: MPICH's steps, every rank's sends after its receives
            sched = ring(platform(n), nbytes=4000, collective=collective, align=align)
            run_case(hc, sched, collective, 4000, 6, "ring", records)
            # MPICH's log-step algorithms: several blocks of one step in one message
            if collective == "allgather":
                sched = bruck(platform(n), nbytes=4000)
            elif collective == "reduce_scatter":
                sched = halving(platform(n), nbytes=4000)
            else:
                sched = rabenseifner(platform(n), nbytes=4000, align=align)
            run_case(hc, sched, collective, 4000, 7, sched.algorithm, records)
            if collective == "allreduce":  # uneven shares (the platform's two speeds)
                sched = balanced(platform(n), nbytes=4000, align=align)
                run_case(hc, sched, collective, 4000, 8, "balanced", records)
                # pipelined on a star of NICs: windows of sends per edge, a staggered start
                star = star_platform(n, ("25Gbps", "10Gbps"), "5us")
                sched = butterfly_pipelined(star, nbytes=4000, align=align, segment_size=200)
                run_case(hc, sched, collective, 4000, 9, "butterfly_pipelined", records)
    if n > 2:  # a ring with relays (a line: no link from the last rank to the first)
        line = Platform.from_dict(
            {"model": "multi_port", "nodes": [{"id": str(i)} for i in range(n)],
             "links": [{"u": str(i), "v": str(i + 1), "bandwidth": 1e9} for i in range(n - 1)]}
        )  # fmt: skip
        with HetComm(WORLD, line, algo="ring", timeout=60) as hc:
            try:
                hc.Allgather(np.zeros(4, np.uint8), np.zeros(4 * n, np.uint8))
                refused = False
            except HetcollError as exc:
                refused = "relays a block through" in str(exc)
            records.append(("ring with relays refused by the engine", refused))
    verdicts = WORLD.gather(records, 0)
    if WORLD.rank == 0:
        with open(out, "w") as fh:
            for k, (name, _) in enumerate(verdicts[0]):
                bad = [r for r, recs in enumerate(verdicts) if not recs[k][1]]
                fh.write(json.dumps({"case": name, "ok": not bad, "bad": bad}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
