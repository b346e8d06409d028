"""The send rule as one table: small programs and every op's exact times.

The rule (:mod:`hetcoll.program`): an op starts once its deps have completed; a transfer
starts once its send has started and its receive is posted; a rank's one send port, free at
``F``, takes the first send in program order that is startable by ``F`` (deps completed and
receive posted), else the first to become startable (ties: program order), and holds it
until ``send_busy`` after the transfer's start; a receive completes ``delay`` after it.

Every case gives, for every rank, each op's times in ns: a send's ``(start, end)`` (the
transfer's start, the port's release), a receive's end (the arrival).  Every engine must
reproduce them (``tests/test_send_rule.py``): the simulator's event loop and one-tree
shortcut, the executor under emulation, the native loops on a virtual MPI.  Costs are
whole microseconds, so no rounding plays a part.  A rule change is a change of this table.

The native loops time a message by the model once MPI has both ends (rendezvous) but do
not know when a receive elsewhere is posted: among their enabled sends they take the first
in program order even when its receiver posts later.  A case where that matters gives
their times too (``native``), with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hetcoll import Flow, Node, Platform, Schedule, Tree
from hetcoll.program import Chunk, Op, Program
from hetcoll.schedule import OrderedSend

US = 1e-6

Times = dict[str, list]  # rank -> per op: (start, end) of a send, end of a receive (ns)


@dataclass(frozen=True)
class Case:
    """One row of the table: a program on a platform, and the times of its ops.

    ``schedule`` when the program is a schedule's lowering (then the one-tree shortcut
    must take it when it is one tree); ``size_free`` when no cost depends on the size (the
    segment path then runs the program with every chunk made larger than a packed one);
    ``native``: the native loops' times where they differ (see the module docstring)."""

    name: str
    platform: Platform
    program: Program
    times: Times
    schedule: Schedule | None = None
    size_free: bool = True
    native: Times | None = None
    why_native: str = ""
    model: dict | str | None = field(default=None)


def postal(ids: str, latency_us, overhead_us: float = 1.0, bandwidth=None) -> Platform:
    """Nodes named by the letters of ``ids``; latencies in µs (a matrix, or one number for
    every pair); a send holds its port ``overhead_us``."""
    n = len(ids)
    lat = np.full((n, n), float(latency_us)) if np.isscalar(latency_us) else np.array(latency_us)
    lat = lat * US
    np.fill_diagonal(lat, 0.0)
    bw = None if bandwidth is None else np.full((n, n), float(bandwidth))
    model = {"name": "postal", "overhead": overhead_us * US}
    return Platform(tuple(Node(x) for x in ids), latency=lat, bandwidth=bw, model=model)


def tini(costs_us: dict[str, float]) -> Platform:
    """Sender-only costs: a send from ``v`` holds its port, and arrives, ``costs_us[v]``."""
    nodes = tuple(Node(v, t_ini=c * US) for v, c in costs_us.items())
    return Platform(nodes, model="tini")


def program(ops: dict[str, list], held: dict[str, set[int]], nchunks: int, nbytes=8) -> Program:
    """A program from ``ops[rank] = [("send"|"recv", peer, chunk, deps), ...]``."""
    chunks = tuple(Chunk(0, 0, nbytes) for _ in range(nchunks))
    return Program(
        {r: tuple(Op(k, p, c, tuple(d)) for k, p, c, d in mine) for r, mine in ops.items()},
        chunks,
        {r: frozenset(held.get(r, ())) for r in ops},
    )


def _tree_case(name, platform, tree, times, nbytes=8, seg=None, **kw) -> Case:
    s = Schedule("bcast", "table", nbytes, (Flow(tree, nbytes, segment_size=seg),))
    return Case(name, platform, s.program(), times, schedule=s, **kw)


