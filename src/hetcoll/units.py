"""Friendly units at the edges: parse ``"100us"``, ``"4KiB"``, ``"1 Gbps"``; format for humans.

Inside hetcoll everything is SI: seconds, bytes, bytes per second.

:func:`check_quantity` is the one validator every numeric input goes through (platform
fields, model parameters, schedule sizes, command-line numbers), number or string alike:
it parses units, rejects what is not a number, NaN, infinities (but an infinite
bandwidth), negative values and values beyond :data:`MAX_TIME` / :data:`MAX_SIZE`, and
names the culprit.  Those bounds make every sum and product hetcoll computes finite.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .errors import ArgumentError

__all__ = [
    "MAX_TIME",
    "MAX_SIZE",
    "check_quantity",
    "check_quantities",
    "parse_time",
    "parse_size",
    "parse_bandwidth",
    "format_time",
    "format_size",
    "format_bandwidth",
]

_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan)"
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "k": 1024,
    "m": 1024**2,
    "g": 1024**3,
}
# "Bps" is bytes per second and "bps" bits per second, as in SimGrid.
_BW_UNITS = {
    "": 1.0,
    "Bps": 1.0,
    "B/s": 1.0,
    "kBps": 1e3,
    "KBps": 1e3,
    "MBps": 1e6,
    "GBps": 1e9,
    "kB/s": 1e3,
    "KB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "KiBps": 1024.0,
    "MiBps": 1024.0**2,
    "GiBps": 1024.0**3,
    "KiB/s": 1024.0,
    "MiB/s": 1024.0**2,
    "GiB/s": 1024.0**3,
    "bps": 1 / 8,
    "kbps": 1e3 / 8,
    "Kbps": 1e3 / 8,
    "Mbps": 1e6 / 8,
    "Gbps": 1e9 / 8,
}


def _split(text: str, what: str) -> tuple[float, str]:
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-zµ/]*)", text.strip(), flags=re.IGNORECASE)
    if not m:
        raise ValueError(f"cannot read {text!r} as a {what}")
    return float(m.group(1)), m.group(2)


def parse_time(value: str | float | int) -> float:
    """Seconds from a number (already seconds) or a string such as ``"100us"``, ``"1.5 ms"``."""
    if isinstance(value, bool):
        raise ValueError(f"expected a time, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    number, unit = _split(value, "time")
    if unit not in _TIME_UNITS:
        raise ValueError(f"unknown time unit {unit!r} in {value!r} (use s, ms, us or ns)")
    return number * _TIME_UNITS[unit]


def parse_size(value: str | int) -> int:
    """Bytes from an int or a string such as ``"4KiB"``, ``"1MB"``, ``"64"`` (K/M/G are binary)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    if isinstance(value, int):
        number, unit = float(value), ""
    elif isinstance(value, float):
        number, unit = value, ""
    else:
        return _exact_size(value)
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r} in {value!r} (use B, KiB, MiB, KB, MB, ...)")
    nbytes = number * factor
    if not math.isfinite(nbytes) or nbytes < 0 or nbytes != int(nbytes):
        raise ValueError(f"a size must be a whole number of bytes >= 0, got {value!r}")
    return int(nbytes)


def _exact_size(text: str) -> int:
    """Bytes from a string, in exact decimal arithmetic: ``"9007199254740993"`` is that
    number (a float would round it to 2**53 and the size would silently change)."""
    from decimal import Decimal

    m = re.fullmatch(_NUMBER + r"\s*([A-Za-zµ/]*)", text.strip(), flags=re.IGNORECASE)
    if not m:
        raise ValueError(f"cannot read {text!r} as a size")
    factor = _SIZE_UNITS.get(m.group(2).lower())
    if factor is None:
        raise ValueError(
            f"unknown size unit {m.group(2)!r} in {text!r} (use B, KiB, MiB, KB, MB, ...)"
        )
    try:
        exact = Decimal(m.group(1)) * factor
        if exact.is_finite() and exact > MAX_SIZE:  # before int(): 1e999999999 has many digits
            raise ValueError(f"must be at most {MAX_SIZE}, got {text!r}")
        if not exact.is_finite() or exact < 0 or exact != exact.to_integral_value():
            raise ValueError(f"a size must be a whole number of bytes >= 0, got {text!r}")
    except ArithmeticError:  # beyond even Decimal's exponents
        raise ValueError(f"must be at most {MAX_SIZE}, got {text!r}") from None
    return int(exact)


