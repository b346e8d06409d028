"""Lowering: every schedule to the one :class:`~hetcoll.program.Program` the simulator and
the runtime execute (:meth:`hetcoll.schedule.Schedule.program` calls these): a single tree
(:func:`tree_program`), several flows with relays and a send order or timetable
(:func:`flows_program`), a hypercube embedding (:func:`hypercube_program`), flows that
reduce, gather or scatter, alone or one after the other (:func:`rooted_program`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .patterns import REDUCE_OPS, Flow, Hypercube, OrderedSend, Tree
from .program import Chunk, Op, Program

__all__ = ["block_layout", "flows_program", "hypercube_program", "rooted_program", "tree_program"]


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
    return Program(ops, tuple(chunks), initial, cube.combine in REDUCE_OPS)


def block_layout(
    tree: Tree, sizes: Mapping[str, int]
) -> tuple[tuple[str, ...], dict[str, int], dict[str, int]]:
    """The block buffer of a gather or scatter flow: ``(preorder, offset, span)``.

    Blocks are laid out in the tree's preorder (a node, then each child's subtree in
    ``children`` order), so the blocks of every subtree are one contiguous range:
    ``offset[v]`` is where ``v``'s own block starts and ``span[v]`` the bytes of its whole
    subtree (``sizes[v]`` each).  O(N), no recursion.
    """
    children = tree.children
    order: list[str] = []
    stack = [tree.root]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(reversed(children.get(v, ())))
    offset: dict[str, int] = {}
    at = 0
    for v in order:
        offset[v] = at
        at += sizes[v]
    span = dict(sizes)
    parent = tree.parent()
    for v in reversed(order):  # children before parents
        p = parent.get(v)
        if p is not None:
            span[p] += span[v]
    return tuple(order), offset, span


class _Rooted:
    """Builds the program of a schedule with rooted flows (:func:`rooted_program`): chunks
    deduplicated, each rank's ops kept per (flow, receives or sends) and numbered at the end
    (a flow's receives, then its sends, flow after flow)."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.index: dict[Chunk, int] = {}
        self.ops: dict[str, dict[tuple[int, int], list[list]]] = {}
        self.initial: dict[str, set[int]] = {}

    def chunk(self, buffer: int, offset: int, nbytes: int, origin=(), copy_of=None, fresh=False):
        """A chunk's id: the same for the same reduction state; ``fresh``: a new id (byte
        ranges, which a rank may hold by coverage and receive more than once by value)."""
        c = Chunk(buffer, offset, nbytes, tuple(origin), copy_of)
        got = None if fresh else self.index.get(c)
        if fresh:
            self.chunks.append(c)
            return len(self.chunks) - 1
        if got is None:
            got = self.index[c] = len(self.chunks)
            self.chunks.append(c)
        return got

    def rank(self, node: str) -> dict[tuple[int, int], list[list]]:
        return self.ops.setdefault(node, {})

    def op(self, node, phase, kind, peer, chunk, deps=(), result=None) -> tuple:
        """Append an op; its handle ``(node, phase, position)`` names it in deps."""
        part = self.rank(node).setdefault(phase, [])
        part.append([kind, peer, chunk, tuple(deps), result])
        return (node, phase, len(part) - 1)

    def transfer(self, fi, path, chunk, deps=(), kind="recv", result=None) -> tuple:
        """``chunk`` from ``path[0]`` to ``path[-1]``, through the relays between (store and
        forward, as a relay copy); returns the handle of the final receive."""
        src, dst = path[0], path[-1]
        if len(path) == 2:
            self.op(src, (fi, 1), "send", dst, chunk, deps)
            return self.op(dst, (fi, 0), kind, src, chunk, (), result)
        c = self.chunks[chunk]
        copy = self.chunk(c.buffer, c.offset, c.nbytes, c.origin, chunk, fresh=True)
        self.op(src, (fi, 1), "send", path[1], copy, deps)
        for h in range(1, len(path) - 1):
            got = self.op(path[h], (fi, 0), "recv", path[h - 1], copy)
            self.op(path[h], (fi, 1), "send", path[h + 1], copy, (got,))
        if kind == "recv":
            result = chunk
        return self.op(dst, (fi, 0), kind, path[-2], copy, (), result)

    def brought(self, node: str, buffer: int, origin: tuple, lo: int, hi: int) -> list[tuple]:
        """Handles of ``node``'s ops so far that bring a chunk of ``buffer`` with ``origin``
        overlapping bytes ``[lo, hi)`` (what a later flow's send of those bytes waits for)."""
        out = []
        for phase, part in self.rank(node).items():
            for pos, (kind, _, chunk, _, result) in enumerate(part):
                if kind == "send":
                    continue
                c = self.chunks[chunk if result is None else result]
                if c.copy_of is not None:
                    continue
                if (
                    c.buffer == buffer
                    and c.origin == origin
                    and c.offset < hi
                    and lo < c.offset + max(c.nbytes, 1)
                ):
                    out.append((node, phase, pos))
        return out

    def program(self, reduces: bool) -> Program:
        ops: dict[str, tuple[Op, ...]] = {}
        for node, parts in self.ops.items():
            base: dict[tuple[int, int], int] = {}
            at = 0
            for phase in sorted(parts):
                base[phase] = at
                at += len(parts[phase])
            out = []
            for phase in sorted(parts):
                for kind, peer, chunk, deps, result in parts[phase]:
                    index = tuple(sorted(base[ph] + pos for _, ph, pos in deps))
                    out.append(Op(kind, peer, chunk, index, result))
            ops[node] = tuple(out)
        initial = {k: frozenset(v) for k, v in self.initial.items()}
        return Program(ops, tuple(self.chunks), initial, reduces)


def rooted_program(flows: Sequence[Flow], sizes: Mapping[str, int]) -> Program:
    """Lower flows of any kind (:attr:`Flow.kind`), run one after the other where they meet,
    to per-rank ops; ``sizes`` gives each member's block (gather and scatter flows).

    Every rank posts its receives at the start and sends when its data are complete:

    - ``reduce`` (segment by segment): a node ``recv_reduce``\\ s each child's partial
      result (in ``children`` order; the one combine rule of :mod:`hetcoll.program` makes
      them complete in that order) into its state, then sends its subtree's result to its
      parent once every combine of that segment is done.  A state is a chunk whose
      ``origin`` lists the members it combines, in preorder (the node, then each child's
      subtree);
    - ``gather``: a node receives each child's subtree blocks into the child's range of the
      block buffer (:func:`block_layout`) and sends its subtree's range once all are in;
    - ``scatter``: a node receives its subtree's range and sends each child the child's;
    - ``bcast``: a node receives each segment and forwards it to its children.

    A flow that sends from its root bytes an earlier flow brought there (a reduce or a
    gather to that root, on the same buffer) carries the earlier flow's chunks (same
    origin), and the root's sends wait for the receives that bring the bytes they send.
    So ``reduce`` then ``bcast`` is an allreduce, ``gather`` then ``bcast`` an allgather,
    ``reduce`` then ``scatter`` a reduce-scatter.  A relayed edge goes through its relays
    (store and forward, as relay copies) whichever way the data go.  O(total ops).
    """
    b = _Rooted()
    result_origin: dict[tuple[int, str], tuple[str, ...]] = {}  # (buffer, root) -> origin
    for fi, flow in enumerate(flows):
        tree = flow.tree
        via = flow.relay_of()
        kids = tree.children
        for v in tree.nodes:  # every member has a program, even an empty one
            b.rank(v)

        def path(parent: str, child: str, up: bool, via=via) -> tuple[str, ...]:
            hops = via.get((parent, child), ())
            return (child, *reversed(hops), parent) if up else (parent, *hops, child)

        if flow.up:
            unit = dict.fromkeys(tree.nodes, 1)
            order, offset, span = block_layout(tree, unit if flow.kind == "reduce" else sizes)
            if flow.kind == "reduce":
                pre = {}
                for v in reversed(order):  # each subtree's preorder, children first
                    pre[v] = (v, *(x for c in kids.get(v, ()) for x in pre[c]))
                result_origin[(flow.buffer, tree.root)] = pre[tree.root]
                segments = flow.segments()
            else:
                segments = [(0, flow.nbytes)]
            for off, n in segments:
                got: dict[str, list[tuple]] = {}
                for v in reversed(order):  # a child's receives exist before its send
                    if flow.kind == "gather":
                        own = b.chunk(flow.buffer, offset[v], sizes[v], fresh=True)
                        b.initial.setdefault(v, set()).add(own)
                        for c in kids.get(v, ()):
                            mine = b.chunk(flow.buffer, offset[c], span[c], fresh=True)
                            got.setdefault(v, []).append(
                                b.transfer(fi, path(v, c, True), mine, got.get(c, ()))
                            )
                        continue
                    b.initial.setdefault(v, set()).add(b.chunk(flow.buffer, off, n, (v,)))
                    state: tuple[str, ...] = (v,)
                    for c in kids.get(v, ()):
                        state = state + pre[c]
                        part = b.chunk(flow.buffer, off, n, pre[c])
                        result = b.chunk(flow.buffer, off, n, state)
                        got.setdefault(v, []).append(
                            b.transfer(
                                fi, path(v, c, True), part, got.get(c, ()), "recv_reduce", result
                            )
                        )
            continue
        origin = result_origin.get((flow.buffer, tree.root), ())
        if flow.kind == "scatter":
            order, offset, span = block_layout(tree, sizes)
            deps = b.brought(tree.root, flow.buffer, origin, 0, max(flow.nbytes, 1))
            if not deps:
                b.initial.setdefault(tree.root, set()).add(
                    b.chunk(flow.buffer, 0, flow.nbytes, origin, fresh=True)
                )
            have = {tree.root: deps}
            for v in order:
                for c in kids.get(v, ()):
                    mine = b.chunk(flow.buffer, offset[c], span[c], origin, fresh=True)
                    have[c] = [b.transfer(fi, path(v, c, False), mine, have[v])]
            continue
        for off, n in flow.segments():  # bcast: from what the root holds or is brought
            seg = b.chunk(flow.buffer, off, n, origin, fresh=True)
            deps = b.brought(tree.root, flow.buffer, origin, off, off + max(n, 1))
            if not deps:
                b.initial.setdefault(tree.root, set()).add(seg)
            have = {tree.root: deps}
            for v in tree.nodes:
                for c in kids.get(v, ()):
                    have[c] = [b.transfer(fi, path(v, c, False), seg, have[v])]
    return b.program(any(f.kind == "reduce" for f in flows))
