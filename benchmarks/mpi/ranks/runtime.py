"""MPI side of bench_runtime.py: ``mpiexec -n 4 python -m mpi4py ranks/runtime.py OUT``.

Without emulation: a pipelined hetcoll ``Bcast`` of 8 MiB against native ``comm.Bcast``
and against the floor of any Python pipeline (a chain written straight in mpi4py),
and the per-call cost of a 1-byte broadcast (default check, ``check="always"``, and MPI's
own Bcast followed by a 32-byte Allreduce: the synchronising round ``check="always"`` adds).  The
machine may be busy, so every figure is measured side by side: rounds alternate the
variants, and besides each variant's best (latency) or median (per call) the ratio to
native is taken round by round, its median reported.  Latency of one broadcast = last
rank's finish minus the root's start on the shared monotonic clock (one host).  And how a
chain ``Bcast`` scales with its number of segments (1-byte segments, 1 024 to 16 384 of
them, and 64 MiB in 4 KiB segments): its first call and the median of the later ones.
And a planned persistent 1-byte ``Bcast`` (``binomial`` and ``fnf``: ``Start`` + ``Wait``)
next to MPI's ``Bcast`` and ``Bcast_init``, the planned blocking ``Bcast`` and a default
``HetComm``'s ``Bcast_init`` (``auto``: MPI's own request natively on one host), and each
rank's own cost of a start (per-rank medians of calls timed one by one, paired with
MPI's) beside the floor of the design (mpi4py's persistent requests of the same tree and
the start's message to the rank itself, by hand).  And
(``passthrough``) the calls a HetComm passes to MPI, among them small blocking ones (an
8-byte ``Bcast`` and ``Allreduce``, ``Barrier``, an object ``allreduce``) through a default
HetComm against mpi4py's own, and what the wrapper runs before MPI's call, alone.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.platform import Platform, nodes_from_costs
from hetcoll.runtime import segments
from hetcoll.runtime.fast import Rest
from hetcoll.runtime.rank_ops import SEND
from hetcoll.runtime.segments import Pace

world = MPI.COMM_WORLD
me, n = world.rank, world.size
flat = Platform(nodes_from_costs([1e-6] * n), name="homogeneous")


def latency(run) -> float:
    world.Barrier()
    t0 = time.monotonic_ns()
    run()
    t1 = time.monotonic_ns()
    start = world.bcast(t0, 0)
    end = world.allreduce(t1, op=MPI.MAX)
    return (end - start) / 1e9


def per_call(run, calls: int) -> float:
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    world.Barrier()
    return world.bcast((time.perf_counter() - t0) / calls, 0)


def side_by_side(variants: dict, measure, rounds: int, alternate: bool = False) -> dict:
    """Each variant measured once per round, rounds interleaved: per variant its samples
    (``alternate``: every other round in the reverse order, so that no variant always
    follows the same one)."""
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds):
        for name, run in list(variants.items())[:: -1 if alternate and r % 2 else 1]:
            samples[name].append(measure(run))
    return samples


def summary(samples: dict, best) -> dict:
    native = samples["native"]
    return {
        name: {
            "value": best(s),
            "ratio_median": statistics.median(a / b for a, b in zip(s, native, strict=True)),
            "samples": s,
        }
        for name, s in samples.items()
    }


def floor_chain(
    comm: MPI.Comm, buf: np.ndarray, seg: int, rest: Rest | Pace | None = None, spin: float = 0.0
) -> None:
    """The floor of any Python engine: a chain broadcast of ``buf`` in ``seg``-byte segments
    written straight in mpi4py (every receive posted at once, one message per segment, no
    header, each segment forwarded as soon as it is here).  Between looks as the engine
    waits: ``rest()`` (a :class:`~hetcoll.runtime.fast.Rest`) within ``spin`` seconds of
    the last completion, else ``time.sleep(0)`` (without ``rest``: always, as the engine
    before ``spin`` applied to it).  What a pipeline costs on this host before any engine
    overhead."""
    look = int(spin * 1e9)
    views = [buf[k : k + seg] for k in range(0, buf.size, seg)]
    last = time.monotonic_ns()
    reqs = [comm.Irecv(v, me - 1, 64) for v in views] if me else []
    have = len(views) if me == 0 else 0  # segments here (they complete in order)
    port, nxt = None, 0  # the send in flight, the next segment to send
    while have < len(views) or (me < n - 1 and (nxt < len(views) or port is not None)):
        if port is not None and port.Test():
            port, last = None, time.monotonic_ns()
        if port is None and me < n - 1 and nxt < have:
            port = comm.Isend(views[nxt], me + 1, 64)
            nxt += 1
            continue
        if have < len(views) and reqs[have].Test():
            have, last = have + 1, time.monotonic_ns()
            continue
        if rest is not None and time.monotonic_ns() - last < look:
            rest()
        else:
            time.sleep(0)


def floor_binomial(comm: MPI.Comm, buf: np.ndarray) -> None:
    """A binomial broadcast from rank 0 written straight in mpi4py (blocking ``Recv`` from
    the parent, then ``Send`` to each child): the floor of any Python engine's 1-byte call."""
    low = me & -me if me else 1 << n.bit_length()
    if me:
        comm.Recv(buf, me - low, 65)
    k = low >> 1
    while k:
        if me + k < n:
            comm.Send(buf, me + k, 65)
        k >>= 1


