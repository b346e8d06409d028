"""Does the probe's fit predict large messages?  Natively, on this host's ranks.

``hetcoll probe`` (its default sizes 0 B to 16 MiB, or ``--probe-sizes``) gives a platform;
the same ranks then measure round trips at 1, 4, 16 and 64 MiB through the same engine
(every pair, the least of 3 repeats in each of 3 rounds, the least round kept) and this
compares them with what the fitted platform's model predicts (its size curve included):
per size the median and the largest ``|predicted / measured - 1|`` over the pairs, and
``measured again``: the median ``|again / measured - 1|`` of the same round trips measured a
second time right after (no prediction is closer than the host repeats itself); and the fit
against the probe's own round trips (what it was fitted to).  The target is 20 % within
the probed span (what ``auto``'s margin has to absorb); a size beyond the largest probed
one is marked ``beyond`` (the last segment's per-byte cost extrapolated).
The host's load is in the title; a busy host only delays round trips, so the least of the
rounds is what it disturbed least.

Run: ``.venv/bin/python benchmarks/mpi/bench_probe_fit.py [--ranks 4] [--probe-sizes
0,4096,65536,1048576,16777216,67108864] [--json PATH]``; prints a table, writes
``results/bench_probe_fit.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hetcoll.jobs import run_program
from hetcoll.report import format_table
from hetcoll.units import format_size, format_time

HERE = Path(__file__).parent
SIZES = (1 << 20, 4 << 20, 16 << 20, 64 << 20)


def summary(doc: dict, key: str = "rows") -> list[dict]:
    """Per size: the median and largest relative error of the predicted round trips, and
    (where measured) the median of ``|again / measured - 1|``, a second measurement's.

    >>> doc = {"sizes": [1], "rows": [{"nbytes": 1, "measured": 2.0, "predicted": 2.2},
    ...                               {"nbytes": 1, "measured": 1.0, "predicted": 0.9}]}
    >>> [round(x, 3) for x in summary(doc)[0]["errors"]]
    [0.1, 0.1]
    """
    out = []
    for n in sorted({r["nbytes"] for r in doc[key]}):
        rows = [r for r in doc[key] if r["nbytes"] == n]
        err = np.array([r["predicted"] / r["measured"] - 1 for r in rows])
        again = [abs(r["again"] / r["measured"] - 1) for r in rows if "again" in r]
        out.append(
            {
                "nbytes": n,
                "measured": float(np.median([r["measured"] for r in rows])),
                "predicted": float(np.median([r["predicted"] for r in rows])),
                "errors": [float(np.median(np.abs(err))), float(np.max(np.abs(err)))],
                "repeat": float(np.median(again)) if again else None,
            }
        )
    return out


def slopes(doc: dict) -> list[dict]:
    """Per pair of consecutive measured sizes, the median over pairs of the incremental
    per-byte cost ``(RTT(m) - RTT(n)) / (m - n)``: an affine model (one per-byte cost)
    predicts every size within 20 % only if these agree within about that much.

    >>> doc = {"sizes": [1, 3], "rows": [{"u": 0, "v": 1, "nbytes": 1, "measured": 2.0},
    ...                                  {"u": 0, "v": 1, "nbytes": 3, "measured": 6.0}]}
    >>> slopes(doc)
    [{'from': 1, 'to': 3, 'per_byte': 2.0}]
    """
    rtt = {(r["u"], r["v"], r["nbytes"]): r["measured"] for r in doc["rows"]}
    pairs = sorted({(u, v) for u, v, _ in rtt})
    out = []
    for n, m in zip(doc["sizes"], doc["sizes"][1:], strict=False):
        per = [(rtt[(u, v, m)] - rtt[(u, v, n)]) / (m - n) for u, v in pairs]
        out.append({"from": n, "to": m, "per_byte": float(np.median(per))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--probe-sizes", default="default", help="bytes, comma-separated")
    ap.add_argument("--json", default="results/bench_probe_fit.json")
    args = ap.parse_args(argv)
    doc = run_program(
        args.ranks,
        HERE / "ranks" / "probe_fit.py",
        [",".join(map(str, SIZES)), args.probe_sizes],
        timeout=3600,
    )
    s = summary(doc)
    largest = max(doc["probe_sizes"])
    rows = [
        [
            format_size(x["nbytes"]) + ("" if x["nbytes"] <= largest else " (beyond)"),
            format_time(x["measured"]),
            format_time(x["predicted"]),
            f"{x['errors'][0]:.0%}",
            f"{x['errors'][1]:.0%}",
            "" if x["repeat"] is None else f"{x['repeat']:.0%}",
        ]
        for x in s
    ]
    (l0, *_), (l1, *_) = doc["load"]
    title = (
        f"probe fit on {doc['ranks']} ranks, native ({doc['classes']} speed class(es), "
        f"reliable: {doc['reliable']}; load average {l0:.1f}-{l1:.1f}): round trips, "
        "median over pairs"
    )
    print(
        format_table(
            ["size", "measured", "predicted", "median error", "largest error", "measured again"],
            rows,
            title,
        )
    )
    steps = slopes(doc)
    if "probed" in doc:
        own = summary(doc, "probed")
        print(
            "the fit against the probe's own round trips (median error over pairs): "
            + ", ".join(f"{format_size(x['nbytes'])} {x['errors'][0]:.0%}" for x in own)
        )
    curve = doc["size_curve"]
    print(
        "size curve (per-byte cost from each start, times t_byte): "
        + (
            ", ".join(f"{format_size(a)}: {m:.2f}" for a, m in curve)
            if curve
            else "none (one per-byte cost)"
        )
    )
    print(
        "incremental cost per byte (median over pairs): "
        + ", ".join(
            f"{format_size(x['from'])} to {format_size(x['to'])}: {x['per_byte'] * 1e9:.2f} ns"
            for x in steps
        )
    )
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**doc, "summary": s, "slopes": steps}, indent=1) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
