"""Plain-text tables and JSON envelopes for the CLI and the experiments."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["format_table", "json_document", "dump_json", "to_jsonable"]

UNITS = {"time": "s", "size": "B", "bandwidth": "B/s"}


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
    """Columns aligned, numbers right-aligned, a rule under the header."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        out = []
        for i, c in enumerate(row):
            numeric = (i > 0 and c[:1].isdigit()) or (c[:1] in "-+." and c[1:2].isdigit())
            out.append(c.rjust(widths[i]) if numeric else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    text = [title] if title else []
    text.append(line(cells[0]))
    text.append("  ".join("-" * w for w in widths))
    text += [line(r) for r in cells[1:]]
    return "\n".join(text)


def to_jsonable(value: Any) -> Any:
    """Replace non-finite floats by None and numpy scalars/arrays by Python values."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return to_jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The envelope of every ``--json`` output: hetcoll version, kind of document, units."""
    from . import __version__

    return {"hetcoll": __version__, "kind": kind, "units": UNITS, **to_jsonable(body)}


def dump_json(doc: dict[str, Any], stream=None) -> None:
    stream = stream or sys.stdout
    stream.write(json.dumps(doc, indent=1) + "\n")
    stream.flush()
