"""Figures of the ``beaumont-*`` experiments, drawn from their JSON data only (with the
paper's reference values the data carries)."""

from __future__ import annotations

from typing import Any

from ..plots import color, figure, register_builder

__all__ = ["fig4", "fig5", "table3"]

_LABELS = {
    "throughput_tree": "throughput_tree (ours)",
    "binomial_graph": "binomial (Alg. 4)",
}


def _curves(ax, points, key: str, planners, ylabel: str) -> None:
    xs = [p[key] for p in points]
    for name in planners:
        ys = [p["stats"][name]["mean"] for p in points]
        ax.plot(xs, ys, marker="o", color=color(name), label=_LABELS.get(name, name))
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)


def _paper_marks(ax, x: float, values: dict[str, float | None]) -> None:
    for name, v in values.items():
        if v is not None:
            ax.scatter([x], [v], marker="_", s=300, color=color(name), zorder=5)
    ax.annotate(
        "paper (text)",
        (x, max(v for v in values.values() if v is not None)),
        xytext=(4, 6),
        textcoords="offset points",
        fontsize="small",
    )


@register_builder("beaumont-fig4")
def fig4(data: dict[str, Any]) -> dict[str, Any]:
    """Fig. 4 (a) by size and (b) by density, with the paper's stated levels at its largest
    size as markers."""
    fig, axes = figure(ncols=2, size=(11.0, 4.2))
    a, b = axes[0]
    planners = data["planners"]
    _curves(a, data["by_size"], "n", planners, "throughput / optimal multi-tree")
    a.set_xlabel("number of nodes")
    a.set_title("(a) one-port, by size")
    _paper_marks(a, max(p["n"] for p in data["by_size"]), data["paper_values"])
    _curves(b, data["by_density"], "density", planners, "throughput / optimal multi-tree")
    b.set_xlabel("density")
    b.set_title("(b) one-port, by density")
    a.legend(fontsize="small")
    return {"beaumont-fig4.png": fig}


@register_builder("beaumont-fig5")
def fig5(data: dict[str, Any]) -> dict[str, Any]:
    """Fig. 5: multi-port throughput over the one-port optimum, by size."""
    fig, axes = figure(size=(6.0, 4.2))
    ax = axes[0][0]
    _curves(ax, data["by_size"], "n", data["planners"], "multi-port throughput / one-port optimum")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("number of nodes")
    ax.set_title("multi-port (send_u = 0.8 min T)")
    ax.legend(fontsize="small")
    return {"beaumont-fig5.png": fig}


@register_builder("beaumont-table3")
def table3(data: dict[str, Any]) -> dict[str, Any]:
    """Table 3 as bars per platform size, the paper's values as black ticks."""
    points = data["points"]
    fig, axes = figure(ncols=len(points), size=(5.5 * len(points), 4.2))
    for ax, pt in zip(axes[0], points, strict=True):
        names = data["planners"]
        x = range(len(names))
        ax.bar(
            x,
            [pt["stats"][k]["mean"] or 0 for k in names],
            yerr=[pt["stats"][k]["std"] or 0 for k in names],
            color=[color(k) for k in names],
        )
        paper = data["paper_values"].get(str(pt["n"]), {})
        marks = [(i, paper[k]) for i, k in enumerate(names) if k in paper]
        if marks:
            ax.scatter(*zip(*marks, strict=True), marker="_", s=400, c="k", label="paper", zorder=5)
            ax.legend()
        ax.set_xticks(list(x), [_LABELS.get(k, k) for k in names], rotation=45, ha="right")
        ax.set_ylabel("throughput / optimal multi-tree")
        ax.set_title(f"TIERS-like, {pt['n']} nodes")
    return {"beaumont-table3.png": fig}
