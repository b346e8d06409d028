"""The jobs layer: everything that launches MPI ranks and measures.

It sits above the engine (:mod:`hetcoll.runtime`, which executes schedules and never plans
or simulates) and the comparison service (:mod:`hetcoll.compare`), and brings them
together: ranks measure what the engine runs, rank 0 predicts the same schedules, and
one result document (:mod:`.document`) carries both.  ``hetcoll run``, ``hetcoll probe``,
``hetcoll demo``, the experiments that run for real and the benchmarks all go through it.

- :class:`Run` (:mod:`.spec`): what to measure; plain data, JSON across processes;
- :func:`launch` (:mod:`.launch`): start a job of N ranks and read its documents (the one
  place that starts ``mpiexec`` and reads what the ranks wrote); :func:`run_program` for a
  benchmark's own MPI program;
- :mod:`.ranks`: what every rank does (imports MPI: ``python -m mpi4py -m hetcoll.jobs``);
- :func:`entries` (:mod:`.document`): every algorithm of a document, main first.

Importing this package does not import MPI.
"""

from __future__ import annotations

from .document import entries
from .launch import JobError, launch, run_program
from .spec import Run

__all__ = ["JobError", "Run", "entries", "launch", "run_program"]
