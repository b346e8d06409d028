"""Starting a :class:`~.comm.ScheduleComm`: where its schedules come from (a
:class:`Planner`, injected), what every rank must agree on, and which platform node each
rank is.

The ranks compare a digest of their settings (platform, planner settings, model,
emulation, ...) once, at construction; a rank that cannot read its platform takes part with
a null digest, so that every rank raises instead of one rank leaving the others waiting.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..errors import HetcollError, MismatchError, PlatformError
from ..platform import Platform, load_platform
from ..program import Program
from ..schedule import Schedule

__all__ = [
    "DIGEST",
    "ENGINE_SLOTS",
    "Planner",
    "check_choices",
    "check_settings",
    "digest_of",
    "judge",
    "place",
    "program_digest",
    "provisional_timeout",
    "settings_digest",
]

DIGEST = 16
_NULL = b"\0" * DIGEST


class Planner(Protocol):
    """Where a :class:`ScheduleComm` gets its schedules (deterministic on every rank)."""

    def settings(self) -> dict[str, Any]:
        """What every rank must agree on (planner names, options), JSON-serialisable."""
        ...

    def check(self, platform: Platform, nodes: Sequence[str]) -> None:
        """Raise :class:`~hetcoll.errors.HetcollError` for settings that cannot work."""
        ...

    def tree(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        """A rooted collective: ``root``, ``members`` (node ids or None), ``nbytes``,
        ``segment_size``, ``groups`` (``(root, members)`` pairs or None), ``algo``."""
        ...

    def cube(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        """A hypercube collective: ``collective``, ``nbytes``, ``op``, ``members``, ``algo``."""
        ...

    def rooted(self, platform: Platform, call: dict[str, Any]) -> Schedule:
        """A reduce, gather or scatter tree: ``collective``, ``root``, ``members``,
        ``nbytes``, ``sizes`` (node -> bytes, or None), ``algo``."""
        ...


#: The attributes :class:`~.comm.ScheduleComm` keeps in slots, not in its instance dict:
#: CPython 3.11 keeps at most 30 attributes in the compact form whose method look-ups it
#: specializes (a call of mpi4py's own method, ``hc.Alltoall``, costs tens of ns more on an
#: instance with more: tests/test_runtime_instance_dict_mpi.py).  The dict keeps what is
#: read through it (``base``, ``comm``: subcomms.py, lifecycle.py), ``rank`` and ``size``
#: (SubComms's class defaults), what Clocks gives class defaults, and the subclasses'
#: attributes but ``last_choice`` and the tables of the one-step methods of
#: :mod:`hetcoll.runtime.forced`, which those methods write and read at every call (an
#: instance attribute of a subclass of an mpi4py communicator costs several times a slot's
#: read or write).
ENGINE_SLOTS = (
    "_agreement",
    "_cache",
    "_calls",
    "_fast",
    "_fast_ok",
    "_fast_trace",
    "_forced_allgather",
    "_forced_allreduce",
    "_forced_rules",
    "_given",
    "_history",
    "_last_trace",
    "_native",
    "_quick",
    "_rest",
    "_schedules",
    "_seq",
    "_wires",
    "check",
    "clock_offset_ns",
    "emulate",
    "emulator",
    "last_choice",
    "last_schedule",
    "model",
    "node",
    "nodes",
    "notices",
    "on_timeout",
    "one_host",
    "planner",
    "platform",
    "poll",
    "rank_of",
    "ranks_on_host",
    "segment_size",
    "shared_clock",
    "shift_ns",
    "spin",
    "spin_given",
    "strays",
    "time_scale",
    "timeout",
)


def digest_of(text: str) -> bytes:
    """A 16-byte digest of ``text``."""
    return hashlib.blake2b(text.encode(), digest_size=DIGEST).digest()


#: the values of the wrapper's settings that are choices (``"first"``: ``"data"`` spelled
#: another way)
CHOICES = {
    "check": ("data", "first", "always", "never"),
    "on_timeout": ("abort", "raise"),
    "clock": ("auto", "shared", "sync"),
}


def check_choices(**given: Any) -> None:
    """Raise :class:`HetcollError` for the first setting ``name=value`` that is not one of
    its :data:`CHOICES`."""
    for name, value in given.items():
        if value not in CHOICES[name]:
            options = ", ".join(CHOICES[name])
            raise HetcollError(f"{name}: expected one of {options}, got {value!r}")


def check_settings(given: dict[str, Any]) -> dict[str, Any]:
    """The engine's settings, each through the one validator (:func:`~hetcoll.units.
    check_quantity`); :class:`HetcollError` naming the first bad one."""
    from ..models import get_model
    from ..units import check_quantity

    out = {"timeout": check_quantity(given["timeout"], "time", "timeout", positive=True)}
    seg = given["segment_size"]
    if seg is not None:
        if isinstance(seg, bool) or not isinstance(seg, int):
            raise HetcollError(f"segment_size: must be a positive integer, got {seg!r}")
        seg = check_quantity(seg, "size", "segment_size", positive=True)
    out["segment_size"] = seg
    out["time_scale"] = check_quantity(given["time_scale"], "factor", "time_scale", positive=True)
    out["spin"] = check_quantity(given["spin"], "time", "spin")
    out["poll"] = check_quantity(given["poll"], "time", "poll")
    if given["model"] is not None:
        get_model(given["model"])
    return out


def settings_digest(
    platform: Platform | str,
    planner: Any,
    nodes: Sequence[str] | None,
    engine: Callable[[], dict[str, Any]],
) -> tuple[Platform | None, bytes, HetcollError | None]:
    """``(platform, digest of every setting, None)``, or ``(None, null digest, error)`` when
    the platform cannot be read or a setting is refused (``engine()`` checks the engine's
    and returns them)."""
    try:
        engine = engine()
        p = load_platform(platform)
        if planner is not None:
            planner.check(p, list(p.ids) if nodes is None else [str(x) for x in nodes])
        spec = {
            **engine,
            "platform": p.to_dict(),
            "planner": None if planner is None else planner.settings(),
            "nodes": None if nodes is None else list(nodes),
        }
        return p, digest_of(json.dumps(spec, sort_keys=True, default=str)), None
    except HetcollError as exc:
        return None, _NULL, exc


def judge(digests: list[bytes], error: HetcollError | None, rank: int) -> None:
    """Raise on every rank unless every rank has the same settings (``digests`` in rank
    order; ``error``: this rank's own failure)."""
    bad = [r for r, d in enumerate(digests) if d == _NULL]
    if error is not None:
        if len(bad) == len(digests):
            raise error  # the same bad input everywhere
        raise MismatchError(f"rank {rank}: {error}")
    if bad:
        raise MismatchError(f"rank {bad[0]} could not load its platform; see its error")
    if len(set(digests)) > 1:
        groups: dict[bytes, list[int]] = {}
        for r, d in enumerate(digests):
            groups.setdefault(d, []).append(r)
        desc = "; ".join(f"rank(s) {_ranges(rs)}: {d.hex()[:8]}" for d, rs in groups.items())
        raise MismatchError(
            "ranks were given different platforms or settings (platform, algo, model, "
            f"emulate, segment size): {desc}; every rank must use the same platform file and "
            "options"
        )


def place(p: Platform, nodes: Sequence[str] | None, size: int) -> tuple[str, ...]:
    """The platform node of each rank (platform order, or ``nodes``), checked."""
    ids = list(p.ids) if nodes is None else [str(x) for x in nodes]
    if len(ids) != size:
        what = "the platform has" if nodes is None else "nodes= lists"
        raise PlatformError(
            f"{what} {len(ids)} nodes but the communicator has {size} ranks: run "
            f"`mpiexec -n {len(ids)}` or give a platform of {size} nodes"
        )
    for node in ids:
        p.index(node)
    if len(set(ids)) != len(ids):
        raise PlatformError("nodes: a platform node is given to two ranks")
    return tuple(ids)


def _ranges(ranks: list[int]) -> str:
    out, start, prev = [], ranks[0], ranks[0]
    for r in [*ranks[1:], None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ",".join(out)


def provisional_timeout(timeout: Any) -> float:
    """The timeout of the waits before the settings are checked: the given one when it is a
    good number (a late rank is then reported in time), else the default."""
    from ..units import check_quantity

    try:
        return float(check_quantity(timeout, "time", "timeout", positive=True))
    except HetcollError:
        return 60.0


def program_digest(program: Program) -> int:
    """A digest of a program (for calls that run one directly), 62 bits."""
    text = repr(sorted((k, v) for k, v in program.ops.items())) + repr(program.chunks)
    return int.from_bytes(digest_of(text)[:8], "little") >> 2
