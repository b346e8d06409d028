"""MPI test program: ``mpiexec -n K python -m mpi4py passthrough.py OUT``.

A call a ``HetComm`` passes to MPI costs what it costs without hetcoll: repeated, it is one
Python method call (the wrapper's) before mpi4py's own, for the blocking and the
nonblocking collectives alike; and nothing of hetcoll runs between calls (no progress
thread until a nonblocking call is planned).  Every result is compared with mpi4py's on
the plain communicator.  A tuning file that plans some sizes and passes others checks that
what is remembered for a passed call never runs another size's choice.  Each rank writes
``OUT.<rank>``: ``{"checks": {...}}``.
"""

from __future__ import annotations

import json
import sys
import threading

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.rooted import CallRecord
from hetcoll.tuning import Rule, Tuning

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
HERE = __file__
flat = Platform(nodes_from_costs([1e-6] * n), name="homogeneous")
checks: dict = {}


def frames(call) -> tuple[list[str], object]:
    """The Python functions ``call()`` enters (outside this file), and its result."""
    seen: list[str] = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_filename != HERE:
            seen.append(frame.f_code.co_name)

    sys.setprofile(prof)
    try:
        out = call()
    finally:
        sys.setprofile(None)
    return seen, out


def cases(c, sub):
    """name -> (call on ``c``, what to compare): each call fills fresh buffers."""
    base = np.arange(5, dtype=np.float64) * (me + 1)
    out = {}

    def buffers():
        return base.copy(), np.zeros(5), np.zeros(5 * n), np.arange(3, dtype=np.int64) * 7

    def make(name):
        a, b, g, s = buffers()
        if me != 0:
            s[:] = -1
        calls = {
            "Bcast": lambda: c.Bcast(s, 0),
            "Allreduce": lambda: c.Allreduce(a, b),
            "allreduce": lambda: c.allreduce(me + 1),
            "allgather": lambda: c.allgather(me),
            "Barrier": lambda: c.Barrier(),
            "Ibcast": lambda: c.Ibcast(s, 0),
            "Iallreduce": lambda: c.Iallreduce(a, b),
            "Iallgather": lambda: c.Iallgather(a, g),
            "Ibarrier": lambda: c.Ibarrier(),
            "Ireduce": lambda: c.Ireduce(a, b, root=0),
            "Igather": lambda: c.Igather(a, g, root=0),
            "Reduce": lambda: c.Reduce(a, b, root=0),
            "Gather": lambda: c.Gather(a, g, root=0),
            "Scatter": lambda: c.Scatter(np.arange(5.0 * n) * (me + 1), b, root=0),
            "Alltoall": lambda: c.Alltoall(g, g.copy()),
            "Allgather": lambda: c.Allgather(a, g),
            "Allgather in place": lambda: c.Allgather(MPI.IN_PLACE, g),
            "Reduce_scatter_block": lambda: c.Reduce_scatter_block(g, b),
            "Reduce_scatter": lambda: c.Reduce_scatter(g, b, [5] * n),
            "Allgatherv": lambda: c.Allgatherv(a, g),
            "sub Allreduce": lambda: sub.Allreduce(a, b),
        }
        return calls[name], (s, b, g)

    for name in (
        "Bcast", "Allreduce", "allreduce", "allgather", "Barrier", "Ibcast", "Iallreduce",
        "Iallgather", "Ibarrier", "Ireduce", "Igather", "Reduce", "Gather", "Scatter", "Alltoall",
        "sub Allreduce", "Allgather", "Allgather in place", "Reduce_scatter_block",
        "Reduce_scatter", "Allgatherv",
    ):  # fmt: skip
        out[name] = lambda name=name: make(name)
    return out


def digest(result, bufs) -> str:
    if isinstance(result, MPI.Request):
        result.Wait()
        result = None
    return repr((result, [b.tolist() for b in bufs]))


threads = threading.active_count()


