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
        planners = list(next(iter(panel["series"].values()))[0]["foi"])
        fig, axes = figure(ncols=len(planners), size=(5.0 * len(planners), 3.8))
        for ax, planner in zip(axes[0], planners, strict=True):
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


@register_figure("banikazemi-table2")
def banikazemi_table2(data: dict[str, Any], out: Path) -> list[Path]:
    """Table 2 as a figure: mean latency of FNF and the optimum (ours: lines; the paper's:
    open markers) and FNF's relative gap, against the number of participants."""
    rows = data["rows"]
    n = [r["participants"] for r in rows]
    fig, axes = figure(ncols=2, size=(10.0, 3.8))
    ax, gap = axes[0]
    for name, key in (("fnf", "fnf"), ("optimal", "opt")):
        ax.errorbar(
            n,
            [r[f"{key}_mean"] * 1e6 for r in rows],
            yerr=[2 * r[f"{key}_sem"] * 1e6 for r in rows],
            color=color(name),
            marker=_MARKERS[0],
            label=f"{name.upper() if name == 'fnf' else name} (hetcoll, ±2 s.e.)",
        )
        ax.plot(
            n,
            [r[f"paper_{key}"] * 1e6 for r in rows],
            ls="none",
            marker=_MARKERS[1],
            mfc="none",
            color=color(name),
            label=f"{name.upper() if name == 'fnf' else name} (paper)",
        )
    ax.set_xlabel("participants (nodes)")
    ax.set_ylabel("mean broadcast latency (µs)")
    ax.legend(fontsize=7)
    gap.plot(
        n, [r["gap_pct"] for r in rows], marker=_MARKERS[0], color=color("fnf"), label="hetcoll"
    )
    gap.plot(
        n,
        [r["paper_gap_pct"] for r in rows],
        _STYLES[1],
        marker=_MARKERS[1],
        color="0.4",
        label="paper",
    )
    gap.set_xlabel("participants (nodes)")
    gap.set_ylabel("(L_FNF - L_opt) / L_opt (%)")
    gap.legend(fontsize=7)
    setup = data["setup"]
    fig.suptitle(
        f"Banikazemi et al. 1998, Table 2 — {setup['trials']} trials per point, "
        "t_ini uniform in {100..800} µs"
    )
    return [save(fig, out / "banikazemi-table2.png")]
