"""Broadcasts on an ordered chain of a switch network: postorder doubling and TWO-VBBS.

On a switch network with up*/down* routing, Kesavan et al. (HPCA 1997) and Libeskind-Hadas
et al. (IPPS/SPDP 1998) order the workstations along a traversal of the routing's spanning
tree so that the list is an **ordered chain**: for ``w < x <= y < z`` in the list, messages
``w -> x`` and ``y -> z`` share no directed link.  A recursive-doubling broadcast on such a
chain, where every sender sends to a node on its right, is then free of link contention in
every step.

**The chain** (:func:`ordered_chain`): the spanning tree of the up*/down* routing
(:mod:`hetcoll.switches`) taken as rooted at the source's switch; the workstations of each
switch listed together (in rank order, the source first); the source's switch first, then
the others in postorder.  Every subtree's workstations are then contiguous in the list (the
root's are all of them), which is what the ordered-chain property needs for routes along the
tree (a postorder read from its end, with the root's group in front).  Shortest up*/down*
routes may take cross links off the tree; then the property can fail (measured by
``hetcoll reproduce hsu-claims``).  On a platform without switches every node hangs on one
switch and the chain is the rank order from the root.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..platform import Platform
from ..schedule import Flow, Schedule, Tree
from ._common import Request, prepare, relays, tree_schedule
from ._registry import register

__all__ = [
    "postorder_doubling",
    "two_vbbs",
    "ordered_chain",
    "split_edges",
    "binomial_like_size",
    "switch_layout",
    "tree_chain",
]

_TREE_OPS = ("bcast", "multicast")


# -- list splitting (binomial and binomial-like trees on an ordered list) ------------------------


def binomial_like_size(m: int) -> int:
    """Hsu et al. Sec. 5.1: a list of ``m`` is split at its ``ceil(m/2)``-th element (``m =
    n + 1`` with ``n`` receivers): the sender keeps ``ceil(m/2)``, the right part is
    ``floor(m/2)``."""
    return -(-m // 2)


def binomial_size(m: int) -> int:
    """The binomial tree of Kesavan & Panda (Hsu et al. Sec. 2.2, Fig. 3a): the source sends
    to the list centre ``ceil(n/2)`` (0-based) of ``n = m - 1`` receivers: it keeps
    ``ceil((m-1)/2)``."""
    return -(-(m - 1) // 2)


def split_edges(m: int, keep=binomial_like_size) -> list[tuple[int, int, int]]:
    """``(sender, receiver, step)`` positions of a recursive split broadcast on a list of ``m``.

    The sender is the first of its sub-list ``[lo, hi)``; it keeps ``keep(hi - lo)`` elements
    and sends to the first element of the rest, which does the same on the rest; steps are
    numbered from 1.  Edges come in each sender's send order.  With the binomial-like split
    the broadcast takes ``ceil(log2 m)`` steps (Lemma 2).  O(m).

    Examples
    --------
    Hsu et al. Fig. 3(b) on positions of ``(w2, w7, w5, w4, w6, w1, w3)``:

    >>> split_edges(7)
    [(0, 4, 1), (0, 2, 2), (0, 1, 3), (4, 6, 2), (4, 5, 3), (2, 3, 3)]
    """
    edges: list[tuple[int, int, int]] = []
    stack = [(0, m, 0)]
    while stack:
        lo, hi, step = stack.pop()
        later = []
        while hi - lo > 1:
            k = keep(hi - lo)
            step += 1
            edges.append((lo, lo + k, step))
            later.append((lo + k, hi, step))
            hi = lo + k
        stack.extend(reversed(later))
    return edges


# -- the switch layout of a request -------------------------------------------------------------


class SwitchLayout:
    """Where a request's members sit: ``switch[u]`` per node, the switches' adjacency in a
    spanning tree, the neighbours and degrees of the switch graph.  A platform without
    switches is one switch holding every node."""

    def __init__(self, req: Request) -> None:
        net = req.platform.switches
        self.net = net
        if net is None:
            self.n_switches = 1
            self.switch = np.zeros(len(req.platform), dtype=np.intp)
            self.neighbours: tuple[tuple[int, ...], ...] = ((),)
            self.degree = np.zeros(1, dtype=np.intp)
            self.internal = np.array([len(req.platform)], dtype=np.intp)
            self.tree_parent = np.array([-1], dtype=np.intp)
        else:
            self.n_switches = len(net)
            self.switch = np.asarray(net.switch_of)
            self.neighbours = net.neighbours
            self.degree = net.degree
            self.internal = net.workstation_count
            self.tree_parent = net.routing.parent
        self.groups: dict[int, list[int]] = {}
        for u in req.members:  # rank order
            self.groups.setdefault(int(self.switch[u]), []).append(u)

    def tree_adjacency(self) -> list[list[int]]:
        """The routing spanning tree's adjacency (neighbours by switch index)."""
        adj: list[list[int]] = [[] for _ in range(self.n_switches)]
        for c, p in enumerate(self.tree_parent.tolist()):
            if p >= 0:
                adj[c].append(p)
                adj[p].append(c)
        return [sorted(a) for a in adj]


