"""The butterfly allreduce with bandwidth-balanced shares (hivemind's load balancing,
Ryabinin et al. 2021, "Moshpit SGD", Sec. 3-4; Learning@home's butterfly all-reduce): the
vector is cut into one share per member, every member sends each owner its part of the
owner's share directly, the owner reduces it and sends the result to every member
(reduce-scatter, then allgather, both all-to-all).

Member ``i`` sends ``M - b_i`` bytes and receives ``(N - 1) b_i`` in the reduce-scatter, and
the reverse in the allgather, so through a full-duplex port of ``B_i`` bytes/s it needs at
least ``(M + (N - 2) b_i) / B_i``.  hivemind's small LP (minimise ``T`` subject to
``M + (N - 2) b_i <= T B_i``, ``sum b_i = M``, ``b_i >= 0``) has the closed form
``T = max(M / min_i B_i, 2 (N - 1) M / sum_i B_i)`` — the allreduce bound ``T*`` of a
switch of full-duplex NICs (``hetcoll.allbounds``) — with ``b_i`` in proportion to
``T B_i - M`` (where the first term wins, the slowest member owns nothing: it still sends
and receives ``M``).  Blind to the network beyond each member's own rate: a baseline
beside ``forest``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..models import get_model
from ..patterns import OrderedSend
from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from ._registry import register
from .rings import _relayed

__all__ = ["balanced", "balanced_shares", "butterfly_flows", "fewest_owners"]

#: the message size at which a member's rate is read from the model (bytes)
PROBE = 1 << 20


def balanced_shares(rates: Iterable[float], total: int, align: int = 1) -> list[int]:
    """Each member's share of a ``total``-byte vector (multiples of ``align``, the last
    member's taking the rest) for the least ``T`` with ``M + (N - 2) b_i <= T B_i`` for
    every member, ``B`` their ``rates`` (module docstring): ``T = max(M / min B,
    2 (N - 1) M / sum B)``, the shares in proportion to ``T B_i - M`` (equal where every
    such margin is 0, and for ``N <= 2``).  O(N).

    >>> balanced_shares([3.0, 2.0, 2.0, 1.0], 1000)
    [500, 250, 250, 0]
    >>> balanced_shares([4.0, 4.0, 4.0], 900)
    [300, 300, 300]
    """
    b = np.asarray(list(rates), dtype=float)
    n = len(b)
    total, align = int(total), max(int(align), 1)
    t = max(total / b.min(), 2 * (n - 1) * total / b.sum()) if n else 0.0
    margin = t * b - total
    if n <= 2 or not (margin > 0).any():
        margin = np.ones(n)
    margin = np.clip(margin, 0.0, None)
    units, rest = divmod(total, align)
    cut = np.floor(np.cumsum(margin) / margin.sum() * units + 1e-9).astype(int)
    cut[-1] = units
    out = np.diff(np.concatenate(([0], cut))) * align
    out[-1] += rest
    return [int(x) for x in out]


#: :func:`fewest_owners`: the most of ``T*`` an owner's NIC may be busy each way
BUSY = 0.5


def fewest_owners(rates: Iterable[float], total: int, align: int = 1) -> list[int] | None:
    """Shares of a ``total``-byte vector on the fewest of the fastest members (ties: the
    first), two at least, in proportion to their ``rates``, with which no owner's NIC is
    busy more than :data:`BUSY` of ``T*`` each way (``M / B_i + (N - 2) M / sum_owners B
    <= BUSY T*``); None where every member would own a share, or ``N <= 3``.  (With one
    owner every other NIC would carry one flow each way, and nothing covers its leads.)
    The members that own nothing still send and receive ``M`` each, in ``M / B_i <=
    T*``, so the shares' fluid time is ``T*`` as with :func:`balanced_shares`, from far
    fewer flows: ``2 (N - 1)`` per owner.  O(N log N).

    Where ``T* = M / min B`` the fast NICs have time to spare: a star of 100/25/10 Gbit/s
    NICs needs a quarter of its members as owners, a star of 25/10 Gbit/s every member.

    >>> fewest_owners([100.0, 100.0, 25.0, 25.0, 10.0, 10.0, 10.0, 10.0], 1000, 8)
    [496, 504, 0, 0, 0, 0, 0, 0]
    >>> fewest_owners([25.0, 25.0, 10.0, 10.0], 1000) is None
    True
    """
    b = np.asarray(list(rates), dtype=float)
    n = len(b)
    total, align = int(total), max(int(align), 1)
    if n <= 3:
        return None
    t_star = max(total / b.min(), 2 * (n - 1) * total / b.sum())
    order = np.argsort(-b, kind="stable")
    for count in range(2, n):  # two at least: a flow's lead is covered by another's bytes
        owners = order[:count]
        busy = total / b[owners] + (n - 2) * total / b[owners].sum()
        if busy.max() <= BUSY * t_star:
            break
    else:
        return None
    owners = np.sort(owners)
    units, rest = divmod(total, align)
    cut = np.floor(np.cumsum(b[owners]) / b[owners].sum() * units + 1e-9).astype(int)
    cut[-1] = units
    out = np.zeros(n, dtype=np.int64)
    out[owners] = np.diff(np.concatenate(([0], cut))) * align
    out[owners[-1]] += rest
    return [int(x) for x in out]


def butterfly_flows(
    platform: Platform,
    model: Any,
    ids: list[str],
    shares: list[int],
    segment_size: int | None,
) -> list[Flow]:
    """The butterfly's flows: member ``r``'s share (``shares[r]`` bytes, the shares side
    by side from byte 0) reduced to it over the star of ``ids`` rooted at it (every other
    member sends its part directly), then the same shares broadcast back from their owners
    over the same stars, in segments of ``segment_size`` bytes (None: whole); edges the
    model cannot carry directly relayed as the network routes them."""
    flows = []
    for kind in ("reduce", "bcast"):
        at = 0
        for r, share in enumerate(shares):
            star = Tree(ids[r], {ids[r]: tuple(v for v in ids if v != ids[r])})
            flows.append(Flow(star, share, at, segment_size=segment_size, kind=kind))
            at += share
    return _relayed(platform, model, flows, max(shares))


def _rates(platform: Platform, model: Any) -> list[float]:
    """Each member's rate (bytes/s): its NIC's where the model shares one (``nic``), else
    the harmonic mean of its rates to the others at :data:`PROBE` bytes."""
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    n = len(platform)
    nic = [bound.nic_rate(u) for u in range(n)]
    if all(r is not None for r in nic):
        return [float(r) for r in nic]
    per = (bound.delay_matrix(PROBE) - bound.delay_matrix(0)) / PROBE
    off = ~np.eye(n, dtype=bool)
    return [float((n - 1) / max(per[u][off[u]].sum(), 1e-300)) for u in range(n)]


@register(
    "balanced",
    collectives=("allreduce",),
    paper="Ryabinin et al. 2021 (Moshpit SGD; hivemind's butterfly all-reduce and load "
    "balancing), Sec. 3-4",
    complexity="O(N^2) sends",
    summary="butterfly allreduce (every member sends each owner its part directly) with "
    "shares balanced to the members' bandwidths (hivemind's LP, in closed form)",
    options=("align",),
    kind="forest",
)
def balanced(
    platform: Platform,
    root: str | None = None,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
    collective: str = "allreduce",
    sizes: dict[str, int] | None = None,
    align: int = 1,
) -> Schedule:
    """The butterfly allreduce of an ``nbytes`` vector over every node of ``platform``,
    member ``i``'s share :func:`balanced_shares` of the rates the model gives (module
    docstring); shares in segments of ``segment_size`` when given.  O(N^2) sends.

    Examples
    --------
    A star of two 25 Gbit/s and two 10 Gbit/s NICs: ``T = M / min B`` there, the fast
    NICs own the vector, the slow ones only send and receive it once:

    >>> from hetcoll.generators.stars import star_platform
    >>> s = balanced(star_platform(4), nbytes=70000)
    >>> [f.nbytes for f in s.flows if f.kind == "reduce"]
    [35000, 35000, 0, 0]
    """
    if collective != "allreduce":
        raise PlannerError(f"balanced plans allreduce, not a {collective}")
    if sizes is not None:
        raise PlannerError("sizes: an allreduce has one vector (no blocks)")
    ids = list(platform.ids)
    if members is not None and set(members) | ({root} if root else set()) != set(ids):
        raise PlannerError(
            "balanced plans on every node of the platform: give the members' sub-platform"
        )
    if len(ids) < 2:
        raise PlannerError("balanced needs at least two nodes")
    shares = balanced_shares(_rates(platform, model), int(nbytes), max(int(align), 1))
    flows = butterfly_flows(platform, model, ids, shares, segment_size)
    # step s of each phase: member u sends member u + s + 1 its part (a shifted
    # all-to-all: every owner takes one member's part at a time, not all at once)
    n = len(ids)
    order: dict[str, list[OrderedSend]] = {v: [] for v in ids}
    for p, first in enumerate((0, n)):
        for s in range(n - 1):
            for u in range(n):
                v = (u + s + 1) % n
                fi = first + (v if p == 0 else u)
                slot = (p * (n - 1) + s) * n + u
                order[ids[u]].extend(
                    OrderedSend(fi, ids[v], 0, slot + k * 2 * (n - 1) * n)
                    for k in range(flows[fi].chunks)
                )
    order = {v: sorted(o, key=lambda x: x.slot) for v, o in order.items()}
    return Schedule(
        "allreduce",
        "balanced",
        int(nbytes),
        tuple(flows),
        {"trees": len(flows)},
        order={v: tuple(o) for v, o in order.items()},
    )