def parse_bandwidth(value: str | float | int) -> float:
    """Bytes per second from a number or a string such as ``"1GBps"``, ``"10 Gbps"`` (bits)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a bandwidth, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    number, unit = _split(value, "bandwidth")
    if unit not in _BW_UNITS:
        raise ValueError(f"unknown bandwidth unit {unit!r} in {value!r} (use Bps, MBps, Gbps, ...)")
    return number * _BW_UNITS[unit]


def format_time(seconds: float | None, digits: int = 4) -> str:
    """Human string for a duration: ``700 µs``, ``1.25 ms``, ``3.2 s``."""
    if seconds is None or not math.isfinite(seconds):
        return "-" if seconds is None else str(seconds)
    a = abs(seconds)
    if a == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if a >= scale:
            return f"{seconds / scale:.{digits}g} {unit}"
    return f"{seconds / 1e-9:.{digits}g} ns"


def format_size(nbytes: int) -> str:
    """Human string for a size: ``512 B``, ``4 KiB``, ``1.5 MiB``."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


def format_bandwidth(bps: float | None) -> str:
    """Human string for bytes per second: ``1.2 GB/s``."""
    if bps is None or not math.isfinite(bps):
        return "-"
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.4g} B/s"


# -- the validator -------------------------------------------------------------------------------

#: The largest time hetcoll accepts (seconds, about 31 700 years), also per byte (s/B).
#: With every time at most this, every size at most :data:`MAX_SIZE` and every bandwidth at
#: least ``1 / MAX_TIME``, one transfer costs under 1e29 s and no sum hetcoll forms (a few
#: transfers per operation, a billion operations) comes near a float's 1.8e308.
MAX_TIME = 1e12
#: The largest message size (bytes, 8 PiB): every size is exact as a float.
MAX_SIZE = 2**53

_KINDS = {
    "time": "a time (seconds, or a string such as '100us')",
    "bandwidth": "a bandwidth (bytes/s, or a string such as '1GBps')",
    "size": "a size (bytes, or a string such as '4KiB')",
    "count": "a whole number",
    "factor": "a number",
}


