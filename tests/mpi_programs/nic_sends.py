"""MPI test program: emulating the ``nic`` model, a rank's sends are in flight together.

``mpiexec -n 4 python -m mpi4py nic_sends.py OUT``, on a star of four NICs (model ``nic``):

- the engine (``Executor`` on ``MPITransport``, emulated) runs a fan-out, rank 0 sending a
  256 KiB chunk to each other rank: the data arrive bit for bit, and rank 0's trace shows
  its sends in flight together (each next send started before the previous completed, as
  the simulator has it under ``concurrent_sends``);
- ``HetComm`` under emulation runs ``Allgather`` and ``Allreduce`` (int64 sum, bit for bit
  against mpi4py's own; float64 sum, the same bits on every rank) with ``forest`` (the
  trees' sends of a rank in flight together), ``blind`` and ``auto``.

Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import WORLD, Recorder
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform
from hetcoll.program import Chunk, Op, Program
from hetcoll.runtime.emulation import EmulatedTiming, Emulator
from hetcoll.runtime.executor import ByteRanges, Executor, rank_plan
from hetcoll.runtime.transport import MPITransport

N = 256 * 1024


def star() -> Platform:
    rates = ("8Gbps", "8Gbps", "4Gbps", "4Gbps")
    nodes = [{"id": str(i), "bandwidth": b, "latency": "5us"} for i, b in enumerate(rates)]
    return Platform.from_dict({"model": "nic", "nodes": nodes})


def fan_out(k: int) -> Program:
    chunks = tuple(Chunk(0, c * N, N) for c in range(k))
    ops = {"0": tuple(Op("send", str(i + 1), i) for i in range(k))}
    ops |= {str(i + 1): (Op("recv", "0", i),) for i in range(k)}
    initial = {"0": frozenset(range(k))} | {str(i + 1): frozenset() for i in range(k)}
    return Program(ops, chunks, initial)


def check_fan_out(rec: Recorder, p: Platform) -> None:
    me, k = WORLD.rank, WORLD.size - 1
    program = fan_out(k)
    rank_of = {str(r): r for r in range(WORLD.size)}
    want = (np.arange(k * N, dtype=np.int64) * 2654435761 % 251).astype(np.uint8)
    buf = want.copy() if me == 0 else np.zeros(k * N, np.uint8)
    comm = WORLD.Dup()
    ex = Executor(
        rank_plan(program, str(me), rank_of),
        ByteRanges(program.chunks, {0: memoryview(buf)}),
        MPITransport(comm, None, stamps=True),
        EmulatedTiming(Emulator(p, list(range(WORLD.size))), me),
    )
    trace = ex.run(ex.trace.entry + 60 * 10**9, None, "a fan-out")
    comm.Free()
    if me == 0:
        ok = True
    else:
        part = slice((me - 1) * N, me * N)
        ok = buf[part].tobytes() == want[part].tobytes()
    rec.case("fan-out data", ok)
    flying = me != 0 or all(trace.started[i + 1] < trace.done[i] for i in range(k - 1))
    rec.case("fan-out sends in flight together", flying, f"{trace.started} {trace.done}")


def check_collectives(rec: Recorder, p: Platform) -> None:
    me, n = WORLD.rank, WORLD.size
    with HetComm(WORLD, p, emulate=True, timeout=120) as hc:
        for algo in ("forest", "blind", "auto"):
            for count in (1, 1000, 40_000):
                mine = (np.arange(count, dtype=np.int64) * 7 + me * 1_000_003) % 65_521
                got, want = np.zeros(count * n, np.int64), np.zeros(count * n, np.int64)
                WORLD.Allgather(mine, want)
                hc.Allgather(mine, got, algo=algo)
                rec.case(f"{algo} Allgather int64 count={count}", got.tobytes() == want.tobytes())
                send = (np.arange(count, dtype=np.int64) * (me + 3)) % 9_973
                got, want = np.zeros(count, np.int64), np.zeros(count, np.int64)
                WORLD.Allreduce(send, want, MPI.SUM)
                hc.Allreduce(send, got, MPI.SUM, algo=algo)
                rec.case(f"{algo} Allreduce int64 count={count}", got.tobytes() == want.tobytes())
                floats = np.random.default_rng(me).standard_normal(count)
                got = np.zeros(count)
                hc.Allreduce(floats, got, MPI.SUM, algo=algo)
                first = WORLD.bcast(got.tobytes(), 0)
                rec.case(f"{algo} Allreduce float64 count={count}", got.tobytes() == first)


def main(out: str) -> None:
    rec = Recorder(out)
    p = star()
    check_fan_out(rec, p)
    check_collectives(rec, p)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1])