def entered(c, sub_c) -> dict:
    """Per call on ``c`` (its sub-communicator ``sub_c``): the same result as mpi4py's on
    the plain communicator, the Python functions a repeated call enters, and whether
    ``last_call`` is None after it."""
    mine, theirs = cases(c, sub_c), cases(WORLD, sub_w)
    out = {}
    for name in mine:
        want = [digest(*(lambda f, b: (f(), b))(*theirs[name]())) for _ in range(2)]
        got, seen_all = [], []
        for _ in range(3):  # the first call chooses; the later ones must be quick
            f, bufs = mine[name]()
            seen, result = frames(f)
            got.append(digest(result, bufs))
            seen_all.append(seen)
        out[name] = {
            "same": got[0] == want[0] and got[1:] == want,
            "frames": seen_all[-1],
            "passed": c.last_call is None,
        }
    return out


# the default (natively on one host: every call MPI's own) binds mpi4py's methods; a wrapper
# made with "mpi" keeps its methods (per-call algo=), one Python call before mpi4py's
sub_w = WORLD.Split(me % 2, me)
hc = HetComm(WORLD, flat, timeout=60)  # the default: natively on one host, MPI's own
sub_h = hc.Split(me % 2, me)
checks["default"] = entered(hc, sub_h)
checks["no thread"] = hc._progress is None and threading.active_count() == threads
named = HetComm(WORLD, flat, "mpi", timeout=60)
sub_n = named.Split(me % 2, me)
checks["mpi"] = entered(named, sub_n)
checks["bound"] = {  # whose method c.Bcast is: mpi4py's, or hetcoll's
    "default": [c.Bcast.__func__ is MPI.Intracomm.Bcast for c in (hc, sub_h)],
    "mpi": [c.Bcast.__func__ is MPI.Intracomm.Bcast for c in (named, sub_n)],
}

# a call that names its plan on the default wrapper: through HetComm's method (the
# wrapper's is mpi4py's, which takes no algo=); last_call names it, and a bound call after
# it leaves last_call as it was
word = np.arange(4, dtype=np.int64) + 10 if me == 0 else np.zeros(4, np.int64)
HetComm.Bcast(hc, word, 0, algo="binomial")
ok = np.array_equal(word, np.arange(4) + 10)
record = hc.last_call
after_plan = [record.collective, record.algorithm, record.root]
hc.Bcast(word, 0)
ok = ok and np.array_equal(word, np.arange(4) + 10)
try:
    hc.Bcast(word, 0, algo="binomial")
    keyword = "accepted"
except TypeError as exc:
    keyword = "algo" in str(exc)
checks["named call"] = {
    "ok": bool(ok),
    "after plan": after_plan,
    "after bound": hc.last_call == record,
    "keyword": keyword,
}
for c in (sub_n, named):
    c.close()

# a tuning file that plans 64-byte broadcasts and allreduces and passes 8-byte ones: calls
# alternate between the sizes, each gives mpi4py's result and reports what ran
rules = {
    "bcast": (Rule(0, "mpi"), Rule(64, "binomial")),
    "allreduce": (Rule(0, "mpi"), Rule(64, "blind")),
}
tuned = HetComm(WORLD, flat, timeout=60, tuning=Tuning(n, rules))
before = tuned._progress is None
ran = []
for k in range(6):
    count = 1 if k % 2 else 8  # 8 or 64 bytes
    s = np.arange(count, dtype=np.int64) + 3 if me == 1 else np.zeros(count, np.int64)
    a, b = np.full(count, me + 1.0), np.zeros(count)
    tuned.Ibcast(s, 1).Wait()
    first, first_call = tuned.last_choice.algorithm, tuned.last_call
    tuned.Iallreduce(a, b).Wait()
    ran.append([first, tuned.last_choice.algorithm])
    # last_call: None after a call given to MPI (also a repeated one, after a planned call)
    ran[-1].append([first_call is None, tuned.last_call is None])
    ok = np.array_equal(s, np.arange(count) + 3) and np.all(b == n * (n + 1) / 2)
    ran[-1].append(bool(ok))
checks["tuned"] = {"ran": ran, "thread only once planned": before and tuned._progress is not None}
tuned.close()

