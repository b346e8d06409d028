"""Figures of the Banikazemi et al. (1998) experiments, drawn from their result data."""

from __future__ import annotations

from typing import Any

from ..plots import color, figure, register_builder

_STYLES = ["-", "--", ":", "-."]
_MARKERS = ["o", "s", "^", "D"]


@register_builder("banikazemi-fig1")
def banikazemi_fig1(data: dict[str, Any]) -> dict[str, Any]:
    """Fig. 1: each planner's simulated broadcast time as a bar, the paper's time as a black
    tick over it, both labelled in µs."""
    rows = data["results"]
    names = [r["algorithm"] for r in rows]
    fig, axes = figure(size=(5.5, 3.8))
    ax = axes[0][0]
    x = list(range(len(rows)))
    bars = ax.bar(
        x,
        [r["predicted_time"] * 1e6 for r in rows],
        color=[color(n) for n in names],
        label="simulated (hetcoll)",
    )
    ax.bar_label(bars, fmt="%.0f", padding=2, fontsize="small")
    ax.scatter(
        x,
        [r["paper_time"] * 1e6 for r in rows],
        marker="_",
        s=600,
        c="k",
        zorder=3,
        label="paper (Fig. 1)",
    )
    ax.set_xticks(x, names)
    ax.set_ylabel("broadcast latency (µs)")
    ax.set_ylim(0, 1.15 * max(max(r["predicted_time"], r["paper_time"]) for r in rows) * 1e6)
    ax.legend(loc="upper right", fontsize="small")
    ax.set_title(f"Banikazemi et al. 1998, Fig. 1: broadcast from node {data['root']}")
    return {"banikazemi-fig1.png": fig}


@register_builder("banikazemi-sim")
def banikazemi_sim(data: dict[str, Any]) -> dict[str, Any]:
    """One PNG per panel of Sec. 7.2: factor of improvement over binomial vs destinations,
    one axes per planner, the paper's quoted factors (``data["paper_points"]``) as black
    stars on the axes of their panel and planner."""
    figs = {}
    quoted = data.get("paper_points", [])
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
            for q in quoted:
                if q["panel"] == panel["panel"] and q["planner"] == planner:
                    ax.scatter(
                        [q["destinations"]],
                        [q["foi"]],
                        marker="*",
                        s=160,
                        c="k",
                        zorder=5,
                        label=f"paper: {q['foi']:g} ({q['setting']})",
                    )
            ax.axhline(1.0, color="0.6", lw=0.8)
            ax.set_xlabel("destinations (nodes)")
            ax.set_ylabel(f"factor of improvement of {planner.upper()} over binomial")
            ax.set_title(planner)
            ax.legend(fontsize=7)
        fig.suptitle(f"Banikazemi et al. 1998, Sec. 7.2 — by {panel['series_label']}")
        figs[f"banikazemi-sim-{panel['panel']}.png"] = fig
    return figs


@register_builder("banikazemi-table2")
def banikazemi_table2(data: dict[str, Any]) -> dict[str, Any]:
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
    return {"banikazemi-table2.png": fig}
