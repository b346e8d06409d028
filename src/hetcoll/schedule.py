"""The one intermediate representation every planner returns.

A :class:`Schedule` says *what* moves where:

- an **ordered tree** (:class:`Tree`): each sender's children in the order it sends to them;
- a **pipelined tree**: a :class:`Flow` whose message is cut into segments;
- **several trees at once**: several flows, either carrying disjoint byte ranges of one
  buffer (multi-tree, steady state) or different buffers (multiple multicast, one buffer per
  source);
- a **hypercube embedding** (:class:`Hypercube`): node per cube position, exchange rounds
  dimension by dimension, a combine operator (allreduce, allgather, barrier);
- the **rooted family**: flows whose data go up the tree, combined on the way (reduce) or
  collected (gather), or down it in shrinking pieces (scatter), alone or followed by a
  flow from the same root (reduce + bcast: allreduce; gather + bcast: allgather; reduce +
  scatter: reduce-scatter).

The patterns live in :mod:`hetcoll.patterns`; :meth:`Schedule.program` lowers a schedule
(:mod:`hetcoll.lowering`) to one :class:`~hetcoll.program.Program`, the per-rank ops that
both the simulator and the runtime execute, by the rules :mod:`hetcoll.program` states.

Schedules are immutable, deterministic, validated, and round-trip through JSON.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from ._fields import count, kind_of, mapping, node_id, only_keys, required
from .errors import HetcollError, PlannerError, ScheduleError
from .lowering import flows_program, hypercube_program, rooted_program, tree_program
from .patterns import REDUCE_OPS, Flow, Hypercube, OrderedSend, Tree
from .perroot import (
    CHAINS,
    block_ranges,
    check_per_root,
    check_per_root_order,
    is_per_root,
    per_root_program,
)
from .program import Program
from .units import MAX_SIZE

__all__ = [
    "Tree",
    "Flow",
    "Hypercube",
    "ListedOrder",
    "OrderedSend",
    "Schedule",
    "COLLECTIVES",
    "ROOTED_COLLECTIVES",
    "check_delivery",
    "check_simulations",
    "check_transfers",
    "MAX_TIMETABLE_TRANSFERS",
    "MAX_TRANSFERS",
    "MAX_SHARED_TRANSFERS",
    "transfer_budget",
]

#: Collective operations a schedule can describe.
COLLECTIVES = (
    "bcast",
    "multicast",
    "multi_multicast",
    "reduce",
    "gather",
    "scatter",
    "allreduce",
    "allgather",
    "reduce_scatter",
    "barrier",
)
#: Collectives a hypercube schedule describes.
HYPERCUBE_COLLECTIVES = ("allreduce", "allgather", "barrier")
#: Collectives of rooted flows: the kinds of their flows, up the tree then down it.
ROOTED_COLLECTIVES = {
    "reduce": ("reduce", None),
    "gather": ("gather", None),
    "scatter": (None, "scatter"),
    "allreduce": ("reduce", "bcast"),
    "allgather": ("gather", "bcast"),
    "reduce_scatter": ("reduce", "scatter"),
}
#: Collectives whose members each contribute a block (``nbytes`` or ``sizes[member]``).
BLOCK_COLLECTIVES = ("gather", "scatter", "allgather", "reduce_scatter")
FORMAT = "hetcoll-schedule"
_FLOW, _CHILD, _SLOT = attrgetter("flow"), attrgetter("child"), attrgetter("slot")
VERSION = 1
#: Most messages one schedule may send: segments times the messages of each segment (one
#: per tree edge and relay hop), summed over its flows (:attr:`Schedule.transfers`).  Its
#: program, its simulation and a run all grow with it, so more is refused rather than run:
#: at this many, planning and simulating take seconds and a few hundred MB with every
#: planner (``benchmarks/simulated/bench_cap.py``).
MAX_TRANSFERS = 2**18
#: ... and at most this many for a schedule with a send order (a multi-tree timetable,
#: :attr:`Schedule.timetable`, or a node-by-node send order), which the simulator's
#: timetable and send-order shortcuts run about ten times faster per message than its event
#: loop (:mod:`hetcoll.simulator.timetable`, :mod:`hetcoll.simulator.ordered`); simulated
#: by the event loop (a model the shortcuts do not cover) it is held to
#: :data:`MAX_TRANSFERS` (``bench_cap.py``)
MAX_TIMETABLE_TRANSFERS = 2**20
#: ... and at most this many when simulated under shared contention (max-min fair share),
#: where a message costs about eight times as much to simulate (``bench_cap.py``)
MAX_SHARED_TRANSFERS = MAX_TRANSFERS // 8
# the keys of a schedule document, of a flow and of a hypercube: anything else is an error
_SCHEDULE_KEYS = (
    "format",
    "version",
    "collective",
    "algorithm",
    "nbytes",
    "model",
    "params",
    "flows",
    "hypercube",
    "order",
    "sizes",
    "chain",
    "stagger",
)


@dataclass(frozen=True)
class Schedule:
    """What a planner returns: a collective as flows over ordered trees, or a hypercube.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    algorithm : str
        The planner that produced it.
    nbytes : int
        Message size per buffer, in bytes.
    flows : sequence of Flow
        The trees; flows of one buffer share root and members and partition its bytes.
        Empty for a hypercube schedule.
    params : mapping
        The planner options used, for provenance (JSON-serialisable).
    model : str or mapping, optional
        The cost model the planner planned for (``CostModel.to_spec()``), for provenance.
    hypercube : Hypercube, optional
        For ``allreduce``, ``allgather`` and ``barrier``: the embedding every member runs the
        hypercube algorithm on (then ``flows`` is empty); ``nbytes`` is each member's
        contribution (0 for a barrier).
    order : mapping, optional
        For several flows: ``order[node]`` lists :class:`~hetcoll.patterns.OrderedSend`
        entries (``(flow index, child)`` and optionally a lag and a slot), every send of
        ``node`` across its flows, in the order it should issue them (a planner that
        interleaves trees on shared senders says so here).  Without it a node's sends go
        flow by flow.  It describes one *period*: a pair listed ``m`` times stands for ``m``
        consecutive segments of its flow, so the ``j``-th listing in period ``p`` sends
        segment ``p m + j`` (a multi-tree schedule whose trees carry different numbers of
        slices per period; ``m = 1``: segment by segment).  A listing may carry a third
        element, a *lag* ``d >= 0``: it sends in period ``p`` the segment of period
        ``p - d`` (a node forwards what it received in an earlier period: a periodic
        timetable whose transfers of one slice do not all fit in one period).  With a fourth
        element, a *slot* (the transfer's rank in one period of a timetable, the same
        number at its sender and receiver), ``order`` is a **timetable**: every node also
        receives in slot order, and its sends, and its receives, each run strictly one
        after the other in that order (each depends on the previous one), so the ports
        follow the timetable's order and the period it achieves is at most the
        timetable's (a self-timed execution of a feasible periodic schedule).  Per-root
        flows take an order of ``[flow, peer, 0, slot]`` listings, one per segment, the
        peer a ``reduce`` flow's parent (:func:`hetcoll.perroot.check_per_root_order`).
    sizes : mapping, optional
        For a collective of blocks (``gather``, ``scatter``, ``allgather``,
        ``reduce_scatter``): each member's block in bytes (the v-variants); without it every
        block is ``nbytes``.
    chain : str
        How a per-root timetable (per-root flows with an ``order``) chains a node's sends:
        ``"rank"`` (the default) each after the node's previous send; ``"edge"`` a window
        of sends in flight per edge, in proportion to the edge's bytes, its sends to
        different peers at once (:func:`hetcoll.perroot.windows`: the planner's choice for
        a model whose nodes send concurrently, sharing their NIC as the packing assumes);
        ``"peer"`` one send in flight per edge, the flows' first segments phased;
        ``"kind"`` windows per edge and kind of flow (reduce, bcast), twice those of each
        kind's bytes (:func:`hetcoll.perroot.per_root_program`).
    stagger : int
        Under ``chain="edge"`` or ``"kind"``: bytes of the first segment of every per-root flow of
        several segments (0: none), the flow's segments of its size following from there,
        so that the sends of an edge's window end apart and one's lead overlaps the
        others' bytes (:func:`hetcoll.perroot.per_root_program`).  Under ``"peer"``: the
        unit of the flows' phased first segments (0: none; ``hetcoll.perroot._phases``).
        The planner makes it a multiple of the elements a reduction combines.
    listed_starts : mapping, optional
        Not part of the schedule (left out of :meth:`to_dict`, so of JSON and of other
        ranks, and of equality, ``repr`` and pickles): a planner's hint, per node the very
        tuple of ``order[node]`` and when its own run starts each of those sends
        (``multi_tree``'s multi-port list schedule).  The simulator takes it only where
        ``order`` holds those tuples and it solves the run's equations exactly.

    Notes
    -----
    **Rooted collectives** (:data:`ROOTED_COLLECTIVES`): ``reduce`` has flows of kind
    ``reduce`` partitioning the ``nbytes`` every member contributes; ``gather`` and
    ``scatter`` one flow of their kind over the block buffer (``nbytes`` per member, or
    ``sizes``); ``allreduce`` and ``allgather`` (without a hypercube) a reduce or gather
    followed by ``bcast`` flows from the same root over the same bytes; ``reduce_scatter``
    a reduce of every member's vector of blocks followed by a scatter of them.  Every flow
    has the same root and members; up flows come first (see :class:`Flow` and
    :func:`hetcoll.lowering.rooted_program`).

    **Per-root flows** (:attr:`per_root`, :mod:`hetcoll.perroot`): an ``allgather`` of
    ``bcast`` flows only, each member's block (a contiguous range of the result buffer,
    :meth:`block_offsets`) broadcast from that member over its own trees; a
    ``reduce_scatter`` of ``reduce`` flows only, each block reduced to its owner over the
    owner's trees; an ``allreduce`` whose reduce flows (then bcast flows) have several
    roots: each root reduces its share of the vector and broadcasts it back.
    """

    collective: str
    algorithm: str
    nbytes: int
    flows: tuple[Flow, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    model: Any = None
    hypercube: Hypercube | None = None
    order: Mapping[str, tuple[OrderedSend, ...]] | None = None
    sizes: Mapping[str, int] | None = None
    chain: str = "rank"
    stagger: int = 0
    listed_starts: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.flows, list | tuple):
            raise ScheduleError(f"flows: must be a list of Flow, got {kind_of(self.flows)}")
        object.__setattr__(self, "flows", tuple(self.flows))
        for k, f in enumerate(self.flows):
            if not isinstance(f, Flow):
                raise ScheduleError(f"flows[{k}]: must be a Flow, got {kind_of(f)}")
        if not isinstance(self.params, Mapping):
            raise ScheduleError(f"params: must be an object, got {kind_of(self.params)}")
        object.__setattr__(self, "params", dict(self.params))
        if not isinstance(self.collective, str) or self.collective not in COLLECTIVES:
            raise ScheduleError(
                f"unknown collective {self.collective!r}; choose from: {', '.join(COLLECTIVES)}"
            )
        if not isinstance(self.algorithm, str):
            raise ScheduleError(f"algorithm: must be a string, got {kind_of(self.algorithm)}")
        object.__setattr__(self, "nbytes", count(self.nbytes, "size", "nbytes"))
        if self.model is not None:
            object.__setattr__(self, "model", _model_spec(self.model))
        if self.order is not None:
            object.__setattr__(self, "order", _order(self.order, len(self.flows)))
        if self.sizes is not None:
            self._check_sizes()
        if self.chain not in CHAINS:
            raise ScheduleError(f"chain: one of {', '.join(CHAINS)}, not {self.chain!r}")
        object.__setattr__(self, "stagger", count(self.stagger, "size", "stagger"))
        if self.listed_starts is not None and not isinstance(self.listed_starts, Mapping):
            raise ScheduleError(f"listed_starts: a mapping, not {kind_of(self.listed_starts)}")
        if self.chain == "kind" and self.order is not None:
            raise ScheduleError('chain "kind": flows in rounds, not in a timetable (order)')
        if self.stagger and self.chain == "rank":
            raise ScheduleError('stagger: only under chain "edge", "peer" or "kind"')
        if self.hypercube is not None:
            self._check_hypercube()
            return
        if not self.flows:
            raise ScheduleError("a schedule needs at least one flow")
        if self.per_root:
            if self.order is not None:
                check_per_root_order(self.flows, self.order)
            check_per_root(
                self.collective,
                self.flows,
                dict.fromkeys(self.flows[0].tree.nodes, self.nbytes)
                if self.sizes is None
                else self.sizes,
            )
        elif self.rooted:
            self._check_rooted()
        else:
            self._check_buffers()
        listed = bool(self.order) and not self.per_root and not self.rooted
        check_transfers(self.flows, MAX_TIMETABLE_TRANSFERS if listed else MAX_TRANSFERS)
        if self.order is not None and not self.per_root:
            self._check_order()

    def __getstate__(self) -> dict[str, Any]:
        """A pickle leaves out :attr:`listed_starts` (its order's tuples would be others)."""
        state = dict(self.__dict__)
        state.pop("listed_starts", None)
        return state

    @property
    def rooted(self) -> bool:
        """Whether this is a schedule of rooted flows (reduce, gather, scatter, alone or
        followed by a flow from the same root), as opposed to a broadcast's or a cube's."""
        return self.hypercube is None and (
            self.collective in ROOTED_COLLECTIVES or any(f.kind != "bcast" for f in self.flows)
        )

    @property
    def per_root(self) -> bool:
        """Whether this is a schedule of per-root flows (:mod:`hetcoll.perroot`): an
        allgather of ``bcast`` flows from every member, a reduce-scatter of ``reduce`` flows
        to every member, an allreduce of reduce flows then bcast flows of several roots (or
        of one, with a timetable: :func:`~hetcoll.perroot.is_per_root`)."""
        return self.hypercube is None and is_per_root(self.collective, self.flows, self.timetable)

    def block_offsets(self) -> dict[str, int]:
        """Where each member's block starts in the buffer of a per-root allgather or
        reduce-scatter (its flows' lowest offset), in member order."""
        ranges = block_ranges(self.flows)
        return {m: ranges[m][0] for m in self.members()}

    def blocks(self) -> dict[str, int]:
        """Each member's block in bytes (``sizes``, else ``nbytes`` each), in member order."""
        members = self.members()
        if self.sizes is not None:
            return {m: self.sizes[m] for m in members}
        return dict.fromkeys(members, self.nbytes)

    def _check_sizes(self) -> None:
        sizes = mapping(self.sizes, "sizes")
        if self.collective not in BLOCK_COLLECTIVES:
            raise ScheduleError(
                f"sizes: only a collective of blocks ({', '.join(BLOCK_COLLECTIVES)}) has "
                f"per-member sizes, not a {self.collective}"
            )
        checked = {node_id(k, "sizes"): count(v, "size", f"sizes[{k!r}]") for k, v in sizes.items()}
        object.__setattr__(self, "sizes", checked)

    def _check_rooted(self) -> None:
        kinds = ROOTED_COLLECTIVES.get(self.collective)
        if kinds is None:
            raise ScheduleError(
                f"flows[0].kind: a {self.collective} moves data down from its root (kind "
                f"'bcast'), got {next(f.kind for f in self.flows if f.kind != 'bcast')!r}"
            )
        if self.order is not None:
            raise ScheduleError(f"order: a {self.collective} takes its order from its trees")
        up, down = kinds
        first = self.flows[0].tree
        members = set(first.nodes)
        seen_down = False
        for k, f in enumerate(self.flows):
            if f.kind not in kinds:
                expected = " or ".join(repr(x) for x in kinds if x)
                raise ScheduleError(
                    f"flows[{k}].kind: a {self.collective} has flows of kind {expected}, "
                    f"got {f.kind!r}"
                )
            if f.kind == down:
                seen_down = True
            elif seen_down:
                raise ScheduleError(f"flows[{k}]: the {up} flows come before the {down} flows")
            if f.buffer:
                raise ScheduleError(f"flows[{k}].buffer: a {self.collective} moves buffer 0")
            if f.tree.root != first.root or set(f.tree.nodes) != members:
                raise ScheduleError(f"flows[{k}]: every flow must share the root and the members")
        if self.sizes is not None and set(self.sizes) != members:
            extra = sorted(set(self.sizes) - members) or sorted(members - set(self.sizes))
            raise ScheduleError(
                f"sizes: must give the block of every member and no other node; {extra[0]!r} "
                + ("is not a member" if extra[0] not in members else "is missing")
            )
        total = sum(self.blocks().values())
        vector = total if self.collective == "reduce_scatter" else self.nbytes
        for kind in kinds:
            flows = [f for f in self.flows if f.kind == kind]
            if kind is None:
                continue
            if not flows:
                raise ScheduleError(f"a {self.collective} needs a flow of kind {kind!r}")
            if kind in ("gather", "scatter"):
                if len(flows) > 1 or flows[0].nbytes != total:
                    raise ScheduleError(
                        f"a {self.collective} has one {kind} flow over the {total} bytes of "
                        f"its blocks, got {len(flows)} flow(s) of "
                        f"{', '.join(str(f.nbytes) for f in flows)} bytes"
                    )
                continue
            size = total if kind == "bcast" and self.collective == "allgather" else vector
            covered = 0
            for f in sorted(flows, key=lambda f: f.offset):
                if f.offset != covered:
                    raise ScheduleError(
                        f"the {kind} flows must partition bytes [0, {size}); gap or overlap "
                        f"at byte {min(covered, f.offset)}"
                    )
                covered += f.nbytes
            if covered != size:
                raise ScheduleError(f"the {kind} flows cover {covered} bytes, of {size}")

    @property
    def transfers(self) -> int:
        """Messages the schedule sends in all (each flow's segments times its edges and
        relay hops; a hypercube's exchanges): at most :data:`MAX_TRANSFERS`
        (:data:`MAX_TIMETABLE_TRANSFERS` for a multi-tree timetable)."""
        if self.hypercube is not None:
            return self.hypercube.dims * len(self.hypercube.positions) + 2 * len(
                self.hypercube.folds
            )
        return sum(f.transfers for f in self.flows)

    @property
    def timetable(self) -> bool:
        """Whether ``order`` is a timetable (its listings carry slots): see ``order``.
        Found once per schedule (a multi-port message's order lists 490 000 sends at
        n = 50, and the planner and the simulator ask a dozen times)."""
        found = self.__dict__.get("_timetable")
        if found is None:
            found = bool(self.order) and any(
                s.slot is not None for sends in self.order.values() for s in sends
            )
            self.__dict__["_timetable"] = found  # (not a field: frozen all the same)
        return found

    def _check_order(self) -> None:
        timetable = self.timetable
        if timetable:
            if any(None in map(_SLOT, sends) for sends in self.order.values()):
                raise ScheduleError("order: a timetable gives [flow, child, lag, slot] everywhere")
            if any(f.relays for f in self.flows):
                raise ScheduleError("order: a timetable cannot have relayed edges")
        edges: dict[str, set[tuple[int, str]]] = {}
        for fi, flow in enumerate(self.flows):
            for parent, kids in flow.tree.children.items():
                edges.setdefault(parent, set()).update((fi, c) for c in kids)
        times: dict[int, int] = {}  # a flow's sends per period: the same on each of its edges
        for node, sends in self.order.items():
            if node not in edges:  # an unknown node, or one that sends nothing
                raise ScheduleError(f"order: {node!r} sends nothing in any flow")
            # per (flow, child) in order of first appearance: a timetable's entries one by
            # one (each its own object: 10^5 at n = 50), another order's per distinct
            # entry object (it repeats a few hundred objects 490 000 times)
            per_send: Counter[tuple[int, str]]
            if timetable:
                per_send = Counter(zip(map(_FLOW, sends), map(_CHILD, sends), strict=True))
            else:
                per_entry = Counter(map(id, sends))
                entry = dict(zip(map(id, sends), sends, strict=True))
                per_send = Counter()
                for x, m in per_entry.items():
                    per_send[(entry[x].flow, entry[x].child)] += m
            if set(per_send) != edges[node]:
                raise ScheduleError(
                    f"order[{node!r}]: must list each (flow, child) send of {node!r} (and no other)"
                )
            for (fi, child), m in per_send.items():
                if times.setdefault(fi, m) != m:
                    raise ScheduleError(
                        f"order[{node!r}]: lists ({fi}, {child!r}) {m} time(s) but other sends"
                        f" of flow {fi} {times[fi]} time(s); a flow sends as many segments"
                        " per period on each of its edges"
                    )

    def _check_hypercube(self) -> None:
        cube = self.hypercube
        if not isinstance(cube, Hypercube):
            raise ScheduleError(f"hypercube: expected a Hypercube, got {type(cube).__name__}")
        if self.flows:
            raise ScheduleError("a hypercube schedule has no flows")
        if self.collective not in HYPERCUBE_COLLECTIVES:
            raise ScheduleError(
                f"a hypercube plans {', '.join(HYPERCUBE_COLLECTIVES)}, not {self.collective!r}"
            )
        expected = {"allgather": ("concat",), "barrier": ("none",)}.get(self.collective, REDUCE_OPS)
        if cube.combine not in expected:
            raise ScheduleError(
                f"hypercube.combine: an {self.collective} combines with "
                f"{' or '.join(expected) if len(expected) < 3 else 'a reduction operator'}, "
                f"got {cube.combine!r}"
            )
        if self.collective == "barrier" and self.nbytes:
            raise ScheduleError(f"nbytes: a barrier moves no data, got {self.nbytes}")

    def _check_buffers(self) -> None:
        by_buffer: dict[int, list[Flow]] = {}
        for f in self.flows:
            by_buffer.setdefault(f.buffer, []).append(f)
        many = self.collective == "multi_multicast"
        for k, f in enumerate(self.flows):
            if f.buffer >= len(by_buffer) or (f.buffer and not many):
                raise ScheduleError(
                    f"flows[{k}].buffer: is {f.buffer} but "
                    + (
                        f"the schedule moves {len(by_buffer)} buffers, numbered from 0"
                        if many
                        else f"a {self.collective} moves one buffer, number 0"
                    )
                )
        for b, flows in by_buffer.items():
            first = flows[0].tree
            for f in flows[1:]:
                if f.tree.root != first.root or set(f.tree.nodes) != set(first.nodes):
                    raise ScheduleError(
                        f"buffer {b}: its flows must share the root and the members"
                    )
            covered = 0
            for f in sorted(flows, key=lambda f: f.offset):
                if f.offset != covered:
                    raise ScheduleError(
                        f"buffer {b}: flows must partition bytes [0, {self.nbytes}); "
                        f"gap or overlap at byte {min(covered, f.offset)}"
                    )
                covered += f.nbytes
            if covered != self.nbytes:
                raise ScheduleError(
                    f"buffer {b}: flows cover {covered} bytes, the message has {self.nbytes}"
                )

    # -- views --------------------------------------------------------------------------------

    @property
    def buffers(self) -> tuple[int, ...]:
        return tuple(sorted({f.buffer for f in self.flows}))

    @property
    def roots(self) -> dict[int, str]:
        """Root (source) of each buffer (none for a hypercube schedule)."""
        return {f.buffer: f.tree.root for f in self.flows}

    @property
    def root(self) -> str:
        """The root of buffer 0 (the source of a broadcast or multicast)."""
        if self.hypercube is not None:
            raise ScheduleError(f"an {self.collective} over a hypercube has no root")
        return self.roots[min(self.roots)]

    def members(self, buffer: int = 0) -> tuple[str, ...]:
        """Nodes taking part in ``buffer``'s collective, root first."""
        if self.hypercube is not None and buffer == 0:
            return self.hypercube.nodes
        for f in self.flows:
            if f.buffer == buffer:
                return f.tree.nodes
        raise ScheduleError(f"buffer {buffer!r}: no such buffer (the schedule has {self.buffers})")

    @property
    def participants(self) -> tuple[str, ...]:
        """Every node with something to do, in order of first appearance."""
        if self.hypercube is not None:
            return self.hypercube.nodes
        if len(self.flows) == 1:
            return self.flows[0].tree.nodes
        seen: dict[str, None] = {}
        for f in self.flows:
            seen.update(dict.fromkeys(f.tree.nodes))
        for f in self.flows:  # relays that are not members of the tree still work
            for path in f.relays:
                seen.update(dict.fromkeys(path))
        return tuple(seen)

    @property
    def tree(self) -> Tree:
        """The tree of a single-flow schedule."""
        if self.hypercube is not None:
            raise ScheduleError("a hypercube schedule has no tree; use .hypercube")
        if len(self.flows) != 1:
            raise ScheduleError("this schedule has several flows; use .flows")
        return self.flows[0].tree

    def relabelled(self, algorithm: str, params: Mapping[str, Any]) -> Schedule:
        """This schedule under another ``algorithm`` name and ``params`` (what it records
        of where it came from), the rest shared, not checked again: ``replace(self,
        algorithm=..., params=...)`` without validating the flows and the order anew
        (``auto`` returns its winner so: 10^5 order entries at a 1 GiB multi-tree), none
        of whose checks reads the two fields."""
        if not isinstance(algorithm, str):
            raise ScheduleError(f"algorithm: must be a string, got {kind_of(algorithm)}")
        if not isinstance(params, Mapping):
            raise ScheduleError(f"params: must be an object, got {kind_of(params)}")
        out = object.__new__(Schedule)
        out.__dict__.update(self.__dict__, algorithm=algorithm, params=dict(params))
        return out

    # -- lowering -----------------------------------------------------------------------------

    def program(self) -> Program:
        """Lower to per-rank ordered ops, the :class:`~hetcoll.program.Program` the simulator
        and the runtime execute (:mod:`hetcoll.lowering`: a single tree, several flows with
        relays and a send order or timetable, a hypercube embedding)."""
        if self.hypercube is not None:
            return hypercube_program(self.hypercube, self.nbytes)
        if self.per_root:
            return per_root_program(self.flows, self.order, self.chain, self.stagger)
        if self.rooted:
            return rooted_program(self.flows, self.blocks())
        if len(self.flows) == 1 and not self.order and not self.flows[0].relays:
            return tree_program(self.flows[0])
        return flows_program(self.flows, self.order or {}, self.timetable)

    def validate(self, platform=None, members: Iterable[str] | None = None) -> None:
        """Check the schedule; with ``platform``, that it does its job there.

        Parameters
        ----------
        platform : Platform, optional
            Every node the schedule names must be one of its nodes, and a ``bcast`` must
            deliver to every one of them (see :meth:`check_delivery`).
        members : iterable of str, optional
            Nodes that must receive (the member set of a multicast it is run on).

        Raises
        ------
        ScheduleError
            Naming the first node that receives nothing, the first op sent before its data
            is held, a deadlock, ...
        UnknownNodeError
            A node the platform does not have.
        """
        if platform is not None or members is not None:
            check_delivery(self, platform, members)
        self.program().validate()

    def check_delivery(self, platform=None, members: Iterable[str] | None = None) -> None:
        """See :func:`check_delivery`."""
        check_delivery(self, platform, members)

    def _check_delivery(self, platform, members) -> None:
        if platform is not None:
            platform.indices(self.participants)
        required: list[tuple[str, Sequence[str]]] = []
        if platform is not None and self.collective == "bcast":
            required.append((f"a bcast on a platform of {len(platform)} nodes", platform.ids))
        if members is not None:
            if isinstance(members, str):
                members = [members]
            required.append((f"an {self.collective} to these members", list(members)))
        for what, nodes in required:
            for buffer in self.buffers or (0,):
                reached = set(self.members(buffer))
                missing = next((n for n in nodes if n not in reached), None)
                if missing is not None:
                    of = f"buffer {buffer} of " if len(self.buffers) > 1 else ""
                    raise ScheduleError(
                        f"node {missing!r} receives nothing: {what} must reach every one, "
                        f"{of}this {self.algorithm!r} schedule reaches {len(reached)}"
                    )

    # -- serialisation ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "collective": self.collective,
            "algorithm": self.algorithm,
            "nbytes": self.nbytes,
        }
        if self.model is not None:
            out["model"] = self.model
        out["params"] = dict(self.params)
        out["flows"] = [f.to_dict() for f in self.flows]
        if self.hypercube is not None:
            out["hypercube"] = self.hypercube.to_dict()
        if self.order is not None:
            out["order"] = {n: [s.to_list() for s in sends] for n, sends in self.order.items()}
        if self.sizes is not None:
            out["sizes"] = dict(self.sizes)
        if self.chain != "rank":
            out["chain"] = self.chain
        if self.stagger:
            out["stagger"] = self.stagger
        return out

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Schedule:
        """Read a schedule written by :meth:`to_dict`.

        Every field is checked, and a field the format does not have is an error (a typo
        would otherwise be ignored); :class:`ScheduleError` names the culprit
        (``flows[0].children['1']: must be a list of node ids, got a string '2345678'``).
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ScheduleError(f'not a hetcoll schedule (expected "format": "{FORMAT}")')
        version = data.get("version")
        if isinstance(version, bool) or version != VERSION:
            raise ScheduleError(f"unsupported schedule version {version!r}")
        only_keys(data, _SCHEDULE_KEYS, "")
        flows = data.get("flows", [])
        if not isinstance(flows, list):
            raise ScheduleError(f"flows: must be a list, got {kind_of(flows)}")
        return cls(
            required(data, "collective", ""),
            required(data, "algorithm", ""),
            required(data, "nbytes", ""),
            tuple(Flow.from_dict(f, f"flows[{k}]") for k, f in enumerate(flows)),
            data.get("params", {}),
            data.get("model"),
            Hypercube.from_dict(data["hypercube"]) if "hypercube" in data else None,
            data.get("order"),
            data.get("sizes"),
            data.get("chain", "rank"),
            data.get("stagger", 0),
        )

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        from .files import parse_document

        return cls.from_dict(parse_document(text, "json", ScheduleError))

    @staticmethod
    def concurrent(schedules: Sequence[Schedule], algorithm: str | None = None) -> Schedule:
        """Several schedules run at the same time (multiple multicast): one buffer each.

        Their flows are renumbered onto buffers ``0..k-1`` in the given order; every schedule
        must have the same message size.
        """
        if not schedules:
            raise ScheduleError("concurrent: no schedules given")
        for k, s in enumerate(schedules):
            if not isinstance(s, Schedule):
                raise TypeError(f"concurrent: schedules[{k}] is not a Schedule: {s!r}")
        sizes = {s.nbytes for s in schedules}
        if len(sizes) != 1:
            raise ScheduleError(f"concurrent: schedules have different sizes {sorted(sizes)}")
        flows = []
        for b, s in enumerate(schedules):
            if len(s.buffers) != 1:
                raise ScheduleError("concurrent: each schedule must move a single buffer")
            flows += [Flow(f.tree, f.nbytes, f.offset, b, f.segment_size) for f in s.flows]
        names = sorted({s.algorithm for s in schedules})
        return Schedule(
            "multi_multicast",
            algorithm or "+".join(names),
            schedules[0].nbytes,
            tuple(flows),
            {"parts": [s.params for s in schedules]},
            schedules[0].model,
        )


def transfer_budget(contention: str) -> int:
    """Most messages one request may simulate under a model of this ``contention``."""
    return MAX_SHARED_TRANSFERS if contention == "shared" else MAX_TRANSFERS


def check_transfers(flows: Sequence[Flow], most: int = MAX_TRANSFERS, what: str = "") -> None:
    """Refuse flows that send more than ``most`` messages in all, in one line that names the
    smallest segment size that would do (:class:`ScheduleError`); ``what``: the reason for
    a ``most`` of its own, for the message."""
    total = sum(f.transfers for f in flows)
    if total <= most:
        return
    sizes = {f.segment_size for f in flows}
    seg = f"segments of {min(sizes)} bytes" if len(sizes) == 1 and None not in sizes else "segments"
    hint = "use larger segments"
    if (least := _least_segment(flows, most)) is not None:
        hint = f"use segments of at least {least} bytes"
    elif sum(f.hops for f in flows) > most:
        hint = "plan for fewer nodes"
    raise ScheduleError(
        f"segment_size: {max(f.nbytes for f in flows)} bytes in {seg} make "
        f"{total} messages, more than {most} per schedule{what}; {hint}"
    )


def check_simulations(
    who: str,
    candidates: int,
    nbytes: int,
    segment_size: int | None,
    receivers: int,
    otherwise: str = "",
    most: int = MAX_TRANSFERS,
) -> int:
    """The messages ``who`` simulates at least, comparing ``candidates`` schedules of
    ``nbytes`` in ``segment_size`` segments that each reach ``receivers`` nodes; a
    :class:`PlannerError` in one line (the segment size that would do) when that is more
    than ``most`` (:func:`transfer_budget`), the budget of one request however many
    schedules it simulates (``otherwise``: another way out, for the message)."""
    chunks = -(-nbytes // segment_size) if segment_size and nbytes else 1
    total = candidates * chunks * receivers
    if total > most:
        each = most // (candidates * receivers) if candidates * receivers else 0
        hint = "plan for fewer nodes"
        if each >= 1 and segment_size:
            hint = f"use segments of at least {max(1, -(-nbytes // each))} bytes"
        raise PlannerError(
            f"{who} simulates {candidates} schedules of {chunks * receivers} messages or more "
            f"each, more than {most} in all; {hint}{otherwise}"
        )
    return total


def _least_segment(flows: Sequence[Flow], most: int) -> int | None:
    """The smallest segment size at which ``flows`` send at most ``most`` messages (None
    if none does): a bisection, the count falls as segments grow."""

    def fits(s: int) -> bool:
        return sum(-(-f.nbytes // s) * f.hops if f.nbytes else f.hops for f in flows) <= most

    hi = max(f.nbytes for f in flows)
    if hi == 0 or not fits(hi):
        return None
    lo = 1  # fits(hi); find the least s with fits(s)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def check_delivery(schedule: Schedule, platform=None, members: Iterable[str] | None = None) -> None:
    """Check that ``schedule`` delivers where it must: every node it names is one of
    ``platform``'s, a ``bcast`` reaches every node of ``platform``, and every buffer reaches
    every one of ``members``.

    Raises :class:`ScheduleError` naming the first node (in platform order, or in ``members``
    order) that receives nothing, :class:`~hetcoll.errors.UnknownNodeError` for a node the
    platform does not have, ``TypeError`` for arguments of the wrong kind.  O(N + size of the
    trees).
    """
    from .platform import Platform

    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule: expected a Schedule, got {type(schedule).__name__}")
    if platform is not None and not isinstance(platform, Platform):
        raise TypeError(f"platform: expected a Platform, got {type(platform).__name__}")
    schedule._check_delivery(platform, members)


def _model_spec(model: Any) -> str | dict[str, Any]:
    """The canonical spec of a provenance model (``"tini"``, ``{"name": "postal", ...}``)."""
    from .models import get_model  # models -> platform -> ...: late import avoids a cycle

    try:
        return get_model(model).to_spec()
    except HetcollError as exc:  # "model: ..." once, whatever get_model's message starts with
        raise ScheduleError(str(exc) if str(exc).startswith("model") else f"model: {exc}") from None


def _plain_send(send: OrderedSend, nflows: int) -> bool:
    """Whether an :class:`OrderedSend` already passes :func:`_order`'s checks unchanged:
    plain ints in range, a non-empty string child (the common case, in a hurry: a
    timetable lists 10^5 sends)."""
    lag, slot = send.lag, send.slot
    return (
        type(send.flow) is int
        and 0 <= send.flow < nflows
        and type(send.child) is str
        and send.child != ""
        and type(lag) is int
        and 0 <= lag <= MAX_SIZE
        and (slot is None or (type(slot) is int and 0 <= slot <= MAX_SIZE))
    )


class ListedOrder(dict):
    """An ``order`` a planner listed itself, each entry an :class:`OrderedSend` made of
    plain ints ``0 <= flow <`` the schedule's flows, ``0 <= lag, slot <= MAX_SIZE`` and a
    child's node id: what :func:`_order` would check entry by entry and keep as it is.  A
    :class:`Schedule` takes its entries unchecked (its nodes and the rest of the schedule
    are checked as always): ``multi_tree`` lists 10^5 of them for a 1 GiB message, and
    ``tests/test_auto_work.py`` puts its orders through the full check."""


def _order(order: Any, nflows: int) -> dict[str, tuple[OrderedSend, ...]]:
    """``order`` checked: node -> list of :class:`OrderedSend`, or of their JSON lists
    ``[flow, child]``, ``[flow, child, lag]``, ``[flow, child, lag, slot]`` (a
    :class:`ListedOrder`: its nodes only)."""
    if type(order) is ListedOrder:
        return {node_id(node, "order"): tuple(sends) for node, sends in order.items()}
    order = mapping(order, "order")
    out: dict[str, tuple[OrderedSend, ...]] = {}
    for node, sends in order.items():
        where = f"order[{node!r}]"
        if not isinstance(sends, list | tuple):
            raise ScheduleError(f"{where}: must be a list of [flow, child] pairs")
        checked = []
        for k, send in enumerate(sends):
            if type(send) is OrderedSend and _plain_send(send, nflows):
                checked.append(send)  # what the checks below would rebuild from it
                continue
            if isinstance(send, OrderedSend):
                send = send.to_list()
            if not isinstance(send, list | tuple) or len(send) not in (2, 3, 4):
                raise ScheduleError(
                    f"{where}[{k}]: must be [flow, child], [flow, child, lag] or "
                    "[flow, child, lag, slot]"
                )
            flow = count(send[0], "count", f"{where}[{k}][0]")
            if flow >= nflows:
                raise ScheduleError(f"{where}[{k}][0]: no flow {flow} (the schedule has {nflows})")
            extra = [count(x, "count", f"{where}[{k}][{j}]") for j, x in enumerate(send[2:], 2)]
            checked.append(OrderedSend(flow, node_id(send[1], f"{where}[{k}][1]"), *extra))
        out[node_id(node, "order")] = tuple(checked)
    return out