class FloorRound:
    """The floor of ``check="always"``: the engine's messages for a 1-byte binomial
    broadcast from rank 0 (persistent requests, a 40-byte header each) and its agreement
    round (dissemination, radix 2: a 24-byte message to ``me + 2**j``, one from
    ``me - 2**j``, round ``j + 1`` sent once round ``j`` arrived) written straight in mpi4py,
    waiting as the engine waits (:class:`hetcoll.runtime.fast.Rest`); ``agree=False``: the
    same broadcast without the round.  No checks, no wrapper: what these messages cost."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.rest = Rest()
        low = me & -me if me else 1 << n.bit_length()
        kids = []
        k = low >> 1
        while k:
            if me + k < n:
                kids.append(me + k)
            k >>= 1
        self.data = bytearray(41)
        self.recv = comm.Recv_init(self.data, me - low, 66) if me else None
        self.sends = [comm.Send_init(self.data, c, 66) for c in kids]
        self.out, self.got, step = [], [], 1
        while step < n:
            self.out.append(comm.Send_init(bytearray(24), (me + step) % n, 67))
            self.got.append(comm.Recv_init(bytearray(24), (me - step) % n, 67))
            step *= 2

    def __call__(self, agree: bool = True) -> None:
        rest, out, got, j = self.rest, self.out, self.got, 0
        rounds = len(got) if agree else 0
        if rounds:
            MPI.Prequest.Startall(got)
            out[0].Start()
        if self.recv is not None:
            self.recv.Start()
            while not self.recv.Test():
                if j < rounds and got[j].Test():
                    j += 1
                    if j < rounds:
                        out[j].Start()
                    continue
                rest()
        for req in self.sends:
            req.Start()
            while not req.Test():
                rest()
        while j < rounds:
            if got[j].Test():
                j += 1
                if j < rounds:
                    out[j].Start()
                continue
            rest()
        while rounds and not MPI.Request.Testall(out):
            rest()


def segment_scaling(hc: HetComm, cases: list[tuple[int, int]], calls: int) -> list[dict]:
    """Per case ``(bytes, segment size)``: a ``Bcast`` from rank 0 over ``hc`` in that many
    segments, its first call (plans the schedule, compiles the rank's loop, runs) and the
    median of the ``calls - 1`` later ones (latency: the root's start to the last finish),
    and whether every rank got the data."""
    rows = []
    for nbytes, seg in cases:
        want = (np.arange(nbytes) % 251).astype(np.uint8)
        buf = want.copy() if me == 0 else np.zeros(nbytes, np.uint8)
        times = []
        for _ in range(calls):
            if me:
                buf[:] = 0
            times.append(latency(lambda buf=buf, seg=seg: hc.Bcast(buf, 0, segment_size=seg)))
        ok = world.allreduce(bool(np.array_equal(buf, want)), op=MPI.LAND)
        later = statistics.median(times[1:]) if len(times) > 1 else None
        rows.append(
            {
                "nbytes": nbytes,
                "segment_size": seg,
                "segments": -(-nbytes // seg),
                "first": times[0],
                "later": later,
                "samples": times,
                "correct": ok,
            }
        )
        del want, buf
    return rows


def pass_through(hc: HetComm, rounds: int, iters: int = 6) -> dict:
    """Calls a HetComm passes to MPI (``Ibcast`` 64 KiB, ``Iallreduce`` 1 MiB, a ``Split``
    sub-communicator's ``Allreduce`` 1 MiB), each after the heavy calls of a loop (an 8 MiB
    ``Bcast``, a 1 MiB ``Allreduce``).  Variants, alternating round by round:

    - ``without``: the heavy calls are MPI's own (on the world communicator), the calls
      made on mpi4py's communicators;
    - ``with``: the heavy calls run by ``hc``, a HetComm with a planned schedule (active:
      its private communicator, its notices' receive, its cached plans), the calls made on
      mpi4py's communicators as in ``without``;
    - ``through``: the heavy calls MPI's own, the calls made on a default HetComm (which
      passes them to MPI) and on its ``Split``: what hetcoll's method adds to MPI's call.

    Half the iterations separate the heavy calls from the timed call by an untimed
    barrier: then ``cost`` (last rank's entry to last rank's exit) is the call's own cost,
    whatever hetcoll left behind; the other half time the call right after the heavy ones:
    ``seen`` (the mean over ranks of entry to exit, what a rank's timer shows) and
    ``skew`` (first to last entry) include the ranks the heavy calls left late.  Per
    variant the median over a round's calls; per round the ratio to ``without``."""
    default = HetComm(world, flat, timeout=60)  # auto: natively on one host, MPI's own
    sub, dsub = world.Split(me % 2, me), default.Split(me % 2, me)
    small = np.zeros(8192)
    a, b = np.ones(1 << 17), np.zeros(1 << 17)
    heavy = np.zeros(8 << 20, np.uint8)

    def calls(c, s):
        return {
            "Ibcast 64 KiB": lambda: c.Ibcast(small, 0).Wait(),
            "Iallreduce 1 MiB": lambda: c.Iallreduce(a, b).Wait(),
            "Split sub-communicator Allreduce 1 MiB": lambda: s.Allreduce(a, b),
        }

    mpi_heavy = lambda: (world.Bcast(heavy, 0), world.Allreduce(a, b))  # noqa: E731
    loops = {
        "without": (mpi_heavy, calls(world, sub)),
        "with": (lambda: (hc.Bcast(heavy, 0), hc.Allreduce(a, b)), calls(world, sub)),
        "through": (mpi_heavy, calls(default, dsub)),
    }
    kinds = ("cost", "seen", "skew")
    samples = {(v, c, k): [] for v in loops for c in calls(world, sub) for k in kinds}
    for r in range(rounds + 1):  # the first round warms up (plans, pages, choices)
        order = list(loops) if r % 2 else list(loops)[::-1]
        for variant in order:
            heavy_calls, timed = loops[variant]
            stamps = {(c, sep): [] for c in timed for sep in (True, False)}
            world.Barrier()
            for k in range(iters):
                separated = k % 2 == 0
                for name, call in timed.items():
                    heavy_calls()
                    if separated:
                        world.Barrier()
                    t0 = time.monotonic_ns()
                    call()
                    stamps[(name, separated)].append((t0, time.monotonic_ns()))
            every = world.allgather(stamps)
            if r == 0:
                continue
            for name in timed:
                cost = _spans(
                    every, (name, True), lambda sp: max(e for _, e in sp) - max(s for s, _ in sp)
                )
                seen = _spans(
                    every, (name, False), lambda sp: statistics.mean(e - s for s, e in sp)
                )
                skew = _spans(
                    every, (name, False), lambda sp: max(s for s, _ in sp) - min(s for s, _ in sp)
                )
                for kind, v in zip(kinds, (cost, seen, skew), strict=True):
                    samples[(variant, name, kind)].append(v)
    sub.Free()
    dsub.Free()
    default.close()
    out = {}
    for name in calls(world, sub):
        for kind in kinds:
            wo = samples[("without", name, kind)]
            row = {"without": statistics.median(wo), "samples_without": wo}
            for variant in ("with", "through"):
                w = samples[(variant, name, kind)]
                row[variant] = statistics.median(w)
                row[f"samples_{variant}"] = w
                if kind != "skew":
                    row[f"ratio_{variant}"] = statistics.median(
                        x / y for x, y in zip(w, wo, strict=True)
                    )
            out[f"{name} ({kind})"] = row
    return out


def small_blocking(rounds: int, calls: int = 300) -> dict:
    """Small blocking calls a HetComm passes to MPI: ``Bcast`` of 8 bytes, ``Allreduce`` of
    one float64, ``Barrier`` and an object ``allreduce`` of a float, each a loop of
    ``calls`` calls on mpi4py's communicator (``native``), on the default HetComm
    (``hetcoll``: natively on one host ``auto`` gives every call to MPI, and its methods are
    mpi4py's own, bound on the instance) and on a HetComm made with ``algo="mpi"``
    (``front``: its own methods, one Python call before mpi4py's), the three in rotating
    order round by round; per call the median per-call time of each and the median (min-max)
    of the round-by-round ratios to native."""
    default = HetComm(world, flat, timeout=60)
    named = HetComm(world, flat, "mpi", timeout=60)
    word = np.zeros(1, dtype=np.int64)
    x, y = np.ones(1), np.zeros(1)
    cases = {
        "Bcast 8 B": lambda c: c.Bcast(word, 0),
        "Allreduce 8 B": lambda c: c.Allreduce(x, y, MPI.SUM),
        "Barrier": lambda c: c.Barrier(),
        "allreduce(float)": lambda c: c.allreduce(1.0, MPI.SUM),
    }
    comms = {"native": world, "hetcoll": default, "front": named}
    order = list(comms)
    samples = {(name, v): [] for name in cases for v in comms}
    for r in range(rounds + 1):  # the first round warms up (choices, look-ups)
        for name, case in cases.items():
            for v in order[r % 3 :] + order[: r % 3]:
                t = per_call(lambda c=comms[v], case=case: case(c), calls)
                if r:
                    samples[(name, v)].append(t)
    path = {"hetcoll": _python_path(default, word, x, y), "front": _python_path(named, word, x, y)}
    default.close()
    named.close()
    out = {}
    for name in cases:
        nat = samples[(name, "native")]
        row = {"native": statistics.median(nat), "samples_native": nat}
        for v in ("hetcoll", "front"):
            got = samples[(name, v)]
            ratios = [h / n for h, n in zip(got, nat, strict=True)]
            row |= {
                v: statistics.median(got),
                f"samples_{v}": got,
                f"ratio_{v}": statistics.median(ratios),
                f"ratio_{v}_min": min(ratios),
                f"ratio_{v}_max": max(ratios),
                f"path_ns_{v}": path[v].get(name),
            }
        out[name] = row
    return out


def _python_path(hc: HetComm, word, x, y, calls: int = 20000) -> dict:
    """What a pass-through call runs between the user's call and MPI's, alone: each repeated
    blocking call's entry (``hc._passing``, its last item MPI's method) given a C function
    of the same arity that does nothing (``operator.is_``, ``slice``, ``int``), the wrapper's
    call timed against that function called directly: nanoseconds per call on this rank
    (the least of 5 loops of ``calls``).  The entries are restored after.  A call whose
    method is mpi4py's own (bound on the instance) runs nothing of hetcoll: 0."""
    import operator

    stubs = {"Bcast 8 B": operator.is_, "Allreduce 8 B": slice, "Barrier": int}
    calls_of = {
        "Bcast 8 B": (lambda: hc.Bcast(word, 0), lambda: operator.is_(word, 0)),
        "Allreduce 8 B": (lambda: hc.Allreduce(x, y, MPI.SUM), lambda: slice(x, y, MPI.SUM)),
        "Barrier": (lambda: hc.Barrier(), lambda: int()),  # noqa: UP018  (a C call)
    }
    keys = {
        "Bcast 8 B": (0, word.nbytes),
        "Allreduce 8 B": ("allreduce", y.nbytes, y.itemsize, id(MPI.SUM)),
        "Barrier": "barrier",
    }
    saved = dict(hc._passing)
    out = {}
    try:
        for name, key in keys.items():
            method = {"Bcast 8 B": hc.Bcast, "Allreduce 8 B": hc.Allreduce, "Barrier": hc.Barrier}
            if getattr(method[name], "__func__", None) is getattr(MPI.Intracomm, name.split()[0]):
                out[name] = 0.0
                continue
            entry = hc._passing.get(key)
            if not isinstance(entry, tuple) or len(entry) != 5:
                continue  # not passed to MPI as a repeated blocking call: nothing to time
            hc._passing[key] = (*entry[:4], stubs[name])
            wrapped, bare = calls_of[name]
            best = []
            for f in (wrapped, bare):
                loops = []
                for _ in range(5):
                    t0 = time.perf_counter_ns()
                    for _ in range(calls):
                        f()
                    loops.append((time.perf_counter_ns() - t0) / calls)
                best.append(min(loops))
            out[name] = best[0] - best[1]
    finally:
        hc._passing.clear()
        hc._passing.update(saved)
    world.Barrier()
    return out


def _spans(every: list, key, measure) -> float:
    """The median over a round's calls of ``measure(every rank's (entry, exit))``, seconds."""
    calls = len(every[0][key])
    return statistics.median(measure([s[key][k] for s in every]) for k in range(calls)) / 1e9


def per_rank(variants: dict, rounds: int, around: dict, calls: int = 1000) -> dict:
    """Each rank's own cost of one call: per round (the variants in alternating order, each
    after a barrier) the median of ``calls`` back-to-back calls timed one by one with
    ``perf_counter_ns``; per variant the median over the rounds and the medians of the
    round-by-round ratios to ``native`` and ``native Bcast_init``.  ``around``: a variant's
    ``(before, after)``, called untimed around its calls of a round.  A rank's median is
    what its own work costs, which a busy host's descheduling (the per-call means) hides."""
    pc = time.perf_counter_ns
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds + 1):  # the first round warms up
        for name, run in list(variants.items())[:: 1 if r % 2 else -1]:
            before, after = around.get(name, (_none, _none))
            before()
            world.Barrier()
            times = []
            for _ in range(calls):
                t0 = pc()
                run()
                times.append(pc() - t0)
            world.Barrier()
            after()
            if r:
                samples[name].append(statistics.median(times))
    out = {}
    for name, s in samples.items():
        out[name] = {
            "median_ns": statistics.median(s),
            "over_native": statistics.median(
                a / b for a, b in zip(s, samples["native"], strict=True)
            ),
            "over_native_init": statistics.median(
                a / b for a, b in zip(s, samples["native Bcast_init"], strict=True)
            ),
        }
    return out


def _none() -> None:
    pass


class FloorPersistent:
    """What a planned persistent 1-byte Bcast on point-to-point requests cannot avoid, by
    hand: mpi4py's persistent requests of the same tree (``kinds``/``peers``: one rank's
    receive then sends, in order) on a duplicate of ``comm``, and the start's zero-byte
    message to the rank itself (an ``Ssend_init`` and its ``Recv_init``)."""

    def __init__(self, comm: MPI.Comm, buf: np.ndarray, kinds, peers) -> None:
        self.comm, self.own = comm.Dup(), MPI.COMM_SELF.Dup()
        self.reqs = [
            (self.comm.Send_init if kind == SEND else self.comm.Recv_init)(buf, peer, 1)
            for kind, peer in zip(kinds, peers, strict=True)
        ]
        self.receives = bool(kinds) and kinds[0] != SEND
        empty = [bytearray(1), 0, MPI.BYTE]
        self.start = self.own.Ssend_init(empty, 0, 1)
        self.done = self.own.Recv_init(empty, 0, 1)

    def __call__(self) -> None:
        reqs = self.reqs
        if self.receives:
            reqs[0].Start()
        else:
            MPI.Prequest.Startall(reqs)
        self.start.Start()
        if self.receives:
            reqs[0].Wait()
            if len(reqs) > 1:
                MPI.Prequest.Startall(reqs[1:])
                MPI.Request.Waitall(reqs[1:])
        else:
            MPI.Request.Waitall(reqs)
        self.done.Start()
        self.done.Wait()
        self.start.Wait()

    def free(self) -> None:
        for req in (*self.reqs, self.start, self.done):
            req.Free()
        self.comm.Free()
        self.own.Free()


out: dict = {"ranks": n}
# BENCH_PARTS: which parts to run (bench_runtime.py --only); BENCH_ROUNDS: 1-byte rounds
parts = os.environ.get("BENCH_PARTS", "bcast_8MiB,one_byte,segments").split(",")
big = np.zeros(8 * 1024 * 1024, dtype=np.uint8)
if me == 0:
    big[:] = np.arange(big.size) % 251
wrappers = {algo: HetComm(world, flat, algo, timeout=60) for algo in ("chain", "binomial")}
# the same chain, its idle ranks looking again at once for 1 ms (spin) before they nap: the
# option for a host with no other work (docs/runtime.md, Native speed); and napping at every
# idle look (spin=0: the default before the pace, segments.Pace)
spun = HetComm(world, flat, "chain", timeout=60, spin=1e-3)
napping = HetComm(world, flat, "chain", timeout=60, spin=0.0)
variants = {"native": lambda: world.Bcast(big, 0)}
for algo, hc in wrappers.items():
    for seg in (256 * 1024, 1024 * 1024, 2 * 1024 * 1024, None):
        key = f"{algo} " + (f"seg={seg // 1024}KiB" if seg else "unsegmented")
        variants[key] = lambda hc=hc, seg=seg: hc.Bcast(big, 0, segment_size=seg)
# the default chain of 256 KiB segments on a wrapper of its own, as the spin variants: the
# three differ only in how their idle ranks look again
alone = HetComm(world, flat, "chain", timeout=60)
variants["chain seg=256KiB"] = lambda: alone.Bcast(big, 0, segment_size=256 * 1024)
variants["chain seg=256KiB spin=1ms"] = lambda: spun.Bcast(big, 0, segment_size=256 * 1024)
variants["chain seg=256KiB spin=0"] = lambda: napping.Bcast(big, 0, segment_size=256 * 1024)
floor_comm = world.Dup()
variants["floor: mpi4py chain seg=256KiB"] = lambda: floor_chain(floor_comm, big, 256 * 1024)
floor_rest = Rest()
variants["floor: mpi4py chain seg=256KiB, spin=1ms"] = lambda: floor_chain(
    floor_comm, big, 256 * 1024, floor_rest, 1e-3
)
floor_pace = Pace()  # every idle look through a pace of its own (an hour of spin)
variants["floor: mpi4py chain seg=256KiB, pace"] = lambda: floor_chain(
    floor_comm, big, 256 * 1024, floor_pace, 3600.0
)
if "bcast_8MiB" in parts:
    for run in variants.values():  # warm up: plans, pages
        run()
    rounds = int(os.environ.get("BENCH_BIG_ROUNDS", "15"))
    out["bcast_8MiB"] = summary(side_by_side(variants, latency, rounds, alternate=True), min)
    ok = bool(np.array_equal(big, np.arange(big.size) % 251))
    out["bcast_8MiB_correct"] = world.allreduce(ok, op=MPI.LAND)
    # what the default's pace did (segments.PACE: periods judged napping, yielding), per rank
    out["bcast_8MiB_pace"] = world.gather(list(segments.PACE.periods), 0)

one = np.zeros(1, dtype=np.uint8)
digest, agreed = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
always = HetComm(world, flat, "binomial", timeout=60, check="always")
floor_round = FloorRound(floor_comm)
variants = {
    "native": lambda: world.Bcast(one, 0),
    # what check="always" must at least cost: every rank learns every rank's digest before
    # it returns, a synchronising round that a lone Bcast (whose root returns at once) lacks
    "native Bcast + Allreduce(32 B)": lambda: (
        world.Bcast(one, 0),
        world.Allreduce(digest, agreed, op=MPI.MAX),
    ),
    # MPI's own synchronisation alone: a lower bound for any call after which every rank
    # knows every rank has entered it (what check="always" guarantees)
    "native Barrier": lambda: floor_comm.Barrier(),
    "floor: mpi4py binomial": lambda: floor_binomial(floor_comm, one),
    # the same messages as the engine's, by hand: the round's own cost, side by side
    "floor: engine's messages, no round": lambda: floor_round(agree=False),
    "floor: engine's messages + round": floor_round,
    "hetcoll": lambda: wrappers["binomial"].Bcast(one, 0),
    "hetcoll check=always": lambda: always.Bcast(one, 0),
}
if "one_byte" in parts:
    for run in variants.values():
        for _ in range(50):
            run()
    rounds = int(os.environ.get("BENCH_ROUNDS", "11"))
    samples = side_by_side(variants, lambda run: per_call(run, 300), rounds)
    out["one_byte"] = summary(samples, statistics.median)
    pairs = zip(samples["hetcoll check=always"], samples["hetcoll"], strict=True)
    out["one_byte_always_over_default"] = statistics.median(a / b for a, b in pairs)
    pairs = zip(
        samples["floor: engine's messages + round"],
        samples["floor: engine's messages, no round"],
        strict=True,
    )
    out["one_byte_floor_round_over_no_round"] = statistics.median(a / b for a, b in pairs)
    pairs = zip(samples["native Barrier"], samples["hetcoll"], strict=True)
    out["one_byte_barrier_over_default"] = statistics.median(a / b for a, b in pairs)
if "persistent" in parts:
    # a planned persistent 1-byte Bcast (Start + Wait) next to MPI's Bcast and Bcast_init;
    # each planned request lives only while its own samples run (one live request, as a
    # program that makes one; its thread looks for MPI's Startall now and then meanwhile)
    fnf = HetComm(world, flat, "fnf", timeout=60)
    planned = {"binomial": wrappers["binomial"], "fnf": fnf}
    native_p = world.Bcast_init(one, 0)
    # a default HetComm (auto: MPI's own choice natively on one host): its Bcast_init is
    # MPI's own request, which must cost what MPI's does
    auto = HetComm(world, flat, timeout=60)
    auto_p = auto.Bcast_init(one, 0)
    held: dict = {}
    variants = {
        "native": lambda: world.Bcast(one, 0),
        "native Bcast_init": lambda: (native_p.Start(), native_p.Wait()),
        "hetcoll auto Bcast_init": lambda: (auto_p.Start(), auto_p.Wait()),
    }
    for algo, hc in planned.items():
        variants[f"hetcoll {algo} Bcast"] = lambda hc=hc: hc.Bcast(one, 0)
        variants[f"hetcoll {algo} Bcast_init"] = lambda a=algo: (held[a].Start(), held[a].Wait())
    samples = {k: [] for k in variants}
    for rnd in range(-1, int(os.environ.get("BENCH_ROUNDS", "11"))):  # -1: warm-up
        for name, run in variants.items():
            algo = name.split()[1] if name.endswith("Bcast_init") else None  # auto: made once
            if algo in planned:
                held[algo] = planned[algo].Bcast_init(one, 0)
            if rnd < 0:
                for _ in range(50):
                    run()
            else:
                samples[name].append(per_call(run, 300))
            if algo in planned:
                held.pop(algo).Free()
    # each rank's own cost (per-rank medians, paired), beside the floor of the design
    probe = planned["binomial"].Bcast_init(one, 0)
    direct = getattr(probe, "direct", None)  # a DirectRequest's tree (n > 1, natively)
    floor = (
        None
        if direct is None
        else FloorPersistent(world, one, direct.plan.kinds, direct.plan.peers)
    )
    probe.Free()
    variants = {
        "native": lambda: world.Bcast(one, 0),
        "native Bcast_init": lambda: (native_p.Start(), native_p.Wait()),
    }
    if floor is not None:
        variants["floor: mpi4py p2p + self-message"] = floor
    around = {}
    for algo, hc in planned.items():  # one live planned request at a time, as above
        name = f"hetcoll {algo} Bcast_init"
        variants[name] = lambda a=algo: (held[a].Start(), held[a].Wait())
        around[name] = (
            lambda a=algo, hc=hc: held.__setitem__(a, hc.Bcast_init(one, 0)),
            lambda a=algo: held.pop(a).Free(),
        )
    mine = per_rank(variants, int(os.environ.get("BENCH_ROUNDS", "11")), around)
    if floor is not None:
        floor.free()
    out["persistent_per_rank"] = world.gather(mine, 0)
    native_p.Free()
    auto_p.Free()
    auto.close()
    fnf.close()
    out["persistent"] = summary(samples, statistics.median)
    for name, v in out["persistent"].items():
        pairs = zip(samples[name], samples["native Bcast_init"], strict=True)
        v["ratio_init_median"] = statistics.median(a / b for a, b in pairs)
if "passthrough" in parts:
    out["passthrough"] = pass_through(
        wrappers["binomial"], int(os.environ.get("BENCH_ROUNDS", "11"))
    )
    out["passthrough_small"] = small_blocking(int(os.environ.get("BENCH_ROUNDS", "11")))
if "segments" in parts:
    calls = int(os.environ.get("BENCH_SEG_CALLS", "3"))
    most = int(os.environ.get("BENCH_SEG_MAX", "16384"))
    cases = [(m, 1) for m in (1024, 2048, 4096, 8192, 16384) if m <= most]
    cases += [(64 << 20, 4096)] if most >= 16384 else []
    out["segments"] = segment_scaling(wrappers["chain"], cases, calls)
for hc in (*wrappers.values(), alone, spun, napping, always):
    hc.close()
floor_comm.Free()
if me == 0:
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh)
