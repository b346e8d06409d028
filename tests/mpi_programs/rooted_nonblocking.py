"""MPI test program: the rooted collectives' nonblocking and persistent forms, and
``last_call`` after nonblocking and persistent calls.  ``mpiexec -n K python
rooted_nonblocking.py``.

On a ``HetComm`` whose rooted collectives are planned (``rooted_algo="rooted_ls"``), every
rank compares what it got, byte for byte, with mpi4py's own collective on ``COMM_WORLD``
and checks that hetcoll ran the call (its call count grew) and what ``last_call`` says.
Rank 0 prints one JSON line: ``{"ranks": K, "failures": [...]}``.

- ``Ireduce`` (int64 SUM, float64 MAX, IN_PLACE at the root), ``Igather``, ``Iscatter``
  for every root, each waited for at once; ``last_call`` names the nonblocking call;
- ``Reduce_init``, ``Gather_init``, ``Scatter_init`` for every root, started three times;
  ``last_call`` names the persistent call;
- the three nonblocking calls and an ``Ibcast`` outstanding together with a point-to-point
  pair, completed by ``Waitall``, by ``Waitany``, by ``Testall``; persistent starts with
  them in ``Startall``;
- ``Reduce_scatter_block_init`` and ``Ireduce_scatter_block``: planned, named by
  ``last_call``; the persistent call plans both halves (reduce, scatter) in the ``*_init``
  call and nothing at its starts; ``Iallgatherv`` (not planned): MPI's own request,
  ``last_call`` None;
- a wrapper with the default ``algo="auto"`` (rooted collectives MPI's own): ``Ireduce``
  and ``Reduce_init`` are MPI's own requests;
- ``auto`` choosing per call (the model weighing the plan against MPICH's tree: a platform
  of two link speeds, not taken for one host): each ``Ireduce``/``Igather``/``Iscatter``
  runs what the blocking call with the same arguments runs (MPI's own request, or planned
  and named by ``last_call``), a call MPI was given first not keeping the later ones
  (calls repeated, each compared with mpi4py's); at 5 and 8 ranks both choices occur.
"""

from __future__ import annotations

import numpy as np
from _report import check, report, same
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.platform import nodes_from_costs
from hetcoll.runtime.nonblocking import CollectiveRequest
from hetcoll.runtime.persistent import PersistentRequest
from hetcoll.runtime.subcomms import planned_class

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
ALGO = "rooted_ls"


def platform() -> Platform:
    return Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]), model="tini")


def data(shape, seed: int, dtype=np.int64) -> np.ndarray:
    rng = np.random.default_rng(seed * 1000 + me)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 1 << 30, shape).astype(dtype)


def ran(hc: HetComm, before: int, calls: int, name: str, root, what: str) -> None:
    """hetcoll ran ``calls`` more calls and ``last_call`` names ``name`` (one rank: nothing
    moves, nothing is counted)."""
    if n == 1:
        return
    check(hc._seq == before + calls, f"{what}: hetcoll ran {hc._seq - before} calls")
    got = hc.last_call
    ok = got is not None and (got.collective, got.algorithm, got.root) == (name, ALGO, root)
    check(ok, f"{what}: last_call {got}, expected {name} {ALGO} root {root}")


def expected_calls(root: int, seed: int):
    """The three calls' inputs and mpi4py's own results for ``root``."""
    mine, fmine = data(33, seed), data(9, seed + 1, np.float64)
    block = data(5, seed + 2, np.int32)
    whole = data((n, 7), seed + 3, np.uint8)
    e_sum = np.zeros_like(mine)
    e_max = np.zeros_like(fmine)
    e_gather = np.zeros((n, 5), np.int32)
    e_scatter = np.zeros(7, np.uint8)
    WORLD.Reduce(mine, e_sum, MPI.SUM, root)
    WORLD.Reduce(fmine, e_max, MPI.MAX, root)
    WORLD.Gather(block, e_gather, root)
    WORLD.Scatter(whole, e_scatter, root)
    return (mine, fmine, block, whole), (e_sum, e_max, e_gather, e_scatter)


