"""MPI test program: buffers typed as mpi4py types them, and calls refused on one rank.

``mpiexec -n K python -m mpi4py refusals.py OUT``:

- complex long double arrays seen only through DLPack as mpi4py's own tests export them
  (two lanes of a 128-bit float) in ``Gatherv``, ``Allgatherv``, ``Scatterv``, ``Gather``
  and ``Reduce`` planned by HetComm, bit for bit against mpi4py's own on the same ranks;
- a call whose arguments are wrong on one rank only (the root's receive buffer too small
  for its ``Gatherv``; a non-root's unknown datatype in ``Reduce``; a read-only receive
  buffer in ``Bcast``, a send buffer longer than the receive buffer in ``Allreduce``, a
  receive buffer too small in ``Allgather``), with ``check="data"``
  and ``"always"``: that rank raises its own error, every other rank ``MismatchError``
  naming the refusal (in the call, or with ``check="data"`` after its next call when it
  had completed the refused one without that rank), no rank waits for the timeout, and
  the wrapper's next calls are right on every rank.

Rank 0 writes one JSON record per case to OUT.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _report import Recorder
from mpi4py import MPI
from rooted import WORLD, platform

sys.path.insert(0, str(Path(__file__).parents[1]))
from _dlpack import FLOAT, DLPackTensor
from hetcoll import HetComm
from hetcoll.errors import CollectiveTimeoutError, HetcollError, MismatchError

CLD = np.clongdouble


def lanes(a: np.ndarray) -> DLPackTensor:
    """``a`` (complex long double) exported as mpi4py's tests export it."""
    return DLPackTensor(a, FLOAT, 8 * np.dtype(np.longdouble).itemsize, 2)


