"""Hsu, Tsai, Chen & Yu, "Performance-Effective and Contention-Free Broadcasts on Irregular
Network with Heterogeneous Workstations" (2005): Sec. 6 (Fig. 5-8) and the paper's claims.

- ``hsu-labs``: LABS vs TWO-VBBS (our reconstruction) on random irregular networks of 16..256
  workstations, 8-port switches, density 4; Fig. 5 (2048-flit messages, 2/4/6/8 speed
  types), Fig. 6 (10240 flits), Fig. 7 (25 % fastest, 25 % slowest), Fig. 8 (the bell
  distribution); ``switch_aware`` (ours) and FNF beside them.  Every time in **both
  accountings**: event-driven (:func:`hetcoll.simulate`, exclusive link
  contention) and summed per-step maxima (:func:`hetcoll.steps.step_time`).  The paper
  does not say how its per-transfer costs become a broadcast time.
- ``hsu-claims``: how often the paper's claims hold on random topologies: contention-freedom
  of LABS and TWO-VBBS per step (shortest up*/down* routes; routes along the spanning
  tree), without overlaps in the event-driven run, Lemma 1 (LST depth) and Lemma 2 (steps).

Every number is simulated with the ``switch`` model (eq. 1-5; 1-byte flits, 100 Mbps links,
8 us per port, a 1 Gbps switch fabric: :mod:`hetcoll.models.switch`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..contention import contention
from ..errors import HetcollError
from ..generators import switch_platform
from ..planners import plan
from ..planners._common import prepare
from ..planners.labs import labs_plan
from ..report import format_table
from ..rng import as_rng, spawn_seeds
from ..simulator import simulate
from ..steps import step_conflicts, step_count, step_time
from ._base import Config, Result, experiment, run_trials

__all__ = ["hsu_labs", "hsu_claims", "PANELS", "PAPER_GAIN", "PLANNERS"]

PAPER = "Hsu, Tsai, Chen & Yu, 2005"
#: The planners compared, in table order.
PLANNERS = ("labs", "two_vbbs", "switch_aware", "fnf")
#: The paper's headline gains of LABS over TWO-VBBS (% of TWO-VBBS's time): Sec. 6.1.
PAPER_GAIN = {"fig5": 12.14, "fig6": 18.29}
#: The panels of Sec. 6: message size (flits), speed distribution, speed type counts.
PANELS: dict[str, dict[str, Any]] = {
    "fig5": {"flits": 2048, "speeds": "uniform", "types": [2, 4, 6, 8]},
    "fig6": {"flits": 10240, "speeds": "uniform", "types": [2, 4, 6, 8]},
    "fig7": {"flits": 2048, "speeds": "extremes", "types": [8]},
    "fig8": {"flits": 2048, "speeds": "bell", "types": [8]},
}
LABS_DEFAULTS: dict[str, Any] = {
    "sizes": [16, 32, 64, 128, 256],
    "density": 4.0,
    "panels": list(PANELS),
    "types": [2, 4, 6, 8],
}
CLAIMS_DEFAULTS: dict[str, Any] = {
    "sizes": [16, 32, 64, 128, 256],
    "density": 4.0,
    "types": 8,
    "flits": 2048,
}
_TREE = {"name": "switch", "routes": "tree"}


def _params(name: str, defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise HetcollError(
            f"{name}: unknown parameter {unknown[0]!r} (expected: {', '.join(defaults)})"
        )
    return {**defaults, **given}


def _root(seed: int, n: int) -> str:
    """The source: a random workstation (the generator places workstations at random)."""
    return f"w{int(as_rng(seed).integers(n))}"


# -- hsu-labs ------------------------------------------------------------------------------------


def _labs_trial(task: tuple[int, str, int, int, dict[str, Any]]) -> dict[str, dict[str, float]]:
    seed, panel, n, types, params = task
    spec = PANELS[panel]
    p = switch_platform(n, density=params["density"], speeds=spec["speeds"], types=types, seed=seed)
    root = _root(seed, n)
    out = {}
    for name in PLANNERS:
        s = plan(p, root, method=name, nbytes=spec["flits"])
        out[name] = {
            "event": simulate(p, s).makespan,
            "steps": step_time(p, s),
            "step_count": step_count(s),
        }
    return out


def _gain(base: float, other: float) -> float:
    """Percent by which ``other`` is faster than ``base``: ``100 (base - other) / base``."""
    return 100.0 * (base - other) / base


def _summary(trials: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for acc in ("event", "steps"):
        mean = {k: float(np.mean([t[k][acc] for t in trials])) for k in PLANNERS}
        best = [min(t["labs"][acc], t["two_vbbs"][acc]) for t in trials]
        ours = [t["switch_aware"][acc] for t in trials]
        gains = [_gain(b, o) for b, o in zip(best, ours, strict=True)]
        out[acc] = {
            "mean": mean,
            "labs_gain": _gain(mean["two_vbbs"], mean["labs"]),
            "labs_wins": float(np.mean([t["labs"][acc] < t["two_vbbs"][acc] for t in trials])),
            "ours_gain": float(np.mean(gains)),
            "ours_gain_min": float(np.min(gains)),
            "ours_gain_max": float(np.max(gains)),
            "ours_wins": int(sum(o < b * (1 - 1e-12) for b, o in zip(best, ours, strict=True))),
            "ours_losses": int(sum(o > b * (1 + 1e-12) for b, o in zip(best, ours, strict=True))),
            "fnf_gain": float(
                np.mean([_gain(b, t["fnf"][acc]) for b, t in zip(best, trials, strict=True)])
            ),
        }
    out["step_count"] = {k: float(np.mean([t[k]["step_count"] for t in trials])) for k in PLANNERS}
    return out


@experiment(
    "hsu-labs",
    paper=f"{PAPER}, Sec. 6, Fig. 5-8",
    summary="LABS vs TWO-VBBS (reconstructed), switch_aware and FNF on random switch networks, "
    "event-driven and summed per-step maxima",
)
def hsu_labs(config: Config) -> Result:
    """Fig. 5-8 on ``config.trials`` random topologies per point (default 20; the paper does
    not say how many).  ``config.params`` overrides ``sizes``, ``density``, ``panels`` and
    ``types`` (the speed-type counts of Fig. 5 and 6)."""
    params = _params("hsu-labs", LABS_DEFAULTS, config.params)
    for panel in params["panels"]:
        if panel not in PANELS:
            raise HetcollError(f"hsu-labs: unknown panel {panel!r} (choose from {list(PANELS)})")
    trials = config.trials or 20
    points = [
        (panel, n, types)
        for panel in params["panels"]
        for types in (params["types"] if PANELS[panel]["speeds"] == "uniform" else [8])
        for n in params["sizes"]
    ]
    tasks = [
        (seed, panel, n, types, params)
        for (panel, n, types), ps in zip(points, spawn_seeds(config.seed, len(points)), strict=True)
        for seed in spawn_seeds(ps, trials)
    ]
    results = run_trials(
        _labs_trial,
        tasks,
        workers=config.workers,
        progress=config.progress,
        executor=config.executor,
        description="hsu-labs",
    )
    panels: dict[str, list[dict[str, Any]]] = {p: [] for p in params["panels"]}
    for i, (panel, n, types) in enumerate(points):
        block = results[i * trials : (i + 1) * trials]
        panels[panel].append({"workstations": n, "types": types, **_summary(block)})
    headline = _headline(panels)
    data = {
        "experiment": "hsu-labs",
        "paper": f"{PAPER}, Sec. 6, Fig. 5-8",
        "trials": trials,
        "seed": config.seed,
        "params": params,
        "model": "switch",
        "planners": list(PLANNERS),
        "panel_specs": {p: PANELS[p] for p in params["panels"]},
        "panels": panels,
        "headline": headline,
        "paper_gain_percent": PAPER_GAIN,
    }
    return Result(
        "hsu-labs",
        data,
        _labs_tables(data),
        figures=["hsu-labs-times", "hsu-labs-gains"],
    )


def _headline(panels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per panel and accounting: LABS's mean gain over TWO-VBBS (all points, and per number of
    speed types), and switch_aware's gain over the better of the two at 8 types (the mean
    over every topology, and the least and the most on one)."""
    out: dict[str, Any] = {}
    for panel, pts in panels.items():
        entry: dict[str, Any] = {}
        for acc in ("event", "steps"):
            by_types: dict[str, float] = {}
            for t in sorted({p["types"] for p in pts}):
                by_types[str(t)] = float(
                    np.mean([p[acc]["labs_gain"] for p in pts if p["types"] == t])
                )
            eight = [p for p in pts if p["types"] == 8]
            entry[acc] = {
                "labs_gain": float(np.mean([p[acc]["labs_gain"] for p in pts])),
                "labs_gain_by_types": by_types,
                "ours_gain_8_types": float(np.mean([p[acc]["ours_gain"] for p in eight]))
                if eight
                else None,
                "ours_gain_8_types_min": min(p[acc]["ours_gain_min"] for p in eight)
                if eight
                else None,
                "ours_gain_8_types_max": max(p[acc]["ours_gain_max"] for p in eight)
                if eight
                else None,
                "ours_losses": int(sum(p[acc]["ours_losses"] for p in pts)),
            }
        out[panel] = entry
    return out


