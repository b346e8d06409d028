"""``hetcoll tune``: on the job's own ranks, measure MPI's own collective and hetcoll's
candidate plans side by side, and say per size which to run (the MPI side of the command).

For each collective and size, rank 0 plans the candidates (:func:`hetcoll.compare.compare`:
the ``count`` fastest distinct schedules the simulator finds, a broadcast's slice sizes
included, and the fastest unsliced one when those are all sliced) and every rank measures
them and MPI's own, **paired**: in each of ``rounds`` *selection rounds* every candidate
runs once, in an order rotated from round to round and reversed every other round
(:func:`rotation`: none always first or always after the same one), right after the
others, so that a busy host slows them alike.  One measurement is a loop of calls (as
many as take about ``loop`` seconds of MPI's own) between two barriers, the time of the
slowest rank divided by the calls.  A candidate's *speed-up* in a round is MPI's time
over its own; it **wins** when its speed-up exceeds 1 in at least :data:`WIN_SHARE` of
the rounds, and of those that win, the winner is the one that beats the most others head
to head, faster in more than half the paired rounds, then the largest median speed-up
(none: "use MPI"; :func:`pick`): near-equals are ranked by their rounds, not by one lucky
round's size.

**Confirmed** (the row's ``confirmed``: its speed-ups): the winner among several candidates
is the luckiest of them as much as the fastest (seven MPICH algorithms exactly as fast as
MPICH's own: one of them wins 4 rounds of 5 by chance with probability
:math:`1 - (1 - 6/32)^7 = 0.77`), so it runs ``rounds`` more paired rounds against MPI's own
alone, and stays the winner only if it wins :data:`WIN_SHARE` of them too ("use MPI"
otherwise).  Fresh rounds are not chosen for their luck: a candidate as fast as MPI's
own then passes with probability 0.19, one truly faster nearly always.

**Knobs** (``segment_sizes``, ``spins``): a user's own settings, measured beside the
candidates: a broadcast's best plan with each of ``segment_sizes`` (smaller than the
message), and each candidate on a HetComm with each ``spin``.  A row lists in ``slower``
every plan, knob or not, whose median speed-up is below 1 (measured slower than MPI's own,
what a user setting that knob would get).  A plan measured with a ``spin`` is reported,
never picked: a tuning file's rule has no ``spin``, so it would run without it.

**MPICH's algorithms** (``mpich``, natively): an allreduce's or an allgather's candidates
include MPI's own with each algorithm MPICH accepts forced through its control variable
for the call (:mod:`hetcoll.runtime.mpich_cvars`: ``ring``, ``recursive_doubling``, ...),
measured and picked by the same rule as the plans; the winner's rule names it
(``{"algorithm": "mpi", "mpich": "ring"}``), and a ``HetComm`` given the file forces it
for those sizes.  ``count`` 0 measures no plan of hetcoll's: MPI's own and, with
``mpich``, its forced algorithms.

A row with MPICH's algorithms is measured the way a program calls them and a ``HetComm``
runs them: natively MPI's own is the plain communicator's method (what a ``HetComm`` binds
or looks up for a call MPI keeps) and a forced algorithm that method wrapped in the stores
that force it (:meth:`~hetcoll.runtime.mpich_cvars.Algorithms.forcing`, the stores a
``HetComm`` makes, :mod:`hetcoll.runtime.forced`: their cost is in the time, so an
algorithm whose gain is below it is not picked); and one measurement is a loop of calls
back to back, as a program's loop makes them (at least :data:`LOOP_CALLS`, as many as take
about ``loop`` seconds of MPI's own), the slowest rank's time divided by the calls, as
``benchmarks/mpi/bench_mpich_algorithms.py`` measures them.  Not single calls each between
barriers: with more ranks than cores a call that starts with every rank released by a
barrier ranks the algorithms unlike a loop, where a call's ranks arrive as the last call
left them (on 4 ranks on 2 cores at a 512 B allreduce, ``tree`` and
``recursive_doubling`` are about even in single calls and ``tree`` takes about 1.7 times
as long in a loop: docs/runtime.md).
Its confirmation keeps MPI's own unless a forced algorithm is significantly faster
(:mod:`hetcoll.jobs.confirmation`): the three candidates of the largest median speed-ups
above 1 in the selection rounds (the row's ``first`` and ``runner_up`` are the first two: their
labels and speed-ups, the runner-up's over the first too) run with MPI's own in fresh paired
rounds, the order rotated, ``rounds`` at a time and more only while the decision is close
(at most :data:`~hetcoll.jobs.confirmation.LOOKS` times ``rounds``; the row's
``confirm_rounds``), and one takes the rule only when a sign test says it beats MPI's own in
more rounds than chance would (several algorithms within a few per cent of each other are
otherwise ranked by the luck of the rounds); each look's decision is rank 0's, sent to every
rank.

Natively, MPI's own is the communicator's collective (``MPI_Bcast``, ...); under
emulation it is MPICH's algorithm for the call run through the same engine and emulation
(:mod:`hetcoll.mpich`), the only fair baseline there.

**The engine's cost per message** (:func:`engine_cost`, the tuning file's ``message_cost``,
what ``auto`` charges per message of a plan's busiest rank, or of a ``forest`` plan's
critical chain: :mod:`hetcoll.choice`; on the flat broadcast this module times the two counts
are the root's sends): a flat broadcast (:data:`COST_PLANNER`: the root sends to every other
rank) of :data:`COST_SLICES` slices of :data:`COST_SLICE` bytes against the same broadcast
whole, paired, measured as every candidate is (loops of :data:`COST_LOOP` seconds, at least
5 rounds); per round the sliced one's measured time beyond the whole one's, less what the
model predicts for that difference, divided by the messages the busiest rank (the root)
handles beyond the whole one's; the median over the rounds (0 when negative).  Sound because
the two runs move the same bytes from the same root to the same ranks through the same
engine: what the model predicts for the extra slices (their latencies, emulated or not) is
taken out, and what remains is the engine's own work per extra message of the busiest rank
at this host's ranks per core and load, the unit ``auto`` charges.  A flat tree because its
busiest rank handles every message and its model is that rank's sends in a row, which the
emulation follows closely; a chain's whole run can stray from its model by more than the
engine's cost (an unsliced relay's receive and send overlap in the emulation), and its extra
messages are wake-ups of one rank after another, which the charge per busiest rank's message
does not describe.  Under emulation the figure is real time beside the emulated
costs.  Natively the model's part is the platform's, so the figure holds the model's error
too: sound on a probed platform (tune's default).  The slices are of the size ``auto`` weighs
for the long broadcasts where the charge decides: a slice's own work in the engine grows
with its bytes, and tiny slices hide it in the modelled latencies.  Rank 0's figure is sent
to every rank, and the file carries one number: every rank charges the same.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import KnobWarning
from ..hetcomm import HetComm
from ..platform import Platform
from . import confirmation
from .confirmation import rotation

__all__ = [
    "COST_LOOP",
    "COST_PLANNER",
    "COST_SLICE",
    "COST_SLICES",
    "LOOP_CALLS",
    "WIN_SHARE",
    "engine_cost",
    "knobs",
    "label",
    "measure_calls",
    "pick",
    "rotation",
    "settle",
    "slower",
    "tune_job",
]

#: a plan wins when it is faster than MPI's own in at least this share of the paired rounds
WIN_SHARE = 0.8
#: a row with MPICH's algorithms: at least this many calls in a loop (a loop of calls that
#: take longer than ``loop`` each is still mostly calls that did not start at a barrier)
LOOP_CALLS = 5
COLLECTIVES = ("bcast", "allreduce", "allgather", "barrier")
#: the engine's cost per message is measured on a broadcast planned so ...
COST_PLANNER = "flat"
#: ... in this many slices ...
COST_SLICES = 16
#: ... of this many bytes each: the slices ``auto`` weighs for the long broadcasts where
#: the charge decides (tiny slices hide the engine's work in the latencies of the model)
COST_SLICE = 64 * 1024
#: seconds each measurement of the cost lasts (a loop of calls, longer than a candidate's:
#: the figure is a difference of two times)
COST_LOOP = 0.2


def tune_job(
    platform: Platform | None,
    *,
    collectives: tuple[str, ...],
    sizes: tuple[int, ...],
    rounds: int = 5,
    count: int = 3,
    loop: float = 0.02,
    emulate: bool = False,
    time_scale: float = 1.0,
    timeout: float = 60.0,
    probe_sizes: tuple[int, ...] | None = None,
    comm: MPI.Comm | None = None,
    segment_sizes: tuple[int, ...] = (),
    spins: tuple[float, ...] = (),
    mpich: bool = False,
) -> dict[str, Any] | None:
    """Measure (collective); the result on rank 0, None elsewhere.  Without ``platform``
    the ranks are probed first (``probe_sizes``) and the plans made for what it found;
    ``segment_sizes`` and ``spins``: knobs measured too; ``mpich``: MPICH's algorithms
    too, natively, where every rank can force them (module doc)."""
    comm = comm or MPI.COMM_WORLD
    forced = _forcible(comm) if mpich and not emulate else None
    probed = None
    if platform is None:
        platform, probed = _probe(comm, probe_sizes, timeout)
    rows = []
    settings = {"emulate": emulate, "time_scale": time_scale, "timeout": timeout}
    with HetComm(comm, platform, "mpi", **settings) as hc, warnings.catch_warnings():
        # the knobs are what tune measures: the row's verdict is the user's warning
        warnings.simplefilter("ignore", KnobWarning)
        spun = {s: HetComm(comm, platform, "mpi", spin=s, **settings) for s in spins}
        try:
            for collective in collectives:
                for nbytes in (0,) if collective == "barrier" else sizes:
                    plans = comm.bcast(
                        _plans(hc, collective, nbytes, count, forced) if comm.rank == 0 else None
                    )
                    plans += knobs(plans, collective, nbytes, segment_sizes, spins)
                    row = measure_calls(hc, collective, nbytes, plans, rounds, loop, spun)
                    rows.append(row)
            cost = engine_cost(hc, rounds)
        finally:
            for other in spun.values():
                other.close()
    if comm.rank != 0:
        return None
    return {
        "ranks": comm.size,
        "emulated": emulate,
        "platform": platform.name,
        "rounds": rounds,
        "rows": rows,
        "probed": probed,
        "message_cost": cost,
    }


def engine_cost(hc: HetComm, rounds: int = 5, loop: float = COST_LOOP) -> float:
    """The engine's own real seconds per message of the busiest rank beyond the model's
    time, measured on ``hc``'s ranks (module doc); collective, the same on every rank."""
    from ..compare import busiest_messages
    from ..simulator import simulate

    if hc.size == 1:  # one rank sends no message: nothing to measure or to charge
        return 0.0
    nbytes = COST_SLICES * COST_SLICE
    plans = [
        {"algorithm": COST_PLANNER, "segment_size": None},
        {"algorithm": COST_PLANNER, "segment_size": COST_SLICE},
    ]
    with warnings.catch_warnings():  # slices measured, not the user's knob
        warnings.simplefilter("ignore", KnobWarning)
        row = measure_calls(hc, "bcast", nbytes, plans, max(rounds, 5), loop, confirm=False)
    scale = hc.time_scale if hc.emulate else 1.0
    model, messages = [], []
    for p in plans:
        sched = hc.schedule(0, None, nbytes, p["segment_size"], algo=p["algorithm"])
        found = simulate(hc.platform, sched, hc.model)
        model.append(found.makespan * scale)
        messages.append(busiest_messages(found))
    whole, sliced = (p["times"] for p in row["plans"])
    per = [
        (ts - tw - (model[1] - model[0])) / (messages[1] - messages[0])
        for tw, ts in zip(whole, sliced, strict=True)
    ]
    return float(hc.base.bcast(max(0.0, float(np.median(per))), root=0))


