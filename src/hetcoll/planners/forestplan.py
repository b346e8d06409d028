"""The planner ``forest``: allgather, reduce-scatter and allreduce on the optimal per-root
packing (:func:`hetcoll.planners.forest.pack_forest`; Zhao et al. 2024, ForestColl).

Every member's block is split among its trees in proportion to the bytes per second the
packing gives them, and each tree carries its share pipelined in segments (the per-root
form of :mod:`hetcoll.perroot`): an allgather broadcasts each block from its owner, a
reduce-scatter reduces each block to its owner over the reversed trees (each receiver
combining what it receives, the combine cost a resource of the packing), an allreduce does
both on one packing (the LP chooses each member's share of the vector), or a reduce and a
broadcast through the member with the largest share (better for small vectors): the one
whose play-out is faster.

Every rank sends in the order of a play-out of the flows on the packing's resources
(:mod:`hetcoll.planners.forestorder`; the schedule's ``order``), one send after the other:
in program order a rank's next send would wait for a busy link while another idles.  The
segments: of the given size, else the fastest play-out (the play-out is what the simulator
replays on bandwidth-only link graphs, at a fraction of its cost) of every flow whole,
then every flow cut into a count of its own in proportion to its share (segments of about
one size: :func:`_proportional`), the finest within a quarter of the transfer budget (a
half where the play-out is the simulator's: :data:`EXACT`), then, on a bandwidth-only link
graph (an allgather, or a reduce-scatter run backwards), those counts and the counts by
fill below again with a *ramp*, each flow's first segments a quarter and a half of the
others (:func:`_ramped`, within the budget the ramps leave: a link that only trees deep
down cross otherwise idles until their first segment has come; ``bench_packing.py --nodes
64 --seeds 0-5``, allgather: 1.0033/1.0368/1.0265x the optimum on seeds 0-2 without,
1.0012/1.0296/1.0195x with; reduce-scatter 1.0089/1.0211/1.0243x, 1.0032/1.0141/1.0190x;
a ramped cut is never taken for being within :data:`NEAR`, so that a faster cut without a
ramp is still played out), then, on a bandwidth-only link
graph, in proportion to its fill (:func:`_fills`: its share times its tree's slowest path;
a tree through slow links its share alone saturates ends late by about its fill over its
count, so segments of one size leave it the last by far: on seed 5 of
``bench_packing.py --nodes 64`` the allgather takes 1.126x the optimum so, 1.017x cut by
fill; on seeds 0, 3 and 4 segments of one size are faster), then (except on a
bandwidth-only link graph: every edge holds its resources for exactly its time, in
proportion to the bytes) every flow cut into the same number of segments, powers of two
and the most within that quarter; segments of at least 1 KiB; stopping at the first
play-out within :data:`NEAR` of the packing's certified bound.  A count per flow rather
than one count for all: a tree's pipeline fills and drains in about a segment's time per
hop, so a tree of a large share cut as often as one of a small share would fill and drain
in long segments.
On a bandwidth-only link graph, where the fastest of those play-outs ends more than 1 %
over the packing's certified bound, the cuts of a second optimal packing are played out as
well and the faster kept (:data:`AGAIN`): the LP has many optimal packings, the column
generation's path decides which one it returns, and which plays out faster is no property
of the trees we found (depth, hops, busy links near the roots all fail on some seed),
only of the play-out.  On ``bench_packing.py --nodes 64 --seeds 0-5`` (any size per rank:
the graph has no per-message cost) it takes the allgather from 1.0296/1.0195/1.0169x the
optimum to 1.0202/1.0103/1.0061x on seeds 1, 2, 5 and the reduce-scatter from
1.0109/1.0102/1.0133x to 1.0017/1.0049/1.0116x on seeds 3, 4, 5, about doubling the
planning time of those seeds.
The packing's trees are the shallowest of its optimal ones
(:mod:`hetcoll.planners.forestshallow`): with the column generation's trees, up to 39 hops
deep on the 64-node benchmark graph, the allgather would take 1.054x the optimum there
(counts in proportion to each tree's pipeline depth); with the shallower ones it takes
1.003x (``bench_packing.py --nodes 64 --sizes 1 --seeds 1``).  On a bandwidth-only link
graph a reduce-scatter's cuts are timetabled as their broadcast's play-out run backwards
(:mod:`hetcoll.planners.forestreverse`): the reduce's own play-out makes a node wait for
its last child's segment before it forwards (1.27x the optimum at 64 nodes, against 1.10x
backwards, with the deep trees).

Under a model whose ranks keep several sends in flight per edge (``nic``: windows per
edge, ``chain="edge"``) the play-out is no estimate (it runs one transfer per NIC at a
time) and the segment size is chosen by simulation, one size for every flow, down to the
size whose schedule sends :data:`SIMULATED` messages times nodes (a quarter to a half of
the messages the simulator takes).  A simulation costs about its messages (thousands at 8
nodes, each halving doubling them), so the
search reads a model off its cheapest points (:func:`_descend`): the time of segments of
``s`` bytes is the packing's steady state, plus a pipeline fill and drain growing with
``s`` (a tree of depth ``d`` at ``w`` bytes per second: about ``d s / w``), plus
per-message costs growing as ``s`` shrinks, a convex curve.  Two halvings give the line
under that curve (a plan whose line stays above the fastest time found is dropped: the
reduce and broadcast through one member of a large allreduce), the next halving is
simulated only while the gain the further halvings are predicted to bring in all (the
gains falling by their last ratio) is at least :data:`STOP` of the time and the time is
more than :data:`STOP` over the packing's bound.  About two simulations of the size
chosen in all; the time within about :data:`STOP` of simulating every halving
(``search="full"``; ``benchmarks/simulated/bench_forest_segments.py`` prints both
searches' planning times).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

import numpy as np

from ..allbounds import bandwidth_only
from ..errors import PlannerError
from ..perroot import is_per_root
from ..platform import Platform
from ..schedule import Flow, ListedOrder, Schedule, Tree, transfer_budget
from ..simulator.predict import gc_paused
from ._registry import Option, register
from ._shared import keep_prediction
from .forest import Forest, pack_forest
from .forestorder import per_root_order
from .forestreverse import reversed_play_out

__all__ = ["forest"]

#: collectives the planner plans
FOREST_OPS = ("allgather", "reduce_scatter", "allreduce")
#: smallest segment the planner picks on its own (bytes)
MIN_SEGMENT = 1024
#: the segment search stops where the finer cuts are predicted to gain less than this
#: fraction of the time in all, or where the time is within this fraction of the
#: packing's bound
STOP = 0.005
#: the play-outs (no simulation) stop at the first within this fraction of the bound
NEAR = 0.001
#: where the play-out is what the simulator replays (every edge holding its resources for
#: exactly its time), the cuts may send this fraction's inverse of the simulator's transfer
#: budget, elsewhere a quarter: on the 64-node graph of ``bench_packing.py`` a half takes
#: the allgather from 1.0106x the optimum to 1.0054x, the reduce-scatter from 1.0178x to
#: 1.0089x, for a play-out of twice the messages
EXACT = 2
#: on a bandwidth-only link graph each cut is also played out with its flows' first
#: segments these fractions of the others (a ramp, :func:`_ramped`)
RAMP = (4, 2)
#: under windows per edge, the fewest segments of the largest share the planner tries (a
#: pipeline of fewer, each a window's batch, fills and drains for much of the run)
PIPELINE = 16
#: under windows per edge, the messages times the nodes a segment size tried may send (the
#: simulator shares every NIC among the flows in flight, about as many as the nodes, at
#: each flow's start and end), between a quarter and a half of what the simulator takes:
#: at 8 nodes a half, where a 64 MiB allreduce on a star of 100/25/10 Gbit/s NICs reaches
#: 64 KiB segments, 1.012 T* (a quarter stopped at 128 KiB, 1.021 T*: a chain of 14 hops
#: filling and draining); at 16 nodes a quarter (a half: 4x the planning time)
SIMULATED = 2**17
#: on a bandwidth-only link graph, where the fastest play-out ends more than ``AGAIN[0]``
#: over the packing's bound, the cuts of another optimal packing are played out too: the
#: column generation's with Wentges' smoothing ``AGAIN[1]`` (other trees), stopped after
#: ``AGAIN[2]`` times the first one's iterations (module docstring)
AGAIN = (0.01, 0.3, 2)


def _tree(forest: Forest, edges: np.ndarray, root: int, direction: str) -> Tree:
    """A packed arborescence as an ordered :class:`Tree` of node ids: data go ``src ->
    dst`` (``in``: children to parents); a parent sends to (receives from) its children
    deepest subtree first, then in node order."""
    p = forest.problem
    ids = p.ids
    if direction == "out":
        pairs = [(int(p.src[e]), int(p.dst[e])) for e in edges]
    else:
        pairs = [(int(p.dst[e]), int(p.src[e])) for e in edges]
    kids: dict[int, list[int]] = {}
    for a, b in pairs:
        kids.setdefault(a, []).append(b)
    height: dict[int, int] = {}

    def h(v: int) -> int:  # iterative post-order: trees may be deep (chains)
        stack = [(v, False)]
        while stack:
            u, done = stack.pop()
            if done:
                height[u] = 1 + max((height[c] for c in kids.get(u, ())), default=0)
            else:
                stack.append((u, True))
                stack.extend((c, False) for c in kids.get(u, ()))
        return height[v]

    h(root)
    children = {
        ids[a]: tuple(ids[c] for c in sorted(cs, key=lambda c: (-height[c], c)))
        for a, cs in kids.items()
    }
    return Tree(ids[root], children)


def _split(total: int, weights: list[float], align: int) -> list[int]:
    """``total`` bytes in parts proportional to ``weights``, multiples of ``align`` (the
    largest part takes the rest), largest remainders first: deterministic."""
    units, rest = divmod(total, align)
    w = np.asarray(weights, dtype=float)
    exact = units * w / w.sum() if w.sum() > 0 else np.zeros(len(w))
    parts = np.floor(exact).astype(np.int64)
    order = sorted(range(len(w)), key=lambda k: (-(exact[k] - parts[k]), k))
    for k in order[: units - int(parts.sum())]:
        parts[k] += 1
    out = [int(x) * align for x in parts]
    out[int(np.argmax(w))] += rest  # the rest (under one element) to the largest part
    return out


def _flows(forest, ranges, kinds, seg, align, tol) -> list[Flow]:
    """The flows of every root's byte range ``ranges[r] = (lo, n)``: its trees of each
    direction (``kinds``: ``(direction, flow kind)``), each with its share of the range."""
    flows: list[Flow] = []
    for direction, kind in kinds:
        for r, (lo, n) in ranges.items():
            trees = forest.of_root(r, direction)
            if not trees:
                continue
            top = trees[0][1]
            trees = [(t, w) for t, w in trees if w >= tol * top]  # negligible trees go
            parts = _split(n, [w for _, w in trees], align)
            at = lo
            for (edges, _), part in zip(trees, parts, strict=True):
                if part == 0 and (n > 0 or at > lo):
                    continue
                tree = _tree(forest, edges, r, direction)
                flows.append(
                    Flow(tree, part, at, 0, seg if seg and part > seg else None, kind=kind)
                )
                at += part
    return flows


def _cut(whole: list[Flow], count: int | Sequence[int] | None, align: int) -> list[Flow]:
    """Every flow of ``whole`` cut into ``count`` segments of one size (a multiple of
    ``align``, at least :data:`MIN_SEGMENT`; None: whole; a sequence: each flow's own
    count): every tree, whatever its share, fills and drains its pipeline in the same
    fraction of its run (one size for all would leave the trees of small shares a few long
    segments, and they finish last)."""
    counts = count if isinstance(count, Sequence) else [count] * len(whole)
    out = []
    for f, k in zip(whole, counts, strict=True):
        if not k or k < 2:
            out.append(f)
            continue
        seg = _aligned(max(-(-f.nbytes // k), MIN_SEGMENT), align)
        out.append(replace(f, segment_size=seg if f.nbytes > seg else None))
    return out


def _ramped(whole: list[Flow], counts: Sequence[int], align: int, backwards: bool) -> list[Flow]:
    """Every flow of ``whole`` cut as :func:`_cut` cuts it into ``counts`` segments, then
    its first segments replaced by a ramp: :data:`RAMP`'s fractions of a segment (each a
    multiple of ``align``; those under :data:`MIN_SEGMENT` left out), then whole
    segments, the last taking the rest (the flow's ``cuts``; ``backwards``: in reverse
    order, for a reduce-scatter timetabled as its broadcast run backwards,
    :mod:`.forestreverse`).

    A segment reaches a link ``d`` hops down its tree about ``d`` segment times after it
    left the root, and a link the packing keeps busy for the whole run that only trees
    deep down cross idles until then (on seed 1 of ``bench_packing.py --nodes 64``,
    without a ramp, a 1 GB/s link 19 hops down its trees would first send at 3.6 % of
    the run, and the allgather end 3.7 % late; with one it ends 3.0 % late): the ramp's
    short segments get there sooner, and the segments following them keep it busy."""
    out = []
    for f, k in zip(whole, counts, strict=True):
        seg = _aligned(max(-(-f.nbytes // k), MIN_SEGMENT), align) if k and k > 1 else None
        head = (
            [h for h in (_aligned(seg // d, align) for d in RAMP) if h >= MIN_SEGMENT]
            if seg
            else []
        )
        if not head or f.nbytes <= seg + sum(head):  # (too short to ramp: as _cut cuts it)
            out.append(replace(f, segment_size=seg if seg and f.nbytes > seg else None))
            continue
        whole_segs, rest = divmod(f.nbytes - sum(head), seg)
        cuts = [*head, *[seg] * whole_segs, *([rest] if rest else [])]
        out.append(replace(f, segment_size=seg, cuts=tuple(cuts[::-1] if backwards else cuts)))
    return out


def _proportional(whole: list[Flow], weights: Sequence[float], budget: int) -> list[int] | None:
    """Segment counts in proportion to ``weights`` (one per flow), the finest whose
    schedule sends at most ``budget`` messages (each flow cut no finer than
    :data:`MIN_SEGMENT`, at least once); None when even the coarsest exceeds it or every
    count is 1.  In proportion to the flows' shares: segments of about one size."""
    d = np.asarray(weights, dtype=float)
    top = float(d.max(initial=0.0))
    if top <= 0:
        return None
    most = np.array([max(f.nbytes // MIN_SEGMENT, 1) for f in whole])
    hops = np.array([f.hops for f in whole])

    def counts(theta: float) -> np.ndarray:
        return np.minimum(most, np.maximum(1, np.ceil(d / theta)))

    if int((counts(top) * hops).sum()) > budget:
        return None
    lo, hi = math.log(top), math.log(top) - 60.0  # a fitting theta, a too fine one
    for _ in range(60):
        mid = (lo + hi) / 2
        if int((counts(math.exp(mid)) * hops).sum()) <= budget:
            lo = mid
        else:
            hi = mid
    best = [int(k) for k in counts(math.exp(lo))]
    return best if max(best) > 1 else None


def _fills(forest: Forest, whole: list[Flow]) -> list[float]:
    """Each whole flow's pipeline fill: its share times its tree's slowest path from the
    root (an in-tree's: from a leaf), edge after edge at the packing's time per byte
    (``problem.T``), in bytes times seconds per slice.  Cut into ``S`` segments, a flow
    through a chain of links its own share saturates ends about ``fill / S`` after the
    packing's time (a flow shop of equal machines: the whole run plus one segment per
    further link), so counts in proportion to the fills give every flow the same worst
    delay (:func:`forest`)."""
    p = forest.problem
    at = {(int(a), int(b)): float(t) for a, b, t in zip(p.src, p.dst, p.T, strict=True)}
    pos = {v: i for i, v in enumerate(p.ids)}
    out = []
    for f in whole:
        kids, root = f.tree.children, f.tree.root
        far, most, stack = {root: 0.0}, 0.0, [root]
        while stack:
            u = stack.pop()
            for c in kids.get(u, ()):
                a, b = (pos[c], pos[u]) if f.kind == "reduce" else (pos[u], pos[c])
                far[c] = far[u] + at[(a, b)]
                most = max(most, far[c])
                stack.append(c)
        out.append(f.nbytes * most)
    return out


def _counts(whole: list[Flow], align: int, budget: int) -> list[int | None]:
    """Candidate segment counts per flow: whole shares (None), powers of two and the
    largest count whose schedule sends at most ``budget`` messages (the flows' shares cut
    no finer than :data:`MIN_SEGMENT`)."""
    largest = max((f.nbytes for f in whole), default=0)
    hops = sum(f.hops for f in whole)
    most = budget // max(hops, 1)
    out: list[int | None] = [None]
    k = 2
    while k < most and largest // k >= MIN_SEGMENT:
        out.append(k)
        k *= 2
    last = min(most, largest // MIN_SEGMENT)
    if last >= 2 and last not in out:
        out.append(last)
    return out


def _descend(
    plans: list[Any],
    build: Any,
    simulated: Any,
    budget: int,
    lower: float,
    search: str,
    startup: Any = None,
) -> list[Schedule]:
    """Under windows per edge: the schedules simulated to choose each plan's segment size
    (a plan: the byte ranges of :func:`forest`'s flows), in plan order, each plan's from
    long segments to short (:func:`_halving`).

    ``search="full"`` simulates each plan's halvings while the time falls.  ``"quick"``
    reads a model off the first points instead: the time ``T(s)`` of segments of ``s``
    bytes is the packing's steady state, plus a pipeline fill and drain that grows with
    ``s`` (a tree of depth ``d`` carrying ``w`` bytes per second fills in about ``d s /
    w``), plus per-message costs that grow as ``s`` shrinks: a convex curve.  So

    - every plan is simulated whole, at the first halving ``s0`` and at ``s0 / 2`` (the
      cheapest points: a simulation costs about its messages);
    - a plan is dropped when the line through those two points, which lies under the
      convex curve at every shorter segment, stays above the fastest time found (the
      reduce and broadcast through one member of an allreduce, at large sizes);
    - a plan that is kept is halved once more only while the gain all further halvings
      are predicted to bring is at least :data:`STOP` of its time (:func:`_to_come`: each
      halving's gain the last one's times the last ratio of gains, a half while only one
      is known: a fill linear in ``s``), and while its time is more than ``1 + STOP``
      times ``lower``, the packing's bound (nothing left to gain).

    With ``startup`` (a schedule's per-message start-up: the time its messages' leads cost
    it, which doubles with each halving), ``"quick"`` halves a plan's segments only while
    :func:`_halving_gains` predicts that the next halving gains.

    ``simulated(flows, above=t)``: each halving is asked to beat the one before it (``t``,
    the time it is compared with), its run stopped where it is proved not to
    (:func:`hetcoll.simulator.simulate_within`; its estimate then inf): the search takes
    the same turns and keeps the same schedule.

    Cost: about two simulations of the segment size chosen (each halving doubles the
    messages), against one to two more halvings for ``"full"``; the time chosen is within
    about :data:`STOP` of ``"full"``'s (``tests/test_forest_segments.py`` compares them).
    """
    out: list[Schedule] = []
    states = []
    for rg in plans:
        cuts = _halving(build, rg, budget)
        times: list[float] = []
        last = None  # the plan's last schedule that gained
        for flows in cuts:
            sched = simulated(flows, above=times[-1] if times else None)
            out.append(sched)
            t = sched.params["estimate"]
            if times and t > times[-1]:
                cuts = iter(())  # it no longer gains
                break
            times.append(t)
            last = sched
            if search == "quick" and len(times) == 3:
                break
            if search == "quick" and len(times) > 1 and not _halving_gains(sched, lower, startup):
                cuts = iter(())  # the next halving is predicted to lose
                break
        states.append((cuts, times, last))
    if search == "full":
        return out
    fastest = min(s.params["estimate"] for s in out)
    for cuts, times, last in states:
        if len(times) < 3:
            continue  # (the cuts are spent)
        if 2 * times[2] - times[1] >= fastest:
            continue  # the line under its curve: no shorter segment can win
        gain, ratio = times[1] - times[2], 0.5
        while times[-1] > (1 + STOP) * lower and _to_come(gain, ratio) >= STOP * times[-1]:
            if not _halving_gains(last, lower, startup):
                break
            flows = next(cuts, None)
            if flows is None:
                break
            sched = simulated(flows, above=times[-1])
            out.append(sched)
            t = sched.params["estimate"]
            if t > times[-1]:
                break
            ratio = min(1.0, (times[-1] - t) / gain)
            gain = times[-1] - t
            times.append(t)
            last = sched
    return out


def _halving_gains(sched: Schedule, lower: float, startup: Any) -> bool:
    """Whether halving ``sched``'s segments is predicted to shorten it, its time ``T`` (the
    ``estimate``) read as ``lower + lag + S``: ``S = startup(sched)``, the start-up of its
    messages, which doubles when they do, and ``lag``, the pipeline's fill and drain, in
    proportion to the segment.  Halving then takes ``lower + lag / 2 + 2 S``: it gains
    while ``T - lower > 3 S``.  Without ``startup``: always (the search's other rules)."""
    if startup is None:
        return True
    return sched.params["estimate"] - lower > 3 * startup(sched)


def _to_come(gain: float, ratio: float) -> float:
    """What the halvings still to come gain in all, each gaining ``ratio`` times the one
    before, the last one ``gain``: ``gain r / (1 - r)`` (infinite for ``r >= 1``)."""
    return gain * ratio / (1.0 - ratio) if ratio < 1.0 else math.inf


def _halving(build: Any, ranges: Any, budget: int) -> Iterator[list[Flow]]:
    """Under windows per edge: the flows of ``ranges`` whole, then in segments of one size
    for every flow, halving from the largest share's :data:`PIPELINE`-th down to
    :data:`MIN_SEGMENT` while the schedule sends at most ``budget`` messages (one size: an
    edge's sends in flight then carry equal bytes, so its window's share of a NIC is its
    share of the bytes)."""
    whole = build(None, ranges)
    yield whole
    largest = max((f.nbytes for f in whole), default=0)
    seg = 1 << max(largest // PIPELINE, 1).bit_length() - 1
    while seg >= MIN_SEGMENT:
        flows = build(seg, ranges)
        if sum(f.transfers for f in flows) > budget:
            return
        yield flows
        seg //= 2


@register(
    "forest",
    collectives=FOREST_OPS,
    paper="Zhao et al. 2024 (ForestColl), Sec. 4-5: spanning trees packed per root; "
    "Zhao & Krishnamurthy 2023 (the cut bound); hetcoll's cost models",
    complexity="column generation: per iteration one LP and N minimum arborescences, "
    "O(N E log N); then a play-out, O(T log T) for T messages, per segment count tried "
    "(windows per edge: a simulation per halving tried, about two of the chosen size's); "
    "on a bandwidth-only link graph all twice where the first packing plays out over 1 %",
    summary="allgather / reduce-scatter / allreduce over the optimal per-root packing of "
    "arborescences (every block over trees of its own), pipelined in segments",
    options=("align", "max_trees", "time_limit", "search", "packings"),
    kind="forest",
    pipelined=True,
    own_slices=True,
)
def forest(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allgather",
    sizes: Mapping[str, int] | None = None,
    align: Annotated[int, Option(most=1 << 20)] = 1,
    max_trees: Annotated[int, Option(most=1 << 16)] = 64,
    time_limit: Annotated[float, Option(kind="time", above=0)] | None = None,
    search: Literal["quick", "full"] = "quick",
    packings: Annotated[int, Option(most=2)] = 2,
) -> Schedule:
    """Plan ``collective`` (``allgather``, ``reduce_scatter`` or ``allreduce``) of
    ``nbytes`` (each member's block; an allreduce's vector) on every node of ``platform``
    over its optimal per-root packing (module docstring).

    Parameters
    ----------
    root
        Ignored (every member is a root); given only by callers of the rooted front door.
    members
        Every node of the platform (None): the packing spans them all; else the nodes
        taking part, the others routing (a multi-site platform's hosts, its switches
        carrying their messages), under a model whose transfers are routed end to end
        (``hockney``, ``postal``, ...; not a graph model, whose relays hold what they
        pass on: :mod:`hetcoll.planners.forestmembers`).
    segment_size
        Bytes per segment (every flow); default: each flow cut into the same number of
        segments, the number chosen by play-out (module docstring).
    sizes
        Each member's block (allgather, reduce-scatter): the v-variants.
    align
        Shares and segments are multiples of this many bytes (a reduction's element size),
        the largest share of a range taking the rest.
    max_trees
        Keep at most this many trees per root and direction (the largest shares).
    time_limit
        Seconds for the column generation (default none: it stops at its gap or its
        iteration limit, so every rank derives the same schedule; a time limit makes the
        schedule depend on how fast the machine is at the time).
    search
        How the segment count or size is chosen when ``segment_size`` is not given:
        ``"quick"`` (default) stops where the finer cuts are predicted to gain under
        :data:`STOP` of the time or the time is within :data:`STOP` of the packing's
        bound (a play-out: within :data:`NEAR`); ``"full"`` tries every candidate (module
        docstring; :func:`_descend`).
    packings
        On a bandwidth-only link graph without ``segment_size`` or ``time_limit``, how
        many optimal packings may be played out: 2 (default) plays out a second one
        (:data:`AGAIN`) where the first's fastest cut ends more than 1 % over its bound;
        1 keeps the first (half the planning time there).

    Returns
    -------
    Schedule
        Per-root flows (:mod:`hetcoll.perroot`) and each rank's send ``order``;
        ``params``: the packing's ``trees``, certified ``packing_time`` and
        ``packing_bound`` (seconds, the LP's transfers of the given segment size, else of
        a block up to 1 MiB), the largest
        ``segment_size``, the play-out's time
        ``estimate``; no wall-clock time (a schedule is the same byte for byte on every
        rank).

    Examples
    --------
    >>> from hetcoll import Platform, simulate
    >>> p = Platform.from_dict({"model": "multi_port", "nodes": [{"id": i} for i in "abc"],
    ...     "links": [{"u": "a", "v": "b", "bandwidth": 1e9}, {"u": "b", "v": "c",
    ...     "bandwidth": 1e9}, {"u": "a", "v": "c", "bandwidth": 1e9}]})
    >>> s = forest(p, nbytes=3 * 2**20, segment_size=2**16)
    >>> len({f.tree.root for f in s.flows})
    3
    """
    if collective not in FOREST_OPS:
        raise PlannerError(f"forest plans {', '.join(FOREST_OPS)}, not a {collective}")
    sub = None  # the members, when some nodes only route (forestmembers.py)
    if members is not None and set(members) | ({root} if root else set()) != set(platform.ids):
        sub = list(dict.fromkeys(members))
    ids = platform.ids if sub is None else tuple(sub)
    n = len(ids)
    if sizes is not None and collective == "allreduce":
        raise PlannerError("sizes: an allreduce has one vector, not blocks")
    if sizes is not None and set(sizes) != set(ids):
        raise PlannerError("sizes: give the block of every member")
    blocks = [int(sizes[v]) if sizes is not None else int(nbytes) for v in ids]
    vector = int(nbytes) if collective == "allreduce" else sum(blocks)
    slice_size = max(segment_size or min(max(vector // max(n, 1), 1), 1 << 20), 1)
    if sub is not None:  # among hosts a byte's port time is nearly all latency: the LP
        slice_size = max(slice_size, MIN_SEGMENT)  # of 1-byte slices does not solve
    if n == 1:
        raise PlannerError("forest needs at least two nodes")

    def pack(**column_generation: Any) -> Forest:
        return pack_forest(
            platform,
            collective,
            None if collective == "allreduce" else [max(b, 1) for b in blocks],
            slice_size=slice_size,
            model=model,
            time_limit=time_limit,
            members=sub,
            **column_generation,
        )

    packed = pack()
    how = dict(blocks=blocks, vector=vector, nbytes=nbytes, segment_size=segment_size)
    how.update(sizes=sizes, align=align, search=search)
    sched, predictions, lower, linear = _planned(
        platform, _keep(packed, max_trees), collective, model, **how
    )
    # another optimal packing where the first plays out more than AGAIN[0] over its bound,
    # the faster play-out kept (module docstring)
    again = packings > 1 and linear and not segment_size and time_limit is None
    if again and sched.params["estimate"] > (1 + AGAIN[0]) * lower:
        other = pack(smoothing=AGAIN[1], max_iterations=AGAIN[2] * packed.iterations)
        alt, more, _, _ = _planned(platform, _keep(other, max_trees), collective, model, **how)
        if alt.params["estimate"] < sched.params["estimate"]:
            sched, predictions = alt, more
    if id(sched) in predictions:  # auto's comparison takes it rather than simulate again
        keep_prediction(platform, sched, model, predictions[id(sched)])
    flows = list(sched.flows)
    if collective == "allreduce" and len({f.tree.root for f in flows}) == 1:
        return _one_root(platform, sched, model)
    return sched


def _planned(
    platform: Platform,
    packed: Forest,
    collective: str,
    model: Any,
    *,
    blocks: list[int],
    vector: int,
    nbytes: int,
    segment_size: int | None,
    sizes: Mapping[str, int] | None,
    align: int,
    search: str,
) -> tuple[Schedule, dict[int, Any], float, bool]:
    """:func:`forest`'s schedule on the packing ``packed`` (``blocks``: each member's;
    ``vector``: the bytes of the result): the schedule, the simulations of the schedules
    it simulated (by ``id``), the packing's certified bound on the plan's time (seconds)
    and whether the play-out is what the simulator replays on a bandwidth-only link
    graph (``linear``)."""
    n = len(blocks)
    if collective == "allreduce":
        shares = _split(vector, list(packed.blocks), align)
        kinds = (("in", "reduce"), ("out", "bcast"))
    else:
        shares = blocks
        kinds = (("in", "reduce"),) if collective == "reduce_scatter" else (("out", "bcast"),)
    ranges, at = {}, 0
    for r in range(n):
        ranges[r] = (at, shares[r])
        at += shares[r]
    if collective == "allreduce":  # the owners: the members with a share
        ranges = {r: rg for r, rg in ranges.items() if rg[1] > 0} or {0: (0, 0)}
    nominal = max(int(nbytes), 0)

    def build(seg: int | None, ranges=ranges) -> list[Flow]:
        return _flows(packed, ranges, kinds, _aligned(seg, align), align, 1e-9)

    plans = [ranges]
    if collective == "allreduce" and len(ranges) > 1:  # reduce + bcast through one member
        owner = max(ranges, key=lambda r: (ranges[r][1], -r))
        plans.append({owner: (0, vector)})
    from ..models import get_model
    from ..simulator import simulate, simulate_within

    cost_model = get_model(model) if model is not None else platform.model
    bound = cost_model.bind(platform)
    budget = transfer_budget(bound.contention) // 4
    chain = "edge" if bound.concurrent_sends else "rank"

    def make(flows: list[Flow], played: Any, estimate: float) -> Schedule:
        order = played.order if is_per_root(collective, flows, timetable=True) else None
        if chain == "edge" and is_per_root(collective, flows):
            order = None  # windows per edge, in round order: no timetable to replay
        if order is not None and played.complete:  # plain entries, every slot a transfer's
            order = ListedOrder(order)  # rank among those started: not checked one by one
        seg = max((f.segment_size or 0 for f in flows), default=0)
        # under windows per edge: a first segment of half the others (whole elements)
        half = seg // 2 // align * align if chain == "edge" else 0
        params = {
            "trees": len(flows),
            "segment_size": seg or None,
            "estimate": estimate,
            "packing_time": packed.time,
            "packing_bound": packed.bound,
        }
        with gc_paused():  # its checks make an object or more per listing of the order
            return Schedule(
                collective,
                "forest",
                nominal,
                tuple(flows),
                params,
                sizes=sizes,
                order=order,
                chain=chain,
                stagger=half,
            )

    # a lower bound on the plan's time: the packing's certified bound (seconds)
    lower = packed.bound * (vector if collective == "allreduce" else 1)

    p = packed.problem
    # every edge holds its resources for exactly its time: the play-out is the simulator's
    tight = chain == "rank" and bool(
        np.all(np.asarray(p.usage.max(axis=0).todense()).ravel() == p.T)
    )
    # a reduce-scatter is also timetabled as its broadcast's play-out run backwards
    # (forestreverse.py) where nothing but the play-out's resources count: no combine cost
    mirror = collective == "reduce_scatter" and chain == "rank" and tight
    mirror = mirror and not np.any(platform.gamma)
    # there the play-out's urgency is a latest start within the bound (forestorder.py)
    lead = lower if tight else None
    # and without a per-message cost (a bandwidth-only link graph) a finer cut costs nothing
    # but the play-out's work: one count for all never wins there (module docstring), where
    # under per-message costs (``tini``'s per-message time) it may be the only cut that pays
    linear = tight and bandwidth_only(platform, max(nominal, 1), model)
    if tight:  # the play-out is the simulator's: a larger share of its budget (EXACT)
        budget = transfer_budget(bound.contention) // EXACT

    def played_out(
        flows: list[Flow], backwards: bool = False, above: float | None = None
    ) -> tuple[float, list[Flow], Any]:
        # the time, the flows and the order (backwards: a reduce-scatter's broadcast run
        # backwards, forestreverse.py): the schedule is made (and checked) for the fastest;
        # above: the fastest so far, a play-out proved slower stops early, its time inf
        # (forestorder.py: the same one is kept)
        if backwards:
            played = reversed_play_out(platform, flows, model, lead, above)
        else:
            played = per_root_order(platform, flows, model, lead=lead, above=above)
        return played.time, flows, played

    predictions: dict[int, Any] = {}

    def simulated(flows: list[Flow], above: float | None = None) -> Schedule:
        # the play-out runs one transfer per NIC at a time, not the windows that share it
        played = per_root_order(platform, flows, model)
        got = make(flows, played, played.time)
        # above: the time _descend compares this one with; a run proved slower stops
        # early, its estimate inf (the search's decisions the same: it loses either way)
        if above is None:
            run = simulate(platform, got, model)
        else:
            run = simulate_within(platform, got, model, above)
        sched = make(flows, played, run.makespan if run is not None else math.inf)
        predictions[id(sched)] = run
        return sched

    if chain == "edge" and not segment_size:
        cap = transfer_budget(bound.contention)
        most = max(cap // 4, min(cap // 2, SIMULATED // n))
        tried = _descend(plans, build, simulated, most, lower, search)
        sched = min(tried, key=lambda s: s.params["estimate"])  # the first of equals
    else:
        outs = [played_out(build(segment_size, rg)) for rg in plans] if segment_size else []
        for rg in plans if not segment_size else ():
            whole = build(None, rg)
            sized = _proportional(whole, [f.nbytes for f in whole], budget)
            # on a bandwidth-only link graph also counts in proportion to the flows' fills
            # (_fills: a tree through slow links its share saturates, cut as finely as the
            # others, ends late by its fill: 1.126x the optimum on seed 5 of the benchmark)
            fills = _fills(packed, whole) if linear else []
            filled = _proportional(whole, fills, budget) if linear else None
            filled = None if filled == sized else filled
            # whole shares, then segments of about one size, then (not on a bandwidth-only
            # link graph, unless no size fits the budget) one count for all
            uniform = _counts(whole, align, budget)[1:] if not (linear and sized) else []
            cuts = [None, *([sized] if sized else []), *([filled] if filled else []), *uniform]
            tries = [(k, False) for k in cuts]
            if linear and sized and (collective == "allgather" or mirror):
                # after segments of about one size, both counts with a ramp (_ramped), within
                # the budget the ramps leave: played before the counts by fill, which a
                # ramped cut faster than them then stops early (forestorder.py), and not
                # taken for being within NEAR, so that a cut without a ramp that is faster
                # is still played out
                hops = len(RAMP) * sum(f.hops for f in whole)
                ramps: dict[tuple[int, ...], tuple[list[int], bool]] = {}
                for weights in ([f.nbytes for f in whole], fills):
                    k = _proportional(whole, weights, budget - hops)
                    if k:
                        ramps.setdefault(tuple(k), (k, True))
                tries[2:2] = ramps.values()
            for k, ramp in tries:
                fastest = min((o[0] for o in outs), default=None)
                flows = _ramped(whole, k, align, mirror) if ramp else _cut(whole, k, align)
                outs.append(played_out(flows, mirror, fastest))
                if search == "quick" and not ramp and outs[-1][0] <= (1 + NEAR) * lower:
                    break  # within NEAR of the bound: a finer cut cannot gain more
        estimate, flows, played = min(outs, key=lambda o: o[0])  # the first of equals
        if mirror and segment_size and estimate > (1 + STOP) * lower:
            # segments of the given size: their play-out run backwards too, the faster kept
            # (searching, every cut is played out backwards only)
            back = reversed_play_out(platform, flows, model, lead, estimate)
            if back.time < estimate:
                estimate, played = back.time, back
        sched = make(flows, played, estimate)
    return sched, predictions, lower, linear


def _one_root(platform: Platform, sched: Schedule, model: Any) -> Schedule:
    """An allreduce through one root: in the play-out's slot order (per-root lowering,
    which the simulator replays where the model's resources are the play-out's) or without
    it (a rooted reduce and broadcast in its trees' order, which may run faster under
    per-message costs the play-out prices only by its two sizes), whichever simulates
    faster (ties: the slot order).  On the 8-node graph of ``tests/test_forest_order.py``
    the slot order takes 2.400 ms for 8 MiB against 4.79 ms; on ``examples/net.json``
    (``tini``) at 256 KiB the trees' order is faster.  Under a model whose ranks send
    concurrently (``nic``) the trees' order starts every segment a rank holds at once
    (nothing chains its sends), thousands of flows sharing its NIC, which takes minutes
    to simulate and ends late: the slot order, one flow per rank at a time, is kept."""
    from ..models import get_model
    from ..simulator import simulate

    cost_model = get_model(model) if model is not None else platform.model
    if sched.order is None or cost_model.bind(platform).concurrent_sends:
        return sched
    plain = replace(sched, order=None)
    if simulate(platform, plain, model).makespan < simulate(platform, sched, model).makespan:
        return plain
    return sched


def _aligned(seg: int | None, align: int) -> int | None:
    return None if seg is None else max(align, seg // align * align)


def _keep(packed: Forest, most: int) -> Forest:
    """At most ``most`` trees per root and direction: the largest shares (the others'
    bytes go to them in proportion)."""
    keep: list[int] = []
    groups: dict[tuple[int, str], list[int]] = {}
    for k, (r, d) in enumerate(zip(packed.roots, packed.dirs, strict=True)):
        groups.setdefault((r, d), []).append(k)
    for ks in groups.values():
        ks.sort(key=lambda k: (-packed.rates[k], packed.trees[k].tolist()))
        keep += ks[:most]
    if len(keep) == len(packed.trees):
        return packed
    keep.sort()
    return replace(
        packed,
        trees=[packed.trees[k] for k in keep],
        roots=[packed.roots[k] for k in keep],
        dirs=[packed.dirs[k] for k in keep],
        rates=packed.rates[keep],
    )