def _cases() -> list[Case]:
    cases = []

    # r sends to a, then b, in program order although b is nearer; a postal port is busy
    # 1 µs per send, the message arrives after the latency
    cases.append(
        _tree_case(
            "program order: a port serves its sends one after the other, in order",
            postal("rab", [[0, 5, 2], [5, 0, 2], [2, 2, 0]]),
            Tree("r", {"r": ("a", "b")}),
            {"r": [(0, 1000), (1000, 2000)], "a": [5000], "b": [3000]},
        )
    )

    # a pipelined tree: m forwards segment k to x and y before segment k + 1; at 3 µs its
    # port frees with segment 0 for y and segment 1 for x both startable: program order
    cases.append(
        _tree_case(
            "segment by segment, child by child; ties go to program order",
            postal("rmxy", 2),
            Tree("r", {"r": ("m",), "m": ("x", "y")}),
            {
                "r": [(0, 1000), (1000, 2000)],
                "m": [2000, 3000, (2000, 3000), (3000, 4000), (4000, 5000), (5000, 6000)],
                "x": [4000, 6000],
                "y": [5000, 7000],
            },
            nbytes=16,
            seg=8,
        )
    )

    # node 1 forwards chunk 0 (first in program order, held once it arrives at 8 µs) and
    # sends chunk 1 (held from the start): at 0 only chunk 1's send is startable
    cases.append(
        Case(
            "a blocked first send: the free port takes the first startable one",
            tini({"0": 8, "1": 5, "2": 1}),
            program(
                {
                    "0": [("send", "1", 0, ())],
                    "1": [("recv", "0", 0, ()), ("send", "2", 0, (0,)), ("send", "2", 1, ())],
                    "2": [("recv", "1", 1, ()), ("recv", "1", 0, ())],
                },
                {"0": {0}, "1": {1}},
                2,
            ),
            {
                "0": [(0, 8000)],
                "1": [8000, (8000, 13000), (0, 5000)],
                "2": [5000, 13000],
            },
        )
    )

    # node 1 is busy 10 µs with chunk 2; chunks 0 and 1 arrive at 1 and 2 µs; at 10 µs both
    # forwards are startable and the one first in program order (chunk 1) goes first
    cases.append(
        Case(
            "a port freed with several startable sends takes the first in program order",
            tini({"0": 1, "1": 10, "2": 1, "3": 1}),
            program(
                {
                    "0": [("send", "1", 0, ()), ("send", "1", 1, ())],
                    "1": [
                        ("send", "2", 2, ()),
                        ("recv", "0", 0, ()),
                        ("recv", "0", 1, ()),
                        ("send", "3", 1, (2,)),
                        ("send", "3", 0, (1,)),
                    ],
                    "2": [("recv", "1", 2, ())],
                    "3": [("recv", "1", 1, ()), ("recv", "1", 0, ())],
                },
                {"0": {0, 1}, "1": {2}},
                3,
            ),
            {
                "0": [(0, 1000), (1000, 2000)],
                "1": [(0, 10000), 1000, 2000, (10000, 20000), (20000, 30000)],
                "2": [10000],
                "3": [20000, 30000],
            },
        )
    )

    # 21 bytes in segments of 10 at 1 B/µs: the short last segment reaches m (at 4 µs)
    # before the others (at F = 11 and F + 1 µs); m's port takes it first for x then y, the
    # first to become startable, then segment 0 for x at F; at F + 1 µs segment 0 for y
    # and segment 1 for x are both startable: program order.  The same with segments of
    # 20 000 bytes at 1 B/ns (F = 21 µs: the native segment path's large chunks)
    for name, seg, total, bw, far in (
        ("10 B", 10, 21, 1e6, 11000),
        ("20 kB", 20_000, 41_000, 1e9, 21000),
    ):
        f = far
        cases.append(
            _tree_case(
                f"none startable: the first to become startable goes (segments of {name})",
                postal("rmxy", 1, bandwidth=bw),
                Tree("r", {"r": ("m",), "m": ("x", "y")}),
                {
                    "r": [(0, 1000), (1000, 2000), (2000, 3000)],
                    "m": [f, f + 1000, 4000]
                    + [(f + k * 1000, f + (k + 1) * 1000) for k in range(4)]
                    + [(4000, 5000), (5000, 6000)],
                    "x": [2 * f, 2 * f + 2000, 6000],
                    "y": [2 * f + 1000, 2 * f + 3000, 7000],
                },
                nbytes=total,
                seg=seg,
                size_free=False,
            )
        )

    # the edge r -> a is relayed through v (store and forward), and v is a member too: v
    # forwards the relay copy after its own sends of that segment (it has none here)
    relayed = Flow(Tree("r", {"r": ("v", "a")}), 8, relays=(("r", "v", "a"),))
    s = Schedule("bcast", "table", 8, (relayed,))
    cases.append(
        Case(
            "relays: a relayed edge is store and forward",
            postal("rva", 2),
            s.program(),
            {"r": [(0, 1000), (1000, 2000)], "v": [3000, 2000, (3000, 4000)], "a": [5000]},
            schedule=s,
        )
    )

    # x posts its receive of chunk 0 only once chunk 5 arrived, at 2 µs, when m's send of
    # chunk 1 becomes startable too (its dependency arrives): none is startable before, both
    # are then, and program order puts chunk 0's first
    cases.append(
        Case(
            "clear-to-send: a send starts once its receive is posted",
            postal("mxyzw", 2),
            program(
                {
                    "w": [("send", "x", 5, ())],
                    "z": [("send", "m", 2, ())],
                    "x": [("recv", "w", 5, ()), ("recv", "m", 0, (0,))],
                    "m": [("recv", "z", 2, ()), ("send", "x", 0, ()), ("send", "y", 1, (0,))],
                    "y": [("recv", "m", 1, ())],
                },
                {"w": {5}, "z": {2}, "m": {0, 1}},
                6,
            ),
            {
                "w": [(0, 1000)],
                "z": [(0, 1000)],
                "x": [2000, 4000],
                "m": [2000, (2000, 3000), (3000, 4000)],
                "y": [5000],
            },
        )
    )

    # m's first send goes to x, whose receive is posted at 2 µs; its second to y, posted
    # at once: the second is startable first and goes first
    cases.append(
        Case(
            "clear-to-send: a later send whose receive is posted goes before",
            postal("mxyw", 2),
            program(
                {
                    "w": [("send", "x", 5, ())],
                    "x": [("recv", "w", 5, ()), ("recv", "m", 0, (0,))],
                    "m": [("send", "x", 0, ()), ("send", "y", 1, ())],
                    "y": [("recv", "m", 1, ())],
                },
                {"w": {5}, "m": {0, 1}},
                6,
            ),
            {"w": [(0, 1000)], "x": [2000, 4000], "m": [(2000, 3000), (0, 1000)], "y": [2000]},
            native={
                "w": [(0, 1000)],
                "x": [2000, 4000],
                "m": [(2000, 3000), (3000, 4000)],
                "y": [5000],
            },
            why_native="a native loop issues m's sends in program order (it cannot see "
            "x's posting): MPI holds the first until x posts, the second waits behind it",
        )
    )

    # two trees at once as a timetable: each node receives in slot order (each receive
    # posted when the previous completed) and sends strictly one after the other; a's send
    # (slot 2) waits for b to post its receive, once b's slot-1 receive is in (3 µs)
    trees = (
        Flow(Tree("r", {"r": ("a",), "a": ("b",)}), 4),
        Flow(Tree("r", {"r": ("b",), "b": ("a",)}), 4, offset=4),
    )
    order = {
        "r": (OrderedSend(0, "a", 0, 0), OrderedSend(1, "b", 0, 1)),
        "a": (OrderedSend(0, "b", 0, 2),),
        "b": (OrderedSend(1, "a", 0, 3),),
    }
    s = Schedule("bcast", "table", 8, trees, order=order)
    cases.append(
        Case(
            "multi-tree slots: a timetable's order",
            postal("rab", 2),
            s.program(),
            {
                "r": [(0, 1000), (1000, 2000)],
                "a": [2000, 5000, (3000, 4000)],
                "b": [3000, 5000, (3000, 4000)],
            },
            schedule=s,
        )
    )
    return cases


CASES = _cases()
