"""Array helpers of the routing search: in-place and blocked numpy steps that keep
temporaries small (see :mod:`.tuning` for why), and exact tricks on doubles' bit patterns.
Each is a plain function of arrays, with the plain numpy it equals in its docstring.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np


def counted(up: np.ndarray, count: np.ndarray, block: int) -> np.ndarray:
    """Links from the root of each node of trees given per row (``k x m``: ``up`` each
    node's parent, the root its own; ``count`` the links to it, 0 at the root), by pointer
    doubling: after round ``r`` each node holds the count over its last ``2**r`` tree links
    and points ``2**r`` of them up.  By blocks of ``block`` rows (cache-sized); ``count``
    is overwritten and returned.  O(k m log depth)."""
    k, m = up.shape
    for lo in range(0, k, block):
        rows = min(k, lo + block) - lo
        at = (up[lo : lo + rows] + (np.arange(rows) * m)[:, None]).ravel()
        got = count[lo : lo + rows].reshape(-1)  # (a view: written in place)
        while True:
            nxt = at[at]
            if np.array_equal(nxt, at):
                break
            got += got[at]
            at = nxt
    return count


def rows_of(mask: np.ndarray) -> slice | np.ndarray:
    """The rows where ``mask`` holds: a slice when it holds everywhere (a view, not a
    copy, when indexing a block of rows)."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def least_positive(z: np.ndarray) -> np.ndarray:
    """The least non-zero entry of each row of ``z`` (``inf`` for a row of zeros), whose
    entries are non-negative doubles (``+0.0``, finite or ``inf``, no NaN); ``z`` is
    overwritten.

    Why bits: non-negative doubles are ordered as their bit patterns read as unsigned
    integers, and ``+0.0`` is the pattern 0; subtracting 1 sends it to the largest pattern
    and keeps every other order, so one integer minimum skips the zeros (an order of
    magnitude faster than masking them with ``np.where``).
    """
    u = z.view(np.uint64)
    u -= np.uint64(1)
    least = u.min(axis=1)
    least += np.uint64(1)  # a row of zeros wraps back to 0
    out = least.view(np.float64)
    out[least == 0] = np.inf
    return out


def grown(a: np.ndarray, size: int, keep: int, width: int | None = None) -> np.ndarray:
    """A new array of ``size`` rows (of ``width`` entries, else as ``a``'s) and ``a``'s
    dtype, holding ``a``'s first ``keep`` rows: a kept array grown geometrically."""
    shape = (size, *((width,) if width is not None else a.shape[1:]))
    grown = np.empty(shape, dtype=a.dtype)
    if keep:  # (an empty ``a`` may have no columns yet)
        grown[:keep] = a[:keep]
    return grown


def scratch_array(
    store: dict[str, np.ndarray] | None, name: str, shape: tuple[int, int], dtype
) -> np.ndarray:
    """A C-contiguous array of ``shape`` on the first elements of ``store[name]`` (made or
    grown as needed), or a new one without a store: the same memory batch after batch."""
    size = shape[0] * shape[1]
    if store is None:
        return np.empty(shape, dtype=dtype)
    if name not in store or len(store[name]) < size:
        store[name] = np.empty(size, dtype=dtype)
    return store[name][:size].reshape(shape)


def block_index(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, slice | np.ndarray]:
    """The index of the block ``rows x cols`` (``cols`` increasing): ``a[block_index(rows,
    cols)]`` is ``a[rows[:, None], cols]``.  When ``cols`` is a run it is a slice: a plain
    strided copy per row instead of numpy's element-wise fancy indexing on both axes
    (several times faster for the core's ``k x c`` blocks)."""
    if len(cols) and int(cols[-1]) - int(cols[0]) == len(cols) - 1:
        return rows, slice(int(cols[0]), int(cols[-1]) + 1)
    return rows[:, None], cols


def costs_in_place(
    t: np.ndarray, base: np.ndarray, table: np.ndarray | None, rank: np.ndarray, tile: int
) -> None:
    """``t = (t + base + table[rank]).T`` in place (``t`` square, ``base`` added to each
    row, the table term left out when ``table`` is None), tile by tile: each pair of tiles
    symmetric about the diagonal gets its terms and trades places (no second matrix)."""
    n = len(t)
    for i in range(0, n, tile):
        a = slice(i, i + tile)
        for j in range(i, n, tile):
            b = slice(j, j + tile)
            upper = t[a, b] + base[b]
            if table is not None:
                upper += np.take(table, rank[a, b])
            if j == i:
                t[a, a] = upper.T
                continue
            lower = t[b, a] + base[a]
            if table is not None:
                lower += np.take(table, rank[b, a])
            t[a, b] = lower.T
            t[b, a] = upper.T


def permute_rows(a: np.ndarray, src: np.ndarray) -> None:
    """``a[:] = a[src]`` in place (``src`` a permutation), one cycle after another: one
    row's copy besides ``a``."""
    src_l = src.tolist()
    done = [False] * len(src_l)
    for start in np.flatnonzero(src != np.arange(len(src_l))).tolist():
        if done[start]:
            continue
        keep = a[start].copy()
        at = start
        while src_l[at] != start:
            a[at] = a[src_l[at]]
            done[at] = True
            at = src_l[at]
        a[at] = keep
        done[at] = True


def transpose_into(out: np.ndarray, a: np.ndarray, rows: np.ndarray, block: int, tile: int) -> None:
    """``out[rows] = a.T`` by tiles of ``tile`` rows of ``a`` and ``block`` columns (a
    plain strided copy misses the cache)."""
    for lo in range(0, a.shape[1], block):
        into = rows[lo : lo + block]
        for x in range(0, a.shape[0], tile):
            out[into, x : x + tile] = a[x : x + tile, lo : lo + block].T


def _huge_page_switch():
    """Numpy's switch of its huge-page advice (``_set_madvise_hugepage(on) -> before``),
    or None when this numpy has none."""
    multiarray = getattr(np, "_core", None) or getattr(np, "core", None)
    return getattr(getattr(multiarray, "multiarray", None), "_set_madvise_hugepage", None)


# Blocks inside small_pages() in this process, and the advice to put back when the last
# one leaves: the switch is process-wide, so overlapping blocks (threads) must restore it
# once, at the end, to what it was before the first.
_PAGES_LOCK = threading.Lock()
_pages_state = {"depth": 0, "before": True}


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Numpy's advice for transparent huge pages switched off while the block runs, and
    put back as it was when the block ends, normally or by an exception: the arrays
    allocated meanwhile get ordinary 4 KiB pages.  Values are never affected.

    Why: numpy advises the kernel (``madvise``) to back every array of 4 MiB or more with
    2 MiB pages, and on a host whose transparent huge pages are ``madvise`` the cost of
    faulting them in is erratic (the same 200 MB takes from nothing to 0.5 s of system
    time from one run to the next on a 2-core host), while 4 KiB pages cost a
    steady 2 us each.  A streamed cost matrix allocates hundreds of MB (the result, the
    kept core rows, the searches' blocks): with the advice off its time is steady and,
    in the median, lower (``b random 5000 fnf`` of
    ``benchmarks/simulated/bench_simulator.py``).

    The switch is numpy's private, process-wide state
    (``numpy._core.multiarray._set_madvise_hugepage``): another thread's arrays
    allocated meanwhile get no advice either (a hint, never a different result), and
    blocks that overlap in several threads put the advice back once, when the last one
    ends.  A no-op when numpy has no such switch.
    """
    switch = _huge_page_switch()
    if switch is None:
        yield
        return
    with _PAGES_LOCK:
        if _pages_state["depth"] == 0:
            _pages_state["before"] = switch(False)
        _pages_state["depth"] += 1
    try:
        yield
    finally:
        with _PAGES_LOCK:
            _pages_state["depth"] -= 1
            if _pages_state["depth"] == 0:
                switch(_pages_state["before"])
