"""Helpers for the tests that run an MPI program of ``mpi_programs/``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hetcoll.runtime.launch import run_mpi


def run_checks(
    program: Path, n: int, *, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run a program that ends in ``mpi_programs/_report.py``'s ``report()`` on ``n`` ranks.

    Asserts that the job ended well and that rank 0's one line names no failed check (the
    failed checks of every rank otherwise); the job is killed after ``timeout`` seconds.
    """
    proc = run_mpi(n, [program], module=False, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == json.dumps({"ranks": n, "failures": []}) + "\n", proc.stdout[-3000:]
    return proc


def run_records(
    n: int,
    args: list,
    out: Path,
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    all_ok: bool = True,
) -> list[dict]:
    """Run ``[*args, out]`` on ``n`` ranks, a program whose ``_report.Recorder`` writes OUT.

    Asserts that the job ended well and, unless ``all_ok`` is false, that every case is ok
    on every rank; returns the records, one per case, in the order made.
    """
    proc = run_mpi(n, [*args, out], module=False, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in Path(out).read_text().splitlines()]
    failed = [r for r in records if not r["ok"]]
    assert not all_ok or not failed, failed[:5]
    return records


def rank_events(out: Path, n: int) -> dict[int, list]:
    """Each rank's events, as ``mpi_programs/_report.py``'s ``write_events`` wrote them."""
    return {r: json.loads(Path(f"{out}.{r}").read_text())["events"] for r in range(n)}


def last_words(out: Path, nprocs: int) -> str:
    """What the ranks wrote to ``OUT.<rank>.err`` before the job was aborted.

    The programs copy their error lines there because the launcher (MPICH's Hydra) may tear
    the job down before it forwards a rank's stderr: the job's captured stderr can be empty
    even though a rank printed and flushed its error.
    """
    texts = [Path(f"{out}.{r}.err") for r in range(nprocs)]
    return "".join(p.read_text() for p in texts if p.exists())
