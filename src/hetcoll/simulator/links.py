"""Exclusive link bookkeeping: the bookings of a port or a link as disjoint intervals in
start order (:func:`first_overlap`, :func:`insert_booking`), and for long routes the bookings
of every link at once, by transfer (:class:`RouteBooks`)."""

from __future__ import annotations

import math
from bisect import bisect_right
from operator import itemgetter

import numpy as np

__all__ = ["Route", "RouteBooks", "first_overlap", "insert_booking", "start_for"]


_END = itemgetter(1)
_START = itemgetter(0)


def first_overlap(
    book: list[tuple[float, float, int]], a: float, length: float, now: float
) -> tuple[float, float, int] | None:
    """The first booking of ``book`` that overlaps ``[a, a + length)``, or None.  Bookings
    over by ``now`` are dropped first (no later request can overlap them)."""
    if not book or book[-1][1] <= a:
        return None
    if book[0][1] <= now:
        del book[: bisect_right(book, now, key=_END)]
    i = bisect_right(book, a, key=_END)  # the first booking that ends after a
    if i < len(book) and book[i][0] < a + length:
        return book[i]
    return None


def start_for(free: float, off: float) -> float:
    """The least start ``s`` with ``s + off >= free`` (a resource held from ``off`` after the
    start, free from ``free``): ``free - off``, nudged up when the subtraction rounds below
    (else the same booking would be hit again forever)."""
    start = free - off
    while start + off < free:
        start = math.nextafter(start, math.inf)
    return start


def insert_booking(
    book: list[tuple[float, float, int]], booking: tuple[float, float, int], now: float
):
    """Insert ``booking`` (it overlaps none) in start order."""
    if not book or book[-1][0] <= booking[0]:
        if book and book[-1][1] <= now:
            book.clear()
        book.append(booking)
    else:
        book.insert(bisect_right(book, booking[0], key=_START), booking)


Route = tuple[np.ndarray, int, int, np.ndarray]  # RouteBooks.route


class RouteBooks:
    """Exclusive link bookings by transfer, for simulations with long routes (a line of
    thousands of nodes): no Python work per link.

    Every transfer booked and not yet over keeps one row: its interval ``[start, end)``,
    its index and the links it holds, as a bit mask (64 links a word) over the range of
    words its route spans.  The links of a route are all free for ``[t, t + d)`` when no
    booked transfer that holds one of them overlaps it (bookings on a link are disjoint:
    this is :func:`first_overlap` on every link at once), and the earliest such ``t >= s`` is
    the first gap of length ``d`` in the union of those transfers' intervals, found by
    one sweep in start order (a running maximum of ends) in numpy: O(B (W + log B)) per
    request for B transfers in progress and a route spanning W words, however many
    bookings it waits behind.  Rows of transfers over by ``now`` go when the arrays fill.

    The start found is the one the per-link lists reach by passes of :func:`first_overlap`
    over the route until none moves it (each move skips only times at which a booking
    overlaps, and stops at the first free one), so the times are theirs bit for bit.  The
    blocker named may differ when several bookings end at that start: here the transfer
    booked first, on the first link of the route it holds.
    """

    def __init__(self, n_links: int, capacity: int = 256) -> None:
        self.width = max(1, -(-n_links // 64))  # words per mask
        self.last = np.zeros(n_links)  # when each link's last booking ends
        self.n = 0
        self._alloc(capacity)
        self.routes: dict[int, Route] = {}

    def _alloc(self, capacity: int) -> None:
        self.ids = np.empty(capacity, dtype=np.int64)
        self.start = np.empty(capacity)
        self.end = np.empty(capacity)
        self.lo = np.empty(capacity, dtype=np.int64)  # the words a row's route spans
        self.hi = np.empty(capacity, dtype=np.int64)
        self.mask = np.zeros((capacity, self.width), dtype=np.uint64)

    def route(self, c: int, path: np.ndarray) -> Route:
        """``(path, lo, hi, bits)`` for cost ``c``'s route, made once: it spans words
        ``lo .. hi - 1`` of a mask and ``bits`` are its links in them."""
        got = self.routes.get(c)
        if got is None:
            lo, hi = int(path.min()) >> 6, (int(path.max()) >> 6) + 1
            held = np.zeros((hi - lo) * 64, dtype=bool)
            held[path - lo * 64] = True
            # bit j of word w is link 64 w + j, whatever the machine's byte order
            bits = np.packbits(held, bitorder="little").view("<u8")
            got = self.routes[c] = (path, lo, hi, bits)
        return got

    def earliest(self, route: Route, s: float, d: float) -> tuple[float, tuple[int, int] | None]:
        """The earliest ``t >= s`` at which every link of ``route`` is free for
        ``[t, t + d)``, and what held it until then: ``(transfer, link)``, the transfer
        booked first among those ending at ``t`` on the route, on the first link of the
        route it holds; None when ``t == s``."""
        path, lo, hi, bits = route
        if self.last[path].max() <= s:
            return s, None  # every link is free from s on: the common case when not crowded
        n = self.n
        end = self.end[:n]
        live = np.flatnonzero((end > s) & (self.lo[:n] < hi) & (self.hi[:n] > lo))
        common = self.mask[live, lo:hi]
        common &= bits
        # the transfers on the route, in booking order (an OR along the rows: quicker than any)
        live = live[np.bitwise_or.reduce(common, axis=1) != 0]
        begin, end = self.start[live], end[live]
        order = np.argsort(begin, kind="stable")
        t = np.empty(len(live) + 1)  # t[i]: the earliest start after bookings 0 .. i-1
        t[0] = s
        np.maximum(np.maximum.accumulate(end[order]), s, out=t[1:])
        # booking i and all later ones start at t[i] + d or later: [t[i], t[i] + d) is free
        gap = np.flatnonzero(begin[order] >= t[:-1] + d)
        t_free = float(t[gap[0]] if len(gap) else t[-1])
        if t_free == s:
            return s, None
        row = int(live[np.flatnonzero(end == t_free)[0]])
        held = self.mask[row, path >> 6] >> (path & 63).astype(np.uint64)
        first = int(np.argmax(held & np.uint64(1)))
        return t_free, (int(self.ids[row]), int(path[first]))

    def book(
        self,
        route: Route,
        start: float,
        end: float,
        idx: int,
        now: float,
    ) -> None:
        """Book ``[start, end)`` for transfer ``idx`` on every link of ``route``; rows over
        by ``now`` can go (no later request starts before ``now``)."""
        if self.n == len(self.ids):
            self._compact(now)
        r = self.n
        path, lo, hi, bits = route
        last = self.last[path]
        self.last[path] = np.maximum(last, end, out=last)
        self.ids[r], self.start[r], self.end[r], self.lo[r], self.hi[r] = idx, start, end, lo, hi
        row = self.mask[r]
        row[:] = 0  # a row reused after _compact: no stale bits
        row[lo:hi] = bits
        self.n = r + 1

    def _compact(self, now: float) -> None:
        keep = np.flatnonzero(self.end[: self.n] > now)  # in booking order
        old = (self.ids, self.start, self.end, self.lo, self.hi, self.mask)
        if 2 * len(keep) > len(self.ids):
            self._alloc(2 * len(self.ids))
        k = len(keep)
        for new, was in zip(
            (self.ids, self.start, self.end, self.lo, self.hi, self.mask), old, strict=True
        ):
            new[:k] = was[keep]
        self.n = k
