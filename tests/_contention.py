"""Helpers for the contention tests."""

from __future__ import annotations


def without_blockers(pred) -> dict:
    """A prediction as a dict with its transfers, each without who or what blocked it.

    Bookings of long routes by transfer (``RouteBooks``) and the per-link lists give the
    same times bit for bit, but of several bookings ending at the same instant they may
    name another as the blocker: compared, everything else must be equal."""
    out = pred.to_dict(transfers=True)
    for t in out["transfers"]:
        for key in ("blocked_by", "blocked_on", "blocked_link"):
            t.pop(key, None)
    return out
