"""The butterfly allreduce with bandwidth-balanced shares, pipelined in segments: the
shares of :func:`hetcoll.planners.butterfly.balanced_shares`, every member sending each
owner its part of the owner's share directly and the owner sending the reduced share
back to every member, but segment by segment, so that the reduce-scatter and the
allgather overlap on every full-duplex NIC.

Why it can reach the allreduce bound of a star of NICs: with owner ``v``'s share ``s_v``
(``sum s_v = M``) node ``v`` sends ``M - s_v`` bytes in the reduce-scatter and ``(N - 1)
s_v`` in the allgather, ``M + (N - 2) s_v`` in all, and receives as many.  The shares in
proportion to ``T b_v - M`` (clipped at 0) make that ``T b_v`` for every member with a
share at ``T = T* = max(M / b_min, 2 (N - 1) M / sum_i b_i)``: run the two phases at once,
each edge ``u -> v`` carrying ``s_u + s_v`` bytes at a constant rate, and every NIC is busy
both ways from the first byte to the last (in the fluid limit: the closed form of
:mod:`hetcoll.planners.butterfly`).  ``balanced`` runs the phases one after the other, in
whole shares: each NIC then carries only one phase's unbalanced load at a time.

Here owner ``v`` forwards segment ``j`` of its share as soon as it has combined it from
every member (the per-root lowering of :mod:`hetcoll.perroot`: an allreduce's broadcast of
bytes waits for their reduction only).  Under a model whose ranks send concurrently (``nic``)
the schedule's ``chain`` is ``edge``: each rank keeps a window of sends in flight per edge,
in proportion to the bytes the edge carries (:func:`hetcoll.perroot.windows`), so that
max-min sharing, which gives every transfer crossing a saturated NIC the same rate, gives
the edges the rates of the fluid schedule; every flow's first segment is half the others
(``stagger``) so that sends of one window end apart and each one's lead passes under
another's bytes.  Elsewhere the ranks send in round order (no chain).  Without a segment
size the planner simulates segment sizes halving from a sixteenth of the largest share
(:func:`hetcoll.planners.forestplan._descend`, as ``forest`` does), the fastest kept, down to
the size whose schedule sends as many messages as the simulator takes (``forest`` stops at a
quarter to a half of that): the lag below shrinks with the segment, and a simulation of
shared NICs costs about a sixth of what it did when that share was set (its flows in
arrays, :mod:`hetcoll.simulator.events`).  It halves only while the halving is predicted to
gain, its messages' leads priced by :func:`startup`.

What is left between the schedule and ``T*`` is the pipeline's lag: the members whose share
is small (the slow NICs) receive almost only the allgather, bytes their owners send back
once they have combined them from every member, their own contribution among them.  A NIC
that keeps ``W`` sends in flight (its edges' windows together) gives each ``1 / W`` of its
rate, so a byte comes back about ``W s / b`` after the slow node sent it (segments of ``s``
bytes, its rate ``b``), and at ``T*`` every NIC is busy both ways from the first byte to the
last (``M + (N - 2) s_v = T* b_v``): a moment the slow NIC's receive waits for a reduction is
never made up.  The run takes about ``T*`` plus the most bytes the slowest NIC has in flight
at any moment over its rate, in the middle of the run as at its ends, so segments short at
both ends of a share and long in its middle keep the lag of the long ones.  ``W`` is at
least the number of owners ``K`` (a window per edge), and ``2 (N - 1) M / s`` messages fit
the simulator's budget ``B`` only from ``s = 2 (N - 1) M / B``: the lag is at least about
``2 (N - 1) K / B`` of ``T*`` at every size, 1.0 % to 1.3 % at 16 nodes.  The leads add
``S = (M / s) a / W`` (:func:`startup`, ``a`` a send's lead), and ``lag S = M a / b``
whatever ``W`` and ``s``: the two together are at least ``2 sqrt(a b / M)`` of ``T*``,
2.7 % at 64 MiB behind NICs of 5 us latency (``a`` = 10 us).

That holds for sends whose leads idle their share of a NIC, and they do under windows in
proportion to the edges' bytes: during one send's lead its edge's share goes to the NIC's
other edges, whose bytes run ahead of the fluid schedule.  The *phased* cut (``cut``)
cuts every share into the same number ``k`` of segments instead, keeps one send in flight
per edge (``chain="peer"``: the shares advance together, segment ``j`` of each in the
same round of every rank's program, each of its size in proportion to its share) and starts
each flow's segments at its own phase (:func:`hetcoll.perroot._phases`), so that the leads
of the flows crossing a NIC come at different moments: where ``T* = M / b_min`` and the
faster NICs have time to spare, a slow NIC's other flows take up the share of the one in
its lead and the leads cost almost nothing.  What is left is the fill and drain, about
``T* / k`` (a segment of every share crosses the slow NIC before anything comes back).
There the fast NICs need not all own a share: the phased cut of ``cut="best"`` (and
``cut="owners"``) puts the shares on the fewest fast members that keep each one's NIC busy
at most half of ``T*`` (:func:`~hetcoll.planners.butterfly.fewest_owners`: a quarter of a
star of 100/25/10 Gbit/s NICs), so that each share is cut in ``k`` segments from ``2 (N -
1) k`` messages per owner, not per member, and the budget takes a larger ``k``: 64 NICs at
1 MiB 1.086 ``T*`` in 13 segments on 16 owners, against 1.171 in 5 on the balanced shares'
43 (``butterfly_pipelined(star_platform(64, ("100Gbps", "25Gbps", "10Gbps")), nbytes=1 <<
20, align=8)``).
``k`` is a power of two from :data:`FIRST_COUNT`, the simulator's budget's count or the
count where the curve ``A / k + B k`` of the model's costs is least
(:func:`predicted_count`): the search starts at the power of two below that least and
walks to the neighbouring counts while the time falls, each one that loses stopped once
proved slower and one that the curve through two full runs puts well above the fastest
not simulated, then tries the count of the least (of the curve through two full runs,
else the model's) where it lies between the fastest's neighbours (:func:`phased_search`).
``cut="best"`` (the default) simulates the phased cut and, where it stays over
:data:`NEAR` above the fluid time and every NIC binds, the even one too, and keeps the
faster: where every NIC binds (``M /
b_min = 2 (N - 1) M / sum_i b_i``: a star of eight NICs, half at 25 and half at 10
Gbit/s) no NIC can take up another's share and the even cut's windows do better; where
one has time to spare, the phased cut covers the leads and beats the even one (8 to 64
NICs of 100/25/10 Gbit/s at 1 MiB: 1.09 against 1.17 ``T*`` at 8).

There a send's lead is covered only if, at every NIC, the sends in flight beside it take
up its share at once: max-min sharing gives a transfer more only where both its NICs have
room, so the leads must come at the same moments at both ends of every edge, half the
sends of every NIC in their lead while the other half carry bytes.  The *kind* cut
(``cut="kind"``, ``chain="kind"``: :func:`hetcoll.perroot.per_root_program`) keeps each
edge's reduce-scatter sends and its allgather sends in windows of their own, twice as deep
as their bytes' (every send has a twin half a segment apart: two groups of sends), and a
rank that owns a share sends its own contributions only once it has combined its share's
segment two before, so that its sends start when the slowest NICs' do (whose contributions
complete its combines) instead of running ahead and drifting out of step; an owner's
allgather sends start when its combines complete, in step too.  On that star it gives
1.006 ``T*`` at 64 MiB (64 KiB segments; the even cut 1.028).  ``cut="best"`` simulates
it after the even cut's search, at a quarter and a half of the even cut's fastest segment
(:func:`kind_search`), where every member's NIC is busy within :data:`NEAR` of the
shares' fluid time (elsewhere the phased cut covers the leads).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Annotated, Any, Literal

from ..errors import PlannerError
from ..models import get_model
from ..perroot import _alone, windows
from ..platform import Platform
from ..schedule import Flow, Schedule, transfer_budget
from ._registry import Option, register
from ._shared import keep_prediction
from .butterfly import _rates, balanced_shares, butterfly_flows, fewest_owners
from .forestplan import _descend

__all__ = ["butterfly_pipelined"]


@register(
    "butterfly_pipelined",
    collectives=("allreduce",),
    paper="Ryabinin et al. 2021 (Moshpit SGD; hivemind's butterfly all-reduce and load "
    "balancing), Sec. 3-4, pipelined in segments",
    complexity="O(N^2 M / segment) sends; a simulation per segment size tried (about three)",
    summary="butterfly allreduce with bandwidth-balanced shares, reduce-scatter and "
    "allgather pipelined in segments so that they overlap on every full-duplex NIC",
    options=("align", "search", "cut"),
    kind="forest",
    pipelined=True,
    own_slices=True,
)
def butterfly_pipelined(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allreduce",
    sizes: dict[str, int] | None = None,
    align: Annotated[int, Option(most=1 << 20)] = 1,
    search: Literal["quick", "full"] = "quick",
    cut: Literal["best", "even", "phased", "kind", "owners"] = "best",
) -> Schedule:
    """The butterfly allreduce of an ``nbytes`` vector over every node of ``platform``,
    member ``i``'s share :func:`~hetcoll.planners.butterfly.balanced_shares` of the rates
    the model gives, every share pipelined in segments of ``segment_size`` bytes (multiples
    of ``align``), or of the size that simulates fastest (``search``: as ``forest``'s);
    module docstring.  ``cut``: ``"even"`` those segments of one size; ``"phased"`` (under
    a model whose ranks send concurrently) every share in as many segments, their count
    the fastest simulated (:func:`phased_search`); ``"kind"`` (such a model too) segments
    of one size under windows per edge and kind of flow, reduce sends paced by the rank's
    combines (``chain="kind"``); ``"owners"`` the phased cut of the shares of
    :func:`~hetcoll.planners.butterfly.fewest_owners` where there are such (else of the
    balanced ones); ``"best"`` that schedule, and where it is not within :data:`NEAR` of
    the shares' fluid time and every member's NIC is busy within :data:`NEAR` of it the
    even one and the kind one (:func:`kind_search`) too, the fastest kept.

    Returns
    -------
    Schedule
        Per-root flows (:mod:`hetcoll.perroot`): the reduce flow and the bcast flow of each
        owner's share, ``chain="edge"`` (even), ``"peer"`` (phased) or ``"kind"`` under a
        model whose ranks send concurrently; ``params``: ``trees``, ``segment_size`` (None: shares
        whole; phased: the largest share's), ``segments`` (phased: each share's count), the
        simulated ``estimate`` (seconds) and ``bound``, the shares' fluid time (seconds:
        ``T*`` under ``nic``).

    Examples
    --------
    On a star of four 10 Gbit/s NICs every share is a quarter, each cut into two segments,
    the first a half (the stagger):

    >>> from hetcoll.generators.stars import star_platform
    >>> s = butterfly_pipelined(star_platform(4, ("10Gbps",)), nbytes=4096,
    ...                         segment_size=512)
    >>> [f.nbytes for f in s.flows if f.kind == "reduce"], s.chain, s.stagger
    ([1024, 1024, 1024, 1024], 'edge', 256)
    """
    if collective != "allreduce":
        raise PlannerError(f"butterfly_pipelined plans allreduce, not a {collective}")
    if sizes is not None:
        raise PlannerError("sizes: an allreduce has one vector (no blocks)")
    ids = list(platform.ids)
    if members is not None and set(members) | ({root} if root else set()) != set(ids):
        raise PlannerError(
            "butterfly_pipelined plans on every node of the platform: give the members' "
            "sub-platform"
        )
    if len(ids) < 2:
        raise PlannerError("butterfly_pipelined needs at least two nodes")
    align = max(int(align), 1)
    vector = int(nbytes)
    rates = _rates(platform, model)
    shares = balanced_shares(rates, vector, align)
    n = len(ids)
    loads = [(vector + (n - 2) * s) / r for s, r in zip(shares, rates, strict=True)]
    fluid = max(loads)
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    chain = "edge" if bound.concurrent_sends else "rank"

    def build(seg: int | None, _ranges: Any = None) -> list[Flow]:
        if seg is not None:
            seg = max(align, seg // align * align)
        return butterfly_flows(platform, model, ids, shares, seg)

    def make(flows: list[Flow], estimate: float | None, how: str | None = None) -> Schedule:
        seg = max((f.segment_size or 0 for f in flows if f.chunks > 1), default=0)
        half = seg // 2 // align * align if chain == "edge" else 0
        params = {
            "trees": len(flows),
            "segment_size": seg or None,
            "estimate": estimate,
            "bound": fluid,
        }
        return Schedule(
            "allreduce",
            "butterfly_pipelined",
            vector,
            tuple(flows),
            params,
            chain=how or chain,
            stagger=half,
        )

    def make_phased(flows: list[Flow], count: int, estimate: float | None) -> Schedule:
        params = {
            "trees": len(flows),
            "segment_size": _piece(max(owned), count, align),
            "segments": count,
            "estimate": estimate,
            "bound": owned_fluid,
        }
        return Schedule(
            "allreduce",
            "butterfly_pipelined",
            vector,
            tuple(flows),
            params,
            chain="peer",
            stagger=align,
        )

    phase = cut in ("best", "phased", "owners") and chain == "edge"
    if cut in ("phased", "kind", "owners") and chain != "edge":
        raise PlannerError(f"cut={cut!r}: needs a model whose ranks send concurrently (nic)")
    whole = build(None)
    # the phased cut's shares: on the fewest fast owners where the others' NICs bind
    few = cut in ("best", "owners") and phase
    owned = (fewest_owners(rates, vector, align) if few else None) or shares
    owned_fluid = max((vector + (n - 2) * s) / r for s, r in zip(owned, rates, strict=True))
    whole_owned = whole if owned is shares else butterfly_flows(platform, model, ids, owned, None)

    def pieces(count: int) -> list[Flow]:
        return [replace(f, segment_size=_piece(f.nbytes, count, align)) for f in whole_owned]

    if segment_size and cut in ("phased", "owners"):  # the largest share in such segments
        count = -(-max(owned) // max(int(segment_size), 1))
        return make_phased(pieces(count), count, None)
    kind = "kind" if cut == "kind" else None
    if segment_size:
        return make(build(int(segment_size)), None, kind)
    from ..simulator import simulate, simulate_within

    predictions: dict[int, Any] = {}

    def simulated(
        flows: list[Flow], count: int = 0, above: float | None = None, how: str | None = None
    ) -> Schedule:
        # above: the time the search compares this one with; a run proved slower stops
        # early, its estimate inf (the search's decisions the same: it loses either way)
        got = make_phased(flows, count, None) if count else make(flows, None, how)
        if above is None:
            run = simulate(platform, got, model)
        else:
            run = simulate_within(platform, got, model, above)
        estimate = run.makespan if run is not None else math.inf
        sched = make_phased(flows, count, estimate) if count else make(flows, estimate, how)
        predictions[id(sched)] = run
        return sched

    def by_kind(flows: list[Flow], above: float | None = None) -> Schedule:
        return simulated(flows, 0, above, "kind")

    most = transfer_budget(bound.contention)  # every message the simulator takes
    lower = fluid if bound.nic_rate(0) is not None else 0.0
    # where a NIC has time to spare the phased cut covers the leads: the even and kind
    # cuts' simulations would cost without gain (stars of 100/25/10 Gbit/s NICs at 1 MiB:
    # 8 nodes 0.5 s of 0.9, 16 nodes 2.5 s of 6, 64 nodes 6.4 s of 63)
    tight = min(loads) >= (1 - NEAR) * fluid
    tried = []
    if phase:
        slow = min(range(n), key=lambda u: rates[u])
        owner = max(range(n), key=lambda u: owned[u])
        guess = predicted_count(lower, bound.delay(slow, owner, 0) if owner != slow else 0, tight)
        tried = phased_search(pieces, simulated, most, lower, guess)
    near = tried and min(s.params["estimate"] for s in tried) <= (1 + NEAR) * lower
    if cut == "kind":
        tried = _descend([None], build, by_kind, most, lower, search)
    elif not tried or (cut == "best" and not near and tight):
        price = startup(bound, ids, shares, rates) if lower > 0 and chain == "edge" else None
        evens = _descend([None], build, simulated, most, lower, search, price)
        tried += evens
        if cut == "best" and chain == "edge" and tight:
            tried += kind_search(evens, build, by_kind, most, lower, align)
    sched = min(tried, key=lambda s: s.params["estimate"])  # the first of equals
    keep_prediction(platform, sched, model, predictions[id(sched)])
    return sched


#: ``cut="best"`` simulates the even segments too where the phased schedule takes more than
#: this fraction over the shares' fluid time
NEAR = 0.01
#: the fewest segments per share the phased search simulates first
FIRST_COUNT = 4


def kind_search(
    evens: list[Schedule],
    build: Callable[[int], list[Flow]],
    simulated: Callable[..., Schedule],
    most: int,
    lower: float,
    align: int,
) -> list[Schedule]:
    """The schedules under windows per edge and kind of flow (``chain="kind"``) simulated
    after the even cut's ``evens``: segments of a quarter of the fastest even one's (the
    windows twice as deep and their leads covered by their twins' bytes, shorter segments
    shorten the fill and drain where the even cut's leads stopped its halving), then,
    where that is not within :data:`NEAR` of ``lower``, of a half (the leads the twins
    leave uncovered grow with the messages); none past ``most`` messages or shorter than
    ``align``.  ``simulated(flows, above=t)``: each asked to beat the fastest so far."""
    best = min(evens, key=lambda s: s.params["estimate"])
    even = best.params["segment_size"] or 0
    out: list[Schedule] = []
    for part in (4, 2):
        seg = even // part // align * align
        if seg < align:
            continue
        flows = build(seg)
        if sum(f.transfers for f in flows) > most:
            continue
        fastest = min(s.params["estimate"] for s in (best, *out))
        out.append(simulated(flows, above=fastest))  # a slower run stops early
        if out[-1].params["estimate"] <= (1 + NEAR) * lower:
            break
    return out


def _piece(nbytes: int, count: int, align: int) -> int | None:
    """The segment (a multiple of ``align``) that cuts ``nbytes`` into ``count`` pieces,
    the last shorter (None: whole).

    >>> _piece(1000, 4, 8), _piece(1000, 1, 8), _piece(0, 4, 8)
    (256, None, None)
    """
    per = -(-nbytes // max(count, 1))
    seg = -(-per // align) * align
    return seg if 0 < seg < nbytes else None


def phased_search(
    cut: Callable[[int], list[Flow]],
    simulated: Callable[[list[Flow], int, float | None], Schedule],
    most: int,
    lower: float,
    guess: float = math.inf,
) -> list[Schedule]:
    """The phased schedules simulated to choose the count ``k`` of segments per share
    (``cut(k)`` the flows).  Its time over ``lower`` (the shares' fluid time) reads
    ``A / k + B k``: a share's segment crossing the slowest NIC and back (the pipeline's
    fill and drain, in proportion to the segment) and its messages' leads that other
    flows' bytes leave uncovered (in proportion to the messages).  The search walks the
    counts of :func:`ladder` (powers of two and the budget's count, the most segments
    whose schedule sends at most ``most`` messages): it simulates the one nearest below
    ``guess`` (the count where that curve is least, :func:`predicted_count`: inf, the
    budget's) to its end, then walks to the neighbouring counts, first towards
    ``guess``, while the time falls; then it tries the count nearest the curve's least
    (of the curve through the last two counts run to their ends, else ``guess``) where
    that lies between the fastest's neighbours (between the powers of two the phases can
    gain or lose: on 8 NICs of 100/25/10 Gbit/s at 256 KiB 4 segments take 1.283 ``T*``, 6
    take 1.256, 8 take 1.321; on 32 at 1 MiB 16 take 1.068, 17 1.112).  Each count after
    the first is asked to beat the fastest so far (``simulated(flows, k, above)``: its run
    stopped where it is proved not to, :func:`hetcoll.simulator.simulate_within`, its
    estimate then inf), so one that loses costs a fraction of its run; and once two
    counts have run to their ends, one that the curve through those two
    (:func:`fitted_excess`) puts more than :data:`SKIP` of the fastest's time over
    ``lower`` above it is not simulated (64 NICs of 100/25/10 Gbit/s at 256 KiB: 4 and 8
    segments 1.276 and 1.223 ``T*``, the budget's 13 put at 1.252).  A simulation costs
    about its messages, so starting from the predicted least instead of the fewest
    segments skips the cheap counts' full runs and the expensive ones that lose: on 64
    NICs of 100/25/10 Gbit/s at 1 MiB the budget's 13 segments (the least is past the
    budget), then 8 stopped early, where doubling from 4 would run 4, 8 and 13 to their
    ends.  Every time it keeps is a full simulation: the curves only order the counts and
    skip those they put well above the fastest.  Under twice :data:`FIRST_COUNT` the
    budget's count is the one simulated; where :data:`FIRST_COUNT` segments exceed the
    budget, none."""
    k = FIRST_COUNT
    if sum(f.transfers for f in cut(k)) > most:
        return []
    counts = ladder(_most_within(cut, k, 2 * k, most, grow=True), guess)
    out: list[Schedule] = []

    def beats(k: int) -> bool:
        best = min(s.params["estimate"] for s in out) if out else None
        if best is not None and _skipped(out, k, lower):
            return False
        out.append(simulated(cut(k), k, best))
        return best is None or out[-1].params["estimate"] < best

    # from below the guess: a walk up costs its counts' runs, one down the larger ones'
    at = max((i for i, k in enumerate(counts) if k <= guess), default=0)
    beats(counts[at])
    first = 1 if guess > counts[at] else -1  # the neighbour towards the guess first
    for step in (first, -first):
        i = at + step
        while 0 <= i < len(counts) and beats(counts[i]):
            i += step
        if i != at + step:  # it moved: the time rose past the least (the curve is convex)
            break
    # the count nearest the least (of the curve through two full runs, else the guess's),
    # where it lies between the fastest's neighbours
    fastest = min(out, key=lambda s: s.params["estimate"]).params["segments"]
    i = counts.index(fastest)
    least = _fitted_least(out, lower, guess)
    near = round(least) if math.isfinite(least) else 0
    lo, hi = counts[max(i - 1, 0)], counts[min(i + 1, len(counts) - 1)]
    if lo < near < hi and near not in {s.params["segments"] for s in out}:
        beats(near)
    return out


def ladder(top: int, guess: float = math.inf) -> list[int]:
    """The counts :func:`phased_search` walks, the budget's ``top`` the most: the powers of
    two from :data:`FIRST_COUNT` up to ``1 / sqrt 2`` of ``top``, then ``top``, or instead
    of ``top``, where it is not a power of two, the count nearest ``guess`` where that
    lies between the last power of two and ``top`` (``top`` is past the curve's least
    there, and its phases are not those of a power of two: on 32 NICs of 100/25/10
    Gbit/s at 2 MiB the budget's 63 segments take 1.097 ``T*``, the guess's 44 1.031, 32
    1.039; on 32 NICs of 25/10 Gbit/s at 16 MiB the budget's 16 take 1.014, 12 1.018).
    Under twice :data:`FIRST_COUNT`, ``top`` alone.

    >>> ladder(63, 44.06), ladder(16, 12.4), ladder(13, 22.0), ladder(1000, 5.5), ladder(5)
    ([4, 8, 16, 32, 44], [4, 8, 16], [4, 8, 13], [4, 8, 16, 32, 64, 128, 256, 512, 1000], [5])
    """
    k, counts = FIRST_COUNT, []
    while top > 2 * FIRST_COUNT and k * math.sqrt(2) <= top:
        counts.append(k)
        k *= 2
    near = round(guess) if math.isfinite(guess) else 0
    odd = top & (top - 1)  # (not a power of two)
    counts.append(near if odd and counts and counts[-1] < near < top else top)
    return counts


def fitted_excess(points: list[tuple[int, float]], k: int) -> float | None:
    """The time over the fluid time of ``k`` segments on the curve ``A / k + B k``
    through two counts' times over it (``points``: ``(count, excess)``); None where no
    such curve with ``A, B >= 0`` passes through them.

    >>> round(fitted_excess([(4, 0.2762), (8, 0.2234)], 13), 4)  # 64 NICs, 256 KiB
    0.2523
    >>> fitted_excess([(12, 0.0336), (16, 0.0212)], 32) is None  # falls faster than 1 / k
    True
    """
    fit = _through(points)
    if fit is None or min(fit) < 0:
        return None
    a, b = fit
    return a / k + b * k


def _through(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """``(A, B)`` of the curve ``A / k + B k`` through two points ``(k, e)`` (None: one
    count): ``e k = A + B k^2`` at both."""
    (k1, e1), (k2, e2) = points
    if k1 == k2:
        return None
    b = (e2 * k2 - e1 * k1) / (k2 * k2 - k1 * k1)
    return e1 * k1 - b * k1 * k1, b


def _full_runs(out: list[Schedule], lower: float) -> list[tuple[int, float]]:
    """The last two counts of ``out`` run to their ends, as ``(count, time over lower)``
    (none where fewer, or no fluid time)."""
    done = [s for s in out if math.isfinite(s.params["estimate"])][-2:]
    if len(done) < 2 or lower <= 0:
        return []
    return [(s.params["segments"], s.params["estimate"] - lower) for s in done]


def _fitted_least(out: list[Schedule], lower: float, guess: float) -> float:
    """The count where the curve through the last two counts of ``out`` run to their ends
    is least (inf where it falls faster than ``1 / k``, 0 where it rises faster than
    ``k``); ``guess`` where fewer than two ran to their ends."""
    points = _full_runs(out, lower)
    fit = _through(points) if points else None
    if fit is None:
        return guess
    a, b = fit
    if b <= 0:
        return math.inf
    return math.sqrt(a / b) if a > 0 else 0.0


def _skipped(out: list[Schedule], k: int, lower: float) -> bool:
    """Whether the curve through the last two counts of ``out`` run to their ends puts
    ``k`` segments more than :data:`SKIP` of the fastest's time over ``lower`` above it
    (:func:`fitted_excess`)."""
    points = _full_runs(out, lower)
    if not points:
        return False
    best = min(e for _, e in points)
    fit = fitted_excess(points, k)
    return fit is not None and best > 0 and fit > (1 + SKIP) * best


#: :func:`phased_search` skips a count that the curve through two full runs puts more than
#: this fraction of the fastest's time over the fluid time above it
SKIP = 0.1


def predicted_count(fluid: float, lead: float, tight: bool) -> float:
    """The count of segments per share where the phased cut's time over the shares' fluid
    time ``T`` (:func:`phased_search`), about ``FILL T / k + B k``, is least:
    ``sqrt(FILL T / B)``, the leads uncovered per segment ``B`` of a send's lead ``a``
    (latency and per-message costs of the slowest member's sends).  Where every NIC
    binds (``tight``) no NIC takes up another's share during a lead, ``B = TIGHT a``;
    where a NIC has time to spare the others' bytes cover most of it, more as the
    segments grow, ``B = SLACK a^2 / T`` (at most ``TIGHT a``).  The constants fit the
    counts the search keeps on stars of 8 to 64 NICs of 25/10 and 100/25/10 Gbit/s, 5 us
    each, at 8 B to 256 MiB (``bench_star_baselines.py``'s); inf where ``a`` is 0.

    >>> round(predicted_count(839e-6, 10e-6, False), 1)  # 64 NICs of 100/25/10 at 1 MiB
    22.0
    >>> round(predicted_count(899e-6, 10e-6, True), 1)  # 16 NICs of 25/10 at 1 MiB
    3.0
    """
    if lead <= 0 or fluid <= 0:
        return math.inf
    x = lead / fluid
    b = TIGHT_LEADS * x if tight else min(TIGHT_LEADS * x, SLACK_LEADS * x * x)
    return math.sqrt(FILL / b)


#: :func:`predicted_count`'s fill and drain, in shares' fluid times per segment count
FILL = 0.8
#: :func:`predicted_count`'s uncovered leads per segment where every NIC binds, in leads
TIGHT_LEADS = 8.0
#: :func:`predicted_count`'s uncovered leads per segment elsewhere, in ``lead^2 / T``
SLACK_LEADS = 11.6


def _most_within(
    cut: Callable[[int], list[Flow]], lo: int, hi: int, most: int, grow: bool = False
) -> int:
    """The largest count in ``[lo, hi)`` whose flows send at most ``most`` messages (``lo``
    does), by bisection; ``grow``: ``hi`` doubled first until its flows send more (or cut
    no further)."""
    while grow and sum(f.transfers for f in cut(hi)) <= most:
        if hi > most or all(f.chunks == 1 for f in cut(hi)):
            return hi  # (a count of more segments than messages: cut no further)
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sum(f.transfers for f in cut(mid)) <= most:
            lo = mid
        else:
            hi = mid
    return lo


def startup(
    bound: Any, ids: list[str], shares: list[int], rates: list[float]
) -> Callable[[Schedule], float]:
    """The start-up of a butterfly schedule's messages under windows per edge: each send
    of the slowest member ``s`` costs its lead (latency and per-message costs: the time of
    an empty message) over ``W``, the sends ``s`` keeps in flight on the edges that carry
    bytes (:func:`hetcoll.perroot.windows`).  At ``T*`` every NIC is busy to the end, so
    the share of ``s``'s NIC that a send leaves while it waits out its lead is lost; the
    search's segment halvings stop where twice this would cost more than the shorter lag
    gains (:func:`hetcoll.planners.forestplan._halving_gains`).

    On a star of two 20 Gbit/s NICs and one of 10 the slow one owns nothing; in 1 KiB
    segments it sends each owner two and each an empty broadcast, six sends of a 10 us
    lead, one in flight to each owner:

    >>> from hetcoll.generators.stars import star_platform
    >>> p = star_platform(3, ("20Gbps", "10Gbps"), "5us")
    >>> s = butterfly_pipelined(p, nbytes=4096, segment_size=1024)
    >>> shares = [f.nbytes for f in s.flows if f.kind == "reduce"]
    >>> price = startup(p.model.bind(p), list(p.ids), shares, [2.5e9, 2.5e9, 1.25e9])
    >>> shares, round(price(s) * 1e6, 9)
    ([2048, 2048, 0], 30.0)
    """
    n = len(ids)
    slow = min(range(n), key=lambda u: rates[u])
    sent = {(ids[u], ids[v]): shares[u] + shares[v] for u in range(n) for v in range(n) if u != v}
    window = _alone(windows(sent))
    mine = [v for v in range(n) if v != slow and sent[(ids[slow], ids[v])] > 0]
    inflight = sum(window[(ids[slow], ids[v])] for v in mine) or 1
    lead = {ids[v]: bound.delay(slow, v, 0) for v in range(n) if v != slow}
    me = ids[slow]

    def price(sched: Schedule) -> float:
        total = 0.0
        for f in sched.flows:
            if f.kind == "reduce" and f.tree.root != me:
                total += f.chunks * lead[f.tree.root]
            elif f.kind == "bcast" and f.tree.root == me:
                total += f.chunks * sum(lead[v] for v in f.tree.children.get(me, ()))
        return total / inflight

    return price
