"""``check="always"``: the ranks compare each call before its data count.

A blind hypercube allreduce (``MAX``) of ``(call number, digest, -call number, -digest)``:
every rank learns the largest and the smallest of each, so when they differ every rank
raises :class:`~hetcoll.errors.MismatchError` in the call itself.  Natively it runs merged
with the call's own plan (:func:`~.plan.merged`: their waits overlap, and the rank stops
as soon as the check fails); under emulation before it, unemulated, so that the call's
modelled times stay its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import MismatchError
from ..schedule import Hypercube
from .plan import Merged, RankPlan, merged, rank_plan
from .reduce import ReduceHandler

__all__ = ["Agreement"]


class Agreement:
    """The agreement check of one wrapper (its program is planned once)."""

    def __init__(self, nodes: tuple[str, ...], node: str, rank_of: dict[str, int]) -> None:
        k = 1 << (len(nodes).bit_length() - 1)
        folds = tuple((nodes[k + j], nodes[j]) for j in range(len(nodes) - k))
        self.program = Hypercube(nodes[:k], folds, "max").program(32)
        self.node = node
        self.plan = rank_plan(self.program, node, rank_of)
        self.receives = sum(1 for op in self.program.ops.get(node, ()) if op.kind != "send")
        self._merged: dict[Any, RankPlan] = {}

    def handler(self, seq: int, digest: int, what: str, reported: set[int]) -> ReduceHandler:
        """This rank's part; ``handler.judge()`` raises once the result is known to differ
        (and adds ``seq`` to ``reported``)."""
        mine = np.array([seq, digest, -seq, -digest], dtype=np.int64)
        handler = ReduceHandler(self.program, self.node, mine, MPI.MAX, 4, MPI.INT64_T)

        def judge() -> None:
            top = np.frombuffer(memoryview(handler.state).cast("B"), dtype=np.int64)
            if top[0] != -top[2] or top[1] != -top[3]:
                reported.add(seq)
                raise MismatchError(
                    f"{what}: ranks planned different schedules (the agreement check found "
                    "different calls): every rank must call the same collective with the same "
                    "root, members, size, segment size, datatype and operator"
                )

        handler.judge = judge
        return handler

    def with_call(self, plan: RankPlan, handler, agreement: ReduceHandler):
        """The call's ``plan`` and the check as one plan, and its handler."""
        offset = max(plan.chunks, default=-1) + 1
        key = (id(plan), offset)
        both = self._merged.get(key)
        if both is None:
            both = self._merged[key] = merged(plan, self.plan, offset)
        return both, Merged(handler, agreement, offset, self.receives, agreement.judge)