def _probe(comm: MPI.Comm, sizes, timeout: float) -> tuple[Platform, dict[str, Any]]:
    from ..platform import nodes_from_costs
    from ..runtime.probe import DEFAULT_SIZES, probe

    placeholder = Platform(nodes_from_costs([0.0] * comm.size), name="placeholder")
    with HetComm(comm, placeholder, "flat", timeout=timeout) as hc:
        res = probe(hc, sizes=sizes or DEFAULT_SIZES, name=f"probed {comm.size} ranks")
    return res.platform, {"seconds": res.seconds, "classes": res.fit["classes"]}


def _forcible(comm: MPI.Comm):
    """The process's :class:`~hetcoll.runtime.mpich_cvars.Algorithms` when every rank of
    ``comm`` can force MPICH's algorithms, else None (collective)."""
    from ..runtime.mpich_cvars import algorithms

    found = algorithms()
    return found if comm.allreduce(found is not None, op=MPI.LAND) else None


def _plans(
    hc: HetComm, collective: str, nbytes: int, count: int, forced: Any = None
) -> list[dict[str, Any]]:
    """The ``count`` fastest distinct candidate schedules (rank 0; planned as HetComm
    plans them) and, when all of them are sliced, the fastest unsliced one; MPI's own
    predicted time first, then (``forced``: the process's MPICH algorithms) MPI's own with
    each MPICH algorithm of an allreduce or an allgather forced."""
    from ..choice import mpi_time
    from ..runtime.mpich_cvars import COLLECTIVES

    p = hc.platform
    nodes = list(hc.nodes)
    count_ = nbytes // 8 if collective == "allreduce" else None
    t_mpi = mpi_time(
        p,
        collective,
        nbytes,
        nodes,
        root=nodes[0] if collective == "bcast" else None,
        count=count_,
        op="sum",
    )
    mpi = {"algorithm": "mpi", "segment_size": None, "predicted": t_mpi * hc.time_scale}
    mpich = []
    if forced is not None and collective in COLLECTIVES:
        mpich = [{**mpi, "mpich": name} for name in forced.names(collective)]
    out = _planned(hc, collective, nbytes, count) if count > 0 else []
    return [mpi, *mpich, *out]


