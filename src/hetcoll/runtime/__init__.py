"""Run hetcoll schedules over mpi4py, emulate heterogeneity, probe and measure.

Importing this package imports ``mpi4py.MPI`` (which initialises MPI); ``import hetcoll``
alone does not: ``hetcoll.HetComm`` is loaded on first use.

- :class:`HetComm` (:mod:`.comm`): ``bcast``/``Bcast``/``multicast``/``multicasts`` over
  trees, ``allreduce``/``Allreduce``/``allgather``/``Allgather``/``barrier`` over hypercubes;
- :mod:`.executor`: one rank's part of a :class:`~hetcoll.schedule.Program`;
- :mod:`.reduce`: the data handlers of the hypercube collectives;
- :mod:`.emulation`: a platform's costs imposed on a homogeneous machine;
- :mod:`.measure`: broadcast latency as Banikazemi et al. (1998), Sec. 7.1.2, measure it,
  and the time of a hypercube collective started together on every rank;
- :mod:`.probe` and :mod:`.forecast`: measure a communicator and write a platform file;
- :mod:`.launch`: find the environment's ``mpiexec`` and start jobs.

The engine executes schedules and never plans for a prediction: what it runs is measured
next to the simulator's prediction one layer up, in :mod:`hetcoll.jobs`.
"""

from __future__ import annotations

from .comm import HetComm, as_bytes, typed_buffer
from .emulation import Emulator
from .executor import ByteRanges, DataHandler, execute, rank_plan
from .reduce import BarrierHandler, CubeHandler, GatherHandler, ReduceHandler

__all__ = [
    "BarrierHandler",
    "ByteRanges",
    "CubeHandler",
    "DataHandler",
    "Emulator",
    "GatherHandler",
    "HetComm",
    "ReduceHandler",
    "as_bytes",
    "execute",
    "rank_plan",
    "typed_buffer",
]
