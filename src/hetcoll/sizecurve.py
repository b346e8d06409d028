"""A measured per-byte cost curve: what each byte of a message costs, by message size.

The node costs of a platform are affine in the size (``t_ini + n * t_byte``), which one
host need not be: a memory copy that stays in cache, an eager protocol below a threshold,
a rendezvous one above it.  ``size_curve`` (a platform field, written by ``hetcoll probe``)
corrects every per-byte term of the model for that: ``[[0, m_0], [s_1, m_1], ...]`` says
that the bytes of a message from position ``s_k`` (up to ``s_{k+1}``) cost ``m_k`` times the
platform's per-byte costs.  A message of ``n`` bytes then costs what ``effective(n)`` bytes
cost under the affine model, with ::

    effective(n) = sum_k m_k * clip(n - s_k, 0, s_{k+1} - s_k)     (s_{K+1} = infinity)

a piecewise linear, non-decreasing function of ``n``: the curve between the probe's sizes
is the straight line between its measurements, beyond the last size the last segment's
per-byte cost goes on.  The probe scales the last segment by 1, so ``t_byte`` is the
per-byte cost of the largest messages it measured (:mod:`hetcoll.runtime.probe`, step 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import PlatformError
from .units import check_quantity

__all__ = ["SizeCurve"]


@dataclass(frozen=True)
class SizeCurve:
    """Segments starting at ``starts`` bytes (``starts[0] == 0``, increasing) whose bytes
    cost ``scales`` (finite, ``>= 0``) times the per-byte costs; see the module doc."""

    starts: tuple[int, ...]
    scales: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.starts) != len(self.scales) or not self.starts:
            raise PlatformError("size_curve: needs one scale per segment start")
        if self.starts[0] != 0:
            raise PlatformError(f"size_curve[0]: must start at 0 bytes, got {self.starts[0]}")
        for k in range(1, len(self.starts)):
            if self.starts[k] <= self.starts[k - 1]:
                raise PlatformError(
                    f"size_curve[{k}]: starts must increase, got {self.starts[k]} after "
                    f"{self.starts[k - 1]}"
                )

    @classmethod
    def from_list(cls, value: Any, where: str = "size_curve") -> SizeCurve:
        """Read ``[[start_bytes, scale], ...]`` (sizes may have units: ``"4KiB"``),
        checking every entry; :class:`PlatformError` names the first bad one."""
        if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
            raise PlatformError(f"{where}: must be a non-empty list of [start, scale] pairs")
        starts, scales = [], []
        for k, item in enumerate(value):
            if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != 2:
                raise PlatformError(f"{where}[{k}]: must be a [start, scale] pair, got {item!r}")
            starts.append(check_quantity(item[0], "size", f"{where}[{k}][0]", error=PlatformError))
            scales.append(
                float(check_quantity(item[1], "factor", f"{where}[{k}][1]", error=PlatformError))
            )
        try:
            return cls(tuple(starts), tuple(scales))
        except PlatformError as exc:
            raise PlatformError(str(exc).replace("size_curve", where, 1)) from None

    def to_list(self) -> list[list[float]]:
        return [[int(s), float(m)] for s, m in zip(self.starts, self.scales, strict=True)]

    def effective(self, nbytes: Any) -> Any:
        """The affine model's equivalent size of ``nbytes`` (scalar or array; module doc).

        Examples
        --------
        >>> c = SizeCurve((0, 100), (2.0, 0.5))
        >>> [float(c.effective(n)) for n in (0, 50, 100, 300)]
        [0.0, 100.0, 200.0, 300.0]
        """
        n = np.asarray(nbytes, dtype=float)
        starts = np.asarray(self.starts, dtype=float)
        scales = np.asarray(self.scales, dtype=float)
        ends = np.append(starts[1:], np.inf)
        # whole segments below each size, in one pass: cumulative cost at each start
        at = np.concatenate([[0.0], np.cumsum(scales[:-1] * np.diff(starts))])
        k = np.searchsorted(starts, n, side="right") - 1
        k = np.clip(k, 0, len(starts) - 1)
        out = at[k] + scales[k] * (np.minimum(n, ends[k]) - starts[k])
        return float(out) if out.ndim == 0 else out

    def is_identity(self) -> bool:
        """Every byte at the affine model's cost: the curve changes nothing."""
        return all(m == 1.0 for m in self.scales)
