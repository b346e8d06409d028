"""Which schedule is best: compare (every applicable planner, predicted and ranked by
:func:`hetcoll.compare.compare`) and optimum (the best throughput any set of trees can reach)."""

from __future__ import annotations

import click

from ..report import dump_json, format_table, json_document
from ._base import (
    JSON_OPT,
    MODEL,
    OPTION_OPT,
    POSITIVE,
    SIZE,
    _ids,
    _platform,
    _sizes,
    cli,
    planner_warnings,
)
from ._reports import print_comparison, print_size_comparison
from ._requests import parse_request, plan_options

# -- compare -------------------------------------------------------------------------------------


@cli.command("compare")
@plan_options
@click.option("--algos", default=None, help="Comma-separated planners (default: all applicable).")
@click.option(
    "--sizes",
    default=None,
    help="Comma-separated message sizes (1KiB,64KiB,1MiB,...): for each, every planner at "
    "its best slice size, the fastest, and the gap to the lower bound (bcast, multicast).",
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    help="With --sizes: draw each planner's time / lower bound over the size (PNG).",
)
@OPTION_OPT
def compare_cmd(
    platform,
    op,
    root,
    members,
    groups,
    size,
    segment_size,
    model,
    reduce_op,
    as_json,
    algos,
    sizes,
    plot_path,
    planner_options,
) -> None:
    """Plan with every applicable planner and compare predicted times.

    With --sizes, for each message size: each planner's best time over the slice sizes
    auto tries, the fastest (what auto chooses among the planners), the lower bound on
    any broadcast of that size and the gap (time / bound).
    """
    from ..compare import compare
    from ..planners import get_planner

    p = _platform(platform)
    names = _ids(algos, "--algos")
    for name in names or ():
        get_planner(name)
    req = parse_request(op, root, members, groups, segment_size, reduce_op)
    if sizes is not None or plot_path is not None:
        _compare_sizes(
            p,
            platform,
            req,
            sizes,
            size,
            segment_size,
            model,
            names,
            planner_options,
            plot_path,
            as_json,
        )
        return
    with planner_warnings():
        found = compare(
            p,
            req.operation,
            **req.nodes(),
            model=model,
            nbytes=size,
            segment_size=segment_size,
            op=req.reduce_op,
            algos=names,
            options=planner_options,
        )
    print_comparison(platform, op, req.root, size, found.rows(), found.skipped, as_json)


def _compare_sizes(
    p, platform, req, sizes, size, segment_size, model, names, options, plot_path, as_json
) -> None:
    """``compare --sizes``: checked, then :func:`hetcoll.compare.compare_sizes`."""
    from ..compare import compare_sizes
    from ..errors import ArgumentError
    from ..files import check_output

    if sizes is None:
        raise ArgumentError("--plot: needs --sizes")
    if req.operation not in ("bcast", "multicast"):
        raise ArgumentError(f"--sizes: compares a bcast or multicast, not {req.operation!r}")
    if size or segment_size is not None:
        raise ArgumentError("--sizes: give the sizes there, without --size or --segment-size")
    size_list = _sizes(sizes, "--sizes")
    if plot_path is not None:
        check_output(plot_path)
    with planner_warnings():
        rows = compare_sizes(
            p,
            size_list,
            root=req.root,
            members=req.members,
            model=model,
            algos=names,
            options=options,
        )
    print_size_comparison(platform, req.root, rows, as_json)
    if plot_path is not None:
        from ..plots import save, size_gap_figure

        docs = [r.to_dict() for r in rows]
        save(size_gap_figure(docs, f"{req.operation} from {req.root} on {platform}"), plot_path)


# -- optimum -------------------------------------------------------------------------------------


