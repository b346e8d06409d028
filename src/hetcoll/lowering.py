"""Lowering: every schedule to the one :class:`~hetcoll.program.Program` the simulator and
the runtime execute (:meth:`hetcoll.schedule.Schedule.program` calls these): a single tree
(:func:`tree_program`), several flows with relays and a send order or timetable
(:func:`flows_program`), a hypercube embedding (:func:`hypercube_program`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .patterns import Flow, Hypercube, OrderedSend
from .program import Chunk, Op, Program

__all__ = ["flows_program", "hypercube_program", "tree_program"]


def tree_program(flow: Flow) -> Program:
    """Lower a single flow without relays: each node posts its receives of segments
    ``0 .. S-1``, then sends segment ``k`` to each child in turn, each send after the
    receive of ``k`` (no sort needed: chunk ``k`` is segment ``k``, received by op ``k`` of
    a non-root node)."""
    segs = flow.segments()
    nseg = len(segs)
    chunks = tuple(Chunk(flow.buffer, off, n) for off, n in segs)
    tree = flow.tree
    parent = tree.parent()
    children = tree.children
    ops: dict[str, tuple[Op, ...]] = {}
    segments = range(nseg)
    for node in tree.nodes:
        up = parent.get(node)
        kids = children.get(node, ())
        if up is None:
            ops[node] = tuple([Op("send", c, k) for k in segments for c in kids])
        elif kids:
            ops[node] = tuple([Op("recv", up, k) for k in segments]) + tuple(
                [Op("send", c, k, (k,)) for k in segments for c in kids]
            )
        else:
            ops[node] = tuple([Op("recv", up, k) for k in segments])
    return Program(ops, chunks, {tree.root: frozenset(segments)})


def flows_program(
    flows: Sequence[Flow], order: Mapping[str, tuple[OrderedSend, ...]], timetable: bool
) -> Program:
    """Lower several flows (or one with relays or an ``order``) to per-rank ops.

    Each rank first posts every receive (so data can stream in while it forwards), then
    sends segment by segment, flow by flow, child by child (a sender forwards segment ``k``
    to all its children before segment ``k + 1``), or in the schedule's ``order``.  A
    relayed edge's segment travels as a relay copy, each relay forwarding it after its own
    sends of that segment.  In a ``timetable`` every node receives in slot order, and its
    sends and its receives each depend on the previous one.
    """
    chunks: list[Chunk] = []
    recvs: dict[str, list[Op]] = {}
    recv_keys: dict[str, list[tuple]] = {}
    # a send: (sort key, chunk, receiver, index of the recv it depends on in its rank or
    # None for a chunk held from the start, whether it forwards a relay copy)
    sends: dict[str, list[tuple[tuple, int, str, tuple]]] = {}
    initial: dict[str, set[int]] = {}
    for fi, flow in enumerate(flows):
        base = len(chunks)
        segs = flow.segments()
        chunks += [Chunk(flow.buffer, off, n) for off, n in segs]
        parent = flow.tree.parent()
        via = flow.relay_of()
        key = _send_key(order, fi)
        initial.setdefault(flow.tree.root, set()).update(range(base, base + len(segs)))
        for node in (*flow.tree.nodes, *(r for path in flow.relays for r in path)):
            recvs.setdefault(node, [])
            sends.setdefault(node, [])
            recv_keys.setdefault(node, [])
        for node in flow.tree.nodes:
            up = parent.get(node)
            if up is not None and (up, node) not in via:
                recvs[node] += [Op("recv", up, base + k) for k in range(len(segs))]
                if timetable:
                    ci = flow.tree.children[up].index(node)
                    recv_keys[node] += [key(up, k, ci, node) for k in range(len(segs))]
            for ci, child in enumerate(flow.tree.children.get(node, ())):
                for k in range(len(segs)):
                    hops = via.get((node, child))
                    if not hops:
                        sends[node].append((key(node, k, ci, child), base + k, child, ()))
                        continue
                    copy = len(chunks)
                    chunks.append(Chunk(flow.buffer, *segs[k], copy_of=base + k))
                    sends[node].append((key(node, k, ci, child), copy, hops[0], ()))
                    path = (node, *hops, child)
                    for h, relay in enumerate(hops, start=1):
                        recvs[relay].append(Op("recv", path[h - 1], copy))
                        # after the relay's own sends of that segment
                        later = (k, fi, 1 << 30, ci, h)
                        sends[relay].append((later, copy, path[h + 1], (copy,)))
                    recvs[child].append(Op("recv", hops[-1], copy, (), base + k))
    ops: dict[str, tuple[Op, ...]] = {}
    for node, rlist in recvs.items():
        if timetable:  # receives in slot order, each posted when the previous completed
            ranked = sorted(range(len(rlist)), key=lambda i: recv_keys[node][i])
            rlist = [
                Op("recv", rlist[i].peer, rlist[i].chunk, (j - 1,) if j else ())
                for j, i in enumerate(ranked)
            ]
        where: dict[int, int] = {}
        for i, op in enumerate(rlist):
            where[op.chunk if op.result is None else op.result] = i
            if op.result is not None:
                where.setdefault(op.chunk, i)
        slist: list[Op] = []
        for _, chunk, peer, _copy in sorted(sends[node], key=lambda x: x[0]):
            held = chunk if chunks[chunk].copy_of is None or _copy else chunks[chunk].copy_of
            dep = where.get(held)
            deps = () if dep is None else (dep,)
            if timetable and slist:  # strictly after the previous send
                deps = (*deps, len(rlist) + len(slist) - 1)
            slist.append(Op("send", peer, chunk, deps))
        ops[node] = tuple(rlist) + tuple(slist)
    return Program(ops, tuple(chunks), {k: frozenset(v) for k, v in initial.items()})


def _send_key(order: Mapping[str, tuple[OrderedSend, ...]], fi: int):
    """The sort key of a node's send of segment ``k`` of flow ``fi`` to its ``ci``-th
    child: segment first, then flow and child order; with an ``order`` for the node,
    period first (``k // m`` for a pair listed ``m`` times), then the position of its
    ``(k % m)``-th listing."""
    listed: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for node, sends in order.items():
        for pos, send in enumerate(sends):
            if send.flow == fi:
                slot = pos if send.slot is None else send.slot
                listed.setdefault(node, {}).setdefault(send.child, []).append((slot, send.lag))

    def key(node: str, k: int, ci: int, child: str) -> tuple:
        places = listed.get(node, {}).get(child)
        if not places:
            return (k, fi, ci)
        m = len(places)
        slot, lag = places[k % m]
        return (k // m + lag, slot, 0)

    return key


def hypercube_program(cube: Hypercube, nbytes: int) -> Program:
    """Lower a hypercube embedding to per-rank ops; ``nbytes`` is each member's contribution.

    For the node at position ``p`` and each step ``i`` with partner ``q = p XOR 2**i``:
    ``send(q, state_i(p))`` and ``recv_reduce(q, state_i(q), result=state_{i+1}(p))``, both
    depending on the previous ``recv_reduce`` (so the receive is posted when the rank is
    ready, and the exchange starts when both are: Figueira & Reddi's ``calc_cost``).  A
    partner first ``recv_reduce``s its extra's contribution and ends by sending it the
    result; an extra sends its contribution and receives the result.

    A chunk is a state: the combination of the contributions of its ``origin``, listed in
    *cube order* (positions in order, each partner followed by its extra), so that the
    state of a subcube is its lower half's state followed by its upper half's.
    """
    extra_of = {p: e for e, p in cube.folds}
    chunks: list[Chunk] = []
    states: dict[tuple[int, int], int] = {}

    def new_chunk(origin: tuple[str, ...]) -> int:
        if cube.combine == "none":
            size = 0
        elif cube.combine == "concat":
            size = nbytes * len(origin)
        else:
            size = nbytes
        chunks.append(Chunk(0, 0, size, origin))
        return len(chunks) - 1

    def state(p: int, level: int) -> int:
        # what the node at position p holds before step `level` (after its fold-in): the
        # contributions of its subcube (positions equal to p above bit `level`) and extras
        key = (level, p >> level)
        if key not in states:
            node = cube.positions[p]
            if level == 0 and node not in extra_of:
                states[key] = own[node]
            elif level == 0:
                states[key] = new_chunk((node, extra_of[node]))
            else:
                low = chunks[state(p & ~(1 << (level - 1)), level - 1)].origin
                high = chunks[state(p | (1 << (level - 1)), level - 1)].origin
                states[key] = new_chunk(low + high)
        return states[key]

    own = {node: new_chunk((node,)) for node in cube.nodes}
    ops: dict[str, tuple[Op, ...]] = {}
    for p, node in enumerate(cube.positions):
        mine: list[Op] = []
        prev: tuple[int, ...] = ()
        if node in extra_of:  # fold in: the extra's contribution first
            extra = extra_of[node]
            mine.append(Op("recv_reduce", extra, own[extra], (), state(p, 0)))
            prev = (0,)
        for step in range(cube.dims):
            q = p ^ (1 << step)
            peer = cube.positions[q]
            mine.append(Op("send", peer, state(p, step), prev))
            mine.append(Op("recv_reduce", peer, state(q, step), prev, state(p, step + 1)))
            prev = (len(mine) - 1,)
        if node in extra_of:  # fold out: the result back to the extra
            mine.append(Op("send", extra_of[node], state(p, cube.dims), prev))
        ops[node] = tuple(mine)
    for extra, partner in cube.folds:
        ops[extra] = (
            Op("send", partner, own[extra]),
            Op("recv", partner, state(0, cube.dims)),
        )
    initial = {node: frozenset({own[node]}) for node in cube.nodes}
    return Program(ops, tuple(chunks), initial)
