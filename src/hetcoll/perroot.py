"""Per-root flows: allgather, reduce-scatter and allreduce as every member's block moving
over trees of its own (the form of the bandwidth-optimal packings, Zhao et al. 2024).

- an **allgather**: each member's block ``[offset, offset + size)`` of the result buffer
  is broadcast from its owner over that owner's trees (``bcast`` flows rooted at it, each
  carrying a share of the block, pipelined in segments);
- a **reduce-scatter**: each block of the vector is reduced to its owner over the owner's
  trees run backwards (``reduce`` flows rooted at it: a node combines its children's
  partial results of a segment, in ``children`` order, then sends its subtree's result to
  its parent);
- an **allreduce**: ``reduce`` flows partition the vector among owners, then ``bcast``
  flows send each owner's reduced bytes back to every member (reduce-scatter + allgather).

:func:`check_per_root` states the rules a :class:`~hetcoll.schedule.Schedule` of this
form obeys; :func:`per_root_program` lowers one to the :class:`~hetcoll.program.Program`
the simulator and the runtime execute.  A rank interleaves its flows: its ops of segment
``k`` of a flow cut into ``S`` segments come at *round* ``(k + 1/2) / S``, so that every
tree advances at its own share's pace (the combine rule of :mod:`hetcoll.program`
completes a rank's combines in program order: flow after flow would serialise them).  A
schedule's ``order`` may give instead each send's *slot* in a timetable
(:mod:`hetcoll.planners.forestorder`): ops in slot order, each rank's sends one after the
other, or (the schedule's ``chain`` is ``edge`` or ``peer``, for a model whose ranks send
concurrently) a window of sends in flight per edge, its sends to different peers at once.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from .errors import ScheduleError
from .patterns import Flow, OrderedSend
from .program import Chunk, Op, Program

__all__ = [
    "CHAINS",
    "block_ranges",
    "check_per_root",
    "check_per_root_order",
    "is_per_root",
    "per_root_program",
]

#: how a per-root timetable chains a rank's sends: each after the rank's previous send
#: (``rank``), or after the send a window earlier to the same peer, the windows in
#: proportion to the edges' bytes (``edge``) or one per edge with the flows' first segments
#: phased (``peer``), or after the send a window earlier to the same peer of the same kind
#: of flow, the windows twice the proportion of the bytes each kind sends over the edge
#: (``kind``)
CHAINS = ("rank", "edge", "peer", "kind")
#: under ``chain="kind"``: the windows' multiple of the proportion of the bytes
KIND_DEPTH = 2
#: under ``chain="kind"``: a reduce flow's send waits for the rank's combines of the segment
#: this many segments before it in the rank's program (the last but one)
KIND_PACE = 2


def is_per_root(collective: str, flows: Sequence[Flow], timetable: bool = False) -> bool:
    """Whether ``flows`` of ``collective`` are in the per-root form: an allgather of
    ``bcast`` flows only, a reduce-scatter of ``reduce`` flows only, or an allreduce whose
    flows do not all share one root, or (``timetable``: the schedule's order gives slots)
    of reduce flows then bcast flows through one root.  Without a timetable the latter is
    a rooted reduce and broadcast, lowered in its trees' order; with one it must be lowered
    in slot order like every per-root schedule, or the ranks do not replay the timetable
    it was planned by (the 8-node graph's allreduce would run at twice its play-out)."""
    if not flows:
        return False
    kinds = {f.kind for f in flows}
    if collective == "allgather":
        return kinds == {"bcast"}
    if collective == "reduce_scatter":
        return kinds == {"reduce"}
    if collective == "allreduce":
        if "exchange" in kinds:
            return kinds == {"exchange"}
        if len({f.tree.root for f in flows}) > 1:
            return kinds <= {"reduce", "bcast"}
        return timetable and kinds == {"reduce", "bcast"}
    return False


def block_ranges(flows: Sequence[Flow]) -> dict[str, tuple[int, int]]:
    """``root -> (lo, hi)``: the byte range each root's flows cover (of the first kind of
    flow, the reduce flows of an allreduce), assuming :func:`check_per_root` holds."""
    first = flows[0].kind
    out: dict[str, tuple[int, int]] = {}
    for f in flows:
        if f.kind != first:
            continue
        lo, hi = out.get(f.tree.root, (f.offset, f.offset + f.nbytes))
        out[f.tree.root] = (min(lo, f.offset), max(hi, f.offset + f.nbytes))
    return out


def check_per_root(collective: str, flows: Sequence[Flow], blocks: Mapping[str, int]) -> None:
    """Check per-root flows of ``collective``; ``blocks``: each member's block in bytes
    (the allreduce's vector is ``blocks`` of any member, every one the same).

    Every flow moves buffer 0 over the same members; up flows come first.
    An allgather's and a reduce-scatter's flows rooted at a member cover exactly one
    contiguous range of that member's block size, and the ranges of all members partition
    ``[0, sum of blocks)``.  An allreduce's reduce flows and its bcast flows each partition
    ``[0, nbytes)``, and every bcast flow sends bytes its root reduced.  Raises
    :class:`ScheduleError` naming the first flow that breaks a rule.
    """
    members = set(flows[0].tree.nodes)
    seen_down = False
    for k, f in enumerate(flows):
        if f.buffer:
            raise ScheduleError(f"flows[{k}].buffer: a {collective} moves buffer 0")
        if set(f.tree.nodes) != members:
            raise ScheduleError(f"flows[{k}]: every flow must span the same members")
        if f.kind == "bcast":
            seen_down = True
        elif seen_down:
            raise ScheduleError(f"flows[{k}]: the reduce flows come before the bcast flows")
    if set(blocks) != members:
        extra = sorted(set(blocks) ^ members)[0]
        raise ScheduleError(
            f"sizes: must give the block of every member and no other node; {extra!r} "
            + ("is not a member" if extra not in members else "is missing")
        )
    if collective == "allreduce":
        size = next(iter(blocks.values()))
        if any(f.kind == "exchange" for f in flows):
            _partition(flows, size, "exchange")
            return
        ups = [f for f in flows if f.kind == "reduce"]
        downs = [f for f in flows if f.kind == "bcast"]
        if not ups or not downs:
            raise ScheduleError("a per-root allreduce needs reduce flows, then bcast flows")
        _partition(ups, size, "reduce")
        _partition(downs, size, "bcast")
        owner = sorted((f.offset, f.offset + f.nbytes, f.tree.root) for f in ups if f.nbytes)
        starts = [lo for lo, _, _ in owner]
        for k, f in enumerate(flows):
            if f.kind != "bcast" or not f.nbytes:
                continue
            at = f.offset
            while at < f.offset + f.nbytes:
                lo, hi, root = owner[bisect_right(starts, at) - 1]
                if root != f.tree.root:
                    raise ScheduleError(
                        f"flows[{k}]: byte {at} is reduced to {root!r}, but this bcast flow "
                        f"sends it from {f.tree.root!r}"
                    )
                at = hi
        return
    total = sum(blocks.values())
    _partition(flows, total, flows[0].kind)
    ranges = block_ranges(flows)
    for node in sorted(members - set(ranges)):
        raise ScheduleError(f"member {node!r} roots no flow: every member's block needs one")
    for root, (lo, hi) in ranges.items():
        if hi - lo != blocks[root]:
            raise ScheduleError(
                f"the flows rooted at {root!r} cover {hi - lo} bytes [{lo}, {hi}); its block "
                f"has {blocks[root]}"
            )


def check_per_root_order(flows: Sequence[Flow], order: Mapping[str, Sequence[OrderedSend]]) -> None:
    """Check a per-root schedule's ``order``: each node lists each of its sends (a ``bcast``
    flow's to a child, a ``reduce`` flow's to the parent) once per segment, in the order it
    issues them, every listing ``[flow, peer, 0, slot]``, the slots distinct, but that
    consecutive listings of one node to one peer may share a slot: one message, where their
    bytes follow each other (MPICH's halving, doubling and Bruck steps send several blocks
    at once; elsewhere they go one after the other).  A slot places the transfer's receive
    (and combine) among its receiver's ops; the slots usually rise along a node's list,
    but need not: a reduce-scatter run as an allgather's timetable backwards issues its
    sends in one order and combines in another (:mod:`hetcoll.planners.forestreverse`).
    (That every op comes after what it waits for is checked when the schedule is
    lowered.)  Raises :class:`ScheduleError` naming the first fault."""
    if any(f.kind == "exchange" for f in flows):
        raise ScheduleError("order: exchange flows are lowered in their trees' order, not in one")
    sends: dict[str, dict[tuple[int, str], int]] = {}
    for fi, f in enumerate(flows):
        if f.kind == "reduce":
            pairs = [(v, p) for v, p in f.tree.parent().items()]
        else:
            pairs = [(v, c) for v, kids in f.tree.children.items() for c in kids]
        for u, v in pairs:
            sends.setdefault(u, {})[(fi, v)] = f.chunks
    if _plainly_right(sends, order):
        return
    seen: set[int] = set()
    for node, listed in order.items():
        where = f"order[{node!r}]"
        counts: dict[tuple[int, str], int] = {}
        last, peer = -1, None
        for k, s in enumerate(listed):
            if s.slot is None or s.lag:
                raise ScheduleError(f"{where}[{k}]: a per-root order lists [flow, peer, 0, slot]")
            if s.slot == last and s.child != peer:
                raise ScheduleError(f"{where}[{k}]: a shared slot sends to one peer")
            if s.slot != last and s.slot in seen:
                raise ScheduleError(f"{where}[{k}]: slot {s.slot} is taken by another send")
            seen.add(s.slot)
            last, peer = s.slot, s.child
            counts[(s.flow, s.child)] = counts.get((s.flow, s.child), 0) + 1
        if counts != sends.get(node, {}):
            raise ScheduleError(
                f"{where}: must list each send of {node!r} once per segment of its flow "
                "(and no other)"
            )
    for node in sorted(set(sends) - set(order)):
        raise ScheduleError(f"order: {node!r} sends but has no list")


def _plainly_right(
    sends: dict[str, dict[tuple[int, str], int]], order: Mapping[str, Sequence[OrderedSend]]
) -> bool:
    """Whether :func:`check_per_root_order` finds no fault, in the common case and in a
    hurry (a play-out lists 10^5 sends): no lag, no slot None or negative, no two consecutive
    listings of a node sharing a slot, every slot once in all, and each node's counts
    per send its flows' segments.  False on anything else: the full check then names the
    first fault (or passes, where consecutive listings share a slot)."""
    everything: list[int] = []
    for node, listed in order.items():
        slots = [s.slot for s in listed]
        if None in slots or any(s.lag for s in listed) or min(slots, default=0) < 0:
            return False
        if any(a == b for a, b in pairwise(slots)):
            return False
        everything += slots
        if Counter((s.flow, s.child) for s in listed) != sends.get(node, {}):
            return False
    return len(set(everything)) == len(everything) and set(sends) <= set(order)


def _partition(flows: Sequence[Flow], size: int, kind: str) -> None:
    """The flows' byte ranges partition ``[0, size)`` (a flow of 0 bytes anywhere inside)."""
    covered = 0
    for f in sorted(flows, key=lambda f: (f.offset, f.nbytes)):
        if f.nbytes == 0:
            if f.offset > size:
                raise ScheduleError(f"a {kind} flow of 0 bytes at byte {f.offset}, past {size}")
            continue
        if f.offset != covered:
            raise ScheduleError(
                f"the {kind} flows must partition bytes [0, {size}); gap or overlap at byte "
                f"{min(covered, f.offset)}"
            )
        covered += f.nbytes
    if covered != size:
        raise ScheduleError(f"the {kind} flows cover {covered} bytes, of {size}")


class _Ops:
    """One program's ops, keyed per rank by ``(sort key, handle)``: numbered at the end
    in key order, deps given as handles."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.index: dict[tuple[Chunk, int], int] = {}
        self.ops: dict[str, list[tuple[tuple, int, list]]] = {}
        self.initial: dict[str, set[int]] = {}
        self.count = 0
        self.forwards: set[int] = set()  # the handles of relays' forwarding sends
        self.down: set[int] = set()  # the handles of bcast flows' sends

    def chunk(self, lo: int, n: int, origin: tuple[str, ...] = (), flow: int = 0) -> int:
        """The id of bytes ``[lo, lo + n)`` combining ``origin``: the same for the same
        bytes and origin, but an empty range is ``flow``'s own (several flows of 0 bytes
        may start at one offset; their messages must not match each other's)."""
        c = Chunk(0, lo, n, origin)
        key = (c, flow if n == 0 else -1)
        got = self.index.get(key)
        if got is None:
            got = self.index[key] = len(self.chunks)
            self.chunks.append(c)
        return got

    def copy(self, chunk: int) -> int:
        """A new relay copy of ``chunk`` (:class:`~hetcoll.program.Chunk`'s ``copy_of``)."""
        c = self.chunks[chunk]
        self.chunks.append(Chunk(0, c.offset, c.nbytes, c.origin, chunk))
        return len(self.chunks) - 1

    def op(self, node: str, key: tuple, kind: str, peer: str, chunk: int, deps=(), result=None):
        self.count += 1
        self.ops.setdefault(node, []).append(
            (key, self.count, [kind, peer, chunk, tuple(deps), result])
        )
        return self.count

    def joined(self, a: int, b: int) -> int | None:
        """The chunk of ``a``'s bytes then ``b``'s when they are adjacent, non-empty and
        combine the same members, else None."""
        x, y = self.chunks[a], self.chunks[b]
        if x.copy_of is not None or y.copy_of is not None:
            return None
        if x.nbytes and y.nbytes and x.origin == y.origin and x.offset + x.nbytes == y.offset:
            return self.chunk(x.offset, x.nbytes + y.nbytes, x.origin)
        return None

    def breaks(self) -> set[tuple]:
        """``(slot key, sender, receiver, chunk)`` where a run of joined receives must
        stop before ``chunk``: its bytes follow the run's, but not the states it
        produces (a block's partial at its owner's neighbour may lack a member another
        block's has).  The sender stops there too, so both see the same messages."""
        out = set()
        for node, mine in self.ops.items():
            for (k0, _, a), (k1, _, b) in pairwise(mine):
                same = k0 == k1 and a[0] == b[0] == "recv_reduce" and a[1] == b[1]
                if same and self.joined(a[4], b[4]) is None:
                    out.add((k1, b[1], node, b[2]))
        return out

    def merged(self, node: str, mine: list, breaks: set[tuple]) -> list:
        """``mine`` (sorted) with each run of ops of one slot, kind and peer whose chunks
        (and results) follow each other joined into one op: one message of several flows'
        bytes (a slot shared by several listings, :func:`check_per_root_order`).  The
        sender and the receiver see the same run in the same order, so they join alike."""
        out: list = []
        for key, handle, (kind, peer, chunk, deps, result) in mine:
            if out and out[-1][0] == key:
                _, handles, prev = out[-1]
                pair = (node, peer) if kind == "send" else (peer, node)
                # a send's issue key ends with its slot, its receive's key
                slot = key[2:] if kind == "send" and len(key) == 3 else key
                both = None
                if prev[:2] == [kind, peer] and (slot, *pair, chunk) not in breaks:
                    both = self.joined(prev[2], chunk)
                if both is not None:
                    prev[2] = both
                    prev[4] = None if result is None else self.joined(prev[4], result)
                    prev[3] = (*prev[3], *deps)
                    handles.append(handle)
                    continue
            out.append((key, [handle], [kind, peer, chunk, tuple(deps), result]))
        return out

    def program(
        self,
        reduces: bool,
        chain: bool = False,
        per_edge: bool = False,
        one: bool = False,
        per_kind: bool = False,
    ) -> Program:
        """The program.  With ``chain``: each rank's ops in slot order, each of its sends
        (but a relay's forwarding) waiting for its previous send; with ``per_edge`` too,
        for its send :func:`windows` places earlier to the same peer instead (with ``one``:
        a window of one send per edge, two where it would be alone, :func:`_alone`; with
        ``per_kind``: to the same peer in a flow of the same kind, the windows
        :data:`KIND_DEPTH` times those of the bytes of each kind)."""
        out: dict[str, tuple[Op, ...]] = {}
        for mine in self.ops.values():
            mine.sort(key=lambda x: x[0])
        breaks = self.breaks() if chain else set()
        runs_of = {
            node: self.merged(node, mine, breaks) if chain else [(k, [h], op) for k, h, op in mine]
            for node, mine in self.ops.items()
        }
        window: dict[tuple, int] = {}

        def lane(handle: int, peer: str) -> Any:
            """The window a send counts in: its peer's (and its flow kind's)."""
            return (peer, handle in self.down) if per_kind else peer

        if chain and per_edge:
            sent: dict[tuple, int] = {}
            for node, runs in runs_of.items():
                for _, handles, (kind, peer, chunk, _, _) in runs:
                    if kind == "send" and handles[0] not in self.forwards:
                        edge = (node, lane(handles[0], peer))
                        sent[edge] = sent.get(edge, 0) + self.chunks[chunk].nbytes
            if per_kind:
                window = {e: KIND_DEPTH * w for e, w in windows(sent).items()}
            else:
                window = _alone(dict.fromkeys(sent, 1) if one else windows(sent))
        for node, runs in runs_of.items():
            where = {h: i for i, (_, handles, _) in enumerate(runs) for h in handles}
            last: dict[Any, list[int]] = {}  # the sends so far, per window ("": any peer)
            combined: list[tuple[tuple, int]] = []  # (key, its last combine) per segment
            ops = []
            for i, (key, handles, (kind, peer, chunk, deps, result)) in enumerate(runs):
                before = {where[d] for d in deps}
                if before and max(before) >= i:
                    raise ScheduleError(
                        f"order: {node!r}'s op at slot {key[0]} waits for one of a later slot"
                    )
                # a relay forwards as soon as it has the bytes: the network's routing,
                # not one of the rank's own sends of the timetable
                if chain and kind == "send" and handles[0] not in self.forwards:
                    edge = lane(handles[0], peer) if per_edge else ""
                    mine = last.setdefault(edge, [])
                    w = window.get((node, edge), 1)
                    if len(mine) >= w:
                        before.add(mine[-w])
                    mine.append(i)
                    up = per_kind and handles[0] not in self.down
                    if up and len(combined) >= KIND_PACE:
                        before.add(combined[-KIND_PACE][1])
                if kind == "recv_reduce":
                    if combined and combined[-1][0] == key:
                        combined[-1] = (key, i)
                    else:
                        combined.append((key, i))
                ops.append(Op(kind, peer, chunk, tuple(sorted(before)), result))
            out[node] = tuple(ops)
        initial = {k: frozenset(v) for k, v in self.initial.items()}
        return Program(out, tuple(self.chunks), initial, reduces)


#: the most sends a rank keeps in flight on its busiest edge (``chain="edge"``)
WINDOW = 8
#: ... the fewest it keeps there whose windows are within this of the edges' bytes
WINDOW_ERROR = 0.05


def windows(
    sent: Mapping[tuple[str, str], int], most: int = WINDOW, least: int = 1
) -> dict[tuple[str, str], int]:
    """How many sends each edge ``(sender, receiver)`` keeps in flight under
    ``chain="edge"``, from the bytes it carries (``sent``): in proportion to them, at least
    1, ``k`` on the busiest edge for the smallest ``k <= most`` whose windows all lie
    within :data:`WINDOW_ERROR` of that proportion (else the ``k`` that comes closest).

    Every flow of a packing runs for the whole collective, so an edge's bytes are in
    proportion to the rate the packing gives it.  A model that shares a NIC among its
    transfers by max-min fairness (``nic``) gives every transfer crossing a saturated NIC
    the same rate, so edges with sends in flight in proportion to their rates get the
    packing's rates where it saturates a NIC (and more elsewhere, from capacity the packing
    leaves idle): one send per edge would split a NIC equally among its edges instead.  A
    segment crosses an edge at its window's share of the edge's rate, so the smallest
    windows fill the pipeline fastest.

    >>> windows({("a", "b"): 300, ("a", "c"): 100, ("b", "c"): 200})
    {('a', 'b'): 3, ('a', 'c'): 1, ('b', 'c'): 2}
    """
    top = max(sent.values(), default=0)
    if top <= 0:
        return dict.fromkeys(sent, least)
    best: tuple[float, dict[tuple[str, str], int]] | None = None
    for k in range(least, max(most, least) + 1):
        got = {e: max(least, round(k * b / top)) for e, b in sent.items()}
        error = max(abs(got[e] * top / (k * b) - 1) if b > 0 else 0.0 for e, b in sent.items())
        if error <= WINDOW_ERROR:
            return got
        if best is None or error < best[0]:
            best = (error, got)
    return best[1]


def per_root_program(
    flows: Sequence[Flow],
    order: Mapping[str, Sequence[OrderedSend]] | None = None,
    chain: str = "rank",
    stagger: int = 0,
) -> Program:
    """Lower per-root flows (checked by :func:`check_per_root`) to per-rank ops.

    Every rank's ops are ordered by phase (reduce flows, then bcast flows), then round
    (``(k + 1/2) / S`` for segment ``k`` of a flow of ``S`` segments), then flow, receives
    of a segment before its sends.  ``reduce``: a node ``recv_reduce``\\ s each child's
    partial result of the segment (in ``children`` order) and sends its subtree's result to
    its parent once they are all combined; a state's ``origin`` is the set of members it
    combines, in sorted order, so a root's final states are the same chunks whatever its
    tree.  ``bcast``: a node receives a segment and forwards it to its children in order; an
    allreduce's root sends bytes once its reduction of them is complete, and a node posts
    the receive of bytes it contributed once its own send of them has completed (nothing
    writes a range still being sent).  With ``order`` (checked by
    :func:`check_per_root_order`) every rank's ops go in slot order instead (a send's and
    its receive's slot are the same) and each send waits for the rank's previous send: the
    ranks replay the timetable the slots come from.  With ``chain="edge"`` a send waits
    instead for the rank's send :func:`windows` places earlier to the same peer: a rank
    keeps a window of sends in flight per edge, in proportion to the edge's bytes, its
    sends to different peers at once (a model whose ranks send concurrently shares the
    rank's NIC among them, as the packing assumes), at least two where one would be alone
    at its sender's or receiver's NIC; ``stagger`` (bytes, 0: none) is then every flow's
    first segment, its others following from there, and a segment's round the middle of
    its bytes: the sends of a window end apart and each one's lead (latency, per-message
    costs) overlaps another's bytes, where sends of one size started together leave the NIC
    idle through every lead.  With ``chain="peer"`` every edge keeps one send in flight (two
    where it would be alone) and each flow's first segment is its own (:func:`_phases`: the
    ``i``-th of ``K`` flows of a kind cut into segments starts with ``(i + 1/2) / K`` of a
    segment, in whole multiples of ``stagger``): the flows sharing a NIC start their
    segments at different moments, so that one's lead passes under the others' bytes, for
    flows whose segments are not of one size (each share in as many segments: a NIC's edges
    then get the rates of their bytes from one send each).  With ``chain="kind"`` a send
    waits for the rank's send :data:`KIND_DEPTH` windows earlier to the same peer in a flow
    of the same kind (reduce or bcast), the windows from each kind's bytes over the edge,
    first segments as under ``"edge"``: an allreduce's reduce-scatter and allgather each
    keep their own sends in flight, so an edge that carries both moves each at its fluid
    rate, and every send has a twin half a segment apart whose bytes cover its lead; a
    send of a reduce flow waits too for the rank's combines of the segment
    :data:`KIND_PACE` before it in its program, so that a rank that owns a share sends its
    own contributions at the pace its combines complete (the slowest NICs' pace), in step
    with the others.  Every wait it adds is on an op of an earlier round of the reduce
    flows, whose receives wait only for sends of earlier rounds: no cycle (a timetable's
    slots, ``order``, are refused with it).  O(total ops log ops).
    """
    if chain not in CHAINS:
        raise ScheduleError(f"chain: one of {', '.join(CHAINS)}, not {chain!r}")
    if chain == "kind" and order:
        raise ScheduleError('chain "kind": flows in rounds, not in a timetable (order)')
    b = _Ops()
    members = tuple(sorted(flows[0].tree.nodes))
    for v in members:
        b.ops.setdefault(v, [])
    reduces = any(f.kind in ("reduce", "exchange") for f in flows)
    finals: dict[str, list[tuple[int, int, int]]] = {}  # root -> (lo, hi, handle) of results
    sent: dict[str, list[tuple[int, int, int]]] = {}  # node -> (lo, hi, handle) of its sends
    ordered = False
    # a segment's time on one hop, as a fraction of the run: that of the most finely cut
    # flow (the segments of one schedule are about the same size)
    hop = 1.0 / max(f.chunks for f in flows)
    slots = _slots(order) if order else None
    issued = _issued(order) if order else {}

    cut: set[int] = set()  # the flows whose first segment is cut in two (staggered)

    def when(default: tuple, fi: int, k: int, u: str, v: str, send: bool = False) -> tuple:
        if slots is None:
            return default
        if fi not in cut:
            return issued[(fi, u, v)][k] if send else (slots[(fi, u, v)][k],)
        return (slots[(fi, u, v)][max(k - 1, 0)], k == 1)  # both halves in the first's slot

    paths: dict[tuple[int, str, str], tuple[str, ...]] = {}  # the data's way, relays between
    for fi, flow in enumerate(flows):
        for path in flow.relays:
            way = path[::-1] if flow.kind == "reduce" else path
            paths[(fi, way[0], way[-1])] = way
    copies: dict[tuple[int, int, str, str], int] = {}

    def wire(fi: int, k: int, u: str, v: str, chunk: int, key: tuple) -> tuple[str, str, int]:
        """Segment ``k`` of flow ``fi`` from ``u`` to ``v``: ``u``'s peer, ``v``'s peer and
        the chunk on the wire, a relay copy forwarded by each relay (store and forward,
        right after the sender's slot) where the edge is relayed."""
        way = paths.get((fi, u, v))
        if way is None:
            return v, u, chunk
        got = copies.get((fi, k, u, v))
        if got is None:
            got = copies[(fi, k, u, v)] = b.copy(chunk)
            for h in range(1, len(way) - 1):
                r = b.op(way[h], (*key, h, 0), "recv", way[h - 1], got)
                b.forwards.add(b.op(way[h], (*key, h, 1), "send", way[h + 1], got, [r]))
        return way[1], way[-2], got

    edge = chain in ("edge", "peer", "kind")
    first = (
        _phases(flows, stagger) if chain == "peer" else dict.fromkeys(range(len(flows)), stagger)
    )
    for fi, flow in enumerate(flows):
        tree, kids = flow.tree, flow.tree.children
        segs = flow.segments()
        if edge:
            cuts = _staggered(segs, first[fi])
            if len(cuts) > len(segs):
                cut.add(fi)
            segs = cuts

        def middle(k: int, segs=segs, flow=flow) -> float:
            """Segment ``k``'s round: the middle of its bytes, as a fraction of the flow."""
            if not edge:
                return (k + 0.5) / len(segs)
            lo, n = segs[k]
            return (lo - flow.offset + n / 2) / max(flow.nbytes, 1)

        if flow.kind == "exchange":
            _exchange(b, fi, flow, segs, middle, hop, members)
            continue
        parent = tree.parent()
        if flow.kind == "reduce":
            below: dict[str, tuple[str, ...]] = {}
            height: dict[str, int] = {}
            for v in reversed(tree.nodes):  # children before parents
                below[v] = tuple(sorted((v, *(x for c in kids.get(v, ()) for x in below[c]))))
                height[v] = 1 + max((height[c] for c in kids.get(v, ())), default=-1)
            for k, (lo, n) in enumerate(segs):
                for v in tree.nodes:
                    rnd = middle(k) + height[v] * hop
                    own = b.chunk(lo, n, (v,), fi)
                    b.initial.setdefault(v, set()).add(own)
                    state: tuple[str, ...] = (v,)
                    got = []
                    for c in kids.get(v, ()):
                        state = tuple(sorted(state + below[c]))
                        part = b.chunk(lo, n, below[c], fi)
                        result = b.chunk(lo, n, state, fi)
                        key = when((0, rnd, fi, 0), fi, k, c, v)
                        _, peer, part = wire(fi, k, c, v, part, key)
                        got.append(b.op(v, key, "recv_reduce", peer, part, (), result))
                    up = parent.get(v)
                    if up is None:
                        finals.setdefault(v, []).extend((lo, lo + n, h) for h in got)
                        continue
                    key = when((0, rnd, fi, 1), fi, k, v, up, send=True)
                    peer, _, part = wire(fi, k, v, up, b.chunk(lo, n, state, fi), key)
                    h = b.op(v, key, "send", peer, part, got)
                    sent.setdefault(v, []).append((lo, lo + n, h))
            continue
        if not ordered:  # the reduce flows are all lowered: sort their spans once
            ordered = True
            for spans in (*finals.values(), *sent.values()):
                spans.sort()
        origin = members if reduces else ()
        for k, (lo, n) in enumerate(segs):
            rnd = middle(k)
            seg = b.chunk(lo, n, origin, fi)
            root_deps = _overlapping(finals.get(tree.root, ()), lo, n)
            if not reduces or not root_deps:  # an empty share of an allreduce: no data
                b.initial.setdefault(tree.root, set()).add(seg)
            have = {tree.root: root_deps}
            for v in tree.nodes:
                for c in kids.get(v, ()):
                    wait = _overlapping(sent.get(c, ()), lo, n)
                    key = when((1, rnd, fi, 0), fi, k, v, c)
                    to, by, part = wire(fi, k, v, c, seg, key)
                    result = None if part == seg else seg
                    got = b.op(c, key, "recv", by, part, wait, result)
                    b.down.add(
                        b.op(v, when((1, rnd, fi, 1), fi, k, v, c, True), "send", to, part, have[v])
                    )
                    have[c] = [got]
    return b.program(
        reduces,
        chain=slots is not None or edge,
        per_edge=edge,
        one=chain == "peer",
        per_kind=chain == "kind",
    )


def _exchange(b: _Ops, fi: int, flow: Flow, segs, middle, hop: float, members) -> None:
    """Lower exchange flow ``fi`` (:class:`~hetcoll.patterns.Flow`) into ``b``: for each
    segment, every group reduces it up its tree to its owner (a ``reduce`` flow's ops), the
    owners send their group's state to every other owner, then ``recv_reduce`` the others'
    in owner order, and each sends the result down its group's tree (a ``bcast`` flow's
    ops; a member posts its receive of the result once its send of its partial has
    completed).  The rounds as a reduce flow's, the exchange one hop above the highest
    owner, the broadcast after it.  A runtime combines an owner's received partials in one
    fixed order of their origins (:class:`hetcoll.runtime.perroot.PerRootReduce`), so every
    owner computes the same bits; the program's order is the simulator's."""
    groups = flow.owners()
    owners = tuple(groups)
    kids = {v: [c for c in cs if c not in owners] for v, cs in flow.tree.children.items()}
    parent = {c: p for p, cs in kids.items() for c in cs}
    below: dict[str, tuple[str, ...]] = {}
    height: dict[str, int] = {}
    depth: dict[str, int] = {}
    for group in groups.values():
        for v in reversed(group):  # children before parents
            below[v] = tuple(sorted((v, *(x for c in kids.get(v, ()) for x in below[c]))))
            height[v] = 1 + max((height[c] for c in kids.get(v, ())), default=-1)
        for v in group:
            depth[v] = depth[parent[v]] + 1 if v in parent else 0
    top = max(height[o] for o in owners) + 1
    done = tuple(sorted(members))
    for k, (lo, n) in enumerate(segs):
        start = middle(k)
        partial: dict[str, list[int]] = {}  # an owner's combines of its group's partials
        up: dict[str, int] = {}  # a member's send of its subtree's partial
        for o, group in groups.items():
            for v in group:
                rnd = start + height[v] * hop
                b.initial.setdefault(v, set()).add(b.chunk(lo, n, (v,), fi))
                state: tuple[str, ...] = (v,)
                got = []
                for c in kids.get(v, ()):
                    state = tuple(sorted(state + below[c]))
                    part, result = b.chunk(lo, n, below[c], fi), b.chunk(lo, n, state, fi)
                    got.append(b.op(v, (0, rnd, fi, 0), "recv_reduce", c, part, (), result))
                if v == o:
                    partial[o] = got
                else:
                    up[v] = b.op(v, (0, rnd, fi, 1), "send", parent[v], b.chunk(lo, n, state, fi),
                                 got)  # fmt: skip
        rnd = start + top * hop
        have: dict[str, list[int]] = {}
        for o in owners:
            mine = b.chunk(lo, n, below[o], fi)
            for p in owners:
                if p != o:
                    b.op(o, (0, rnd, fi, 1), "send", p, mine, partial[o])
            state, got = below[o], []
            for p in owners:
                if p != o:
                    state = tuple(sorted(state + below[p]))
                    part, result = b.chunk(lo, n, below[p], fi), b.chunk(lo, n, state, fi)
                    # after the group's partial: its send reads it, the runtime adds to it
                    got.append(b.op(o, (0, rnd, fi, 2), "recv_reduce", p, part, partial[o], result))
            have[o] = got
        seg = b.chunk(lo, n, done, fi)
        for group in groups.values():
            for v in group:
                rnd = start + (top + 1 + depth[v]) * hop
                for c in kids.get(v, ()):
                    got = b.op(c, (0, rnd, fi, 3), "recv", v, seg, [up[c]])
                    b.op(v, (0, rnd, fi, 4), "send", c, seg, have[v])
                    have[c] = [got]


def _phases(flows: Sequence[Flow], unit: int) -> dict[int, int]:
    """Each flow's first segment under ``chain="peer"`` (bytes, 0: as the others): the
    ``i``-th of the ``K`` flows of a kind in several segments starts with ``(i + 1/2) / K``
    of its segment, rounded down to whole multiples of ``unit`` (at least one; ``unit``
    0: no phases).

    >>> from hetcoll.patterns import Tree
    >>> star = Tree("a", {"a": ("b",)})
    >>> [_phases([Flow(star, 400, at, segment_size=100) for at in (0, 400)], 10)[i]
    ...  for i in (0, 1)]
    [20, 70]
    """
    out = dict.fromkeys(range(len(flows)), 0)
    if unit <= 0:
        return out
    for kind in {f.kind for f in flows}:
        cut = [i for i, f in enumerate(flows) if f.kind == kind and f.chunks > 1]
        for j, i in enumerate(cut):
            seg = flows[i].segment_size or 0
            out[i] = max(unit, (2 * j + 1) * seg // (2 * len(cut) * unit) * unit)
    return out


def _alone(window: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """``window`` with two sends in flight on an edge whose one send would be the only one
    at its sender's or its receiver's NIC: two sends half a segment apart
    (:func:`_staggered`) keep the NIC busy through each other's lead (latency, per-message
    costs), where one would leave it idle through every lead (a chain's leaf)."""
    out, give, take = dict(window), {}, {}
    for (u, v), w in window.items():
        give[u] = give.get(u, 0) + w
        take[v] = take.get(v, 0) + w
    for u, v in window:
        if give[u] == 1 or take[v] == 1:
            out[(u, v)] = 2
    return out


def _staggered(segs: list[tuple[int, int]], first: int) -> list[tuple[int, int]]:
    """``segs`` (of one size but the last) with a first segment of ``first`` bytes, then
    segments of their size from there, where there are several and ``first`` is shorter
    than one (else ``segs``)."""
    lo, step = segs[0]
    if len(segs) < 2 or not 0 < first < step:
        return segs
    end = segs[-1][0] + segs[-1][1]
    return [(lo, first)] + [(a, min(step, end - a)) for a in range(lo + first, end, step)]


def _slots(order: Mapping[str, Sequence[OrderedSend]]) -> dict[tuple[int, str, str], list[int]]:
    """``(flow, sender, receiver) -> slots`` of its segments in order (the ``j``-th
    listing of a send is its ``j``-th segment)."""
    out: dict[tuple[int, str, str], list[int]] = {}
    for u, sends in order.items():
        for s in sends:
            out.setdefault((s.flow, u, s.child), []).append(s.slot)
    return out


def _issued(
    order: Mapping[str, Sequence[OrderedSend]],
) -> dict[tuple[int, str, str], list[tuple[int, int, int]]]:
    """``(flow, sender, receiver) -> keys`` of its segments' sends in the sender's program:
    ``(the highest slot listed so far, the place of its slot's first listing, its slot)``,
    so that a node's sends go in the order it lists them and each after every receive of
    a lower slot (with rising slots: slot order, a shared slot's listings one key).  A
    send listed after one of a higher slot waits in the program behind it: the node
    issues its sends in one order while it receives and combines in slot order."""
    out: dict[tuple[int, str, str], list[tuple[int, int, int]]] = {}
    for u, sends in order.items():
        top, first, last = -1, 0, None
        for j, s in enumerate(sends):
            if s.slot != last:
                first, last = j, s.slot
            top = max(top, s.slot)
            out.setdefault((s.flow, u, s.child), []).append((top, first, s.slot))
    return out


def _overlapping(spans: Sequence[tuple[int, int, int]], lo: int, n: int) -> list[int]:
    """Handles of the ``(lo, hi, handle)`` spans (sorted; any two disjoint or the same
    range) that overlap bytes ``[lo, lo + n)``; an empty range or span is one byte wide."""
    hi = lo + max(n, 1)
    i = bisect_left(spans, (lo, -1, -1))
    while i > 0 and max(spans[i - 1][1], spans[i - 1][0] + 1) > lo:
        i -= 1
    out = []
    for a, b, h in spans[i:]:
        if a >= hi:
            break
        if lo < max(b, a + 1):
            out.append(h)
    return out
