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
"""

from __future__ import annotations

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


def check(out: str) -> None:
    world = MPI.COMM_WORLD
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
    half = world.Split(me % 2, me)  # another size: MPICH's own
    mine = np.arange(1024, dtype=np.int64)
    got = np.zeros_like(mine)
    half.Allreduce(mine, got)
    ok &= bool((got == half.size * mine).all())
    half.Free()
    with open(f"{out}.{me}", "w") as fh:
        json.dump({"ok": ok}, fh)


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](*sys.argv[2:])