def values(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(CLD) / 3


def check_long_double_complex(rec: Recorder, hc, comm) -> None:
    me, n = comm.rank, comm.size
    counts = [r % 3 + 1 for r in range(n)]
    total = sum(counts)
    for root in range(n):
        send = values(counts[me], 10 * root + me)
        want, got = np.zeros(total, CLD), np.zeros(total, CLD)
        comm.Gatherv(send, [want, counts], root=root)
        hc.Gatherv(lanes(send), [lanes(got), counts] if me == root else None, root=root)
        rec.case(f"Gatherv root={root}", me != root or got.tobytes() == want.tobytes())
        whole = values(total, root)
        want, got = np.zeros(counts[me], CLD), np.zeros(counts[me], CLD)
        comm.Scatterv([whole, counts], want, root=root)
        hc.Scatterv([lanes(whole), counts] if me == root else None, lanes(got), root=root)
        rec.case(f"Scatterv root={root}", got.tobytes() == want.tobytes())
        send = values(3, 7 * root + me)
        want, got = np.zeros(3 * n, CLD), np.zeros(3 * n, CLD)
        comm.Gather(send, want, root=root)
        hc.Gather(lanes(send), lanes(got), root=root)
        rec.case(f"Gather root={root}", me != root or got.tobytes() == want.tobytes())
        # a sum of integers: the same bits in any order of combining
        send = (np.arange(4) + me + 1j * me).astype(CLD)
        want, got = np.zeros(4, CLD), np.zeros(4, CLD)
        comm.Reduce(send, want, MPI.SUM, root=root)
        hc.Reduce(lanes(send), lanes(got), MPI.SUM, root=root)
        rec.case(f"Reduce root={root}", me != root or got.tobytes() == want.tobytes())
    send = values(counts[me], me)
    want, got = np.zeros(total, CLD), np.zeros(total, CLD)
    comm.Allgatherv(send, [want, counts])
    hc.Allgatherv(lanes(send), [lanes(got), counts])
    rec.case("Allgatherv", got.tobytes() == want.tobytes())


def outcome(call) -> str:
    """What a call did on this rank: ``ok``, ``refused: ...`` (this rank's own error),
    ``mismatch: ...`` (another rank's refusal seen), else the exception."""
    try:
        call()
    except MismatchError as exc:
        return f"mismatch: {exc}"
    except CollectiveTimeoutError as exc:
        return f"timeout: {exc}"
    except HetcollError as exc:
        return f"refused: {exc}"
    return "ok"


def check_refusal(rec: Recorder, comm, check: str, root: int) -> None:
    me, n = comm.rank, comm.size
    odd = (root + 1) % n  # the non-root that refuses a Reduce
    tag = f"check={check} root={root}"
    with HetComm(comm, platform(n), "binomial", timeout=30, on_timeout="raise", check=check) as hc:
        # the root's receive buffer holds n - 1 of the n blocks: only the root can tell
        size = n - 1 if me == root else n
        recv = [np.zeros(2 * size, np.int32), 2] if me == root else None
        first = outcome(lambda: hc.Gatherv(np.full(2, me, np.int32), recv, root=root))
        then = outcome(lambda: hc.Barrier())
        want = "refused: Gatherv" if me == root else "mismatch"
        seen = first if me == root or first != "ok" or check == "always" else then
        rec.case(f"{tag} Gatherv refused at the root", seen.startswith(want), f"{first} | {then}")
        # a non-root's unknown datatype
        got = np.zeros(3, np.int64)
        send = [np.full(3, me, np.int64), "not a type" if me == odd else MPI.INT64_T]
        first = outcome(lambda: hc.Reduce(send, got, MPI.SUM, root=root))
        then = outcome(lambda: hc.Barrier())
        want = "refused: Reduce sendbuf" if me == odd else "mismatch"
        seen = first if me == odd or first != "ok" or check == "always" else then
        rec.case(f"{tag} Reduce refused at a non-root", seen.startswith(want), f"{first} | {then}")
        # the wrapper goes on: the next calls are right everywhere
        got = np.zeros(2 * n, np.int32)
        hc.Gatherv(np.full(2, me, np.int32), [got, 2] if me == root else None, root=root)
        ok = me != root or np.array_equal(got, np.repeat(np.arange(n), 2))
        total = np.zeros(3, np.int64)
        hc.Reduce(np.full(3, me, np.int64), total, MPI.SUM, root=root)
        ok = ok and (me != root or np.array_equal(total, [n * (n - 1) // 2] * 3))
        rec.case(f"{tag} calls after the refusals", ok)


def check_refusal_unrooted(rec: Recorder, comm, check: str, root: int) -> None:
    """``Bcast``, ``Allreduce`` and ``Allgather`` refused by one rank (``odd``, a non-root
    of the Bcast): every other rank raises instead of waiting, and the next calls are
    right."""
    me, n = comm.rank, comm.size
    odd = (root + 1) % n
    tag = f"check={check} root={root}"
    with HetComm(comm, platform(n), "binomial", timeout=20, on_timeout="raise", check=check) as hc:
        # a read-only receive buffer on one receiving rank
        buf = bytes(8) if me == odd else bytearray(8)
        cases = {"Bcast": lambda: hc.Bcast(buf, root=root)}
        # a send buffer of another length than the receive buffer, on one rank
        send = np.ones(5 if me == odd else 4, np.int64)
        cases["Allreduce"] = lambda: hc.Allreduce(send, np.zeros(4, np.int64), MPI.SUM)
        # a receive buffer too small for the blocks, on one rank
        recv = np.zeros(2 * n - (1 if me == odd else 0), np.int32)
        cases["Allgather"] = lambda: hc.Allgather(np.full(2, me, np.int32), recv)
        for name, call in cases.items():
            first = outcome(call)
            then = outcome(lambda: hc.Barrier())
            want = f"refused: {name}" if me == odd else "mismatch"
            seen = first if me == odd or first != "ok" or check == "always" else then
            rec.case(
                f"{tag} {name} refused on one rank", seen.startswith(want), f"{first} | {then}"
            )
        # a persistent Bcast refused on one rank: its *_init agreement tells every rank
        first = outcome(lambda: hc.Bcast_init(buf, root=root))
        want = "refused: Bcast" if me == odd else "mismatch"
        rec.case(f"{tag} Bcast_init refused on one rank", first.startswith(want), first)
        # the wrapper goes on
        data = np.arange(8, dtype=np.uint8) if me == root else np.zeros(8, np.uint8)
        hc.Bcast(data, root=root)
        ok = np.array_equal(data, np.arange(8))
        total = np.zeros(4, np.int64)
        hc.Allreduce(np.full(4, me, np.int64), total, MPI.SUM)
        ok = ok and np.array_equal(total, [n * (n - 1) // 2] * 4)
        got = np.zeros(2 * n, np.int32)
        hc.Allgather(np.full(2, me, np.int32), got)
        ok = ok and np.array_equal(got, np.repeat(np.arange(n), 2))
        req = hc.Bcast_init(data, root=root)
        for _ in range(2):
            req.Start()
            req.Wait()
        req.Free()
        ok = ok and np.array_equal(data, np.arange(8))
        rec.case(f"{tag} calls after the unrooted refusals", ok)


def main() -> None:
    rec = Recorder(sys.argv[1])
    comm = WORLD
    with HetComm(comm, platform(comm.size), "binomial", timeout=30, on_timeout="raise") as hc:
        check_long_double_complex(rec, hc, comm)
    if comm.size > 1:
        for check in ("data", "always"):
            for root in sorted({0, comm.size - 1}):
                check_refusal(rec, comm, check, root)
                check_refusal_unrooted(rec, comm, check, root)
    rec.write()


if __name__ == "__main__":
    main()