def nonblocking_each(hc: HetComm) -> None:
    for root in range(n):
        (mine, fmine, block, whole), (e_sum, e_max, e_gather, e_scatter) = expected_calls(
            root, 10 + root
        )
        at = me == root
        got, fgot = np.zeros_like(mine), np.zeros_like(fmine)
        gathered, part = np.zeros((n, 5), np.int32), np.zeros(7, np.uint8)
        before = hc._seq
        req = hc.Ireduce(mine, got, MPI.SUM, root)
        check(isinstance(req, CollectiveRequest), f"Ireduce gave {type(req).__name__}")
        req.Wait()
        ran(hc, before, 1, "Ireduce", root, f"Ireduce root {root}")
        inplace = fmine.copy()
        if at:
            hc.Ireduce(MPI.IN_PLACE, inplace, MPI.MAX, root).Wait()
        else:
            hc.Ireduce(fmine, fgot, MPI.MAX, root).Wait()
        hc.Igather(block, gathered, root).Wait()
        ran(hc, before, 3, "Igather", root, f"Igather root {root}")
        hc.Iscatter(whole, part, root).Wait()
        ran(hc, before, 4, "Iscatter", root, f"Iscatter root {root}")
        if at:
            same(got, e_sum, f"Ireduce SUM root {root}")
            same(inplace, e_max, f"Ireduce MAX in place root {root}")
            same(gathered, e_gather, f"Igather root {root}")
        same(part, e_scatter, f"Iscatter root {root}")


def persistent_each(hc: HetComm) -> None:
    for root in range(n):
        got, gathered, part = (
            np.zeros(33, np.int64),
            np.zeros((n, 5), np.int32),
            np.zeros(7, np.uint8),
        )
        mine, block, whole = (
            np.zeros(33, np.int64),
            np.zeros(5, np.int32),
            np.zeros((n, 7), np.uint8),
        )
        reqs = {
            "Reduce_init": hc.Reduce_init(mine, got, MPI.SUM, root),
            "Gather_init": hc.Gather_init(block, gathered, root),
            "Scatter_init": hc.Scatter_init(whole, part, root),
        }
        for name, req in reqs.items():
            check(isinstance(req, PersistentRequest), f"{name} gave {type(req).__name__}")
        for k in range(3):
            (m, _, b, w), (e_sum, _, e_gather, e_scatter) = expected_calls(root, 40 + k)
            mine[:], block[:], whole[:] = m, b, w
            for name, req in reqs.items():
                before = hc._seq
                req.Start()
                req.Wait()
                ran(hc, before, 1, name, root, f"{name} root {root} start {k}")
            if me == root:
                same(got, e_sum, f"Reduce_init root {root} start {k}")
                same(gathered, e_gather, f"Gather_init root {root} start {k}")
            same(part, e_scatter, f"Scatter_init root {root} start {k}")
        for req in reqs.values():
            req.Free()


