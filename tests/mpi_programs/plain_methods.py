"""MPI test program: ``mpiexec -n 2 python plain_methods.py OUT``.

Where a ``HetComm`` gives every call to MPI (natively on one host), its collectives are
looked up and called as a plain communicator's: each is the C-level ``MPI.Intracomm``
method, an attribute of the wrapper's class (none on the instance), and the class has no
``__getattr__`` (which would take CPython's slow attribute look-up for every attribute).
Checked on the default wrapper, one it splits, a tuned one (its ``Allreduce`` and
``Allgather`` the one-step methods of ``runtime/forced.py``, its class's too), and one of a
user's subclass of
``MPI.Intracomm`` (whose own attributes it still serves).  Every result is compared with
mpi4py's on the plain communicator, and a call that names its plan still plans.  Each rank
writes ``OUT.<rank>``: ``{"checks": {...}}``.
"""

from __future__ import annotations

import inspect
import json
import sys

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.forced import METHODS
from hetcoll.runtime.rooted import PASSED
from hetcoll.tuning import Rule, Tuning

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
flat = Platform(nodes_from_costs([1e-6] * n), name="homogeneous")


class UserComm(MPI.Intracomm):
    """A user's own communicator class, with an attribute of its own."""

    def greeting(self) -> str:
        return f"hello from {self.Get_rank()}"


def plain(hc, skip: tuple[str, ...] = ()) -> dict:
    """Whose each collective is: ``mpi4py`` (the C-level method, its class's attribute),
    ``instance`` (an attribute of the instance), or ``class`` (a Python method)."""
    kinds = {}
    for name in PASSED:
        if name in skip:
            continue
        if name in vars(hc):
            kinds[name] = "instance"
        elif inspect.getattr_static(hc, name) is getattr(MPI.Intracomm, name):
            kinds[name] = "mpi4py"
        else:
            kinds[name] = "class"
    wrong = {k: v for k, v in kinds.items() if v != "mpi4py"}
    return {
        "wrong": wrong,
        "getattr hook": hasattr(type(hc), "__getattr__"),
        "name": type(hc).__name__,
        "isinstance": isinstance(hc, HetComm),
    }


def same_data(hc) -> bool:
    """Allreduce, Allgather and Bcast of every size class give mpi4py's bytes."""
    ok = True
    for count in (1, 64, 4096):
        mine = (np.arange(count, dtype=np.int64) * 7 + me) % 1009
        got, want = np.zeros_like(mine), np.zeros_like(mine)
        hc.Allreduce(mine, got)
        WORLD.Allreduce(mine, want)
        ok &= np.array_equal(got, want)
        got, want = np.zeros(count * n, np.int64), np.zeros(count * n, np.int64)
        hc.Allgather(mine, got)
        WORLD.Allgather(mine, want)
        ok &= np.array_equal(got, want)
        buf = mine.copy() if me == 0 else np.zeros_like(mine)
        hc.Bcast(buf, 0)
        ok &= np.array_equal(buf, (np.arange(count, dtype=np.int64) * 7) % 1009)
    return bool(ok)


checks: dict = {}
hc = HetComm(WORLD, flat, timeout=60)
checks["default"] = plain(hc)
checks["default data"] = same_data(hc)
sub = hc.Split(0, me)
checks["split"] = plain(sub)
checks["split data"] = same_data(sub)
sub.close()

# a call that names its plan goes through HetComm's method and plans
word = np.arange(4, dtype=np.int64) + 10 if me == 0 else np.zeros(4, np.int64)
HetComm.Bcast(hc, word, 0, algo="binomial")
checks["named"] = [
    bool(np.array_equal(word, np.arange(4) + 10)),
    hc.last_call is not None and hc.last_call.algorithm,
]
hc.close()

rules = {
    "allreduce": (Rule(0, "mpi"), Rule(64, "mpi", mpich="recursive_doubling")),
    "allgather": (Rule(0, "mpi"), Rule(64, "mpi", mpich="ring")),
}
with HetComm(WORLD, flat, timeout=60, tuning=Tuning(n, rules)) as tuned:
    forced = tuned.planning.mpich_forced
    skip = ("Allreduce", "Allgather") if forced else ()
    checks["tuned"] = plain(tuned, skip)
    checks["tuned forced"] = [
        forced,
        all(getattr(type(tuned), name) is METHODS[name] for name in skip),
    ]
    checks["tuned data"] = same_data(tuned)

user = UserComm(WORLD)
with HetComm(user, flat, timeout=60) as hu:
    checks["user"] = plain(hu)
    checks["user greeting"] = hu.greeting() == f"hello from {me}"
    checks["user data"] = same_data(hu)

with open(f"{sys.argv[1]}.{me}", "w") as f:
    json.dump({"rank": me, "checks": checks}, f)
