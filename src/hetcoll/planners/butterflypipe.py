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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from ..errors import PlannerError
from ..models import get_model
from ..perroot import _alone, windows
from ..platform import Platform
from ..schedule import Flow, Schedule, transfer_budget
from ._registry import Option, register
from ._shared import keep_prediction
from .butterfly import _rates, balanced_shares, butterfly_flows
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
    options=("align", "search"),
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
) -> Schedule:
    """The butterfly allreduce of an ``nbytes`` vector over every node of ``platform``,
    member ``i``'s share :func:`~hetcoll.planners.butterfly.balanced_shares` of the rates
    the model gives, every share pipelined in segments of ``segment_size`` bytes (multiples
    of ``align``), or of the size that simulates fastest (``search``: as ``forest``'s);
    module docstring.

    Returns
    -------
    Schedule
        Per-root flows (:mod:`hetcoll.perroot`): the reduce flow and the bcast flow of each
        owner's share, ``chain="edge"`` under a model whose ranks send concurrently;
        ``params``: ``trees``, ``segment_size`` (None: shares whole), the simulated
        ``estimate`` (seconds) and ``bound``, the shares' fluid time (seconds: ``T*`` under
        ``nic``).

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
    fluid = max((vector + (n - 2) * s) / r for s, r in zip(shares, rates, strict=True))
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    chain = "edge" if bound.concurrent_sends else "rank"

    def build(seg: int | None, _ranges: Any = None) -> list[Flow]:
        if seg is not None:
            seg = max(align, seg // align * align)
        return butterfly_flows(platform, model, ids, shares, seg)

    def make(flows: list[Flow], estimate: float | None) -> Schedule:
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
            chain=chain,
            stagger=half,
        )

    if segment_size:
        return make(build(int(segment_size)), None)
    from ..simulator import simulate

    predictions: dict[int, Any] = {}

    def simulated(flows: list[Flow]) -> Schedule:
        run = simulate(platform, make(flows, None), model)
        sched = make(flows, run.makespan)
        predictions[id(sched)] = run
        return sched

    most = transfer_budget(bound.contention)  # every message the simulator takes
    lower = fluid if bound.nic_rate(0) is not None else 0.0
    price = startup(bound, ids, shares, rates) if lower > 0 and chain == "edge" else None
    tried = _descend([None], build, simulated, most, lower, search, price)
    sched = min(tried, key=lambda s: s.params["estimate"])  # the first of equals
    keep_prediction(platform, sched, model, predictions[id(sched)])
    return sched


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
