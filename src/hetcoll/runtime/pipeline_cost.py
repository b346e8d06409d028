"""The per-message cost a pipeline pays: every rank forwarding segments down one chain.

The ping-pong of :mod:`.probe` times a pair (or disjoint pairs) at a time and, below
1 MiB, keeps a series' *least* round trip: what a message costs while its two ranks run
and the others wait.  A pipelined broadcast keeps every rank busy at once, receiving one
segment while it forwards the previous one; where a host runs more ranks than it has
cores, each segment waits for its rank's turn on a core, a cost per message that the
least round trip never saw.  Slices chosen with the ping-pong's cost alone are then far
too small (docs/pipelined.md: chains in 256 KiB-1 MiB slices cost 1.4-2.8x native
``MPI_Bcast`` where 8 slices cost 0.8-1.0x).

So the probe also times the pipeline itself (:func:`measure_periods`): the chain of every
rank in rank order, from the first, forwarding ``k`` segments of ``s`` bytes through the
engine's own path for segments (no agreed start time: the call starts as a user's does),
for ``k`` in :data:`SEGMENTS`; the *period*, what one more segment costs the chain,
``P(s) = (T(k2) - T(k1)) / (k2 - k1)``, with ``T`` the median over :data:`REPEAT`
interleaved calls of the slowest rank's time from a barrier to its return (each rank's own
clock: no clock is shared).  The start-up and the drain of the chain cancel in the
difference; what remains is the steady state the pipeline runs at.

The fitted platform's model predicts that period as the slowest hop's send,
``max_i send_busy(i, i + 1, s)`` (:func:`predicted_periods`); the *message cost*
(:func:`message_cost`) is what the pipeline paid per message beyond it: the line through
the measured periods by segment size at 0 bytes (:func:`intercept`) minus the predicted
periods' one, clipped at 0.  The per-byte part stays the round trips' (their size curve
included), which measure it over many more sizes.  :func:`with_message_cost`
adds it to every node's ``t_ini`` (the host's share, like a context switch, is every
rank's), so that a planner charges each slice what the pipeline pays for it.  Natively
only: under emulation the modelled costs are timed waits that ranks sharing a core do not
stretch, and the engine's own work is charged separately
(:data:`hetcoll.choice.ENGINE_MESSAGE_COST`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from ..platform import Platform
from ..program import Chunk, Op, Program
from .comm import ScheduleComm
from .executor import ByteRanges

__all__ = [
    "REPEAT",
    "SEGMENTS",
    "SEGMENT_SIZES",
    "chain_program",
    "intercept",
    "measure_periods",
    "message_cost",
    "predicted_periods",
    "with_message_cost",
]

#: segment sizes (bytes) the chain is timed at: the slices a large broadcast is cut into
SEGMENT_SIZES = (32 << 10, 512 << 10)
#: segments per timed chain: the period is the difference of the two over their difference
SEGMENTS = (4, 16)
#: calls per (size, segments), interleaved; their median is kept
REPEAT = 5


def chain_program(nodes, segments: int, nbytes: int) -> Program:
    """``nodes[0]`` sends ``segments`` chunks of ``nbytes`` (one buffer, side by side) to
    ``nodes[1]``, which forwards each once it is here, and so on to the last.

    >>> p = chain_program(["a", "b", "c"], 2, 8)
    >>> [(o.kind, o.peer, o.chunk, o.deps) for o in p.ops["b"]]
    [('recv', 'a', 0, ()), ('send', 'c', 0, (0,)), ('recv', 'a', 1, ()), ('send', 'c', 1, (2,))]
    >>> [c.offset for c in p.chunks], sorted(p.initial["a"])
    ([0, 8], [0, 1])
    """
    chunks = tuple(Chunk(0, j * nbytes, nbytes) for j in range(segments))
    ops: dict[str, list[Op]] = {node: [] for node in nodes}
    for i, node in enumerate(nodes):
        for j in range(segments):
            deps: tuple[int, ...] = ()
            if i:
                ops[node].append(Op("recv", nodes[i - 1], j))
                deps = (len(ops[node]) - 1,)
            if i + 1 < len(nodes):
                ops[node].append(Op("send", nodes[i + 1], j, deps))
    initial = {
        node: frozenset(range(segments)) if i == 0 else frozenset() for i, node in enumerate(nodes)
    }
    return Program({k: tuple(v) for k, v in ops.items()}, chunks, initial)


def measure_periods(
    hc: ScheduleComm,
    sizes=SEGMENT_SIZES,
    segments: tuple[int, int] = SEGMENTS,
    repeat: int = REPEAT,
) -> dict[int, float]:
    """Per segment size, the chain's period in seconds (module doc; collective, the same
    on every rank).  Needs at least 2 ranks."""
    from mpi4py import MPI

    k1, k2 = segments
    buf = memoryview(bytearray(max(sizes) * k2))
    programs = {(s, k): chain_program(hc.nodes, k, s) for s in sizes for k in segments}
    times: dict[tuple[int, int], list[float]] = {key: [] for key in programs}
    for _ in range(repeat + 1):  # the first pass warms up (pages, the engine's plans)
        for key, program in programs.items():
            hc.comm.Barrier()
            t0 = time.monotonic_ns()
            hc.run(program, ByteRanges(program.chunks, {0: buf}), "probe pipeline")
            took = hc.comm.allreduce(time.monotonic_ns() - t0, op=MPI.MAX) / 1e9
            times[key].append(took)
    median = {key: float(np.median(t[1:])) for key, t in times.items()}
    return {s: (median[s, k2] - median[s, k1]) / (k2 - k1) for s in sizes}


def predicted_periods(platform: Platform, sizes) -> dict[int, float]:
    """Per segment size, the period the platform's model predicts for the chain of its
    nodes in order: the slowest hop's send (its size curve included).

    >>> from hetcoll.platform import nodes_from_costs
    >>> p = Platform(nodes_from_costs([1e-4, 3e-4, 5e-4], [1e-9, 1e-9, 1e-9]), model="tini")
    >>> {s: round(t, 9) for s, t in predicted_periods(p, [0, 1000]).items()}
    {0: 0.0003, 1000: 0.000301}
    """
    from ..models import get_model

    bound = get_model(platform.model).bind(platform)
    n = len(platform.nodes)
    return {
        int(s): max(float(bound.send_busy(i, i + 1, int(s))) for i in range(n - 1)) for s in sizes
    }


def intercept(periods: dict[int, float]) -> float:
    """The cost per segment of 0 bytes: the least-squares line through the periods by
    segment size, at 0 (one size: its period).

    >>> round(intercept({1000: 3e-4, 2000: 4e-4}), 12)
    0.0002
    """
    sizes = np.array(list(periods), dtype=float)
    values = np.array(list(periods.values()))
    if len(sizes) < 2:
        return float(values[0])
    return float(np.polyfit(sizes, values, 1)[1])


def message_cost(measured: dict[int, float], predicted: dict[int, float]) -> float:
    """What the pipeline paid per message beyond the model: the :func:`intercept` of the
    measured periods minus the predicted periods' one, clipped at 0 (module doc).

    >>> round(message_cost({1000: 3e-4, 2000: 4e-4}, {1000: 1.5e-4, 2000: 2e-4}), 12)
    0.0001
    >>> message_cost({1: 1e-4}, {1: 2e-4})
    0.0
    """
    return max(0.0, intercept(measured) - intercept(predicted))


def with_message_cost(platform: Platform, cost: float) -> Platform:
    """The platform with ``cost`` seconds added to every node's ``t_ini``.

    >>> from hetcoll.platform import nodes_from_costs
    >>> p = with_message_cost(Platform(nodes_from_costs([1e-4, 2e-4])), 5e-5)
    >>> [round(float(x), 9) for x in p.t_ini]
    [0.00015, 0.00025]
    """
    nodes = tuple(replace(node, t_ini=node.t_ini + cost) for node in platform.nodes)
    return replace(platform, nodes=nodes)


def pipeline_fit(hc: ScheduleComm, platform: Platform) -> tuple[Platform, dict[str, Any]]:
    """Time the chain on ``hc`` (collective), and ``platform`` with the message cost added,
    with the record the probe reports under ``fit["pipeline"]``."""
    measured = measure_periods(hc)
    predicted = predicted_periods(platform, measured)
    cost = message_cost(measured, predicted)
    record = {
        "segment_sizes": list(measured),
        "segments": list(SEGMENTS),
        "period": [measured[s] for s in measured],
        "predicted": [predicted[s] for s in measured],
        "message_cost": cost,
    }
    return with_message_cost(platform, cost), record
