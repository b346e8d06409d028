"""Friendly units at the edges: parse ``"100us"``, ``"4KiB"``, ``"1 Gbps"``; format for humans.

Inside hetcoll everything is SI: seconds, bytes, bytes per second.
"""

from __future__ import annotations

import math
import re

__all__ = [
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
        number, unit = _split(value, "size")
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r} in {value!r} (use B, KiB, MiB, KB, MB, ...)")
    nbytes = number * factor
    if not math.isfinite(nbytes) or nbytes < 0 or nbytes != int(nbytes):
        raise ValueError(f"a size must be a whole number of bytes >= 0, got {value!r}")
    return int(nbytes)


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