def _planned(hc: HetComm, collective: str, nbytes: int, count: int) -> list[dict[str, Any]]:
    """hetcoll's ``count`` fastest distinct candidates (and the fastest unsliced one when
    those are all sliced), as :func:`_plans` lists them."""
    from ..compare import compare, slice_choices

    p = hc.platform
    nodes = list(hc.nodes)
    members = None if nodes == list(p.ids) else nodes
    if collective == "bcast":
        found = compare(
            p, "bcast", root=nodes[0], members=members, nbytes=nbytes, slices=slice_choices(nbytes)
        )
    else:
        found = compare(
            p,
            collective,
            members=members,
            nbytes=nbytes,
            op="sum" if collective == "allreduce" else None,
        )
    ranked = found.ranked
    if collective != "bcast":  # the runtime runs these on hypercubes only (choice.py)
        from ..planners.hypercube import hypercube_planners

        cubes = set(hypercube_planners())
        ranked = [c for c in ranked if c.algorithm in cubes]
    seen, out = set(), []
    for c in ranked:
        doc = c.schedule.to_dict()
        shape = str({k: v for k, v in doc.items() if k not in ("algorithm", "params", "model")})
        if shape in seen:
            continue
        seen.add(shape)
        out.append(
            {
                "algorithm": c.algorithm,
                "segment_size": c.segment_size,
                "predicted": c.predicted_time * hc.time_scale,
            }
        )
        if len(out) == count:
            break
    if all(c["segment_size"] is not None for c in out):
        # the fastest unsliced plan too: slicing is where the model errs most (on one host a
        # pipelined 50 MiB broadcast predicted fastest can measure slower than an unsliced tree)
        whole = next((c for c in found.ranked if c.segment_size is None), None)
        if whole is not None:
            out.append(
                {
                    "algorithm": whole.algorithm,
                    "segment_size": None,
                    "predicted": whole.predicted_time * hc.time_scale,
                }
            )
    return out


