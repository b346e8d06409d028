"""For the MPI test programs whose job ends in ``MPI_Abort``: keep a copy of a rank's stderr.

The launcher (MPICH's Hydra) forwards a rank's stderr through a pipe and may tear the job
down before it has read it, so the job's captured stderr can be empty even though a rank
printed and flushed its error.  The copy in ``OUT.<rank>.err`` is written before the abort.
"""

from __future__ import annotations

import sys


class Tee:
    """A text stream that also writes everything to a file, flushed at each write."""

    def __init__(self, stream, path: str) -> None:
        self.stream = stream
        self.file = open(path, "w")  # noqa: SIM115 (open until the job is aborted)

    def write(self, text: str) -> int:
        self.file.write(text)
        self.file.flush()
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def copy_stderr(out: str, rank: int) -> None:
    """From now on, what this rank writes to ``sys.stderr`` also goes to ``OUT.<rank>.err``."""
    sys.stderr = Tee(sys.stderr, f"{out}.{rank}.err")
