"""Figures of ``hsu-labs`` and ``hsu-claims``, drawn from their JSON data only."""

from __future__ import annotations

from typing import Any

from ..plots import color, figure, register_builder

__all__ = ["times", "gains", "claims"]

_LABELS = {"two_vbbs": "TWO-VBBS (reconstructed)", "switch_aware": "switch_aware (ours)"}


@register_builder("hsu-labs-times")
def times(data: dict[str, Any]) -> dict[str, Any]:
    """One panel per figure of the paper: mean broadcast time against the number of
    workstations at the most speed types, event-driven (solid) and summed per-step maxima
    (dashed, hollow markers), for every planner."""
    panels = data["panels"]
    fig, axes = figure(ncols=len(panels), size=(4.2 * len(panels), 3.8))
    for ax, (panel, pts) in zip(axes[0], panels.items(), strict=True):
        most = max(p["types"] for p in pts)
        sel = [p for p in pts if p["types"] == most]
        for name in data["planners"]:
            for acc, style, fill in (("event", "-", "full"), ("steps", "--", "none")):
                ax.plot(
                    [p["workstations"] for p in sel],
                    [p[acc]["mean"][name] * 1e3 for p in sel],
                    marker="o",
                    fillstyle=fill,
                    linestyle=style,
                    color=color(name),
                    label=f"{_LABELS.get(name, name)} ({acc})",
                )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workstations")
        ax.set_ylabel("broadcast time (ms)")
        spec = data["panel_specs"][panel]
        ax.set_title(f"{panel}: {spec['flits']} flits, {spec['speeds']}, {most} types")
    axes[0][0].legend(fontsize="x-small")
    return {"hsu-labs-times.png": fig}


@register_builder("hsu-labs-gains")
def gains(data: dict[str, Any]) -> dict[str, Any]:
    """LABS's mean gain over TWO-VBBS against the number of speed types, both accountings,
    with the paper's headline gains (12.14 % small messages, 18.29 % large) drawn as lines."""
    fig, axes = figure(ncols=2, size=(11.0, 4.2))
    for ax, acc in zip(axes[0], ("event", "steps"), strict=True):
        for panel, h in data["headline"].items():
            by = h[acc]["labs_gain_by_types"]
            xs = [int(t) for t in by]
            ax.plot(xs, list(by.values()), marker="o", label=panel, color=color(panel))
            paper = data["paper_gain_percent"].get(panel)
            if paper is not None:
                ax.axhline(paper, color=color(panel), lw=0.8, ls="--")
                ax.annotate(
                    f"paper {panel}: {paper} %",
                    (max(xs), paper),
                    ha="right",
                    va="bottom",
                    fontsize="x-small",
                )
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xlabel("speed types")
        ax.set_ylabel("LABS gain over TWO-VBBS (%)")
        ax.set_title("event-driven" if acc == "event" else "summed per-step maxima")
        ax.legend(fontsize="small")
    return {"hsu-labs-gains.png": fig}


@register_builder("hsu-claims")
def claims(data: dict[str, Any]) -> dict[str, Any]:
    """Bars: the share of random topologies on which each claim holds, per size, with the
    paper's 100 % drawn as a line."""
    entries = data["claims"]
    sizes = list(data["by_size"])
    fig, axes = figure(size=(12.0, 5.0))
    ax = axes[0][0]
    width = 0.8 / len(sizes)
    for j, n in enumerate(sizes):
        ax.bar(
            [i + j * width for i in range(len(entries))],
            [100 * data["by_size"][n][c["key"]] for c in entries],
            width=width,
            label=f"N = {n}",
            color=color(f"size{n}"),
        )
    ax.axhline(100 * data["paper_fraction"], color="k", lw=1.0, ls="--", label="paper: always")
    ax.set_xticks(
        [i + 0.4 - width / 2 for i in range(len(entries))],
        [f"{c['claim']} ({c['routes']})" if c["routes"] else c["claim"] for c in entries],
        rotation=60,
        ha="right",
        fontsize="x-small",
    )
    ax.set_ylabel("topologies where it holds (%)")
    ax.set_title(f"{data['trials']} random topologies per size")
    ax.legend(fontsize="x-small", ncols=3)
    return {"hsu-claims.png": fig}
