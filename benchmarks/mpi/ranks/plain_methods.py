"""MPI side of ``benchmarks/mpi/bench_plain_methods.py``: the same C call of mpi4py made
through four objects, paired in one job.

``mpiexec -n K python plain_methods.py SIZES CALLS ROUNDS OUT`` (SIZES: result sizes ``M``
in bytes, comma-separated: an allreduce's vector of ``M / 8`` int64, an allgather's
``M / K`` bytes per rank, a broadcast's ``M`` bytes; CALLS: calls in a loop; ROUNDS:
paired rounds).

The variants: ``world``, ``MPI.COMM_WORLD``; ``hetcomm``, the default ``HetComm`` on it
(natively on one host every call is MPI's own: its class's attribute is mpi4py's method,
:func:`hetcoll.runtime.rooted.bind_mpi`); ``view``, a plain ``MPI.Intracomm`` on the
``HetComm``'s handle; ``bound``, another ``HetComm`` (made with ``"mpi"``) given the methods
of a plain communicator bound on the instance and a class with a ``__getattr__`` (what a
Python layer between the user and the C call costs: a look-up through the hook, the call of
a bound method object).  A variant's time in a round is a program's loop (as
``bench_mpich_algorithms.py`` times it): a barrier, then CALLS times a call (its method
looked up on the object at every call, as a program does), then a check that reads the
result and writes the next input; the seconds per call the slowest rank spent in the
calls.  Each round runs every variant once, the order rotated and reversed every other
round (:func:`hetcoll.jobs.tune.rotation`).  Then the same calls without communication:
each rank alone, the four variants made on ``MPI.COMM_SELF``, each round's figure the
process time per call of its least of :data:`ALONE_LOOPS` loops of :data:`ALONE_CALLS`
calls (the slowest rank's): what the object adds, out of reach of the ranks' scheduling.
Rank 0 writes ``{"ranks", "sizes", "calls", "rounds", "variants", "times": {collective:
{variant: [[seconds per call per round] per size]}}, "alone": the same on COMM_SELF,
"ok"}``.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll.jobs.tune import rotation
from hetcoll.runtime.rooted import PASSED
from hetcoll.runtime.subcomms import planned_class, variant

WORLD = MPI.COMM_WORLD
VARIANTS = ("world", "hetcomm", "view", "bound")
COLLECTIVES = ("allreduce", "allgather", "bcast")
#: the calls on COMM_SELF: each round's figure is the least of this many loops ...
ALONE_LOOPS = 5
#: ... of this many calls
ALONE_CALLS = 4000


def _bound(hc) -> None:
    """``hc`` with a plain communicator's bound methods on the instance and a class with a
    ``__getattr__`` (the ``bound`` variant)."""
    hc.__class__ = variant(planned_class(hc), forward=True)
    plain = MPI.Intracomm(hc)
    for name in PASSED:
        hc.__dict__[name] = getattr(plain, name)


def _alone(run) -> float:
    """Process seconds per call of ``run``: the least of :data:`ALONE_LOOPS` loops."""
    least = float("inf")
    for _ in range(ALONE_LOOPS):
        t = time.process_time()
        for _ in range(ALONE_CALLS):
            run()
        least = min(least, time.process_time() - t)
    return least / ALONE_CALLS


def _variants(comm, flat) -> dict:
    """The four variants on ``comm`` (module doc)."""
    from hetcoll import HetComm

    hc = HetComm(comm, flat, timeout=300)
    # made as HetComm itself ("mpi"): the names put on its instance join the keys its class
    # shares among its instances, which would slow the look-up of those names on ``hc``
    other = HetComm(comm, flat, "mpi", timeout=300)
    _bound(other)
    return {"world": comm, "hetcomm": hc, "view": MPI.Intracomm(hc), "bound": other}


def _calls(comms: dict, collective: str, m: int):
    """Per variant the call of ``collective`` at result size ``m`` on its communicator of
    ``size`` ranks, and the check (reads the result, writes the next input: True when the
    result was right)."""
    size, rank = comms["world"].size, comms["world"].rank
    if collective == "allreduce":
        send = np.full(max(m // 8, 1), rank + 1, dtype=np.int64)
        recv = np.empty_like(send)
        want = size * (size + 1) // 2

        def check() -> bool:
            ok = recv.min() == want and recv.max() == want
            send.fill(rank + 1)
            return bool(ok)

        return {
            v: (lambda c=c: c.Allreduce(send, recv, op=MPI.SUM)) for v, c in comms.items()
        }, check
    if collective == "allgather":
        send = np.full(max(m // size, 1), rank % 251, dtype=np.uint8)
        recv = np.empty(len(send) * size, dtype=np.uint8)
        want = np.repeat(np.arange(size, dtype=np.uint8) % 251, len(send))

        def check() -> bool:
            ok = np.array_equal(recv, want)
            send.fill(rank % 251)
            return ok

        return {v: (lambda c=c: c.Allgather(send, recv)) for v, c in comms.items()}, check
    buf = np.full(m, 7 if rank == 0 else 0, dtype=np.uint8)

    def check() -> bool:
        ok = buf.min() == 7 and buf.max() == 7
        if rank:
            buf.fill(0)
        return bool(ok)

    return {v: (lambda c=c: c.Bcast(buf, 0)) for v, c in comms.items()}, check


def main(sizes_arg: str, calls_arg: str, rounds_arg: str, out_path: str) -> None:
    from hetcoll.platform import Platform, nodes_from_costs

    sizes = [int(s) for s in sizes_arg.split(",")]
    calls, rounds = int(calls_arg), int(rounds_arg)
    flat = Platform(nodes_from_costs([5e-6] * WORLD.size, 1e-9), name="flat")
    comms = _variants(WORLD, flat)
    alone_comms = _variants(MPI.COMM_SELF, Platform(nodes_from_costs([5e-6], 1e-9), name="one"))
    times = {c: {v: [] for v in VARIANTS} for c in COLLECTIVES}
    alone = {c: {v: [] for v in VARIANTS} for c in COLLECTIVES}
    ok = True
    for collective in COLLECTIVES:
        for m in sizes:
            runs, check = _calls(comms, collective, m)
            per = {v: [] for v in VARIANTS}
            for v in VARIANTS:  # warm-up
                runs[v]()
                ok &= check()
            for r in range(rounds):
                for k in rotation(len(VARIANTS), r):
                    v, run = VARIANTS[k], runs[VARIANTS[k]]
                    WORLD.Barrier()
                    spent = 0.0
                    for _ in range(calls):
                        t = MPI.Wtime()
                        run()
                        spent += MPI.Wtime() - t
                        ok &= check()
                    per[v].append(WORLD.allreduce(spent / calls, op=MPI.MAX))
            for v in VARIANTS:
                times[collective][v].append(per[v])
            runs, check = _calls(alone_comms, collective, m)
            per = {v: [] for v in VARIANTS}
            for r in range(rounds):
                for k in rotation(len(VARIANTS), r):
                    per[VARIANTS[k]].append(WORLD.allreduce(_alone(runs[VARIANTS[k]]), op=MPI.MAX))
            ok &= check()
            for v in VARIANTS:
                alone[collective][v].append(per[v])
    every_ok = WORLD.allreduce(int(ok), op=MPI.MIN)
    for c in (comms, alone_comms):
        c["bound"].close()
        c["hetcomm"].close()
    if WORLD.rank == 0:
        doc = {
            "ranks": WORLD.size,
            "sizes": sizes,
            "calls": calls,
            "rounds": rounds,
            "variants": list(VARIANTS),
            "times": times,
            "alone": alone,
            "ok": bool(every_ok),
        }
        with open(out_path, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
