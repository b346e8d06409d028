"""MPI test program for tests/test_runtime_mpich_selection_mpi.py.

``python -m mpi4py mpich_selection.py write RANKS OUT [unguarded]``: one rank writes MPICH's
selection file made from a tuning file for RANKS ranks (allreduce: MPICH's own below 512 B,
``ring`` from 512 B, ``reduce_scatter_allgather`` from 64 KiB, MPICH's own from 1 MiB;
allgather: ``recursive_doubling`` below 4 KiB blocks, ``ring`` from them); ``unguarded``:
without MPICH's restrictions (``reduce_scatter_allgather`` from 8 B too, which MPICH
cannot serve below 4 elements on 4 ranks).

``python -m mpi4py mpich_selection.py check OUT``, started with the file: allreduce (SUM,
MAX, in place, a non-commutative operator) and allgather at every rule's sizes and a
split communicator give the right data; each rank writes ``OUT.<rank>`` with ``"ok"``.

``python -m mpi4py mpich_selection.py hetcomm OUT``: the same calls through a ``HetComm``
given the tuning file of this rank count; ``OUT.<rank>`` also holds what its
``Allreduce`` and ``Allgather`` are: ``mpi4py`` (its class's C method: MPICH's file forces
the algorithms) or ``forced`` (its class's one-step method of ``runtime/forced.py``).
"""

from __future__ import annotations

import inspect
import json
import sys

import numpy as np
from mpi4py import MPI

from hetcoll.runtime import mpich_selection
from hetcoll.tuning import Rule, Tuning


def tuning(ranks: int, unguarded: bool) -> Tuning:
    first = (8, "mpi", None, "reduce_scatter_allgather") if unguarded else (8, "mpi", None)
    rules = {
        "allreduce": [
            first,
            (512, "mpi", None, "ring"),
            (65536, "mpi", None, "reduce_scatter_allgather"),
            (1 << 20, "mpi", None),
        ],
        "allgather": [(1, "mpi", None, "recursive_doubling"), (4096, "mpi", None, "ring")],
    }
    return Tuning(ranks, {c: tuple(Rule(*r) for r in rs) for c, rs in rules.items()})


def write(ranks: str, out: str, unguarded: str = "") -> None:
    if unguarded:
        mpich_selection.RESTRICTIONS["allreduce"]["reduce_scatter_allgather"] = ()
    tree = mpich_selection.selection(tuning(int(ranks), bool(unguarded)), mpich_selection.builtin())
    with open(out, "w") as fh:
        json.dump(tree, fh)


def right(world) -> bool:
    """Allreduce and Allgather on ``world`` at every rule's sizes give MPI's results."""
    n, me = world.size, world.rank
    ok = True
    noncommutative = MPI.Op.Create(lambda a, b, t: None, commute=False)
    for nbytes in (8, 24, 512, 4096, 65536, 1 << 20, 2 << 20):
        count = nbytes // 8
        mine = np.arange(count, dtype=np.int64) + me
        total = n * np.arange(count) + n * (n - 1) // 2
        got = np.zeros_like(mine)
        world.Allreduce(mine, got, op=MPI.SUM)
        ok &= bool((got == total).all())
        world.Allreduce(mine, got, op=MPI.MAX)
        ok &= bool((got == np.arange(count) + n - 1).all())
        inplace = mine.copy()
        world.Allreduce(MPI.IN_PLACE, inplace, op=MPI.SUM)
        ok &= bool((inplace == total).all())
        world.Allreduce(mine, got, op=noncommutative)
    for block in (1, 3, 1024, 4096, 16384):
        mine = np.full(block, me + 1, dtype=np.uint8)
        got = np.zeros(block * n, dtype=np.uint8)
        world.Allgather(mine, got)
        ok &= bool((got == np.repeat(np.arange(1, n + 1), block)).all())
    return ok


def check(out: str) -> None:
    world = MPI.COMM_WORLD
    ok = right(world)
    half = world.Split(world.rank % 2, world.rank)  # another size: MPICH's own
    mine = np.arange(1024, dtype=np.int64)
    got = np.zeros_like(mine)
    half.Allreduce(mine, got)
    ok &= bool((got == half.size * mine).all())
    half.Free()
    with open(f"{out}.{world.rank}", "w") as fh:
        json.dump({"ok": ok}, fh)


def hetcomm(out: str) -> None:
    from hetcoll import HetComm
    from hetcoll.platform import Platform, nodes_from_costs
    from hetcoll.runtime.forced import METHODS

    world = MPI.COMM_WORLD
    flat = Platform(nodes_from_costs([1e-6] * world.size), name="flat")
    with HetComm(world, flat, tuning=tuning(world.size, False), timeout=120) as hc:
        kinds = []
        for name in ("Allreduce", "Allgather"):
            method = inspect.getattr_static(hc, name)
            if method is METHODS[name]:
                kinds.append("forced")
            else:
                mpi4py = method is getattr(MPI.Intracomm, name)
                kinds.append("mpi4py" if mpi4py else "class")
        ok = right(hc)
        forcing = hc.planning.mpich_forced
    with open(f"{out}.{world.rank}", "w") as fh:
        json.dump({"ok": ok, "kinds": kinds, "forcing": forcing}, fh)


if __name__ == "__main__":
    {"write": write, "check": check, "hetcomm": hetcomm}[sys.argv[1]](*sys.argv[2:])
