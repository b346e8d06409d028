"""Helpers for tests that run an MPI program which ends its job with ``MPI_Abort``."""

from __future__ import annotations

from pathlib import Path


def last_words(out: Path, nprocs: int) -> str:
    """What the ranks wrote to ``OUT.<rank>.err`` before the job was aborted.

    The programs copy their error lines there because the launcher (MPICH's Hydra) may tear
    the job down before it forwards a rank's stderr: the job's captured stderr can be empty
    even though a rank printed and flushed its error.
    """
    texts = [Path(f"{out}.{r}.err") for r in range(nprocs)]
    return "".join(p.read_text() for p in texts if p.exists())
