"""MPI test program: ``HetComm`` running the planner ``butterfly_pipelined`` for
``Allreduce`` on a star of 25 and 10 Gbit/s NICs (model ``nic``: windows of sends per edge,
a staggered first segment).

``mpiexec -n K python -m mpi4py butterfly_runtime.py OUT``: a wrapper whose ``algo`` is
``butterfly_pipelined`` and a ``binomial`` one given it per call; int64 sums, BXOR and MAX,
float64 sums of small integers (exact in any order), counts 0, 1, 7, 5 000 and 2^17 (a
vector the planner cuts into segments), IN_PLACE; bit for bit against mpi4py's own, and
``last_call`` naming the planner.  Then the same through a wrapper of its phased cut
(``cut="phased"``: one send in flight per edge, ``chain="peer"``) on a star of 100, 25 and
10 Gbit/s NICs, and float64 sums of random reals the same bits on every rank; the same
through a wrapper of its cut under windows per edge and kind of flow (``cut="kind"``:
``chain="kind"``, reduce sends paced by the rank's combines) on the 25/10 Gbit/s star.
Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import WORLD, Recorder
from mpi4py import MPI

from hetcoll import HetComm, plan
from hetcoll.generators import star_platform

ALGO = "butterfly_pipelined"


def check(rec: Recorder, hc, tag: str, algo) -> None:
    me = WORLD.rank
    rng = np.random.default_rng(me)
    for count in (0, 1, 7, 5000, 1 << 17):
        for dtype, opname in (
            (np.int64, "SUM"),
            (np.int64, "BXOR"),
            (np.int64, "MAX"),
            (np.float64, "SUM"),
        ):
            op = getattr(MPI, opname)
            send = rng.integers(-50, 50, count).astype(dtype)
            got, want = np.full(count, -1, dtype), np.full(count, -1, dtype)
            WORLD.Allreduce(send, want, op)
            hc.Allreduce(send, got, op, algo=algo)
            last = hc.last_call
            ran = hc.size == 1 or (last is not None and last.algorithm == ALGO)
            ok = got.tobytes() == want.tobytes() and ran
            rec.case(f"{tag} Allreduce {np.dtype(dtype).name} {opname} count={count}", ok)
    buf = np.arange(1001, dtype=np.int64) * (me + 1)
    want = np.zeros_like(buf)
    WORLD.Allreduce(buf, want, MPI.SUM)
    hc.Allreduce(MPI.IN_PLACE, buf, MPI.SUM, algo=algo)
    rec.case(f"{tag} Allreduce IN_PLACE", buf.tobytes() == want.tobytes())


def main() -> None:
    rec = Recorder(sys.argv[1])
    p = star_platform(WORLD.size, ("25Gbps", "10Gbps"), "5us")
    with HetComm(WORLD, p, ALGO, timeout=120) as hc:
        check(rec, hc, "wrapper", None)
    with HetComm(WORLD, p, "binomial", timeout=120) as hc:
        check(rec, hc, "per call", ALGO)
    fast = star_platform(WORLD.size, ("100Gbps", "25Gbps", "10Gbps"), "5us")
    phased = {"cut": "phased"}
    count = 1 << 17
    s = plan(fast, None, method=ALGO, collective="allreduce", nbytes=8 * count,
             options={**phased, "align": 8})  # fmt: skip
    rec.case("phased schedule", s.chain == "peer" and max(f.chunks for f in s.flows) > 1)
    with HetComm(WORLD, fast, ALGO, options=phased, timeout=120) as hc:
        check(rec, hc, "phased", None)
        send = np.random.default_rng(WORLD.rank).standard_normal(count)
        got = np.empty(count)
        hc.Allreduce(send, got, MPI.SUM)
        first = WORLD.bcast(got.tobytes() if WORLD.rank == 0 else None, 0)
        rec.case("phased Allreduce float64 reals same on every rank", got.tobytes() == first)
    kind = {"cut": "kind"}
    s = plan(p, None, method=ALGO, collective="allreduce", nbytes=8 * count,
             options={**kind, "align": 8})  # fmt: skip
    rec.case("kind schedule", s.chain == "kind" and max(f.chunks for f in s.flows) > 1)
    with HetComm(WORLD, p, ALGO, options=kind, timeout=120) as hc:
        check(rec, hc, "kind", None)
        send = np.random.default_rng(WORLD.rank).standard_normal(count)
        got = np.empty(count)
        hc.Allreduce(send, got, MPI.SUM)
        first = WORLD.bcast(got.tobytes() if WORLD.rank == 0 else None, 0)
        rec.case("kind Allreduce float64 reals same on every rank", got.tobytes() == first)
    rec.write()


if __name__ == "__main__":
    main()