def switch_layout(req: Request) -> SwitchLayout:
    return SwitchLayout(req)


def rooted_children(adjacency: Sequence[Sequence[int]], root: int) -> list[list[int]]:
    """Children lists of a tree given by its adjacency, rooted at ``root`` (each list in the
    adjacency's order)."""
    children: list[list[int]] = [[] for _ in adjacency]
    seen = {root}
    stack = [root]
    while stack:
        x = stack.pop()
        for y in adjacency[x]:
            if y not in seen:
                seen.add(y)
                children[x].append(y)
                stack.append(y)
    return children


def postorder(children: Sequence[Sequence[int]], root: int) -> list[int]:
    """Switches of the tree in postorder (children left to right, then the node)."""
    out: list[int] = []
    stack: list[tuple[int, int]] = [(root, 0)]
    while stack:
        x, k = stack.pop()
        if k < len(children[x]):
            stack.append((x, k + 1))
            stack.append((children[x][k], 0))
        else:
            out.append(x)
    return out


def tree_chain(
    children: Sequence[Sequence[int]],
    root_switch: int,
    groups: dict[int, list[int]],
    source: int,
) -> list[int]:
    """The ordered chain of a switch tree rooted at the source's switch: the source's group
    (source first), then every other switch's group in postorder (module docstring)."""
    order = postorder(children, root_switch)
    head = [source] + [u for u in groups.get(root_switch, []) if u != source]
    rest = [u for x in order if x != root_switch for u in groups.get(x, [])]
    return head + rest


def ordered_chain(req: Request, layout: SwitchLayout | None = None) -> list[int]:
    """The request's members as an ordered chain of the up*/down* spanning tree, the source
    first (module docstring).  O(N + S)."""
    layout = layout or SwitchLayout(req)
    root_switch = int(layout.switch[req.root])
    children = rooted_children(layout.tree_adjacency(), root_switch)
    return tree_chain(children, root_switch, layout.groups, req.root)


# -- planners -------------------------------------------------------------------------------------


