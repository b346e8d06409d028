"""Figures of the Figueira & Reddi experiments, drawn from their result data only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..plots import color, figure, register_figure, save

__all__ = ["figueira_cost"]

LABELS = {
    "dim2_cube": "Dim2_Cube",
    "tsts_cube": "TSTS_Cube",
    "eff_cube": "Eff_Cube",
    "eff_cube_ls": "Eff_Cube + local search (ours)",
}


@register_figure("figueira-cost")
def figueira_cost(data: dict[str, Any], out_dir: Path) -> list[Path]:
    """Fig. 6: average gain over blind (%) against the number of nodes, one panel per
    maximum cost."""
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
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("number of nodes N")
        ax.set_ylabel("average gain over blind (%)")
        ax.set_title(f"maximum cost {max_links} links ({data['trials']} topologies per N)")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small")
    return [save(fig, Path(out_dir) / "figueira-cost.png")]
