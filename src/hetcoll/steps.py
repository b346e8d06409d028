"""A schedule counted in synchronous communication steps (Hsu et al. 2005, Sec. 5, Lemma 2).

The papers on switch networks count a broadcast in *steps*: in a step every node that holds
the message sends it to at most one other node.  A transfer's step is one more than the
later of the step in which its sender received the data and the step of the sender's
previous send (sends in program order); the source holds its data at step 0.

Hsu et al. do not say how per-transfer costs become a broadcast time.  Two accountings:

- **event-driven** (:func:`hetcoll.simulate`): a node sends as soon as it holds
  the data and its port is free; what hetcoll predicts everywhere else;
- **summed per-step maxima** (:func:`step_time`): every step lasts as long as its slowest
  transfer's ``T_ptp`` and steps follow one another, as in a synchronous execution.

:func:`step_conflicts` lists the pairs of transfers of one step whose routes share a
directed link: the paper's notion of link contention (Sec. 2.3), independent of timing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ScheduleError
from .models import get_model
from .platform import Platform
from .schedule import Schedule

__all__ = [
    "StepTransfer",
    "Conflict",
    "transfer_steps",
    "step_count",
    "step_time",
    "step_conflicts",
]


@dataclass(frozen=True)
class StepTransfer:
    """One transfer of a schedule and the step it belongs to (from 1)."""

    sender: str
    receiver: str
    chunk: int
    nbytes: int
    step: int


@dataclass(frozen=True)
class Conflict:
    """Two transfers of the same step whose routes share a directed link (indices into
    :func:`transfer_steps`)."""

    step: int
    link: tuple[str, str]
    first: int
    second: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "link": list(self.link),
            "first": self.first,
            "second": self.second,
        }


def transfer_steps(schedule: Schedule) -> list[StepTransfer]:
    """Every transfer of ``schedule`` with its step, ordered by step then sender's program
    order.  Raises :class:`ScheduleError` if a send never gets its data.  O(M * depth)."""
    program = schedule.program()
    sends = {rank: [op for op in ops if op.kind == "send"] for rank, ops in program.ops.items()}
    have = {(rank, c): 0 for rank, held in program.initial.items() for c in held}
    done = dict.fromkeys(sends, 0)
    free = dict.fromkeys(sends, 0)
    out: list[tuple[int, int, StepTransfer]] = []
    order = 0
    left = sum(len(v) for v in sends.values())
    while left:
        progress = False
        for rank, ops in sends.items():
            while done[rank] < len(ops) and (rank, ops[done[rank]].chunk) in have:
                op = ops[done[rank]]
                step = max(free[rank], have[(rank, op.chunk)]) + 1
                free[rank] = step
                have.setdefault((op.peer, op.chunk), step)
                nbytes = program.chunks[op.chunk].nbytes
                out.append((step, order, StepTransfer(rank, op.peer, op.chunk, nbytes, step)))
                order += 1
                done[rank] += 1
                left -= 1
                progress = True
        if not progress:
            raise ScheduleError("schedule: a send never gets its data (no step can be counted)")
    out.sort(key=lambda x: (x[0], x[1]))
    return [t for _, _, t in out]


def step_count(schedule: Schedule) -> int:
    """How many steps the schedule takes (Lemma 2: ``ceil(log2(n+1))`` for the binomial-like
    tree of ``n`` receivers)."""
    return max((t.step for t in transfer_steps(schedule)), default=0)


def step_time(platform: Platform, schedule: Schedule, model: Any = None) -> float:
    """The summed per-step maxima: each step costs its slowest transfer's delay (``T_ptp``
    under the ``switch`` model), steps one after another; links are taken to be free.

    Examples
    --------
    Banikazemi et al. (1998), Fig. 1(a): the binomial tree's steps cost 100, 300 and 300 µs,
    the 700 µs the event-driven simulation gives too.

    >>> from hetcoll import load_platform, plan
    >>> p = load_platform("fig1")
    >>> round(step_time(p, plan(p, "1", method="binomial")) * 1e6, 6)
    700.0
    """
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    index = platform.index
    worst: dict[int, float] = {}
    for t in transfer_steps(schedule):
        d = bound.delay(index(t.sender), index(t.receiver), t.nbytes)
        worst[t.step] = max(worst.get(t.step, 0.0), d)
    return float(sum(worst[s] for s in sorted(worst)))


RouteFn = Callable[[int, int], Sequence[Hashable]]


def step_conflicts(
    platform: Platform,
    schedule: Schedule,
    model: Any = None,
    routes: RouteFn | None = None,
    names: Callable[[Hashable], tuple[str, str]] | None = None,
) -> list[Conflict]:
    """Pairs of transfers of one step whose routes share a directed link.

    ``routes(u, v)`` gives the directed links of the route from node index ``u`` to ``v``
    (default: the model's, ``links`` under ``switch``, else ``path``); ``names`` turns a
    link into its ``(from, to)`` ids (default: the model's ``resource_name``).
    """
    bound = (get_model(model) if model is not None else platform.model).bind(platform)
    if routes is None:
        routes = getattr(bound, "links", bound.path)
    if names is None:
        names = getattr(bound, "resource_name", lambda r: (str(r), str(r)))
    index = platform.index
    steps = transfer_steps(schedule)
    conflicts: list[Conflict] = []
    for step, group in itertools.groupby(range(len(steps)), key=lambda i: steps[i].step):
        users: dict[Hashable, list[int]] = {}
        for i in group:
            t = steps[i]
            for link in routes(index(t.sender), index(t.receiver)):
                users.setdefault(link, []).append(i)
        for link in sorted(users, key=str):
            for a, b in itertools.combinations(users[link], 2):
                conflicts.append(Conflict(step, names(link), a, b))
    conflicts.sort(key=lambda c: (c.step, c.first, c.second, c.link))
    return conflicts
