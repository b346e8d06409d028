"""Figures of the ``park-grid`` experiment, drawn from its JSON data only."""

from __future__ import annotations

from typing import Any

from ..plots import color, figure, register_builder

__all__ = ["fig2", "clusters", "sizes"]

_LABELS = {"gap_aware": "gap_aware (ours)", "mpich-gx": "MPICH-GX (HLOT)", "mpich-g2": "MPICH-G2"}


@register_builder("park-fig2")
def fig2(data: dict[str, Any]) -> dict[str, Any]:
    """Bars: each planner on park-fig2 (eq. 4) with the paper's quoted times as markers, and
    its mean time on the generated eight-site grids relative to flat."""
    fig, axes = figure(ncols=2, size=(11.0, 4.0))
    left, right = axes[0]
    rows = data["fig2"]["results"]
    names = [r["algorithm"] for r in rows]
    x = range(len(rows))
    left.bar(x, [r["units"] for r in rows], color=[color(n) for n in names])
    paper = [(i, r["paper_units"]) for i, r in enumerate(rows) if r["paper_units"] is not None]
    if paper:
        left.scatter(*zip(*paper, strict=True), marker="_", s=400, c="k", label="paper (text)")
        left.legend(loc="upper right")
    left.set_xticks(list(x), names, rotation=45, ha="right")
    left.set_ylabel("broadcast time (time units = ms)")
    left.set_title("park-fig2, eq. (4)")
    gen = data["eight_sites"]["results"]
    right.bar(x, [r["ratio_to_flat"] for r in gen], color=[color(r["algorithm"]) for r in gen])
    right.axhline(1.0, color="k", lw=0.8)
    right.set_xticks(list(x), [r["algorithm"] for r in gen], rotation=45, ha="right")
    right.set_ylabel("mean time / flat's mean time")
    right.set_title(f"{data['trials']} generated 8-site grids, eq. (2)")
    return {"park-fig2.png": fig}


#: planners of the gain plots, each with its own marker, fill and line so that equal
#: curves (spt and gap_aware often coincide) stay visible one over the other
_GAIN_STYLES = {
    "mpich-gx": {"marker": "o", "ms": 7, "ls": "-"},
    "hlot": {"marker": "s", "ms": 8, "ls": "-.", "mfc": "none"},
    "spt": {"marker": "^", "ms": 10, "ls": "--", "mfc": "none"},
    "gap_aware": {"marker": "x", "ms": 7, "ls": ":", "mew": 2},
}


def _gain_axes(ax, xs, points, shift, key="gain"):
    """One curve per planner, the k-th drawn at ``shift(x, k)`` (a small sideways offset:
    curves with equal values side by side, not hidden under each other)."""
    for k, (name, style) in enumerate(_GAIN_STYLES.items()):
        ax.plot(
            [shift(x, k - (len(_GAIN_STYLES) - 1) / 2) for x in xs],
            [p[key][name] for p in points],
            color=color(name),
            label=_LABELS.get(name, name),
            **style,
        )
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_ylabel("gain over MPICH-G2 (%)")
    ax.legend(fontsize="small")


@register_builder("park-clusters")
def clusters(data: dict[str, Any]) -> dict[str, Any]:
    """Gain over MPICH-G2 against the number of clusters (the paper's Fig. 6b), per layout;
    the planners' points offset by 0.07 cluster each way, the paper's gain as a star."""
    layouts = data["clusters"]["layouts"]
    fig, axes = figure(ncols=len(layouts), size=(5.5 * len(layouts), 4.0))
    for ax, layout in zip(axes[0], layouts, strict=True):
        points = layout["points"]
        _gain_axes(ax, [p["clusters"] for p in points], points, lambda x, k: x + 0.07 * k)
        ax.scatter([8], [data["paper_gain_percent"]], marker="*", s=150, c="k", zorder=5)
        ax.annotate(
            "paper (its testbed)",
            (8, data["paper_gain_percent"]),
            ha="right",
            xytext=(-8, -4),
            textcoords="offset points",
            fontsize="small",
        )
        ax.set_xlabel(f"clusters ({data['clusters']['procs']} processes; points offset)")
        ps = layout["clusters_per_site"]
        ax.set_title(f"{ps} cluster{'s' if ps > 1 else ''} per site, eq. (2)")
    return {"park-clusters.png": fig}


@register_builder("park-sizes")
def sizes(data: dict[str, Any]) -> dict[str, Any]:
    """Gain over MPICH-G2 against the message size (the paper's Fig. 7); the planners'
    points offset by a factor 2**0.07 each way on the log axis."""
    fig, axes = figure()
    ax = axes[0][0]
    points = data["sizes"]["points"]
    _gain_axes(ax, [p["nbytes"] for p in points], points, lambda x, k: x * 2 ** (0.07 * k))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_title(
        f"{data['sizes']['clusters']} clusters, {data['sizes']['clusters_per_site']} per site, "
        "per-byte costs"
    )
    return {"park-sizes.png": fig}