def _labs_tables(data: dict[str, Any]) -> list[str]:
    tables = []
    trials = data["trials"]
    for panel, pts in data["panels"].items():
        spec = data["panel_specs"][panel]
        rows = []
        for p in pts:
            e, s = p["event"], p["steps"]
            rows.append(
                [
                    p["workstations"],
                    p["types"],
                    f"{e['mean']['labs'] * 1e3:.2f}",
                    f"{e['mean']['two_vbbs'] * 1e3:.2f}",
                    f"{e['mean']['switch_aware'] * 1e3:.2f}",
                    f"{e['mean']['fnf'] * 1e3:.2f}",
                    f"{e['labs_gain']:+.1f}",
                    f"{s['labs_gain']:+.1f}",
                    f"{e['ours_gain']:+.1f}",
                    f"{s['ours_gain']:+.1f}",
                ]
            )
        paper = PAPER_GAIN.get(panel)
        tables.append(
            format_table(
                [
                    "N",
                    "types",
                    "labs ms",
                    "two_vbbs ms",
                    "ours ms",
                    "fnf ms",
                    "LABS gain % (event)",
                    "(steps)",
                    "ours vs best % (event)",
                    "(steps)",
                ],
                rows,
                title=(
                    f"Hsu et al. {panel.replace('fig', 'Fig. ')}: {spec['flits']}-flit messages, "
                    f"{spec['speeds']} speeds, density {data['params']['density']:g}, "
                    f"{trials} topologies per row; times event-driven (mean); gain = "
                    "100 (T_two_vbbs - T_labs) / T_two_vbbs"
                    + (f"; paper: LABS about {paper} % better" if paper else "")
                    + "; TWO-VBBS is our reconstruction"
                ),
            )
        )
    rows = []
    for panel, h in data["headline"].items():
        paper = PAPER_GAIN.get(panel)
        for acc in ("event", "steps"):
            by = h[acc]["labs_gain_by_types"]
            rows.append(
                [
                    panel,
                    acc,
                    f"{h[acc]['labs_gain']:+.1f}",
                    " ".join(f"{t}:{g:+.1f}" for t, g in by.items()),
                    "" if paper is None else f"{paper:.2f}",
                    ""
                    if h[acc]["ours_gain_8_types"] is None
                    else f"{h[acc]['ours_gain_8_types']:+.1f}",
                    ""
                    if h[acc]["ours_gain_8_types"] is None
                    else f"{h[acc]['ours_gain_8_types_min']:+.1f} .. "
                    f"{h[acc]['ours_gain_8_types_max']:+.1f}",
                    h[acc]["ours_losses"],
                ]
            )
    tables.append(
        format_table(
            [
                "panel",
                "accounting",
                "LABS gain %",
                "by speed types",
                "paper %",
                "ours vs best, 8 types %",
                "(least .. most)",
                "ours slower",
            ],
            rows,
            title="LABS over TWO-VBBS (reconstructed) next to the paper, both accountings; "
            "ours = switch_aware vs the better of LABS and TWO-VBBS on each topology",
        )
    )
    return tables