def knobs(
    plans: list[dict[str, Any]],
    collective: str,
    nbytes: int,
    segment_sizes: tuple[int, ...],
    spins: tuple[float, ...],
) -> list[dict[str, Any]]:
    """The knob variants measured beside ``plans`` (MPI's own first, then the candidates):
    a broadcast's best plan with each segment size below ``nbytes``, and every candidate
    with each spin (module doc).

    >>> plans = [{"algorithm": "mpi", "segment_size": None},
    ...          {"algorithm": "fnf", "segment_size": None}]
    >>> [label(k) for k in knobs(plans, "bcast", 1 << 20, (4096, 1 << 20), (1e-3,))]
    ['fnf/4 KiB', 'fnf spin=1 ms']
    """
    out = []
    best = next((p for p in plans[1:] if not p.get("mpich")), None)
    if collective == "bcast" and best is not None:
        for seg in segment_sizes:
            if seg < nbytes and seg != best["segment_size"]:
                out.append({**best, "segment_size": seg, "knob": True})
    for spin in spins:
        out += [{**p, "spin": spin, "knob": True} for p in plans[1:] if not p.get("mpich")]
    return out


def label(plan: dict[str, Any]) -> str:
    """A plan as the tables name it: ``algorithm[/segment size][ spin=...]``, MPI's own
    with an MPICH algorithm forced ``mpi:name``."""
    from ..units import format_size, format_time

    seg = plan.get("segment_size")
    text = plan["algorithm"] + (f"/{format_size(seg)}" if seg else "")
    text += f":{plan['mpich']}" if plan.get("mpich") else ""
    return text + (f" spin={format_time(plan['spin'])}" if plan.get("spin") else "")