def mixed(hc: HetComm) -> None:
    """Several rooted calls outstanding with others, completed by MPI's own functions."""
    root = n - 1
    got, gathered, part = np.zeros(33, np.int64), np.zeros((n, 5), np.int32), np.zeros(7, np.uint8)
    pmine, pgot = np.zeros(33, np.int64), np.zeros(33, np.int64)
    preq = hc.Reduce_init(pmine, pgot, MPI.SUM, 0)
    for k, how in enumerate(("waitall", "waitany", "testall")):
        (mine, _, block, whole), (e_sum, _, e_gather, e_scatter) = expected_calls(root, 60 + k)
        pmine[:] = data(33, 70 + k)
        e_p = np.zeros_like(pgot)
        WORLD.Reduce(pmine, e_p, MPI.SUM, 0)
        bc = data(100, 80 + k, np.uint8)
        e_bc = bc.copy()
        WORLD.Bcast(e_bc, 0)
        before = hc._seq
        reqs = [hc.Ireduce(mine, got, MPI.SUM, root), hc.Igather(block, gathered, root)]
        MPI.Prequest.Startall([preq])
        reqs += [preq, hc.Iscatter(whole, part, root), hc.Ibcast(bc, 0)]
        token = np.zeros(1, np.int64)
        p2p = [
            WORLD.Irecv(token, (me - 1) % n, 91),
            WORLD.Isend(np.full(1, me, np.int64), (me + 1) % n, 91),
        ]
        if how == "waitall":
            MPI.Request.Waitall(p2p + reqs)
        elif how == "waitany":
            seen = set()
            while len(seen) < len(reqs):
                seen.add(MPI.Request.Waitany(reqs))
            MPI.Request.Waitall(p2p)
        else:
            while not MPI.Request.Testall(reqs + p2p):
                pass
        check(int(token[0]) == (me - 1) % n, f"{how}: the point-to-point pair")
        check(n == 1 or hc._seq == before + 5, f"{how}: hetcoll ran {hc._seq - before} calls")
        if me == root:
            same(got, e_sum, f"{how}: Ireduce")
            same(gathered, e_gather, f"{how}: Igather")
        if me == 0:
            same(pgot, e_p, f"{how}: Reduce_init")
        same(part, e_scatter, f"{how}: Iscatter")
        same(bc, e_bc, f"{how}: Ibcast")
    preq.Free()


def reduce_scatter_and_not_planned(hc: HetComm) -> None:
    """``Reduce_scatter_block``'s forms are planned as its blocking call is (a reduce, then a
    scatter); ``Iallgatherv`` is not planned: MPI's own request, ``last_call`` None."""
    mine = data(3 * n, 90)
    got, want = np.zeros(3, np.int64), np.zeros(3, np.int64)
    WORLD.Reduce_scatter_block(mine, want, MPI.SUM)
    plans, rooted = [], hc.planning.rooted
    hc.planning.rooted = lambda *args: plans.append(args[1]["collective"]) or rooted(*args)
    req = hc.Reduce_scatter_block_init(mine, got, MPI.SUM)
    at_init = sorted(plans)  # both halves planned in the *_init call, none at a start
    check(at_init == ([] if n == 1 else ["reduce", "scatter"]), f"planned at init: {at_init}")
    check(isinstance(req, PersistentRequest), f"Reduce_scatter_block_init: {type(req).__name__}")
    for k in range(2):
        got[:] = 0
        req.Start()
        req.Wait()
        same(got, want, f"Reduce_scatter_block_init start {k}")
        last = hc.last_call
        named = last is not None and last.collective == "Reduce_scatter_block_init"
        check(n == 1 or named, f"after Reduce_scatter_block_init: {last}")
    check(sorted(plans) == at_init, f"planned at the starts: {plans[len(at_init) :]}")
    hc.planning.rooted = rooted
    req.Free()
    got[:] = 0
    req = hc.Ireduce_scatter_block(mine, got, MPI.SUM)
    check(isinstance(req, CollectiveRequest), f"Ireduce_scatter_block: {type(req).__name__}")
    req.Wait()
    same(got, want, "Ireduce_scatter_block")
    last = hc.last_call
    named = last is not None and last.collective == "Ireduce_scatter_block"
    check(n == 1 or named, f"after Ireduce_scatter_block: {last}")
    block = data(me + 1, 91)
    counts = [r + 1 for r in range(n)]
    out, expected = np.zeros(sum(counts), np.int64), np.zeros(sum(counts), np.int64)
    WORLD.Allgatherv(block, [expected, counts])
    req = hc.Iallgatherv(block, [out, counts])
    check(not isinstance(req, CollectiveRequest), "Iallgatherv is MPI's own")
    req.Wait()
    same(out, expected, "Iallgatherv")
    check(hc.last_call is None, f"after Iallgatherv: {hc.last_call}")