@register(
    "postorder_doubling",
    collectives=_TREE_OPS,
    paper="Kesavan et al., HPCA 1997; Libeskind-Hadas et al., IPPS/SPDP 1998 (Hsu et al. 2005, "
    "Sec. 2.3)",
    complexity="O(N + S log S)",
    summary="recursive doubling on the ordered chain of the up*/down* tree, rightwards",
    models=("switch",),
)
def postorder_doubling(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """Postorder recursive doubling: halve the ordered chain, send to the right half's first.

    The members are listed as the ordered chain of the up*/down* spanning tree
    (:func:`ordered_chain`, the source first); a sender at the left end of its sub-list
    keeps ``ceil(m/2)`` and sends to the first node of the rest (the binomial-like split of
    Hsu et al. Sec. 5.1), so every message goes rightwards and the messages of one step lie
    in disjoint sub-lists: no two of them share a directed link when routes follow the tree
    (Kesavan et al. 1997; Libeskind-Hadas et al. 1998).  Blind to node speeds.
    ``ceil(log2 N)`` steps.  O(N + S log S).

    Examples
    --------
    >>> from hetcoll.generators import switch_platform
    >>> p = switch_platform(8, seed=2)
    >>> postorder_doubling(p, "w0").tree.children["w0"][0] in p.ids
    True
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    chain = ordered_chain(req)
    edges = [(chain[a], chain[b]) for a, b, _ in split_edges(len(chain))]
    return tree_schedule(req, "postorder_doubling", edges)


def step_costs(req: Request) -> np.ndarray:
    """A node's estimated cost of one broadcast step: its mean ``T_ptp`` to the members."""
    m = req.message_size()
    idx = np.asarray(req.members, dtype=np.intp)
    d = np.asarray(req.bound.delay_matrix(m))
    if len(idx) < len(req.platform):  # a broadcast reads the whole matrix without a copy
        d = d[np.ix_(idx, idx)]
    k = len(idx)
    cost = np.zeros(len(req.platform))
    cost[idx] = d.sum(axis=1) / max(k - 1, 1)
    return cost


def vbbs_edges(
    chain: Sequence[int], sender: int, cost: np.ndarray, busy: np.ndarray, delay
) -> list[tuple[int, int]]:
    """VBBS on an ordered chain (our reconstruction of Lin 2004; see :func:`two_vbbs`).

    The sender's sub-list is cut in two contiguous buckets; the sender keeps the bucket that
    contains it and sends to the fastest node of the other bucket (ties: chain order), which
    broadcasts there.  The cut minimises the estimated finish
    ``max(busy(s) + ceil(log2 |S|) c(s), T(s, r) + ceil(log2 |R|) c(r))`` with ``c`` a
    node's step cost: a faster sender keeps the larger bucket.  Ties: the most even cut,
    then the leftmost.  O(m) per split.
    """
    edges: list[tuple[int, int]] = []
    stack = [(list(chain), sender)]
    while stack:
        items, s = stack.pop()
        if len(items) < 2:
            continue
        m = len(items)
        ps = items.index(s)
        c = cost[np.asarray(items)].tolist()
        # fastest of every prefix and suffix (first in chain order on ties)
        pre, best = [0] * m, 0
        for i in range(m):
            if c[i] < c[best]:
                best = i
            pre[i] = best
        suf, best = [0] * m, m - 1
        for i in range(m - 1, -1, -1):
            if c[i] <= c[best]:
                best = i
            suf[i] = best
        choice = None
        for cut in range(1, m):
            if ps < cut:
                size_s, size_r, r = cut, m - cut, suf[cut]
            else:
                size_s, size_r, r = m - cut, cut, pre[cut - 1]
            u = items[r]
            finish = max(
                busy[s] + math.ceil(math.log2(size_s)) * c[ps] if size_s > 1 else busy[s],
                delay(s, u) + (math.ceil(math.log2(size_r)) * c[r] if size_r > 1 else 0.0),
            )
            key = (finish, abs(size_s - size_r), cut)
            if choice is None or key < choice[0]:
                choice = (key, cut, r)
        _, cut, r = choice  # type: ignore[misc]
        receiver = items[r]
        edges.append((s, receiver))
        keep, give = (items[:cut], items[cut:]) if ps < cut else (items[cut:], items[:cut])
        # only each sender's own order matters: this send comes before its later ones
        stack.append((give, receiver))
        stack.append((keep, s))
    return edges


@register(
    "two_vbbs",
    collectives=_TREE_OPS,
    paper="Lin & Sheu, IJPP 33(4) 2005, as described by Hsu et al. 2005, Sec. 1 "
    "(a reconstruction: the full text is not available)",
    complexity="O(N^2) worst case, O(N log N) typical",
    summary="RECONSTRUCTION: odd/even sub-networks of the ordered chain, half the message "
    "each by VBBS, then halves exchanged between chain neighbours",
    models=("switch",),
)
def two_vbbs(
    platform: Platform,
    root: str,
    members: Iterable[str] | None = None,
    model: Any = None,
    *,
    nbytes: int = 0,
    segment_size: int | None = None,
) -> Schedule:
    """TWO-VBBS, **reconstructed**: two sub-networks, half the message each, then an exchange.

    Lin & Sheu (2005) combine network partitioning (Lin, Tseng & Sheu 2001) with VBBS
    (Lin 2004).  Their full text is not available to us; this is a reconstruction from what
    Hsu et al. and the literature say, labelled as such everywhere it appears:

    1. the members as an ordered chain (:func:`ordered_chain`, the source first), split by
       position into an even sub-network (the source's) and an odd one;
    2. the first half of the message goes to the odd sub-network: the source sends it to
       the odd sub-network's fastest node, which runs VBBS there; the second half runs VBBS
       in the even sub-network from the source (:func:`vbbs_edges`: postorder recursive
       doubling whose split gives the faster sender the larger bucket, the receiver being
       the fastest node of the other bucket);
    3. chain neighbours ``(2i, 2i+1)`` exchange their halves (the even node sends its half to
       the odd one and the odd node, unless its partner is the source, sends its half back;
       a last even node without partner gets the odd half from its left neighbour).

    The schedule has two flows (first and second half of the bytes); a node issues its sends
    flow by flow, the odd half first.  Without switches everything is one sub-network pair
    of the rank order.  O(N^2) worst case.

    Examples
    --------
    >>> from hetcoll.generators import switch_platform
    >>> s = two_vbbs(switch_platform(8, seed=2), "w0", nbytes=2048)
    >>> [(f.offset, f.nbytes) for f in s.flows]
    [(0, 1024), (1024, 1024)]
    """
    req = prepare(platform, root, members, model, nbytes, segment_size)
    chain = ordered_chain(req)
    if len(chain) == 1:
        return tree_schedule(req, "two_vbbs", [])
    even, odd = chain[0::2], chain[1::2]
    m = req.message_size()
    cost = step_costs(req)
    busy = np.asarray(req.bound.node_cost(m))
    delay = np.asarray(req.bound.delay_matrix(m))

    def d(u: int, v: int) -> float:
        return float(delay[u, v])

    first = min(odd, key=lambda u: (cost[u], odd.index(u)))
    odd_edges = [(req.root, first), *vbbs_edges(odd, first, cost, busy, d)]
    even_edges = vbbs_edges(even, req.root, cost, busy, d)
    for i, o in enumerate(odd):
        even_edges.append((even[i], o))
        if i:
            odd_edges.append((o, even[i]))
    if len(even) > len(odd):
        odd_edges.append((odd[-1], even[-1]))
    ids = req.ids
    half = req.nbytes - req.nbytes // 2
    flows = []
    for edges, offset, size in ((odd_edges, 0, half), (even_edges, half, req.nbytes - half)):
        tree = Tree.from_edges(ids[req.root], ((ids[p], ids[c]) for p, c in edges))
        flows.append(
            Flow(
                tree,
                size,
                offset=offset,
                segment_size=req.segment_size,
                relays=relays(req, edges),  # neighbours only under a graph model
            )
        )
    return Schedule(req.collective, "two_vbbs", req.nbytes, tuple(flows), {}, req.model.to_spec())
