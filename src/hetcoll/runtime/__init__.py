"""Run hetcoll schedules over mpi4py, emulate heterogeneity, probe and measure.

Importing this package imports ``mpi4py.MPI`` (which initialises MPI); ``import hetcoll``
alone does not: ``hetcoll.HetComm`` is loaded on first use.

- :class:`HetComm` (:mod:`.comm`): ``bcast``/``Bcast``/``multicast``/``multicasts``;
- :mod:`.executor`: one rank's part of a :class:`~hetcoll.schedule.Program`;
- :mod:`.emulation`: a platform's costs imposed on a homogeneous machine;
- :mod:`.measure`: broadcast latency as Banikazemi et al. (1998), Sec. 7.1.2, measure it;
- :mod:`.probe` and :mod:`.forecast`: measure a communicator and write a platform file;
- :mod:`.launch`: find the environment's ``mpiexec`` and start jobs.
"""

from __future__ import annotations

from .comm import HetComm, as_bytes
from .emulation import Emulator
from .executor import ByteRanges, DataHandler, execute, rank_plan

__all__ = ["ByteRanges", "DataHandler", "Emulator", "HetComm", "as_bytes", "execute", "rank_plan"]