def _describe(value: Any) -> str:
    """What a wrong value is, for a message: containers by kind, scalars by value."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple | set | frozenset):
        return "a list"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse(value: Any, kind: str) -> float:
    """The number in ``value`` (a number, or a string with a unit), as a float or int."""
    if kind == "time":
        return parse_time(value)
    if kind == "bandwidth":
        return parse_bandwidth(value)
    if kind == "size":
        return value if isinstance(value, int) else parse_size(value)
    if kind == "count":
        if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, int):
            raise ValueError(f"must be {_KINDS[kind]}, got {_describe(value)}")
        return value
    if isinstance(value, str):
        number, unit = _split(value, "number")
        if unit:
            raise ValueError(f"must be {_KINDS[kind]}, got {value!r}")
        return number
    return float(value)


def check_quantity(
    value: Any,
    kind: str,
    where: str,
    *,
    error: type[Exception] = ArgumentError,
    positive: bool = False,
) -> float | int:
    """The one validator of numeric input: ``value`` as a checked number, or ``error``.

    Parameters
    ----------
    value : number or str
        A number (already in SI units) or a string with a unit (``"100us"``, ``"4KiB"``,
        ``"1GBps"``; ``"inf"`` and ``"nan"`` are read and then judged like numbers).
    kind : {"time", "bandwidth", "size", "count", "factor"}
        Time in seconds, finite, ``0 <= t <= MAX_TIME``; bandwidth in bytes/s, ``> 0``,
        infinite allowed, at least ``1 / MAX_TIME``; size in bytes and count, whole numbers
        ``0 <= n <= MAX_SIZE`` (returned as ``int``); factor, a finite number ``>= 0``.
    where : str
        The culprit's name, the prefix of the message (``"nodes[2].t_ini"``).
    error : exception class
        What to raise (the caller's: ``PlatformError``, ``ModelError``, ...).
    positive : bool
        Require ``> 0`` instead of ``>= 0``.

    Raises
    ------
    error
        ``"nodes[2].t_ini: must be finite, got inf"``, ``"...: must be a time (...), got a
        list"``.

    Examples
    --------
    >>> check_quantity("2ms", "time", "t_ini")
    0.002
    >>> check_quantity("-1s", "time", "recv_overhead")
    Traceback (most recent call last):
    ...
    hetcoll.errors.ArgumentError: recv_overhead: must be a finite number >= 0, got -1 (from '-1s')
    """
    # the common case, in a hurry (100 000-node platforms): a plain float time in range
    plain = type(value) is float and kind == "time" and 0.0 <= value <= MAX_TIME
    if plain and (value > 0.0 or not positive):
        return value
    prefix = f"{where}: " if where else ""
    if kind not in _KINDS:
        raise ValueError(f"unknown kind of quantity {kind!r}")
    scalar = isinstance(value, int | float | str) or _is_number(value)
    if isinstance(value, bool) or not scalar:
        raise error(f"{prefix}must be {_KINDS[kind]}, got {_describe(value)}")
    try:
        number = _parse(value.item() if _is_number(value) else value, kind)
    except OverflowError:
        raise error(f"{prefix}must be finite, got a number too large for a float") from None
    except ValueError as exc:
        if isinstance(value, str):  # the parser says what it could not read
            raise error(f"{prefix}{exc}") from None
        raise error(f"{prefix}must be {_KINDS[kind]}, got {_describe(value)}") from None
    source = f" (from {value!r})" if isinstance(value, str) else ""
    problem = _out_of_range(number, kind, positive)
    if problem:
        shown = _describe(number) if isinstance(number, int) else f"{number:g}"
        raise error(f"{prefix}{problem}, got {shown}{source}")
    return number


def _is_number(value: Any) -> bool:
    """A numpy scalar (``np.float64``, ``np.int64``) counts as a number."""
    return hasattr(value, "dtype") and getattr(value, "shape", None) == ()


def _out_of_range(number: float, kind: str, positive: bool) -> str:
    sign = f"must be a finite number {'>' if positive else '>='} 0"
    if isinstance(number, int) and abs(number) > MAX_SIZE:  # before any float conversion
        return sign if number < 0 else f"must be at most {MAX_SIZE}"
    if math.isnan(number):
        return "must be a number"
    if kind == "bandwidth":
        if not number > 0:
            return "must be > 0"
        if number < 1 / MAX_TIME:
            return f"must be at least {1 / MAX_TIME:g} B/s"
    elif math.isinf(number) or number < 0 or (positive and number == 0):
        return sign
    elif kind in ("size", "count"):
        if number > MAX_SIZE:
            return f"must be at most {MAX_SIZE}"
    elif kind == "time" and number > MAX_TIME:
        return f"must be at most {MAX_TIME:g} s"
    elif kind == "factor" and number > MAX_TIME:
        return f"must be at most {MAX_TIME:g}"
    return ""


def check_quantities(array: Any, kind: str, where: str, *, error: type[Exception] = ArgumentError):
    """:func:`check_quantity` over a numeric array at once: the first bad entry, by index
    (``"latency[2][0]: must be >= 0, got -1"``), raises; else the array as floats."""
    import numpy as np

    try:
        a = np.array(array, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{where}: must be an array of numbers") from None
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "bandwidth":
            ok = (a >= 1 / MAX_TIME) | (a == np.inf)
        elif kind == "time":
            ok = (a >= 0) & (a <= MAX_TIME)
        else:
            raise ValueError(f"check_quantities: kind must be time or bandwidth, not {kind!r}")
    bad = np.argwhere(~ok)
    if len(bad):
        index = "".join(f"[{i}]" for i in bad[0])
        check_quantity(float(a[tuple(bad[0])]), kind, f"{where}{index}", error=error)
        raise AssertionError("check_quantities and check_quantity disagree")  # pragma: no cover
    return a
