"""docs/runtime.md's table of every mpi4py collective in its three forms says what the code
does: every collective method of ``MPI.Intracomm`` is in it, and each form it calls
*planned*, *rooted* or *MPI* is what ``HetComm`` does with it."""

from __future__ import annotations

import re
from pathlib import Path

from mpi4py import MPI

from hetcoll import HetComm
from hetcoll.runtime import nonblocking, rooted
from hetcoll.runtime.persistent import PERSISTENT

DOC = Path(__file__).parents[1] / "docs" / "runtime.md"
_COLLECTIVE = re.compile(
    r"^(I?(Bcast|Gatherv?|Scatterv?|Allgatherv?|Alltoall[vw]?|Reduce(_scatter(_block)?)?|"
    r"Allreduce|Scan|Exscan|Barrier)(_init)?|bcast|gather|scatter|allgather|alltoall|reduce|"
    r"allreduce|scan|exscan|barrier)$"
)


def _table() -> dict[str, str]:
    """``{method name: state}`` from the table's rows (``—`` cells skipped)."""
    text = DOC.read_text()
    start = text.index("| collective | blocking | nonblocking | persistent |")
    states = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        blocking_names = re.findall(r"`(\w+)`", cells[0])
        for name in blocking_names:
            states[name] = cells[1]
        for cell in cells[2:]:
            if cell != "—":
                name, state = re.fullmatch(r"`(\w+)` (\w+)", cell).groups()
                states[name] = state
    return states


def _state(name: str) -> str:
    """What HetComm does with mpi4py's method ``name``, from the code."""
    method = getattr(HetComm, name)
    if name in nonblocking.NONBLOCKING or name in PERSISTENT:
        blocking = nonblocking.NONBLOCKING.get(name) or PERSISTENT[name]
        if blocking in nonblocking._ROOTED:
            return "rooted"
        return "planned" if blocking in nonblocking._CHOSEN else "MPI"
    if method is getattr(MPI.Intracomm, name) or method.__qualname__.startswith("_passthrough"):
        return "MPI"
    return "rooted" if hasattr(method, "__wrapped__") else "planned"  # rooted: _or_mpi


def test_the_table_names_every_collective_of_mpi4py():
    names = {n for n in dir(MPI.Intracomm) if _COLLECTIVE.match(n)}
    assert len(names) > 40
    assert sorted(names - set(_table())) == []


def test_the_table_says_what_the_code_does():
    table = _table()
    wrong = {n: (s, _state(n)) for n, s in table.items() if s != _state(n)}
    assert wrong == {}
    assert set(table.values()) == {"planned", "rooted", "MPI"}
    assert rooted.PASSED  # the pass-throughs exist