def slower(plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The plans of a row (``plans[0]`` MPI's own) measured slower than MPI's own: median
    speed-up below 1; each ``{"plan": label, "speedup": median, "knob": a knob variant}``.

    >>> slower([{"algorithm": "mpi", "speedup_median": 1.0},
    ...         {"algorithm": "chain", "segment_size": 1 << 20, "speedup_median": 0.3,
    ...          "knob": True},
    ...         {"algorithm": "fnf", "speedup_median": 1.2}])
    [{'plan': 'chain/1 MiB', 'speedup': 0.3, 'knob': True}]
    """
    return [
        {"plan": label(p), "speedup": p["speedup_median"], "knob": bool(p.get("knob"))}
        for p in plans[1:]
        if p["speedup_median"] < 1.0
    ]


def _call(hc: HetComm, collective: str, nbytes: int, plain: bool = False):
    """A function making one call of ``collective`` with a plan's name and slice size;
    ``plain``: MPI's own an allreduce's or an allgather's is the plain communicator's."""
    if plain and collective in ("allreduce", "allgather"):
        own = _call(hc, collective, nbytes)
        if collective == "allreduce":
            send = np.full(max(nbytes // 8, 1), hc.rank + 1.0)
            recv = np.empty_like(send)
            method, args = hc.base.Allreduce, (send, recv, MPI.SUM)
        else:
            send = np.full(nbytes, hc.rank % 251, dtype=np.uint8)
            recv = np.empty(nbytes * hc.size, dtype=np.uint8)
            method, args = hc.base.Allgather, (send, recv)

        def mpi() -> None:
            method(*args)

        def run(algo: str, seg: int | None) -> None:
            return mpi() if algo == "mpi" else own(algo, seg)

        run.plain = (method, args)  # what _forced_calls forces: the same call
        return run
    if collective == "bcast":
        buf = np.zeros(nbytes, dtype=np.uint8)
        if hc.rank == 0:
            buf[:] = np.arange(nbytes) % 251
        return lambda algo, seg: hc.Bcast(buf, 0, algo=algo, segment_size=seg)
    if collective == "allreduce":
        send = np.full(max(nbytes // 8, 1), hc.rank + 1.0)
        recv = np.empty_like(send)
        return lambda algo, seg: hc.Allreduce(send, recv, op=MPI.SUM, algo=algo)
    if collective == "allgather":
        send = np.full(nbytes, hc.rank % 251, dtype=np.uint8)
        recv = np.empty(nbytes * hc.size, dtype=np.uint8)
        return lambda algo, seg: hc.Allgather(send, recv, algo=algo)
    return lambda algo, seg: hc.barrier(algo=algo)


def measure_calls(
    hc: HetComm,
    collective: str,
    nbytes: int,
    plans: list[dict[str, Any]],
    rounds: int,
    loop: float,
    spun: dict[float, HetComm] | None = None,
    confirm: bool = True,
) -> dict[str, Any]:
    """Paired rounds of every plan (``plans[0]`` is MPI's own), collective; one row.
    A plan with a ``spin`` runs on ``spun[spin]`` (a HetComm with that spin); ``confirm``:
    the winner's fresh rounds against ``plans[0]`` (and the runner-up, in a row with MPICH's
    algorithms: module doc)."""
    algos = any(p.get("mpich") for p in plans)  # MPI's own plain, a sign test (module doc)
    by_spin = {None: _call(hc, collective, nbytes, algos and not hc.emulate)}
    by_spin.update({s: _call(c, collective, nbytes) for s, c in (spun or {}).items()})
    forced = _forced_calls(collective, plans, by_spin[None])

    def one(algo: str, seg: int | None, spin: float | None = None, mpich=None) -> None:
        if mpich is not None:
            forced[mpich]()
        else:
            by_spin[spin](algo, seg)

    base = hc.base
    for p in plans:  # warm up: plans, first touches
        one(p["algorithm"], p["segment_size"], p.get("spin"), p.get("mpich"))
    calls = math.ceil(loop / max(_timed(base, one, plans[0], 1), 1e-7))
    calls = min(1000, max(LOOP_CALLS, calls) if algos else calls)
    calls = int(base.allreduce(max(1, calls), op=MPI.MAX))

    def measure(plan: dict[str, Any]) -> float:
        """Seconds per call: a loop's, on its slowest rank (module doc)."""
        return _timed(base, one, plan, calls) / calls

    times: list[list[float]] = [[] for _ in plans]
    for r in range(rounds):
        for k in rotation(len(plans), r):
            times[k].append(measure(plans[k]))
    mpi = np.array(times[0])
    out = []
    for p, t in zip(plans, times, strict=True):
        speedup = mpi / np.array(t)
        out.append(
            {
                **p,
                "times": t,
                "median": float(np.median(t)),
                "speedup": [float(x) for x in speedup],
                "speedup_median": float(np.median(speedup)),
            }
        )
    winner, confirmed, rival, first = pick(out), None, None, None
    key, again = _rule_key(winner), []
    if confirm and algos:  # MPICH's algorithms: the sign test's rounds (confirmation.py)
        kept, contenders, again = confirmation.confirm(base, measure, out, rounds)
        winner = _rule(contenders[kept])
    elif confirm and key != _rule_key(plans[0]):
        found = next(p for p in out[1:] if _rule_key(p) == key and not p.get("spin"))
        contenders = [plans[0], found]
        again = [[] for _ in contenders]
        for r in range(rounds):
            for k in rotation(len(contenders), r):
                again[k].append(measure(contenders[k]))
        winner = _rule(contenders[settle(again)])
    if again:
        t = np.array(again)
        first, confirmed = label(contenders[1]), [float(x) for x in t[0] / t[1]]
        if len(contenders) >= 3:
            rival = {
                "plan": label(contenders[2]),
                "speedup": [float(x) for x in t[0] / t[2]],
                "over_winner": [float(x) for x in t[1] / t[2]],
            }
    return {
        "collective": collective,
        "nbytes": nbytes,
        "calls": calls,
        "plans": out,
        "winner": winner,
        "first": first,
        "confirmed": confirmed,
        "runner_up": rival,
        "confirm_rounds": len(again[0]) if again else 0,
        "slower": slower(out),
    }


def _share(speedups: Any) -> float:
    """The share of the rounds in which a speed-up exceeds 1."""
    return float(np.mean(np.asarray(speedups, dtype=float) > 1.0))


def _beats(a: Any, b: Any) -> bool:
    """Whether the plan of speed-ups ``a`` (over MPI's own, per paired round) beats the
    plan of ``b`` head to head: faster in more than half the rounds (``a / b`` is the
    round's time of ``b`` over that of ``a``)."""
    return _share(np.asarray(a, dtype=float) / np.asarray(b, dtype=float)) > 0.5


def settle(times: Any) -> int:
    """The confirmation rounds' verdict (module doc) on ``times``, seconds per contender
    (row 0 MPI's own, 1 the rounds' winner, 2 the runner-up if any) and paired round
    (column): the index of the contender that takes the rule.  A contender qualifies
    when it is faster than MPI's own in at least :data:`WIN_SHARE` of the rounds; none
    does: 0 (MPI's own stays); of two, the one faster than the other in more than half
    the rounds, the winner on a tie.

    Examples
    --------
    >>> settle([[2, 2, 2, 2, 2], [1, 1, 1, 1, 3], [1.5, 1.5, 1.5, 1.5, 1.5]])
    1
    >>> settle([[2, 2, 2, 2, 2], [1, 1, 3, 3, 1], [1.5, 1.5, 1.5, 1.5, 1.5]])
    2
    >>> settle([[2, 2, 2, 2, 2], [1, 1, 3, 3, 1]])
    0
    """
    t = np.asarray(times, dtype=float)
    speedup = t[0] / t[1:]
    ok = [k + 1 for k, s in enumerate(speedup) if _share(s) >= WIN_SHARE]
    if len(ok) < 2:
        return ok[0] if ok else 0
    return 2 if _beats(speedup[1], speedup[0]) else 1


def _rule_key(plan: dict[str, Any]) -> tuple:
    """What a tuning rule keeps of a plan: its algorithm, slices and MPICH algorithm."""
    return (plan["algorithm"], plan.get("segment_size"), plan.get("mpich"))


def _forced_calls(collective: str, plans: list[dict[str, Any]], call) -> dict[str, Any]:
    """Per MPICH algorithm the plans name: MPI's own call with it forced.  Where ``call``
    is the plain communicator's (its ``plain``: the method and its arguments), the stores
    are made around that method itself, so that a forced call runs as many Python
    functions before MPI's as MPI's own does (two), as a ``HetComm``'s forced and unforced
    calls do (one each, :mod:`hetcoll.runtime.forced`): a forced algorithm is not charged
    Python work MPI's own is spared."""
    names = {p["mpich"] for p in plans if p.get("mpich")}
    if not names:
        return {}
    from ..runtime.mpich_cvars import algorithms

    found = algorithms()
    plain = getattr(call, "plain", None)
    if plain is None:
        return {n: found.forcing(collective, n, lambda: call("mpi", None)) for n in names}
    method, args = plain
    out = {}
    for n in sorted(names):
        stored = found.forcing(collective, n, method)
        out[n] = lambda stored=stored: stored(*args)
    return out


def _timed(comm: MPI.Comm, one, plan: dict[str, Any], calls: int) -> float:
    """Seconds of ``calls`` calls, on the slowest rank (barriers around)."""
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        one(plan["algorithm"], plan["segment_size"], plan.get("spin"), plan.get("mpich"))
    mine = time.perf_counter() - t0
    return float(comm.allreduce(mine, op=MPI.MAX))


def pick(plans: list[dict[str, Any]]) -> dict[str, Any]:
    """The winner of a row (module doc): of the plans faster than MPI in at least
    :data:`WIN_SHARE` of the paired rounds, the one that beats the most of the others head
    to head (faster in more than half the rounds), the largest median speed-up among those
    tied; MPI's own when none is; a plan measured with a ``spin`` never (a tuning file's
    rule cannot carry it).

    Examples
    --------
    >>> mpi = {"algorithm": "mpi", "segment_size": None, "speedup": [1, 1, 1]}
    >>> fnf = {"algorithm": "fnf", "segment_size": None, "speedup": [1.2, 1.1, 0.9]}
    >>> pick([mpi, fnf])["algorithm"]
    'mpi'
    >>> pick([mpi, {**fnf, "speedup": [1.2, 1.1, 1.05]}])["algorithm"]
    'fnf'
    >>> pick([mpi, {**fnf, "speedup": [1.2, 1.1, 1.05], "spin": 1e-3}])["algorithm"]
    'mpi'
    >>> pick([mpi, {**mpi, "mpich": "ring", "speedup": [1.3, 1.2, 1.1]}])
    {'algorithm': 'mpi', 'segment_size': None, 'mpich': 'ring'}

    One lucky round does not outrank steady ones: ``tree``'s median is the largest, but
    ``ring`` is faster than it in two rounds of three.

    >>> ring = {**mpi, "mpich": "ring", "speedup": [1.3, 1.4, 1.1]}
    >>> pick([mpi, ring, {**mpi, "mpich": "tree", "speedup": [3.0, 1.35, 1.05]}])["mpich"]
    'ring'
    """
    ok = [p for p in plans[1:] if not p.get("spin") and _share(p["speedup"]) >= WIN_SHARE]
    if not ok:
        return _rule(plans[0])
    wins = [sum(_beats(p["speedup"], q["speedup"]) for q in ok if q is not p) for p in ok]
    best = max(range(len(ok)), key=lambda k: (wins[k], float(np.median(ok[k]["speedup"])), -k))
    return _rule(ok[best])


def _rule(plan: dict[str, Any]) -> dict[str, Any]:
    """What a tuning file's rule keeps of a plan (its algorithm, slices, MPICH algorithm)."""
    out = {"algorithm": plan["algorithm"], "segment_size": plan["segment_size"]}
    if plan.get("mpich"):
        out["mpich"] = plan["mpich"]
    return out
