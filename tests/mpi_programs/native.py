"""MPI test program: ``mpiexec -n K python -m mpi4py native.py OUT``.

MPI's own collectives as hetcoll models them (:mod:`hetcoll.mpich`): every MPICH
algorithm's program, run by the engine (natively and under emulation), delivers what
MPI's own collective delivers, every byte; and ``HetComm``'s default (``auto``) gives
mpi4py's results whether it passes a call to MPI or runs a plan.  Rank 0 writes one JSON
record per case (every rank's verdict gathered first).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetcollError, HetComm, Platform
from hetcoll.mpich import ALGORITHMS, native
from hetcoll.platform import nodes_from_costs
from hetcoll.runtime.executor import ByteRanges
from hetcoll.runtime.reduce import GatherHandler, RangeReduceHandler, ReduceHandler

WORLD = MPI.COMM_WORLD
me, nranks = WORLD.rank, WORLD.size
records: list[dict] = []


def platform(scale: float = 20e-6) -> Platform:
    """Fast and slow nodes interleaved (so that a plan can beat MPI's rank order)."""
    t_ini = np.where(np.arange(nranks) % 2, 4.0, 1.0) * scale
    return Platform(nodes_from_costs(t_ini, 1e-10), model="tini", name=f"native{nranks}")


def case(name: str, ok: bool, **info) -> None:
    verdicts = WORLD.gather(bool(ok), 0)
    if me == 0:
        bad = [r for r, v in enumerate(verdicts) if not v]
        records.append({"case": name, "ok": not bad, "bad": bad, **info})


def programs(hc: HetComm, tag: str) -> None:
    """Every algorithm's program, through ``hc.run``, against MPI's own result."""
    pof2 = nranks & (nranks - 1) == 0
    for algo in ALGORITHMS["bcast"]:
        if algo == "scatter_recursive_doubling_allgather" and not pof2:
            continue
        for nbytes in (0, 1, 97, 12289, 65536 + 13):
            for root in sorted({0, nranks - 1, nranks // 2}):
                nat = native("bcast", hc.nodes, nbytes, root=root, algorithm=algo)
                want = (np.arange(nbytes) * 7 + root) % 251
                buf = want.astype(np.uint8) if me == root else np.full(nbytes, 0xEE, np.uint8)
                hc.run(nat.program, ByteRanges(nat.program.chunks, {0: memoryview(buf)}))
                case(f"{tag} bcast {algo} n={nbytes} root={root}", np.array_equal(buf, want))
    for algo in ALGORITHMS["allreduce"]:
        for count in (1, 8, 1000, 4099):
            if algo == "reduce_scatter_allgather" and count < 1 << (nranks.bit_length() - 1):
                continue
            for dtype, mpitype, op in (
                (np.int64, MPI.INT64_T, MPI.SUM),
                (np.int32, MPI.INT, MPI.MAX),
            ):
                mine = ((np.arange(count) * (me + 3)) % 1009).astype(dtype)
                want = np.empty_like(mine)
                WORLD.Allreduce(mine, want, op=op)
                name = "sum" if op == MPI.SUM else "max"
                nat = native(
                    "allreduce", hc.nodes, mine.nbytes, count=count, op=name, algorithm=algo
                )
                if nat.kind == "cube":
                    h = ReduceHandler(nat.program, hc.node, mine.tobytes(), op, count, mpitype)
                    hc.run(nat.program, h)
                    got = np.frombuffer(memoryview(h.state).cast("B"), dtype=dtype)
                else:
                    work = np.frombuffer(mine.tobytes(), dtype=np.uint8).copy()
                    h = RangeReduceHandler(nat.program, work, op, mpitype, mine.itemsize)
                    hc.run(nat.program, h)
                    got = work.view(dtype)
                case(f"{tag} allreduce {algo} count={count} {name}", np.array_equal(got, want))
    for algo in ("recursive_doubling", "ring"):
        if algo == "recursive_doubling" and not pof2:
            continue
        for nbytes in (1, 40, 3001):
            mine = ((np.arange(nbytes) + 11 * me) % 253).astype(np.uint8)
            want = np.empty(nbytes * nranks, dtype=np.uint8)
            WORLD.Allgather(mine, want)
            nat = native("allgather", hc.nodes, nbytes, algorithm=algo)
            if nat.kind == "cube":
                sizes = dict.fromkeys(hc.nodes, nbytes)
                h = GatherHandler(nat.program, hc.node, memoryview(mine), sizes)
                hc.run(nat.program, h)
                blocks = h.blocks()
                got = np.concatenate([np.frombuffer(blocks[v], np.uint8) for v in hc.nodes])
            else:
                got = np.zeros(nbytes * nranks, dtype=np.uint8)
                got[me * nbytes : (me + 1) * nbytes] = mine
                hc.run(nat.program, ByteRanges(nat.program.chunks, {0: memoryview(got)}))
            case(f"{tag} allgather {algo} n={nbytes}", np.array_equal(got, want))
    nat = native("barrier", hc.nodes, 0)
    hc.run(nat.program, ByteRanges(nat.program.chunks, {0: memoryview(bytearray(0))}))
    case(f"{tag} barrier dissemination", True)


def defaults(hc: HetComm, tag: str) -> None:
    """The wrapper's default choice per call: mpi4py's results, and what was chosen."""
    for nbytes in (0, 8, 1000, 20000, 600000):
        for root in sorted({0, nranks - 1}):
            want = (np.arange(nbytes) * 3 + root + 1) % 251
            buf = want.astype(np.uint8) if me == root else np.zeros(nbytes, np.uint8)
            hc.Bcast(buf, root)
            choice = hc.last_choice.algorithm
            hc.Bcast(buf, root)  # again: the quick look-up of a call MPI keeps
            case(f"{tag} Bcast n={nbytes} root={root}", np.array_equal(buf, want), choice=choice)
    for count in (1, 3, 1000, 100003):
        mine = ((np.arange(count) * (me + 1)) % 997).astype(np.float64)
        want = np.empty_like(mine)
        WORLD.Allreduce(mine, want, op=MPI.SUM)
        got = np.empty_like(mine)
        hc.Allreduce(mine, got, op=MPI.SUM)
        choice = hc.last_choice.algorithm
        inplace = mine.copy()
        hc.Allreduce(None, inplace, op=MPI.SUM)
        ok = np.array_equal(got, want) and np.array_equal(inplace, want)
        case(f"{tag} Allreduce count={count}", ok, choice=choice)
    for nbytes in (4, 5000):
        mine = np.full(nbytes, me + 1, dtype=np.uint8)
        got = np.zeros(nbytes * nranks, dtype=np.uint8)
        hc.Allgather(mine, got)
        want = np.repeat(np.arange(1, nranks + 1, dtype=np.uint8), nbytes)
        case(
            f"{tag} Allgather n={nbytes}",
            np.array_equal(got, want),
            choice=hc.last_choice.algorithm,
        )
    obj = {"rank": 0, "data": list(range(50))}
    got = hc.bcast(obj if me == 0 else None, root=0)
    case(f"{tag} bcast object", got == obj)
    case(f"{tag} allgather object", hc.allgather(me) == list(range(nranks)))
    case(f"{tag} allreduce object", hc.allreduce(me) == sum(range(nranks)))
    hc.barrier()
    case(f"{tag} barrier", True, choice=hc.last_choice.algorithm)
    c = hc.choice("bcast", 1 << 20)
    case(f"{tag} choice", c.algorithm is not None, choice=c.to_dict())


def tuned(p: Platform) -> None:
    """A tuning file's rules run, whatever the model would choose."""
    rules = {
        "bcast": [
            {"from_bytes": 0, "algorithm": "mpi"},
            {"from_bytes": 1000, "algorithm": "chain", "segment_size": 4096},
        ],
        "barrier": [{"from_bytes": 0, "algorithm": "blind"}],
    }
    tuning = {"format": "hetcoll-tuning", "version": 1, "ranks": nranks, "rules": rules}
    for emulate in (False, True):
        tag = "tuned-emulated" if emulate else "tuned-native"
        with HetComm(WORLD, p, emulate=emulate, time_scale=0.05, tuning=tuning) as hc:
            for nbytes, want in ((10, "mpi"), (50000, "chain")):
                buf = np.arange(nbytes, dtype=np.uint8) if me == 0 else np.zeros(nbytes, np.uint8)
                hc.Bcast(buf, 0)
                c = hc.last_choice
                seg = hc.last_schedule.flows[0].segment_size if want == "chain" else None
                ok = np.array_equal(buf, np.arange(nbytes, dtype=np.uint8)) and c.algorithm == want
                ok = ok and c.source == "tuning" and seg == (4096 if want == "chain" else None)
                case(f"{tag} Bcast n={nbytes}", ok, choice=c.algorithm)
            hc.barrier()
            ok = hc.last_choice.algorithm == "blind" and hc.last_choice.source == "tuning"
            case(f"{tag} barrier", ok, choice=hc.last_choice.algorithm)
            got = np.empty(3)
            hc.Allreduce(np.ones(3), got)  # no rule: on one host MPI's, emulated the model's
            want = "model" if emulate else "one host"
            case(f"{tag} Allreduce", hc.last_choice.source == want and all(got == nranks))
    bad = dict(tuning, ranks=nranks + 1)
    try:
        HetComm(WORLD, p, tuning=bad)
        case("tuning for another size is refused", False)
    except HetcollError as exc:
        case("tuning for another size is refused", "measured on" in str(exc))


def main(out: str) -> None:
    p = platform()
    with HetComm(WORLD, p, "mpi", timeout=60) as hc:
        programs(hc, "native")
    with HetComm(WORLD, p, "mpi", emulate=True, time_scale=0.05, timeout=60) as hc:
        programs(hc, "emulated")
    for emulate in (False, True):
        tag = "auto-emulated" if emulate else "auto-native"
        with HetComm(WORLD, p, emulate=emulate, time_scale=0.05, timeout=60) as hc:
            defaults(hc, tag)
        tag = "mpi-emulated" if emulate else "mpi-native"
        with HetComm(WORLD, p, "mpi", emulate=emulate, time_scale=0.05, timeout=60) as hc:
            defaults(hc, tag)
    tuned(p)
    if me == 0:
        with open(out, "w") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