# a repeated call given to MPI after a call hetcoll planned: last_call None again (it kept
# naming the planned call), for every blocking call remembered so
stale = HetComm(WORLD, flat, algo="mpi", timeout=60)
x, y, z = np.zeros(8, np.int64), np.ones(8), np.zeros(8)
w = np.zeros(8 * n, np.int64)
REPEATED = {
    "Bcast": lambda: stale.Bcast(x, 0),
    "Allreduce": lambda: stale.Allreduce(y, z),
    "Allgather": lambda: stale.Allgather(x, w),
    "Barrier": lambda: stale.Barrier(),
}
after = {}
for name, call in REPEATED.items():
    call()
    call()  # remembered
    HetComm.Reduce(stale, np.full(8, me, np.int64), w[:8], root=0, algo="binomial")
    planned = stale.last_call
    call()  # the remembered call given to MPI
    after[name] = [planned == CallRecord("Reduce", "binomial", 0), stale.last_call is None]
# and a first call of its kind (nothing remembered yet) after a planned one
HetComm.Reduce(stale, np.full(8, me, np.int64), w[:8], root=0, algo="binomial")
stale.Bcast(np.zeros(3, np.int64), 0)
after["first Bcast"] = [True, stale.last_call is None]
checks["after planned"] = after
stale.close()

# one rank (COMM_SELF, and the sub-communicator a wrapper of it splits): nothing moves, so
# whatever the wrapper's planner a repeated call is one Python call before mpi4py's own,
# as at n > 1, with mpi4py's result bit for bit (every operator, IN_PLACE)
alone = Platform(nodes_from_costs([1e-6]), name="one")
SELF = MPI.COMM_SELF
OPS = ("SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR")


def one_rank(c, rooted: bool) -> dict:
    """name -> [same bytes as mpi4py's on COMM_SELF, the Python functions a repeated call
    enters, last_call None and last_choice MPI's after it]; ``Reduce`` too with ``rooted``
    (a wrapper whose ``rooted_algo`` is ``mpi``: elsewhere a one-rank ``Reduce`` is a call
    hetcoll ran, which ``last_call`` names)."""
    values = {
        "int": np.array([3, -7, 0, 1 << 40, -1], dtype=np.int64) * (me + 1),
        "float": np.array([1.5, -0.0, np.nan, np.inf, 1e-310]) * (me + 1),
    }

    def run(comm, name):
        call, kind, op, how = name.split()
        a, b = values[kind].copy(), np.full(5, 9, dtype=values[kind].dtype)
        send = a
        if how == "in-place":
            b[:], send = a, MPI.IN_PLACE
        if call == "Bcast":
            return lambda: comm.Bcast(a, 0), (a, b)
        return lambda: getattr(comm, call)(send, b, getattr(MPI, op)), (a, b)

    names = [
        f"Allreduce {k} {op} {h}"
        for k in ("int", "float")
        for op in OPS
        for h in ("send", "in-place")
        if k == "int" or op[0] not in "BL"
    ]
    names += [
        f"Reduce {k} {op} {h}"
        for k in ("int", "float")
        for op in ("SUM", "MAX")
        for h in ("send", "in-place")
        if rooted
    ]
    names += ["Bcast int - -", "Bcast float - -"]
    out = {}
    for name in names:
        f, bufs = run(SELF, name)
        f()
        want = [x.tobytes() for x in bufs]
        same = True
        for _ in range(3):  # the first call chooses; the later ones must be quick
            f, bufs = run(c, name)
            seen, _ = frames(f)
            same = same and [x.tobytes() for x in bufs] == want
        passed = c.last_call is None and getattr(c.last_choice, "algorithm", None) == "mpi"
        out[name] = [same, seen, passed]
    return out


tune1 = Tuning(1, {"bcast": (Rule(0, "binomial"),), "allreduce": (Rule(0, "blind"),)})
checks["one rank"] = {}
for label, kw in (("mpi", {"algo": "mpi"}), ("fnf", {"algo": "fnf"}), ("tuned", {"tuning": tune1})):
    w = HetComm(SELF, alone, timeout=60, **kw)
    w_sub = w.Split(0, 0)
    checks["one rank"][label] = one_rank(w, label == "mpi")
    checks["one rank"][f"{label} sub"] = one_rank(w_sub, label == "mpi")
    w_sub.close()
    w.close()
sub_h.Free()
sub_w.Free()
hc.close()
with open(f"{sys.argv[1]}.{me}", "w") as fh:
    json.dump({"checks": checks}, fh)
