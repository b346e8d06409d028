"""MPI side of tests/test_runtime_mpich_cvars_mpi.py: MPICH's allreduce and allgather
algorithms forced per call through their control variables (hetcoll.runtime.mpich_cvars),
alone and by a HetComm given a tuning file that names them.  Run with
``MPIR_CVAR_COLLECTIVE_FALLBACK=error`` on 4 ranks: an algorithm that cannot serve a call
(``reduce_scatter_allgather`` with fewer elements than ranks, ``recursive_doubling``
allgather on 3 ranks) then raises instead of falling back, which shows which one ran."""

from __future__ import annotations

import gc
import weakref

import numpy as np
from _report import check, report, same
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime.mpich_cvars import algorithms, why_not
from hetcoll.tuning import load_tuning

WORLD = MPI.COMM_WORLD
N, RANK = WORLD.size, WORLD.rank


def raises(call) -> bool:
    try:
        call()
    except MPI.Exception:
        return True
    return False


def kind(hc, name: str) -> str:
    """What a wrapper's method ``name`` is: the planning class's, mpi4py's own or the
    one-step method of runtime/forced.py (each its class's attribute, runtime.rooted.bind_mpi;
    nothing on the instance)."""
    from hetcoll.runtime.forced import METHODS

    f = getattr(type(hc), name)
    if name in vars(hc):
        return "instance"
    if f is getattr(MPI.Intracomm, name):
        return "mpi4py"
    return "forced" if f is METHODS.get(name) else "class"


found = algorithms()
check(found is not None, f"MPI_T unusable: {why_not()}")
start = {c: found.current(c) for c in ("allreduce", "allgather")}
check(start["allreduce"][0] == "auto", f"allreduce starts at {start['allreduce']}")
check(found.direct, "the variables' memory was not found: forcing writes through MPI_T")

# every algorithm MPICH accepts: written, read back, restored
for collective in ("allreduce", "allgather"):
    names = found.names(collective)
    check("ring" in names and "recursive_doubling" in names, f"{collective}: {names}")
    for name in names:
        check(found.force(collective, name), f"{collective} {name}: write refused")
        now = found.current(collective)
        check(now == (name, "mpir"), f"{collective} {name}: read back {now}")
        found.restore(collective)
        check(found.current(collective) == start[collective], f"{collective}: not restored")
    check(not found.force(collective, "no_such_algorithm"), "an unknown name was written")
    check(found.current(collective) == start[collective], f"{collective}: changed by a refusal")

# the write takes effect at the call, and only for it
one = np.ones(1, dtype=np.int64)
out = np.zeros(1, dtype=np.int64)
forced = found.forcing("allreduce", "reduce_scatter_allgather", WORLD.Allreduce)
check(raises(lambda: forced(one, out)), "the forced algorithm did not run (count < ranks)")
check(found.current("allreduce") == start["allreduce"], "not restored after a failed call")
check(not raises(lambda: WORLD.Allreduce(one, out)) and out[0] == N, "plain call after")
three = WORLD.Split(RANK < 3, RANK)
if RANK < 3:
    block, blocks = np.full(2, RANK, np.uint8), np.zeros(6, np.uint8)
    gather = found.forcing("allgather", "recursive_doubling", three.Allgather)
    check(raises(lambda: gather(block, blocks)), "recursive_doubling allgather on 3 ranks ran")
    check(found.forcing("allgather", "ring", three.Allgather)(block, blocks) is None, "ring")
    same(blocks, np.repeat(np.arange(3, dtype=np.uint8), 2), "ring allgather on 3 ranks")
three.Free()

