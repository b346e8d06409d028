"""Reading schedule documents: each field checked, a bad one named in one line
(:class:`~hetcoll.errors.ScheduleError`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ScheduleError
from .units import MAX_SIZE, check_quantity

__all__ = ["count", "kind_of", "mapping", "node_id", "node_ids", "only_keys", "required"]


def kind_of(value: Any) -> str:
    """A wrong value, as a message shows it: containers by kind, scalars by value."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return f"a string {value!r}" if len(value) <= 40 else "a string"
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


def node_id(value: Any, where: str) -> str:
    """A node id read from a document: a non-empty string (an integer is converted)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ScheduleError(f"{where}: must be a node id (a string), got {kind_of(value)}")
    if value == "":
        raise ScheduleError(f"{where}: must be a non-empty node id")
    return str(value)


def node_ids(value: Any, where: str) -> tuple[str, ...]:
    """A list of node ids: a string is not one (``"2345678"`` is not seven children)."""
    if not isinstance(value, list | tuple):
        raise ScheduleError(f"{where}: must be a list of node ids, got {kind_of(value)}")
    return tuple(node_id(v, f"{where}[{i}]") for i, v in enumerate(value))


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScheduleError(f"{where}: must be an object, got {kind_of(value)}")
    return value


def only_keys(data: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    """Refuse a key the format does not have (a typo would otherwise be ignored)."""
    for key in data:
        if key not in keys:
            prefix = f"{where}." if where else ""
            raise ScheduleError(
                f"{prefix}{key}: unknown field (expected one of: {', '.join(keys)})"
            )


def required(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        prefix = f"{where}." if where else ""
        raise ScheduleError(f"malformed schedule: {prefix}{key}: missing")
    return data[key]


def count(value: Any, kind: str, where: str, positive: bool = False) -> int:
    """A size or index of a schedule: an integer (no units, no fractions) in range."""
    if type(value) is int and 0 <= value <= MAX_SIZE and (value or not positive):
        return value  # the common case, in a hurry: a timetable lists 10^5 sends
    if isinstance(value, bool) or not isinstance(value, int):
        what = "a positive integer" if positive else "an integer >= 0"
        raise ScheduleError(f"{where}: must be {what}, got {kind_of(value)}")
    return int(check_quantity(value, kind, where, error=ScheduleError, positive=positive))