# -- hsu-claims -----------------------------------------------------------------------------------

#: What a claims trial checks, in table order: (key, claim, routes, paper's statement).
CLAIMS = (
    ("labs_short", "LABS contention-free per step", "shortest up*/down*", "Sec. 5, 7"),
    ("labs_lst", "LABS contention-free per step", "along its LST", "Sec. 5, 7"),
    ("labs_tree", "LABS contention-free per step", "along the up*/down* tree", "Sec. 5, 7"),
    ("labs5_short", "LABS without step 5, per step", "shortest up*/down*", "(ablation)"),
    ("labs5_lst", "LABS without step 5, per step", "along its LST", "(ablation)"),
    ("two_short", "TWO-VBBS* contention-free per step", "shortest up*/down*", "Sec. 1 [7]"),
    ("two_tree", "TWO-VBBS* contention-free per step", "along the up*/down* tree", "Sec. 1 [7]"),
    ("pd_short", "postorder doubling, per step", "shortest up*/down*", "Sec. 2.3 [3, 5]"),
    ("pd_tree", "postorder doubling, per step", "along the up*/down* tree", "Sec. 2.3 [3, 5]"),
    ("labs_run_short", "LABS no overlap, event-driven", "shortest up*/down*", "Sec. 5"),
    ("labs_run_tree", "LABS no overlap, event-driven", "along the up*/down* tree", "Sec. 5"),
    ("two_run_short", "TWO-VBBS* no overlap, event-driven", "shortest up*/down*", "Sec. 1"),
    ("two_run_tree", "TWO-VBBS* no overlap, event-driven", "along the up*/down* tree", "Sec. 1"),
    ("lst_legal", "LABS's LST routes are legal up*/down*", "along its LST", "(implicit)"),
    ("lemma1", "Lemma 1: LST depth <= ceil(log2 s) + 1", "", "Lemma 1"),
    ("lst_spans", "the width-limited LST spans the switches", "", "Sec. 4"),
    ("lemma2", "Lemma 2: binomial-like takes ceil(log2(n+1)) steps", "", "Lemma 2"),
    ("labs_steps", "LABS takes ceil(log2(n+1)) steps", "", "Sec. 7"),
)