def kept_by_mpi() -> None:
    hc = HetComm(WORLD, platform())
    mine, got, want = data(10, 95), np.zeros(10, np.int64), np.zeros(10, np.int64)
    WORLD.Reduce(mine, want, MPI.SUM, 0)
    req = hc.Ireduce(mine, got, MPI.SUM, 0)
    check(not isinstance(req, CollectiveRequest), "auto: Ireduce is MPI's own")
    req.Wait()
    preq = hc.Reduce_init(mine, got, MPI.SUM, 0)
    check(type(preq) is MPI.Prequest, "auto: Reduce_init is MPI's own")
    preq.Start()
    preq.Wait()
    preq.Free()
    if me == 0:
        same(got, want, "auto: Ireduce and Reduce_init")
    check(hc._seq == 0, "auto: MPI's own rooted calls")
    hc.close()


def chosen_per_call() -> None:
    speeds = [1e-9 * (1 + 9 * (r % 2)) for r in range(n)]
    hc = HetComm(WORLD, Platform(nodes_from_costs([1e-6] * n, speeds)), timeout=60)
    hc.one_host = False  # the model chooses, as on a cluster: the wrapper's own methods, not
    hc.__class__ = planned_class(hc)  # not mpi4py's, as on one host (runtime.rooted.bind_mpi)
    calls = {
        "Reduce": lambda h, s, r, root: (h.Reduce, h.Ireduce, (s, r, MPI.SUM, root)),
        "Gather": lambda h, s, r, root: (h.Gather, h.Igather, (s, r, root)),
        "Scatter": lambda h, s, r, root: (h.Scatter, h.Iscatter, (r, s, root)),
    }
    for name, parts in calls.items():
        cases, kinds = [], {}
        for count in (1, 16, 2048, 1 << 17):
            for root in (0, n - 1):
                mine = data(count, count + root)
                whole = np.zeros(count * (n if name != "Reduce" else 1), np.int64)
                blocking, _, args = parts(hc, mine, whole, root)
                blocking(*args)
                planned = hc.last_call is not None
                kinds[count, root] = planned
                expected = np.zeros_like(whole)
                getattr(WORLD, name)(*parts(WORLD, mine, expected, root)[2])
                cases.append((planned, count, root, mine, whole, expected))
        cases.sort(key=lambda case: case[0])  # MPI's first: it must not keep the others
        for k in range(2):  # the second time: what a repeated call looked up
            for planned, count, root, mine, whole, expected in cases:
                whole[:] = 0
                _, nonblocking, args = parts(hc, mine, whole, root)
                req = nonblocking(*args)
                got = isinstance(req, CollectiveRequest)
                req.Wait()
                what = f"auto I{name.lower()} {count} root {root} (time {k})"
                check(got == planned, f"{what}: planned {got}, the blocking call {planned}")
                last = hc.last_call
                named = last is not None and last.collective == f"I{name.lower()}"
                check(named == planned, f"{what}: last_call {last}")
                if name != "Scatter" and me != root:
                    expected = whole  # only the root receives
                same(whole, expected, what)
        if n >= 5 and name == "Reduce":
            both = len(set(kinds.values())) == 2
            check(both, f"auto {name}: one choice for every call {kinds}")
    hc.close()


def main() -> None:
    hc = HetComm(WORLD, platform(), "fnf", rooted_algo=ALGO, timeout=60)
    nonblocking_each(hc)
    persistent_each(hc)
    mixed(hc)
    hc.close()
    # a wrapper plans each request once: a fresh one, so that both halves are planned in
    # the *_init call (the calls above planned a reduce of the same bytes)
    hc = HetComm(WORLD, platform(), "fnf", rooted_algo=ALGO, timeout=60)
    reduce_scatter_and_not_planned(hc)
    hc.close()
    kept_by_mpi()
    chosen_per_call()
    report()


if __name__ == "__main__":
    main()
