"""Figures of the Banikazemi et al. (1998) experiments, drawn from their result data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..plots import color, figure, register_figure, save

_STYLES = ["-", "--", ":", "-."]
_MARKERS = ["o", "s", "^", "D"]


@register_figure("banikazemi-sim")
def banikazemi_sim(data: dict[str, Any], out: Path) -> list[Path]:
    """One PNG per panel of Sec. 7.2: factor of improvement over binomial vs destinations."""
    written = []
    for panel in data["panels"]:
        fig, axes = figure(ncols=2, size=(10.0, 3.8))
        for ax, planner in zip(axes[0], ("spoc", "fnf"), strict=True):
            for k, (value, points) in enumerate(panel["series"].items()):
                ax.plot(
                    [p["destinations"] for p in points],
                    [p["foi"][planner] for p in points],
                    _STYLES[k % 4],
                    marker=_MARKERS[k % 4],
                    color=color(planner),
                    label=f"{panel['series_label']} = {value}",
                )
            ax.axhline(1.0, color="0.6", lw=0.8)
            ax.set_xlabel("destinations (nodes)")
            ax.set_ylabel(f"factor of improvement of {planner.upper()} over binomial")
            ax.legend(fontsize=7)
        fig.suptitle(f"Banikazemi et al. 1998, Sec. 7.2 — by {panel['series_label']}")
        written.append(save(fig, out / f"banikazemi-sim-{panel['panel']}.png"))
    return written
