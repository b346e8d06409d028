"""What ``plan``, ``simulate`` and ``compare`` share: the request options and their checks."""

from __future__ import annotations

from dataclasses import dataclass

import click

from ..errors import PlannerError
from ._base import JSON_OPT, MODEL, SIZE, _ids

CUBE_OPS = ("allreduce", "allgather", "barrier")
#: rooted collectives that end at (or start from) one root
ROOTED_OPS = ("reduce", "gather", "scatter")
#: collectives of per-member data planned as trees or hypercubes, or one reduce + scatter
EVERYWHERE_OPS = ("allreduce", "allgather", "reduce_scatter")


def plan_options(func):
    """The options of a planning request (shared by plan and compare)."""
    for deco in reversed(
        [
            click.argument("platform"),
            click.option(
                "--op",
                "op",
                default="bcast",
                show_default=True,
                help="bcast, multicast, multi-multicast (trees); reduce, gather, scatter, "
                "reduce-scatter (rooted trees); allreduce, allgather (hypercubes or trees); "
                "barrier (hypercubes).",
            ),
            click.option(
                "--root",
                help="Source node id (a reduce or gather: the destination; an allreduce, "
                "allgather or reduce-scatter over trees: optional, the planner chooses).",
            ),
            click.option("--members", help="Comma-separated ids of a multicast's members."),
            click.option(
                "--group",
                "groups",
                multiple=True,
                help="ROOT:ID,ID,... one multicast of a multi-multicast (repeat).",
            ),
            click.option(
                "--size",
                type=SIZE,
                default="0",
                show_default=True,
                help="Message size (bytes, or 4KiB, 1MB, ...); per member for the rooted "
                "and hypercube collectives.",
            ),
            click.option(
                "--segment-size",
                type=SIZE,
                default=None,
                help="Pipeline the message in segments of this size.",
            ),
            click.option(
                "--model",
                "model",
                type=MODEL,
                default=None,
                help="Cost model: a name or a JSON object (default: the platform's).",
            ),
            click.option(
                "--reduce-op",
                default=None,
                help="Operator of an allreduce: sum (default), prod, max, min, ... or user.",
            ),
            JSON_OPT,
        ]
    ):
        func = deco(func)
    return func


@dataclass(frozen=True)
class Request:
    """A checked request: the operation's registry name and the nodes it involves."""

    operation: str
    root: str | None = None
    members: list[str] | None = None
    groups: list[tuple[str, list[str] | None]] | None = None
    reduce_op: str | None = None

    @property
    def default_planner(self) -> str:
        if self.operation in CUBE_OPS and self.root is None:
            return "eff_cube"
        if self.operation in ROOTED_OPS + EVERYWHERE_OPS:
            return "rooted_ls"
        return "fnf"

    def nodes(self) -> dict:
        """The keywords of :func:`hetcoll.compare.plan_request` and ``compare`` it sets."""
        return {"root": self.root, "members": self.members, "groups": self.groups}


def parse_request(op, root, members, groups, segment_size, reduce_op) -> Request:
    """Check the --op/--root/--members/--group/--segment-size/--reduce-op combination."""
    op = op.replace("-", "_")
    if op in (*ROOTED_OPS, "reduce_scatter") or (op in EVERYWHERE_OPS and root is not None):
        if groups:
            raise PlannerError("--group is only for --op multi-multicast")
        if reduce_op is not None and op != "allreduce":
            raise PlannerError(f"--reduce-op: only for --op allreduce, not {op}")
        if root is None and op in ROOTED_OPS:
            raise PlannerError(f"--op {op} needs --root ID")
        return Request(op, root, _ids(members, "--members"), reduce_op=reduce_op)
    if op in CUBE_OPS:
        cube_members = _cube_members(op, root, groups, segment_size, reduce_op, members)
        return Request(op, members=cube_members, reduce_op=reduce_op)
    if reduce_op is not None:
        raise PlannerError(f"--reduce-op: only for --op allreduce, not {op}")
    if op == "multi_multicast":
        if not groups:
            raise PlannerError("--op multi-multicast needs one --group ROOT:ID,ID,... per source")
        parsed = []
        for g in groups:
            head, sep, tail = g.partition(":")
            if not sep or not head.strip():
                raise PlannerError(f"--group: expected ROOT:ID,ID,..., got {g!r}")
            parsed.append((head.strip(), _ids(tail, f"--group {head.strip()} members")))
        return Request(op, groups=parsed)
    if op not in ("bcast", "multicast"):
        raise PlannerError(
            f"unknown operation {op!r}; choose from: bcast, multicast, multi-multicast, "
            "reduce, gather, scatter, reduce-scatter, allreduce, allgather, barrier"
        )
    if groups:
        raise PlannerError("--group is only for --op multi-multicast")
    if root is None:
        raise PlannerError(f"--op {op} needs --root ID")
    member_list = _ids(members, "--members")
    if op == "multicast" and member_list is None:
        raise PlannerError("--op multicast needs --members ID,ID,...")
    if op == "bcast" and member_list is not None:
        raise PlannerError("--op bcast sends to every node; use --op multicast with --members")
    return Request(op, root, member_list)


def _cube_members(op, root, groups, segment_size, reduce_op, members) -> list[str] | None:
    """Check the options of a hypercube operation (an allreduce or allgather may also be
    planned over trees: no root then, the planner chooses it); return its members (None =
    every node)."""
    if root is not None:
        raise PlannerError(f"--root: a {op} has no root")
    if groups:
        raise PlannerError("--group is only for --op multi-multicast")
    if segment_size is not None and op == "barrier":
        raise PlannerError(f"--segment-size: an {op} over a hypercube is not pipelined")
    if reduce_op is not None and op != "allreduce":
        raise PlannerError(f"--reduce-op: only an allreduce takes an operator, not --op {op}")
    return _ids(members, "--members")
