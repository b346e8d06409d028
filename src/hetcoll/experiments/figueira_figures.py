"""Figures of the Figueira & Reddi experiments, drawn from their result data only."""

from __future__ import annotations

from typing import Any

from ..plots import color, figure, register_builder

__all__ = ["figueira_barrier", "figueira_cost"]

LABELS = {
    "dim2_cube": "Dim2_Cube",
    "tsts_cube": "TSTS_Cube",
    "eff_cube": "Eff_Cube",
    "eff_cube_ls": "Eff_Cube + local search (ours)",
}
SHORT = {"eff_cube_ls": "Eff_Cube + LS (ours)"}


@register_builder("figueira-cost")
def figueira_cost(data: dict[str, Any]) -> dict[str, Any]:
    """Fig. 6: average gain over blind (%) against the number of nodes, one panel per
    maximum cost; the paper's quoted gains (``data["paper_values"]``: Dim2 about 10 %, TSTS
    about 10 % up to 16 nodes, Eff_Cube from about 10 % at 8 to about 30 % at 1024) as
    open markers joined by a dotted line, in each method's colour."""
    panels = data["max_links"]
    fig, axes = figure(ncols=len(panels), size=(5.2 * len(panels), 4.1))
    for ax, max_links in zip(axes[0], panels, strict=True):
        points = [p for p in data["points"] if p["max_links"] == max_links]
        sizes = [p["n"] for p in points]
        for name in data["methods"]:
            if name == "eff_cube_ls":
                gains = [p["ours"]["gain"] if "ours" in p else None for p in points]
                style = {"linestyle": "--"}
            else:
                gains = [p["gain"][name] for p in points]
                style = {}
            xs = [n for n, g in zip(sizes, gains, strict=True) if g is not None]
            ys = [g for g in gains if g is not None]
            if xs:
                ax.plot(xs, ys, marker="o", color=color(name), label=LABELS[name], **style)
        for name, quoted in data.get("paper_values", {}).items():
            if quoted:
                ax.plot(
                    [n for n, _ in quoted],
                    [g for _, g in quoted],
                    ":",
                    marker="s",
                    mfc="none",
                    ms=8,
                    color=color(name),
                    label=f"{LABELS[name]}, paper (about)",
                )
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("number of nodes N")
        ax.set_ylabel("average gain over blind (%)")
        ax.set_title(f"maximum cost {max_links} links ({data['trials']} topologies per N)")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize="small")
    return {"figueira-cost.png": fig}


@register_builder("figueira-barrier")
def figueira_barrier(data: dict[str, Any]) -> dict[str, Any]:
    """Fig. 7 in miniature: per planner, the predicted gain over blind (calc_cost) next to
    the measured gain of one barrier and of a loop of barriers, one panel per size."""
    import numpy as np

    sizes = data["sizes"]
    fig, axes = figure(ncols=len(sizes), size=(5.4 * len(sizes), 4.3))
    bars = (
        ("predicted_gain", "predicted (calc_cost)", {"alpha": 0.4}),
        ("measured_gain", "measured, one barrier", {}),
        ("loop_measured_gain", f"measured, {data['loop']} in a row", {"hatch": "//"}),
    )
    width = 0.26
    for ax, n in zip(axes[0], sizes, strict=True):
        points = [p for p in data["points"] if p["n"] == n]
        x = np.arange(len(points))
        for k, (key, label, style) in enumerate(bars):
            ax.bar(
                x + (k - 1) * width,
                [p[key] for p in points],
                width,
                color=[color(p["method"]) for p in points],
                edgecolor="black",
                linewidth=0.5,
                label=label,
                **style,
            )
        ax.scatter(
            x + width,
            [p["loop_predicted_gain"] for p in points],
            marker="_",
            s=200,
            color="black",
            zorder=3,
            label=f"predicted, {data['loop']} in a row",
        )
        ax.set_xticks(x, [SHORT.get(p["method"], LABELS[p["method"]]) for p in points], fontsize=8)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_ylabel("gain over blind (%)")
        ax.set_title(f"{n} emulated ranks")
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small")
    fig.suptitle(
        f"Barrier gain over blind, each planner on its best of {data['draws']} random "
        "topologies (bar colours: planner)",
        fontsize="medium",
    )
    return {"figueira-barrier.png": fig}