@cli.command("optimum")
@click.argument("platform")
@click.option("--root", default=None, help="Source node id (a broadcast's; required for it).")
@click.option(
    "--op",
    type=click.Choice(["bcast", "allgather", "reduce_scatter", "allreduce"]),
    default="bcast",
    show_default=True,
    help="The operation: a broadcast from --root, or an allgather, reduce-scatter or "
    "allreduce of --size bytes (the whole result vector) on every node.",
)
@click.option(
    "--segment-size",
    type=SIZE,
    default=None,
    help="Slice size (bytes, or 64KiB, ...): the message flows in slices of this size "
    "(default: --size, one slice).",
)
@click.option(
    "--size",
    type=SIZE,
    default=None,
    help="A message size: also print the lower bound on any broadcast of it (seconds), "
    "and with --segment-size dividing it the bound on any broadcast of it in messages of "
    "exactly that size (whole_slice_bound).",
)
@click.option(
    "--model",
    type=MODEL,
    default=None,
    help="Cost model (default: the platform's); one_port_uni for one port per node.",
)
@click.option(
    "--method",
    type=click.Choice(["packing", "lp"]),
    default="packing",
    show_default=True,
    help="packing: arborescence packing (fast, certified); lp: the corrected LP (2).",
)
@click.option("--time-limit", type=POSITIVE, default=None, help="Seconds for the solver.")
@JSON_OPT
def optimum_cmd(platform, root, op, segment_size, size, model, method, time_limit, as_json) -> None:
    """Optimal pipelined-broadcast throughput of PLATFORM (Beaumont et al. 2004, Sec. 4.1).

    The best rate any set of trees can reach under the one-port model, with slices of
    --segment-size bytes, and the slices per second each link carries (n_uv).  With
    --size, also the lower bound on the time of any broadcast of that many bytes
    (hetcoll.bounds: the larger of size / the optimal rate and the time one byte needs to
    reach the farthest node).  With --size and a --segment-size that divides it, also the
    lower bound on any broadcast of it whose every message carries exactly --segment-size
    bytes, as every pipelined planner sends (hetcoll.bounds.whole_slice_bound: under
    multi_port a port sends whole slices, so a link a fraction of a send longer than whole
    sends leaves its port gaps the fluid rate does not count).  With --op allgather,
    reduce_scatter or allreduce: the lower bound and, where known, the optimum of that
    operation of --size bytes (hetcoll.allbounds).
    """
    from ..bounds import lower_bound, whole_slice_bound
    from ..errors import ArgumentError
    from ..planners.steady import optimum
    from ..units import format_bandwidth, format_size, format_time

    if op != "bcast":
        _collective_optimum(platform, op, size, model, time_limit, as_json)
        return
    if root is None:
        raise ArgumentError("optimum: a broadcast needs --root")
    if segment_size is None and size is None:
        raise ArgumentError("optimum: give --segment-size, --size or both")
    if segment_size is None:
        segment_size = max(size, 1)
    p = _platform(platform)
    with planner_warnings():
        best = optimum(p, root, segment_size, model, method=method, time_limit=time_limit)
        bound = lower_bound(p, root, size, model=model) if size is not None else None
        whole = whole_slice_bound(p, root, size, segment_size, model) if size else None
    if as_json:
        doc = best.to_dict()
        if bound is not None:
            doc.update(bound.to_dict())
            doc["whole_slice_bound"] = whole
        dump_json(json_document("optimum", doc))
        return
    if bound is not None:
        click.echo(
            f"lower bound for {format_size(size)}: {format_time(bound.seconds)} "
            f"(size / optimal rate {format_time(bound.rate)}, "
            f"one byte to {bound.farthest} {format_time(bound.reach)})"
        )
    if whole is not None:
        click.echo(
            f"lower bound in messages of exactly {format_size(segment_size)}: {format_time(whole)}"
        )
    click.echo(
        f"optimum from {best.root} on {platform}: {format_bandwidth(best.throughput)} "
        f"({best.slices_per_second:.6g} slices of {format_size(best.slice_size)} per second)"
    )
    click.echo(
        f"certified: no schedule exceeds {format_bandwidth(best.upper_bound)} "
        f"({best.method}, {best.iterations} iterations, {best.seconds:.3g} s)"
    )
    rows = [[u, v, f"{x:.6g}"] for (u, v), x in zip(best.edges, best.n, strict=True) if x > 1e-12]
    click.echo(format_table(["from", "to", "slices/s"], rows))
    if best.trees:
        click.echo(f"{len(best.trees)} trees reach it (hetcoll plan --algo multi_tree runs them)")


def _members_packed(p, op, size, members, model, time_limit):
    """:func:`hetcoll.allbounds.members_bound` with the members' packing where the model
    routes transfers end to end (a graph model's relays hold what they pass on: the
    bounds without it)."""
    from ..allbounds import members_bound
    from ..errors import PlannerError

    try:
        return members_bound(
            p, op, size, members, model, packing=True, time_limit=time_limit or 30.0
        )
    except PlannerError:
        return members_bound(p, op, size, members, model)


def _collective_optimum(platform, op, size, model, time_limit, as_json) -> None:
    """``hetcoll optimum --op allgather|reduce_scatter|allreduce``: the bound and optimum;
    on a multi-site platform (hosts with a site, switches routing) among its hosts."""
    from ..allbounds import collective_bound
    from ..errors import ArgumentError
    from ..generators import hosts
    from ..units import format_size, format_time

    if size is None:
        raise ArgumentError(f"optimum: --op {op} needs --size (bytes of the whole vector)")
    p = _platform(platform)
    members = hosts(p)
    with planner_warnings():
        if 0 < len(members) < len(p):
            found = _members_packed(p, op, size, members, model, time_limit)
        else:
            found = collective_bound(p, op, size, model, time_limit=time_limit or 30.0)
    if as_json:
        dump_json(json_document("optimum", found.to_dict()))
        return
    best = "unknown" if found.optimum is None else format_time(found.optimum)
    click.echo(
        f"{op} of {format_size(size)} on {platform}: lower bound "
        f"{format_time(found.lower_bound)}, optimum {best}"
    )
    parts = ", ".join(f"{k} {format_time(v)}" for k, v in found.parts.items())
    click.echo(f"bounds: {parts}")
    if 0 < len(members) < len(p):
        click.echo(f"among the {len(members)} hosts (the switches route)")
    if not found.trees:
        return
    click.echo(
        f"steady-state per-root packing: {format_time(found.packing)} (certified >= "
        f"{format_time(found.packing_bound)}), {found.trees} trees, {found.seconds:.3g} s"
    )