def _claims_trial(task: tuple[int, int, dict[str, Any]]) -> dict[str, bool]:
    seed, n, params = task
    p = switch_platform(n, density=params["density"], types=params["types"], seed=seed)
    root = _root(seed, n)
    m = params["flits"]
    net = p.switches
    rt = net.routing
    sw = net.switch_of.tolist()
    lp = labs_plan(prepare(p, root, None, None, m))
    lst = lp.tree

    def along_lst(u: int, v: int) -> tuple[int, ...]:
        return rt.resources(lst.path(sw[u], sw[v]))

    labs = plan(p, root, method="labs", nbytes=m)
    labs5 = plan(p, root, method="labs", nbytes=m, options={"rearrange": False})
    two = plan(p, root, method="two_vbbs", nbytes=m)
    pd = plan(p, root, method="postorder_doubling", nbytes=m)
    bl = plan(p, root, method="binomial_like", nbytes=m)
    bound = math.ceil(math.log2(n)) if n > 1 else 0
    used = {(sw[a], sw[b]) for a, b in lp.edges if sw[a] != sw[b]}
    return {
        "labs_short": not step_conflicts(p, labs),
        "labs_lst": not step_conflicts(p, labs, routes=along_lst),
        "labs_tree": not step_conflicts(p, labs, _TREE),
        "labs5_short": not step_conflicts(p, labs5),
        "labs5_lst": not step_conflicts(p, labs5, routes=along_lst),
        "two_short": not step_conflicts(p, two),
        "two_tree": not step_conflicts(p, two, _TREE),
        "pd_short": not step_conflicts(p, pd),
        "pd_tree": not step_conflicts(p, pd, _TREE),
        "labs_run_short": contention(p, labs).free,
        "labs_run_tree": contention(p, labs, _TREE).free,
        "two_run_short": contention(p, two).free,
        "two_run_tree": contention(p, two, _TREE).free,
        "lst_legal": all(rt.is_legal(lst.path(a, b)) for a, b in used),
        "lemma1": lst.within_bound,
        "lst_spans": lst.spans,
        "lemma2": step_count(bl) == bound,
        "labs_steps": step_count(labs) <= bound,
    }


