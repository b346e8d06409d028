"""How the MPI test programs' verdicts reach rank 0 and the test, in one of two forms.

In both, a failed check is data, never an exception, so that no rank leaves the program's
collectives early and every rank's verdict reaches rank 0.

- :func:`check` (or :func:`same`) on every rank keeps a failed check as a line naming its
  rank; at the end :func:`report` waits for every rank, gathers the lines to rank 0, and rank
  0 prints one JSON line, ``{"ranks": K, "failures": [...]}`` (rank 0's lines first, then
  rank 1's, ...), which ``tests/_mpi.py``'s ``run_checks`` compares with
  ``{"ranks": K, "failures": []}``.
- a :class:`Recorder` gathers every rank's verdict on a case as the case is made; rank 0
  writes one JSON record per case to a file (JSON lines), which the test reads.

Where the ranks are meant to end differently (an error raised on some, a call that never
comes), each rank instead lists what happened to it (:func:`attempt`) and writes the list to
a file of its own (:func:`write_events`), which ``tests/_mpi.py``'s ``rank_events`` reads.
"""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

from hetcoll.errors import MismatchError

WORLD = MPI.COMM_WORLD
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    """Keep ``rank R: what`` when ``ok`` is false."""
    if not ok:
        failures.append(f"rank {WORLD.rank}: {what}")


def same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Check that ``a`` and ``b`` have one dtype and the same bytes."""
    check(a.dtype == b.dtype and a.tobytes() == b.tobytes(), what)


def report() -> None:
    """Every rank's failed checks to rank 0, which prints them as one JSON line."""
    WORLD.Barrier()
    everyone = WORLD.gather(failures, 0)
    if WORLD.rank == 0:
        print(json.dumps({"ranks": WORLD.size, "failures": [f for fs in everyone for f in fs]}))


class Recorder:
    """One JSON record per case, ``{"case": NAME, "ok": ..., "bad": {rank: detail}, **info}``.

    :meth:`case` is collective: every rank gives its verdict (and the first 200 characters
    of a detail, kept for the ranks whose verdict is false); :meth:`write` on rank 0 writes
    the records to ``path``, one a line.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.records: list[dict] = []

    def case(self, name: str, ok, detail: str = "", **info) -> None:
        verdicts = WORLD.gather((bool(ok), str(detail)[:200]), 0)
        if WORLD.rank == 0:
            bad = {r: d for r, (o, d) in enumerate(verdicts) if not o}
            self.records.append({"case": name, "ok": not bad, "bad": bad, **info})

    def write(self) -> None:
        if WORLD.rank == 0:
            with open(self.path, "w") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in self.records)


def attempt(events: list, name: str, call) -> bool:
    """Run ``call``; record ``name`` and how it ended.  True when it returned."""
    try:
        call()
        events.append([name, "ok"])
        return True
    except MismatchError as exc:
        events.append([name, "MismatchError", str(exc)])
        return False


def write_events(out: str, events: list) -> None:
    """This rank's events to ``OUT.<rank>``: ``{"rank": R, "events": [...]}``."""
    with open(f"{out}.{WORLD.rank}", "w") as fh:
        json.dump({"rank": WORLD.rank, "events": events}, fh)
