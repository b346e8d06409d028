"""Friendly units at the edges, SI inside."""

from __future__ import annotations

import math

import pytest

from hetcoll.units import (
    format_size,
    format_time,
    parse_bandwidth,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("100us", 100e-6),
        ("100 µs", 100e-6),
        ("1.5ms", 1.5e-3),
        ("2s", 2.0),
        ("7ns", 7e-9),
        (3, 3.0),
        ("1e-3", 1e-3),
        ("inf", math.inf),
    ],
)
def test_parse_time(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("0", 0),
        (17, 17),
        ("4KiB", 4096),
        ("4k", 4096),
        ("1MB", 10**6),
        ("1MiB", 2**20),
        ("8 MiB", 8 * 2**20),
        ("2G", 2 * 2**30),
    ],
)
def test_parse_size(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["-1", "1.5", "x", "3 parsecs", "nan", True])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "bps"), [("1GBps", 1e9), ("8Mbps", 1e6), ("10 Gbps", 1.25e9), ("5 MiB/s", 5 * 2**20)]
)
def test_parse_bandwidth_bits_and_bytes(text, bps):
    assert parse_bandwidth(text) == pytest.approx(bps)


def test_format():
    assert format_time(700e-6) == "700 µs"
    assert format_time(1.25e-3) == "1.25 ms"
    assert format_time(0) == "0 s"
    assert format_size(4096) == "4 KiB"
    assert format_size(12) == "12 B"