@experiment(
    "hsu-claims",
    paper=f"{PAPER}, Lemma 1, Lemma 2, Sec. 5 and 7",
    summary="how often the paper's claims hold on random topologies: contention-freedom "
    "(both route choices), Lemma 1, Lemma 2",
)
def hsu_claims(config: Config) -> Result:
    """``config.trials`` random topologies per size (default 100: 500 in all), a random
    source each; ``config.params`` overrides ``sizes``, ``density``, ``types``, ``flits``."""
    params = _params("hsu-claims", CLAIMS_DEFAULTS, config.params)
    trials = config.trials or 100
    sizes = params["sizes"]
    tasks = [
        (seed, n, params)
        for n, ps in zip(sizes, spawn_seeds(config.seed, len(sizes)), strict=True)
        for seed in spawn_seeds(ps, trials)
    ]
    results = run_trials(
        _claims_trial,
        tasks,
        workers=config.workers,
        progress=config.progress,
        executor=config.executor,
        description="hsu-claims",
    )
    by_size = {}
    for i, n in enumerate(sizes):
        block = results[i * trials : (i + 1) * trials]
        by_size[str(n)] = {k: float(np.mean([r[k] for r in block])) for k, *_ in CLAIMS}
    overall = {k: float(np.mean([r[k] for r in results])) for k, *_ in CLAIMS}
    data = {
        "experiment": "hsu-claims",
        "paper": f"{PAPER}, Lemma 1, Lemma 2, Sec. 5 and 7",
        "trials": trials,
        "seed": config.seed,
        "params": params,
        "claims": [{"key": k, "claim": c, "routes": r, "where": w} for k, c, r, w in CLAIMS],
        "by_size": by_size,
        "overall": overall,
        "paper_fraction": 1.0,
    }
    return Result("hsu-claims", data, _claims_tables(data), figures=["hsu-claims"])


def _claims_tables(data: dict[str, Any]) -> list[str]:
    sizes = list(data["by_size"])
    rows = []
    for c in data["claims"]:
        k = c["key"]
        rows.append(
            [c["claim"], c["routes"], c["where"]]
            + [f"{100 * data['by_size'][n][k]:.0f}" for n in sizes]
            + [f"{100 * data['overall'][k]:.1f}"]
        )
    return [
        format_table(
            ["claim", "routes", "paper", *(f"N={n} %" for n in sizes), "all %"],
            rows,
            title=(
                f"Hsu et al.'s claims on {data['trials']} random topologies per size (density "
                f"{data['params']['density']:g}, {data['params']['types']} speed types, a random "
                "source): % of topologies where each holds; the paper claims 100 %. "
                "TWO-VBBS* is our reconstruction."
            ),
        )
    ]
