"""The figure of the ``allreduce-star`` experiment, drawn from its JSON data only."""

from __future__ import annotations

from typing import Any

from ..plots import color, figure, register_builder
from ..units import format_size

__all__ = ["LABELS", "ratios"]

#: what each line is, for a reader who does not know the planners' names
LABELS = {
    "auto": "auto (hetcoll: fastest simulated plan)",
    "forest": "forest (hetcoll: optimal per-root packing)",
    "sites": "sites (hetcoll: a leader per site streams the WAN)",
    "site_pairs": "site_pairs (hetcoll: every host crosses the WAN to its counterpart)",
    "site_exchange": "site_exchange (hetcoll: the sites swap their partial sums at once)",
    "balanced": "balanced (hetcoll: butterfly, shares by bandwidth)",
    "eff_cube": "eff_cube (hetcoll: hypercube fitted to the platform)",
    "ring": "ring (MPICH)",
    "rabenseifner": "Rabenseifner (MPICH: halving + doubling)",
    "bruck": "Bruck (MPICH)",
    "blind": "recursive doubling (MPICH)",
    "binomial": "binomial reduce/gather + bcast (MPICH)",
    "default": "default HetComm (its choice per call), measured",
    "mpi": "MPICH's own selection",
}

#: a marker per planner, so that lines of close colours stay apart
MARKERS = {"auto": "o", "forest": "^", "sites": "<", "site_pairs": ">", "site_exchange": "h",
           "balanced": "v",
           "eff_cube": "D", "ring": "s", "rabenseifner": "P", "bruck": "X", "blind": "x",
           "binomial": "+", "default": "*", "mpi": "d"}  # fmt: skip


@register_builder("allreduce-star")
def ratios(data: dict[str, Any]) -> dict[str, Any]:
    """One panel per platform and collective: each planner's time / lower bound against
    the result size (log axes), the bound the line at 1; hetcoll's plans solid, MPI's
    algorithms dashed, one legend for all panels; what was measured under emulation
    (``data["measured"]``) dotted on its platform's panels, after the simulated lines."""
    setup = data["setup"]
    names = list(setup["platforms"])
    collectives = list(setup["hetcoll"])
    fig, axes = figure(ncols=len(collectives), nrows=len(names), size=(11.0, 3.8 * len(names)))
    handles: dict[str, Any] = {}
    for row, name in enumerate(names):
        for col, collective in enumerate(collectives):
            ax = axes[row][col]
            points = [
                p for p in data["points"] if p["platform"] == name and p["collective"] == collective
            ]
            xs = [p["M"] for p in points]
            line = ax.axhline(1.0, color="k", lw=1.5)
            handles.setdefault("bound", line)
            for algo in setup["hetcoll"][collective] + setup["baselines"][collective]:
                ours = algo in setup["hetcoll"][collective]
                drawn = [p for p in points if p["times"][algo] is not None]
                if not drawn:  # n/a on this platform
                    continue
                (line,) = ax.plot(
                    [p["M"] for p in drawn],
                    [p["times"][algo] / p["bound"] for p in drawn],
                    color=color(algo),
                    ls="-" if ours else "--",
                    marker=MARKERS.get(algo, "o"),
                    ms=4,
                    mfc=None if ours else "none",
                )
                handles.setdefault(algo, line)
            measured = data.get("measured")
            if measured is not None and measured["platform"] == name:
                _measured_lines(ax, measured["points"], collective, handles)
                xs = sorted({*xs, *(p["M"] for p in measured["points"])})
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [format_size(x) for x in xs], rotation=45, ha="right")
            ax.tick_params(axis="x", which="minor", bottom=False)
            ax.set_yscale("log")
            ax.set_xlabel("M: result size (bytes)")
            ax.set_ylabel("time / lower bound")
            ax.set_title(f"{collective} on {name}", fontsize="medium")
    labels = [_label(key) for key in handles]
    fig.legend(
        list(handles.values()), labels, loc="outside lower center", ncols=2, fontsize="small"
    )
    return {"allreduce-star.png": fig}


def _label(key: str) -> str:
    if key == "bound":
        return "lower bound = 1 (no schedule is faster)"
    if key.startswith("measured "):
        algo = key.removeprefix("measured ")
        what = LABELS.get(algo, algo)
        return what if algo == "default" else f"{what}, measured"
    return LABELS.get(key, key)


def _measured_lines(ax, points, collective: str, handles: dict[str, Any]) -> None:
    """The measured time / bound of the default wrapper and each MPI algorithm, dotted."""
    points = [p for p in points if p["collective"] == collective]
    if not points:
        return
    for algo in points[0]["times"]:
        (line,) = ax.plot(
            [p["M"] for p in points],
            [p["times"][algo] / p["bound"] for p in points],
            color=color(algo),
            ls=":",
            marker=MARKERS.get(algo, "o"),
            ms=5,
            mfc=None if algo == "default" else "none",
        )
        handles.setdefault(f"measured {algo}", line)
