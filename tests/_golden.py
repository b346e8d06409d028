"""Golden outputs (``tests/golden``), written when every trial was still planned, simulated and
solved on its own: what a run of the same seed must still print and write, byte for byte."""

from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"

#: ``hetcoll reproduce banikazemi-table2`` with these arguments wrote the golden files
TABLE2_ARGS = ("reproduce", "banikazemi-table2", "--trials", "120", "--seed", "7", "--no-plot")


def assert_table2_golden(stdout: str, out_dir: Path) -> None:
    """The table on stdout and the JSON file in ``out_dir`` are the golden bytes."""
    stem = GOLDEN / "banikazemi-table2_trials120_seed7"
    assert stdout == stem.with_suffix(".txt").read_text(encoding="utf-8")
    written = (Path(out_dir) / "banikazemi-table2.json").read_bytes()
    assert written == stem.with_suffix(".json").read_bytes()
