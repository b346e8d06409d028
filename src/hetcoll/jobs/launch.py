"""Start a job and read what its ranks wrote: the one place hetcoll launches MPI and measures.

Driver side: this process does not import MPI.  It writes the job's spec to a temporary
directory, runs ``mpiexec -n N python -m mpi4py -m hetcoll.jobs SPEC OUT`` with the
environment's own launcher (:func:`hetcoll.runtime.launch.run_mpi`, which also kills a job
that outlives its timeout), and reads the JSON rank 0 wrote.  A benchmark with its own MPI
program (a script that writes JSON to the path it is given last) uses :func:`run_program`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import HetcollError
from .spec import Run

__all__ = ["JobError", "launch", "run_program"]


class JobError(HetcollError):
    """An MPI job failed, timed out, or wrote no result; the message ends with its stderr."""


def run_program(
    ranks: int,
    program: str | Path,
    args: Sequence[str | Path] = (),
    *,
    timeout: float,
    module: bool = False,
) -> dict[str, Any]:
    """Run ``program`` (a script, or a module with ``module=True``) on ``ranks`` ranks with
    ``args`` and a result path appended; the JSON document it wrote there.

    Raises
    ------
    JobError
        When the job exits non-zero, outlives ``timeout`` seconds or writes nothing; the
        message names the exit code and ends with the last lines of the job's stderr.
    """
    with tempfile.TemporaryDirectory(prefix="hetcoll-job-") as tmp:
        return _run(ranks, program, args, Path(tmp), timeout, module)


def launch(runs: Sequence[Run], ranks: int, *, timeout: float) -> dict[str, Any]:
    """Measure ``runs`` in one job of ``ranks`` ranks (each run on its own wrapper).

    Returns ``{"runs": [{"documents": [DOC per size], "probe": ...}], "seconds": ...,
    "versions": {...}}`` (:mod:`hetcoll.jobs.document`).
    """
    if not runs:
        raise HetcollError("a job needs at least one run")
    with tempfile.TemporaryDirectory(prefix="hetcoll-job-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"runs": [r.to_dict() for r in runs]}))
        return _run(ranks, "hetcoll.jobs", [spec], Path(tmp), timeout, True)


def _run(ranks, program, args, tmp: Path, timeout: float, module: bool) -> dict[str, Any]:
    from ..runtime.launch import run_mpi

    out = tmp / "result.json"
    try:
        proc = run_mpi(ranks, [program, *args, out], timeout=timeout, module=module)
    except HetcollError as exc:
        raise JobError(str(exc)) from None
    if proc.returncode != 0 or not out.exists():
        why = f"exit {proc.returncode}" if proc.returncode else "no result written"
        raise JobError(f"the MPI job failed ({why}): {_reason(proc.stderr)}")
    try:
        return json.loads(out.read_text())
    except json.JSONDecodeError as exc:  # pragma: no cover - rank 0 writes atomically
        raise JobError(f"the MPI job wrote unreadable JSON: {exc}") from None


def _reason(stderr: str) -> str:
    """What went wrong: a rank's ``hetcoll: error:`` line, else the end of stderr."""
    lines = stderr.strip().splitlines()
    for line in lines:
        if line.startswith("hetcoll: error: "):
            return line.removeprefix("hetcoll: error: ")
    return "\n".join(lines[-5:])
