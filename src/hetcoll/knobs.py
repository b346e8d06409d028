"""When a user's tuning knob (``segment_size``, ``spin``) is slower than hetcoll's default.

A knob a user sets is obeyed; what hetcoll knows against it is said once, as a
:class:`~hetcoll.errors.KnobWarning` through Python's :mod:`warnings` (a program filters it
like any warning: ``warnings.simplefilter("ignore", KnobWarning)``, or ``"error"`` to stop
there), never printed otherwise.  Each rank warns for itself: every rank reaches the same
verdict from the same inputs, so an ``"error"`` filter raises on every rank alike rather than
on one while the others wait in the next collective.  Three sources, none of them a timing
taken at run time (a program's own calls are no measurement: they are not paired with MPI's):

- **measured**: a tuning file whose measurements (``hetcoll tune --segment-sizes ...
  --spin ...``) have the same knob value slower than the same plan without it;
- **model**: where ``auto`` trusts the model (under emulation, or ranks on several hosts),
  a broadcast whose plan with the user's ``segment_size`` is predicted slower than the same
  planner's plan without segments by more than ``auto``'s margin (what the model can tell
  apart);
- **oversubscribed**: ``spin`` natively on a host with more ranks than usable cores: a rank
  that polls keeps a core from a rank that has work (the default spin is tuned for this
  host; a long spin is fastest on dedicated cores only, docs/runtime.md).

Otherwise nothing reliable is known without measuring, and hetcoll stays silent: natively on
one host with a planner named by the user, only ``hetcoll tune --segment-sizes ...
--spin ...`` can tell (it measures each knob beside the default and MPI's own, and says which
are slower).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .errors import KnobWarning
from .units import format_size, format_time

__all__ = ["measured_slower", "segment_verdict", "spin_verdict", "usable_cores", "warn"]


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; the CPU count elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def spin_verdict(spin: float, ranks_on_host: int, cores: int) -> str | None:
    """Why ``spin`` (seconds, given by the user) is slower than the default here, or None.

    >>> spin_verdict(1e-3, 8, 2)[:40]
    'spin=1 ms with 8 ranks on this host and '
    >>> spin_verdict(1e-3, 2, 2) is None
    True
    """
    if spin <= 0 or ranks_on_host <= cores:
        return None
    return (
        f"spin={format_time(spin)} with {ranks_on_host} ranks on this host and {cores} usable "
        "cores: a rank that polls keeps a core from a rank with work, which the default spin "
        "avoids; measure it with hetcoll tune --spin"
    )


def segment_verdict(
    collective: str,
    nbytes: int,
    algorithm: str,
    segment_size: int,
    t_segments: float,
    t_whole: float,
    margin: float,
) -> str | None:
    """The model's verdict on a segment size: a message when the plan with segments is
    predicted slower than without by more than ``margin`` (``t_segments > t_whole * (1 +
    margin)``), else None.

    >>> segment_verdict("bcast", 1 << 20, "chain", 4096, 3.0, 2.0, 0.25)[:31]
    'segment_size=4 KiB: the model p'
    >>> segment_verdict("bcast", 1 << 20, "chain", 4096, 2.4, 2.0, 0.25) is None
    True
    """
    if not t_segments > t_whole * (1 + margin):
        return None
    return (
        f"segment_size={format_size(segment_size)}: the model predicts this {collective} of "
        f"{format_size(nbytes)} with {algorithm!r} {t_segments / t_whole:.2f}x as long as "
        f"without segments ({format_time(t_segments)} against {format_time(t_whole)})"
    )


def measured_slower(
    measurements: Any, *, spin: float | None = None, segment_size: int | None = None
) -> list[str]:
    """What a tuning file measured against the user's knob values: per row where a plan
    with ``spin`` (or ``segment_size``) as a knob was slower than the same plan without it,
    one message (a tuning file's ``measurements``, as ``hetcoll tune`` writes them).

    >>> rows = [{"collective": "bcast", "nbytes": 1 << 20, "plans": [
    ...     {"algorithm": "fnf", "segment_size": None, "speedup_median": 1.2},
    ...     {"algorithm": "fnf", "segment_size": None, "spin": 1e-3, "knob": True,
    ...      "speedup_median": 0.6}]}]
    >>> measured_slower(rows, spin=1e-3)
    ['spin=1 ms: hetcoll tune measured bcast of 1 MiB with fnf 0.50x as fast as without it']
    """
    out = []
    for row in measurements or ():
        plans = row.get("plans", []) if isinstance(row, dict) else []
        for p in plans:
            if not p.get("knob"):
                continue
            if spin is not None and p.get("spin") == spin:
                what = f"spin={format_time(spin)}"
                same = {"algorithm": p["algorithm"], "segment_size": p.get("segment_size")}
            elif spin is None and segment_size is not None and p.get("spin") is None:
                if p.get("segment_size") != segment_size:
                    continue
                what = f"segment_size={format_size(segment_size)}"
                same = {"algorithm": p["algorithm"]}
            else:
                continue
            base = next(
                (
                    q
                    for q in plans
                    if not q.get("knob") and all(q.get(k) == v for k, v in same.items())
                ),
                None,
            )
            if base is None or not p["speedup_median"] < base["speedup_median"]:
                continue
            ratio = p["speedup_median"] / base["speedup_median"]
            out.append(
                f"{what}: hetcoll tune measured {row['collective']} of "
                f"{format_size(row['nbytes'])} with {p['algorithm']} {ratio:.2f}x as fast as "
                "without it"
            )
    return out


def warn(message: str) -> None:
    """Say ``message`` as a :class:`KnobWarning` (the module doc: once, filterable)."""
    warnings.warn(message, KnobWarning, stacklevel=3)