# a HetComm given a tuning file whose rules name MPICH algorithms forces them per size;
# results bit-identical to mpi4py's (integers), floats the same on every rank
flat = Platform(nodes_from_costs([5e-6] * N, 1e-9), name="flat")
rules = {
    "allreduce": [
        {"from_bytes": 0, "algorithm": "mpi", "mpich": "reduce_scatter_allgather"},
        {"from_bytes": 64, "algorithm": "mpi", "mpich": "ring"},
        {"from_bytes": 4096, "algorithm": "mpi"},
        {"from_bytes": 1 << 16, "algorithm": "mpi", "mpich": "no_such_algorithm"},
    ],
    "allgather": [
        {"from_bytes": 0, "algorithm": "mpi", "mpich": "brucks"},
        {"from_bytes": 64, "algorithm": "mpi", "mpich": "ring"},
        {"from_bytes": 1024, "algorithm": "mpi"},
    ],
}
tuning = {"format": "hetcoll-tuning", "version": 1, "ranks": N, "rules": rules}
with HetComm(WORLD, flat, tuning=tuning, timeout=120) as hc:
    check(hc.planning.mpich_forced, "the wrapper does not force MPICH's algorithms")
    # every call goes to MPI: mpi4py's methods bound, and the one-step methods of
    # runtime/forced.py for those that force an algorithm
    bound = (kind(hc, "Allreduce"), kind(hc, "Allgather"))
    check(bound == ("forced", "forced"), f"Allreduce, Allgather: {bound}")
    check(kind(hc, "Bcast") == kind(hc, "Iallreduce") == "mpi4py", "mpi4py's methods not bound")
    check(raises(lambda: hc.Allreduce(one, out)), "8 B: reduce_scatter_allgather not forced")
    check(hc.last_choice.mpich == "reduce_scatter_allgather", f"{hc.last_choice}")
    check(found.current("allreduce") == start["allreduce"], "not restored after a raise")

    # each size's rule exactly, at every boundary; the algorithm in force during the call,
    # read from inside a user-defined operator; the variables restored after it
    seen: list = []

    def add(a, b, datatype) -> None:
        seen.append(found.current("allreduce"))
        y = np.frombuffer(b, dtype=np.int64)
        y += np.frombuffer(a, dtype=np.int64)

    plus = MPI.Op.Create(add, commute=True)
    loaded = load_tuning(tuning)
    for count in (7, 8, 9, 511, 512, 513, 8191, 8192):
        want = loaded.lookup("allreduce", 8 * count).mpich
        want = None if want == "no_such_algorithm" else want
        ints = np.random.default_rng(count + RANK).integers(-(1 << 40), 1 << 40, count)
        mine, theirs = np.empty_like(ints), np.empty_like(ints)
        seen.clear()
        user = want != "reduce_scatter_allgather"  # which takes predefined operators only
        hc.Allreduce(ints, mine, op=plus if user else MPI.SUM)
        check(hc.last_choice.mpich == want, f"{count} int64: ran {hc.last_choice}, not {want}")
        during = start["allreduce"] if want is None else (want, "mpir")
        check(all(x == during for x in seen), f"{count} int64: in force {set(seen)}")
        check(WORLD.allreduce(len(seen)) > 0 or not user, f"{count}: the operator never ran")
        check(found.current("allreduce") == start["allreduce"], f"{count}: left set")
        WORLD.Allreduce(ints, theirs, op=MPI.SUM)
        same(mine, theirs, f"Allreduce of {count} int64 (user op) with {want}")
        hc.Allreduce([ints, MPI.INT64_T], [mine, MPI.INT64_T], op=MPI.SUM)  # the class's
        check(hc.last_choice.mpich == want, f"{count} int64 as a spec: ran {hc.last_choice}")
        same(mine, theirs, f"Allreduce of {count} int64 (a buffer spec) with {want}")
    plus.Free()
    for nbytes in (63, 64, 1023, 1024):
        want = loaded.lookup("allgather", nbytes).mpich
        block = np.full(nbytes, RANK, np.uint8)
        blocks, theirs = np.empty(nbytes * N, np.uint8), np.empty(nbytes * N, np.uint8)
        hc.Allgather(block, blocks)
        check(hc.last_choice.mpich == want, f"Allgather {nbytes} B: ran {hc.last_choice}")
        check(found.current("allgather") == start["allgather"], f"{nbytes} B: left set")
        WORLD.Allgather(block, theirs)
        same(blocks, theirs, f"Allgather of {nbytes} B with {want}")
    for count, mpich in ((100, "ring"), (1000, None), (20000, None)):
        rng = np.random.default_rng(RANK)
        ints = rng.integers(-(1 << 40), 1 << 40, count)
        mine, theirs = np.empty_like(ints), np.empty_like(ints)
        for _ in range(2):  # the second call: the remembered look-up
            hc.Allreduce(ints, mine, op=MPI.SUM)
            check(hc.last_choice.mpich == mpich, f"{count}: ran {hc.last_choice}")
            check(found.current("allreduce") == start["allreduce"], f"{count}: left set")
        WORLD.Allreduce(ints, theirs, op=MPI.SUM)
        same(mine, theirs, f"Allreduce of {count} int64 with {mpich}")
        floats = rng.random(count)
        hc.Allreduce(floats, mine.view(np.float64), op=MPI.SUM)
        every = WORLD.allgather(mine.tobytes())
        check(len(set(every)) == 1, f"Allreduce of {count} float64: ranks differ")
    block = np.arange(5, dtype=np.int32) + 10 * RANK
    blocks = np.empty(5 * N, np.int32)
    hc.Allgather(block, blocks)
    check(hc.last_choice.mpich == "brucks", f"Allgather ran {hc.last_choice}")
    same(
        blocks,
        (np.arange(5)[None, :] + 10 * np.arange(N)[:, None]).ravel().astype(np.int32),
        "Allgather (brucks)",
    )

# rules that force nothing (or one collective only) keep mpi4py's methods bound
plain = {"allreduce": [{"from_bytes": 0, "algorithm": "mpi"}]}
gather = {**plain, "allgather": [{"from_bytes": 8, "algorithm": "mpi", "mpich": "ring"}]}
planned = {"bcast": [{"from_bytes": 0, "algorithm": "fnf"}], **gather}
for rules, want in (
    (plain, ("mpi4py", "mpi4py")),
    (gather, ("mpi4py", "forced")),
    (planned, ("class", "class")),
):
    with HetComm(WORLD, flat, tuning={**tuning, "rules": rules}, timeout=120) as hc:
        bound = (kind(hc, "Allreduce"), kind(hc, "Allgather"))
        check(bound == want, f"{rules}: Allreduce, Allgather {bound}, expected {want}")

# a dropped wrapper with the one-step methods is released when its last reference goes
gc.disable()
dropped = HetComm(WORLD, flat, tuning={**tuning, "rules": gather}, timeout=120)
dropped.close()
alive = weakref.ref(dropped)
del dropped
check(alive() is None, "a dropped wrapper with forced methods outlived its last reference")
gc.enable()

report()
