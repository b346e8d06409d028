"""The experimental testbed of Banikazemi, Moorthy & Panda (ICPP 1998), Sec. 7.1.1."""

from __future__ import annotations

from ..errors import ArgumentError
from ..platform import Platform, nodes_from_costs
from ..units import check_quantity

__all__ = ["testbed"]

#: Half the 4-byte MPICH round trips of Sec. 7.1.1: 1380 µs fast-fast, 2960 µs slow-slow.
T_FAST, T_SLOW = 690e-6, 1480e-6
#: Per byte, as in the built-in ``testbed16`` platform.
T_BYTE = 5.16e-8


def testbed(
    n: int = 16,
    n_fast: int = 8,
    *,
    t_fast: float = T_FAST,
    t_slow: float = T_SLOW,
    t_byte: float = T_BYTE,
    scale: float = 1.0,
) -> Platform:
    """``n`` SGI workstations, the first ``n_fast`` fast (t_ini 690 µs), the rest slow
    (1480 µs, a 2.15 ratio), ``t_byte`` each; every cost times ``scale``.

    ``testbed(16, 8)`` is the built-in ``testbed16`` platform; the paper measures 16-node
    configurations with 2, 4 and 8 fast nodes.
    """
    for name, value in (("n", n), ("n_fast", n_fast)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"{name} must be an integer, got {value!r}")
    if n < 1:
        raise ArgumentError(f"n must be >= 1, got {n}")
    t_fast, t_slow, t_byte = (
        check_quantity(v, "time", name)
        for name, v in (("t_fast", t_fast), ("t_slow", t_slow), ("t_byte", t_byte))
    )
    scale = check_quantity(scale, "factor", "scale", positive=True)
    if not 0 <= n_fast <= n:
        raise ArgumentError(f"n_fast must be in [0, {n}], got {n_fast}")
    t_ini = [t_fast * scale] * n_fast + [t_slow * scale] * (n - n_fast)
    name = f"Banikazemi et al. 1998 testbed: {n} nodes, {n_fast} fast"
    if scale != 1.0:
        name += f", costs x{scale:g}"
    return Platform(nodes_from_costs(t_ini, t_byte * scale), model="tini", name=name)
