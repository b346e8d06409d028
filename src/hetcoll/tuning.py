"""Tuning files: what ``hetcoll tune`` measured best per collective and size, for
:class:`~hetcoll.HetComm` to follow (as Open MPI's ``coll_tuned`` dynamic rules files
tell its tuned component which algorithm to run).

Format (JSON)::

    {"format": "hetcoll-tuning", "version": 1,
     "ranks": 8,                    # the communicator size it was measured on
     "emulated": false,             # measured under emulation of "platform"?
     "platform": "probed 8 ranks",  # the platform's name (information)
     "message_cost": 4.1e-05,       # the engine's own seconds per message (see below)
     "rules": {
       "bcast":     [{"from_bytes": 0,      "algorithm": "mpi"},
                     {"from_bytes": 181019, "algorithm": "chain", "segment_size": 65536},
                     {"from_bytes": 2965820, "algorithm": "mpi"}],
       "allreduce": [{"from_bytes": 0, "algorithm": "mpi"},
                     {"from_bytes": 256, "algorithm": "mpi", "mpich": "recexch"}],
       "barrier":   [{"from_bytes": 0, "algorithm": "eff_cube"}]},
     "measurements": [...]}         # what tune measured (information)

A call of ``n`` bytes (a broadcast's message, an allreduce's or allgather's contribution
per rank; a barrier: 0) follows the last rule of its collective with ``from_bytes <= n``:
``"mpi"`` passes the call to MPI's own collective, any other name is a planner
(``segment_size``: the slices it was measured with; null: none).  ``"mpich"`` (with
``"mpi"``, an allreduce or allgather only; absent: MPICH's own selection) names the MPICH
algorithm natively forced for the call through its control variable
(:mod:`hetcoll.runtime.mpich_cvars`; a name the installed MPICH does not know leaves the
call to its own selection).  A collective without
rules is left to ``auto``'s model.  ``hetcoll tune`` puts each boundary halfway (in log
scale) between two measured sizes with different winners.

``message_cost`` (optional; null or absent: not measured) is what ``hetcoll tune`` measured
hetcoll's engine to spend per message of a plan's busiest rank (of a ``forest`` plan's
critical chain) beyond the platform model's time, in real seconds
(:func:`hetcoll.jobs.tune.engine_cost` says how): ``auto`` charges it to every plan, and
under emulation to MPI's algorithm run through the engine too (:mod:`hetcoll.choice`), in
place of the constant :data:`hetcoll.choice.ENGINE_MESSAGE_COST`, when the file was measured
as the wrapper runs (natively or under emulation).  It must be a finite number of seconds,
>= 0.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import HetcollError

__all__ = ["FORMAT", "Rule", "Tuning", "load_tuning", "rules_from"]

FORMAT = "hetcoll-tuning"
VERSION = 1
COLLECTIVES = ("bcast", "allreduce", "allgather", "barrier")
#: the collectives whose "mpi" rules may name an MPICH algorithm
MPICH_FORCED = ("allreduce", "allgather")
_MPICH_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Rule:
    """From ``from_bytes`` on (until the next rule): run ``algorithm`` (``"mpi"``: MPI's own)."""

    from_bytes: int
    algorithm: str
    segment_size: int | None = None
    mpich: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from_bytes": self.from_bytes, "algorithm": self.algorithm}
        if self.segment_size is not None:
            out["segment_size"] = self.segment_size
        if self.mpich is not None:
            out["mpich"] = self.mpich
        return out


@dataclass(frozen=True)
class Tuning:
    """A tuning file's rules (see the module doc)."""

    ranks: int
    rules: Mapping[str, tuple[Rule, ...]]
    emulated: bool = False
    platform: str | None = None
    measurements: list[Any] = field(default_factory=list, compare=False)
    message_cost: float | None = None

    def lookup(self, collective: str, nbytes: int) -> Rule | None:
        """The rule a call of ``nbytes`` follows, None when the file has none for it."""
        rules = self.rules.get(collective)
        if not rules:
            return None
        k = bisect.bisect_right([r.from_bytes for r in rules], nbytes) - 1
        return rules[k] if k >= 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "ranks": self.ranks,
            "emulated": self.emulated,
            "platform": self.platform,
            "message_cost": self.message_cost,
            "rules": {c: [r.to_dict() for r in rs] for c, rs in self.rules.items()},
            "measurements": self.measurements,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    @classmethod
    def from_dict(cls, data: Any, where: str = "tuning") -> Tuning:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise HetcollError(f"{where}: not a hetcoll tuning file (format {FORMAT!r})")
        if data.get("version") != VERSION:
            raise HetcollError(f"{where}: version {data.get('version')!r}, expected {VERSION}")
        ranks = data.get("ranks")
        if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
            raise HetcollError(f"{where}: ranks: expected a positive integer, got {ranks!r}")
        raw = data.get("rules")
        if not isinstance(raw, Mapping):
            raise HetcollError(f"{where}: rules: expected an object of collectives")
        rules = {}
        for coll, items in raw.items():
            if coll not in COLLECTIVES:
                raise HetcollError(
                    f"{where}: rules: unknown collective {coll!r}; expected one of "
                    + ", ".join(COLLECTIVES)
                )
            rules[coll] = _rules(items, f"{where}: rules.{coll}", coll)
        return cls(
            ranks,
            rules,
            _emulated(data.get("emulated", False), where),
            data.get("platform"),
            list(data.get("measurements") or []),
            _message_cost(data.get("message_cost"), where),
        )


def _emulated(value: Any, where: str) -> bool:
    """A tuning file's ``emulated``: true or false (whether ``message_cost`` is charged
    hangs on it, so a string such as ``"false"`` is refused, not taken as true)."""
    if not isinstance(value, bool):
        raise HetcollError(f"{where}: emulated: expected true or false, got {value!r}")
    return value


def _message_cost(value: Any, where: str) -> float | None:
    """A tuning file's ``message_cost``: None (not measured) or finite seconds >= 0."""
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0:
        raise HetcollError(
            f"{where}: message_cost: expected seconds per message (a finite number >= 0) "
            f"or null, got {value!r}"
        )
    return float(value)


def _rules(items: Any, where: str, collective: str) -> tuple[Rule, ...]:
    if not isinstance(items, list):
        raise HetcollError(f"{where}: expected a list of rules")
    out: list[Rule] = []
    for k, item in enumerate(items):
        at = f"{where}[{k}]"
        if not isinstance(item, Mapping):
            raise HetcollError(f"{at}: expected an object")
        unknown = set(item) - {"from_bytes", "algorithm", "segment_size", "mpich"}
        if unknown:
            raise HetcollError(f"{at}: unknown key(s) {', '.join(sorted(unknown))}")
        lo, algo, seg = item.get("from_bytes"), item.get("algorithm"), item.get("segment_size")
        if isinstance(lo, bool) or not isinstance(lo, int) or lo < 0:
            raise HetcollError(f"{at}.from_bytes: expected an integer >= 0, got {lo!r}")
        if out and lo <= out[-1].from_bytes:
            raise HetcollError(f"{at}.from_bytes: rules must be in increasing from_bytes")
        if not isinstance(algo, str) or not algo:
            raise HetcollError(f"{at}.algorithm: expected a planner name or 'mpi'")
        if algo != "mpi":
            from .planners import get_planner

            get_planner(algo)  # an unknown name: one line naming the choices
        if seg is not None and (isinstance(seg, bool) or not isinstance(seg, int) or seg < 1):
            raise HetcollError(f"{at}.segment_size: expected a positive integer or null")
        out.append(Rule(lo, algo, seg, _mpich(item.get("mpich"), algo, collective, at)))
    return tuple(out)


def _mpich(name: Any, algo: str, collective: str, at: str) -> str | None:
    """A rule's ``mpich``: None, or an MPICH algorithm's name on an ``"mpi"`` rule of
    an allreduce or allgather."""
    if name is None:
        return None
    if not isinstance(name, str) or not _MPICH_NAME.fullmatch(name):
        raise HetcollError(f"{at}.mpich: expected an MPICH algorithm's name, got {name!r}")
    if algo != "mpi" or collective not in MPICH_FORCED:
        raise HetcollError(f"{at}.mpich: only on an 'mpi' rule of " + " or ".join(MPICH_FORCED))
    return name


def load_tuning(source: Any) -> Tuning:
    """A :class:`Tuning` from a path, a JSON dict or a :class:`Tuning`; one-line
    :class:`~hetcoll.errors.HetcollError` for a missing or malformed file."""
    if isinstance(source, Tuning):
        return source
    if isinstance(source, Mapping):
        return Tuning.from_dict(source)
    if not isinstance(source, str | Path):
        raise HetcollError(f"tuning: expected a file name, got {type(source).__name__}")
    path = Path(source)
    try:
        text = path.read_text()
    except OSError as exc:
        raise HetcollError(f"{path}: cannot read the tuning file: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HetcollError(f"{path}: not JSON: {exc}") from None
    return Tuning.from_dict(data, str(path))


def rules_from(
    winners: Mapping[str, list[tuple]],
) -> dict[str, tuple[Rule, ...]]:
    """Rules from measured winners: per collective, ``(size, algorithm, segment_size)``
    (or ``(size, "mpi", None, mpich)``: an MPICH algorithm forced) in increasing size; a
    boundary goes halfway in log scale between two measured sizes with
    different winners (:math:`\\lfloor\\sqrt{a b}\\rfloor`, or ``b // 2`` after 0 B).

    Examples
    --------
    >>> bcast = [(8, "mpi", None), (1024, "mpi", None), (1 << 20, "fnf", None)]
    >>> rules = rules_from({"bcast": bcast,
    ...                     "allreduce": [(8, "mpi", None), (512, "mpi", None, "ring")]})
    >>> [(r.from_bytes, r.algorithm) for r in rules["bcast"]]
    [(0, 'mpi'), (32768, 'fnf')]
    >>> [(r.from_bytes, r.mpich) for r in rules["allreduce"]]
    [(0, None), (64, 'ring')]
    """
    out: dict[str, tuple[Rule, ...]] = {}
    for coll, rows in winners.items():
        rules: list[Rule] = []
        prev = None
        for size, algo, seg, *forced in sorted(rows, key=lambda r: r[0]):
            mpich = forced[0] if forced else None
            last = rules[-1] if rules else None
            if last is not None and (last.algorithm, last.segment_size, last.mpich) == (
                algo,
                seg,
                mpich,
            ):
                prev = size
                continue
            lo = 0 if prev is None else (size // 2 if prev == 0 else math.isqrt(prev * size))
            rules.append(Rule(lo, algo, seg, mpich))
            prev = size
        out[coll] = tuple(rules)
    return out
