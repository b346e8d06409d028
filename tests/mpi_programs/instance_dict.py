"""MPI test program: ``mpiexec -n 2 python instance_dict.py OUT``.

A wrapper that gives every call to MPI looks mpi4py's methods up as fast as a plain
communicator does: CPython 3.11 specializes the look-up of ``hc.Allreduce`` only while the
instance keeps its attributes in the compact form it shares with its class (at most 30 of
them, the class fixed before the first is set).  Checked on the default wrapper (before and
after a call that names its plan), one it splits, one given a tuning file that forces
MPICH's algorithms (its ``Allreduce`` and ``Allgather`` the one-step methods of
``runtime/forced.py``), and one of a user's subclass of ``MPI.Intracomm``: how many
attributes its instance dict has, and what the look-up of ``Allreduce``, ``Allgather`` and
``Bcast`` in a loop specializes to.  A default wrapper whose ranks look like different hosts
(``HETCOLL_CLOCK_SHIFT``) plans, so it keeps ``HetComm``'s methods.  Each rank writes
``OUT.<rank>``: ``{"checks": {...}}``.
"""

from __future__ import annotations

import dis
import inspect
import json
import os
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
flat = Platform(nodes_from_costs([1e-6] * n), name="homogeneous")


class UserComm(MPI.Intracomm):
    """A user's own communicator class, with an attribute of its own."""

    def greeting(self) -> str:
        return f"hello from {self.Get_rank()}"


def _loop(c, send, recv, gathered, calls):
    for _ in range(calls):
        c.Allreduce(send, recv)
        c.Allgather(send, gathered)
        c.Bcast(recv, 0)


def look_ups(hc) -> list[str]:
    """What each method look-up of a loop of calls on ``hc`` specialized to."""
    loop = type(_loop)(_loop.__code__.replace(), globals())  # a code object of its own
    send, recv, gathered = np.ones(1, np.int64), np.zeros(1, np.int64), np.zeros(n, np.int64)
    loop(hc, send, recv, gathered, 64)
    ops = [i.opname for i in dis.get_instructions(loop, adaptive=True)]
    return [op for op in ops if op.startswith("LOAD_METHOD")]


def state(hc) -> dict:
    return {"keys": len(vars(hc)), "look-ups": look_ups(hc), "name": type(hc).__name__}


def same_data(hc) -> bool:
    mine = np.arange(8, dtype=np.int64) + me
    got, want = np.zeros_like(mine), np.zeros_like(mine)
    hc.Allreduce(mine, got)
    WORLD.Allreduce(mine, want)
    return bool(np.array_equal(got, want))


checks: dict = {}
hc = HetComm(WORLD, flat, timeout=60)
checks["default"] = state(hc)
word = np.arange(4, dtype=np.int64) + 10 if me == 0 else np.zeros(4, np.int64)
HetComm.Bcast(hc, word, 0, algo="binomial")
checks["named"] = bool(np.array_equal(word, np.arange(4) + 10))
checks["default after named"] = state(hc)
sub = hc.Split(0, me)
checks["split"] = state(sub)
sub.close()
hc.close()
with HetComm(UserComm(WORLD), flat, timeout=60) as hu:
    checks["user"] = state(hu)
    checks["user greeting"] = hu.greeting() == f"hello from {me}"

# a tuning file forcing MPICH's algorithms: Allreduce and Allgather the one-step methods
forcing = {"allreduce": "recursive_doubling", "allgather": "ring"}
rules = {
    c: [{"from_bytes": 0, "algorithm": "mpi"}, {"from_bytes": 64, "algorithm": "mpi", "mpich": a}]
    for c, a in forcing.items()
}
tuning = {"format": "hetcoll-tuning", "version": 1, "ranks": n, "rules": rules}
with HetComm(WORLD, flat, tuning=tuning, timeout=60) as ht:
    checks["tuned"] = state(ht)
    checks["tuned data"] = same_data(ht)
    big, got = np.arange(16, dtype=np.int64) + me, np.zeros(16, np.int64)
    ht.Allreduce(big, got)  # 128 bytes: recursive_doubling where MPICH's can be forced
    checks["tuned forced"] = bool(np.array_equal(got, WORLD.allreduce(big))) and (
        ht.last_choice.mpich in (None, "recursive_doubling")
    )

os.environ["HETCOLL_CLOCK_SHIFT"] = "0,1"  # rank 1 looks like another host's
with HetComm(WORLD, flat, timeout=60) as apart:
    checks["apart one_host"] = apart.one_host
    checks["apart class"] = type(apart) is HetComm
    checks["apart Allreduce"] = inspect.getattr_static(apart, "Allreduce") is (
        HetComm.__dict__.get("Allreduce") or inspect.getattr_static(HetComm, "Allreduce")
    )
    checks["apart data"] = same_data(apart)
del os.environ["HETCOLL_CLOCK_SHIFT"]

with open(f"{sys.argv[1]}.{me}", "w") as f:
    json.dump({"rank": me, "checks": checks}, f)
